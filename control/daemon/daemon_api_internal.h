// Helpers the control API's handler files share (control/daemon/daemon_api*.cc):
// the service guard of server changes and reloads, and group lookup by name.
// Defined in control/daemon/daemon_api.cc. Control thread only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/config/config.h"
#include "control/engine/lifecycle.h"
#include "control/engine/service_guard.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {

// Refuses (would_leave_no_service) a change that leaves a group with no
// appliance in service, unless forced; forced, it is logged as a warning and
// returned as `warnings` in the result.
nlohmann::json guardService(const std::vector<ServiceLoss>& losses, bool force, const std::string& what);

// The same for a config change from `cur` to `next` (set, remove, reload).
// An invalid `next` passes: applyConfig() reports its errors.
nlohmann::json guardConfigChange(const Config& cur, const ServerLifecycle& life, const HealthMap& health,
                                 const Config& next, bool force, const std::string& what);

// Index of the named group; not_found otherwise.
int groupIndex(const Config& cfg, const std::string& name);

}  // namespace gwlb::ctl
