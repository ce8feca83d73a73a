// The control API's appliance and group methods (docs/control-api.md): `servers`,
// `groups`, `server.add`, `server.remove`, `server.set`, `server.drain` and
// `server.undrain`, with each appliance's drain and the lifecycle counts. Control thread.
#include <spdlog/spdlog.h>

#include <cstdio>

#include "control/api/api_params.h"
#include "control/engine/service_guard.h"
#include "control/service/appliance_view.h"
#include "control/service/handlers.h"

namespace gwlb::ctl {

using nlohmann::json;

namespace {

std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", (unsigned long long)v);
  return b;
}

}  // namespace

json appliancesMethod(const Engine& engine, const ApplianceView& appliances, const json& p) {
  Params pr(p, {"group"});
  int group = pr.has("group") ? groupIndex(engine.config(), pr.str("group")) : -1;
  // The flows per appliance as the engine's last housekeeping walk counted
  // them (at most a second and a walk old): counting here would walk the
  // whole table in one call.
  const std::vector<uint32_t>& counted = engine.flowsByAppliance();
  auto active = [&](uint16_t id) -> uint64_t { return id < counted.size() ? counted[id] : 0; };
  const dp::Snapshot* s = engine.current();
  json out = json::array();
  for (size_t gi = 0; gi < engine.config().server_groups.size(); ++gi) {
    if (group >= 0 && int(gi) != group) continue;
    for (const auto& sc : engine.config().server_groups[gi].appliances) {
      uint32_t ip = applianceKey(sc.address);
      uint16_t id = engine.registry().find(ip);
      ApplianceTraffic tr = appliances.traffic(id);
      const dp::ApplianceSlot* sv = (s && id < s->appliances.size()) ? &s->appliances[id] : nullptr;
      const ApplianceView::Status* status = appliances.status(ip);
      const ApplianceLifecycle::Entry* le = engine.lifecycle().find(ip);
      json j = {{"address", sc.address.str()},
                {"group", engine.config().server_groups[gi].name},
                {"weight", sc.weight},
                {"state", appliances.state(ip)},
                {"reason", status ? status->reason : ""},
                {"since", status ? status->since : 0.0},
                {"mac", sv && sv->mac_known ? json(sv->mac.str()) : json(nullptr)},
                {"active_flows", active(id)},
                {"health", appliances.healthJson(ip)},
                {"packets", tr.sent_packets},
                {"bytes", tr.sent_bytes},
                {"returned_packets", tr.returned_packets},
                {"returned_bytes", tr.returned_bytes},
                {"bypassed_packets", tr.bypassed_packets},
                {"bypassed_bytes", tr.bypassed_bytes}};
      if (le) {
        j["reason"] = le->why;
        j["drain"] = drainJson(engine, *le);
      }
      out.push_back(std::move(j));
    }
  }
  // Appliances removed from the config that still carry flows (or drain).
  for (const auto& [ip, le] : engine.lifecycle().entries()) {
    if (!le.removed) continue;
    if (group >= 0 && engine.config().server_groups[size_t(group)].name != le.group) continue;
    uint16_t id = engine.registry().find(ip);
    ApplianceTraffic tr = appliances.traffic(id);
    const dp::ApplianceSlot* sv = (s && id < s->appliances.size()) ? &s->appliances[id] : nullptr;
    out.push_back({{"address", le.appliance.address.str()},
                   {"group", le.group},
                   {"weight", 0},
                   {"state", le.phase == dp::AppliancePhase::kDraining ? "draining" : "removed"},
                   {"reason", le.why},
                   {"since", 0.0},
                   {"mac", sv && sv->mac_known ? json(sv->mac.str()) : json(nullptr)},
                   {"active_flows", active(id)},
                   {"health", {{"state", "unused"}}},
                   {"packets", tr.sent_packets},
                   {"bytes", tr.sent_bytes},
                   {"returned_packets", tr.returned_packets},
                   {"returned_bytes", tr.returned_bytes},
                   {"bypassed_packets", tr.bypassed_packets},
                   {"bypassed_bytes", tr.bypassed_bytes},
                   {"drain", drainJson(engine, le)}});
  }
  uint64_t at = engine.flowsCountedAt(), now = dp::monotonicNs();
  return {{"servers", out},
          {"flows_counted_s_ago", at && now > at ? json(double(now - at) / 1e9) : json(nullptr)}};
}

json drainJson(const Engine& engine, const ApplianceLifecycle::Entry& e) {
  uint64_t now = dp::monotonicNs();
  bool draining = e.phase == dp::AppliancePhase::kDraining;
  std::string flows;
  if (!e.rebalance) flows = "stay (no_rebalance)";
  else if (draining) flows = "stay until the drain ends, then move (rebalance)";
  else flows = "move on their next packet (rebalance)";
  // The snapshot holds a move back while the group has no appliance in service.
  if (e.rebalance && !draining && e.move_reason != dp::MoveReason::kNone) {
    const dp::Snapshot* s = engine.current();
    uint16_t id = engine.registry().find(e.ip);
    if (s && id < s->appliances.size() && s->appliances[id].move_reason == dp::MoveReason::kNone)
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

json lifecycleStatsJson(const ApplianceLifecycle& life) {
  const ApplianceLifecycle::Stats& st = life.stats();
  return {{"drains_started", st.drains_started},
          {"drains_emptied", st.drains_emptied},
          {"drains_timed_out", st.drains_timed_out},
          {"flows_drained", st.flows_drained},
          {"flows_drain_timed_out", st.flows_drain_timed_out},
          {"removals", st.removals},
          {"forgotten", st.forgotten},
          {"flows_swept", st.flows_swept}};
}

uint32_t applianceKeyOf(const Engine& engine, const IpAddr& a) {
  if (a.isV4()) return a.v4HostOrder();
  for (const ApplianceGroupConfig& g : engine.config().server_groups)
    for (const ApplianceConfig& sc : g.appliances)
      if (sc.address == a) return applianceKey(a);
  for (const auto& [key, le] : engine.lifecycle().entries())
    if (le.appliance.address == a) return key;
  notFound("no appliance " + a.str());
}

json drainMethod(Engine& engine, uint64_t now, const json& p) {
  Params pr(p, {"address", "timeout_s", "force"});
  if (!pr.has("address")) badRequest("server.drain needs address");
  IpAddr a = pr.ip("address");
  std::optional<uint32_t> timeout;
  if (pr.has("timeout_s")) timeout = uint32_t(pr.num("timeout_s", 1, 3600));
  const bool force = pr.has("force") && pr.boolean("force");
  const uint32_t key = applianceKeyOf(engine, a);
  const std::string what = "server.drain " + a.str();
  ChangeOutcome o = engine.drain(key, timeout, now, force);
  if (o.refused) throwRefusal(*o.refused, what, a.str());
  logForced(what, o.warnings);
  const ApplianceLifecycle::Entry* le = engine.lifecycle().find(key);
  spdlog::info("control API: draining appliance {} for {:.0f} s", a.str(),
               double(le->deadline_ns - le->since_ns) / 1e9);
  const dp::Snapshot* s = engine.current();
  json r = {{"snapshot_generation", s ? s->generation : 0}, {"drain", drainJson(engine, *le)}};
  if (!o.warnings.empty()) r["warnings"] = o.warnings;
  return r;
}

json undrainMethod(Engine& engine, uint64_t now, const json& p) {
  Params pr(p, {"address"});
  if (!pr.has("address")) badRequest("server.undrain needs address");
  IpAddr a = pr.ip("address");
  std::string err = engine.undrain(applianceKeyOf(engine, a), now);
  if (!err.empty()) throw ApiFailure("conflict", a.str() + ": " + err);
  spdlog::info("control API: appliance {} no longer drained", a.str());
  const dp::Snapshot* s = engine.current();
  return {{"snapshot_generation", s ? s->generation : 0}};
}

json groupsMethod(const Engine& engine, const ApplianceView& appliances, const json& p) {
  Params(p, {});
  json out = json::array();
  for (const auto& g : engine.config().server_groups) {
    // Every state an appliance can be in (ApplianceView::state), counted: a group
    // with an unhealthy or draining appliance says so here too.
    json servers = {{"total", g.appliances.size()}};
    for (const char* st : {"active", "idle", "unresolved", "unhealthy", "dampened", "initializing", "draining",
                           "drained", "removed"})
      servers[st] = 0;
    for (const auto& sc : g.appliances) {
      std::string st = appliances.state(applianceKey(sc.address));
      servers[st] = servers.value(st, 0) + 1;
    }
    // Removed from the config but still listed while their flows last.
    for (const auto& [ip, le] : engine.lifecycle().entries())
      if (le.removed && le.group == g.name) servers["removed"] = servers["removed"].get<int>() + 1;
    out.push_back({{"name", g.name},
                   {"stickiness", toString(g.stickiness)},
                   {"geneve",
                    {{"format", toString(g.geneve.format)},
                     {"vni", g.geneve.vni},
                     {"endpoint_id", hex64(g.geneve.endpoint_id)},
                     {"attachment_id", hex64(g.geneve.attachment_id)}}},
                   {"encapsulation", toString(g.encapsulation)},
                   {"vxlan", g.encapsulation == Encapsulation::kVxlan
                                 ? json{{"internal", {{"port", g.vxlan.internal.port}, {"vni", g.vxlan.internal.vni}}},
                                        {"external", {{"port", g.vxlan.external.port}, {"vni", g.vxlan.external.vni}}}}
                                 : json()},
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

json applianceAddMethod(ServiceContext& c, const json& p) {
  Params pr(p, {"group", "address", "weight", "mac"});
  if (!pr.has("group") || !pr.has("address")) badRequest("server.add needs group and address");
  refuseWhileCompiling(c, "server.add");
  std::string g = pr.str("group");
  Config next = c.engine.config();
  ApplianceGroupConfig* grp = nullptr;
  for (auto& gc : next.server_groups)
    if (gc.name == g) grp = &gc;
  if (!grp) notFound("no server group '" + g + "'");
  ApplianceConfig sc;
  sc.address = pr.ip("address");
  if (pr.has("weight")) sc.weight = uint32_t(pr.num("weight", 0, 10000));
  if (pr.has("mac")) {
    auto m = MacAddr::parse(pr.str("mac"));
    if (!m) badRequest("mac: '" + pr.str("mac") + "' is not a MAC address");
    sc.mac = *m;
  }
  grp->appliances.push_back(sc);
  // Not guarded: an appliance more takes nothing out of service.
  json r = applyChange(c, std::move(next), "removed", true, "server.add " + sc.address.str());
  spdlog::info("control API: added appliance {} to group {}", sc.address.str(), g);
  return r;
}

json applianceRemoveMethod(ServiceContext& c, const json& p) {
  Params pr(p, {"address", "force"});
  if (!pr.has("address")) badRequest("server.remove needs address");
  refuseWhileCompiling(c, "server.remove");
  IpAddr a = pr.ip("address");
  const bool force = pr.has("force") && pr.boolean("force");
  Config next = c.engine.config();
  for (auto& gc : next.server_groups)
    for (auto it = gc.appliances.begin(); it != gc.appliances.end(); ++it)
      if (it->address == a) {
        gc.appliances.erase(it);
        const std::string group = gc.name;
        json r = applyChange(c, std::move(next), "removed by server.remove", force, "server.remove " + a.str());
        spdlog::info("control API: removed appliance {} from group {}", a.str(), group);
        return r;
      }
  notFound("no appliance " + a.str());
}

json applianceSetMethod(ServiceContext& c, const json& p) {
  Params pr(p, {"address", "weight", "force"});
  if (!pr.has("address") || !pr.has("weight")) badRequest("server.set needs address and weight");
  refuseWhileCompiling(c, "server.set");
  IpAddr a = pr.ip("address");
  uint32_t w = uint32_t(pr.num("weight", 0, 10000));
  const bool force = pr.has("force") && pr.boolean("force");
  Config next = c.engine.config();
  for (auto& gc : next.server_groups)
    for (auto& sc : gc.appliances)
      if (sc.address == a) {
        sc.weight = w;
        json r = applyChange(c, std::move(next), "removed", force,
                             "server.set " + a.str() + " weight " + std::to_string(w));
        spdlog::info("control API: appliance {} weight {}", a.str(), w);
        return r;
      }
  notFound("no appliance " + a.str());
}

}  // namespace gwlb::ctl
