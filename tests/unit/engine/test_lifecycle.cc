// ApplianceLifecycle and the snapshot builder's view of leaving appliances: the
// removal rows of docs/product-rules.md section 2 decided on a simulated clock, operator
// drains, and what the builder hands the workers (phase, move, Maglev share);
// how a group starts (provisional service of initializing appliances).
#include <gtest/gtest.h>

#include "tests/unit/small_config.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "control/engine/lifecycle.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;

IpAddr ip(const char* s) { return *IpAddr::parse(s); }

Config config(FailoverMode mode, bool draining, uint32_t timeout_s = 30) {
  Config c = testing::smallConfig();
  ApplianceGroupConfig& g = c.server_groups[0];
  g.failover_mode = mode;
  g.connection_draining.enabled = draining;
  g.connection_draining.timeout_s = timeout_s;
  return c;
}

Config without(Config c, const char* a) {
  auto& s = c.server_groups[0].appliances;
  s.erase(std::remove_if(s.begin(), s.end(), [&](const ApplianceConfig& x) { return x.address == ip(a); }),
          s.end());
  return c;
}

uint32_t v4(const char* a) { return ip(a).v4HostOrder(); }

// Flow counts by server id for the registry of `reg`.
struct Counts {
  ApplianceRegistry& reg;
  std::vector<uint32_t> by_id;
  Counts& set(const char* a, uint32_t n) {
    uint16_t id = reg.idFor(v4(a));
    if (by_id.size() <= id) by_id.resize(size_t(id) + 1, 0);
    by_id[id] = n;
    return *this;
  }
};

TEST(Lifecycle, RemovalWithDrainingWaitsForTheTimeoutThenFollowsTheMode) {
  for (FailoverMode mode : {FailoverMode::kRebalance, FailoverMode::kNoRebalance}) {
    SCOPED_TRACE(toString(mode));
    ApplianceLifecycle life;
    ApplianceRegistry reg;
    Config a = config(mode, true, 30);
    buildSnapshot(a, reg, {}, 1);
    Config b = without(a, "10.0.0.12");
    life.applyConfig(a, b, 1000 * kSec, "removed by reload");
    const auto* e = life.find(v4("10.0.0.12"));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->phase, dp::AppliancePhase::kDraining);
    EXPECT_EQ(e->move_reason, dp::MoveReason::kNone);
    EXPECT_EQ(e->deadline_ns, 1030 * kSec);
    EXPECT_EQ(life.stats().drains_started, 1u);
    EXPECT_EQ(*life.nextDeadline(), 1030 * kSec);

    Counts c{reg, {}};
    c.set("10.0.0.12", 7);
    EXPECT_FALSE(life.tick(1029 * kSec, &c.by_id, reg.addresses())) << "1 s before the timeout";
    EXPECT_EQ(life.find(v4("10.0.0.12"))->flows, 7u);
    EXPECT_TRUE(life.tick(1030 * kSec, &c.by_id, reg.addresses())) << "at the timeout";
    e = life.find(v4("10.0.0.12"));
    ASSERT_NE(e, nullptr) << "flows are still on it";
    EXPECT_EQ(e->phase, dp::AppliancePhase::kDrained);
    EXPECT_EQ(e->move_reason, mode == FailoverMode::kRebalance ? dp::MoveReason::kDrainTimeout
                                                        : dp::MoveReason::kNone);
    EXPECT_EQ(life.stats().drains_timed_out, 1u);
    EXPECT_EQ(life.stats().flows_drain_timed_out, 7u);
    EXPECT_FALSE(life.nextDeadline());

    // The snapshot: routable for its flows, no Maglev share.
    auto s = buildSnapshot(b, reg, {}, 2, {}, &life);
    const dp::ApplianceSlot& sv = s->appliances[reg.find(v4("10.0.0.12"))];
    EXPECT_TRUE(sv.routable);
    EXPECT_FALSE(sv.in_use);
    EXPECT_EQ(sv.phase, dp::AppliancePhase::kDrained);
    EXPECT_EQ(sv.move_reason, e->move_reason);
    EXPECT_TRUE(sv.mac_known);
    EXPECT_EQ(std::count(s->groups[0].maglev.begin(), s->groups[0].maglev.end(), reg.find(v4("10.0.0.12"))), 0);
    EXPECT_NE(s->applianceByIp(v4("10.0.0.12")), dp::kNoAppliance) << "its replies are accepted";

    // Its last flow ends: forgotten, and gone from the snapshot.
    c.set("10.0.0.12", 0);
    EXPECT_TRUE(life.tick(1040 * kSec, &c.by_id, reg.addresses()));
    EXPECT_EQ(life.find(v4("10.0.0.12")), nullptr);
    EXPECT_EQ(life.stats().forgotten, 1u);
    s = buildSnapshot(b, reg, {}, 3, {}, &life);
    EXPECT_EQ(s->appliances[reg.find(v4("10.0.0.12"))].phase, dp::AppliancePhase::kGone);
    EXPECT_FALSE(s->appliances[reg.find(v4("10.0.0.12"))].routable);
    EXPECT_EQ(s->applianceByIp(v4("10.0.0.12")), dp::kNoAppliance);
  }
}

TEST(Lifecycle, DrainEndsEarlyWhenItsLastFlowEnds) {
  ApplianceLifecycle life;
  ApplianceRegistry reg;
  Config a = config(FailoverMode::kRebalance, true, 300);
  buildSnapshot(a, reg, {}, 1);
  Config b = without(a, "10.0.0.11");
  life.applyConfig(a, b, 0, "removed");
  life.flowsExpired({reg.find(v4("10.0.0.11")), reg.find(v4("10.0.0.11")), reg.find(v4("10.0.0.13"))},
                    reg.addresses());
  EXPECT_EQ(life.stats().flows_drained, 2u) << "only flows that ended on the draining appliance";
  Counts c{reg, {}};
  EXPECT_FALSE(life.tick(5 * kSec, nullptr, reg.addresses())) << "no count yet: keeps draining";
  EXPECT_TRUE(life.tick(5 * kSec, &c.by_id, reg.addresses()));
  EXPECT_EQ(life.find(v4("10.0.0.11")), nullptr);
  EXPECT_EQ(life.stats().drains_emptied, 1u);
  EXPECT_EQ(life.stats().drains_timed_out, 0u);
}

TEST(Lifecycle, RemovalWithoutDrainingActsAtOnce) {
  for (FailoverMode mode : {FailoverMode::kRebalance, FailoverMode::kNoRebalance}) {
    ApplianceLifecycle life;
    Config a = config(mode, false);
    life.applyConfig(a, without(a, "10.0.0.13"), 0, "removed");
    const auto* e = life.find(v4("10.0.0.13"));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->phase, dp::AppliancePhase::kDrained);
    EXPECT_EQ(e->move_reason, mode == FailoverMode::kRebalance ? dp::MoveReason::kRemoved
                                                        : dp::MoveReason::kNone);
    EXPECT_EQ(life.stats().drains_started, 0u);
    EXPECT_FALSE(life.nextDeadline());
  }
}

TEST(Lifecycle, AddedBackIsActiveAgain) {
  ApplianceLifecycle life;
  Config a = config(FailoverMode::kRebalance, true);
  Config b = without(a, "10.0.0.13");
  life.applyConfig(a, b, 0, "removed");
  ASSERT_NE(life.find(v4("10.0.0.13")), nullptr);
  life.applyConfig(b, a, kSec, "removed");
  EXPECT_EQ(life.find(v4("10.0.0.13")), nullptr);
}

TEST(Lifecycle, OperatorDrainOfAConfiguredAppliance) {
  ApplianceLifecycle life;
  ApplianceRegistry reg;
  Config a = config(FailoverMode::kNoRebalance, false, 300);
  EXPECT_EQ(life.drain(a, v4("10.9.9.9"), std::nullopt, 0), "not a configured appliance");
  EXPECT_EQ(life.drain(a, v4("10.0.0.11"), 10u, 0), "");
  EXPECT_EQ(life.drain(a, v4("10.0.0.11"), 10u, 0), "already draining");
  const auto* e = life.find(v4("10.0.0.11"));
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->removed);
  EXPECT_EQ(e->deadline_ns, 10 * kSec) << "the given timeout, not the group's";

  // No new flows while drained; its flows stay (routable, no move).
  auto s = buildSnapshot(a, reg, {}, 1, {}, &life);
  uint16_t id = reg.find(v4("10.0.0.11"));
  EXPECT_EQ(std::count(s->groups[0].maglev.begin(), s->groups[0].maglev.end(), id), 0);
  EXPECT_EQ(s->appliances[id].phase, dp::AppliancePhase::kDraining);
  EXPECT_TRUE(s->appliances[id].routable);
  EXPECT_TRUE(s->appliances[id].in_use);

  Counts c{reg, {}};
  c.set("10.0.0.11", 3);
  EXPECT_TRUE(life.tick(10 * kSec, &c.by_id, reg.addresses()));
  EXPECT_EQ(life.find(v4("10.0.0.11"))->phase, dp::AppliancePhase::kDrained);
  EXPECT_EQ(life.drain(a, v4("10.0.0.11"), 10u, 0), "already drained");
  c.set("10.0.0.11", 0);
  life.tick(11 * kSec, &c.by_id, reg.addresses());
  EXPECT_NE(life.find(v4("10.0.0.11")), nullptr) << "still configured: stays drained";

  EXPECT_EQ(life.undrain(v4("10.0.0.11")), "");
  EXPECT_EQ(life.undrain(v4("10.0.0.11")), "not draining or drained");
  s = buildSnapshot(a, reg, {}, 2, {}, &life);
  EXPECT_GT(std::count(s->groups[0].maglev.begin(), s->groups[0].maglev.end(), id), 0);
}

TEST(Lifecycle, OperatorDrainThenRemovalKeepsTheTimer) {
  ApplianceLifecycle life;
  Config a = config(FailoverMode::kRebalance, false, 300);
  ASSERT_EQ(life.drain(a, v4("10.0.0.12"), 20u, 0), "");
  life.applyConfig(a, without(a, "10.0.0.12"), 5 * kSec, "removed by reload");
  const auto* e = life.find(v4("10.0.0.12"));
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->removed);
  EXPECT_EQ(e->deadline_ns, 20 * kSec);
  EXPECT_EQ(life.undrain(v4("10.0.0.12")), "removed from the config; add it again instead");
}

TEST(Builder, UnhealthyShedsFlowsOnlyInRebalanceModeAndOnlyWithSomewhereToGo) {
  ApplianceRegistry reg;
  HealthMap h = {{v4("10.0.0.11"), HealthState::kUnhealthy},
                 {v4("10.0.0.12"), HealthState::kHealthy},
                 {v4("10.0.0.13"), HealthState::kInitializing}};
  auto s = buildSnapshot(config(FailoverMode::kRebalance, false), reg, {}, 1, h);
  EXPECT_EQ(s->appliances[reg.find(v4("10.0.0.11"))].move_reason, dp::MoveReason::kUnhealthy);
  EXPECT_EQ(s->appliances[reg.find(v4("10.0.0.12"))].move_reason, dp::MoveReason::kNone);
  EXPECT_EQ(s->appliances[reg.find(v4("10.0.0.13"))].move_reason, dp::MoveReason::kNone)
      << "initializing is not failed";
  for (uint16_t id : s->groups[0].maglev) EXPECT_EQ(id, reg.find(v4("10.0.0.12")));

  s = buildSnapshot(config(FailoverMode::kNoRebalance, false), reg, {}, 2, h);
  EXPECT_EQ(s->appliances[reg.find(v4("10.0.0.11"))].move_reason, dp::MoveReason::kNone);

  HealthMap all = {{v4("10.0.0.11"), HealthState::kUnhealthy},
                   {v4("10.0.0.12"), HealthState::kUnhealthy},
                   {v4("10.0.0.13"), HealthState::kUnhealthy}};
  s = buildSnapshot(config(FailoverMode::kRebalance, false), reg, {}, 3, all);
  for (auto& sv : s->appliances) EXPECT_EQ(sv.move_reason, dp::MoveReason::kNone) << "fail_open: nowhere better";
}

TEST(Builder, DrainedAppliancesStayOutOfFailOpen) {
  ApplianceLifecycle life;
  ApplianceRegistry reg;
  Config a = config(FailoverMode::kRebalance, false);
  ASSERT_EQ(life.drain(a, v4("10.0.0.11"), 60u, 0), "");
  HealthMap all = {{v4("10.0.0.11"), HealthState::kUnhealthy},
                   {v4("10.0.0.12"), HealthState::kUnhealthy},
                   {v4("10.0.0.13"), HealthState::kUnhealthy}};
  auto s = buildSnapshot(a, reg, {}, 1, all, &life);
  uint16_t drained = reg.find(v4("10.0.0.11"));
  EXPECT_EQ(std::count(s->groups[0].maglev.begin(), s->groups[0].maglev.end(), drained), 0);
  EXPECT_GT(std::count(s->groups[0].maglev.begin(), s->groups[0].maglev.end(), reg.find(v4("10.0.0.12"))), 0);
}

// Issue 14 item 13: an operator drain of the last appliance in service
// (forced) must not end with its flows moved to an unhealthy appliance when
// the drain times out: they stay until an appliance is in service again.
TEST(Builder, DrainTimeoutNeverMovesFlowsToAnApplianceNotInService) {
  ApplianceLifecycle life;
  ApplianceRegistry reg;
  Config a = config(FailoverMode::kRebalance, true, 30);
  HealthMap h = {{v4("10.0.0.11"), HealthState::kHealthy},
                 {v4("10.0.0.12"), HealthState::kUnhealthy},
                 {v4("10.0.0.13"), HealthState::kUnhealthy}};
  buildSnapshot(a, reg, {}, 1, h, &life);
  ASSERT_EQ(life.drain(a, v4("10.0.0.11"), 10u, 0), "");
  Counts c{reg, {}};
  c.set("10.0.0.11", 5);
  ASSERT_TRUE(life.tick(10 * kSec, &c.by_id, reg.addresses())) << "the drain times out";
  ASSERT_EQ(life.find(v4("10.0.0.11"))->move_reason, dp::MoveReason::kDrainTimeout);
  auto s = buildSnapshot(a, reg, {}, 2, h, &life);
  const dp::ApplianceSlot& v = s->appliances[reg.find(v4("10.0.0.11"))];
  EXPECT_EQ(v.phase, dp::AppliancePhase::kDrained);
  EXPECT_EQ(v.move_reason, dp::MoveReason::kNone) << "no appliance in service: the flows stay";
  EXPECT_TRUE(v.routable);
  // Once an appliance is in service again, the flows move (to it).
  h[v4("10.0.0.12")] = HealthState::kHealthy;
  s = buildSnapshot(a, reg, {}, 3, h, &life);
  EXPECT_EQ(s->appliances[reg.find(v4("10.0.0.11"))].move_reason, dp::MoveReason::kDrainTimeout);
  for (uint16_t id : s->groups[0].maglev) EXPECT_EQ(id, reg.find(v4("10.0.0.12")));
}

// The same for a removal without draining (rebalance moves at once) and for
// the last appliance in service set to weight 0 while the others fail.
TEST(Builder, RemovalNeverMovesFlowsToAnApplianceNotInService) {
  ApplianceLifecycle life;
  ApplianceRegistry reg;
  Config a = config(FailoverMode::kRebalance, false);
  HealthMap h = {{v4("10.0.0.11"), HealthState::kHealthy},
                 {v4("10.0.0.12"), HealthState::kUnhealthy},
                 {v4("10.0.0.13"), HealthState::kInitializing}};
  buildSnapshot(a, reg, {}, 1, h, &life);
  Config b = without(a, "10.0.0.11");
  life.applyConfig(a, b, 0, "removed by server.remove");
  ASSERT_EQ(life.find(v4("10.0.0.11"))->move_reason, dp::MoveReason::kRemoved);
  auto s = buildSnapshot(b, reg, {}, 2, h, &life);
  EXPECT_EQ(s->appliances[reg.find(v4("10.0.0.11"))].move_reason, dp::MoveReason::kNone);
  EXPECT_EQ(s->appliances[reg.find(v4("10.0.0.12"))].move_reason, dp::MoveReason::kNone)
      << "unhealthy, but nowhere in service to go";
}

// Issue 14 item 15, on a simulated clock: three appliances start together
// (gateway start) with jittered first probes; .11 answers in 5 ms, .12 in
// 900 ms, .13 never. Every initializing appliance serves until its first
// failed check, so .13 leaves after its first probe, and .11 passing first
// never takes every new flow while .12 is still being checked.
TEST(StartUp, InitializingAppliancesServeUntilTheirFirstFailedCheck) {
  Config a = config(FailoverMode::kNoRebalance, false);
  a.server_groups[0].health_check.configured = true;
  HealthParams p;
  p.interval_ms = 1000;
  p.timeout_ms = 2000;
  p.healthy_threshold = 3;
  p.unhealthy_threshold = 3;
  struct App {
    const char* addr;
    bool answers;
    uint64_t response_ms;
    HealthTracker t;
    uint64_t next_ms;
  };
  std::vector<App> apps;
  for (auto [addr, answers, resp] : {std::tuple{"10.0.0.11", true, uint64_t(5)},
                                     std::tuple{"10.0.0.12", true, uint64_t(900)},
                                     std::tuple{"10.0.0.13", false, uint64_t(2000)}}) {
    HealthTracker t(p, true, 100, 0);
    t.setProvisional(true);  // what HealthChecker::reconcile does for a starting group
    apps.push_back({addr, answers, resp, t, firstProbeDelayMs(p, v4(addr), true)});
  }
  ApplianceRegistry reg;
  auto inTable = [&](uint64_t gen) {
    HealthMap h;
    for (App& x : apps) h[v4(x.addr)] = ApplianceHealth(x.t.state(), x.t.provisional());
    auto s = buildSnapshot(a, reg, {}, gen, h);
    std::set<std::string> in;
    for (uint16_t id : s->groups[0].maglev) in.insert(IpAddr::v4(s->appliances[id].ip).str());
    return in;
  };
  EXPECT_EQ(inTable(1), (std::set<std::string>{"10.0.0.11", "10.0.0.12", "10.0.0.13"}))
      << "before any check, every appliance takes new flows";
  bool saw_11_healthy_12_initializing = false;
  for (uint64_t now = 0, gen = 2; now < 20000; now += 10, ++gen) {
    bool changed = false;
    for (App& x : apps) {
      if (now < x.next_ms + x.response_ms) continue;  // probe started at next_ms, result at +response
      ProbeOutcome o{x.answers, x.answers ? "ok" : "connect_timeout", x.response_ms};
      bool before = x.t.receivesNewFlows();
      changed |= x.t.onResult(o, now).has_value() || before != x.t.receivesNewFlows();
      x.next_ms = now + p.interval_ms;
    }
    if (!changed) continue;
    std::set<std::string> in = inTable(gen);
    SCOPED_TRACE("t=" + std::to_string(now) + " ms");
    EXPECT_TRUE(in.count("10.0.0.11") && in.count("10.0.0.12")) << "both answering appliances serve";
    const bool failed_once = apps[2].t.consecutive() >= 1;
    EXPECT_EQ(in.count("10.0.0.13"), failed_once ? 0u : 1u)
        << (failed_once ? "out after its first failed check" : "serves until its first check");
    if (apps[0].t.state() == HealthState::kHealthy && apps[1].t.state() == HealthState::kInitializing)
      saw_11_healthy_12_initializing = true;
  }
  EXPECT_TRUE(saw_11_healthy_12_initializing) << "the scenario must pass through that window";
  EXPECT_EQ(apps[0].t.state(), HealthState::kHealthy);
  EXPECT_EQ(apps[1].t.state(), HealthState::kHealthy);
  EXPECT_EQ(apps[2].t.state(), HealthState::kUnhealthy);
}

// An appliance added to a group that has verdicts waits for its own checks
// (AWS "initial"); in a group with none (all initializing or disabled), it
// starts in provisional service like the others.
TEST(StartUp, ProvisionalOnlyWhileTheGroupHasNoVerdict) {
  Config a = config(FailoverMode::kNoRebalance, false);
  ApplianceRegistry reg;
  HealthMap h = {{v4("10.0.0.11"), HealthState::kHealthy},
                 {v4("10.0.0.12"), ApplianceHealth(HealthState::kInitializing, false)},
                 {v4("10.0.0.13"), ApplianceHealth(HealthState::kInitializing, true)}};
  auto s = buildSnapshot(a, reg, {}, 1, h);
  std::set<uint16_t> in(s->groups[0].maglev.begin(), s->groups[0].maglev.end());
  EXPECT_TRUE(in.count(reg.find(v4("10.0.0.11"))));
  EXPECT_FALSE(in.count(reg.find(v4("10.0.0.12")))) << "initializing, not provisional: no new flows";
  EXPECT_TRUE(in.count(reg.find(v4("10.0.0.13")))) << "provisional: serves";
}

}  // namespace
}  // namespace gwlb::ctl
