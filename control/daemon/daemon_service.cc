// Passive detection in gwlbd: the passive monitor's turn (its counters are
// the workers' per-appliance ones). Its /metrics families, with flap
// dampening's and slow start's, are control/service/service_metrics.cc's.
// Control thread.
#include <spdlog/spdlog.h>

#include "control/daemon/daemon.h"
#include "control/service/handlers.h"

namespace gwlb::ctl {

void Daemon::passiveTick() {
  if (!health_) return;
  passive_.tick(cfg(), *health_, dp::monotonicNs() / 1'000'000, [this](uint32_t ip) {
    const ApplianceTraffic t = appliances_->traffic(engine_->registry().find(ip));
    return PassiveDetector::Sample{0, t.sent_packets, t.returned_packets};
  });
}

}  // namespace gwlb::ctl
