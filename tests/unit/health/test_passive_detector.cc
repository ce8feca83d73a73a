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

}  // namespace
}  // namespace gwlb::ctl
