// The kernel exception path (node.exception_path, docs/exception-path.md):
// with the exception ring set, frames to the node's own addresses that the
// dataplane does not handle are queued unchanged for the port's kernel tap;
// what the dataplane does handle (Geneve to us, ARP and neighbor solicitations
// it answers, traffic to inspect) never is. Without the ring they are dropped
// as before (test_ingress.cc: drop_not_for_us).
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <string>
#include <vector>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

const IpAddr kNode6 = ip("2001:db8:ff::1");

HarnessOptions withTap() {
  HarnessOptions o;
  o.punt_ring = true;
  o.exception_ring = true;
  o.ipv6_addresses = {kNode6};
  return o;
}

struct Case {
  std::string name;
  Bytes frame;
  uint16_t port;
  Verdict verdict;
  Counter drop = Counter::kCount;
};

TEST(ExceptionPath, FramesForTheNodeGoToTheKernelOthersDoNot) {
  Harness h(withTap());
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &us = n.underlay;
  const L2 a = n.fromA();
  const L2 from_gw{n.underlay_mac, n.gateway_mac, {}};
  const IpAddr ll = ip("fe80::a");
  const std::vector<Case> t = {
      {"ICMP echo request to the underlay address",
       ether(a, kEthIpv4, ipv4(c4, us, 1, icmp4Echo(true, 7, 1, pattern(32)))), kPortA, Verdict::kKernel},
      {"TCP SYN to the underlay address, port 179 (BGP)",
       ether(a, kEthIpv4, ipv4(c4, us, 6, tcp(c4, us, 40000, 179))), kPortA, Verdict::kKernel},
      {"UDP to the underlay address, port 3784 (BFD), tagged",
       ether(n.fromVlan(7), kEthIpv4, ipv4(c4, us, 17, udp(c4, us, 49152, 3784, pattern(24)))),
       kPortVlan, Verdict::kKernel},
      {"TCP to the underlay address on the appliance port (SSH from the underlay)",
       ether(from_gw, kEthIpv4, ipv4(n.appliances[0], us, 6, tcp(n.appliances[0], us, 50000, 22))),
       kUnderlayPort, Verdict::kKernel},
      {"UDP to the underlay address, port 6082",
       ether(a, kEthIpv4, ipv4(c4, us, 17, udp(c4, us, 6081, 6082))), kPortA, Verdict::kKernel},
      {"ICMPv6 echo to a node IPv6 address",
       ether(a, kEthIpv6, ipv6(c6, kNode6, 58, icmp6Echo(c6, kNode6, true, 4, 4))), kPortA,
       Verdict::kKernel},
      {"IPv6 neighbor advertisement to a node address (answers the kernel's solicitation)",
       ether(a, kEthIpv6, ipv6(ll, kNode6, 58, icmp6(ll, kNode6, 136, 0, 0x60000000, Bytes(16, 1)), {},
                               V6{.hop_limit = 255})),
       kPortA, Verdict::kKernel},
      // What the dataplane handles itself.
      {"ARP request for the underlay address", arpRequest(n.router_a, 0xC6336401, kUnderlayIp), kPortA,
       Verdict::kPunt},
      {"neighbor solicitation for a node address", neighborSolicitation(n.router_a, ll, kNode6), kPortA,
       Verdict::kPunt},
      {"Geneve to the underlay address on a router port",
       geneveFrame(n.our_a, n.router_a, c4, us, 5000, geneve({.vni = kVni}), pattern(20)), kPortA,
       Verdict::kDrop, Counter::drop_geneve_on_router_port},
      {"Geneve to the underlay address from an unknown host",
       geneveFrame(n.underlay_mac, n.gateway_mac, ip("10.9.9.9"), us, 5000, geneve({.vni = kVni}),
                   pattern(20)),
       kUnderlayPort, Verdict::kDrop, Counter::drop_geneve_unknown_appliance},
      {"neighbor advertisement to another address", 
       ether(a, kEthIpv6, ipv6(ll, c6, 58, icmp6(ll, c6, 136, 0, 0x60000000, Bytes(16, 1)), {},
                               V6{.hop_limit = 255})),
       kPortA, Verdict::kDrop, Counter::drop_nd_not_for_us},
      {"traffic through the gateway", ether(a, kEthIpv4, ipv4(c4, s4, 6, tcp(c4, s4, 1000, 80))), kPortA,
       Verdict::kAppliance},
  };
  uint64_t to_kernel = 0;
  for (const Case& c : t) {
    SCOPED_TRACE(c.name);
    Result r = h.send(c.frame, c.port);
    ASSERT_EQ(r.verdict, c.verdict) << describe(r);
    if (c.verdict == Verdict::kKernel) {
      ++to_kernel;
      EXPECT_EQ(r.bytes, c.frame) << "the kernel gets the frame as it arrived";
      EXPECT_EQ(r.port, c.port) << "the ingress port says which tap";
    }
    if (c.verdict == Verdict::kDrop) {
      EXPECT_EQ(r.drop, c.drop) << describe(r);
    }
  }
  EXPECT_EQ(h.get(Counter::punted_exception), to_kernel);
  EXPECT_EQ(h.get(Counter::drop_not_for_us), 0u);
  expectCounterInvariant(h.counters(), "exception path");
}

// A full exception ring (the control thread behind, a flood to our address)
// costs the worker one failed enqueue per frame: counted, never waited for.
TEST(ExceptionPath, FullRingIsCountedNotWaitedFor) {
  HarnessOptions o = withTap();
  o.exception_ring_size = 8;  // holds 7
  Harness h(o);
  const Net& n = net();
  rte_ring* ring = h.dataplane().exception;
  ASSERT_NE(ring, nullptr);
  std::vector<rte_mbuf*> filler;
  while (rte_ring_free_count(ring) > 0) {
    rte_mbuf* m = rte_pktmbuf_alloc(testPool());
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(rte_ring_enqueue(ring, m), 0);
    filler.push_back(m);
  }
  Bytes echo = ether(n.fromA(), kEthIpv4, ipv4(n.client4, n.underlay, 1, icmp4Echo(true, 1, 1)));
  std::vector<std::pair<Bytes, uint16_t>> flood(200, {echo, kPortA});
  std::vector<Result> out = h.sendBurst(flood);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(h.get(Counter::drop_exception_queue_full), 200u);
  EXPECT_EQ(h.get(Counter::punted_exception), 0u);
  expectCounterInvariant(h.counters(), "flood");
  // The control thread catches up: the next frame goes through.
  void* obj;
  while (rte_ring_dequeue(ring, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
  Result r = h.send(echo, kPortA);
  EXPECT_EQ(r.verdict, Verdict::kKernel) << describe(r);
}

}  // namespace
}  // namespace gwlb::dptest
