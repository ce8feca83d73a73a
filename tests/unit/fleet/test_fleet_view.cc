// FleetView: when a fleet node may lack its peers' flow records, so that a TCP
// segment without SYN and without an entry is reset rather than picked
// (docs/fleet.md "A segment with no record"). Time is passed in.
#include <gtest/gtest.h>

#include "control/fleet/fleet_view.h"

namespace gwlb::ctl {
namespace {

constexpr uint64_t kS = 1'000'000'000ULL;
constexpr uint64_t kHorizon = 700 * kS;  // twice a 350 s TCP idle timeout

FleetView view(size_t peers) {
  FleetView v(peers);
  v.setHorizon(kHorizon);
  return v;
}

// Peers heard every second from `from` to `to` (exclusive), each in its own epoch.
void keepalives(FleetView& v, size_t peers, uint64_t from, uint64_t to) {
  for (uint64_t t = from; t < to; t += kS)
    for (size_t i = 0; i < peers; ++i) v.heard(i, 100 + i, t);
}

TEST(FleetView, IncompleteUntilTheWarmStartEnds) {
  FleetView v = view(2);
  EXPECT_FALSE(v.complete(1 * kS));
  EXPECT_EQ(v.why(1 * kS), "the warm start is under way");
  keepalives(v, 2, 1 * kS, 3 * kS);
  v.warmStartEnded(true, true, 3 * kS);
  EXPECT_TRUE(v.complete(3 * kS)) << v.why(3 * kS);
}

TEST(FleetView, NoPeersToAskIsComplete) {
  FleetView v = view(0);
  v.warmStartEnded(false, false, 1 * kS);
  EXPECT_TRUE(v.complete(1 * kS));
}

// The lab's and the soak's case: a node restarted while its sync link was
// down gets no table, announces its routes and receives the fleet's flows.
TEST(FleetView, AWarmStartWithoutATableIsIncompleteUntilEveryPeerIsHeardAndAHorizonPassed) {
  FleetView v = view(2);
  v.warmStartEnded(false, true, 3 * kS);
  EXPECT_FALSE(v.complete(4 * kS));
  EXPECT_EQ(v.why(4 * kS), "the warm start got no peer's table and a peer has not been heard since");
  // The link comes back at 20 s: one peer heard, then both.
  v.heard(0, 100, 20 * kS);
  EXPECT_FALSE(v.complete(20 * kS));
  keepalives(v, 2, 21 * kS, 40 * kS);
  EXPECT_EQ(v.why(40 * kS), "the warm start got no peer's table");
  EXPECT_EQ(v.uncertainUntil(), 21 * kS + kHorizon) << "the horizon runs from when both were heard";
  keepalives(v, 2, 40 * kS, 21 * kS + kHorizon + kS);
  EXPECT_TRUE(v.complete(21 * kS + kHorizon)) << v.why(21 * kS + kHorizon);
}

TEST(FleetView, APeerNeverHeardWithinAHorizonOfAWarmStartWithoutATableIsGone) {
  FleetView v = view(1);
  v.warmStartEnded(false, true, 3 * kS);
  EXPECT_FALSE(v.complete(3 * kS + kHorizon - kS));
  EXPECT_TRUE(v.complete(3 * kS + kHorizon)) << "a fleet of one for a horizon knows every live flow";
}

TEST(FleetView, APeerSilentIsIncompleteAndItsLostRecordsMatterForAHorizonAfter) {
  FleetView v = view(2);
  keepalives(v, 2, 1 * kS, 3 * kS);
  v.warmStartEnded(true, true, 3 * kS);
  keepalives(v, 2, 3 * kS, 100 * kS);
  EXPECT_TRUE(v.complete(100 * kS));
  // Peer 1's link is cut from 100 s to 110 s; peer 0 goes on.
  for (uint64_t t = 100 * kS; t < 110 * kS; t += kS) v.heard(0, 100, t);
  EXPECT_TRUE(v.complete(102 * kS)) << "a second or two without a keepalive is not yet silence";
  EXPECT_FALSE(v.complete(104 * kS));
  EXPECT_EQ(v.why(104 * kS), "a peer is silent");
  keepalives(v, 2, 110 * kS, 200 * kS);
  EXPECT_EQ(v.why(200 * kS), "a peer's records were lost while it was silent");
  EXPECT_EQ(v.uncertainUntil(), 110 * kS + kHorizon);
  keepalives(v, 2, 200 * kS, 110 * kS + kHorizon);
  EXPECT_TRUE(v.complete(110 * kS + kHorizon));
}

TEST(FleetView, APeerThatRestartedLostNothing) {
  FleetView v = view(1);
  v.warmStartEnded(true, true, 1 * kS);
  keepalives(v, 1, 1 * kS, 50 * kS);
  // Down from 50 s to 60 s, back with a new epoch.
  EXPECT_FALSE(v.complete(55 * kS)) << "while it is silent, a cut cannot be told from a stop";
  v.heard(0, 999, 60 * kS);
  EXPECT_TRUE(v.complete(60 * kS)) << v.why(60 * kS);
}

TEST(FleetView, APeerSilentForAHorizonIsGone) {
  FleetView v = view(1);
  v.warmStartEnded(true, true, 1 * kS);
  v.heard(0, 100, 2 * kS);
  EXPECT_FALSE(v.complete(2 * kS + kHorizon - kS));
  EXPECT_TRUE(v.complete(2 * kS + kHorizon));
}

TEST(FleetView, AnEntryThatIsThisNodeIsNotWaitedFor) {
  FleetView v = view(2);
  v.ignore(1);
  v.warmStartEnded(false, true, 1 * kS);
  v.heard(0, 100, 2 * kS);
  EXPECT_EQ(v.why(2 * kS), "the warm start got no peer's table");
  EXPECT_EQ(v.uncertainUntil(), 2 * kS + kHorizon);
}

}  // namespace
}  // namespace gwlb::ctl
