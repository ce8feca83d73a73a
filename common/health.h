// Per-appliance health state machine (docs/product-rules.md section 1). Pure code with the
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
// An initializing one does not, unless it is in provisional service (below).
inline bool receivesNewFlows(HealthState s) {
  return s == HealthState::kHealthy || s == HealthState::kDisabled;
}

// What the snapshot builder needs to know of a checked appliance: its state
// and, while initializing, whether it is in provisional service. Provisional
// service is how a group starts (gateway start, a new group, checks just
// enabled: no appliance of the group has a verdict yet): every initializing
// appliance takes new flows until its first failed check, so the first one to
// pass does not take every new flow while the others are still being checked.
// An appliance that joins a group whose appliances have verdicts waits for its
// own (like AWS's "initial" targets). Converts from and to HealthState.
struct ApplianceHealth {
  HealthState state = HealthState::kInitializing;
  bool provisional = false;  // initializing and in provisional service
  ApplianceHealth() = default;
  ApplianceHealth(HealthState s, bool prov = false) : state(s), provisional(prov) {}  // NOLINT
  operator HealthState() const { return state; }                                    // NOLINT
};
inline bool receivesNewFlows(const ApplianceHealth& h) {
  return receivesNewFlows(h.state) || (h.state == HealthState::kInitializing && h.provisional);
}

struct HealthParams {
  uint64_t interval_ms = 2000;       // wait after a result before the next probe
  uint64_t timeout_ms = 5000;        // longest wait for a result
  uint32_t healthy_threshold = 3;    // consecutive successes to become healthy
  uint32_t unhealthy_threshold = 3;  // consecutive failures to become unhealthy
};

// docs/product-rules.md section 1: timeout x N + interval x (N - 1), counted from the
// start of the first failed check. A fault that begins just after a passed
// check is seen by the next one, up to one interval (+ response) later.
inline uint64_t failureWindowMs(const HealthParams& p) {
  return p.timeout_ms * p.unhealthy_threshold + p.interval_ms * (p.unhealthy_threshold - 1);
}
// response x N + interval x (N - 1), counted from the first passed check.
inline uint64_t successWindowMs(const HealthParams& p, uint64_t response_ms) {
  return response_ms * p.healthy_threshold + p.interval_ms * (p.healthy_threshold - 1);
}

struct ProbeOutcome {
  bool ok = false;
  std::string reason;        // "ok", "connect_timeout", "bad_status 503", ...
  uint64_t response_ms = 0;  // time from probe start to result
  uint64_t response_us = 0;  // the same in microseconds (0: take response_ms)
};

// Response times of an appliance's probes, as a Prometheus histogram: every
// result counts (a timed-out probe at its timeout, a refused one at once), so
// `count` is the probes completed. Pure; control thread.
struct ProbeLatencyHistogram {
  // Upper bounds in microseconds; one more bucket (+Inf) holds the rest.
  static constexpr uint64_t kBoundsUs[] = {1000,   5000,   25000,   100000,  250000,
                                           500000, 1000000, 2500000, 5000000, 10000000};
  static constexpr size_t kBuckets = sizeof(kBoundsUs) / sizeof(kBoundsUs[0]);
  uint64_t counts[kBuckets + 1] = {};  // per bucket, not cumulative
  uint64_t sum_us = 0;
  uint64_t count = 0;

  void add(uint64_t us) {
    size_t b = 0;
    while (b < kBuckets && us > kBoundsUs[b]) ++b;
    ++counts[b];
    sum_us += us;
    ++count;
  }
  // Results at or below bucket b's bound (b == kBuckets: all of them).
  uint64_t cumulative(size_t b) const {
    uint64_t n = 0;
    for (size_t i = 0; i <= b && i <= kBuckets; ++i) n += counts[i];
    return n;
  }
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

// One appliance's health changed, as its checker tells the engine: which
// appliance, what it is now, and the transition when there was one. It
// carries every fact the receiver needs, so the receiver asks nobody back.
// No transition: it is newly checked, or only its provisional service ended
// (a first failed check) or began (a starting group). `removed`: no longer
// checked; its entry goes.
struct HealthReport {
  uint32_t appliance = 0;  // applianceKey of its address
  ApplianceHealth now;
  std::optional<Transition> transition;
  bool removed = false;
};

class HealthTracker {
 public:
  static constexpr size_t kHistory = 32;  // results and transitions kept

  // enabled = health_check.enabled; weight 0 makes the server unused.
  HealthTracker(HealthParams p, bool enabled, uint32_t weight, uint64_t now_ms);

  HealthState state() const { return state_; }
  uint32_t consecutive() const { return consecutive_; }  // of the last result's kind
  // Failed checks in a row up to the last result (0 after a passed one).
  uint32_t consecutiveFailures() const { return last_ok_ ? 0 : consecutive_; }
  // Response times of every result recorded (kept across reconfigure).
  const ProbeLatencyHistogram& latency() const { return latency_; }
  bool lastOk() const { return last_ok_; }
  // Initializing and in provisional service (see ApplianceHealth): takes new
  // flows until its first failed check. Ends at that failure or any transition.
  bool provisional() const { return provisional_; }
  // Puts an initializing appliance in provisional service (or takes it out).
  // Ignored in any other state. The caller decides (HealthChecker: when no
  // appliance of the group has a verdict).
  void setProvisional(bool on) { provisional_ = on && state_ == HealthState::kInitializing; }
  // Whether new flows may go to it (state, or provisional service).
  bool receivesNewFlows() const { return gwlb::receivesNewFlows(ApplianceHealth(state_, provisional_)); }
  // Whether it has a verdict: healthy or unhealthy.
  bool hasVerdict() const {
    return state_ == HealthState::kHealthy || state_ == HealthState::kUnhealthy;
  }
  uint64_t lastChangeMs() const { return last_change_ms_; }
  const HealthParams& params() const { return p_; }
  const std::deque<HealthEvent>& history() const { return history_; }
  // Whether the scheduler should probe this server at all.
  bool probed() const { return state_ != HealthState::kUnused && state_ != HealthState::kDisabled; }

  // Records a probe outcome that arrived at now_ms. Returns the transition it
  // caused, if any. Ignored (nullopt) when the server is not probed.
  std::optional<Transition> onResult(const ProbeOutcome& r, uint64_t now_ms);

  // Passive detection (docs/product-rules.md "Passive detection"): an appliance
  // that receives new flows and returns nothing of what it is sent becomes
  // unhealthy at once, with `reason`; it comes back as any unhealthy one,
  // after healthy_threshold passed checks whose results arrive after this,
  // and not before `out_ms` (its ejection time) has passed: checks that pass
  // earlier count toward the threshold, the transition waits for the first
  // passed result at or after now_ms + out_ms.
  // nullopt (nothing done) when it does not receive new flows.
  std::optional<Transition> eject(std::string reason, uint64_t now_ms, uint64_t out_ms = 0);
  // Unhealthy by eject(), until its next transition.
  bool ejected() const { return ejected_; }
  // While ejected: the earliest time it may come back (its checks permitting).
  uint64_t ejectedUntilMs() const { return ejected_until_ms_; }

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
  bool provisional_ = false;
  bool ejected_ = false;
  uint64_t ejected_until_ms_ = 0;
  uint64_t last_change_ms_;
  std::deque<HealthEvent> history_;
  ProbeLatencyHistogram latency_;
};

// The window that explains a transition, for the log: to unhealthy, the
// failure window; to healthy, the success window at `response_ms` (the
// response time of the check that completed it). Other transitions: "".
// Never a success window from a failed (e.g. timed-out) check.
std::string transitionWindowText(const HealthParams& p, HealthState to, uint64_t response_ms);

// Start-up jitter: delay of the first probe of server `key`, spread over
// [0, interval) deterministically. It shifts when probing starts, never the
// windows (they are counted from probe starts and results).
uint64_t firstProbeDelayMs(const HealthParams& p, uint64_t key, bool jitter);

}  // namespace gwlb
