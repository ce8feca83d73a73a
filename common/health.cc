// Per-appliance health state machine (docs/product-rules.md section 1). See health.h.
#include "common/health.h"

#include <algorithm>
#include <utility>

namespace gwlb {

const char* toString(HealthState s) {
  switch (s) {
    case HealthState::kInitializing: return "initializing";
    case HealthState::kHealthy: return "healthy";
    case HealthState::kUnhealthy: return "unhealthy";
    case HealthState::kUnused: return "unused";
    case HealthState::kDisabled: return "disabled";
    case HealthState::kDraining: return "draining";
  }
  return "unknown";
}

namespace {

// State a server gets from its configuration alone, before any result.
HealthState configuredState(bool enabled, uint32_t weight) {
  if (weight == 0) return HealthState::kUnused;  // gets no flows, even if checks are off
  if (!enabled) return HealthState::kDisabled;
  return HealthState::kInitializing;
}

bool isProbedState(HealthState s) {
  return s != HealthState::kUnused && s != HealthState::kDisabled;
}

std::string countReason(uint32_t n, bool ok, const std::string& last_reason) {
  std::string s = std::to_string(n) + " consecutive " +
                  (ok ? (n == 1 ? "success" : "successes") : (n == 1 ? "failure" : "failures"));
  if (!ok && !last_reason.empty()) s += " (" + last_reason + ")";
  return s;
}

}  // namespace

HealthTracker::HealthTracker(HealthParams p, bool enabled, uint32_t weight, uint64_t now_ms)
    : p_(p), state_(configuredState(enabled, weight)), last_change_ms_(now_ms) {}

void HealthTracker::record(HealthEvent e) {
  history_.push_back(std::move(e));
  while (history_.size() > kHistory) history_.pop_front();
}

std::optional<Transition> HealthTracker::moveTo(HealthState to, std::string reason,
                                                uint64_t now_ms) {
  if (to == state_) return std::nullopt;
  Transition t{state_, to, std::move(reason), now_ms};
  provisional_ = false;
  ejected_ = false;
  HealthEvent e;
  e.at_ms = now_ms;
  e.is_transition = true;
  e.reason = t.reason;
  e.from = state_;
  e.to = to;
  record(std::move(e));
  state_ = to;
  last_change_ms_ = now_ms;
  return t;
}

std::optional<Transition> HealthTracker::onResult(const ProbeOutcome& r, uint64_t now_ms) {
  if (!probed()) return std::nullopt;

  if (consecutive_ == 0 || r.ok != last_ok_) {
    consecutive_ = 1;
  } else if (consecutive_ < UINT32_MAX) {
    ++consecutive_;
  }
  last_ok_ = r.ok;
  latency_.add(r.response_us ? r.response_us : r.response_ms * 1000);
  if (!r.ok) provisional_ = false;  // a failed check ends provisional service

  HealthEvent e;
  e.at_ms = now_ms;
  e.ok = r.ok;
  e.reason = r.reason;
  e.response_ms = r.response_ms;
  record(std::move(e));

  // Draining servers are on their way out: results are kept, state is not changed.
  if (state_ == HealthState::kDraining) return std::nullopt;

  const uint32_t need = std::max<uint32_t>(1, r.ok ? p_.healthy_threshold : p_.unhealthy_threshold);
  const HealthState target = r.ok ? HealthState::kHealthy : HealthState::kUnhealthy;
  if (state_ == target || consecutive_ < need) return std::nullopt;
  // An ejected appliance serves its ejection time out, however its checks go.
  if (r.ok && ejected_ && now_ms < ejected_until_ms_) return std::nullopt;
  // Reason names the threshold count (the count at which the state changed);
  // consecutive_ can only exceed it if the threshold was lowered meanwhile.
  return moveTo(target, countReason(consecutive_, r.ok, r.reason), now_ms);
}

std::optional<Transition> HealthTracker::eject(std::string reason, uint64_t now_ms, uint64_t out_ms) {
  if (!probed() || !receivesNewFlows()) return std::nullopt;
  // Passed checks before the ejection do not count toward coming back.
  consecutive_ = 0;
  last_ok_ = false;
  auto t = moveTo(HealthState::kUnhealthy, std::move(reason), now_ms);
  ejected_ = t.has_value();
  ejected_until_ms_ = ejected_ ? now_ms + out_ms : 0;
  return t;
}

std::optional<Transition> HealthTracker::reconfigure(HealthParams p, bool enabled,
                                                     uint32_t weight, uint64_t now_ms) {
  p_ = p;
  const HealthState wanted = configuredState(enabled, weight);
  if (wanted == HealthState::kUnused) {
    return moveTo(HealthState::kUnused, "weight 0", now_ms);
  }
  if (wanted == HealthState::kDisabled) {
    return moveTo(HealthState::kDisabled, "health check disabled", now_ms);
  }
  // Probed from now on.
  if (isProbedState(state_)) return std::nullopt;  // only params changed: keep state and counts
  const char* why = state_ == HealthState::kUnused ? "weight set, probing starts"
                                                   : "health check enabled";
  consecutive_ = 0;
  last_ok_ = false;
  return moveTo(HealthState::kInitializing, why, now_ms);
}

std::string transitionWindowText(const HealthParams& p, HealthState to, uint64_t response_ms) {
  if (to == HealthState::kUnhealthy)
    return "failure window " + std::to_string(failureWindowMs(p)) +
           " ms after the first failed check";
  if (to == HealthState::kHealthy)
    return "success window " + std::to_string(successWindowMs(p, response_ms)) +
           " ms after the first passed check at " + std::to_string(response_ms) +
           " ms per response";
  return "";
}

uint64_t firstProbeDelayMs(const HealthParams& p, uint64_t key, bool jitter) {
  if (!jitter || p.interval_ms == 0) return 0;
  // splitmix64 finalizer: spreads sequential keys (ids, indexes) evenly.
  uint64_t z = key + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z % p.interval_ms;
}

}  // namespace gwlb
