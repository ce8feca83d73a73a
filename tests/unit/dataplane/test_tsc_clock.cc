// The workers' clock (dataplane/tsc_clock.h): TSC readings converted to the
// monotonic clock's nanoseconds, re-anchored once a second, never backwards.
#include "dataplane/tsc_clock.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace gwlb::dp {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;

// Packet times are the anchor's time plus the cycles since, at the TSC's
// rate, to within a nanosecond, at this machine's rate and at odd ones.
TEST(TscClock, ConvertsCyclesAtTheCountersRate) {
  for (uint64_t hz : {2'450'000'000ULL, 3'000'000'000ULL, 1'000'000'000ULL, 1'234'567ULL}) {
    TscClock c;
    const uint64_t tsc0 = 123'456'789'000ULL, ns0 = 5'000 * kSec;
    c.init(hz, tsc0, ns0);
    EXPECT_EQ(c.toNs(tsc0), ns0);
    for (uint64_t cycles : {uint64_t(1), hz / 1000, hz / 2, hz, 3 * hz + 17}) {
      long double want = (long double)(cycles) * 1e9L / (long double)(hz);
      long double got = (long double)(c.toNs(tsc0 + cycles) - ns0);
      EXPECT_NEAR(got, want, 1.0L) << "hz " << hz << ", cycles " << cycles;
    }
  }
}

// Re-anchoring follows the monotonic clock: a TSC that runs 100 ppm fast
// would put packets 100 us ahead after a second; after a resync the error
// starts from zero again instead of growing.
TEST(TscClock, ResyncFollowsTheMonotonicClock) {
  const uint64_t hz = 2'000'000'000ULL;
  TscClock c;
  c.init(hz, 0, 1000 * kSec);
  // One real second took hz * 1.0001 cycles.
  uint64_t tsc = hz + hz / 10'000;
  uint64_t t = c.toNs(tsc);
  EXPECT_EQ(t - 1000 * kSec, kSec + kSec / 10'000);  // 100 us ahead before resync
  c.resync(tsc, 1001 * kSec);
  // Half a real second later: exact again relative to the new anchor.
  EXPECT_EQ(c.toNs(tsc + hz / 2), 1001 * kSec + kSec / 2);
}

// Times never go backwards: when a resync moves the anchor earlier than what
// was handed out, later readings hold at the latest time until the clock
// passes it; a reading older than the anchor does not wrap around.
TEST(TscClock, NeverGoesBackwards) {
  const uint64_t hz = 1'000'000'000ULL;  // 1 cycle = 1 ns
  TscClock c;
  c.init(hz, 1'000, 10 * kSec);
  uint64_t t1 = c.toNs(1'000 + 500'000);  // 10 s + 500 us
  EXPECT_EQ(t1, 10 * kSec + 500'000);
  c.resync(1'000 + 500'000, 10 * kSec + 400'000);  // the monotonic clock says 100 us earlier
  EXPECT_EQ(c.toNs(1'000 + 550'000), t1);          // would be 10 s + 450 us: held
  EXPECT_EQ(c.toNs(1'000 + 700'000), 10 * kSec + 600'000);
  EXPECT_EQ(c.toNs(5), 10 * kSec + 600'000);       // a TSC before the anchor: no wrap
  uint64_t prev = 0;
  for (uint64_t tsc = 1'000'000; tsc < 2'000'000; tsc += 997) {
    uint64_t now = c.toNs(tsc);
    EXPECT_GE(now, prev);
    prev = now;
  }
}

}  // namespace
}  // namespace gwlb::dp
