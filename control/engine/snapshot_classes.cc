// The snapshot's traffic classes: each class's rule as the workers' ClassTable
// takes it, and the compiled table of the last build, shared while the rules
// stay the same.
#include <algorithm>
#include <mutex>

#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {

namespace {
// The traffic classes of the last build and their compiled table: most
// publications (health, weights, drains, regions) leave the rules as they are
// and share the table instead of compiling it again (compiling 1,000 rules
// takes milliseconds, comparing them microseconds).
struct ClassCache {
  std::mutex mu;  // builds on several threads (tests, tools) never share a result half-made
  std::vector<ClassRule> rules;
  ClassTable table;
  uint64_t hits = 0, misses = 0;
  bool on = true;
};
ClassCache& classCache() {
  static ClassCache c;
  return c;
}

}  // namespace

namespace {
ClassVerdict verdictOf(ClassAction a) {
  return a == ClassAction::kBypass ? ClassVerdict::kBypass
         : a == ClassAction::kDrop ? ClassVerdict::kDrop
                                   : ClassVerdict::kInspect;
}

// A class's rule as classRule() gives it equals `r`, compared in place (no
// copy: large sets hold hundreds of thousands of prefixes).
bool sameRule(const ClassRule& r, const TrafficClassConfig& tc) {
  const TrafficClassMatch& m = tc.match;
  if (r.ingress_ports != m.ingress_ports || r.vlans != m.vlans || r.protocols != m.protocols ||
      r.prefixes.size() != m.prefixes.size() || r.l4_ports.size() != m.l4_ports.size() ||
      r.action != verdictOf(tc.action) || r.listener != 0)
    return false;
  for (size_t i = 0; i < r.prefixes.size(); ++i)
    if (!(r.prefixes[i].first == m.prefixes[i].addr) || r.prefixes[i].second != m.prefixes[i].len) return false;
  for (size_t i = 0; i < r.l4_ports.size(); ++i)
    if (r.l4_ports[i].first != m.l4_ports[i].lo || r.l4_ports[i].second != m.l4_ports[i].hi) return false;
  return true;
}
bool sameRules(const std::vector<ClassRule>& rules, const std::vector<TrafficClassConfig>& classes) {
  if (rules.size() != classes.size()) return false;
  for (size_t i = 0; i < rules.size(); ++i)
    if (!sameRule(rules[i], classes[i])) return false;
  return true;
}
}  // namespace

bool sameClassRules(const std::vector<TrafficClassConfig>& a, const std::vector<TrafficClassConfig>& b) {
  if (a.size() != b.size()) return false;
  auto prefixEq = [](const PrefixConfig& x, const PrefixConfig& y) { return x.addr == y.addr && x.len == y.len; };
  auto portEq = [](const PortRange& x, const PortRange& y) { return x.lo == y.lo && x.hi == y.hi; };
  for (size_t i = 0; i < a.size(); ++i) {
    const TrafficClassMatch &x = a[i].match, &y = b[i].match;
    if (a[i].action != b[i].action || x.ingress_ports != y.ingress_ports || x.vlans != y.vlans ||
        x.protocols != y.protocols ||
        !std::equal(x.prefixes.begin(), x.prefixes.end(), y.prefixes.begin(), y.prefixes.end(), prefixEq) ||
        !std::equal(x.l4_ports.begin(), x.l4_ports.end(), y.l4_ports.begin(), y.l4_ports.end(), portEq))
      return false;
  }
  return true;
}

ClassTable compiledClasses(const std::vector<TrafficClassConfig>& classes) {
  {
    ClassCache& c = classCache();
    std::lock_guard lock(c.mu);
    if (c.on && !c.table.empty() && sameRules(c.rules, classes)) {
      ++c.hits;
      return c.table;
    }
  }
  return compiledClasses(classRules(classes));
}

ClassTable compiledClasses(const std::vector<ClassRule>& rules) {
  ClassCache& c = classCache();
  std::lock_guard lock(c.mu);
  if (!c.on || c.table.empty() || c.rules != rules) {
    c.table = ClassTable(rules);
    c.rules = rules;
    ++c.misses;
  } else {
    ++c.hits;
  }
  return c.table;
}

void primeClassCache(std::vector<ClassRule> rules, ClassTable table) {
  ClassCache& c = classCache();
  std::lock_guard lock(c.mu);
  c.rules = std::move(rules);
  c.table = std::move(table);
  ++c.misses;  // compiled, only not here
}

std::vector<ClassRule> classRules(const std::vector<TrafficClassConfig>& classes) {
  std::vector<ClassRule> rules;
  rules.reserve(classes.size());
  for (const TrafficClassConfig& tc : classes) rules.push_back(classRule(tc));
  return rules;
}

std::vector<ClassRule> classRules(const Config& cfg) { return classRules(cfg.traffic_classes); }

void setClassCache(bool on) {
  ClassCache& c = classCache();
  std::lock_guard lock(c.mu);
  c.on = on;
}

ClassCacheStats classCacheStats() {
  ClassCache& c = classCache();
  std::lock_guard lock(c.mu);
  return {c.hits, c.misses};
}

ClassRule classRule(const TrafficClassConfig& tc) {
  ClassRule r;
  r.ingress_ports = tc.match.ingress_ports;
  r.vlans = tc.match.vlans;
  for (const PrefixConfig& p : tc.match.prefixes) r.prefixes.emplace_back(p.addr, p.len);
  r.protocols = tc.match.protocols;
  for (const PortRange& pr : tc.match.l4_ports) r.l4_ports.emplace_back(pr.lo, pr.hi);
  r.action = verdictOf(tc.action);
  return r;
}

}  // namespace gwlb::ctl
