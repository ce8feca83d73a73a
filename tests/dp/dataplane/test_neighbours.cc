// The neighbour table (dataplane/neighbour_table.h) under hostile L2 input
// (issue 24 item 9): a flood of frames with spoofed source MACs must not
// leave later flows without return L2, and priority bits must not make new
// neighbours. Every check is what a user sees: whether a flow's returns
// come back, and to which MAC, VLAN and port.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "tests/dp/dataplane/neighbour_table_test_access.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

MacAddr spoofed(uint32_t i) {
  char text[32];
  std::snprintf(text, sizeof text, "06:%02x:%02x:%02x:%02x:01", (i >> 24) & 0xFF, (i >> 16) & 0xFF,
                (i >> 8) & 0xFF, i & 0xFF);
  return mac(text);
}

Frame udpFrom(const L2& l2, uint16_t port, uint16_t sport, uint16_t dport = 53) {
  const Net& n = net();
  return Frame{l2, kEthIpv4, ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, sport, dport,
                                                                   pattern(16))),
               port};
}

// Sends f; its Geneve packet comes back from the appliance reflected. The
// result of that return.
Result roundTrip(Harness& h, const Frame& f) {
  Result fwd = h.send(f);
  EXPECT_EQ(fwd.verdict, Verdict::kAppliance) << describe(fwd);
  if (fwd.verdict != Verdict::kAppliance) return fwd;
  return h.send(reflect(fwd.bytes), kUnderlayPort);
}

void expectReturned(Harness& h, const Frame& f, const std::string& what) {
  Result r = roundTrip(h, f);
  EXPECT_EQ(r.verdict, Verdict::kRouter) << what << ": " << describe(r);
  if (r.verdict != Verdict::kRouter) return;
  EXPECT_EQ(r.bytes, f.returned()) << what << ": back to the MAC and VLAN it came from";
  EXPECT_EQ(r.port, f.port) << what;
}

// Housekeeping as gwlbd runs it once a second: expire, then reclaim. The
// harness's worker passes a quiescent point after every frame and here.
void housekeeping(Harness& h, int passes) {
  for (int i = 0; i < passes; ++i) {
    h.quiescent();
    h.flows().expire(h.now);
    h.quiescent();
    h.flows().reclaim(false);
  }
}

// 32,768 frames to our MAC on port A, each from another source MAC (one
// flow whose direction's L2 they keep changing, as a spoofing neighbour
// would). Before issue 24 every MAC took a neighbour slot for good: the
// table was full, and a flow from any neighbour not seen before (here
// router B, and router A's standby after a failover) had its returns
// dropped as drop_return_no_l2 until gwlbd restarted.
TEST(Neighbours, ASpoofedMacFloodLeavesLaterFlowsTheirReturns) {
  HarnessOptions o;
  Harness h(o);
  const Net& n = net();
  const Frame legit = udpFrom(n.fromA(), kPortA, 1000);
  expectReturned(h, legit, "router A's flow before the flood");

  for (uint32_t i = 0; i < dp::NeighbourTable::kSlots; ++i) {
    Frame f = udpFrom({n.our_a, spoofed(i), {}}, kPortA, 2000);
    Result r = h.send(f);
    ASSERT_EQ(r.verdict, Verdict::kAppliance) << "flood frame " << i << ": " << describe(r);
  }
  // The port took its share and refused the rest (counted); the flood's
  // flow keeps the last MAC recorded, the others are referenced by no flow.
  const dp::NeighbourTable& nt = h.flows().neighbours();
  EXPECT_EQ(nt.portCount(kPortA), dp::NeighbourTable::kPortLimit);
  EXPECT_EQ(h.get(Counter::neighbour_port_limit),
            dp::NeighbourTable::kSlots + 1 - dp::NeighbourTable::kPortLimit);
  EXPECT_EQ(h.get(Counter::neighbour_table_full), 0u);

  // Neighbours already known, and neighbours on other ports, keep working
  // at once: the flood cannot take more than its port's share.
  expectReturned(h, legit, "router A's flow during the flood");
  expectReturned(h, udpFrom(n.fromA(), kPortA, 1001), "a new flow from router A");
  expectReturned(h, udpFrom(n.fromB(), kPortB, 1002), "a new flow from router B (another port)");

  // Once housekeeping has run, the spoofed neighbours no flow refers to are
  // gone and a new neighbour on the flooded port is recorded again.
  housekeeping(h, 3);
  EXPECT_EQ(nt.portCount(kPortA), 2u) << "router A and the flood flow's last MAC are left";
  L2 standby{n.our_a, mac("02:00:00:00:0a:0b"), {}};
  expectReturned(h, udpFrom(standby, kPortA, 1003), "a new flow from router A's standby");
  expectReturned(h, legit, "router A's flow after housekeeping");
  expectCounterInvariant(h.counters(), "after the flood");
}

// The PCP and DEI bits of a VLAN tag say how to queue one frame; they do
// not name another neighbour. Before issue 24 each value interned a new
// neighbour (and counted return_l2_changed): 16 per VLAN per MAC.
// The worker packs untagged frames with packUntagged: the same words as
// pack() without a tag, the same refusal of a port beyond 8 bits.
TEST(Neighbours, UntaggedPackingIsPackWithoutATag) {
  uint8_t frame[16];
  uint32_t x = 12345;
  for (int i = 0; i < 2000; ++i) {
    for (uint8_t& b : frame) b = uint8_t((x = x * 1103515245u + 12345u) >> 16);
    const uint16_t port = uint16_t(i % 300);
    uint64_t p1 = 1, s1 = 1, p2 = 2, s2 = 2;
    const bool a = dp::NeighbourTable::pack(frame, port, 0, 0, p1, s1);
    const bool b = dp::NeighbourTable::packUntagged(frame, port, p2, s2);
    ASSERT_EQ(a, b) << "port " << port;
    ASSERT_EQ(a, port <= 0xFF);
    if (a) {
      ASSERT_EQ(p1, p2);
      ASSERT_EQ(s1, s2);
    }
  }
}

TEST(Neighbours, PriorityBitsDoNotMakeNewNeighbours) {
  Harness h;
  const Net& n = net();
  const Frame base = udpFrom(n.fromVlan(0x0064), kPortVlan, 3000);
  expectReturned(h, base, "VLAN 100, priority 0");
  uint32_t before = h.flows().neighbours().count();
  for (uint16_t pri : {0x2000, 0xE000, 0x1000, 0xF000, 0x8000}) {
    Frame f = udpFrom(n.fromVlan(uint16_t(0x0064 | pri)), kPortVlan, 3000);
    Result r = h.send(f);
    ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  }
  EXPECT_EQ(h.flows().neighbours().count(), before) << "priority bits interned new neighbours";
  EXPECT_EQ(h.get(Counter::return_l2_changed), 0u) << "a priority change is not an L2 change";
  // Returns go to VLAN 100 with priority 0 (the router re-marks them).
  expectReturned(h, base, "VLAN 100 after priority changes");
  // Another VLAN ID is another neighbour.
  expectReturned(h, udpFrom(n.fromVlan(0x0065), kPortVlan, 3001), "VLAN 101");
  EXPECT_EQ(h.flows().neighbours().count(), before + 1);
}

// The sweep frees a neighbour only when no flow entry holds it, and never
// one that a worker had from intern() and stores after the sweep looked
// (docs/architecture.md, rule R2): retiring, a grace period, a second look,
// freeing, another grace period, free.
TEST(Neighbours, ANeighbourIsFreedOnlyOnceNoEntryHoldsIt) {
  Harness h;
  const Net& n = net();
  const Frame f = udpFrom(n.fromA(), kPortA, 4000);
  expectReturned(h, f, "the flow");
  dp::FlowTable& ft = h.flows();
  dp::NeighbourTable& nt = ft.neighbours();
  dp::FlowEntry* e = nullptr;
  ft.forEach([&](const FlowKey&, int32_t pos, const dp::FlowEntry&) { e = &ft.entry(pos); });
  ASSERT_NE(e, nullptr);
  const uint16_t router = e->l2[0].load() ? e->l2[0].load() : e->l2[1].load();
  ASSERT_NE(router, 0);

  // Interned by a "worker" that has not stored it yet.
  const uint64_t peer = 0x0000'0a0b0c0d0e0fULL, self = 0x0001'020304050607ULL;  // port 1
  dp::NeighbourTable::Refusal why;
  const uint16_t x = nt.intern(peer, self, why);
  ASSERT_NE(x, 0);
  EXPECT_EQ(nt.portCount(1), 1u);
  housekeeping(h, 1);
  EXPECT_TRUE(dp::NeighbourTableTestAccess::isRetiring(nt, x)) << "no entry holds it: retiring";
  // The worker stores it now, after the sweep's walk.
  std::atomic<uint16_t>& other = e->l2[0].load() == router ? e->l2[1] : e->l2[0];
  other.store(x);
  housekeeping(h, 4);
  dp::DirL2 d;
  EXPECT_TRUE(nt.read(x, d)) << "freed while an entry held it";
  EXPECT_FALSE(dp::NeighbourTableTestAccess::isRetiring(nt, x)) << "revived";
  EXPECT_TRUE(nt.holds(x, peer, self));
  EXPECT_TRUE(nt.read(router, d)) << "the flow's own neighbour";
  expectReturned(h, f, "the flow after five sweeps");

  // The entry lets go: freed after two more sweeps; its port's count drops.
  other.store(0);
  const uint64_t freed = nt.freed();
  housekeeping(h, 3);
  EXPECT_FALSE(nt.read(x, d));
  EXPECT_EQ(nt.freed(), freed + 1);
  EXPECT_EQ(nt.portCount(1), 0u);
  EXPECT_TRUE(nt.read(router, d)) << "the flow's own neighbour stays";

  // A retiring neighbour that a new flow interns again is revived, not doubled.
  const uint16_t y = nt.intern(peer, self, why);
  ASSERT_NE(y, 0);
  housekeeping(h, 1);
  ASSERT_TRUE(dp::NeighbourTableTestAccess::isRetiring(nt, y));
  EXPECT_EQ(nt.intern(peer, self, why), y);
  EXPECT_FALSE(dp::NeighbourTableTestAccess::isRetiring(nt, y));

  // When the flow ends, its neighbour goes too.
  h.now += 3600ULL * 1'000'000'000ULL;
  housekeeping(h, 4);
  EXPECT_EQ(ft.count(), 0u);
  EXPECT_EQ(nt.count(), 0u) << "neighbours left behind by expired flows";
  EXPECT_EQ(nt.portCount(kPortA), 0u);
}

}  // namespace
}  // namespace gwlb::dptest
