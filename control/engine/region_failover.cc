#include "control/engine/region_failover.h"

#include <algorithm>
#include <map>

namespace gwlb::ctl {
namespace {

constexpr uint64_t kNsPerS = 1'000'000'000ULL;

std::string percentText(uint32_t p) { return std::to_string(p) + " %"; }

// Smallest healthy count that meets min_percent of n (integer arithmetic).
uint32_t neededForPercent(uint32_t n, uint32_t percent) {
  return uint32_t((uint64_t(n) * percent + 99) / 100);
}

// New flows' region: the first healthy region that is not a failback still
// inside its hold; with none, the first healthy one; with no healthy region,
// when_all_unhealthy. `prev` is the region in use before (-2: none yet).
int pick(const std::vector<bool>& healthy, const std::vector<uint64_t>& since, int prev,
         uint64_t hold_ns, uint64_t now, WhenAllUnhealthy all, std::string* reason) {
  int first_healthy = -1;
  for (size_t i = 0; i < healthy.size(); ++i) {
    if (!healthy[i]) continue;
    if (first_healthy < 0) first_healthy = int(i);
    bool failback = prev >= 0 && int(i) < prev;
    if (!failback || now - since[i] >= hold_ns) {
      if (reason)
        *reason = failback ? "failed back: healthy for the whole failback hold"
                  : i == 0 ? "the preferred region is healthy"
                           : "every region before it is unhealthy";
      return int(i);
    }
  }
  if (first_healthy >= 0) {
    if (reason) *reason = "the region in use failed; a preferred region is healthy but still in its failback hold";
    return first_healthy;
  }
  if (all == WhenAllUnhealthy::kDrop) {
    if (reason) *reason = "no region is healthy: when_all_unhealthy drop";
    return -1;
  }
  if (reason) *reason = "no region is healthy: when_all_unhealthy fail_open sends new flows to the preferred region";
  return 0;
}

}  // namespace

RegionTracker::Source judge(const Config& cfg, size_t group, uint32_t min_percent,
                            uint32_t min_count, const HealthMap& health,
                            const ApplianceLifecycle* life) {
  RegionTracker::Source s;
  s.min_percent = min_percent;
  s.min_count = min_count;
  if (group >= cfg.server_groups.size()) {
    s.why = "no such server group";
    return s;
  }
  const ApplianceGroupConfig& g = cfg.server_groups[group];
  s.group = g.name;
  for (const ApplianceConfig& sc : g.appliances) {
    if (sc.weight == 0) continue;                         // unused
    uint32_t ip = applianceKey(sc.address);
    if (life && life->find(ip)) continue;                 // drained by the operator
    ++s.appliances;
    auto h = health.find(ip);
    // No verdict yet (initializing) is not a failure: a gateway that just
    // started, or an appliance just added, never triggers a failover.
    if (h == health.end() || h->second != HealthState::kUnhealthy) ++s.healthy;
  }
  uint32_t need = std::max(neededForPercent(s.appliances, min_percent), min_count);
  s.ok = s.appliances > 0 && s.healthy >= need;
  s.why = std::to_string(s.healthy) + " of " + std::to_string(s.appliances) + " healthy; needs " +
          std::to_string(need) + " (" + percentText(min_percent) + " and at least " +
          std::to_string(min_count) + ")";
  if (s.appliances == 0) s.why = "no server to count (all weight 0 or drained)";
  return s;
}

const RegionTracker::Listener* RegionTracker::listener(const std::string& name) const {
  for (const Listener& l : listeners_)
    if (l.name == name) return &l;
  return nullptr;
}

namespace {

void say(std::vector<std::string>* log, std::string line) {
  if (log) log->push_back(std::move(line));
}

// The config's groups, policies and sources by name.
struct ConfigIndex {
  std::map<std::string, size_t> group_index;
  std::map<std::string, const AggregationPolicyConfig*> policies;
  std::map<std::string, const HealthSourceConfig*> sources;

  explicit ConfigIndex(const Config& cfg) {
    for (size_t i = 0; i < cfg.server_groups.size(); ++i) group_index[cfg.server_groups[i].name] = i;
    for (const auto& p : cfg.health_aggregation_policies) policies[p.name] = &p;
    for (const auto& s : cfg.health_sources) sources[s.name] = &s;
  }
};

// A composite judged now: each source by its policy, healthy when all are.
RegionTracker::Composite judgeComposite(const CompositeHealthCheckConfig& cc, const Config& cfg,
                                        const ConfigIndex& ix, const HealthMap& health,
                                        const ApplianceLifecycle* life) {
  RegionTracker::Composite c;
  c.name = cc.name;
  c.destination = cc.destination;
  c.dry_run = cc.dry_run;
  c.healthy = true;
  for (const std::string& sn : cc.sources) {
    auto it = ix.sources.find(sn);
    if (it == ix.sources.end()) continue;  // validateConfig() refuses this
    const HealthSourceConfig& hs = *it->second;
    uint32_t pct = 60, cnt = 1;
    if (auto p = ix.policies.find(hs.policy); p != ix.policies.end())
      pct = p->second->min_healthy_percent, cnt = p->second->min_healthy_count;
    auto gi = ix.group_index.find(hs.server_group);
    RegionTracker::Source s = judge(cfg, gi == ix.group_index.end() ? cfg.server_groups.size() : gi->second,
                                    pct, cnt, health, life);
    s.name = hs.name;
    s.policy = hs.policy;
    c.healthy = c.healthy && s.ok;
    c.sources.push_back(std::move(s));
  }
  return c;
}

// Carries a composite's history over from its previous judgement (`old`,
// null when it is new) and logs a change. Returns whether a known composite
// changed.
bool noteComposite(RegionTracker::Composite& c, const RegionTracker::Composite* old, uint64_t now,
                   std::vector<std::string>* log) {
  if (old && old->healthy == c.healthy) {
    c.since_ns = old->since_ns;
    c.changes = old->changes;
    return false;
  }
  c.since_ns = now;
  c.changes = old ? old->changes + 1 : 0;
  if (old || !c.healthy) {
    std::string why;
    for (const RegionTracker::Source& s : c.sources)
      if (!s.ok) why += (why.empty() ? "" : "; ") + s.name + ": " + s.why;
    say(log, "composite " + c.name + (c.dry_run ? " (dry run)" : "") + ": " +
                 (!old ? "starts" : old->healthy ? "healthy ->" : "unhealthy ->") +
                 (c.healthy ? " healthy" : " unhealthy") + (why.empty() ? "" : " (" + why + ")") +
                 " for destination " + c.destination);
  }
  return old != nullptr;
}

// The configured listeners, or the implicit one on the first group.
std::vector<ListenerConfig> listenerConfigs(const Config& cfg, bool& implicit) {
  std::vector<ListenerConfig> lcfg = cfg.listeners;
  implicit = lcfg.empty();
  if (implicit && !cfg.server_groups.empty()) {
    ListenerConfig d;
    d.name = "default";
    d.server_groups = {cfg.server_groups[0].name};
    d.when_all_unhealthy = cfg.server_groups[0].when_all_unhealthy;
    lcfg.push_back(d);
  }
  return lcfg;
}

// The region of one of listener l's groups: healthy by the composites that
// cover it, else by whether it has a healthy appliance.
RegionTracker::Region judgeRegion(const std::string& gname, const RegionTracker::Listener& l,
                                  const RegionTracker::Listener* ol,
                                  const std::vector<RegionTracker::Composite>& composites,
                                  const Config& cfg, const ConfigIndex& ix, const HealthMap& health,
                                  const ApplianceLifecycle* life, uint64_t now) {
  RegionTracker::Region r;
  r.group = gname;
  auto gi = ix.group_index.find(gname);
  r.group_index = gi == ix.group_index.end() ? 0 : gi->second;
  bool any_acting = false, ok_acting = true, ok_all = true;
  for (const RegionTracker::Composite& c : composites) {
    if (c.destination != l.name) continue;
    bool covers = std::any_of(c.sources.begin(), c.sources.end(),
                              [&](const RegionTracker::Source& s) { return s.group == gname; });
    if (!covers) continue;
    r.composites.push_back(c.name);
    ok_all = ok_all && c.healthy;
    if (!c.dry_run) any_acting = true, ok_acting = ok_acting && c.healthy;
  }
  // Not covered by any composite: a region while it has a healthy appliance.
  r.implicit = judge(cfg, r.group_index, 0, 1, health, life);
  r.implicit.name = "(any healthy appliance)";
  // Covered only by dry-run composites: never acts (no failover at all);
  // not covered: healthy while it has a healthy appliance.
  // The implicit listener's one group is always its region: its own
  // when_all_unhealthy (the Maglev builder) decides when nothing is in service.
  r.healthy = l.implicit ? true : any_acting ? ok_acting : r.composites.empty() ? r.implicit.ok : true;
  r.healthy_with_dry_run = l.implicit ? true : r.composites.empty() ? r.implicit.ok : ok_all;
  const RegionTracker::Region* orr = nullptr;
  if (ol)
    for (const RegionTracker::Region& x : ol->regions)
      if (x.group == gname) orr = &x;
  r.healthy_since_ns = (orr && orr->healthy && r.healthy) ? orr->healthy_since_ns : now;
  return r;
}

// Picks l's active region (and the dry run's) from its regions' health, the
// one in use before (ol; first: no update yet) and the failback hold; logs a
// change. Returns whether one changed.
bool pickActive(RegionTracker::Listener& l, const RegionTracker::Listener* ol, bool first,
                uint64_t now, std::vector<std::string>* log) {
  std::vector<bool> acting, dry;
  std::vector<uint64_t> since;
  for (const RegionTracker::Region& r : l.regions) {
    acting.push_back(r.healthy);
    dry.push_back(r.healthy_with_dry_run);
    since.push_back(r.healthy_since_ns);
  }
  // The region in use before, by group name (-2: none yet).
  auto prevIndex = [&](int idx) {
    if (!ol || first) return -2;
    if (idx < 0) return -1;
    const std::string& g = ol->regions[size_t(idx)].group;
    for (size_t i = 0; i < l.regions.size(); ++i)
      if (l.regions[i].group == g) return int(i);
    return -2;
  };
  uint64_t hold = uint64_t(l.failback_hold_s) * kNsPerS;
  int prev = ol ? prevIndex(ol->active) : -2;
  int prev_would = ol ? prevIndex(ol->would_be_active) : -2;
  l.active = pick(acting, since, prev, hold, now, l.when_all_unhealthy, &l.reason);
  l.would_be_active = pick(dry, since, prev_would, hold, now, l.when_all_unhealthy, nullptr);
  l.since_ns = now;
  if (!ol || first || ol->regions.empty()) return false;
  auto groupText = [&](int i) { return i < 0 ? std::string("(drop)") : l.regions[size_t(i)].group; };
  std::string was = ol->active < 0 ? "(drop)" : ol->regions[size_t(ol->active)].group;
  std::string was_would = ol->would_be_active < 0 ? "(drop)" : ol->regions[size_t(ol->would_be_active)].group;
  bool changed = false;
  if (was != groupText(l.active)) {
    say(log, "listener " + l.name + ": new flows " + was + " -> " + groupText(l.active) + " (" +
                 l.reason + ")");
    changed = true;
  } else {
    l.since_ns = ol->since_ns;
  }
  if (was_would != groupText(l.would_be_active)) {
    if (groupText(l.would_be_active) != groupText(l.active) || was_would != was)
      say(log, "listener " + l.name + " (dry run): would send new flows " + was_would + " -> " +
                   groupText(l.would_be_active));
    changed = true;
  }
  return changed;
}

// The destination's health: its acting composites (AND); without any,
// whether a region can take traffic. Logs a change; returns whether one.
bool judgeDestination(RegionTracker::Listener& l, const RegionTracker::Listener* ol, bool first,
                      const std::vector<RegionTracker::Composite>& composites,
                      std::vector<std::string>* log) {
  bool any_c = false, any_acting_c = false, ok = true, ok_dry = true;
  for (const RegionTracker::Composite& c : composites) {
    if (c.destination != l.name) continue;
    any_c = true;
    ok_dry = ok_dry && c.healthy;
    if (!c.dry_run) any_acting_c = true, ok = ok && c.healthy;
  }
  auto any = [&](bool RegionTracker::Region::*f) {
    return std::any_of(l.regions.begin(), l.regions.end(), [&](const auto& r) { return r.*f; });
  };
  bool any_region = any(&RegionTracker::Region::healthy);
  bool any_region_dry = any(&RegionTracker::Region::healthy_with_dry_run);
  if (l.implicit) any_region = any_region_dry = l.regions.empty() ? false : l.regions[0].implicit.ok;
  l.destination_healthy = any_acting_c ? ok : any_region;
  l.destination_healthy_with_dry_run = any_c ? ok_dry : any_region_dry;
  if (!ol || first || (ol->destination_healthy == l.destination_healthy &&
                       ol->destination_healthy_with_dry_run == l.destination_healthy_with_dry_run))
    return false;
  say(log, "destination " + l.name + ": " + (l.destination_healthy ? "healthy" : "unhealthy") +
               (l.destination_healthy != l.destination_healthy_with_dry_run
                    ? std::string(" (would be ") +
                          (l.destination_healthy_with_dry_run ? "healthy" : "unhealthy") + " without dry run)"
                    : ""));
  return true;
}

}  // namespace

bool RegionTracker::update(const Config& cfg, const HealthMap& health,
                           const ApplianceLifecycle* life, uint64_t now,
                           std::vector<std::string>* log) {
  bool changed = false;
  const ConfigIndex ix(cfg);

  std::map<std::string, Composite> old_c;
  for (Composite& c : composites_) old_c.emplace(c.name, std::move(c));
  composites_.clear();
  for (const auto& cc : cfg.composite_health_checks) {
    Composite c = judgeComposite(cc, cfg, ix, health, life);
    auto o = old_c.find(c.name);
    changed = noteComposite(c, o == old_c.end() ? nullptr : &o->second, now, log) || changed;
    composites_.push_back(std::move(c));
  }

  bool implicit = false;
  const std::vector<ListenerConfig> lcfg = listenerConfigs(cfg, implicit);
  std::map<std::string, Listener> old_l;
  for (Listener& l : listeners_) old_l.emplace(l.name, std::move(l));
  listeners_.clear();
  for (const ListenerConfig& lc : lcfg) {
    Listener l;
    l.name = lc.name;
    l.implicit = implicit;
    l.failback_hold_s = lc.failback_hold_s;
    l.when_all_unhealthy = lc.when_all_unhealthy;
    const Listener* ol = nullptr;
    if (auto it = old_l.find(l.name); it != old_l.end()) ol = &it->second;
    for (const std::string& gname : lc.server_groups)
      l.regions.push_back(judgeRegion(gname, l, ol, composites_, cfg, ix, health, life, now));
    changed = pickActive(l, ol, first_, now, log) || changed;
    changed = judgeDestination(l, ol, first_, composites_, log) || changed;
    listeners_.push_back(std::move(l));
  }
  first_ = false;
  return changed;
}

std::optional<uint64_t> RegionTracker::nextHoldDeadline() const {
  std::optional<uint64_t> d;
  for (const Listener& l : listeners_) {
    uint64_t hold = uint64_t(l.failback_hold_s) * kNsPerS;
    if (!hold) continue;
    int limit = l.active < 0 ? int(l.regions.size()) : l.active;
    for (int i = 0; i < limit; ++i) {
      const Region& r = l.regions[size_t(i)];
      if (!r.healthy) continue;
      uint64_t at = r.healthy_since_ns + hold;
      d = std::min(d.value_or(at), at);
    }
  }
  return d;
}

}  // namespace gwlb::ctl
