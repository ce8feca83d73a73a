// What the VXLAN dp tests (test_vxlan.cc over IPv4, test_vxlan_ipv6.cc over
// IPv6) share: Azure's two tunnels as the lab config names them, the VXLAN
// header (flags, 24 reserved bits, VNI, 8 reserved bits) built by the tests
// themselves, not by common/, so a mistake there cannot hide one here; the
// check of what follows the outer IP header of a packet the pipeline sent
// (UDP, VXLAN, the inner frame), and the fixture both families run on: one
// TCP connection's first packet and its reply, returns built from what was
// sent, bad returns dropped by name.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest::vxlan {

constexpr uint16_t kExtPort = 10801, kIntPort = 10800;
constexpr uint32_t kExtVni = 801, kIntVni = 800;

// The UDP payload of a VXLAN packet: its 8-byte header, then the inner frame.
inline Bytes payload(uint8_t flags, uint32_t vni, const Bytes& inner) {
  Bytes vx = {flags, 0, 0, 0};
  append32(vx, vni << 8);
  append(vx, inner);
  return vx;
}

// Outer Ethernet / IPv4 (DF) or IPv6, by the addresses' family / UDP / VXLAN
// (flags, VNI) around an inner frame, as an appliance on the underlay sends it.
inline Bytes frame(const IpAddr& from, const IpAddr& to, uint16_t sport, uint16_t dport, uint8_t flags,
                   uint32_t vni, const Bytes& inner) {
  const Net& n = net();
  Bytes l4 = udp(from, to, sport, dport, payload(flags, vni, inner));
  if (from.isV4()) return ether({n.underlay_mac, n.gateway_mac, {}}, kEthIpv4, ipv4(from, to, 17, l4));
  return ether({n.underlay_mac, n.gateway_mac, {}}, kEthIpv6, ipv6(from, to, 17, l4));
}

// What a packet the pipeline sent says, and what a return needs.
struct Sent {
  IpAddr appliance;
  uint16_t sport = 0, dport = 0;
  uint32_t vni = 0, label = 0;  // label: the outer IPv6 flow label
  Bytes inner;
};

// Checks the UDP header at `at` (its checksum over the pseudo-header from
// `from` to s.appliance), the VXLAN header after it and the inner frame;
// fills s's ports, VNI and inner frame.
inline void checkUdpVxlan(const Bytes& out, size_t at, const IpAddr& from, Sent& s, const Bytes& inner_frame) {
  s.sport = get16(out, at);
  s.dport = get16(out, at + 2);
  EXPECT_GE(s.sport, 49152);
  EXPECT_EQ(get16(out, at + 4), out.size() - at) << "UDP length";
  EXPECT_TRUE(checksumOk(out.data() + at, out.size() - at, pseudoSum(from, s.appliance, 17, out.size() - at)))
      << "UDP checksum";
  EXPECT_EQ(out[at + 8], 0x08) << "VXLAN flags: I only";
  EXPECT_EQ(out[at + 9], 0);
  EXPECT_EQ(get16(out, at + 10), 0) << "VXLAN reserved";
  s.vni = get32(out, at + 12) >> 8;
  EXPECT_EQ(out[at + 15], 0) << "VXLAN reserved byte";
  s.inner = slice(out, at + 16, out.size() - at - 16);
  EXPECT_EQ(s.inner, inner_frame) << "the frame as received, inside\n got  " << hex(s.inner)
                                  << "\n want " << hex(inner_frame);
}

// A VXLAN group's pipeline (o, with encapsulation vxlan) and the flow both
// families send: a TCP connection's first packet from A, its reply from B.
class Fixture : public ::testing::Test {
 protected:
  // `us`: the underlay address returns are sent to.
  void start(HarnessOptions o, const IpAddr& us) {
    o.encapsulation = ctl::Encapsulation::kVxlan;
    us_ = us;
    h_ = std::make_unique<Harness>(o);
    const Net& n = net();
    fwd_ = Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43000, 443, pattern(64))), kPortA};
    back_ = Frame{n.fromB(), kEthIpv4,
                  ipv4(n.server4, n.client4, 6, tcp(n.server4, n.client4, 443, 43000, pattern(32), kTcpAck | kTcpSyn)),
                  kPortB};
  }
  // The appliance's return of what it was sent, on the tunnel (dport, vni).
  Bytes ret(const Sent& s, uint16_t dport, uint32_t vni, uint8_t flags = 0x08) const {
    return frame(s.appliance, us_, s.sport, dport, flags, vni, s.inner);
  }
  struct Drop {
    const char* name;
    Bytes pkt;
    Counter drop;
  };
  // Each packet, arriving from the underlay, is dropped and counted by its name.
  void expectDrops(const std::vector<Drop>& cases) {
    Harness& h = *h_;
    for (const Drop& k : cases) {
      SCOPED_TRACE(k.name);
      uint64_t before = h.get(k.drop);
      Result r = h.send(k.pkt, kUnderlayPort);
      EXPECT_EQ(r.verdict, Verdict::kDrop) << describe(r);
      EXPECT_EQ(r.drop, k.drop) << describe(r);
      EXPECT_EQ(h.get(k.drop), before + 1);
    }
  }
  std::unique_ptr<Harness> h_;
  Frame fwd_, back_;
  IpAddr us_;
};

}  // namespace gwlb::dptest::vxlan
