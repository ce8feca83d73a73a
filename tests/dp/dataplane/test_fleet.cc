// Issue 16 item 1 through the real pipeline: two gateways with the same
// config (listed in another order, hence other server ids) and the same key,
// each seeing one direction of the same flows in its own order, send each
// flow to the same appliance with the same cookie; a return packet carrying
// the cookie the other node computed is accepted; one carrying a cookie
// computed under another key is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/flow_key.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

constexpr int kFlows = 64;

Frame forward(int i) {
  const Net& n = net();
  return Frame{n.fromA(), kEthIpv4,
               ipv4(n.client4, n.server4, 6,
                    tcp(n.client4, n.server4, uint16_t(30000 + i), 443, pattern(40, uint8_t(i)))),
               kPortA};
}
Frame backward(int i) {
  const Net& n = net();
  return Frame{n.fromB(), kEthIpv4,
               ipv4(n.server4, n.client4, 6,
                    tcp(n.server4, n.client4, 443, uint16_t(30000 + i), pattern(40, uint8_t(i)))),
               kPortB};
}

class Fleet : public ::testing::Test {
 protected:
  void SetUp() override { setFlowHashKey({0x1111222233334444ULL, 0x5555666677778888ULL}); }
  void TearDown() override { setFlowHashKey({}); }
};

TEST_F(Fleet, TwoNodesAgreeAndAcceptEachOthersCookies) {
  Harness n1;
  HarnessOptions o2;
  o2.appliances = net().appliances;
  std::reverse(o2.appliances.begin(), o2.appliances.end());
  Harness n2(o2);
  ASSERT_NE(n1.snapshot().applianceByIp(net().appliances[0].v4HostOrder()),
            n2.snapshot().applianceByIp(net().appliances[0].v4HostOrder()))
      << "the nodes should number their appliances differently";

  // Node 1 takes the client->server direction in flow order; node 2 the
  // server->client one, newest flow first (its own history of new flows).
  std::vector<Encap> e1(kFlows), e2(kFlows);
  std::vector<Bytes> sent2(kFlows);
  for (int i = 0; i < kFlows; ++i) e1[i] = sendExpectingEncap(n1, forward(i));
  for (int i = kFlows - 1; i >= 0; --i) e2[i] = sendExpectingEncap(n2, backward(i), &sent2[i]);
  for (int i = 0; i < kFlows; ++i) {
    EXPECT_EQ(e1[i].appliance, e2[i].appliance) << "flow " << i;
    EXPECT_EQ(e1[i].cookie, e2[i].cookie) << "flow " << i;
  }

  // An appliance answers node 1 with the Geneve header node 2 sent it (its
  // cookie) around this direction's packet: node 1 returns it to router A.
  for (int i = 0; i < kFlows; ++i) {
    Frame f = forward(i);
    Bytes r = fromAppliance(e2[i].appliance, e2[i].sport, e2[i].geneve_hdr, expectedInner(n1, f));
    Result res = n1.send(r, kUnderlayPort);
    EXPECT_EQ(res.verdict, Verdict::kRouter) << "flow " << i << ": " << describe(res);
    EXPECT_EQ(res.bytes, f.returned()) << "flow " << i;
  }
  EXPECT_EQ(n1.get(Counter::drop_return_cookie_mismatch), 0u);
}

TEST_F(Fleet, ACookieComputedUnderAnotherKeyDoesNotValidate) {
  Harness n1;
  std::vector<Encap> mine(kFlows), theirs(kFlows);
  for (int i = 0; i < kFlows; ++i) mine[i] = sendExpectingEncap(n1, forward(i));
  {
    // A gateway of another fleet (another secret) sees the same flows.
    const FlowHashKey ours = flowHashKey();
    setFlowHashKey({0x1111222233334444ULL, 0x5555666677778889ULL});
    Harness other;
    for (int i = 0; i < kFlows; ++i) theirs[i] = sendExpectingEncap(other, forward(i));
    setFlowHashKey(ours);
  }
  int rejected = 0;
  for (int i = 0; i < kFlows; ++i) {
    if (theirs[i].appliance != mine[i].appliance) continue;  // dropped for that reason alone
    ASSERT_NE(theirs[i].cookie, mine[i].cookie) << "flow " << i;
    Bytes r = fromAppliance(mine[i].appliance, mine[i].sport, theirs[i].geneve_hdr,
                            expectedInner(n1, forward(i)));
    Result res = n1.send(r, kUnderlayPort);
    EXPECT_EQ(res.verdict, Verdict::kDrop) << describe(res);
    EXPECT_EQ(res.drop, Counter::drop_return_cookie_mismatch) << describe(res);
    ++rejected;
  }
  EXPECT_GE(rejected, kFlows / 8) << "too few flows share an appliance to test anything";
}

}  // namespace
}  // namespace gwlb::dptest
