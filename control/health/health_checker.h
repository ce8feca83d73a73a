// Runs the health checks of every appliance on the control thread: schedules
// probes (probe, wait for the result, wait the interval, probe again) on one
// timing wheel (probe_wheel.h), feeds results to each appliance's
// HealthTracker, logs every transition and reports each change of an
// appliance's health, with its transition, to whoever owns the snapshot
// (gwlbd: Engine::reportHealth).
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>
#include <nlohmann/json.hpp>

#include "common/health.h"
#include "control/config/config.h"
#include "control/health/probe_path.h"
#include "control/health/probe_wheel.h"
#include "control/engine/snapshot_builder.h"
#include "probes/probe.h"

namespace gwlb::ctl {

class HealthChecker {
 public:
  // `report` runs (on the control thread) each time an appliance's health
  // changes after a probe result or an ejection: which appliance, its health
  // now, and the transition when there was one. It may throw: the checks go
  // on, and the exception goes to whoever runs `io`.
  using Reporter = std::function<void(const HealthReport&)>;
  HealthChecker(boost::asio::io_context& io, Reporter report);
  ~HealthChecker();

  // Brings the checked set in line with the config: new appliances start
  // (initializing), removed ones stop, changed settings apply. Returns the
  // reports of what changed (new, reconfigured, removed appliances) instead
  // of running `report`: the caller applies them with the config.
  std::vector<HealthReport> reconcile(const Config& cfg);

  // Health state of every checked appliance (snapshot builder input).
  HealthMap states() const;

  // Passive detection found `ip` a black hole: unhealthy at once with
  // `reason`, out for at least `out_ms` (HealthTracker::eject), logged, and
  // reported. False when it is unknown or does not receive new flows.
  bool eject(uint32_t ip, const std::string& reason, uint64_t out_ms = 0);
  // The checker's clock (ms since it started), as HealthTracker times are.
  uint64_t now() const { return nowMs(); }

  // State of one appliance, or nullptr when unknown.
  const HealthTracker* tracker(uint32_t ip) const;
  nlohmann::json historyJson(uint32_t ip) const;

  // The ProbeSpec this appliance is checked with: the group's settings, bound
  // to its probe path (control/health/probe_path.h).
  static probe::ProbeSpec specFor(const HealthCheckConfig& h, const IpAddr& address,
                                  const ProbePath& path);
  boost::asio::ssl::context& tls() { return tls_; }
  const probe::KeptConnections& keptConnections() const { return *kept_; }

  // Forwarding checks (health_check.forwarding, docs/product-rules.md
  // "Forwarding checks"). `send` puts the probe with this token on the wire
  // for the appliance at `ip` (false: it could not be built now, e.g. the
  // MAC is unknown; the check then times out). Set once, by the daemon.
  using ForwardingSender = std::function<bool(uint32_t ip, uint32_t token)>;
  void setForwardingSender(ForwardingSender send) { send_forwarding_ = std::move(send); }
  // A probe came back wrapped from `appliance` with `token`: it completes
  // that appliance's check when it is the one outstanding; a late one, or one
  // from another appliance, is counted and changes nothing.
  void forwardingReturned(uint32_t appliance, uint32_t token);
  struct ForwardingCounts {
    uint64_t sent = 0, unsent = 0, returned = 0, timed_out = 0, late = 0, wrong_appliance = 0;
  };
  const ForwardingCounts& forwardingCounts() const { return fwd_counts_; }
  // The same for the probes sent to one appliance (late and wrong_appliance
  // stay 0: such a return names no appliance it proves anything of); nullptr
  // when it is not checked. Kept across reconfigures, dropped with it.
  const ForwardingCounts* forwardingCounts(uint32_t ip) const;
  // TLS handshakes HTTPS probes completed (of appliances still checked with
  // the settings they ran with): full ones and resumed ones. Resumption
  // failing shows as full ones rising with every probe.
  struct TlsCounts {
    uint64_t full = 0, resumed = 0;
  };
  const TlsCounts& tlsHandshakes() const { return tls_counts_; }
  // One appliance's HTTP(S) probes: answered on a connection kept from an
  // earlier probe (keep_alive), and TLS handshakes, full and resumed;
  // nullptr when it is not checked. Kept across reconfigures, dropped with it.
  struct ConnectionCounts {
    uint64_t kept = 0, tls_full = 0, tls_resumed = 0;
  };
  const ConnectionCounts* connectionCounts(uint32_t ip) const;
  // Unix time of a tracker timestamp (ms on this checker's clock).
  double unixTime(uint64_t ms) const { return epoch_unix_ + double(ms) / 1000.0; }

 private:
  struct Target;
  void schedule(Target& t, uint64_t delay_ms);
  void unschedule(Target& t);
  void armWheel();
  void armAt(uint64_t due_ms);
  void onWheel();
  void startProbe(const std::shared_ptr<Target>& t);
  void judge(const std::shared_ptr<Target>& t, uint32_t ip, const probe::ProbeResult& r);
  uint64_t nowMs() const;
  using ResultHandler = std::function<void(const probe::ProbeResult&)>;
  void startForwarding(const std::shared_ptr<Target>& t, uint32_t ip, uint64_t epoch);
  ResultHandler joinForwarding(const std::shared_ptr<Target>& t, uint64_t epoch, ResultHandler done);
  void deliverRound(const std::shared_ptr<Target>& t);

  boost::asio::io_context& io_;
  Reporter report_;
  boost::asio::ssl::context tls_;
  // keep_alive checks' connections between probes (closed in the destructor).
  std::shared_ptr<probe::KeptConnections> kept_ = std::make_shared<probe::KeptConnections>();
  std::map<uint32_t, std::shared_ptr<Target>> targets_;
  // The same targets by slot (Target::slot), as the wheel's entries name
  // them: a due probe finds its appliance without a search. A removed
  // target's slot is empty until a new one takes it.
  std::vector<std::shared_ptr<Target>> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_seq_ = 0;  // every schedule's seq: unique, so a reused slot's old entries never match
  std::chrono::steady_clock::time_point epoch_;
  double epoch_unix_ = 0;
  // Every appliance's next probe, and the one timer that wakes for them.
  ProbeWheel wheel_{0};
  boost::asio::steady_timer wheel_timer_;
  std::optional<uint64_t> wheel_armed_;  // the time wheel_timer_ waits for
  std::vector<ProbeWheel::Entry> due_;   // reused by onWheel()
  uint32_t next_token_ = 1;
  ForwardingSender send_forwarding_;
  std::map<uint32_t, uint32_t> fwd_outstanding_;  // token -> appliance, until its timeout
  ForwardingCounts fwd_counts_;
  TlsCounts tls_counts_;
};

}  // namespace gwlb::ctl
