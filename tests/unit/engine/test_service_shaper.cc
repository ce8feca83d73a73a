// Flap dampening and slow start on a fake clock (control/engine/flap_dampener.h,
// control/engine/service_shaper.h): the penalty's decay, when a hold-down
// starts and ends, the max hold, the slow-start steps and the Maglev share
// they give an appliance coming back into service.
#include <gtest/gtest.h>

#include "tests/unit/small_config.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "control/engine/flap_dampener.h"
#include "control/engine/region_failover.h"
#include "control/engine/service_shaper.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;
uint32_t v4(const char* a) { return IpAddr::parse(a)->v4HostOrder(); }

DampeningParams params() {
  DampeningParams p;  // BGP-like: 1000 per change, suppress 3000, reuse 750
  p.half_life_ns = 60 * kSec;
  p.max_hold_ns = 600 * kSec;
  return p;
}

TEST(FlapDampener, PenaltyHalvesEveryHalfLife) {
  FlapDampener d;
  const DampeningParams p = params();
  EXPECT_FALSE(d.change(1, p, 0));
  EXPECT_DOUBLE_EQ(d.penalty(1, p, 0), 1000);
  EXPECT_NEAR(d.penalty(1, p, 60 * kSec), 500, 1e-9);
  EXPECT_NEAR(d.penalty(1, p, 120 * kSec), 250, 1e-9);
  EXPECT_FALSE(d.held(1, 0));
}

TEST(FlapDampener, FourQuickChangesHoldDownUntilThePenaltyDecaysToReuse) {
  FlapDampener d;
  const DampeningParams p = params();
  // Three changes 5 s apart stay below 3000: not held.
  EXPECT_FALSE(d.change(7, p, 0));
  EXPECT_FALSE(d.change(7, p, 5 * kSec));
  EXPECT_FALSE(d.change(7, p, 10 * kSec));
  EXPECT_FALSE(d.held(7, 10 * kSec));
  EXPECT_LT(d.penalty(7, p, 10 * kSec), 3000);
  // The fourth goes above it: held down.
  EXPECT_TRUE(d.change(7, p, 15 * kSec));
  const double pen = d.find(7)->penalty;
  EXPECT_GT(pen, 3000);
  const uint64_t until = d.find(7)->held_until;
  const double expect_s = 60 * std::log2(pen / 750);
  EXPECT_NEAR(double(until - 15 * kSec) / kSec, expect_s, 1e-6);
  EXPECT_TRUE(d.held(7, until - 1));
  EXPECT_FALSE(d.held(7, until));
  EXPECT_LT(d.penalty(7, p, until), 750 + 1e-6);
  EXPECT_EQ(d.nextRelease(15 * kSec), until);
  EXPECT_EQ(d.nextRelease(until), std::nullopt);
  EXPECT_EQ(d.holdsTotal(), 1u);
}

TEST(FlapDampener, AChangeWhileHeldExtendsTheHoldButNeverPastMaxHold) {
  FlapDampener d;
  DampeningParams p = params();
  p.max_hold_ns = 180 * kSec;  // the penalty is capped at 750 x 2^3 = 6000
  for (int i = 0; i < 4; ++i) d.change(3, p, uint64_t(i) * kSec);
  const uint64_t first = d.find(3)->held_until;
  EXPECT_FALSE(d.change(3, p, 4 * kSec));  // not a new hold
  EXPECT_GT(d.find(3)->held_until, first);
  for (int i = 5; i < 100; ++i) d.change(3, p, uint64_t(i) * kSec);
  // Capped: at most max_hold after the last change.
  EXPECT_NEAR(d.find(3)->penalty, 6000, 1e-6);
  EXPECT_LE(d.find(3)->held_until, 99 * kSec + 180 * kSec);
  EXPECT_EQ(d.find(3)->holds, 1u);
  EXPECT_FALSE(d.held(3, 99 * kSec + 180 * kSec));
}

TEST(SlowStart, StepsAreSecondsAtMostTenAndEndAtSlowStart) {
  EXPECT_EQ(slowStartSteps(1), 1u);
  EXPECT_EQ(slowStartSteps(4), 4u);
  EXPECT_EQ(slowStartSteps(30), 10u);
  // 10 s: ten steps of 1 s, the first two at 1/10.
  EXPECT_EQ(slowStartStep(0, 10), 1u);
  EXPECT_EQ(slowStartStep(1999'999'999, 10), 1u);
  EXPECT_EQ(slowStartStep(2 * kSec, 10), 2u);
  EXPECT_EQ(slowStartStep(9 * kSec, 10), 9u);
  EXPECT_EQ(slowStartStep(10 * kSec - 1, 10), 9u);
  EXPECT_EQ(slowStartStep(10 * kSec, 10), std::nullopt);
  // 30 s: a step every 3 s.
  EXPECT_EQ(slowStartStep(5 * kSec, 30), 1u);
  EXPECT_EQ(slowStartStep(6 * kSec, 30), 2u);
  EXPECT_EQ(slowStartStep(29 * kSec, 30), 9u);
}

Config rampConfig(uint32_t slow_start_s, bool dampening) {
  Config c = testing::smallConfig();
  ApplianceGroupConfig& g = c.server_groups[0];
  g.maglev_table_size = 65537;
  g.slow_start_s = slow_start_s;
  g.health_check.configured = true;
  g.health_check.dampening.enabled = dampening;
  return c;
}

HealthMap allHealthy() {
  HealthMap h;
  for (const char* a : {"10.0.0.11", "10.0.0.12", "10.0.0.13"}) h[v4(a)] = HealthState::kHealthy;
  return h;
}

size_t slotsOf(const dp::Snapshot& s, const ApplianceRegistry& reg, const char* a) {
  const uint16_t id = reg.find(v4(a));
  return size_t(std::count(s.groups[0].maglev.begin(), s.groups[0].maglev.end(), id));
}

TEST(ServiceShaper, ARecoveredApplianceRampsItsShareOverSlowStart) {
  const Config c = rampConfig(10, false);
  ServiceShaper sh;
  ApplianceLifecycle life;
  HealthMap h = allHealthy();
  h[v4("10.0.0.12")] = HealthState::kUnhealthy;
  std::vector<std::string> lines;
  EXPECT_TRUE(sh.update(c, h, life, 0).ramp.empty());  // the first build: nothing ramps
  h[v4("10.0.0.12")] = HealthState::kHealthy;
  Shaping s = sh.update(c, h, life, 100 * kSec, &lines);
  ASSERT_EQ(s.ramp.count(v4("10.0.0.12")), 1u);
  EXPECT_EQ(s.ramp.at(v4("10.0.0.12")), 1u);
  EXPECT_EQ(s.ramp.size(), 1u);  // the others keep their full share
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "10.0.0.12 slow start: 1/10 of its share of new flows, full after 10 s");
  EXPECT_EQ(sh.nextDue(), 102 * kSec);

  // Its Maglev share, step by step: weight x k against the others' x 10.
  std::vector<size_t> share;
  uint64_t t = 100 * kSec;
  for (;;) {
    ApplianceRegistry reg;
    Shaping now = sh.update(c, h, life, t);
    auto snap = buildSnapshot(c, reg, {}, 1, h, &life, nullptr, nullptr, nullptr, &now);
    share.push_back(slotsOf(*snap, reg, "10.0.0.12"));
    if (!sh.nextDue()) break;
    t = *sh.nextDue();
  }
  EXPECT_EQ(t, 110 * kSec);
  ASSERT_EQ(share.size(), 10u);  // steps 1 (2 s), 2..9, then full
  for (size_t i = 0; i + 1 < share.size(); ++i) {
    const double k = double(std::max<size_t>(1, i + 1));
    const double expect = 65537.0 * k / (k + 20);
    EXPECT_NEAR(double(share[i]), expect, 2) << "step " << i + 1;
  }
  // At the end it has its full third, and the table is the unshaped one.
  ApplianceRegistry reg_a, reg_b;
  Shaping none;
  auto plain = buildSnapshot(c, reg_a, {}, 1, h, &life);
  auto ended = buildSnapshot(c, reg_b, {}, 1, h, &life, nullptr, nullptr, nullptr, &none);
  EXPECT_EQ(plain->groups[0].maglev, ended->groups[0].maglev);
  EXPECT_NEAR(double(share.back()), 65537.0 / 3, 2);
}

TEST(ServiceShaper, AllStepsAtFullScaleBuildTheUnshapedTable) {
  // Maglev depends on the weights' ratios: x n for everybody changes nothing,
  // so the end of a ramp moves no slot between the other appliances.
  const Config c = rampConfig(10, false);
  HealthMap h = allHealthy();
  ApplianceLifecycle life;
  Shaping all;
  for (const char* a : {"10.0.0.11", "10.0.0.12", "10.0.0.13"}) all.ramp[v4(a)] = 10;
  ApplianceRegistry r1, r2;
  EXPECT_EQ(buildSnapshot(c, r1, {}, 1, h, &life)->groups[0].maglev,
            buildSnapshot(c, r2, {}, 1, h, &life, nullptr, nullptr, nullptr, &all)->groups[0].maglev);
}

TEST(ServiceShaper, AFlappingApplianceIsHeldDownThenRampsBackAfterRelease) {
  const Config c = rampConfig(10, true);
  ServiceShaper sh;
  ApplianceLifecycle life;
  HealthMap h = allHealthy();
  sh.update(c, h, life, 0);
  const uint32_t ip = v4("10.0.0.13");
  std::vector<std::string> lines;
  Shaping s;
  // healthy -> unhealthy -> healthy -> unhealthy -> healthy, 6 s apart.
  for (int i = 1; i <= 4; ++i) {
    h[ip] = i % 2 ? HealthState::kUnhealthy : HealthState::kHealthy;
    s = sh.update(c, h, life, uint64_t(i) * 6 * kSec, &lines);
  }
  ASSERT_TRUE(s.held.count(ip));
  EXPECT_FALSE(s.ramp.count(ip));
  // The first recovery (at 12 s) started a slow start; the fourth change held it down.
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("10.0.0.13 slow start: ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("10.0.0.13 dampened: 4 state changes, penalty ", 0), 0u) << lines[1];
  // Its table share is nothing while held; its flows are not moved.
  ApplianceRegistry reg;
  auto snap = buildSnapshot(c, reg, {}, 1, h, &life, nullptr, nullptr, nullptr, &s);
  EXPECT_EQ(slotsOf(*snap, reg, "10.0.0.13"), 0u);
  EXPECT_EQ(snap->appliances[reg.find(ip)].move_reason, dp::MoveReason::kNone);
  // Released at nextDue(), then it ramps.
  const uint64_t release = *sh.nextDue();
  EXPECT_EQ(release, sh.dampener().find(ip)->held_until);
  EXPECT_TRUE(sh.update(c, h, life, release - 1).held.count(ip));
  lines.clear();
  s = sh.update(c, h, life, release, &lines);
  EXPECT_FALSE(s.held.count(ip));
  EXPECT_EQ(s.ramp.at(ip), 1u);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("10.0.0.13 hold-down over: penalty ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("10.0.0.13 slow start: ", 0), 0u) << lines[1];
}

TEST(ServiceShaper, WithoutDampeningFlapsHoldNothing) {
  const Config c = rampConfig(0, false);
  ServiceShaper sh;
  ApplianceLifecycle life;
  HealthMap h = allHealthy();
  for (int i = 0; i < 20; ++i) {
    h[v4("10.0.0.11")] = i % 2 ? HealthState::kUnhealthy : HealthState::kHealthy;
    Shaping s = sh.update(c, h, life, uint64_t(i) * kSec);
    EXPECT_TRUE(s.held.empty());
    EXPECT_TRUE(s.ramp.empty());
  }
  EXPECT_EQ(sh.nextDue(), std::nullopt);
}


// Settling after a whole-group outage (docs/product-rules.md "After every
// appliance of a group failed at once"): a rebalance group whose three
// appliances all failed, then came back one by one, as a fault on the
// gateway's own side (its probe path cut, its CPU starved) ends.
Config settleConfig(FailoverMode mode, bool reset_on_unhealthy) {
  Config c = rampConfig(0, false);
  ApplianceGroupConfig& g = c.server_groups[0];
  g.failover_mode = mode;
  g.send_tcp_reset.on_unhealthy = reset_on_unhealthy;
  g.health_check.interval_ms = 2000;
  g.health_check.timeout_ms = 1000;  // settles for 2 x 2 s + 1 s = 5 s
  return c;
}

dp::MoveReason moveOf(const Config& c, const HealthMap& h, const ApplianceLifecycle& life,
                      const Shaping& s, const char* a) {
  ApplianceRegistry reg;
  auto snap = buildSnapshot(c, reg, {}, 1, h, &life, nullptr, nullptr, nullptr, &s);
  return snap->appliances[reg.find(v4(a))].move_reason;
}

void setAll(HealthMap& h, HealthState st) {
  for (auto& [ip, v] : h) v = st;
}

// The three appliances healthy at 0 s, all failing at 10 s: a whole-group
// outage. Returns the shaping of the 10 s build.
Shaping outage(ServiceShaper& sh, const Config& c, HealthMap& h, const ApplianceLifecycle& life,
               std::vector<std::string>* lines = nullptr) {
  h = allHealthy();
  sh.update(c, h, life, 0, lines);
  setAll(h, HealthState::kUnhealthy);
  return sh.update(c, h, life, 10 * kSec, lines);
}

TEST(ServiceShaper, AfterAWholeGroupOutageTheFailingKeepTheirFlowsUntilTheGroupSettles) {
  const Config c = settleConfig(FailoverMode::kRebalance, false);
  EXPECT_EQ(settleNs(c.server_groups[0].health_check), 5 * kSec);
  ServiceShaper sh;
  ApplianceLifecycle life;
  HealthMap h;
  std::vector<std::string> lines;
  Shaping s = outage(sh, c, h, life, &lines);
  EXPECT_TRUE(s.settling.empty());
  EXPECT_EQ(moveOf(c, h, life, s, "10.0.0.12"), dp::MoveReason::kNone);  // none in service: flows stay
  // The first back: the two still failing keep their flows.
  h[v4("10.0.0.11")] = HealthState::kHealthy;
  s = sh.update(c, h, life, 12 * kSec, &lines);
  EXPECT_EQ(s.settling, (std::set<uint32_t>{v4("10.0.0.12"), v4("10.0.0.13")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "group fw: 1 of 3 appliances pass again after all failed; the 2 still failing keep "
            "their flows for 5.0 s while the group settles");
  EXPECT_EQ(sh.nextDue(), 17 * kSec);
  EXPECT_EQ(sh.settlingUntil("fw"), 17 * kSec);
  EXPECT_EQ(moveOf(c, h, life, s, "10.0.0.12"), dp::MoveReason::kNone);
  EXPECT_EQ(moveOf(c, h, life, s, "10.0.0.13"), dp::MoveReason::kNone);
  // The second back 80 ms later; the third stays failed (a real fault).
  h[v4("10.0.0.12")] = HealthState::kHealthy;
  s = sh.update(c, h, life, 12 * kSec + 80'000'000, &lines);
  EXPECT_EQ(s.settling, (std::set<uint32_t>{v4("10.0.0.13")}));
  EXPECT_EQ(lines.size(), 1u);
  EXPECT_EQ(sh.update(c, h, life, 17 * kSec - 1).settling.size(), 1u);
  // Settled: the one still failing sheds its flows, as rebalance says.
  s = sh.update(c, h, life, 17 * kSec, &lines);
  EXPECT_TRUE(s.settling.empty());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "group fw settled: 2 of 3 appliances in service; the 1 still failing shed their flows now");
  EXPECT_EQ(sh.nextDue(), std::nullopt);
  EXPECT_EQ(sh.settlingUntil("fw"), std::nullopt);
  EXPECT_EQ(moveOf(c, h, life, s, "10.0.0.13"), dp::MoveReason::kUnhealthy);
}

TEST(ServiceShaper, AOneApplianceFailureRebalancesAtOnce) {
  const Config c = settleConfig(FailoverMode::kRebalance, false);
  ServiceShaper sh;
  ApplianceLifecycle life;
  HealthMap h = allHealthy();
  sh.update(c, h, life, 0);
  h[v4("10.0.0.13")] = HealthState::kUnhealthy;
  Shaping s = sh.update(c, h, life, 10 * kSec);
  EXPECT_TRUE(s.settling.empty());
  EXPECT_EQ(sh.nextDue(), std::nullopt);
  EXPECT_EQ(moveOf(c, h, life, s, "10.0.0.13"), dp::MoveReason::kUnhealthy);
}

TEST(ServiceShaper, TheSettlingEndsWhenEveryApplianceIsBackAndStartsOverIfAllFailAgain) {
  const Config c = settleConfig(FailoverMode::kRebalance, false);
  ServiceShaper sh;
  ApplianceLifecycle life;
  HealthMap h;
  outage(sh, c, h, life);
  h[v4("10.0.0.11")] = HealthState::kHealthy;
  EXPECT_EQ(sh.update(c, h, life, 11 * kSec).settling.size(), 2u);
  // All fail again before it settled: nothing settles, nothing moves ...
  setAll(h, HealthState::kUnhealthy);
  EXPECT_TRUE(sh.update(c, h, life, 12 * kSec).settling.empty());
  EXPECT_EQ(sh.nextDue(), std::nullopt);
  // ... and the next first back starts a whole window again.
  h[v4("10.0.0.12")] = HealthState::kHealthy;
  EXPECT_EQ(sh.update(c, h, life, 14 * kSec).settling.size(), 2u);
  EXPECT_EQ(sh.nextDue(), 19 * kSec);
  // Every appliance back: settled early, with nothing to shed.
  setAll(h, HealthState::kHealthy);
  std::vector<std::string> lines;
  EXPECT_TRUE(sh.update(c, h, life, 15 * kSec, &lines).settling.empty());
  EXPECT_EQ(sh.nextDue(), std::nullopt);
  EXPECT_TRUE(lines.empty());
}

TEST(ServiceShaper, ResetsWaitForTheGroupToSettleAndNoRebalanceGroupsHaveNothingToHold) {
  // send_tcp_reset.on_unhealthy: the resets wait as the moves do.
  const Config c = settleConfig(FailoverMode::kNoRebalance, true);
  ServiceShaper sh;
  ApplianceLifecycle life;
  HealthMap h;
  outage(sh, c, h, life);
  h[v4("10.0.0.11")] = HealthState::kHealthy;
  Shaping s = sh.update(c, h, life, 12 * kSec);
  ApplianceRegistry reg;
  auto snap = buildSnapshot(c, reg, {}, 1, h, &life, nullptr, nullptr, nullptr, &s);
  EXPECT_EQ(snap->appliances[reg.find(v4("10.0.0.12"))].reset, dp::ResetReason::kNone);
  s = sh.update(c, h, life, 17 * kSec);
  ApplianceRegistry reg2;
  snap = buildSnapshot(c, reg2, {}, 1, h, &life, nullptr, nullptr, nullptr, &s);
  EXPECT_EQ(snap->appliances[reg2.find(v4("10.0.0.12"))].reset, dp::ResetReason::kUnhealthy);

  // no_rebalance without resets: failing appliances keep their flows anyway;
  // the shaper holds nothing and logs nothing.
  const Config plain = settleConfig(FailoverMode::kNoRebalance, false);
  ServiceShaper sh2;
  HealthMap h2;
  std::vector<std::string> lines;
  outage(sh2, plain, h2, life, &lines);
  h2[v4("10.0.0.11")] = HealthState::kHealthy;
  EXPECT_TRUE(sh2.update(plain, h2, life, 12 * kSec, &lines).settling.empty());
  EXPECT_TRUE(lines.empty());
  EXPECT_EQ(sh2.nextDue(), std::nullopt);
}


// The same across regions: a listener over two rebalance groups (east
// preferred, west), all four appliances failing at once; west's first is
// back before any of east's. Without settling, east's region (failed) would
// shed every east flow to west by region failover.
// Two groups of two, east (10.0.1.x, preferred) and west (10.0.2.x), under
// listener "inspect"; east's region is healthy only with both its
// appliances (a composite).
Config twoRegions(FailoverMode mode, bool reset_on_unhealthy) {
  Config c = settleConfig(mode, reset_on_unhealthy);
  ApplianceGroupConfig east = c.server_groups[0];
  east.name = "east";
  east.appliances.resize(2);
  east.appliances[0].address = *IpAddr::parse("10.0.1.11");
  east.appliances[1].address = *IpAddr::parse("10.0.1.12");
  ApplianceGroupConfig west = east;
  west.name = "west";
  west.appliances[0].address = *IpAddr::parse("10.0.2.11");
  west.appliances[1].address = *IpAddr::parse("10.0.2.12");
  c.server_groups = {east, west};
  ListenerConfig l;
  l.name = "inspect";
  l.server_groups = {"east", "west"};
  c.listeners = {l};
  c.health_aggregation_policies = {{"all", 100, 1}};
  c.health_sources = {{"src-east", "east", "all"}};
  c.composite_health_checks = {{"east-whole", {"src-east"}, "inspect", false}};
  return c;
}

TEST(ServiceShaper, AListenerWhoseRegionsAllFailedSettlesBeforeRegionFailoverShedsFlows) {
  const Config c = twoRegions(FailoverMode::kRebalance, false);
  const char* all[] = {"10.0.1.11", "10.0.1.12", "10.0.2.11", "10.0.2.12"};
  HealthMap h;
  for (const char* a : all) h[v4(a)] = HealthState::kHealthy;
  ServiceShaper sh;
  RegionTracker regions;
  ApplianceLifecycle life;
  std::vector<std::string> lines;
  auto build = [&](uint64_t now, Shaping& s) {
    regions.update(c, h, &life, now);
    s = sh.update(c, h, life, now, &lines);
    ApplianceRegistry reg;
    auto snap = buildSnapshot(c, reg, {}, 1, h, &life, &regions, nullptr, nullptr, &s);
    std::map<std::string, dp::MoveReason> out;
    for (const char* a : all) out[a] = snap->appliances[reg.find(v4(a))].move_reason;
    return out;
  };
  Shaping s;
  build(0, s);
  for (const char* a : all) h[v4(a)] = HealthState::kUnhealthy;
  EXPECT_EQ(build(10 * kSec, s).at("10.0.1.11"), dp::MoveReason::kNone);
  h[v4("10.0.2.11")] = HealthState::kHealthy;  // west's first back
  auto moves = build(12 * kSec, s);
  EXPECT_EQ(regions.listener("inspect")->active, 1) << "new flows go west at once";
  EXPECT_EQ(moves.at("10.0.1.11"), dp::MoveReason::kNone);
  // East's first back 200 ms later: its region is still failed (1 of 2).
  h[v4("10.0.1.11")] = HealthState::kHealthy;
  moves = build(12 * kSec + 200'000'000, s);
  EXPECT_EQ(moves.at("10.0.1.11"), dp::MoveReason::kNone) << "no region failover while settling";
  EXPECT_EQ(moves.at("10.0.1.12"), dp::MoveReason::kNone);
  EXPECT_EQ(moves.at("10.0.2.12"), dp::MoveReason::kNone);
  EXPECT_EQ(s.settling_groups, (std::set<std::string>{"east", "west"}));
  EXPECT_EQ(s.settling, (std::set<uint32_t>{v4("10.0.1.12"), v4("10.0.2.12")}));
  // East settles as a group too, from its own first back.
  EXPECT_EQ(sh.settlingUntil("east"), 17 * kSec + 200'000'000);
  EXPECT_EQ(sh.settlingUntil("west"), 17 * kSec);
  EXPECT_EQ(sh.nextDue(), 17 * kSec);
  bool said = false;
  for (const std::string& line : lines)
    said = said || line == "listener inspect: 1 of 4 appliances pass again after all failed; the 3 still failing "
                           "keep their flows for 5.0 s while the listener settles";
  EXPECT_TRUE(said) << ::testing::PrintToString(lines);
  // East's region stays failed past the settle time: its flows go west then.
  // West (and the listener) settled at 17 s; east, settling on its own, at 17.2 s.
  moves = build(17 * kSec, s);
  EXPECT_EQ(s.settling_groups, (std::set<std::string>{"east"}));
  EXPECT_EQ(moves.at("10.0.2.12"), dp::MoveReason::kUnhealthy);
  EXPECT_EQ(moves.at("10.0.1.11"), dp::MoveReason::kNone);
  EXPECT_EQ(moves.at("10.0.1.12"), dp::MoveReason::kNone);
  EXPECT_EQ(lines.back(), "listener inspect settled: 2 of 4 appliances in service; the 2 still failing shed their flows now");
  moves = build(17 * kSec + 200'000'000, s);
  EXPECT_TRUE(s.settling_groups.empty());
  EXPECT_TRUE(s.settling.empty());
  EXPECT_EQ(moves.at("10.0.1.11"), dp::MoveReason::kRegionFailover);
  EXPECT_EQ(moves.at("10.0.1.12"), dp::MoveReason::kUnhealthy);
  EXPECT_EQ(sh.nextDue(), std::nullopt);
}


// Resets on unhealthy across regions: east's TCP flows are not reset when
// west's first appliance is back before any of east's.
TEST(ServiceShaper, AListenerWhoseRegionsAllFailedSettlesBeforeResettingFlows) {
  const Config c = twoRegions(FailoverMode::kNoRebalance, true);
  HealthMap h;
  for (const char* a : {"10.0.1.11", "10.0.1.12", "10.0.2.11", "10.0.2.12"}) h[v4(a)] = HealthState::kHealthy;
  ServiceShaper sh;
  RegionTracker regions;
  ApplianceLifecycle life;
  auto resetOf = [&](uint64_t now, const char* a) {
    regions.update(c, h, &life, now);
    Shaping s = sh.update(c, h, life, now);
    ApplianceRegistry reg;
    auto snap = buildSnapshot(c, reg, {}, 1, h, &life, &regions, nullptr, nullptr, &s);
    return snap->appliances[reg.find(v4(a))].reset;
  };
  resetOf(0, "10.0.1.11");
  setAll(h, HealthState::kUnhealthy);
  EXPECT_EQ(resetOf(10 * kSec, "10.0.1.11"), dp::ResetReason::kNone);
  h[v4("10.0.2.11")] = HealthState::kHealthy;
  EXPECT_EQ(resetOf(12 * kSec, "10.0.1.11"), dp::ResetReason::kNone) << "reset while the listener settles";
  EXPECT_EQ(resetOf(17 * kSec, "10.0.1.11"), dp::ResetReason::kUnhealthy);
}

}  // namespace
}  // namespace gwlb::ctl
