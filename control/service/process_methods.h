// The control API's methods about gwlbd's process rather than its
// appliances (docs/control-api.md): the fleet's routes and flow state sync
// (`fleet`, `fleet.leave`, `fleet.join`, `fleet_sync`: api_fleet.cc) and the
// packet captures (`capture.stop`, the `capture` part of `status`:
// api_capture.cc). Each reads a narrow view of what the daemon owns. Control
// thread only.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "control/config/config.h"
#include "control/fleet/announce.h"
#include "control/fleet/bird_client.h"
#include "control/fleet/fleet_sync.h"
#include "control/service/service.h"
#include "dataplane/capture.h"

namespace gwlb::ctl {

// The fleet as its methods see it: the running config's fleet section (read
// from the engine: a reload replaces it), BIRD's client (null without fleet.bird),
// the route announcement, flow state sync (null without peers), and the
// operator's leave, which `fleet.leave` and `fleet.join` set before asking
// for the announcement to follow.
struct FleetApiView {
  const Engine& engine;
  const FleetConfig& config() const { return engine.config().fleet; }
  const std::shared_ptr<BirdClient>& bird;
  const AnnounceState& announce;
  const std::unique_ptr<FleetSync>& sync;
  const bool& stopping;
  bool& left_by_operator;
  std::function<void()> update_announce;
};
nlohmann::json fleetMethod(const FleetApiView& f, uint64_t now, const nlohmann::json& p);
nlohmann::json fleetLeaveMethod(FleetApiView& f, bool leave, uint64_t now, const nlohmann::json& p);
nlohmann::json fleetSyncMethod(const FleetApiView& f, const nlohmann::json& p);
// The fleet's /metrics families (none without fleet.bird).
void fleetMetrics(std::ostringstream& o, const FleetApiView& f);

// The capture server (null when captures cannot attach, `why_not` says why).
struct CaptureView {
  const std::unique_ptr<dp::CaptureServer>& server;
  const std::string& why_not;
};
nlohmann::json captureJson(const CaptureView& c);
nlohmann::json captureStopMethod(const CaptureView& c, const nlohmann::json& p);

// Adds fleet, fleet.leave, fleet.join, fleet_sync and capture.stop to `t`;
// `f` and `c` must outlive it.
void addProcessMethods(ServiceTable& t, FleetApiView& f, const CaptureView& c);

}  // namespace gwlb::ctl
