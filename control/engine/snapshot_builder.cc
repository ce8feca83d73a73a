#include "control/engine/snapshot_builder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/maglev.h"
#include "control/engine/maglev_cache.h"
#include "control/engine/region_failover.h"
#include "control/engine/service_shaper.h"

static_assert(gwlb::ctl::kMaxAppliancesTotal == gwlb::dp::kMaxApplianceIds);

namespace gwlb::ctl {

uint16_t ApplianceRegistry::idFor(uint32_t ip) {
  auto it = ids_.find(ip);
  if (it != ids_.end()) {
    released_.erase(it->second);  // configured again before its id was reclaimed
    return it->second;
  }
  uint16_t id;
  if (!free_.empty()) {
    id = *free_.begin();
    free_.erase(free_.begin());
    addr_[id] = ip;
  } else if (addr_.size() < dp::kMaxApplianceIds) {
    id = uint16_t(addr_.size());
    addr_.push_back(ip);
  } else {
    throw std::length_error("all " + std::to_string(dp::kMaxApplianceIds) +
                            " server ids are held by appliances configured or still carrying "
                            "flows");
  }
  ids_.emplace(ip, id);
  return id;
}

size_t ApplianceRegistry::missing(const Config& cfg) const {
  std::set<uint32_t> need;
  for (const auto& g : cfg.server_groups)
    for (const auto& sc : g.appliances)
      if (!ids_.count(applianceKey(sc.address))) need.insert(applianceKey(sc.address));
  return need.size();
}

void ApplianceRegistry::release(const dp::Snapshot& s) {
  for (size_t id = 0; id < s.appliances.size() && id < addr_.size(); ++id) {
    if (s.appliances[id].routable) {
      released_.erase(uint16_t(id));
    } else if (addr_[id] != 0 && ids_.count(addr_[id]) && !released_.count(uint16_t(id))) {
      released_.emplace(uint16_t(id), s.generation);
    }
  }
}

bool ApplianceRegistry::reclaimable(uint64_t oldest_live_generation) const {
  for (const auto& [id, gen] : released_)
    if (gen <= oldest_live_generation) return true;
  return false;
}

// Concurrency rule R8 (docs/architecture.md "Flow entries: concurrency rules"):
// free only when no snapshot can give the id to a flow and no entry names it.
std::vector<uint16_t> ApplianceRegistry::reclaim(uint64_t oldest_live_generation,
                                              const std::vector<uint32_t>& entries_by_id) {
  std::vector<uint16_t> freed;
  for (auto it = released_.begin(); it != released_.end();) {
    uint16_t id = it->first;
    bool flows = id < entries_by_id.size() && entries_by_id[id] != 0;
    if (it->second > oldest_live_generation || flows) {
      ++it;
      continue;
    }
    ids_.erase(addr_[id]);
    addr_[id] = 0;
    free_.insert(id);
    freed.push_back(id);
    ++reclaimed_total_;
    it = released_.erase(it);
  }
  return freed;
}

namespace {

// The next hop MAC of an appliance: its static one, the gateway's, or the
// one ARP (IPv6: neighbor discovery) found, keyed by applianceKey().
// An appliance's address: IPv6 ones are told apart by the family (their
// outer headers, their return checks), `ip` keeps the registry's key.
void setAddress(dp::ApplianceSlot& v, const IpAddr& a) {
  v.ip = applianceKey(a);
  v.ipv6 = a.isV6();
  v.ip6 = v.ipv6 ? a.b : std::array<uint8_t, 16>{};
}

void resolveMac(dp::ApplianceSlot& v, const ApplianceConfig& sc, const Config& cfg,
                const ApplianceMacs& neigh) {
  if (sc.mac) {
    v.mac = *sc.mac;
    v.mac_known = true;
  } else if (cfg.node.gateway_mac) {
    v.mac = *cfg.node.gateway_mac;
    v.mac_known = true;
  } else if (auto it = neigh.find(v.ip); it != neigh.end()) {
    v.mac = it->second;
    v.mac_known = true;
  }
}

// A group's encapsulation, keys and timeouts (no Maglev table, no listener).
dp::GroupView groupView(const ApplianceGroupConfig& gc) {
  dp::GroupView g;
  g.stickiness = StickinessMode(uint8_t(gc.stickiness));
  // nsi is aws's layout (inner L3, 32 bytes of options, the cookie last)
  // with Google's options.
  g.aws = gc.geneve.format == GeneveFormat::kAws || gc.geneve.format == GeneveFormat::kNsi;
  g.nsi = gc.geneve.format == GeneveFormat::kNsi;
  g.vni = gc.geneve.vni;
  g.endpoint_id = gc.geneve.endpoint_id;
  g.attachment_id = gc.geneve.attachment_id;
  if (gc.encapsulation == Encapsulation::kVxlan) {
    g.aws = false;
    g.nsi = false;
    g.vxlan = true;
    g.tunnels.port[kVxlanExternal] = gc.vxlan.external.port;
    g.tunnels.vni[kVxlanExternal] = gc.vxlan.external.vni;
    g.tunnels.port[kVxlanInternal] = gc.vxlan.internal.port;
    g.tunnels.vni[kVxlanInternal] = gc.vxlan.internal.vni;
  }
  g.tcp_idle_ms = idleTimeoutMs(uint64_t(gc.tcp_idle_timeout_s) * 1'000'000'000ULL);
  g.other_idle_ms = idleTimeoutMs(uint64_t(gc.other_idle_timeout_s) * 1'000'000'000ULL);
  if (gc.health_check.forwardingActive()) {
    const auto& fp = gc.health_check.forwarding_probe;
    if (fp.dst.isV6()) {
      g.probe_v6 = true;
      g.probe_src6 = fp.src.b;
      g.probe_dst6 = fp.dst.b;
    } else {
      g.probe_src = fp.src.v4HostOrder();
      g.probe_dst = fp.dst.v4HostOrder();
    }
  }
  return g;
}

bool sameEncapsulation(const ApplianceGroupConfig& a, const ApplianceGroupConfig& b) {
  const auto tunnel = [](const VxlanTunnelConfig& t) { return std::pair{t.port, t.vni}; };
  if (a.encapsulation != b.encapsulation ||
      (a.encapsulation == Encapsulation::kVxlan &&
       (tunnel(a.vxlan.internal) != tunnel(b.vxlan.internal) ||
        tunnel(a.vxlan.external) != tunnel(b.vxlan.external))))
    return false;
  return a.geneve.format == b.geneve.format && a.geneve.vni == b.geneve.vni &&
         a.geneve.endpoint_id == b.geneve.endpoint_id &&
         a.geneve.attachment_id == b.geneve.attachment_id && a.stickiness == b.stickiness;
}

// The view of a group that a reload deleted or changed while appliances of it
// still drain: its encapsulation and keys as they were, no Maglev table (it
// takes no new flows).
struct GhostGroup {
  const ApplianceLifecycle::Entry* like;  // an entry that left it
  uint8_t index;
};

// The group view a removed appliance sends and returns by: its configured
// group when that still has the same name, encapsulation and listener, else a
// ghost view built from what the appliance remembered when it left (so a
// draining appliance never takes another group's VNI, format or IDs).
uint8_t groupOfLeaving(dp::Snapshot& s, const Config& cfg, const ApplianceLifecycle::Entry& le,
                       const std::vector<std::string>& listener_names,
                       std::vector<GhostGroup>& ghosts) {
  uint8_t li = dp::kNoListener;
  for (size_t i = 0; i < listener_names.size(); ++i)
    if (!le.listener.empty() && listener_names[i] == le.listener) li = uint8_t(i);
  for (size_t gi = 0; gi < cfg.server_groups.size(); ++gi)
    if (cfg.server_groups[gi].name == le.group &&
        sameEncapsulation(cfg.server_groups[gi], le.group_config) && s.groups[gi].listener == li)
      return uint8_t(gi);
  for (const GhostGroup& g : ghosts)
    if (g.like->group == le.group && sameEncapsulation(g.like->group_config, le.group_config) &&
        g.like->listener == le.listener)
      return g.index;
  // kNoGroup is 0xFF: with 254 views already, the ghost is not made (an
  // appliance pointing past the groups is dropped as drop_no_server_group).
  if (s.groups.size() >= dp::kNoGroup - 1) return dp::kNoGroup;
  const ApplianceGroupConfig& gc = le.group_config;
  dp::GroupView g = groupView(gc);
  g.listener = li;
  s.groups.push_back(std::move(g));
  uint8_t index = uint8_t(s.groups.size() - 1);
  ghosts.push_back({&le, index});
  return index;
}

}  // namespace

std::vector<dp::PortView> resolvePorts(const Config& cfg, const PortMacs* devices) {
  const NodeConfig& node = cfg.node;
  size_t n = size_t(node.underlay_port) + 1;
  if (devices) {
    n = devices->size();
  } else {
    for (const PortConfig& pc : node.ports) n = std::max(n, size_t(pc.id) + 1);
  }
  std::vector<dp::PortView> out(n);
  for (size_t id = 0; id < n; ++id) {
    dp::PortView& v = out[id];
    if (id == node.underlay_port) {
      v.mac = node.underlay_mac;
      v.role = n > 1 ? PortRole::kAppliance : PortRole::kBoth;
    } else {
      v.mac = devices && !(*devices)[id].isZero() ? (*devices)[id] : node.underlay_mac;
      v.role = PortRole::kRouter;
    }
  }
  for (const PortConfig& pc : node.ports) {
    if (pc.id >= n) continue;  // gwlbd refuses to start with such a port
    if (pc.role) out[pc.id].role = *pc.role;
    if (pc.mac) out[pc.id].mac = *pc.mac;
  }
  return out;
}

namespace {
std::unique_ptr<dp::Snapshot> buildValid(const Config& cfg, ApplianceRegistry& reg,
                                         const ApplianceMacs& neigh, uint64_t generation,
                                         const HealthMap& health, const ApplianceLifecycle* life,
                                         const RegionTracker* regions, const PortMacs* devices,
                                         MaglevCache* maglev, const Shaping* shaping);
}  // namespace

std::unique_ptr<dp::Snapshot> buildSnapshot(const Config& cfg, ApplianceRegistry& reg,
                                            const ApplianceMacs& neigh, uint64_t generation,
                                            const HealthMap& health,
                                            const ApplianceLifecycle* life,
                                            const RegionTracker* regions,
                                            const PortMacs* devices, MaglevCache* maglev,
                                            const Shaping* shaping) {
  std::vector<ConfigError> errors;
  if (!validateConfig(cfg, errors)) throw std::invalid_argument(formatErrors(errors));
  return buildValid(cfg, reg, neigh, generation, health, life, regions, devices, maglev, shaping);
}

std::unique_ptr<dp::Snapshot> buildSnapshot(const ValidConfig& cfg, ApplianceRegistry& reg,
                                            const ApplianceMacs& neigh, uint64_t generation,
                                            const HealthMap& health,
                                            const ApplianceLifecycle* life,
                                            const RegionTracker* regions,
                                            const PortMacs* devices, MaglevCache* maglev,
                                            const Shaping* shaping) {
  return buildValid(cfg.get(), reg, neigh, generation, health, life, regions, devices, maglev, shaping);
}

namespace {

// What a build reads, besides the config: passed together to its passes.
struct BuildInputs {
  const Config& cfg;
  ApplianceRegistry& reg;
  const ApplianceMacs& neigh;
  const HealthMap& health;
  const ApplianceLifecycle* life;
  const RegionTracker* regions;
  const PortMacs* devices;
  MaglevCache* maglev;
  const Shaping* shaping;
};

// What the group pass learns that the failover passes need.
struct GroupsBuilt {
  std::vector<bool> group_any;  // per group: an appliance in service for new flows
  std::vector<std::pair<uint16_t, size_t>> failed_ids;  // (server id, group): failed health checks, not settling
};

// The node's own addresses, ports and rates.
void setNode(dp::Snapshot& s, const Config& cfg, const PortMacs* devices) {
  s.underlay_ip = cfg.node.underlay_ip && cfg.node.underlay_ip->isV4() ? cfg.node.underlay_ip->v4HostOrder() : 0;
  s.underlay_mac = cfg.node.underlay_mac;
  s.underlay_port = cfg.node.underlay_port;
  s.underlay_mtu = cfg.node.underlay_mtu;
  s.geneve_option_class = cfg.node.geneve_option_class;
  s.icmp_rate_per_s = cfg.node.icmp_rate_per_s;
  s.tcp_reset_rate_per_s = cfg.node.tcp_reset_rate_per_s;
  s.ports = resolvePorts(cfg, devices);
  for (const IpAddr& a : cfg.node.ipv6_addresses)
    if (a.isV6()) s.node_ipv6.push_back(a.b);
  if (cfg.node.underlay_ipv6 && cfg.node.underlay_ipv6->isV6()) {
    s.has_underlay_ip6 = true;
    s.underlay_ip6 = cfg.node.underlay_ipv6->b;
    // Answered in neighbor discovery like the node's other addresses.
    if (std::find(s.node_ipv6.begin(), s.node_ipv6.end(), s.underlay_ip6) == s.node_ipv6.end())
      s.node_ipv6.push_back(s.underlay_ip6);
  }
}

// A group's configured appliances, per config entry: what its Maglev table
// and the failover passes need.
struct GroupMembers {
  std::vector<uint32_t> weights;  // in force for new flows
  std::vector<uint16_t> ids;
  std::vector<bool> failed, drained;
};

// Enters group gi's configured appliances in the snapshot, with their phase
// (a drain in progress), health and whether they take new flows.
GroupMembers addGroupMembers(dp::Snapshot& s, const BuildInputs& in, size_t gi) {
  const ApplianceGroupConfig& gc = in.cfg.server_groups[gi];
  GroupMembers m;
  for (const ApplianceConfig& sc : gc.appliances) {
    uint32_t ip = applianceKey(sc.address);
    uint16_t id = in.reg.idFor(ip);
    if (s.appliances.size() <= id) s.appliances.resize(size_t(id) + 1);
    dp::ApplianceSlot& v = s.appliances[id];
    setAddress(v, sc.address);
    v.group = uint8_t(gi);
    v.weight = sc.weight;
    v.in_use = true;
    v.routable = true;
    v.phase = dp::AppliancePhase::kActive;
    resolveMac(v, sc, in.cfg, in.neigh);
    const ApplianceLifecycle::Entry* le = in.life ? in.life->find(ip) : nullptr;
    if (le) {
      v.phase = le->phase;
      v.move_reason = le->move_reason;
      if (le->phase == dp::AppliancePhase::kDrained && gc.send_tcp_reset.on_deregistration)
        v.reset = dp::ResetReason::kDeregistered;
    }
    auto h = in.health.find(ip);
    const bool held = in.shaping && in.shaping->held.count(ip);
    bool in_service = !le && !held && (h == in.health.end() || receivesNewFlows(h->second));
    m.failed.push_back(h != in.health.end() && h->second == HealthState::kUnhealthy);
    m.drained.push_back(le != nullptr);
    m.weights.push_back(in_service ? sc.weight : 0);
    m.ids.push_back(id);
  }
  return m;
}

// The weights a group's table is built from: fail_open when none is in
// service, slow start's ramp otherwise. Returns whether any appliance of the
// group is in service for new flows.
bool weighGroup(const ApplianceGroupConfig& gc, const Shaping* shaping, GroupMembers& m) {
  std::vector<uint32_t>& weights = m.weights;
  bool any = std::any_of(weights.begin(), weights.end(), [](uint32_t w) { return w > 0; });
  if (!any && gc.when_all_unhealthy == WhenAllUnhealthy::kFailOpen)
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = m.drained[i] ? 0 : gc.appliances[i].weight;
  if (any && shaping && gc.slow_start_s > 0) {
    // Slow start: proportions kept in integers (Maglev's turns depend on
    // the ratios only, so weights all x n build the unshaped table).
    const uint32_t n = slowStartSteps(gc.slow_start_s);
    bool ramping = false;
    for (const ApplianceConfig& sc : gc.appliances) ramping = ramping || shaping->ramp.count(applianceKey(sc.address));
    for (size_t i = 0; ramping && i < weights.size(); ++i) {
      auto r = shaping->ramp.find(applianceKey(gc.appliances[i].address));
      weights[i] *= r == shaping->ramp.end() ? n : r->second;
    }
  }
  return any;
}

// The group's Maglev table. It must depend only on the set of (address,
// weight), never on the config's order or the local server ids (the history
// of adds and removes), so that every gateway of a fleet builds the same one
// (docs/fleet.md): the backends go to Maglev sorted by address.
void setGroupTable(dp::GroupView& g, const ApplianceGroupConfig& gc, const GroupMembers& m,
                   MaglevCache* maglev) {
  std::vector<uint32_t> order(m.weights.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = uint32_t(i);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return applianceKey(gc.appliances[x].address) < applianceKey(gc.appliances[y].address);
  });
  std::vector<MaglevCache::Input> inputs;
  inputs.reserve(order.size());
  for (uint32_t i : order)
    inputs.push_back({applianceKey(gc.appliances[i].address), m.weights[i], m.ids[i]});
  g.setMaglev(maglev ? maglev->table(inputs, gc.maglev_table_size, dp::kNoAppliance)
                     : buildGroupMaglev(inputs, gc.maglev_table_size, dp::kNoAppliance));
}

// Every configured group with its appliances and table.
GroupsBuilt addGroups(dp::Snapshot& s, const BuildInputs& in) {
  GroupsBuilt out;
  out.group_any.assign(in.cfg.server_groups.size(), false);
  for (size_t gi = 0; gi < in.cfg.server_groups.size(); ++gi) {
    const ApplianceGroupConfig& gc = in.cfg.server_groups[gi];
    dp::GroupView g = groupView(gc);
    GroupMembers m = addGroupMembers(s, in, gi);
    out.group_any[gi] = weighGroup(gc, in.shaping, m);
    // A group settling after a whole-group outage (ServiceShaper) keeps its
    // failing appliances' flows: neither moved nor reset yet.
    for (size_t i = 0; i < m.ids.size(); ++i)
      if (m.failed[i] && !(in.shaping && in.shaping->settling.count(applianceKey(gc.appliances[i].address))))
        out.failed_ids.emplace_back(m.ids[i], gi);
    setGroupTable(g, gc, m, in.maglev);
    s.groups.push_back(std::move(g));
  }
  return out;
}

// One listener of the region tracker: which group takes its new flows, its
// settings; marks the groups of its failed regions in region_failed.
dp::ListenerView listenerView(dp::Snapshot& s, const Config& cfg, const RegionTracker::Listener& l,
                              std::vector<bool>& region_failed) {
  dp::ListenerView lv;
  uint8_t li = uint8_t(s.listeners.size());
  lv.preferred = uint8_t(l.regions[0].group_index);
  lv.active = l.active < 0 ? dp::kNoGroup : uint8_t(l.regions[size_t(l.active)].group_index);
  lv.stickiness = s.groups[lv.preferred].stickiness;
  for (const RegionTracker::Region& r : l.regions) s.groups[r.group_index].listener = li;
  // Regions that failed shed their flows to the active one, when it is healthy.
  if (l.active >= 0 && l.regions[size_t(l.active)].healthy)
    for (const RegionTracker::Region& r : l.regions)
      if (!r.healthy) region_failed[r.group_index] = true;
  // A listener the config does not list (the implicit one) takes the defaults.
  lv.reset_on_fleet_unknown = ListenerTcpResetConfig{}.on_fleet_view_incomplete;
  for (const ListenerConfig& lc : cfg.listeners)
    if (lc.name == l.name) {
      lv.reset_on_idle = lc.send_tcp_reset.on_idle_timeout;
      lv.reset_on_fleet_unknown = lc.send_tcp_reset.on_fleet_view_incomplete;
      lv.bypass_allow = lc.appliance_bypass.allow;
      lv.bypass_max_s = lc.appliance_bypass.max_seconds;
    }
  return lv;
}

// Listeners: which group takes new flows. Returns, per group, whether its
// region failed; listener_names runs parallel to s.listeners.
std::vector<bool> addListeners(dp::Snapshot& s, const BuildInputs& in,
                               std::vector<std::string>& listener_names) {
  std::vector<bool> region_failed(in.cfg.server_groups.size(), false);
  if (in.regions && !in.regions->listeners().empty()) {
    for (const RegionTracker::Listener& l : in.regions->listeners()) {
      if (l.regions.empty()) continue;
      dp::ListenerView lv = listenerView(s, in.cfg, l, region_failed);
      s.reset_on_idle_any |= lv.reset_on_idle;
      s.reset_on_fleet_unknown_any |= lv.reset_on_fleet_unknown;
      s.listeners.push_back(lv);
      listener_names.push_back(l.name);
    }
  } else if (!s.groups.empty()) {
    dp::ListenerView lv;
    lv.active = 0;
    lv.preferred = 0;
    lv.stickiness = s.groups[0].stickiness;
    // The implicit listener takes the listener settings' defaults.
    lv.reset_on_fleet_unknown = ListenerTcpResetConfig{}.on_fleet_view_incomplete;
    s.reset_on_fleet_unknown_any = lv.reset_on_fleet_unknown;
    s.groups[0].listener = 0;
    s.listeners.push_back(lv);
    listener_names.push_back("default");
  }
  s.default_group = s.listeners.empty() ? dp::kNoGroup : s.listeners[0].active;
  return region_failed;
}

// Traffic classes, compiled for the workers' per-packet match.
// An inspect class whose listener has no group here takes kNoListener:
// its packets are dropped (drop_no_server_group).
// The compiled match does not depend on the listeners: compiled (or found
// in the cache) from the rules alone, then given this snapshot's indices.
void addClasses(dp::Snapshot& s, const Config& cfg, const std::vector<std::string>& listener_names) {
  if (cfg.traffic_classes.empty()) return;
  std::vector<uint8_t> listeners;
  listeners.reserve(cfg.traffic_classes.size());
  for (const TrafficClassConfig& tc : cfg.traffic_classes) {
    uint8_t li = dp::kNoListener;
    for (size_t i = 0; i < listener_names.size(); ++i)
      if (listener_names[i] == (tc.listener.empty() ? "default" : tc.listener)) li = uint8_t(i);
    listeners.push_back(li);
  }
  s.classes = compiledClasses(cfg.traffic_classes).withListeners(std::move(listeners));
  for (size_t i = 0; i < cfg.traffic_classes.size(); ++i) {
    const std::optional<uint32_t> tag = classTagValue(cfg.tags, cfg.traffic_classes[i].tag);
    if (!tag) continue;
    if (s.class_tag.empty()) s.class_tag.resize(cfg.traffic_classes.size());
    s.class_tag[i] = {*tag, true};
  }
  for (size_t i = 0; i < cfg.traffic_classes.size(); ++i) {
    const ClassMirrorConfig& mc = cfg.traffic_classes[i].mirror;
    if (mc.group.empty()) continue;
    if (s.class_mirror.empty()) s.class_mirror.resize(cfg.traffic_classes.size());
    dp::Snapshot::MirrorView& mv = s.class_mirror[i];
    for (size_t gi = 0; gi < cfg.server_groups.size(); ++gi)
      if (cfg.server_groups[gi].name == mc.group) mv.group = uint8_t(gi);
    mv.truncate = mc.truncate;
    mv.sample = std::max<uint32_t>(mc.sample, 1);
  }
  for (size_t i = 0; i < cfg.traffic_classes.size(); ++i) s.class_slot.push_back(uint16_t(i));  // the engine's ClassSlots override
  s.routeClasses();
}

// Where a group's moved flows go: its listener's active group (-1: none).
int moveTarget(const dp::Snapshot& s, size_t gi) {
  uint8_t li = s.groups[gi].listener;
  if (li == dp::kNoListener || li >= s.listeners.size()) return int(gi);
  uint8_t a = s.listeners[li].active;
  return a == dp::kNoGroup ? -1 : int(a);
}

// Rebalance off an unhealthy appliance only toward one in service: with
// none, its flows stay (fail_open sends new ones to all anyway).
// The same holds for resets: a reconnecting client must find an appliance
// in service, and a health-check outage that fails a whole group must not
// cut every connection it carries.
// A failed region's appliances (rebalance groups) shed their flows, when
// the active group has an appliance in service to take them.
void markFailover(dp::Snapshot& s, const BuildInputs& in, const GroupsBuilt& groups,
                  const std::vector<bool>& region_failed) {
  const Config& cfg = in.cfg;
  for (auto [id, gi] : groups.failed_ids) {
    int t = moveTarget(s, gi);
    if (cfg.server_groups[gi].failover_mode == FailoverMode::kRebalance && t >= 0 &&
        groups.group_any[size_t(t)] && s.appliances[id].move_reason == dp::MoveReason::kNone)
      s.appliances[id].move_reason = dp::MoveReason::kUnhealthy;
    if (cfg.server_groups[gi].send_tcp_reset.on_unhealthy && t >= 0 && groups.group_any[size_t(t)] &&
        s.appliances[id].reset == dp::ResetReason::kNone)
      s.appliances[id].reset = dp::ResetReason::kUnhealthy;
  }
  for (size_t gi = 0; gi < cfg.server_groups.size(); ++gi) {
    if (!region_failed[gi] || cfg.server_groups[gi].failover_mode != FailoverMode::kRebalance) continue;
    // Its listener settling after every region failed at once (ServiceShaper).
    if (in.shaping && in.shaping->settling_groups.count(cfg.server_groups[gi].name)) continue;
    if (int t = moveTarget(s, gi); t < 0 || !groups.group_any[size_t(t)]) continue;
    for (const ApplianceConfig& sc : cfg.server_groups[gi].appliances) {
      dp::ApplianceSlot& v = s.appliances[in.reg.find(applianceKey(sc.address))];
      if (v.move_reason == dp::MoveReason::kNone) v.move_reason = dp::MoveReason::kRegionFailover;
    }
  }
}

// Every id the registry knows: leaving appliances stay routable for the
// flows still on them; the rest are gone (a flow naming one moves).
// Flows move off a leaving appliance only toward one in service: with none
// (every other appliance unhealthy, drained or weight 0), they stay where
// they are rather than land on an appliance that is not in service.
void addLeaving(dp::Snapshot& s, const BuildInputs& in, const GroupsBuilt& groups,
                const std::vector<std::string>& listener_names) {
  std::vector<uint16_t> leaving;  // configured-drained and removed appliances
  for (size_t id = 0; id < s.appliances.size(); ++id)
    if (s.appliances[id].in_use && s.appliances[id].phase != dp::AppliancePhase::kActive)
      leaving.push_back(uint16_t(id));
  if (s.appliances.size() < in.reg.size()) s.appliances.resize(in.reg.size());
  std::vector<uint32_t> addrs = in.reg.addresses();
  std::vector<GhostGroup> ghost_groups;
  for (size_t id = 0; id < s.appliances.size(); ++id) {
    dp::ApplianceSlot& v = s.appliances[id];
    if (v.in_use) continue;
    v.ip = addrs[id];
    const ApplianceLifecycle::Entry* le = in.life ? in.life->find(v.ip) : nullptr;
    if (le && le->removed) {
      v.routable = true;
      v.phase = le->phase;
      v.move_reason = le->move_reason;
      if (le->phase == dp::AppliancePhase::kDrained && le->group_config.send_tcp_reset.on_deregistration)
        v.reset = dp::ResetReason::kDeregistered;
      setAddress(v, le->appliance.address);
      v.group = groupOfLeaving(s, in.cfg, *le, listener_names, ghost_groups);
      resolveMac(v, le->appliance, in.cfg, in.neigh);
      if (v.group < s.groups.size()) leaving.push_back(uint16_t(id));
    } else {
      v.routable = false;
      v.phase = dp::AppliancePhase::kGone;
      v.move_reason = dp::MoveReason::kGone;
    }
  }
  const std::vector<bool>& group_any = groups.group_any;
  for (uint16_t id : leaving) {
    dp::ApplianceSlot& v = s.appliances[id];
    if (v.move_reason != dp::MoveReason::kRemoved && v.move_reason != dp::MoveReason::kDrainTimeout) continue;
    int t = moveTarget(s, v.group);  // a ghost group (deleted by a reload) without a listener: itself
    if (t < 0 || size_t(t) >= group_any.size() || !group_any[size_t(t)]) v.move_reason = dp::MoveReason::kNone;
  }
}

// Outer headers per appliance, ready for the fast path.
void buildEncaps(dp::Snapshot& s) {
  for (dp::ApplianceSlot& v : s.appliances) {
    if (!v.routable || !v.mac_known || v.group >= s.groups.size()) continue;
    const dp::GroupView& g = s.groups[v.group];
    EncapParams ep;
    ep.src_mac = s.underlay_mac;
    ep.dst_mac = v.mac;
    ep.src_ip = s.underlay_ip;
    ep.dst_ip = v.ip;
    ep.ipv6 = v.ipv6;
    ep.src_ip6 = s.underlay_ip6;
    ep.dst_ip6 = v.ip6;
    ep.vni = g.vni;
    ep.aws_options = g.aws;
    ep.protocol = g.aws ? kEtherTypeIpv4 : kEtherTypeTeb;
    ep.endpoint_id = g.endpoint_id;
    ep.attachment_id = g.attachment_id;
    if (g.vxlan) {
      // Two templates: the external tunnel's (the flow's first packet's
      // way) and the internal one's (its replies).
      ep.vxlan = true;
      ep.aws_options = false;
      ep.udp_dport = g.tunnels.port[kVxlanExternal];
      ep.vni = g.tunnels.vni[kVxlanExternal];
      buildEncapTemplate(v.encap, ep);
      ep.udp_dport = g.tunnels.port[kVxlanInternal];
      ep.vni = g.tunnels.vni[kVxlanInternal];
      buildEncapTemplate(v.encap_internal, ep);
    } else if (g.nsi) {
      // Two templates: the network ID's D bit is 0 (ingress) on the flow's
      // first packet's way, 1 (egress) on its replies'.
      ep.nsi = true;
      buildEncapTemplate(v.encap, ep);
      ep.nsi_egress = true;
      buildEncapTemplate(v.encap_internal, ep);
    } else {
      buildEncapTemplate(v.encap, ep);
    }
    // Each family from its own underlay address: never from 0.0.0.0.
    v.sendable = v.encap.len == encapHeaderLen(v.encap.aws, v.encap.ipv6) &&
                 (v.ipv6 ? s.has_underlay_ip6 : s.underlay_ip != 0);
  }
  for (const dp::GroupView& g : s.groups) {
    if (!g.vxlan) continue;
    for (uint16_t port : g.tunnels.port)
      s.addVxlanPort(port);
  }
}

// The routable appliances by outer address, for the return path's lookup.
void indexAppliances(dp::Snapshot& s) {
  for (size_t id = 0; id < s.appliances.size(); ++id) {
    const dp::ApplianceSlot& v = s.appliances[id];
    if (!v.routable) continue;
    if (v.ipv6) s.by_ip6.emplace_back(v.ip6, uint16_t(id));
    else s.by_ip.emplace_back(v.ip, uint16_t(id));
  }
  std::sort(s.by_ip.begin(), s.by_ip.end());
  std::sort(s.by_ip6.begin(), s.by_ip6.end());
  s.indexByIp();
}

std::unique_ptr<dp::Snapshot> buildValid(const Config& cfg, ApplianceRegistry& reg,
                                         const ApplianceMacs& neigh, uint64_t generation,
                                         const HealthMap& health, const ApplianceLifecycle* life,
                                         const RegionTracker* regions, const PortMacs* devices,
                                         MaglevCache* maglev, const Shaping* shaping) {
  const BuildInputs in{cfg, reg, neigh, health, life, regions, devices, maglev, shaping};
  auto s = std::make_unique<dp::Snapshot>();
  s->generation = generation;
  setNode(*s, cfg, devices);
  s->default_group = 0;
  const GroupsBuilt groups = addGroups(*s, in);
  std::vector<std::string> listener_names;  // parallel to s->listeners
  const std::vector<bool> region_failed = addListeners(*s, in, listener_names);
  addClasses(*s, cfg, listener_names);
  markFailover(*s, in, groups, region_failed);
  addLeaving(*s, in, groups, listener_names);
  buildEncaps(*s);
  indexAppliances(*s);
  return s;
}

}  // namespace

}  // namespace gwlb::ctl
