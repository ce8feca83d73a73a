// Guard rail for operator changes: draining, weight 0, removal or a reload
// that would leave a server group with no appliance in service (healthy,
// unchecked, or initializing in provisional service; not drained; weight > 0).
// gwlbd refuses such a change unless it is forced, and says what would happen
// (docs/control-api.md, "Changes that leave a group without service").
// Pure: the caller passes both configs, both lifecycles and the health map.
// Control thread only; nothing here throws (except std::bad_alloc).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "control/config/config.h"
#include "control/config/valid_config.h"
#include "control/engine/lifecycle.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {

// A group that has an appliance in service before the change and none after.
struct ServiceLoss {
  std::string group;
  std::vector<std::string> taken;  // its appliances in service before, not after
  // Its appliances with weight > 0 that are neither drained nor removed after
  // the change, with why each is not in service ("unhealthy", "initializing").
  std::vector<std::pair<std::string, std::string>> left;
  std::string new_flows;       // what its new flows then do ("new flows go to ...")
  std::string existing_flows;  // what the flows on `taken` then do
};

// Groups (of `after`) that have an appliance in service under (before,
// life_before) and none under (after, life_after). `health` is the health
// map of `before`; appliances that `after` adds or starts probing are judged
// as the health checker will start them (initializing; in provisional service
// only when no appliance of their group has a verdict).
std::vector<ServiceLoss> serviceLosses(const Config& before, const ApplianceLifecycle& life_before,
                                       const Config& after, const ApplianceLifecycle& life_after,
                                       const HealthMap& health);

// The losses in one line: "server group 'fw' would have no appliance in
// service (left: 10.0.0.12 unhealthy), and then: new flows go to ...; flows
// on 10.0.0.11 stay there ..."; `done`: "has no appliance in service" (forced).
std::string describeLosses(const std::vector<ServiceLoss>& losses, bool done = false);

// What a config change from `cur` (lifecycle `life`) to `next` at now_ns
// would leave without service, with the lifecycle after it as
// ApplianceLifecycle::applyConfig makes it (`why`: the removal's cause). An
// invalid `next` loses nothing here: applying it reports its errors.
// gwlbd's server.remove, server.set and reload ask this; so do gwlb-replay's
// remove, weight and reload events.
std::vector<ServiceLoss> configChangeLosses(const Config& cur, const ApplianceLifecycle& life,
                                            const HealthMap& health, const Config& next,
                                            uint64_t now_ns, const std::string& why);
// The same for a config already validated (not checked again).
std::vector<ServiceLoss> configChangeLosses(const Config& cur, const ApplianceLifecycle& life,
                                            const HealthMap& health, const ValidConfig& next,
                                            uint64_t now_ns, const std::string& why);

// The same for an operator drain of `ip` (gwlbd's server.drain, gwlb-replay's
// drain event). `err` gets what ApplianceLifecycle::drain says is wrong ("" when
// the drain can start; no losses then).
std::vector<ServiceLoss> drainLosses(const Config& cfg, const ApplianceLifecycle& life,
                                     const HealthMap& health, uint32_t ip,
                                     std::optional<uint32_t> timeout_s, uint64_t now_ns,
                                     std::string& err);

// The refusal of a change that would cause `losses` (not empty): "WHAT
// refused: server group 'fw' would have no appliance in service (...)". The
// caller says how to force it.
std::string refusalText(const std::string& what, const std::vector<ServiceLoss>& losses);

}  // namespace gwlb::ctl
