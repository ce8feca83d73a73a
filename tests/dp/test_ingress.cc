// Malformed and special frames arriving from the routers (and the underlay):
// each is dropped with exactly its own counter, or punted. Boundary cases just
// inside the limits are forwarded, so each limit is pinned from both sides.
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

struct IngressCase {
  std::string name;
  Bytes frame;
  uint16_t port = kPortA;
  Verdict verdict = Verdict::kDrop;
  Counter drop = Counter::kCount;
};

std::vector<IngressCase> ingressCases(const Bytes& own_geneve) {
  const Net& n = net();
  const IpAddr &c4 = n.client4, &s4 = n.server4, &c6 = n.client6, &s6 = n.server6;
  const L2 a = n.fromA();
  std::vector<IngressCase> t;
  auto bad = [&](std::string name, Bytes f, Counter why) {
    t.push_back({std::move(name), std::move(f), kPortA, Verdict::kDrop, why});
  };
  auto ok = [&](std::string name, Bytes f) {
    t.push_back({std::move(name), std::move(f), kPortA, Verdict::kAppliance, Counter::kCount});
  };

  const Bytes tcp4 = tcp(c4, s4, 44000, 80, pattern(12));
  const Bytes udp4 = udp(c4, s4, 44001, 53, pattern(12));
  const Bytes pkt4 = ipv4(c4, s4, 6, tcp4);
  const Bytes pkt6 = ipv6(c6, s6, 6, tcp(c6, s6, 44002, 80));
  const Bytes frame4 = ether(a, kEthIpv4, pkt4);

  // L2.
  bad("empty frame", {}, Counter::drop_truncated_l2);
  bad("13 bytes: Ethernet header cut short", slice(frame4, 0, 13), Counter::drop_truncated_l2);
  {
    Bytes f = ether({a.dst, a.src, 0x0064}, kEthIpv4, {});
    bad("802.1Q tag cut short", slice(f, 0, 16), Counter::drop_truncated_l2);
    bad("802.1Q tag and no ethertype after it", slice(f, 0, 17), Counter::drop_truncated_l2);
  }
  bad("unknown ethertype (LLDP)", ether(a, 0x88CC, pattern(46)),
      Counter::drop_unsupported_ethertype);
  bad("802.1Q tag around an unknown ethertype", ether({a.dst, a.src, 5}, 0x88B5, pattern(46)),
      Counter::drop_unsupported_ethertype);
  {
    Bytes inner_tag;
    append16(inner_tag, 0x0065);
    append16(inner_tag, kEthIpv4);
    append(inner_tag, pkt4);
    bad("double 802.1Q tag", ether({a.dst, a.src, 0x0064}, kEthVlan, inner_tag),
        Counter::drop_nested_vlan);
    Bytes q;
    append(q, Bytes(a.dst.b.begin(), a.dst.b.end()));
    append(q, Bytes(a.src.b.begin(), a.src.b.end()));
    append16(q, kEthQinQ);
    append16(q, 0x0064);
    append16(q, kEthVlan);
    append16(q, 0x0065);
    append16(q, kEthIpv4);
    append(q, pkt4);
    bad("802.1ad + 802.1Q (QinQ)", q, Counter::drop_nested_vlan);
  }

  // IPv4 header.
  bad("IPv4 header cut short (19 bytes)", ether(a, kEthIpv4, slice(pkt4, 0, 19)),
      Counter::drop_truncated_l3);
  bad("IPv6 in an IPv4 ethertype", ether(a, kEthIpv4, pkt6), Counter::drop_bad_ip_version);
  bad("IPv4 in an IPv6 ethertype", ether(a, kEthIpv6, pkt4),
      Counter::drop_bad_ip_version);
  {
    V4 o;
    o.ihl_words = 4;
    bad("IPv4 IHL 4 (< 5)", ether(a, kEthIpv4, ipv4(c4, s4, 6, tcp4, o)), Counter::drop_bad_ihl);
    o.ihl_words = 0;
    bad("IPv4 IHL 0", ether(a, kEthIpv4, ipv4(c4, s4, 6, tcp4, o)), Counter::drop_bad_ihl);
    V4 p;
    p.ihl_words = 15;  // 60 bytes of header in a 20-byte packet
    bad("IPv4 IHL past the packet", ether(a, kEthIpv4, ipv4(c4, s4, 6, {}, p)),
        Counter::drop_bad_ihl);
  }
  {
    V4 o;
    o.total_len = int(pkt4.size() + 1);
    bad("IPv4 total length one past the frame", ether(a, kEthIpv4, ipv4(c4, s4, 6, tcp4, o)),
        Counter::drop_bad_ip_length);
    o.total_len = 19;
    bad("IPv4 total length below the header", ether(a, kEthIpv4, ipv4(c4, s4, 6, tcp4, o)),
        Counter::drop_bad_ip_length);
  }
  ok("IPv4 total length shorter than the frame (Ethernet trailer)",
     ether(a, kEthIpv4, pkt4, pkt4.size() + 14 + 20));

  // IPv6 header and extension headers.
  bad("IPv6 header cut short (39 bytes)", ether(a, kEthIpv6, slice(pkt6, 0, 39)),
      Counter::drop_truncated_l3);
  {
    V6 o;
    o.payload_len = int(pkt6.size() - 40 + 1);
    bad("IPv6 payload length one past the frame",
        ether(a, kEthIpv6, ipv6(c6, s6, 6, tcp(c6, s6, 44002, 80), {}, o)),
        Counter::drop_bad_ip_length);
  }
  {
    Bytes p = ipv6(c6, s6, 17, udp(c6, s6, 1, 2), {hopByHop(1)});
    p[41] = 5;  // hop-by-hop claims 48 bytes, the packet has 16 after the fixed header
    bad("IPv6 hop-by-hop header running past the packet", ether(a, kEthIpv6, p),
        Counter::drop_ipv6_ext_header_chain);
    Bytes q = ipv6(c6, s6, 59, {}, {destOpts(1)});
    q.resize(q.size() - 2);  // destination options cut short
    q[5] = uint8_t(q.size() - 40);
    bad("IPv6 destination options cut short", ether(a, kEthIpv6, q),
        Counter::drop_ipv6_ext_header_chain);
  }
  {
    std::vector<Ext> eight(8, destOpts(1)), nine(9, destOpts(1));
    ok("IPv6 with 8 extension headers (the limit)",
       ether(a, kEthIpv6, ipv6(c6, s6, 17, udp(c6, s6, 1, 2), eight)));
    bad("IPv6 with 9 extension headers (past the limit)",
        ether(a, kEthIpv6, ipv6(c6, s6, 17, udp(c6, s6, 1, 2), nine)),
        Counter::drop_ipv6_ext_header_chain);
  }

  // Transport headers.
  bad("TCP header cut short (19 bytes)", ether(a, kEthIpv4, ipv4(c4, s4, 6, slice(tcp4, 0, 19))),
      Counter::drop_truncated_l4);
  {
    Bytes t4 = tcp4;
    t4[12] = 0x40;  // data offset 4 words
    bad("TCP data offset below 5", ether(a, kEthIpv4, ipv4(c4, s4, 6, t4)),
        Counter::drop_truncated_l4);
    t4[12] = 0xF0;  // 60 bytes of header in a 32-byte segment
    bad("TCP data offset past the segment", ether(a, kEthIpv4, ipv4(c4, s4, 6, t4)),
        Counter::drop_truncated_l4);
  }
  bad("UDP header cut short (7 bytes)", ether(a, kEthIpv4, ipv4(c4, s4, 17, slice(udp4, 0, 7))),
      Counter::drop_truncated_l4);
  bad("ICMP header cut short (7 bytes)",
      ether(a, kEthIpv4, ipv4(c4, s4, 1, slice(icmp4Echo(true, 1, 1), 0, 7))),
      Counter::drop_truncated_l4);
  bad("IPv6 packet cut 10 bytes into its TCP header", ether(a, kEthIpv6, slice(pkt6, 0, 50)),
      Counter::drop_bad_ip_length);
  bad("IPv6 TCP segment of 10 bytes",
      ether(a, kEthIpv6, ipv6(c6, s6, 6, slice(tcp(c6, s6, 1, 2), 0, 10))),
      Counter::drop_truncated_l4);
  bad("IPv6 UDP behind an extension header, cut short",
      ether(a, kEthIpv6, ipv6(c6, s6, 17, slice(udp(c6, s6, 1, 2), 0, 6), {hopByHop(1)})),
      Counter::drop_truncated_l4);

  // ICMP errors whose quote cannot be keyed.
  bad("ICMP error quoting 10 bytes of an IP header",
      ether(a, kEthIpv4, ipv4(s4, c4, 1, icmp4(3, 1, 0, slice(pkt4, 0, 10)))),
      Counter::drop_icmp_error_truncated);
  bad("ICMP error quoting an IPv6 header",
      ether(a, kEthIpv4, ipv4(s4, c4, 1, icmp4(3, 1, 0, slice(pkt6, 0, 48)))),
      Counter::drop_icmp_error_truncated);
  bad("ICMP error quoting the IP header without its ports",
      ether(a, kEthIpv4, ipv4(s4, c4, 1, icmp4(11, 0, 0, slice(pkt4, 0, 22)))),
      Counter::drop_icmp_error_truncated);
  bad("ICMP error with nothing quoted", ether(a, kEthIpv4, ipv4(s4, c4, 1, icmp4(3, 1, 0, {}))),
      Counter::drop_icmp_error_truncated);

  // Fragments.
  {
    V4 o;
    o.df = false;
    o.mf = true;
    o.frag_offset = 65528;
    bad("IPv4 fragment ending past 65535", ether(a, kEthIpv4, ipv4(c4, s4, 17, pattern(16), o)),
        Counter::drop_bad_fragment);
  }

  // Underlay traffic on the wrong side, or not for us.
  bad("our own Geneve packet back from the router side", own_geneve, Counter::drop_loop_geneve);
  bad("UDP to the underlay address, not port 6081",
      ether(a, kEthIpv4, ipv4(c4, n.underlay, 17, udp(c4, n.underlay, 6081, 6082))),
      Counter::drop_not_for_us);
  bad("TCP to the underlay address",
      ether(a, kEthIpv4, ipv4(c4, n.underlay, 6, tcp(c4, n.underlay, 1234, 6081))),
      Counter::drop_not_for_us);
  bad("ICMP echo to the underlay address",
      ether(a, kEthIpv4, ipv4(c4, n.underlay, 1, icmp4Echo(true, 5, 5))), Counter::drop_not_for_us);
  bad("Geneve to the underlay address from a router-side host",
      geneveFrame(n.our_a, n.router_a, c4, n.underlay, 50000, geneve({}), pkt4),
      Counter::drop_geneve_unknown_appliance);
  return t;
}

TEST(Ingress, MalformedFramesAreDroppedWithTheirOwnCounter) {
  Harness h;
  const Net& n = net();
  Result first = h.send(Frame{n.fromA(), kEthIpv4,
                              ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 1, 2)),
                              kPortA});
  ASSERT_EQ(first.verdict, Verdict::kAppliance);
  for (const IngressCase& c : ingressCases(first.bytes)) {
    SCOPED_TRACE(c.name);
    Result r = h.send(c.frame, c.port);
    EXPECT_EQ(r.verdict, c.verdict) << describe(r);
    if (c.verdict == Verdict::kDrop) {
      EXPECT_EQ(r.drop, c.drop) << describe(r);
    }
  }
  expectCounterInvariant(h.counters(), "ingress table");
}

TEST(Ingress, ArpWithoutPuntRingIsDroppedAsQueueFull) {
  Harness h;
  const Net& n = net();
  Result r = h.send(arpRequest(n.router_a, 0xC6336401, kUnderlayIp), kPortA);
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_punt_queue_full);
  EXPECT_EQ(h.get(Counter::punted), 0u);
}

TEST(Ingress, ArpIsPuntedToTheControlRingUnchanged) {
  HarnessOptions o;
  o.punt_ring = true;
  Harness h(o);
  const Net& n = net();
  Bytes arp = arpRequest(n.gateway_mac, 0x0A00000B, kUnderlayIp);
  Result r = h.send(arp, kUnderlayPort);
  ASSERT_EQ(r.verdict, Verdict::kPunt) << describe(r);
  EXPECT_EQ(r.bytes, arp);
  EXPECT_EQ(r.port, kUnderlayPort) << "the ingress port stays on the punted mbuf";
  Bytes tagged = ether({mac("ff:ff:ff:ff:ff:ff"), n.router_v, 0x0007}, kEthArp, slice(arp, 14, 28));
  r = h.send(tagged, kPortVlan);
  ASSERT_EQ(r.verdict, Verdict::kPunt) << describe(r);
  EXPECT_EQ(r.bytes, tagged);
  EXPECT_EQ(h.get(Counter::punted), 2u);
}

TEST(Ingress, ChainedMbufIsDropped) {
  Harness h;
  const Net& n = net();
  Bytes f = ether(n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 1, 2)));
  rte_mbuf* head = rte_pktmbuf_alloc(testPool());
  rte_mbuf* tail = rte_pktmbuf_alloc(testPool());
  ASSERT_TRUE(head && tail);
  std::memcpy(rte_pktmbuf_append(head, 20), f.data(), 20);
  std::memcpy(rte_pktmbuf_append(tail, uint16_t(f.size() - 20)), f.data() + 20, f.size() - 20);
  ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
  head->port = kPortA;
  Result r = h.sendMbuf(head);
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_multi_segment);
}

TEST(Ingress, NoSnapshotDropsEverything) {
  Harness h;
  const Net& n = net();
  const dp::Snapshot* s = h.dataplane().snapshot.exchange(nullptr);
  Result r = h.send(Frame{n.fromA(), kEthIpv4,
                          ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 1, 2)), kPortA});
  h.dataplane().snapshot.store(s);
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_no_server_group);
}

TEST(Ingress, UnresolvedApplianceMacDrops) {
  HarnessOptions o;
  o.gateway_mac = false;
  Harness h(o);
  const Net& n = net();
  Result r = h.send(Frame{n.fromA(), kEthIpv4,
                          ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 1, 2)), kPortA});
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_neighbour_unresolved);
}

}  // namespace
}  // namespace gwlb::dptest
