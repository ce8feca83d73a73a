#include "control/config/config_digest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>

#include "common/geneve.h"

namespace gwlb::ctl {

namespace {

constexpr const char* kNames[kDigestSections] = {"groups",        "appliances", "weights",
                                                 "listeners",     "regions",    "health_checks",
                                                 "timeouts",      "hash",       "classes"};

// A section's canonical text: one "key=value" line per setting, lists in a
// fixed order (appliances by address: their order in the file changes
// nothing a node decides).
struct Text {
  std::string s;
  template <class T>
  void put(const std::string& key, const T& v) {
    s += key;
    s += '=';
    if constexpr (std::is_same_v<T, std::string>) s += v;
    else if constexpr (std::is_same_v<T, bool>) s += v ? "true" : "false";
    else s += std::to_string(v);
    s += '\n';
  }
  void put(const std::string& key, const char* v) { put(key, std::string(v)); }
};

std::vector<const ApplianceConfig*> byAddress(const ApplianceGroupConfig& g) {
  std::vector<const ApplianceConfig*> v;
  for (const ApplianceConfig& s : g.appliances) v.push_back(&s);
  std::sort(v.begin(), v.end(), [](const ApplianceConfig* a, const ApplianceConfig* b) {
    return a->address.b < b->address.b;
  });
  return v;
}

// One group's keys of section `sec`, each prefixed by p ("group.N.").
void groupText(Text& t, DigestSection sec, const ApplianceGroupConfig& g, const std::string& p) {
  switch (sec) {
    case DigestSection::kGroups:
      t.put(p + "name", g.name);
      t.put(p + "geneve.format", toString(g.geneve.format));
      t.put(p + "geneve.vni", g.geneve.vni);
      t.put(p + "geneve.endpoint_id", g.geneve.endpoint_id);
      t.put(p + "geneve.attachment_id", g.geneve.attachment_id);
      // Only for VXLAN: a Geneve config keeps the digest it had.
      if (g.encapsulation == Encapsulation::kVxlan) {
        t.put(p + "encapsulation", toString(g.encapsulation));
        t.put(p + "vxlan.internal.port", g.vxlan.internal.port);
        t.put(p + "vxlan.internal.vni", g.vxlan.internal.vni);
        t.put(p + "vxlan.external.port", g.vxlan.external.port);
        t.put(p + "vxlan.external.vni", g.vxlan.external.vni);
      }
      t.put(p + "failover_mode", toString(g.failover_mode));
      t.put(p + "when_all_unhealthy", toString(g.when_all_unhealthy));
      t.put(p + "connection_draining", g.connection_draining.enabled);
      // Only when on: a config without resets keeps the digest it had.
      if (g.send_tcp_reset.on_unhealthy) t.put(p + "send_tcp_reset.on_unhealthy", true);
      if (g.send_tcp_reset.on_deregistration) t.put(p + "send_tcp_reset.on_deregistration", true);
      break;
    case DigestSection::kAppliances:
      for (const ApplianceConfig* s : byAddress(g)) t.put(p + "appliance", s->address.str());
      break;
    case DigestSection::kWeights:
      for (const ApplianceConfig* s : byAddress(g)) t.put(p + s->address.str() + ".weight", s->weight);
      break;
    case DigestSection::kHealthChecks: {
      const HealthCheckConfig& h = g.health_check;
      t.put(p + "active", h.active());
      if (!h.active()) break;
      t.put(p + "protocol", toString(h.protocol));
      t.put(p + "port", h.port);
      t.put(p + "path", h.path);
      t.put(p + "domain", h.domain);
      for (const std::string& code : h.http_codes) t.put(p + "http_code", code);
      t.put(p + "interval_ms", h.interval_ms);
      t.put(p + "timeout_ms", h.timeout_ms);
      t.put(p + "healthy_threshold", h.healthy_threshold);
      t.put(p + "unhealthy_threshold", h.unhealthy_threshold);
      t.put(p + "verify", h.verify || !h.ca_file.empty());
      if (h.keep_alive) t.put(p + "keep_alive", true);
      if (h.forwarding)
        t.put(p + "forwarding", h.forwarding_probe.src.str() + ">" + h.forwarding_probe.dst.str());
      break;
    }
    case DigestSection::kTimeouts:
      t.put(p + "tcp_idle_timeout_s", g.tcp_idle_timeout_s);
      t.put(p + "other_idle_timeout_s", g.other_idle_timeout_s);
      t.put(p + "connection_draining.timeout_s", g.connection_draining.timeout_s);
      break;
    case DigestSection::kHash:
      t.put(p + "stickiness", toString(g.stickiness));
      t.put(p + "maglev_table_size", g.maglev_table_size);
      break;
    default: break;
  }
}

void listenersText(Text& t, const Config& c) {
  for (size_t i = 0; i < c.listeners.size(); ++i) {
    const ListenerConfig& l = c.listeners[i];
    std::string p = "listener." + std::to_string(i) + ".";
    t.put(p + "name", l.name);
    for (const std::string& g : l.server_groups) t.put(p + "server_group", g);
    t.put(p + "failback_hold_s", l.failback_hold_s);
    t.put(p + "when_all_unhealthy", toString(l.when_all_unhealthy));
    if (l.send_tcp_reset.on_idle_timeout) t.put(p + "send_tcp_reset.on_idle_timeout", true);
    if (!l.send_tcp_reset.on_fleet_view_incomplete)
      t.put(p + "send_tcp_reset.on_fleet_view_incomplete", false);
    // Only when allowed: a config without appliance bypass keeps the digest it had.
    if (l.appliance_bypass.allow) {
      t.put(p + "appliance_bypass.allow", true);
      t.put(p + "appliance_bypass.max_seconds", l.appliance_bypass.max_seconds);
    }
  }
}

void classesText(Text& t, const Config& c) {
  // In order (first match wins); the values of one match field sorted
  // (their order changes nothing a node decides).
  for (size_t i = 0; i < c.traffic_classes.size(); ++i) {
    const TrafficClassConfig& tc = c.traffic_classes[i];
    std::string p = "class." + std::to_string(i) + ".";
    t.put(p + "name", tc.name);
    t.put(p + "action", toString(tc.action));
    // Without `listeners`, "default" and no listener name the same implicit
    // listener: digested as one spelling, the left-out one (which earlier
    // versions digest too, so a fleet mid-upgrade agrees on it).
    const bool implicit = c.listeners.empty() && tc.listener == "default";
    t.put(p + "listener", implicit ? std::string() : tc.listener);
    // Only when set: a config without tags or mirrors digests as before.
    if (auto tag = classTagValue(c.tags, tc.tag)) t.put(p + "tag", std::to_string(*tag));
    if (!tc.mirror.group.empty()) {
      t.put(p + "mirror.group", tc.mirror.group);
      t.put(p + "mirror.truncate", std::to_string(tc.mirror.truncate));
      t.put(p + "mirror.sample", std::to_string(tc.mirror.sample));
    }
    auto field = [&](const char* name, std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      for (const std::string& x : v) t.put(p + name, x);
    };
    const TrafficClassMatch& m = tc.match;
    std::vector<std::string> v;
    for (uint16_t x : m.ingress_ports) v.push_back(std::to_string(x));
    field("ingress_port", std::move(v));
    v.clear();
    for (uint16_t x : m.vlans) v.push_back(std::to_string(x));
    field("vlan", std::move(v));
    v.clear();
    for (const PrefixConfig& x : m.prefixes) v.push_back(x.addr.str() + "/" + std::to_string(x.len));
    field("prefix", std::move(v));
    v.clear();
    for (uint8_t x : m.protocols) v.push_back(std::to_string(x));
    field("protocol", std::move(v));
    v.clear();
    for (const PortRange& x : m.l4_ports) v.push_back(std::to_string(x.lo) + "-" + std::to_string(x.hi));
    field("l4_port", std::move(v));
  }
}

void regionsText(Text& t, const Config& c) {
  for (const AggregationPolicyConfig& a : c.health_aggregation_policies) {
    t.put("policy." + a.name + ".min_healthy_percent", a.min_healthy_percent);
    t.put("policy." + a.name + ".min_healthy_count", a.min_healthy_count);
  }
  for (const HealthSourceConfig& h : c.health_sources) {
    t.put("source." + h.name + ".server_group", h.server_group);
    t.put("source." + h.name + ".policy", h.policy);
  }
  for (const CompositeHealthCheckConfig& h : c.composite_health_checks) {
    for (const std::string& s : h.sources) t.put("composite." + h.name + ".source", s);
    t.put("composite." + h.name + ".destination", h.destination);
    t.put("composite." + h.name + ".dry_run", h.dry_run);
  }
}

std::string sectionText(DigestSection sec, const Config& c, const FlowHashKey& key) {
  Text t;
  for (size_t i = 0; i < c.server_groups.size(); ++i)
    groupText(t, sec, c.server_groups[i], "group." + std::to_string(i) + ".");
  // Which returns ask for a bypass: every node must read the same class.
  if (sec == DigestSection::kGroups && c.node.geneve_option_class != kGwlbOptionClassDefault)
    t.put("node.geneve_option_class", c.node.geneve_option_class);
  if (sec == DigestSection::kHash) {
    // Only this section's SHA-256 (truncated) leaves the node, never the key.
    t.put("flow_hash_key", std::to_string(key.k0) + "." + std::to_string(key.k1));
  }
  if (sec == DigestSection::kListeners) listenersText(t, c);
  if (sec == DigestSection::kClasses) classesText(t, c);
  if (sec == DigestSection::kRegions) regionsText(t, c);
  return t.s;
}

// The first 8 bytes of SHA-256("gwlb config digest v1", section name, text),
// little endian; 0 when OpenSSL fails (then every peer's differs: shown, not
// hidden).
uint64_t digestOf(const char* name, const std::string& text) {
  std::string in = std::string("gwlb config digest v1") + '\0' + name + '\0' + text;
  uint8_t md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_Digest(in.data(), in.size(), md, &len, EVP_sha256(), nullptr) != 1 || len < 8) return 0;
  uint64_t d = 0;
  for (int i = 7; i >= 0; --i) d = d << 8 | md[i];
  return d;
}

}  // namespace

const char* digestSectionName(uint8_t id) {
  return id >= 1 && id <= kDigestSections ? kNames[id - 1] : nullptr;
}

std::vector<sync::DigestEntry> configDigest(const Config& c, const FlowHashKey& hash_key) {
  std::vector<sync::DigestEntry> out;
  for (uint8_t id = 1; id <= kDigestSections; ++id)
    out.push_back({id, digestOf(kNames[id - 1], sectionText(DigestSection(id), c, hash_key))});
  return out;
}

std::vector<std::string> differingSections(const std::vector<sync::DigestEntry>& here,
                                           const std::vector<sync::DigestEntry>& there) {
  std::vector<std::string> out;
  for (const sync::DigestEntry& h : here) {
    const char* name = digestSectionName(h.section);
    if (!name) continue;
    for (const sync::DigestEntry& t : there)
      if (t.section == h.section && t.digest != h.digest) {
        out.push_back(name);
        break;
      }
  }
  return out;
}

std::string digestHex(uint64_t d) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(d));
  return buf;
}

nlohmann::json digestJson(const std::vector<sync::DigestEntry>& d) {
  nlohmann::json out = nlohmann::json::object();
  for (const sync::DigestEntry& e : d)
    if (const char* name = digestSectionName(e.section)) out[name] = digestHex(e.digest);
  return out;
}

nlohmann::json configComparison(const std::vector<sync::DigestEntry>& here,
                                const std::vector<sync::DigestEntry>* there) {
  if (!there)
    return {{"state", "unknown"}, {"differing_sections", nlohmann::json::array()}, {"digests", nullptr}};
  std::vector<std::string> diff = differingSections(here, *there);
  return {{"state", diff.empty() ? "same" : "differs"},
          {"differing_sections", diff},
          {"digests", digestJson(*there)}};
}

}  // namespace gwlb::ctl
