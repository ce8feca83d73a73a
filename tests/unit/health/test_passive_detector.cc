// Passive detection's window and cap (control/health/passive_detector.h) on a
// fake clock, and HealthTracker::eject: unhealthy (no returns) at once, back
// after the healthy threshold of checks that pass after it.
#include <gtest/gtest.h>

#include "common/health.h"
#include "control/health/passive_detector.h"

namespace gwlb::ctl {
namespace {

PassiveCheckConfig params() {
  PassiveCheckConfig p;
  p.enabled = true;
  p.min_packets = 100;
  p.window_ms = 2000;
  return p;
}

TEST(PassiveDetector, ABlackHoleIsFoundOnceAWholeWindowSentEnoughAndGotNothingBack) {
  PassiveDetector d;
  const PassiveCheckConfig p = params();
  uint64_t sent = 0, ret = 0;
  // 3 s of normal forwarding: 100 packets a second, all back.
  for (uint64_t t = 0; t <= 3000; t += 200, sent += 20, ret += 20)
    EXPECT_FALSE(d.observe(1, p, {t, sent, ret}).black_hole) << t;
  // From 3.2 s nothing comes back.
  PassiveDetector::Window w;
  uint64_t found = 0;
  for (uint64_t t = 3200; t <= 8000 && !found; t += 200) {
    sent += 20;
    w = d.observe(1, p, {t, sent, ret});
    if (w.black_hole) found = t;
  }
  // The window must start after the last return (3.0 s): found at 5.0 s + one turn.
  EXPECT_EQ(found, 5200u);
  EXPECT_EQ(w.returned, 0u);
  EXPECT_GE(w.sent, 100u);
  EXPECT_GE(w.span_ms, 2000u);
  EXPECT_EQ(noReturnsReason(w), "no returns: 200 packets sent, none returned in 2.0 s");
}

TEST(PassiveDetector, AFirewallThatReturnsSomeOrTooFewPacketsIsNoBlackHole) {
  PassiveDetector d;
  const PassiveCheckConfig p = params();
  // Denies 99 % but returns 1 %: not a black hole.
  uint64_t sent = 0, ret = 0;
  for (uint64_t t = 0; t <= 10000; t += 200) {
    sent += 100;
    if (t % 1000 == 0) ++ret;
    EXPECT_FALSE(d.observe(2, p, {t, sent, ret}).black_hole) << t;
  }
  // Returns nothing, but is sent fewer than min_packets a window.
  sent = ret = 0;
  for (uint64_t t = 0; t <= 10000; t += 200) {
    sent += 9;  // 90 per 2 s
    EXPECT_FALSE(d.observe(3, p, {t, sent, ret}).black_hole) << t;
  }
  // A window not yet full (just started watching) judges nothing.
  PassiveDetector e;
  EXPECT_FALSE(e.observe(4, p, {0, 0, 0}).black_hole);
  EXPECT_FALSE(e.observe(4, p, {1000, 5000, 0}).black_hole);
  EXPECT_TRUE(e.observe(4, p, {2000, 6000, 0}).black_hole);
  e.reset(4);  // back in service later: a fresh window
  EXPECT_FALSE(e.observe(4, p, {9000, 7000, 0}).black_hole);
  EXPECT_EQ(e.window(4)->span_ms, 0u);
}

TEST(PassiveDetector, AtMostMaxEjectionPercentButAtLeastOne) {
  EXPECT_EQ(PassiveDetector::maxEjected(2, 50), 1u);
  EXPECT_EQ(PassiveDetector::maxEjected(2, 10), 1u);  // at least one, as Envoy
  EXPECT_EQ(PassiveDetector::maxEjected(10, 10), 1u);
  EXPECT_EQ(PassiveDetector::maxEjected(10, 35), 3u);
  EXPECT_EQ(PassiveDetector::maxEjected(10, 100), 10u);
  EXPECT_EQ(PassiveDetector::maxEjected(10, 0), 0u);
}

TEST(HealthTrackerEject, UnhealthyAtOnceThenBackAfterTheHealthyThresholdOfLaterChecks) {
  HealthParams hp;
  hp.healthy_threshold = 2;
  hp.unhealthy_threshold = 3;
  HealthTracker t(hp, true, 100, 0);
  ProbeOutcome ok{true, "ok", 1, 0};
  t.onResult(ok, 100);
  ASSERT_TRUE(t.onResult(ok, 200));
  ASSERT_EQ(t.state(), HealthState::kHealthy);
  auto tr = t.eject("no returns: 200 packets sent, none returned in 2.0 s", 300);
  ASSERT_TRUE(tr);
  EXPECT_EQ(tr->from, HealthState::kHealthy);
  EXPECT_EQ(tr->to, HealthState::kUnhealthy);
  EXPECT_TRUE(t.ejected());
  EXPECT_FALSE(t.receivesNewFlows());
  EXPECT_FALSE(t.eject("again", 350));  // already out of service
  // The checks before the ejection do not count: two passed after it do.
  EXPECT_FALSE(t.onResult(ok, 400));
  EXPECT_TRUE(t.ejected());
  auto back = t.onResult(ok, 500);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->to, HealthState::kHealthy);
  EXPECT_FALSE(t.ejected());
  // Failing checks make it unhealthy the ordinary way, not "ejected".
  ProbeOutcome bad{false, "connect_timeout", 5, 0};
  t.onResult(bad, 600);
  t.onResult(bad, 700);
  ASSERT_TRUE(t.onResult(bad, 800));
  EXPECT_FALSE(t.ejected());
}

// An appliance that swallows traffic while its own checks pass: without an
// ejection time it is back after healthy_threshold checks and ejected again
// every window. With one it serves the time out first.
TEST(HealthTrackerEject, PassedChecksDoNotBringItBackBeforeItsEjectionTime) {
  HealthParams hp;
  hp.healthy_threshold = 2;
  hp.unhealthy_threshold = 3;
  HealthTracker t(hp, true, 100, 0);
  ProbeOutcome ok{true, "ok", 1, 0};
  t.onResult(ok, 100);
  ASSERT_TRUE(t.onResult(ok, 200));
  ASSERT_TRUE(t.eject("no returns: 200 packets sent, none returned in 2.0 s", 1000, 30000));
  EXPECT_EQ(t.ejectedUntilMs(), 31000u);
  for (uint64_t at = 1500; at < 31000; at += 500) {
    EXPECT_FALSE(t.onResult(ok, at)) << "back at " << at;
    EXPECT_EQ(t.state(), HealthState::kUnhealthy);
    EXPECT_TRUE(t.ejected());
  }
  auto back = t.onResult(ok, 31000);  // the threshold was met long ago: back at once
  ASSERT_TRUE(back);
  EXPECT_EQ(back->to, HealthState::kHealthy);
  EXPECT_FALSE(t.ejected());
  // Failing checks still count during the time: it needs passed ones after.
  ASSERT_TRUE(t.eject("no returns", 40000, 1000));
  ProbeOutcome bad{false, "connect_timeout", 5, 0};
  t.onResult(ok, 40500);
  t.onResult(bad, 40900);
  EXPECT_FALSE(t.onResult(ok, 41100));  // one passed since the failure
  EXPECT_TRUE(t.onResult(ok, 41200));
}

PassiveCheckConfig ejectionParams(uint32_t base_ms, uint32_t max_ms) {
  PassiveCheckConfig p = params();
  p.base_ejection_time_ms = base_ms;
  p.max_ejection_time_ms = max_ms;
  return p;
}

TEST(PassiveDetector, EjectionTimeGrowsWithEjectionsInARowUpToTheCap) {
  PassiveDetector d;
  const PassiveCheckConfig p = ejectionParams(30000, 100000);
  EXPECT_EQ(d.ejectionsInARow(7), 0u);
  // Ejected again as soon as it is back (its time over, a window later).
  uint64_t now = 0;
  const uint64_t want[] = {30000, 60000, 90000, 100000, 100000};
  for (uint64_t w : want) {
    EXPECT_EQ(d.ejectionTimeMs(7, p, now), w);
    now += w + 2000;
  }
  EXPECT_EQ(d.ejectionsInARow(7), 5u);
  EXPECT_EQ(d.ejectionTimeMs(8, p, now), 30000u);  // per appliance
}

TEST(PassiveDetector, EjectionsInARowFallByOneForEachBaseTimeInService) {
  PassiveDetector d;
  const PassiveCheckConfig p = ejectionParams(10000, 300000);
  EXPECT_EQ(d.ejectionTimeMs(7, p, 0), 10000u);       // out until 10 s
  EXPECT_EQ(d.ejectionTimeMs(7, p, 11000), 20000u);   // back 1 s: 2 in a row, out until 31 s
  EXPECT_EQ(d.ejectionTimeMs(7, p, 32000), 30000u);   // 3, out until 62 s
  // 25 s in service: two base times, the count falls from 3 to 1, then 2.
  EXPECT_EQ(d.ejectionTimeMs(7, p, 87000), 20000u);
  // A long time in service: it starts again from one.
  EXPECT_EQ(d.ejectionTimeMs(7, p, 1000000), 10000u);
  EXPECT_EQ(d.ejectionsInARow(7), 1u);
}

TEST(PassiveDetector, NoBaseEjectionTimeMeansBackByItsChecksAlone) {
  PassiveDetector d;
  EXPECT_EQ(d.ejectionTimeMs(7, ejectionParams(0, 300000), 0), 0u);
  // A cap below the base does not shorten it (as Envoy: max(base, max)).
  EXPECT_EQ(d.ejectionTimeMs(8, ejectionParams(30000, 1000), 0), 30000u);
  EXPECT_EQ(d.ejectionTimeMs(8, ejectionParams(30000, 1000), 31000), 30000u);
}

}  // namespace
}  // namespace gwlb::ctl
