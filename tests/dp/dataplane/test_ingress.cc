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
  auto badOn = [&](uint16_t port, std::string name, Bytes f, Counter why) {
    t.push_back({std::move(name), std::move(f), port, Verdict::kDrop, why});
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

  // Frames not addressed to the port's own MAC (issue 14 item 4): never
  // forwarded; broadcast and multicast only punted when the control thread
  // needs them (see the Punt tests below).
  {
    L2 other{mac("02:00:00:00:99:99"), n.router_a, {}};
    bad("unicast to another host's MAC", ether(other, kEthIpv4, pkt4), Counter::drop_not_our_mac);
    bad("unicast to the MAC of another of our ports", ether({n.our_b, n.router_a, {}}, kEthIpv4, pkt4),
        Counter::drop_not_our_mac);
    bad("unicast to another host's MAC, tagged",
        ether({mac("02:00:00:00:99:99"), n.router_a, 0x0064}, kEthIpv4, pkt4),
        Counter::drop_not_our_mac);
    L2 bcast{mac("ff:ff:ff:ff:ff:ff"), n.router_a, {}};
    IpAddr any = ip("0.0.0.0"), all = ip("255.255.255.255");
    bad("DHCP discover (broadcast)", ether(bcast, kEthIpv4, ipv4(any, all, 17, udp(any, all, 68, 67, pattern(240)))),
        Counter::drop_l2_broadcast);
    bad("ARP who-has another host (broadcast)", arpRequest(n.router_a, 0xC6336401, 0xC6336402),
        Counter::drop_l2_broadcast);
    IpAddr ospf_from = ip("198.51.100.1"), all_spf = ip("224.0.0.5");
    bad("OSPF hello to 224.0.0.5 (multicast)",
        ether({mac("01:00:5e:00:00:05"), n.router_a, {}}, kEthIpv4, ipv4(ospf_from, all_spf, 89, pattern(44))),
        Counter::drop_l2_multicast);
    bad("IPv6 neighbor solicitation for another address (solicited-node multicast)",
        neighborSolicitation(n.router_a, ip("fe80::a"), ip("2001:db8:ff::99")),
        Counter::drop_l2_multicast);
    IpAddr ll = ip("fe80::a"), all_nodes = ip("ff02::1");
    bad("IPv6 router advertisement to all nodes (multicast)",
        ether({multicastMac(all_nodes), n.router_a, {}}, kEthIpv6,
              ipv6(ll, all_nodes, 58, icmp6(ll, all_nodes, 134, 0, 0x40000000, pattern(8)), {},
                   V6{.hop_limit = 255})),
        Counter::drop_l2_multicast);
    bad("ARP to our MAC for another address", arp(1, n.our_a, n.router_a, 0xC6336401, {}, 0xC6336402),
        Counter::drop_arp_not_for_us);
    bad("IPv6 router advertisement to our MAC",
        ether(a, kEthIpv6, ipv6(ll, c6, 58, icmp6(ll, c6, 134, 0, 0x40000000, pattern(8)), {},
                                V6{.hop_limit = 255})),
        Counter::drop_nd_not_for_us);
    bad("IPv6 neighbor solicitation to our MAC for another address",
        neighborSolicitation(n.router_a, ll, s6, n.our_a), Counter::drop_nd_not_for_us);
    bad("IPv6 neighbor advertisement to our MAC",
        ether(a, kEthIpv6, ipv6(ll, c6, 58, icmp6(ll, c6, 136, 0, 0x60000000, Bytes(16, 1)), {},
                                V6{.hop_limit = 255})),
        Counter::drop_nd_not_for_us);
    bad("ICMPv6 echo to one of the node's IPv6 addresses",
        ether(a, kEthIpv6, ipv6(c6, ip("2001:db8:ff::1"), 58, icmp6Echo(c6, ip("2001:db8:ff::1"), true, 4, 4))),
        Counter::drop_not_for_us);
  }

  // Port roles (items 10 and 17): returns only where the appliances are,
  // nothing forwarded from there.
  badOn(kUnderlayPort, "plain IPv4 TCP on the appliance-facing port",
        ether({n.underlay_mac, n.gateway_mac, {}}, kEthIpv4, pkt4),
        Counter::drop_appliance_port_not_return);
  badOn(kUnderlayPort, "IPv6 on the appliance-facing port",
        ether({n.underlay_mac, n.gateway_mac, {}}, kEthIpv6, pkt6),
        Counter::drop_appliance_port_not_return);
  badOn(kUnderlayPort, "IPv4 DF packet too big for the underlay, appliance-facing port (no ICMP)",
        ether({n.underlay_mac, n.gateway_mac, {}}, kEthIpv4,
              ipv4(c4, s4, 6, tcp(c4, s4, 44003, 80, pattern(1900)))),
        Counter::drop_appliance_port_not_return);
  badOn(kUnderlayPort, "Geneve between two other hosts (an AWS GWLB frame) on the appliance-facing port",
        geneveFrame(n.underlay_mac, n.gateway_mac, ip("10.1.0.5"), ip("10.1.0.9"), 50001,
                    geneve({}), pkt4),
        Counter::drop_appliance_port_not_return);
  bad("Geneve to the underlay address from a router-side host",
      geneveFrame(n.our_a, n.router_a, c4, n.underlay, 50000, geneve({}), pkt4),
      Counter::drop_geneve_on_router_port);
  bad("Geneve to the underlay address claiming an appliance's source, router side",
      geneveFrame(n.our_a, n.router_a, n.appliances[0], n.underlay, 50000, geneve({}), pkt4),
      Counter::drop_geneve_on_router_port);

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
  return t;
}

TEST(Ingress, MalformedFramesAreDroppedWithTheirOwnCounter) {
  HarnessOptions o;
  o.ipv6_addresses = {ip("2001:db8:ff::1")};
  Harness h(o);
  const Net& n = net();
  Result first = h.send(Frame{n.fromA(), kEthIpv4,
                              ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 1, 2)),
                              kPortA});
  ASSERT_EQ(first.verdict, Verdict::kAppliance);
  // A router that sends our Geneve packet back sends it to our MAC.
  Bytes own = first.bytes;
  std::copy(n.our_a.b.begin(), n.our_a.b.end(), own.begin());
  for (const IngressCase& c : ingressCases(own)) {
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

// What the control thread needs is punted unchanged, whatever MAC it is sent
// to (broadcast ARP, solicited-node multicast); the same kinds it does not
// need are dropped (item 4; items 6 and 10 for appliance ARP by port).
TEST(Ingress, ArpAndNeighborSolicitationsForUsArePuntedOthersDropped) {
  HarnessOptions o;
  o.punt_ring = true;
  o.ipv6_addresses = {ip("2001:db8:ff::1"), ip("fe80::1")};
  Harness h(o);
  const Net& n = net();
  const MacAddr bcast = mac("ff:ff:ff:ff:ff:ff");
  const uint32_t app = 0x0A00000B;  // 10.0.0.11, an appliance
  const MacAddr app_mac = mac("02:00:00:00:11:11");
  struct Case {
    std::string name;
    Bytes frame;
    uint16_t port;
    Counter drop;  // kCount: punted
  };
  std::vector<Case> t = {
      {"who-has our underlay address, broadcast, router side",
       arpRequest(n.router_a, 0xC6336401, kUnderlayIp), kPortA, Counter::kCount},
      {"who-has our underlay address, broadcast, appliance side",
       arpRequest(app_mac, app, kUnderlayIp), kUnderlayPort, Counter::kCount},
      {"gratuitous ARP request from an appliance, appliance side",
       arp(1, bcast, app_mac, app, {}, app), kUnderlayPort, Counter::kCount},
      {"gratuitous ARP reply from an appliance, appliance side",
       arp(2, bcast, app_mac, app, bcast, app), kUnderlayPort, Counter::kCount},
      {"ARP reply from an appliance to our MAC", arp(2, n.underlay_mac, app_mac, app, n.underlay_mac, kUnderlayIp),
       kUnderlayPort, Counter::kCount},
      {"ARP request from an appliance for another host, broadcast (refreshes its entry)",
       arp(1, bcast, app_mac, app, {}, 0x0A000063), kUnderlayPort, Counter::kCount},
      {"gratuitous ARP claiming an appliance's address, router side",
       arp(1, bcast, n.router_a, app, {}, app), kPortA, Counter::drop_l2_broadcast},
      {"neighbor solicitation for a node address, solicited-node multicast",
       neighborSolicitation(n.router_a, ip("fe80::a"), ip("2001:db8:ff::1")), kPortA, Counter::kCount},
      {"neighbor solicitation for the link-local node address",
       neighborSolicitation(n.router_b, ip("fe80::b"), ip("fe80::1")), kPortB, Counter::kCount},
      {"neighbor solicitation for a node address, unicast probe to our MAC",
       neighborSolicitation(n.router_a, ip("fe80::a"), ip("2001:db8:ff::1"), n.our_a), kPortA,
       Counter::kCount},
      {"neighbor solicitation for a node address, tagged",
       neighborSolicitation(n.router_v, ip("fe80::c"), ip("2001:db8:ff::1"), std::nullopt, 7),
       kPortVlan, Counter::kCount},
      {"neighbor solicitation for another address, multicast",
       neighborSolicitation(n.router_a, ip("fe80::a"), ip("2001:db8:ff::2")), kPortA,
       Counter::drop_l2_multicast},
      {"neighbor solicitation for a node address to another host's MAC",
       neighborSolicitation(n.router_a, ip("fe80::a"), ip("2001:db8:ff::1"), mac("02:00:00:00:99:99")),
       kPortA, Counter::drop_not_our_mac},
  };
  uint64_t punted = 0;
  for (const Case& c : t) {
    SCOPED_TRACE(c.name);
    Result r = h.send(c.frame, c.port);
    if (c.drop == Counter::kCount) {
      ++punted;
      ASSERT_EQ(r.verdict, Verdict::kPunt) << describe(r);
      EXPECT_EQ(r.bytes, c.frame);
      EXPECT_EQ(r.port, c.port);
    } else {
      ASSERT_EQ(r.verdict, Verdict::kDrop) << describe(r);
      EXPECT_EQ(r.drop, c.drop) << describe(r);
    }
  }
  EXPECT_EQ(h.get(Counter::punted), punted);
  EXPECT_EQ(h.get(Counter::encapsulated), 0u) << "nothing of it reached an appliance";
}

// Without node.ipv6_addresses every neighbor solicitation is someone else's.
TEST(Ingress, NeighborSolicitationsWithoutNodeAddressesAreDropped) {
  HarnessOptions o;
  o.punt_ring = true;
  Harness h(o);
  const Net& n = net();
  Result r = h.send(neighborSolicitation(n.router_a, ip("fe80::a"), ip("2001:db8:ff::1")), kPortA);
  ASSERT_EQ(r.verdict, Verdict::kDrop) << describe(r);
  EXPECT_EQ(r.drop, Counter::drop_l2_multicast);
  r = h.send(neighborSolicitation(n.router_a, ip("fe80::a"), ip("2001:db8:ff::1"), n.our_a), kPortA);
  ASSERT_EQ(r.verdict, Verdict::kDrop) << describe(r);
  EXPECT_EQ(r.drop, Counter::drop_nd_not_for_us);
}

// Roles where ports are shared: role "both" on every port behaves as the
// one-arm gateway did before roles (returns and forwarding on any port);
// explicit roles move them.
TEST(Ingress, PortRolesDecideWhichPathAPortFeeds) {
  const Net& n = net();
  const Frame flow{n.fromA(), kEthIpv4,
                   ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 31000, 443)), kPortA};
  {
    HarnessOptions o;
    for (uint16_t p = 0; p < 4; ++p) o.ports.push_back({p, PortRole::kBoth, std::nullopt});
    Harness h(o);
    Result fwd = h.send(flow);
    ASSERT_EQ(fwd.verdict, Verdict::kAppliance) << describe(fwd);
    // The reply comes back on a router port (all ports are "both") ...
    Bytes back = reflect(fwd.bytes);
    std::copy(n.our_b.b.begin(), n.our_b.b.end(), back.begin());
    Result r = h.send(back, kPortB);
    ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
    EXPECT_EQ(r.bytes, flow.returned());
    // ... and traffic on the underlay port is forwarded.
    Frame u{{n.underlay_mac, n.gateway_mac, {}}, kEthIpv4,
            ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 31001, 53)), kUnderlayPort};
    EXPECT_EQ(h.send(u).verdict, Verdict::kAppliance);
  }
  {
    // Port B faces the appliances too: returns accepted there, not on A.
    HarnessOptions o;
    o.ports = {{kPortB, PortRole::kAppliance, std::nullopt}};
    Harness h(o);
    Result fwd = h.send(flow);
    ASSERT_EQ(fwd.verdict, Verdict::kAppliance) << describe(fwd);
    Bytes on_b = reflect(fwd.bytes), on_a = on_b;
    std::copy(n.our_b.b.begin(), n.our_b.b.end(), on_b.begin());
    std::copy(n.our_a.b.begin(), n.our_a.b.end(), on_a.begin());
    Result a = h.send(on_a, kPortA);
    ASSERT_EQ(a.verdict, Verdict::kDrop);
    EXPECT_EQ(a.drop, Counter::drop_geneve_on_router_port);
    EXPECT_EQ(h.send(on_b, kPortB).verdict, Verdict::kRouter);
    Result fb = h.send(Frame{n.fromB(), kEthIpv4, flow.l3, kPortB});
    ASSERT_EQ(fb.verdict, Verdict::kDrop);
    EXPECT_EQ(fb.drop, Counter::drop_appliance_port_not_return);
  }
  {
    // A configured MAC replaces the device's.
    HarnessOptions o;
    o.ports = {{kPortA, std::nullopt, mac("02:00:00:00:aa:aa")}};
    Harness h(o);
    Result old_mac = h.send(flow);
    ASSERT_EQ(old_mac.verdict, Verdict::kDrop);
    EXPECT_EQ(old_mac.drop, Counter::drop_not_our_mac);
    Frame f = flow;
    f.l2.dst = mac("02:00:00:00:aa:aa");
    EXPECT_EQ(h.send(f).verdict, Verdict::kAppliance);
  }
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
