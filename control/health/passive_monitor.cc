#include "control/health/passive_monitor.h"

#include <spdlog/spdlog.h>

namespace gwlb::ctl {

size_t PassiveMonitor::tick(const Config& cfg, HealthChecker& hc, uint64_t now_ms,
                            const Counters& counters) {
  size_t ejected_now = 0;
  std::map<uint32_t, Status> next;
  for (const ApplianceGroupConfig& g : cfg.server_groups) {
    const PassiveCheckConfig& p = g.health_check.passive;
    const bool on = g.health_check.active() && p.enabled;
    size_t ejected = 0;
    if (on)
      for (const ApplianceConfig& sc : g.appliances)
        if (const HealthTracker* t = hc.tracker(applianceKey(sc.address)); t && t->ejected()) ++ejected;
    const uint32_t cap = PassiveDetector::maxEjected(g.appliances.size(), p.max_ejection_percent);
    for (const ApplianceConfig& sc : g.appliances) {
      const uint32_t ip = applianceKey(sc.address);
      Status st = status(ip);
      st.capped = false;
      const HealthTracker* t = hc.tracker(ip);
      if (!on || !t || !t->probed() || !t->receivesNewFlows()) {
        detector_.reset(ip);
        if (on) next[ip] = st;
        continue;
      }
      PassiveDetector::Sample s = counters(ip);
      s.at_ms = now_ms;
      const PassiveDetector::Window w = detector_.observe(ip, p, s);
      if (w.black_hole && ejected < cap) {
        if (hc.eject(ip, noReturnsReason(w), detector_.ejectionTimeMs(ip, p, now_ms))) {
          ++ejected;
          ++ejected_now;
          ++st.ejections;
          ++ejections_total_;
          detector_.reset(ip);
        }
      } else if (w.black_hole) {
        // At the cap: it stays in service (its new flows still go to it)
        // until an ejected one of its group comes back.
        if (!status(ip).capped)
          spdlog::warn("health: appliance {} ({}): {}, but {} of {} appliances of the group are "
                       "already ejected (max_ejection_percent {}): left in service",
                       sc.address.str(), g.name, noReturnsReason(w), ejected, g.appliances.size(),
                       p.max_ejection_percent);
        st.capped = true;
        ++capped_total_;
      }
      next[ip] = st;
    }
  }
  status_ = std::move(next);
  return ejected_now;
}

}  // namespace gwlb::ctl
