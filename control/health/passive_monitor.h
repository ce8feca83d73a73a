// Passive detection on the control thread: every turn (gwlbd: 200 ms) reads
// the workers' per-appliance counters of the groups with
// health_check.passive.enabled, feeds them to a PassiveDetector and ejects the
// black holes through the HealthChecker, within the group's
// max_ejection_percent. What it found is kept for the API and /metrics.
#pragma once

#include <cstdint>
#include <functional>
#include <map>

#include "control/config/config.h"
#include "control/health/health_checker.h"
#include "control/health/passive_detector.h"

namespace gwlb::ctl {

class PassiveMonitor {
 public:
  // Packets sent to and returned from appliance `ip` so far (at_ms is the monitor's).
  using Counters = std::function<PassiveDetector::Sample(uint32_t ip)>;

  // One turn at now_ms (any monotonic clock in ms). Returns how many it ejected.
  size_t tick(const Config& cfg, HealthChecker& hc, uint64_t now_ms, const Counters& counters);

  struct Status {
    uint64_t ejections = 0;     // times ejected for no returns
    bool capped = false;        // a black hole left in service: its group is at the cap
  };
  const PassiveDetector& detector() const { return detector_; }
  Status status(uint32_t ip) const {
    auto it = status_.find(ip);
    return it == status_.end() ? Status{} : it->second;
  }
  uint64_t ejectionsTotal() const { return ejections_total_; }
  // Turns at which a black hole was left in service because of the cap.
  uint64_t cappedTotal() const { return capped_total_; }

 private:
  PassiveDetector detector_;
  std::map<uint32_t, Status> status_;
  uint64_t ejections_total_ = 0, capped_total_ = 0;
};

}  // namespace gwlb::ctl
