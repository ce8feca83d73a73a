// Runs the health checks of every appliance on the control thread: schedules
// probes (probe, wait for the result, wait the interval, probe again), feeds
// results to each appliance's HealthTracker, logs every transition and tells
// the daemon when the set of appliances in service changed.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/health.h"
#include "control/config/config.h"
#include "control/health/probe_path.h"
#include "control/engine/snapshot_builder.h"
#include "probes/probe.h"

namespace gwlb::ctl {

class HealthChecker {
 public:
  // on_change runs (on the control thread) after a transition that changes
  // which appliances are in service.
  HealthChecker(boost::asio::io_context& io, std::function<void()> on_change);
  ~HealthChecker();

  // Brings the checked set in line with the config: new appliances start
  // (initializing), removed ones stop, changed settings apply.
  void reconcile(const Config& cfg);

  // Health state of every checked appliance (snapshot builder input).
  HealthMap states() const;

  // Passive detection found `ip` a black hole: unhealthy at once with
  // `reason` (HealthTracker::eject), logged, and on_change runs. False when
  // it is unknown or does not receive new flows.
  bool eject(uint32_t ip, const std::string& reason);

  // State of one appliance, or nullptr when unknown.
  const HealthTracker* tracker(uint32_t ip) const;
  nlohmann::json historyJson(uint32_t ip) const;

  // The ProbeSpec this appliance is checked with: the group's settings, bound
  // to its probe path (control/health/probe_path.h).
  static probe::ProbeSpec specFor(const HealthCheckConfig& h, const IpAddr& address,
                                  const ProbePath& path);
  boost::asio::ssl::context& tls() { return tls_; }
  // Unix time of a tracker timestamp (ms on this checker's clock).
  double unixTime(uint64_t ms) const { return epoch_unix_ + double(ms) / 1000.0; }

 private:
  struct Target;
  void schedule(uint32_t ip, uint64_t delay_ms);
  void startProbe(uint32_t ip);
  uint64_t nowMs() const;

  boost::asio::io_context& io_;
  std::function<void()> on_change_;
  boost::asio::ssl::context tls_;
  std::map<uint32_t, std::shared_ptr<Target>> targets_;
  std::chrono::steady_clock::time_point epoch_;
  double epoch_unix_ = 0;
};

}  // namespace gwlb::ctl
