// The control API's fleet methods (docs/fleet.md, docs/control-api.md):
// `fleet` (the route announcement through BIRD and the peers), `fleet.leave`
// and `fleet.join` (the operator's withdraw), `fleet_sync` (flow state sync's
// counters), and the fleet's /metrics families. Control thread.
#include <spdlog/spdlog.h>

#include "control/api/api_params.h"
#include "control/service/process_methods.h"

namespace gwlb::ctl {

using nlohmann::json;

json fleetMethod(const FleetApiView& f, uint64_t now, const json& p) {
  Params pr(p, {});
  json out = {{"node_name", f.config().configured ? json(f.config().node_name) : json(nullptr)}};
  if (!f.bird) {
    out["announce"] = {{"state", "off"},
                       {"reason", f.config().configured ? "no fleet.bird section: this node announces nothing"
                                                      : "no fleet section: a single gateway"},
                       {"since_s", nullptr},
                       {"bird", nullptr}};
  } else {
    const BirdClient& bird = *f.bird;
    json protos = json::array();
    for (const auto& pr2 : bird.protocols()) protos.push_back({{"name", pr2.name}, {"state", pr2.state}});
    const AnnounceState& a = f.announce;
    out["announce"] = {
        {"state", a.state()},
        {"reason", a.reason()},
        {"since_s", a.sinceNs() && now > a.sinceNs() ? double(now - a.sinceNs()) / 1e9 : 0.0},
        {"changes", a.changes()},
        {"left_by_operator", f.left_by_operator},
        {"stopping", f.stopping},
        {"grace_period_s", f.config().grace_period_s},
        {"bird", {{"socket", bird.socket()},
                  {"connected", bird.connected()},
                  {"wanted", bird.wantAnnounce() ? "enabled" : "disabled"},
                  {"error", bird.lastError()},
                  {"commands_sent", bird.commandsSent()},
                  {"protocols", protos}}}};
  }
  // Flow state sync: each peer and this node's warm start (the fleet_sync
  // method has every counter).
  if (f.sync) {
    json sync = f.sync->status();
    out["peers"] = sync.value("peers", json::array());
    out["warm_start"] = sync.value("warm_start", json(nullptr));
    out["view"] = sync.value("view", json(nullptr));
  } else {
    out["peers"] = json::array();
    out["warm_start"] = nullptr;
  }
  return out;
}

json fleetLeaveMethod(FleetApiView& f, bool leave, uint64_t now, const json& p) {
  Params pr(p, {});
  if (!f.bird)
    throw ApiFailure("not_configured", "this node announces no routes: the config has no fleet.bird section");
  bool changed = f.left_by_operator != leave;
  f.left_by_operator = leave;
  if (changed) spdlog::warn("fleet: {} by operator", leave ? "left (routes withdrawn)" : "joined again");
  if (f.update_announce) f.update_announce();
  json r = fleetMethod(f, now, json::object());
  r["changed"] = changed;
  return r;
}

json fleetSyncMethod(const FleetApiView& f, const json& p) {
  Params(p, {});
  if (f.sync) {
    json r = f.sync->status();
    r["enabled"] = true;
    return r;
  }
  return {{"enabled", false}, {"peers", json::array()}, {"warm_start", {{"done", true}, {"state", "off"}}}};
}

void fleetMetrics(std::ostringstream& o, const FleetApiView& f) {
  if (!f.bird) return;
  o << "# HELP gwlb_fleet_announced 1 while this node's routes are announced (BIRD has every "
       "protocol of fleet.bird.protocols up as gwlbd asked)\n# TYPE gwlb_fleet_announced gauge\n"
    << "gwlb_fleet_announced " << (f.announce.announced() ? 1 : 0) << "\n";
  o << "# HELP gwlb_fleet_announce_changes_total times the routes went from announced to "
       "withdrawn or back\n# TYPE gwlb_fleet_announce_changes_total counter\n"
    << "gwlb_fleet_announce_changes_total " << f.announce.changes() << "\n";
  o << "# HELP gwlb_fleet_bird_connected 1 while gwlbd is connected to BIRD's control socket\n"
       "# TYPE gwlb_fleet_bird_connected gauge\n"
    << "gwlb_fleet_bird_connected " << (f.bird->connected() ? 1 : 0) << "\n";
}

void addProcessMethods(ServiceTable& t, FleetApiView& f, const CaptureView& c) {
  using P = const json&;
  t.add("fleet", [&f](P p) { return fleetMethod(f, dp::monotonicNs(), p); });
  t.add("fleet.leave", [&f](P p) { return fleetLeaveMethod(f, true, dp::monotonicNs(), p); });
  t.add("fleet.join", [&f](P p) { return fleetLeaveMethod(f, false, dp::monotonicNs(), p); });
  t.add("fleet_sync", [&f](P p) { return fleetSyncMethod(f, p); });
  t.add("capture.stop", [&c](P p) { return captureStopMethod(c, p); });
}

}  // namespace gwlb::ctl
