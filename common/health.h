// Per-appliance health state machine (DOMAIN.md section 2). Pure code with the
// clock passed in (milliseconds): no Asio, no sockets, no sleeps. The control
// thread owns one HealthTracker per appliance; probes only report outcomes.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace gwlb {

enum class HealthState : uint8_t {
  kInitializing,  // checks configured, no verdict yet
  kHealthy,
  kUnhealthy,
  kUnused,        // weight 0: not probed, receives no new flows
  kDisabled,      // health check off: treated as healthy
  kDraining,      // removed, existing flows still served (rebalance issue)
};
const char* toString(HealthState s);
// Whether a server in state s is given new flows: healthy, or health check
// disabled (treated as healthy). A failing server keeps this until it reaches
// the unhealthy threshold, because its state stays healthy until then.
inline bool receivesNewFlows(HealthState s) {
  return s == HealthState::kHealthy || s == HealthState::kDisabled;
}

struct HealthParams {
  uint64_t interval_ms = 2000;       // wait after a result before the next probe
  uint64_t timeout_ms = 5000;        // longest wait for a result
  uint32_t healthy_threshold = 3;    // consecutive successes to become healthy
  uint32_t unhealthy_threshold = 3;  // consecutive failures to become unhealthy
};

// DOMAIN.md section 2: timeout x N + interval x (N - 1).
inline uint64_t failureWindowMs(const HealthParams& p) {
  return p.timeout_ms * p.unhealthy_threshold + p.interval_ms * (p.unhealthy_threshold - 1);
}
// response x N + interval x (N - 1).
inline uint64_t successWindowMs(const HealthParams& p, uint64_t response_ms) {
  return response_ms * p.healthy_threshold + p.interval_ms * (p.healthy_threshold - 1);
}

struct ProbeOutcome {
  bool ok = false;
  std::string reason;        // "ok", "connect_timeout", "bad_status 503", ...
  uint64_t response_ms = 0;  // time from probe start to result
};

struct HealthEvent {
  uint64_t at_ms = 0;
  bool is_transition = false;
  // result
  bool ok = false;
  std::string reason;
  uint64_t response_ms = 0;
  // transition
  HealthState from = HealthState::kInitializing, to = HealthState::kInitializing;
};

struct Transition {
  HealthState from, to;
  std::string reason;  // the last result's reason and the count, e.g. "3 consecutive failures (connect_timeout)"
  uint64_t at_ms;
};

class HealthTracker {
 public:
  static constexpr size_t kHistory = 32;  // results and transitions kept

  // enabled = health_check.enabled; weight 0 makes the server unused.
  HealthTracker(HealthParams p, bool enabled, uint32_t weight, uint64_t now_ms);

  HealthState state() const { return state_; }
  uint32_t consecutive() const { return consecutive_; }  // of the last result's kind
  bool lastOk() const { return last_ok_; }
  uint64_t lastChangeMs() const { return last_change_ms_; }
  const HealthParams& params() const { return p_; }
  const std::deque<HealthEvent>& history() const { return history_; }
  // Whether the scheduler should probe this server at all.
  bool probed() const { return state_ != HealthState::kUnused && state_ != HealthState::kDisabled; }

  // Records a probe outcome that arrived at now_ms. Returns the transition it
  // caused, if any. Ignored (nullopt) when the server is not probed.
  std::optional<Transition> onResult(const ProbeOutcome& r, uint64_t now_ms);

  // Applies a new weight / enabled flag / params (config change). May transition
  // to or from unused/disabled; a probed server that becomes probed again starts
  // from initializing.
  std::optional<Transition> reconfigure(HealthParams p, bool enabled, uint32_t weight,
                                        uint64_t now_ms);

 private:
  void record(HealthEvent e);
  std::optional<Transition> moveTo(HealthState to, std::string reason, uint64_t now_ms);

  HealthParams p_;
  HealthState state_;
  uint32_t consecutive_ = 0;
  bool last_ok_ = false;
  uint64_t last_change_ms_;
  std::deque<HealthEvent> history_;
};

// Start-up jitter: delay of the first probe of server `key`, spread over
// [0, interval) deterministically. It shifts when probing starts, never the
// windows (they are counted from probe starts and results).
uint64_t firstProbeDelayMs(const HealthParams& p, uint64_t key, bool jitter);

}  // namespace gwlb
