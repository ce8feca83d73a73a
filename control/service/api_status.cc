// The control API methods of gwlbd (docs/control-api.md): the dispatch, `status`,
// `stats`, `reload` and `config`, and the helpers the handler files share
// (control/service/handlers.h). The appliance and group methods are in
// daemon_api_servers.cc, `flows` and `explain` in daemon_api_flows.cc. Control
// thread only: they read the published snapshot and the flow table without stopping workers.
#include <rte_ethdev.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "control/api/api_params.h"
#include "control/daemon/daemon.h"
#include "control/service/handlers.h"
#include "control/engine/service_guard.h"
#include "gwlb_version.h"

namespace gwlb::ctl {

using nlohmann::json;

json changeJson(const RuntimeChange& c) {
  json e = {{"group", c.group}, {"address", c.address.str()}, {"change", c.change()}};
  if (c.file_weight >= 0) e["file_weight"] = c.file_weight;
  if (c.running_weight >= 0) e["running_weight"] = c.running_weight;
  return e;
}

namespace {

constexpr const char* kVersion = GWLB_VERSION;

// How `running` differs from `file` in its appliances: the control API's
// changes (server add, remove, set) since the file was read.
json runtimeChangesJson(const Config& file, const Config& running) {
  json out = json::array();
  for (const RuntimeChange& c : ctl::runtimeChanges(file, running)) out.push_back(changeJson(c));
  return out;
}

}  // namespace

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
                     refusalText(what, losses) +
                         ". Nothing changed; repeat with force (gwlbctl --force) to do it anyway",
                     d);
  }
  spdlog::warn("control API: {} forced: {}", what, text);
  warnings.push_back("forced: " + text);
  return warnings;
}

// The same for a config change from `cur` to `next` (set, remove).
json guardConfigChange(const Config& cur, const ServerLifecycle& life, const HealthMap& health,
                       const ValidConfig& next, bool force, const std::string& what) {
  return guardService(configChangeLosses(cur, life, health, next, dp::monotonicNs(), what), force,
                      what);
}

// Index of the named group; not_found otherwise.
int groupIndex(const Config& cfg, const std::string& name) {
  for (size_t i = 0; i < cfg.server_groups.size(); ++i)
    if (cfg.server_groups[i].name == name) return int(i);
  notFound("no server group '" + name + "'");
}

json Daemon::handleApi(const std::string& method, const json& params) {
  try {
    json result;
    if (method == "status") result = apiStatus(params);
    else if (method == "servers") result = apiServers(params);
    else if (method == "groups") result = apiGroups(params);
    else if (method == "flows") result = apiFlows(params);
    else if (method == "explain") result = apiExplain(params);
    else if (method == "classes") result = apiClasses(params);
    else if (method == "stats") result = apiStats(params);
    else if (method == "server.add") result = apiServerAdd(params);
    else if (method == "server.remove") result = apiServerRemove(params);
    else if (method == "server.set") result = apiServerSet(params);
    else if (method == "server.drain") result = apiServerDrain(params);
    else if (method == "server.undrain") result = apiServerUndrain(params);
    else if (method == "reload") throw std::logic_error("reload is answered apart (Daemon::apiReload)");
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
          {"runtime_changes", runtimeChangesJson(file_cfg_->get(), cfg()).size()},
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

void Daemon::refuseWhileCompiling(const std::string& what) const {
  // A change made from the running config would drop the pending one (the
  // latest wins): refused instead, so that no reload is lost without a word.
  if (engine_->pending())
    throw ApiFailure("busy", what + ": a config change waits for its traffic classes to compile; retry "
                            "when `gwlbctl classes` no longer says compiling");
  // The same while a reload reads its file: the reload would undo the change
  // (the file is the source of truth) or be told of it only in part.
  if (reloading())
    throw ApiFailure("busy", what + ": a reload of " + cfg().source_path +
                                 " is under way; retry once it has answered");
}

json Daemon::applyConfig(ValidConfig next, const std::string& why) {
  // Throws ApiFailure invalid_config / limit_reached; nothing changes then.
  checkProbePaths(next);
  uint64_t generation = engine_->applyConfig(std::move(next), why, dp::monotonicNs());
  applyProbePaths();
  return {{"snapshot_generation", generation}};
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
          {"runtime_changes", runtimeChangesJson(file_cfg_->get(), cfg())}};
}

}  // namespace gwlb::ctl