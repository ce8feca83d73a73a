// The control API methods of gwlbd (docs/control-api.md). Control thread only:
// they read the published snapshot and the flow table without stopping workers.
#include <rte_ethdev.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "common/flow_key.h"
#include "control/api/api_params.h"
#include "control/daemon/daemon.h"
#include "control/api/health_endpoint.h"
#include "control/engine/service_guard.h"
#include "gwlb_version.h"

namespace gwlb::ctl {

using nlohmann::json;

namespace {

constexpr const char* kVersion = GWLB_VERSION;
constexpr size_t kMaxFlowLimit = 10000;
constexpr size_t kFlowScanBudget = 1u << 22;  // keys examined per request, at most

std::string protoName(uint8_t p) {
  switch (p) {
    case kProtoTcp: return "tcp";
    case kProtoUdp: return "udp";
    case kProtoIcmp: return "icmp";
    case kProtoIcmpv6: return "icmpv6";
    case kProtoSctp: return "sctp";
    default: return std::to_string(p);
  }
}

std::string hex32(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", (unsigned long long)v);
  return b;
}

std::string addrText(const uint8_t* a, uint8_t family) {
  return (family == 6 ? IpAddr::v6(a) : IpAddr::v4(a)).str();
}

// "192.0.2.1:443", "[2001:db8::1]:443": an address followed by a port.
std::string endpointText(const uint8_t* a, uint8_t family, uint16_t port) {
  std::string s = addrText(a, family);
  return (family == 6 ? "[" + s + "]" : s) + ":" + std::to_string(port);
}

// Where a flow was before its last move and why (null when it never moved).
json movedJson(const dp::FlowEntry& e, const dp::Snapshot* s, uint64_t now) {
  uint64_t mv = e.moved.load(std::memory_order_acquire);
  if (!mv) return nullptr;
  uint16_t from = dp::moveFrom(mv);
  uint64_t at = e.moved_at.ns(now);
  return {{"from", s && from < s->servers.size() ? json(IpAddr::v4(s->servers[from].ip).str())
                                                 : json(nullptr)},
          {"reason", dp::toString(dp::MoveReason(dp::moveReason(mv)))},
          {"old_cookie", hex32(dp::moveCookie(mv))},
          {"ago_s", now > at ? double(now - at) / 1e9 : 0.0},
          {"moves", e.moves.load(std::memory_order_relaxed)}};
}

// Refuses (would_leave_no_service) a change that leaves a group with no
// appliance in service, unless forced; forced, it is logged as a warning and
// returned as `warnings` in the result.
json guardService(const std::vector<ServiceLoss>& losses, bool force, const std::string& what) {
  json warnings = json::array();
  if (losses.empty()) return warnings;
  std::string text = describeLosses(losses, force);
  if (!force) {
    json d = json::array();
    for (const ServiceLoss& l : losses) {
      json left = json::array();
      for (auto& [a, why] : l.left) left.push_back({{"address", a}, {"state", why}});
      d.push_back({{"group", l.group}, {"taken_out", l.taken}, {"left", left},
                   {"new_flows", l.new_flows}, {"existing_flows", l.existing_flows}});
    }
    throw ApiFailure("would_leave_no_service",
                     what + " refused: " + text +
                         ". Nothing changed; repeat with force (gwlbctl --force) to do it anyway",
                     d);
  }
  spdlog::warn("control API: {} forced: {}", what, text);
  warnings.push_back("forced: " + text);
  return warnings;
}

// The same for a config change from `cur` to `next` (set, remove, reload).
// An invalid `next` passes: applyConfig() reports its errors.
json guardConfigChange(const Config& cur, const ServerLifecycle& life, const HealthMap& health,
                       const Config& next, bool force, const std::string& what) {
  std::vector<ConfigError> errors;
  if (!validateConfig(next, errors)) return json::array();
  ServerLifecycle after = life;
  after.applyConfig(cur, next, dp::monotonicNs(), what);
  return guardService(serviceLosses(cur, life, next, after, health), force, what);
}

// An appliance's weight in a config, by group name and address; -1 when the
// group does not list it.
int64_t weightIn(const Config& c, const std::string& group, const IpAddr& a) {
  for (const auto& g : c.server_groups)
    if (g.name == group)
      for (const auto& sc : g.servers)
        if (sc.address == a) return sc.weight;
  return -1;
}

// How `running` differs from `file` in its appliances: the control API's
// changes (server add, remove, set) since the file was read.
json runtimeChanges(const Config& file, const Config& running) {
  json out = json::array();
  auto entry = [&](const std::string& group, const IpAddr& a) {
    int64_t f = weightIn(file, group, a), r = weightIn(running, group, a);
    if (f == r) return;
    json e = {{"group", group}, {"address", a.str()},
              {"change", f < 0 ? "added" : r < 0 ? "removed" : "weight"}};
    if (f >= 0) e["file_weight"] = f;
    if (r >= 0) e["running_weight"] = r;
    out.push_back(e);
  };
  for (const auto& g : running.server_groups)
    for (const auto& sc : g.servers) entry(g.name, sc.address);
  for (const auto& g : file.server_groups)
    for (const auto& sc : g.servers)
      if (weightIn(running, g.name, sc.address) < 0) entry(g.name, sc.address);
  return out;
}

// Index of the named group; not_found otherwise.
int groupIndex(const Config& cfg, const std::string& name) {
  for (size_t i = 0; i < cfg.server_groups.size(); ++i)
    if (cfg.server_groups[i].name == name) return int(i);
  notFound("no server group '" + name + "'");
}

}  // namespace

json Daemon::handleApi(const std::string& method, const json& params) {
  try {
    json result;
    if (method == "status") result = apiStatus(params);
    else if (method == "servers") result = apiServers(params);
    else if (method == "groups") result = apiGroups(params);
    else if (method == "flows") result = apiFlows(params);
    else if (method == "explain") result = apiExplain(params);
    else if (method == "stats") result = apiStats(params);
    else if (method == "server.add") result = apiServerAdd(params);
    else if (method == "server.remove") result = apiServerRemove(params);
    else if (method == "server.set") result = apiServerSet(params);
    else if (method == "server.drain") result = apiServerDrain(params);
    else if (method == "server.undrain") result = apiServerUndrain(params);
    else if (method == "reload") result = apiReload(params);
    else if (method == "config") result = apiConfig(params);
    else if (method == "health") result = apiHealth(params);
    else if (method == "destinations") result = apiDestinations(params);
    else if (method == "fleet_sync") result = apiFleetSync(params);
    else if (method == "fleet") result = apiFleet(params);
    else if (method == "fleet.leave") result = apiFleetLeave(params, true);
    else if (method == "fleet.join") result = apiFleetLeave(params, false);
    else if (method == "capture.stop") result = apiCaptureStop(params);
    else
      badRequest("unknown method '" + method +
                 "' (status, servers, groups, flows, explain, stats, server.add, "
                 "server.remove, server.set, server.drain, server.undrain, reload, config, health, "
                 "destinations, fleet, fleet.leave, fleet.join, fleet_sync, capture.stop)");
    return {{"ok", true}, {"result", std::move(result)}};
  } catch (const ApiFailure& f) {
    json r = apiError(nullptr, f.code, f.what());
    if (!f.details.is_null()) r["error"]["details"] = f.details;
    return r;
  }
}

json Daemon::portsJson() const {
  json ports = json::array();
  const dp::Snapshot* snap = dp_.snapshot.load(std::memory_order_acquire);
  for (uint16_t port = 0; port < n_ports_; ++port) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port, name);
    rte_eth_link link{};
    rte_eth_link_get_nowait(port, &link);
    rte_eth_stats st{};
    rte_eth_stats_get(port, &st);
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(port, &info);
    ports.push_back({{"id", port},
                     {"name", name},
                     {"link_up", link.link_status == RTE_ETH_LINK_UP},
                     {"speed_mbps", link.link_speed},
                     {"rx_queues", info.nb_rx_queues},
                     {"tx_queues", info.nb_tx_queues},
                     {"rx_packets", st.ipackets},
                     {"tx_packets", st.opackets},
                     {"rx_bytes", st.ibytes},
                     {"tx_bytes", st.obytes},
                     {"rx_missed", st.imissed},
                     {"rx_errors", st.ierrors},
                     {"tx_errors", st.oerrors}});
    if (exception_ && port < exception_->taps().size()) {
      const ExceptionPath::Tap& t = exception_->taps()[port];
      ports.back()["exception_path"] = {{"tap", t.iface},
                                        {"to_kernel", t.to_kernel},
                                        {"from_kernel", t.from_kernel},
                                        {"dropped_tap", t.drop_tap},
                                        {"dropped_wire", t.drop_wire}};
    }
    if (snap && port < snap->ports.size()) {
      ports.back()["role"] = toString(snap->ports[port].role);
      ports.back()["mac"] = snap->ports[port].mac.str();
    }
  }
  return ports;
}

json Daemon::apiStatus(const json& p) {
  Params(p, {});
  json workers = json::array();
  for (size_t i = 0; i < runs_.size(); ++i) {
    json q = json::array();
    for (auto& rq : runs_[i]->cfg.rx) q.push_back(std::to_string(rq.port) + "/" + std::to_string(rq.queue));
    const dp::WorkerHeartbeat& hb = runs_[i]->heartbeat;
    workers.push_back({{"id", i}, {"lcore", worker_lcores_.size() > i ? worker_lcores_[i] : 0},
                       {"rx_queues", q},
                       {"loops", hb.loops.load(std::memory_order_relaxed)},
                       {"max_loop_gap_ns", hb.max_loop_gap_ns.load(std::memory_order_relaxed)},
                       {"recent_max_loop_gap_ns",
                        hb.recent_max_loop_gap_ns.load(std::memory_order_relaxed)}});
  }
  const dp::Snapshot* s = dp_.snapshot.load();
  return {{"version", kVersion},
          {"uptime_s", double(dp::monotonicNs() - started_ns_) / 1e9},
          {"started_at", started_at_},
          {"config_file", cfg().source_path},
          {"config_loaded_at", config_loaded_at_},
          {"runtime_changes", runtimeChanges(file_cfg_, cfg()).size()},
          {"snapshot_generation", s ? s->generation : 0},
          {"snapshots_live", dp::Snapshot::live()},
          {"snapshots_retiring", engine_->retiredSnapshots()},
          {"flows", flows_->count()},
          {"flow_capacity", flows_->capacity()},
          {"rx_pps", rx_pps_},
          {"tx_pps", tx_pps_},
          {"workers", workers},
          {"ports", portsJson()},
          {"capture", captureJson()}};
}

// Packet captures attached by dpdk-dumpcap / dpdk-pdump (dataplane/capture.h).
json Daemon::captureJson() const {
  json c = {{"available", capture_ && capture_why_.empty()}};
  if (!capture_why_.empty()) c["why_not"] = capture_why_;
  json sessions = json::array();
  if (capture_) {
    for (const dp::CaptureServer::Session& s : capture_->sessions())
      sessions.push_back({{"port", s.port},
                          {"device", s.device},
                          {"queue", s.queue},
                          {"direction", s.rx ? "rx" : "tx"},
                          {"format", s.pcapng ? "pcapng" : "mbuf"},
                          {"filter", s.filtered},
                          {"snaplen", s.snaplen},
                          {"copied", s.accepted},
                          {"filtered_out", s.filtered_out},
                          {"no_mbuf", s.nombuf},
                          {"ring_full", s.ringfull}});
    dp::CaptureServer::Totals t = capture_->totals();
    c["started"] = t.started;
    c["stopped"] = t.stopped;
    c["refused"] = t.refused;
    c["detached"] = t.detached;
  }
  c["sessions"] = sessions;
  return c;
}

json Daemon::apiServers(const json& p) {
  Params pr(p, {"group"});
  int group = pr.has("group") ? groupIndex(cfg(), pr.str("group")) : -1;
  std::map<uint16_t, uint64_t> active;
  flows_->forEach([&](const FlowKey& k, int32_t, const dp::FlowEntry& e) {
    uint64_t r = e.route.load(std::memory_order_relaxed);
    if (k.kind == KeyKind::kFlow && (r & dp::kRouteSet)) ++active[dp::routeServer(r)];
  });
  const dp::Snapshot* s = dp_.snapshot.load();
  json out = json::array();
  for (size_t gi = 0; gi < cfg().server_groups.size(); ++gi) {
    if (group >= 0 && int(gi) != group) continue;
    for (const auto& sc : cfg().server_groups[gi].servers) {
      uint32_t ip = sc.address.v4HostOrder();
      uint16_t id = registry().find(ip);
      ServerTraffic tr = trafficOf(id);
      const dp::ServerView* sv = (s && id < s->servers.size()) ? &s->servers[id] : nullptr;
      auto status = server_status_.find(ip);
      const ServerLifecycle::Entry* le = lifecycle().find(ip);
      json j = {{"address", sc.address.str()},
                {"group", cfg().server_groups[gi].name},
                {"weight", sc.weight},
                {"state", serverState(ip)},
                {"reason", status != server_status_.end() ? status->second.reason : ""},
                {"since", status != server_status_.end() ? status->second.since : 0.0},
                {"mac", sv && sv->mac_known ? json(sv->mac.str()) : json(nullptr)},
                {"active_flows", active[id]},
                {"health", healthJson(ip)},
                {"packets", tr.sent_packets},
                {"bytes", tr.sent_bytes},
                {"returned_packets", tr.returned_packets},
                {"returned_bytes", tr.returned_bytes}};
      if (le) {
        j["reason"] = le->why;
        j["drain"] = drainJson(*le);
      }
      out.push_back(std::move(j));
    }
  }
  // Appliances removed from the config that still carry flows (or drain).
  for (const auto& [ip, le] : lifecycle().entries()) {
    if (!le.removed) continue;
    if (group >= 0 && cfg().server_groups[size_t(group)].name != le.group) continue;
    uint16_t id = registry().find(ip);
    ServerTraffic tr = trafficOf(id);
    const dp::ServerView* sv = (s && id < s->servers.size()) ? &s->servers[id] : nullptr;
    out.push_back({{"address", le.server.address.str()},
                   {"group", le.group},
                   {"weight", 0},
                   {"state", le.phase == dp::ServerPhase::kDraining ? "draining" : "removed"},
                   {"reason", le.why},
                   {"since", 0.0},
                   {"mac", sv && sv->mac_known ? json(sv->mac.str()) : json(nullptr)},
                   {"active_flows", active[id]},
                   {"health", {{"state", "unused"}}},
                   {"packets", tr.sent_packets},
                   {"bytes", tr.sent_bytes},
                   {"returned_packets", tr.returned_packets},
                   {"returned_bytes", tr.returned_bytes},
                   {"drain", drainJson(le)}});
  }
  return {{"servers", out}};
}

std::string Daemon::groupName(int group, uint32_t ip) const {
  if (group >= 0 && size_t(group) < cfg().server_groups.size()) return cfg().server_groups[size_t(group)].name;
  const ServerLifecycle::Entry* le = lifecycle().find(ip);
  return le ? le->group : "?";
}

json Daemon::drainJson(const ServerLifecycle::Entry& e) const {
  uint64_t now = dp::monotonicNs();
  bool draining = e.phase == dp::ServerPhase::kDraining;
  std::string flows;
  if (!e.rebalance) flows = "stay (no_rebalance)";
  else if (draining) flows = "stay until the drain ends, then move (rebalance)";
  else flows = "move on their next packet (rebalance)";
  // The snapshot holds a move back while the group has no appliance in service.
  if (e.rebalance && !draining && e.move != dp::MoveReason::kNone) {
    const dp::Snapshot* s = dp_.snapshot.load(std::memory_order_acquire);
    uint16_t id = registry().find(e.ip);
    if (s && id < s->servers.size() && s->servers[id].move == dp::MoveReason::kNone)
      flows = "stay until an appliance of the group is in service, then move (rebalance)";
  }
  return {{"phase", toString(e.phase)},
          {"removed", e.removed},
          {"why", e.why},
          {"for_s", now > e.since_ns ? double(now - e.since_ns) / 1e9 : 0.0},
          {"timeout_s", draining ? json(double(e.deadline_ns - e.since_ns) / 1e9) : json(nullptr)},
          {"time_left_s", draining && e.deadline_ns > now ? json(double(e.deadline_ns - now) / 1e9)
                                                          : json(nullptr)},
          {"existing_flows", flows},
          {"flows_counted", e.flows}};
}

json Daemon::lifecycleStatsJson() const {
  const ServerLifecycle::Stats& st = lifecycle().stats();
  return {{"drains_started", st.drains_started},
          {"drains_emptied", st.drains_emptied},
          {"drains_timed_out", st.drains_timed_out},
          {"flows_drained", st.flows_drained},
          {"flows_drain_timed_out", st.flows_drain_timed_out},
          {"removals", st.removals},
          {"forgotten", st.forgotten},
          {"flows_swept", st.flows_swept}};
}

json Daemon::apiServerDrain(const json& p) {
  Params pr(p, {"address", "timeout_s", "force"});
  if (!pr.has("address")) badRequest("server.drain needs address");
  IpAddr a = pr.ip("address");
  std::optional<uint32_t> timeout;
  if (pr.has("timeout_s")) timeout = uint32_t(pr.num("timeout_s", 1, 3600));
  const bool force = pr.has("force") && pr.boolean("force");
  if (!a.isV4()) notFound("no appliance " + a.str());
  // The drain tried on a copy first: the guard judges what it would leave.
  const uint64_t now = dp::monotonicNs();
  ServerLifecycle next = lifecycle();
  std::string err = next.drain(cfg(), a.v4HostOrder(), timeout, now);
  if (err == "not a configured appliance") notFound("no appliance " + a.str());
  if (!err.empty()) throw ApiFailure("conflict", a.str() + ": " + err);
  json warnings = guardService(
      serviceLosses(cfg(), lifecycle(), cfg(), next, health_ ? health_->states() : HealthMap{}),
      force, "server.drain " + a.str());
  err = engine_->drain(a.v4HostOrder(), timeout, now);
  if (!err.empty()) throw ApiFailure("conflict", a.str() + ": " + err);
  const ServerLifecycle::Entry* le = lifecycle().find(a.v4HostOrder());
  spdlog::info("control API: draining appliance {} for {:.0f} s", a.str(),
               double(le->deadline_ns - le->since_ns) / 1e9);
  const dp::Snapshot* s = dp_.snapshot.load();
  json r = {{"snapshot_generation", s ? s->generation : 0}, {"drain", drainJson(*le)}};
  if (!warnings.empty()) r["warnings"] = warnings;
  return r;
}

json Daemon::apiServerUndrain(const json& p) {
  Params pr(p, {"address"});
  if (!pr.has("address")) badRequest("server.undrain needs address");
  IpAddr a = pr.ip("address");
  if (!a.isV4()) notFound("no appliance " + a.str());
  std::string err = engine_->undrain(a.v4HostOrder(), dp::monotonicNs());
  if (!err.empty()) throw ApiFailure("conflict", a.str() + ": " + err);
  spdlog::info("control API: appliance {} no longer drained", a.str());
  const dp::Snapshot* s = dp_.snapshot.load();
  return {{"snapshot_generation", s ? s->generation : 0}};
}

json Daemon::apiGroups(const json& p) {
  Params(p, {});
  json out = json::array();
  for (const auto& g : cfg().server_groups) {
    // Every state an appliance can be in (serverState), counted: a group
    // with an unhealthy or draining appliance says so here too.
    json servers = {{"total", g.servers.size()}};
    for (const char* st : {"active", "idle", "unresolved", "unhealthy", "initializing", "draining",
                           "drained", "removed"})
      servers[st] = 0;
    for (const auto& sc : g.servers) {
      std::string st = serverState(sc.address.v4HostOrder());
      servers[st] = servers.value(st, 0) + 1;
    }
    // Removed from the config but still listed while their flows last.
    for (const auto& [ip, le] : lifecycle().entries())
      if (le.removed && le.group == g.name) servers["removed"] = servers["removed"].get<int>() + 1;
    out.push_back({{"name", g.name},
                   {"stickiness", toString(g.stickiness)},
                   {"geneve",
                    {{"format", toString(g.geneve.format)},
                     {"vni", g.geneve.vni},
                     {"endpoint_id", hex64(g.geneve.endpoint_id)},
                     {"attachment_id", hex64(g.geneve.attachment_id)}}},
                   {"maglev_table_size", g.maglev_table_size},
                   {"tcp_idle_timeout_s", g.tcp_idle_timeout_s},
                   {"other_idle_timeout_s", g.other_idle_timeout_s},
                   {"failover_mode", toString(g.failover_mode)},
                   {"connection_draining",
                    {{"enabled", g.connection_draining.enabled},
                     {"timeout_s", g.connection_draining.timeout_s}}},
                   {"servers", servers}});
  }
  return {{"groups", out}};
}

json Daemon::apiFlows(const json& p) {
  Params pr(p, {"server", "group", "src", "dst", "proto", "port", "limit", "cursor", "count"});
  uint16_t server = dp::kNoServer;
  bool by_server = false;
  if (pr.has("server")) {
    IpAddr a = pr.ip("server");
    server = a.isV4() ? registry().find(a.v4HostOrder()) : dp::kNoServer;
    if (server == dp::kNoServer) notFound("no appliance " + a.str());
    by_server = true;
  }
  int group = pr.has("group") ? groupIndex(cfg(), pr.str("group")) : -1;
  std::optional<Cidr> src, dst;
  if (pr.has("src")) src = parseCidr("src", pr.str("src"));
  if (pr.has("dst")) dst = parseCidr("dst", pr.str("dst"));
  int proto = pr.has("proto") ? parseProto(pr.str("proto")) : -1;
  int port = pr.has("port") ? int(pr.num("port", 0, 65535)) : -1;
  size_t limit = pr.has("limit") ? size_t(pr.num("limit", 1, kMaxFlowLimit)) : 100;
  bool count_only = pr.has("count") && pr.boolean("count");
  uint32_t cursor = 0;
  if (pr.has("cursor")) {
    cursor = parseCursor(pr.str("cursor"));
  }

  uint64_t now = dp::monotonicNs();
  json rows = json::array();
  size_t count = 0, scanned = 0;
  // Every slot from the cursor on if need be: a page ends after kFlowScanBudget
  // keys or `limit` rows, never on a run of empty slots (count has no cursor).
  bool more = flows_->scan(cursor, kFlowScanBudget, flows_->slots(), [&](const FlowKey& k, int32_t,
                                                                         const dp::FlowEntry& e) {
    ++scanned;
    uint64_t r = e.route.load(std::memory_order_acquire);
    if (!(r & dp::kRouteSet)) return true;
    if (by_server && dp::routeServer(r) != server) return true;
    // Keys carry the listener; the group is the flow's appliance's.
    const dp::Snapshot* snap = dp_.snapshot.load();
    uint16_t rsid = dp::routeServer(r);
    int fgroup = snap && rsid < snap->servers.size() ? snap->servers[rsid].group : -1;
    if (group >= 0 && fgroup != group) return true;
    bool a_first = e.first_dir == 0;
    const uint8_t* s_addr = a_first ? k.a : k.b;
    const uint8_t* d_addr = a_first ? k.b : k.a;
    uint16_t sport = a_first ? k.port_a : k.port_b, dport = a_first ? k.port_b : k.port_a;
    if (k.kind == KeyKind::kFragment) sport = dport = 0;
    if (src && !src->contains(s_addr, k.family)) return true;
    if (dst && !dst->contains(d_addr, k.family)) return true;
    if (proto >= 0 && k.proto != proto) return true;
    if (port >= 0 && (k.kind != KeyKind::kFlow || (sport != port && dport != port))) return true;
    ++count;
    if (count_only) return true;
    const dp::Snapshot* s = dp_.snapshot.load();
    uint16_t sid = dp::routeServer(r);
    std::string app = s && sid < s->servers.size() ? IpAddr::v4(s->servers[sid].ip).str() : "?";
    uint64_t seen = e.last_seen.ns(now);
    uint64_t born = e.created.ns(now);
    rows.push_back({{"src", addrText(s_addr, k.family)},
                    {"dst", addrText(d_addr, k.family)},
                    {"sport", sport},
                    {"dport", dport},
                    {"proto", protoName(k.proto)},
                    {"group", groupName(fgroup, s && sid < s->servers.size() ? s->servers[sid].ip : 0)},
                    {"appliance", app},
                    {"cookie", hex32(dp::routeCookie(r))},
                    {"kind", k.kind == KeyKind::kFlow ? "flow" : "fragment"},
                    {"age_s", now > born ? double(now - born) / 1e9 : 0.0},
                    {"idle_s", now > seen ? double(now - seen) / 1e9 : 0.0},
                    {"packets", e.packets.load(std::memory_order_relaxed)},
                    {"moved", movedJson(e, s, now)}});
    return rows.size() < limit;
  });
  if (count_only) return {{"count", count}, {"scanned", scanned}};
  return {{"flows", rows},
          {"next_cursor", more ? json(std::to_string(cursor)) : json(nullptr)},
          {"scanned", scanned}};
}

json Daemon::apiExplain(const json& p) {
  Params pr(p, {"src", "dst", "proto", "sport", "dport"});
  if (!pr.has("src") || !pr.has("dst") || !pr.has("proto"))
    badRequest("explain needs src, dst and proto");
  L4Tuple t;
  t.src = pr.ip("src");
  t.dst = pr.ip("dst");
  if (t.src.family != t.dst.family) badRequest("src and dst must be of one address family");
  t.proto = uint8_t(parseProto(pr.str("proto")));
  // The dataplane keys TCP, UDP, SCTP and UDP-Lite on their ports and ICMP
  // echo on its identifier (common/packet_parser.cc readPorts); every other
  // protocol on addresses only, so ports given with one would explain a key
  // no packet has.
  const bool ported = t.proto == kProtoTcp || t.proto == kProtoUdp || t.proto == kProtoSctp ||
                      t.proto == kProtoUdpLite || t.proto == kProtoIcmp || t.proto == kProtoIcmpv6;
  if (!ported && (pr.has("sport") || pr.has("dport")))
    badRequest("proto " + std::to_string(t.proto) +
               " has no ports: the dataplane keys it on addresses and protocol");
  if (pr.has("sport")) t.sport = uint16_t(pr.num("sport", 0, 65535));
  if (pr.has("dport")) t.dport = uint16_t(pr.num("dport", 0, 65535));
  const dp::Snapshot* s = dp_.snapshot.load();
  if (!s || s->listeners.empty()) notFound("no snapshot published");
  // Flows are keyed by listener (0 receives all traffic); new ones take the
  // Maglev table of its active group (none: new flows are dropped).
  const dp::ListenerView& lv = s->listeners[0];
  uint8_t gi = lv.active;
  static const dp::GroupView kNone;
  const dp::GroupView& g = gi < s->groups.size() ? s->groups[gi] : kNone;
  KeyedPacket kp = makeFlowKey(t, lv.stickiness, 0);
  uint32_t hash = flowHash(kp.key);
  uint32_t slot = g.maglev.empty() ? 0 : hash % uint32_t(g.maglev.size());
  uint16_t mid = g.maglev.empty() ? dp::kNoServer : g.maglev[slot];
  auto appText = [&](uint16_t id) {
    return id < s->servers.size() ? json(IpAddr::v4(s->servers[id].ip).str()) : json(nullptr);
  };
  const char* stick[] = {"5-tuple", "3-tuple", "2-tuple"};
  std::string key = endpointText(kp.key.a, kp.key.family, kp.key.port_a) + " <-> " +
                    endpointText(kp.key.b, kp.key.family, kp.key.port_b) + " proto " +
                    std::to_string(kp.key.proto);
  const std::string listener = regions().listeners().empty() ? "default" : regions().listeners()[0].name;
  json out = {{"group", gi < cfg().server_groups.size() ? json(cfg().server_groups[gi].name) : json(nullptr)},
              {"listener", listener},
              {"stickiness", stick[size_t(lv.stickiness)]},
              {"key", key},
              {"hash", hex32(hash)},
              {"maglev", {{"slot", slot}, {"table_size", g.maglev.size()}, {"appliance", appText(mid)}}}};
  int32_t pos = flows_->lookup(kp.key, hash);
  uint64_t r = pos >= 0 ? flows_->entry(pos).route.load(std::memory_order_acquire) : 0;
  if (r & dp::kRouteSet) {
    const dp::FlowEntry& e = flows_->entry(pos);
    uint64_t now = dp::monotonicNs();
    uint64_t born = e.created.ns(now);
    double age = now > born ? double(now - born) / 1e9 : 0.0;
    uint16_t sid = dp::routeServer(r);
    out["existing"] = true;
    out["appliance"] = appText(sid);
    out["cookie"] = hex32(dp::routeCookie(r));
    out["age_s"] = age;
    char buf[320];
    std::snprintf(buf, sizeof buf, "existing flow entry, created %.1f s ago%s", age,
                  sid == mid ? "; its appliance is also today's Maglev choice"
                             : "; today's Maglev choice differs, the entry keeps its appliance");
    std::string reason = buf;
    json moved = movedJson(e, s, now);
    if (!moved.is_null()) {
      std::snprintf(buf, sizeof buf, "; moved %.1f s ago from %s (%s)",
                    moved["ago_s"].get<double>(),
                    moved["from"].is_null() ? "?" : moved["from"].get<std::string>().c_str(),
                    moved["reason"].get<std::string>().c_str());
      reason += buf;
    }
    if (sid < s->servers.size()) {
      const dp::ServerView& sv = s->servers[sid];
      if (sv.move != dp::MoveReason::kNone)
        reason += std::string("; its appliance sheds its flows (") + dp::toString(sv.move) +
                  "): the next packet moves it to today's Maglev choice";
      else if (sv.phase == dp::ServerPhase::kDraining)
        reason += "; its appliance is draining: the flow stays until the drain ends";
      else if (sv.phase == dp::ServerPhase::kDrained)
        reason += sv.group < cfg().server_groups.size() &&
                          cfg().server_groups[sv.group].failover_mode == FailoverMode::kRebalance
                      ? "; its appliance left the group; the flow stays until an appliance of "
                        "the group is in service to move it to"
                      : "; its appliance left the group; no_rebalance keeps the flow there";
    }
    out["reason"] = reason;
    out["moved"] = moved;
  } else {
    out["existing"] = false;
    out["appliance"] = appText(mid);
    out["reason"] = mid == dp::kNoServer
                        ? "no flow entry, and the group has no appliance for new flows"
                        : "no flow entry: a new flow takes Maglev slot " + std::to_string(slot) +
                              " of " + std::to_string(g.maglev.size());
  }
  return out;
}

// Flow state sync: peers, counters, warm start (docs/control-api.md).
json Daemon::apiFleetSync(const json& p) {
  Params(p, {});
  if (fleet_) {
    json r = fleet_->status();
    r["enabled"] = true;
    return r;
  }
  return {{"enabled", false},
          {"peers", json::array()},
          {"warm_start", {{"done", true}, {"state", "off"}}}};
}

json Daemon::apiStats(const json& p) {
  Params(p, {});
  json workers = json::array();
  WorkerCounters total;
  for (const auto& st : states_) {
    json c = json::object();
    for (size_t k = 0; k < kNumCounters; ++k) {
      c[kCounterInfo[k].name] = st->counters.get(Counter(k));
      total.v[k] += st->counters.get(Counter(k));
    }
    workers.push_back({{"id", st->id}, {"counters", c}});
  }
  json totals = json::object(), drops = json::array();
  for (size_t k = 0; k < kNumCounters; ++k) {
    totals[kCounterInfo[k].name] = total.v[k];
    if (kCounterInfo[k].is_drop)
      drops.push_back({{"name", kCounterInfo[k].name}, {"count", total.v[k]}, {"help", kCounterInfo[k].help}});
  }
  return {{"workers", workers}, {"totals", totals}, {"drops", drops}, {"ports", portsJson()},
          {"flows", flows_->count()}, {"lifecycle", lifecycleStatsJson()},
          {"snapshots_live", dp::Snapshot::live()}, {"taken_at", unixNow()}};
}

json Daemon::applyConfig(Config next, const std::string& why) {
  // Throws ApiFailure invalid_config / limit_reached; nothing changes then.
  checkProbePaths(next);
  uint64_t generation = engine_->applyConfig(std::move(next), why, dp::monotonicNs());
  return {{"snapshot_generation", generation}};
}

json Daemon::apiServerAdd(const json& p) {
  Params pr(p, {"group", "address", "weight", "mac"});
  if (!pr.has("group") || !pr.has("address")) badRequest("server.add needs group and address");
  std::string g = pr.str("group");
  Config next = cfg();
  ServerGroupConfig* grp = nullptr;
  for (auto& gc : next.server_groups)
    if (gc.name == g) grp = &gc;
  if (!grp) notFound("no server group '" + g + "'");
  ServerConfig sc;
  sc.address = pr.ip("address");
  if (pr.has("weight")) sc.weight = uint32_t(pr.num("weight", 0, 10000));
  if (pr.has("mac")) {
    auto m = MacAddr::parse(pr.str("mac"));
    if (!m) badRequest("mac: '" + pr.str("mac") + "' is not a MAC address");
    sc.mac = *m;
  }
  grp->servers.push_back(sc);
  json r = applyConfig(std::move(next), "removed");
  spdlog::info("control API: added appliance {} to group {}", sc.address.str(), g);
  return r;
}

json Daemon::apiServerRemove(const json& p) {
  Params pr(p, {"address", "force"});
  if (!pr.has("address")) badRequest("server.remove needs address");
  IpAddr a = pr.ip("address");
  const bool force = pr.has("force") && pr.boolean("force");
  Config next = cfg();
  for (auto& gc : next.server_groups)
    for (auto it = gc.servers.begin(); it != gc.servers.end(); ++it)
      if (it->address == a) {
        gc.servers.erase(it);
        json warnings = guardConfigChange(cfg(), lifecycle(), health_ ? health_->states() : HealthMap{},
                                          next, force, "server.remove " + a.str());
        json r = applyConfig(std::move(next), "removed by server.remove");
        if (!warnings.empty()) r["warnings"] = warnings;
        spdlog::info("control API: removed appliance {} from group {}", a.str(), gc.name);
        return r;
      }
  notFound("no appliance " + a.str());
}

json Daemon::apiServerSet(const json& p) {
  Params pr(p, {"address", "weight", "force"});
  if (!pr.has("address") || !pr.has("weight")) badRequest("server.set needs address and weight");
  IpAddr a = pr.ip("address");
  uint32_t w = uint32_t(pr.num("weight", 0, 10000));
  const bool force = pr.has("force") && pr.boolean("force");
  Config next = cfg();
  for (auto& gc : next.server_groups)
    for (auto& sc : gc.servers)
      if (sc.address == a) {
        sc.weight = w;
        json warnings = guardConfigChange(cfg(), lifecycle(), health_ ? health_->states() : HealthMap{},
                                          next, force,
                                          "server.set " + a.str() + " weight " + std::to_string(w));
        json r = applyConfig(std::move(next), "removed");
        if (!warnings.empty()) r["warnings"] = warnings;
        spdlog::info("control API: appliance {} weight {}", a.str(), w);
        return r;
      }
  notFound("no appliance " + a.str());
}

json Daemon::apiReload(const json& p) {
  Params pr(p, {"force"});
  const bool force = pr.has("force") && pr.boolean("force");
  if (cfg().source_path.empty()) badRequest("gwlbd was not started from a config file");
  Config next;
  std::vector<ConfigError> errors;
  // The secret files too, as at start-up: a reload must not accept a file
  // the next restart would refuse.
  FlowHashKey next_key;
  bool next_keyed = false;
  if (!loadRunnableConfig(cfg().source_path, next, errors, &next_key, &next_keyed)) {
    // The running config, snapshot, flows and counters stay as they are.
    // One line with every error; then each again at debug.
    std::string all;
    for (const ConfigError& e : errors) all += (all.empty() ? "" : "; ") + (e.path.empty() ? "" : e.path + ": ") + e.message;
    spdlog::error("reload of {} rejected; keeping the running config: {} error{}: {}", cfg().source_path,
                  errors.size(), errors.size() == 1 ? "" : "s", all);
    for (const ConfigError& e : errors) spdlog::debug("reload error: {}: {}", e.path, e.message);
    json d = json::array();
    for (auto& e : errors) d.push_back({{"path", e.path}, {"message", e.message}});
    throw ApiFailure("invalid_config",
                     "invalid configuration (" + std::to_string(errors.size()) + " error" +
                         (errors.size() == 1 ? "" : "s") + "; see details)",
                     d);
  }
  // The control API's changes that the file does not carry are reverted:
  // the file is the source of truth (docs/cli.md "Runtime changes").
  json reverted = json::array();
  for (json& c : runtimeChanges(file_cfg_, cfg())) {
    IpAddr a = *IpAddr::parse(c["address"].get<std::string>());
    const std::string group = c["group"].get<std::string>();
    int64_t now_w = weightIn(cfg(), group, a), next_w = weightIn(next, group, a);
    if (now_w == next_w) continue;  // the file now says the same
    c["after_reload"] = next_w < 0 ? json("absent") : json(next_w);
    reverted.push_back(c);
  }
  Config as_file = next;
  // What the reload changes, for the log line below (appliances by group).
  json changes = runtimeChanges(cfg(), next);
  // Keys a reload cannot apply keep their running value (control/config/config.h).
  json restart = holdRestartKeys(cfg(), next);
  // A new key written to the same secret file changes no path: compare the
  // keys (the running one is the process's; docs/config.md "Reloading").
  if (next_keyed && !(next_key == flowHashKey())) {
    std::string name = hashKeyRestartName(cfg());
    if (std::find(restart.begin(), restart.end(), json(name)) == restart.end()) restart.push_back(name);
  }
  json warnings = guardConfigChange(cfg(), lifecycle(), health_ ? health_->states() : HealthMap{},
                                    next, force, "reload of " + cfg().source_path);
  json r = applyConfig(std::move(next), "removed by reload");
  file_cfg_ = std::move(as_file);
  for (const ConfigError& w : configWarnings(cfg())) {
    spdlog::warn("reload of {}: {}: {}", cfg().source_path, w.path, w.message);
    warnings.push_back(w.path + ": " + w.message);
  }
  if (!warnings.empty()) r["warnings"] = warnings;
  config_loaded_at_ = unixNow();
  r["restart_needed"] = restart;
  r["reverted"] = reverted;
  if (!reverted.empty()) {
    std::string list;
    for (const json& c : reverted)
      list += (list.empty() ? "" : ", ") + c["address"].get<std::string>() + " (" +
              c["change"].get<std::string>() + " at runtime)";
    spdlog::warn("reload of {} reverts {} runtime change(s) the file does not carry: {}",
                 cfg().source_path, reverted.size(), list);
  }
  std::string what;
  for (const json& c : changes) {
    const std::string ch = c["change"].get<std::string>();
    what += (what.empty() ? "" : ", ") + c["address"].get<std::string>() +
            (ch == "added" ? " added to " : ch == "removed" ? " removed from " : " re-weighted in ") +
            c["group"].get<std::string>();
    if (ch == "weight")
      what += " (" + std::to_string(c["file_weight"].get<int64_t>()) + " -> " +
              std::to_string(c["running_weight"].get<int64_t>()) + ")";
  }
  std::string later;
  for (const json& k : restart) later += (later.empty() ? "" : ", ") + k.get<std::string>();
  spdlog::info("{}: reloaded {}: {}{}", reload_origin_, cfg().source_path,
               what.empty() ? "no appliance changed" : what,
               later.empty() ? "" : "; at the next restart: " + later + " (changed, not applied)");
  return r;
}

json Daemon::apiConfig(const json& p) {
  Params pr(p, {"secrets"});
  DumpOptions opt;
  opt.secrets = pr.has("secrets") && pr.boolean("secrets");
  std::vector<std::string> hidden;
  std::string yaml = dumpConfig(cfg(), opt, &hidden);
  return {{"yaml", yaml},
          {"hidden", hidden},
          {"config_file", cfg().source_path},
          {"runtime_changes", runtimeChanges(file_cfg_, cfg())}};
}

}  // namespace gwlb::ctl
