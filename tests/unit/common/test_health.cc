// Health state machine and its time windows (docs/product-rules.md section 1), driven by a
// simulated per-server scheduler: probe at t; the result arrives at t + response
// (or t + timeout when there is no answer); the next probe starts interval after
// the result. All times are simulated milliseconds; nothing sleeps.
#include "common/health.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gwlb {
namespace {

struct Scripted {
  bool ok;
  uint64_t response_ms;  // ignored for failures: a failure is a timeout
};

Scripted success(uint64_t response_ms) { return {true, response_ms}; }
Scripted timeoutFailure() { return {false, 0}; }

struct SeenTransition {
  Transition t;
  size_t probe_index;  // which probe's result caused it
};

// One server's probe loop.
class Sim {
 public:
  Sim(HealthTracker& tr, uint64_t first_probe_ms) : tr_(tr), next_probe_ms_(first_probe_ms) {}

  // Runs one probe with the given outcome; returns its transition, if any.
  std::optional<Transition> step(const Scripted& s) {
    const uint64_t start = next_probe_ms_;
    probe_starts_.push_back(start);
    ProbeOutcome o;
    o.ok = s.ok;
    o.reason = s.ok ? "ok" : "connect_timeout";
    o.response_ms = s.ok ? s.response_ms : tr_.params().timeout_ms;
    const uint64_t result_at = start + o.response_ms;
    auto t = tr_.onResult(o, result_at);
    if (t) seen_.push_back({*t, probe_starts_.size() - 1});
    next_probe_ms_ = result_at + tr_.params().interval_ms;
    return t;
  }

  // Runs probes until a transition happens (or max probes); returns it.
  std::optional<Transition> runUntilTransition(const Scripted& s, size_t max_probes = 1000) {
    for (size_t i = 0; i < max_probes; ++i) {
      if (auto t = step(s)) return t;
    }
    return std::nullopt;
  }

  uint64_t nextProbeMs() const { return next_probe_ms_; }
  const std::vector<uint64_t>& probeStarts() const { return probe_starts_; }
  const std::vector<SeenTransition>& seen() const { return seen_; }

 private:
  HealthTracker& tr_;
  uint64_t next_probe_ms_;
  std::vector<uint64_t> probe_starts_;
  std::vector<SeenTransition> seen_;
};

HealthParams params(uint64_t timeout_ms, uint64_t interval_ms, uint32_t healthy_n,
                    uint32_t unhealthy_n) {
  HealthParams p;
  p.timeout_ms = timeout_ms;
  p.interval_ms = interval_ms;
  p.healthy_threshold = healthy_n;
  p.unhealthy_threshold = unhealthy_n;
  return p;
}

// Brings a fresh tracker to healthy, then measures from the start of the first
// failing probe to the healthy -> unhealthy transition.
uint64_t measureFailureWindow(const HealthParams& p, uint64_t start_ms = 0) {
  HealthTracker tr(p, true, 1, start_ms);
  Sim sim(tr, start_ms);
  auto up = sim.runUntilTransition(success(10));
  EXPECT_TRUE(up && up->to == HealthState::kHealthy);
  const uint64_t first_fail_start = sim.nextProbeMs();
  auto down = sim.runUntilTransition(timeoutFailure());
  EXPECT_TRUE(down.has_value());
  if (!down) return 0;
  EXPECT_EQ(down->from, HealthState::kHealthy);
  EXPECT_EQ(down->to, HealthState::kUnhealthy);
  return down->at_ms - first_fail_start;
}

// Brings a fresh tracker to unhealthy, then measures from the start of the
// first successful probe to the unhealthy -> healthy transition.
uint64_t measureSuccessWindow(const HealthParams& p, uint64_t response_ms) {
  HealthTracker tr(p, true, 1, 0);
  Sim sim(tr, 0);
  auto down = sim.runUntilTransition(timeoutFailure());
  EXPECT_TRUE(down && down->to == HealthState::kUnhealthy);
  const uint64_t first_ok_start = sim.nextProbeMs();
  auto up = sim.runUntilTransition(success(response_ms));
  EXPECT_TRUE(up.has_value());
  if (!up) return 0;
  EXPECT_EQ(up->from, HealthState::kUnhealthy);
  EXPECT_EQ(up->to, HealthState::kHealthy);
  return up->at_ms - first_ok_start;
}

// ---- time windows ----

TEST(HealthWindows, FailureWindowGwlbExample) {
  const HealthParams p = params(5000, 2000, 3, 3);
  EXPECT_EQ(measureFailureWindow(p), 19000u);
  EXPECT_EQ(failureWindowMs(p), 19000u);
}

TEST(HealthWindows, FailureWindowGaExample) {
  const HealthParams p = params(3000, 2000, 3, 3);
  EXPECT_EQ(measureFailureWindow(p), 13000u);
  EXPECT_EQ(failureWindowMs(p), 13000u);
}

TEST(HealthWindows, SuccessWindowExample) {
  const HealthParams p = params(5000, 2000, 3, 3);
  EXPECT_EQ(measureSuccessWindow(p, 1000), 7000u);
  EXPECT_EQ(successWindowMs(p, 1000), 7000u);
}

TEST(HealthWindows, OtherThresholdsBothWays) {
  for (uint32_t n : {2u, 10u}) {
    SCOPED_TRACE("threshold " + std::to_string(n));
    const HealthParams p = params(3000, 2000, n, n);
    const uint64_t fail = 3000ull * n + 2000ull * (n - 1);
    const uint64_t ok = 700ull * n + 2000ull * (n - 1);
    EXPECT_EQ(measureFailureWindow(p), fail);
    EXPECT_EQ(failureWindowMs(p), fail);
    EXPECT_EQ(measureSuccessWindow(p, 700), ok);
    EXPECT_EQ(successWindowMs(p, 700), ok);
  }
  EXPECT_EQ(failureWindowMs(params(3000, 2000, 2, 2)), 8000u);
  EXPECT_EQ(failureWindowMs(params(3000, 2000, 10, 10)), 48000u);
}

TEST(HealthWindows, DifferentHealthyAndUnhealthyThresholds) {
  const HealthParams p = params(5000, 1000, 2, 4);
  EXPECT_EQ(measureFailureWindow(p), 5000u * 4 + 1000u * 3);
  EXPECT_EQ(measureSuccessWindow(p, 300), 300u * 2 + 1000u * 1);
}

TEST(HealthWindows, FailureWindowAfterFirstVerdictFromInitializing) {
  // From initializing the window is counted the same way, from the first probe.
  const HealthParams p = params(5000, 2000, 3, 3);
  HealthTracker tr(p, true, 1, 0);
  Sim sim(tr, 0);
  auto t = sim.runUntilTransition(timeoutFailure());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->from, HealthState::kInitializing);
  EXPECT_EQ(t->to, HealthState::kUnhealthy);
  EXPECT_EQ(t->at_ms, 19000u);
}

// ---- start-up jitter ----

TEST(HealthJitter, ShiftsFirstProbeNotWindows) {
  const HealthParams p = params(5000, 2000, 3, 3);
  size_t shifted = 0;
  for (uint64_t key = 1; key <= 20; ++key) {
    const uint64_t delay = firstProbeDelayMs(p, key, true);
    ASSERT_LT(delay, p.interval_ms);
    if (delay != 0) ++shifted;

    HealthTracker tr(p, true, 1, 0);
    Sim sim(tr, delay);
    auto down = sim.runUntilTransition(timeoutFailure());
    ASSERT_TRUE(down);
    EXPECT_EQ(sim.probeStarts().front(), delay);
    EXPECT_EQ(down->at_ms, delay + failureWindowMs(p));
    EXPECT_EQ(down->at_ms - sim.probeStarts().front(), 19000u);

    const uint64_t first_ok = sim.nextProbeMs();
    auto up = sim.runUntilTransition(success(1000));
    ASSERT_TRUE(up);
    EXPECT_EQ(up->at_ms - first_ok, 7000u);

    EXPECT_EQ(measureFailureWindow(p, delay), 19000u);
  }
  EXPECT_GT(shifted, 15u);  // jitter actually moves most first probes
}

TEST(HealthJitter, SpreadsKeysUniformly) {
  const HealthParams p = params(5000, 2000, 3, 3);
  constexpr size_t kKeys = 10000;
  std::vector<size_t> buckets(10, 0);
  for (uint64_t key = 0; key < kKeys; ++key) {
    const uint64_t d = firstProbeDelayMs(p, key, true);
    ASSERT_LT(d, p.interval_ms);
    ++buckets[d * 10 / p.interval_ms];
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    SCOPED_TRACE("tenth " + std::to_string(b));
    EXPECT_GE(buckets[b], kKeys * 5 / 100);
    EXPECT_LE(buckets[b], kKeys * 15 / 100);
  }
}

TEST(HealthJitter, DeterministicAndZeroWithout) {
  const HealthParams p = params(5000, 2000, 3, 3);
  for (uint64_t key : {0ull, 1ull, 42ull, 0xffffffffffffffffull}) {
    EXPECT_EQ(firstProbeDelayMs(p, key, true), firstProbeDelayMs(p, key, true));
    EXPECT_EQ(firstProbeDelayMs(p, key, false), 0u);
  }
  EXPECT_EQ(firstProbeDelayMs(params(5000, 0, 3, 3), 7, true), 0u);
}

// ---- state machine ----

TEST(HealthStates, Names) {
  EXPECT_STREQ(toString(HealthState::kInitializing), "initializing");
  EXPECT_STREQ(toString(HealthState::kHealthy), "healthy");
  EXPECT_STREQ(toString(HealthState::kUnhealthy), "unhealthy");
  EXPECT_STREQ(toString(HealthState::kUnused), "unused");
  EXPECT_STREQ(toString(HealthState::kDisabled), "disabled");
  EXPECT_STREQ(toString(HealthState::kDraining), "draining");
}

TEST(HealthStates, InitializingToHealthy) {
  HealthTracker tr(params(5000, 2000, 3, 3), true, 1, 100);
  EXPECT_EQ(tr.state(), HealthState::kInitializing);
  EXPECT_TRUE(tr.probed());
  EXPECT_EQ(tr.lastChangeMs(), 100u);
  Sim sim(tr, 100);
  EXPECT_FALSE(sim.step(success(1000)));
  EXPECT_FALSE(sim.step(success(1000)));
  EXPECT_EQ(tr.state(), HealthState::kInitializing);
  EXPECT_EQ(tr.consecutive(), 2u);
  auto t = sim.step(success(1000));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->from, HealthState::kInitializing);
  EXPECT_EQ(t->to, HealthState::kHealthy);
  EXPECT_EQ(t->reason, "3 consecutive successes");
  EXPECT_EQ(t->at_ms, 100u + 7000u);
  EXPECT_EQ(tr.state(), HealthState::kHealthy);
  EXPECT_EQ(tr.lastChangeMs(), 7100u);
  EXPECT_TRUE(tr.lastOk());
}

TEST(HealthStates, InitializingToUnhealthyUsesUnhealthyThreshold) {
  HealthTracker tr(params(5000, 2000, 5, 2), true, 1, 0);
  Sim sim(tr, 0);
  EXPECT_FALSE(sim.step(timeoutFailure()));
  auto t = sim.step(timeoutFailure());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->from, HealthState::kInitializing);
  EXPECT_EQ(t->to, HealthState::kUnhealthy);
  EXPECT_EQ(t->reason, "2 consecutive failures (connect_timeout)");
}

TEST(HealthStates, InitializingToHealthyUsesHealthyThreshold) {
  HealthTracker tr(params(5000, 2000, 2, 5), true, 1, 0);
  Sim sim(tr, 0);
  EXPECT_FALSE(sim.step(success(10)));
  auto t = sim.step(success(10));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->to, HealthState::kHealthy);
  EXPECT_EQ(t->reason, "2 consecutive successes");
}

TEST(HealthStates, ThresholdBoundary) {
  HealthTracker tr(params(5000, 2000, 3, 3), true, 1, 0);
  Sim sim(tr, 0);
  ASSERT_TRUE(sim.runUntilTransition(success(10)));
  ASSERT_EQ(tr.state(), HealthState::kHealthy);
  // N-1 failures: still healthy, still given new flows.
  EXPECT_FALSE(sim.step(timeoutFailure()));
  EXPECT_FALSE(sim.step(timeoutFailure()));
  EXPECT_EQ(tr.state(), HealthState::kHealthy);
  EXPECT_TRUE(receivesNewFlows(tr.state()));
  EXPECT_EQ(tr.consecutive(), 2u);
  EXPECT_FALSE(tr.lastOk());
  // Nth failure: unhealthy.
  auto t = sim.step(timeoutFailure());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->to, HealthState::kUnhealthy);
  EXPECT_EQ(t->reason, "3 consecutive failures (connect_timeout)");
  EXPECT_FALSE(receivesNewFlows(tr.state()));
}

TEST(HealthStates, MatchingResultsKeepCountingWithoutTransition) {
  HealthTracker tr(params(5000, 2000, 3, 3), true, 1, 0);
  Sim sim(tr, 0);
  ASSERT_TRUE(sim.runUntilTransition(success(10)));
  for (uint32_t i = 0; i < 5; ++i) EXPECT_FALSE(sim.step(success(10)));
  EXPECT_EQ(tr.consecutive(), 8u);
  EXPECT_EQ(tr.state(), HealthState::kHealthy);
  ASSERT_TRUE(sim.runUntilTransition(timeoutFailure()));
  for (uint32_t i = 0; i < 4; ++i) EXPECT_FALSE(sim.step(timeoutFailure()));
  EXPECT_EQ(tr.consecutive(), 7u);
  EXPECT_EQ(tr.state(), HealthState::kUnhealthy);
  EXPECT_EQ(sim.seen().size(), 2u);
}

TEST(HealthStates, UnhealthyBackToHealthyNeedsHealthyThreshold) {
  HealthTracker tr(params(5000, 2000, 4, 2), true, 1, 0);
  Sim sim(tr, 0);
  ASSERT_TRUE(sim.runUntilTransition(timeoutFailure()));
  ASSERT_EQ(tr.state(), HealthState::kUnhealthy);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(sim.step(success(10)));
  EXPECT_EQ(tr.state(), HealthState::kUnhealthy);
  auto t = sim.step(success(10));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->from, HealthState::kUnhealthy);
  EXPECT_EQ(t->to, HealthState::kHealthy);
  EXPECT_EQ(t->reason, "4 consecutive successes");
}

TEST(HealthStates, FlappingNeverTransitions) {
  for (HealthState start : {HealthState::kInitializing, HealthState::kHealthy,
                            HealthState::kUnhealthy}) {
    SCOPED_TRACE(toString(start));
    HealthTracker tr(params(5000, 2000, 2, 2), true, 1, 0);
    Sim sim(tr, 0);
    if (start == HealthState::kHealthy) {
      ASSERT_TRUE(sim.runUntilTransition(success(10)));
    }
    if (start == HealthState::kUnhealthy) {
      ASSERT_TRUE(sim.runUntilTransition(timeoutFailure()));
    }
    const size_t before = sim.seen().size();
    // Alternate, starting with the kind opposite to the running count's.
    bool next_ok = !tr.lastOk();
    for (int i = 0; i < 200; ++i, next_ok = !next_ok) {
      EXPECT_FALSE(sim.step(next_ok ? success(10) : timeoutFailure()));
      EXPECT_EQ(tr.consecutive(), 1u);
    }
    EXPECT_EQ(tr.state(), start);
    EXPECT_EQ(sim.seen().size(), before);
  }
}

TEST(HealthStates, CountResetsWhenKindChanges) {
  HealthTracker tr(params(5000, 2000, 3, 3), true, 1, 0);
  Sim sim(tr, 0);
  sim.step(success(10));
  sim.step(success(10));
  EXPECT_EQ(tr.consecutive(), 2u);
  sim.step(timeoutFailure());
  EXPECT_EQ(tr.consecutive(), 1u);
  EXPECT_FALSE(tr.lastOk());
  sim.step(success(10));
  sim.step(success(10));
  EXPECT_EQ(tr.state(), HealthState::kInitializing);
  EXPECT_TRUE(sim.step(success(10)));
  EXPECT_EQ(tr.state(), HealthState::kHealthy);
}

TEST(HealthStates, WeightZeroIsUnusedAndNotProbed) {
  HealthTracker tr(params(5000, 2000, 3, 3), true, 0, 0);
  EXPECT_EQ(tr.state(), HealthState::kUnused);
  EXPECT_FALSE(tr.probed());
  EXPECT_FALSE(receivesNewFlows(tr.state()));
  ProbeOutcome ok{true, "ok", 10};
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(tr.onResult(ok, 1000u * i));
  EXPECT_EQ(tr.state(), HealthState::kUnused);
  EXPECT_EQ(tr.consecutive(), 0u);
  EXPECT_TRUE(tr.history().empty());

  // Weight 0 wins over a disabled health check: still no flows.
  HealthTracker off(params(5000, 2000, 3, 3), false, 0, 0);
  EXPECT_EQ(off.state(), HealthState::kUnused);
}

TEST(HealthStates, DisabledIsTreatedAsHealthyAndNotProbed) {
  HealthTracker tr(params(5000, 2000, 3, 3), false, 1, 0);
  EXPECT_EQ(tr.state(), HealthState::kDisabled);
  EXPECT_FALSE(tr.probed());
  EXPECT_TRUE(receivesNewFlows(tr.state()));
  ProbeOutcome fail{false, "connect_timeout", 5000};
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(tr.onResult(fail, 1000u * i));
  EXPECT_EQ(tr.state(), HealthState::kDisabled);
  EXPECT_TRUE(tr.history().empty());
}

TEST(HealthStates, ReconfigureToUnusedAndBack) {
  const HealthParams p = params(5000, 2000, 3, 3);
  HealthTracker tr(p, true, 1, 0);
  Sim sim(tr, 0);
  ASSERT_TRUE(sim.runUntilTransition(success(10)));
  sim.step(success(10));
  ASSERT_EQ(tr.state(), HealthState::kHealthy);

  auto t = tr.reconfigure(p, true, 0, 50000);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->from, HealthState::kHealthy);
  EXPECT_EQ(t->to, HealthState::kUnused);
  EXPECT_EQ(tr.lastChangeMs(), 50000u);
  EXPECT_FALSE(tr.probed());
  EXPECT_FALSE(tr.onResult({true, "ok", 10}, 51000));

  t = tr.reconfigure(p, true, 5, 60000);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->from, HealthState::kUnused);
  EXPECT_EQ(t->to, HealthState::kInitializing);
  EXPECT_EQ(tr.consecutive(), 0u);
  EXPECT_TRUE(tr.probed());
  // Counting starts over: a full threshold is needed again.
  Sim again(tr, 60000);
  EXPECT_FALSE(again.step(success(10)));
  EXPECT_FALSE(again.step(success(10)));
  EXPECT_TRUE(again.step(success(10)));
}

TEST(HealthStates, ReconfigureToDisabledAndBack) {
  const HealthParams p = params(5000, 2000, 3, 3);
  HealthTracker tr(p, true, 1, 0);
  Sim sim(tr, 0);
  ASSERT_TRUE(sim.runUntilTransition(timeoutFailure()));
  ASSERT_EQ(tr.state(), HealthState::kUnhealthy);

  auto t = tr.reconfigure(p, false, 1, 40000);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->to, HealthState::kDisabled);
  EXPECT_TRUE(receivesNewFlows(tr.state()));
  // Disabled -> unused when the weight drops to 0.
  t = tr.reconfigure(p, false, 0, 41000);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->from, HealthState::kDisabled);
  EXPECT_EQ(t->to, HealthState::kUnused);
  t = tr.reconfigure(p, false, 1, 42000);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->to, HealthState::kDisabled);

  t = tr.reconfigure(p, true, 1, 43000);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->from, HealthState::kDisabled);
  EXPECT_EQ(t->to, HealthState::kInitializing);
  EXPECT_EQ(tr.consecutive(), 0u);
  // Same config again: nothing changes.
  EXPECT_FALSE(tr.reconfigure(p, true, 1, 44000));
  EXPECT_EQ(tr.state(), HealthState::kInitializing);
}

TEST(HealthStates, ReconfigureParamsOnlyKeepsStateAndCounts) {
  HealthTracker tr(params(5000, 2000, 3, 3), true, 1, 0);
  Sim sim(tr, 0);
  ASSERT_TRUE(sim.runUntilTransition(success(10)));
  sim.step(timeoutFailure());
  sim.step(timeoutFailure());
  ASSERT_EQ(tr.consecutive(), 2u);
  const uint64_t changed = tr.lastChangeMs();

  const HealthParams q = params(3000, 1000, 4, 4);
  EXPECT_FALSE(tr.reconfigure(q, true, 7, 100000));
  EXPECT_EQ(tr.state(), HealthState::kHealthy);
  EXPECT_EQ(tr.consecutive(), 2u);
  EXPECT_FALSE(tr.lastOk());
  EXPECT_EQ(tr.lastChangeMs(), changed);
  EXPECT_EQ(tr.params().timeout_ms, 3000u);
  EXPECT_EQ(tr.params().unhealthy_threshold, 4u);
  // The new threshold applies to the running count: 2 more failures needed.
  EXPECT_FALSE(sim.step(timeoutFailure()));
  auto t = sim.step(timeoutFailure());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->reason, "4 consecutive failures (connect_timeout)");
}

TEST(HealthHistory, RecordsResultsAndTransitionsBounded) {
  HealthTracker tr(params(5000, 2000, 3, 3), true, 1, 0);
  Sim sim(tr, 0);
  sim.step(success(1000));
  sim.step(success(1000));
  sim.step(success(1000));  // -> healthy
  const auto& h = tr.history();
  ASSERT_EQ(h.size(), 4u);
  EXPECT_FALSE(h[0].is_transition);
  EXPECT_TRUE(h[0].ok);
  EXPECT_EQ(h[0].reason, "ok");
  EXPECT_EQ(h[0].response_ms, 1000u);
  EXPECT_EQ(h[0].at_ms, 1000u);
  EXPECT_FALSE(h[2].is_transition);
  EXPECT_TRUE(h[3].is_transition);
  EXPECT_EQ(h[3].from, HealthState::kInitializing);
  EXPECT_EQ(h[3].to, HealthState::kHealthy);
  EXPECT_EQ(h[3].at_ms, 7000u);
  EXPECT_EQ(h[3].reason, "3 consecutive successes");

  // Many more results: bounded, newest kept, in time order.
  for (int i = 0; i < 100; ++i) sim.step(i % 10 < 5 ? timeoutFailure() : success(10));
  ASSERT_EQ(h.size(), HealthTracker::kHistory);
  for (size_t i = 1; i < h.size(); ++i) EXPECT_LE(h[i - 1].at_ms, h[i].at_ms);
  size_t transitions = 0;
  for (const auto& e : h) transitions += e.is_transition ? 1 : 0;
  EXPECT_GT(transitions, 0u);  // 5-long runs cross threshold 3 each time
  EXPECT_FALSE(h.back().is_transition);
  EXPECT_TRUE(h.back().ok);

  // Transitions from reconfigure are recorded too.
  ASSERT_TRUE(tr.reconfigure(tr.params(), true, 0, sim.nextProbeMs()));
  EXPECT_EQ(h.size(), HealthTracker::kHistory);
  EXPECT_TRUE(h.back().is_transition);
  EXPECT_EQ(h.back().to, HealthState::kUnused);
  EXPECT_EQ(h.back().reason, "weight 0");
}

// Issue 14 item 15: provisional service of a starting group's appliances.
TEST(Provisional, ServesUntilTheFirstFailedCheckThenWaitsForTheThreshold) {
  HealthParams p;  // thresholds 3
  HealthTracker tr(p, true, 100, 0);
  EXPECT_FALSE(tr.receivesNewFlows()) << "initializing alone gets no new flows";
  tr.setProvisional(true);
  EXPECT_TRUE(tr.provisional());
  EXPECT_TRUE(tr.receivesNewFlows());
  EXPECT_TRUE(receivesNewFlows(ApplianceHealth(tr.state(), tr.provisional())));
  tr.onResult({true, "ok", 3}, 10);
  EXPECT_EQ(tr.state(), HealthState::kInitializing);
  EXPECT_TRUE(tr.receivesNewFlows()) << "a passed check keeps it";
  tr.onResult({false, "connect_timeout", 5000}, 7000);
  EXPECT_EQ(tr.state(), HealthState::kInitializing);
  EXPECT_FALSE(tr.provisional());
  EXPECT_FALSE(tr.receivesNewFlows()) << "the first failed check ends it";
  tr.onResult({true, "ok", 3}, 9000);
  tr.onResult({true, "ok", 3}, 11000);
  EXPECT_FALSE(tr.receivesNewFlows()) << "back only at the healthy threshold";
  ASSERT_TRUE(tr.onResult({true, "ok", 3}, 13000));
  EXPECT_EQ(tr.state(), HealthState::kHealthy);
  EXPECT_TRUE(tr.receivesNewFlows());
}

TEST(Provisional, OnlyWhileInitializingAndEndsWithAnyTransition) {
  HealthParams p;
  HealthTracker healthy(p, true, 100, 0);
  for (uint64_t t = 0; t < 3; ++t) healthy.onResult({true, "ok", 1}, t * 2000);
  ASSERT_EQ(healthy.state(), HealthState::kHealthy);
  healthy.setProvisional(true);
  EXPECT_FALSE(healthy.provisional()) << "ignored outside initializing";

  HealthTracker tr(p, true, 100, 0);
  tr.setProvisional(true);
  for (uint64_t t = 0; t < 3; ++t) tr.onResult({true, "ok", 1}, t * 2000);
  EXPECT_EQ(tr.state(), HealthState::kHealthy);
  EXPECT_FALSE(tr.provisional());
  // Weight 0 and back: initializing again, not provisional unless the caller says so.
  tr.reconfigure(p, true, 0, 10000);
  tr.reconfigure(p, true, 100, 11000);
  EXPECT_EQ(tr.state(), HealthState::kInitializing);
  EXPECT_FALSE(tr.receivesNewFlows());
  // Unused and disabled never are.
  HealthTracker unused(p, true, 0, 0);
  unused.setProvisional(true);
  EXPECT_FALSE(unused.receivesNewFlows());
}

// Issue 14 item 14: the log line of a transition states the window that
// applies to it, never a success window computed from a failed check.
TEST(TransitionWindowText, MatchesTheTransition) {
  HealthParams p;  // timeout 5 s, interval 2 s, thresholds 3
  std::string down = transitionWindowText(p, HealthState::kUnhealthy, 5000);
  EXPECT_EQ(down, "failure window 19000 ms after the first failed check");
  EXPECT_EQ(down.find("success"), std::string::npos);
  EXPECT_EQ(transitionWindowText(p, HealthState::kHealthy, 1000),
            "success window 7000 ms after the first passed check at 1000 ms per response");
  EXPECT_EQ(transitionWindowText(p, HealthState::kUnused, 0), "");
}

}  // namespace
}  // namespace gwlb

namespace gwlb {
namespace {

// What gwlbd exports per appliance (gwlb_server_probe_duration_seconds,
// gwlb_server_consecutive_failures): every result counts in the histogram at
// its response time, in the first bucket whose bound it does not exceed.
TEST(HealthMonitoring, LatencyHistogramAndConsecutiveFailures) {
  HealthParams p;
  HealthTracker t(p, true, 1, 0);
  EXPECT_EQ(t.consecutiveFailures(), 0u);
  EXPECT_EQ(t.latency().count, 0u);
  ProbeOutcome ok{true, "ok", 0, 400};           // 0.4 ms: first bucket (<= 1 ms)
  ProbeOutcome slow{true, "ok", 30, 30000};      // 30 ms: <= 100 ms
  ProbeOutcome edge{true, "ok", 5, 5000};        // exactly 5 ms: <= 5 ms
  ProbeOutcome fail{false, "connect_timeout", 5000, 0};  // ms only: 5 s
  t.onResult(ok, 10);
  t.onResult(slow, 20);
  t.onResult(edge, 30);
  EXPECT_EQ(t.consecutiveFailures(), 0u);
  t.onResult(fail, 5030);
  t.onResult(fail, 10030);
  EXPECT_EQ(t.consecutiveFailures(), 2u);
  const ProbeLatencyHistogram& h = t.latency();
  EXPECT_EQ(h.count, 5u);
  EXPECT_EQ(h.sum_us, 400u + 30000 + 5000 + 2 * 5000000);
  EXPECT_EQ(h.cumulative(0), 1u);  // <= 1 ms
  EXPECT_EQ(h.cumulative(1), 2u);  // <= 5 ms
  EXPECT_EQ(h.cumulative(2), 2u);  // <= 25 ms
  EXPECT_EQ(h.cumulative(3), 3u);  // <= 100 ms
  EXPECT_EQ(h.cumulative(7), 3u);  // <= 2.5 s
  EXPECT_EQ(h.cumulative(8), 5u);  // <= 5 s
  EXPECT_EQ(h.cumulative(ProbeLatencyHistogram::kBuckets), 5u);  // +Inf
  t.onResult(ok, 10040);
  EXPECT_EQ(t.consecutiveFailures(), 0u);
  // A result past the last bound lands in +Inf only.
  t.onResult(ProbeOutcome{false, "x", 0, 20000000}, 30000);
  EXPECT_EQ(t.latency().cumulative(ProbeLatencyHistogram::kBuckets - 1), 6u);
  EXPECT_EQ(t.latency().cumulative(ProbeLatencyHistogram::kBuckets), 7u);
  // Reconfiguring (a reload) keeps the history of results.
  t.reconfigure(p, true, 2, 30001);
  EXPECT_EQ(t.latency().count, 7u);
}

}  // namespace
}  // namespace gwlb
