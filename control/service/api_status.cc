// The control API methods `status`, `stats` and `config` (docs/control-api.md),
// the guard a config change goes through, and the helpers the handler files
// share (control/service/handlers.h). The appliance and group methods are in
// api_servers.cc, `flows` and `explain` in api_flows.cc. Control thread only:
// they read the published snapshot and the flow table without stopping workers.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "control/api/api_params.h"
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

// The details of a would_leave_no_service refusal: each group, what the
// change takes out of service and what is left.
json lossesJson(const std::vector<ServiceLoss>& losses) {
  json d = json::array();
  for (const ServiceLoss& l : losses) {
    json left = json::array();
    for (auto& [a, why] : l.left) left.push_back({{"address", a}, {"state", why}});
    d.push_back({{"group", l.group}, {"taken_out", l.taken}, {"left", left},
                 {"new_flows", l.new_flows}, {"existing_flows", l.existing_flows}});
  }
  return d;
}

ApiFailure refusalFailure(const Refusal& r, const std::string& what, const std::string& subject) {
  switch (r.kind) {
    case Refusal::Kind::kNotFound: return ApiFailure("not_found", "no appliance " + subject);
    case Refusal::Kind::kConflict: return ApiFailure("conflict", subject + ": " + r.message);
    case Refusal::Kind::kWouldLeaveNoService:
      return ApiFailure("would_leave_no_service",
                        refusalText(what, r.losses) +
                            ". Nothing changed; repeat with force (gwlbctl --force) to do it anyway",
                        lossesJson(r.losses));
    case Refusal::Kind::kInvalidConfig: {
      json d = json::array();
      for (const ConfigError& e : r.errors) d.push_back({{"path", e.path}, {"message", e.message}});
      return ApiFailure("invalid_config", r.message, d);
    }
    case Refusal::Kind::kLimitReached:
      return ApiFailure("limit_reached", r.message,
                        {{"needed", r.ids.needed},
                         {"free", r.ids.free},
                         {"limit", r.ids.limit},
                         {"configured", r.ids.configured},
                         {"removed_with_flows", r.ids.removed_with_flows},
                         {"releasing", r.ids.releasing}});
    case Refusal::Kind::kInternal: break;
  }
  return ApiFailure("internal", what + ": " + r.message);
}

[[noreturn]] void throwRefusal(const Refusal& r, const std::string& what, const std::string& subject) {
  throw refusalFailure(r, what, subject);
}

json failureReply(const ApiFailure& f) {
  json r = apiError(nullptr, f.code, f.what());
  if (!f.details.is_null()) r["error"]["details"] = f.details;
  return r;
}

void logForced(const std::string& what, const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings)
    if (w.rfind("forced: ", 0) == 0) spdlog::warn("control API: {} forced: {}", what, w.substr(8));
}

// Index of the named group; not_found otherwise.
int groupIndex(const Config& cfg, const std::string& name) {
  for (size_t i = 0; i < cfg.server_groups.size(); ++i)
    if (cfg.server_groups[i].name == name) return int(i);
  notFound("no server group '" + name + "'");
}

json statusMethod(const ServiceContext& c, const json& p) {
  Params(p, {});
  json workers = json::array();
  const auto& runs = c.workers.runs;
  for (size_t i = 0; i < runs.size(); ++i) {
    json q = json::array();
    for (auto& rq : runs[i]->cfg.rx) q.push_back(std::to_string(rq.port) + "/" + std::to_string(rq.queue));
    const dp::WorkerHeartbeat& hb = runs[i]->heartbeat;
    workers.push_back({{"id", i}, {"lcore", c.workers.lcores.size() > i ? c.workers.lcores[i] : 0},
                       {"rx_queues", q},
                       {"loops", hb.loops.load(std::memory_order_relaxed)},
                       {"max_loop_gap_ns", hb.max_loop_gap_ns.load(std::memory_order_relaxed)},
                       {"recent_max_loop_gap_ns",
                        hb.recent_max_loop_gap_ns.load(std::memory_order_relaxed)}});
  }
  const dp::Snapshot* s = c.engine.current();
  const ProcessFacts& f = c.facts;
  // null: the node has no underlay address of that family (an IPv6-only node
  // has no IPv4 one).
  const NodeConfig& node = c.engine.config().node;
  auto address = [](const std::optional<IpAddr>& a) { return a ? json(a->str()) : json(nullptr); };
  const json underlay = {{"ipv4", address(node.underlay_ip)}, {"ipv6", address(node.underlay_ipv6)}};
  return {{"version", kVersion},
          {"uptime_s", double(dp::monotonicNs() - f.started_ns) / 1e9},
          {"started_at", f.started_at},
          {"config_file", c.engine.config().source_path},
          {"config_loaded_at", f.config_loaded_at},
          {"underlay", underlay},
          {"runtime_changes", runtimeChangesJson(c.engine.fileConfig(), c.engine.config()).size()},
          {"snapshot_generation", s ? s->generation : 0},
          {"snapshots_live", dp::Snapshot::live()},
          {"snapshots_retiring", c.engine.retiredSnapshots()},
          {"flows", c.engine.flows().count()},
          {"flow_capacity", c.engine.flows().capacity()},
          {"rx_pps", f.rx_pps},
          {"tx_pps", f.tx_pps},
          {"workers", workers},
          {"ports", c.ports ? c.ports() : json::array()},
          {"capture", c.capture ? c.capture() : json(nullptr)}};
}

json statsMethod(const ServiceContext& c, const json& p) {
  Params(p, {});
  json workers = json::array();
  WorkerCounters total;
  for (const auto& st : c.workers.states) {
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
  return {{"workers", workers}, {"totals", totals}, {"drops", drops},
          {"ports", c.ports ? c.ports() : json::array()}, {"flows", c.engine.flows().count()},
          {"lifecycle", lifecycleStatsJson(c.engine.lifecycle())},
          {"snapshots_live", dp::Snapshot::live()}, {"taken_at", unixNow()}};
}

void refuseWhileCompiling(const ServiceContext& c, const std::string& what) {
  // A change made from the running config would drop the pending one (the
  // latest wins): refused instead, so that no reload is lost without a word.
  if (c.engine.pending())
    throw ApiFailure("busy", what + ": a config change waits for its traffic classes to compile; retry "
                            "when `gwlbctl classes` no longer says compiling");
  // The same while a reload reads its file: the reload would undo the change
  // (the file is the source of truth) or be told of it only in part.
  if (c.reloading && c.reloading())
    throw ApiFailure("busy", what + ": a reload of " + c.engine.config().source_path +
                                 " is under way; retry once it has answered");
}

json applyChange(ServiceContext& c, Config next, const std::string& why, bool force, const std::string& what) {
  ChangeOutcome o = c.engine.applyConfig(std::move(next), why, c.now(), force);
  if (o.refused) throwRefusal(*o.refused, what, "");
  logForced(what, o.warnings);
  json r = {{"snapshot_generation", o.generation}};
  if (!o.warnings.empty()) r["warnings"] = o.warnings;
  return r;
}

json configMethod(const Config& running, const Config& file, const json& p) {
  Params pr(p, {"secrets"});
  DumpOptions opt;
  opt.secrets = pr.has("secrets") && pr.boolean("secrets");
  std::vector<std::string> hidden;
  std::string yaml = dumpConfig(running, opt, &hidden);
  return {{"yaml", yaml},
          {"hidden", hidden},
          {"config_file", running.source_path},
          {"runtime_changes", runtimeChangesJson(file, running)}};
}

}  // namespace gwlb::ctl