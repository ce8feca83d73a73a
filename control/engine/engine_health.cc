// The health checker's way into the engine: a report names the appliance and
// its transition, the engine keeps what it is told and builds when service
// changes. The engine reads no health from anywhere else, so a probe result
// reaches the workers in one call: HealthChecker -> Engine::reportHealth ->
// Engine::build -> publish (docs/architecture.md "A probe result's walk").
#include "control/engine/engine.h"

namespace gwlb::ctl {

bool Engine::recordHealth(const HealthReport& r) {
  auto it = scripted_health_.find(r.appliance);
  // An appliance without an entry is unchecked: in service (buildSnapshot).
  const bool before = it == scripted_health_.end() || receivesNewFlows(it->second);
  if (r.removed) {
    if (it == scripted_health_.end()) return false;
    scripted_health_.erase(it);
    return true;
  }
  scripted_health_[r.appliance] = r.now;
  return r.transition.has_value() || before != receivesNewFlows(r.now);
}

void Engine::reportHealth(const HealthReport& r, uint64_t now) {
  if (recordHealth(r)) rebuild("health", now);
}

}  // namespace gwlb::ctl
