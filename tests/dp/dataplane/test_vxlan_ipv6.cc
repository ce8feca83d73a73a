// VXLAN groups (Azure's two tunnels) over an IPv6 underlay, through the real
// pipeline: IPv6 appliances get outer IPv6 headers from node.underlay_ipv6 to
// the tunnel's port with its VNI (every field checked), their returns are
// matched on the full address, the tunnel and the flow, the inner MTU is 20
// bytes smaller than over IPv4, and VXLAN over IPv6 from a router is never
// wrapped again. Frames here come from the test's own builder.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/dp/dataplane/vxlan_frames.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

using vxlan::kExtPort, vxlan::kIntPort, vxlan::kExtVni, vxlan::kIntVni;
constexpr size_t kOuter6 = 14 + 40 + 8 + 8;  // Ethernet, IPv6, UDP, VXLAN

const IpAddr kUs6 = ip("2001:db8:f::1");
const std::vector<IpAddr> kAppliances6 = {ip("2001:db8:f::11"), ip("2001:db8:f::12")};

using vxlan::frame, vxlan::Sent;

// Checks every outer field of a VXLAN-over-IPv6 packet the pipeline sent.
Sent checkVxlan6(const Bytes& out, const Bytes& inner_frame) {
  const Net& n = net();
  Sent s;
  EXPECT_GE(out.size(), kOuter6 + 14);
  if (out.size() < kOuter6 + 14) return s;
  EXPECT_EQ(slice(out, 0, 6), Bytes(n.gateway_mac.b.begin(), n.gateway_mac.b.end()));
  EXPECT_EQ(slice(out, 6, 6), Bytes(n.underlay_mac.b.begin(), n.underlay_mac.b.end()));
  EXPECT_EQ(get16(out, 12), kEthIpv6);
  const uint32_t w0 = get32(out, 14);
  EXPECT_EQ(w0 >> 28, 6u);
  s.label = w0 & 0xFFFFF;
  EXPECT_NE(s.label, 0u) << "a flow label (RFC 6438)";
  EXPECT_EQ(get16(out, 18), out.size() - 54) << "payload length";
  EXPECT_EQ(out[20], 17) << "next header UDP";
  EXPECT_EQ(out[21], 64) << "hop limit";
  EXPECT_EQ(slice(out, 22, 16), Bytes(kUs6.b.begin(), kUs6.b.end())) << "from node.underlay_ipv6";
  s.appliance = IpAddr::v6(out.data() + 38);
  EXPECT_NE(get16(out, 60), 0) << "IPv6 forbids a zero UDP checksum";
  vxlan::checkUdpVxlan(out, 54, kUs6, s, inner_frame);
  return s;
}

class Vxlan6 : public vxlan::Fixture {
 protected:
  void SetUp() override {
    HarnessOptions o;
    o.appliances = kAppliances6;
    o.underlay_ipv6 = kUs6;
    start(o, kUs6);
  }
};

TEST_F(Vxlan6, EachWayTakesItsTunnelOverIpv6) {
  Harness& h = *h_;
  Result r = h.send(fwd_);
  ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  Sent a = checkVxlan6(r.bytes, fwd_.unpadded());
  EXPECT_TRUE(a.appliance == kAppliances6[0] || a.appliance == kAppliances6[1]) << a.appliance.str();
  EXPECT_EQ(a.dport, kExtPort);
  EXPECT_EQ(a.vni, kExtVni);
  Result b = h.send(back_);
  ASSERT_EQ(b.verdict, Verdict::kAppliance) << describe(b);
  Sent c = checkVxlan6(b.bytes, back_.unpadded());
  EXPECT_EQ(c.appliance, a.appliance) << "both directions on one appliance";
  EXPECT_EQ(c.dport, kIntPort);
  EXPECT_EQ(c.vni, kIntVni);
  EXPECT_EQ(c.sport, a.sport) << "one source port per flow";
  EXPECT_EQ(c.label, a.label) << "one flow label per flow";
  expectCounterInvariant(h.counters(), "forward");
}

TEST_F(Vxlan6, ReturnsOverIpv6GoBackUnchangedAtL3) {
  Harness& h = *h_;
  Sent a = checkVxlan6(h.send(fwd_).bytes, fwd_.unpadded());
  Sent c = checkVxlan6(h.send(back_).bytes, back_.unpadded());
  // Bridged (the kernel's two VXLAN devices): back on the other tunnel.
  Result r1 = h.send(ret(a, kIntPort, kIntVni), kUnderlayPort);
  ASSERT_EQ(r1.verdict, Verdict::kRouter) << describe(r1);
  EXPECT_EQ(r1.bytes, fwd_.returned());
  Result r2 = h.send(ret(c, kExtPort, kExtVni), kUnderlayPort);
  ASSERT_EQ(r2.verdict, Verdict::kRouter) << describe(r2);
  EXPECT_EQ(r2.bytes, back_.returned());
  EXPECT_EQ(h.get(Counter::returned_vxlan_same_tunnel), 0u);
  // Reflected: back on the same tunnel, counted.
  Result r3 = h.send(ret(a, kExtPort, kExtVni), kUnderlayPort);
  ASSERT_EQ(r3.verdict, Verdict::kRouter) << describe(r3);
  EXPECT_EQ(h.get(Counter::returned_vxlan_same_tunnel), 1u);
  expectCounterInvariant(h.counters(), "returns");
}

TEST_F(Vxlan6, BadReturnsOverIpv6AreDroppedByName) {
  Harness& h = *h_;
  Sent a = checkVxlan6(h.send(fwd_).bytes, fwd_.unpadded());
  const IpAddr& other = a.appliance == kAppliances6[0] ? kAppliances6[1] : kAppliances6[0];
  // An address in the appliances' /64 whose 32-bit key is nobody's, and one
  // that folds to the same key as the flow's appliance (the full address decides).
  IpAddr stranger = a.appliance;
  stranger.b[15] ^= 0x99;
  IpAddr same_key = a.appliance;
  same_key.b[11] ^= 0x01;
  same_key.b[15] ^= 0x01;
  expectDrops({
      {"I flag clear", ret(a, kIntPort, kIntVni, 0x00), Counter::drop_vxlan_no_vni},
      {"internal port with external VNI", ret(a, kIntPort, kExtVni), Counter::drop_vxlan_bad_tunnel},
      {"from a stranger", frame(stranger, kUs6, a.sport, kIntPort, 0x08, kIntVni, a.inner),
       Counter::drop_vxlan_unknown_appliance},
      {"from an address with the appliance's key",
       frame(same_key, kUs6, a.sport, kIntPort, 0x08, kIntVni, a.inner), Counter::drop_vxlan_unknown_appliance},
      {"from the flow's other appliance", frame(other, kUs6, a.sport, kIntPort, 0x08, kIntVni, a.inner),
       Counter::drop_return_wrong_appliance},
  });
  // VXLAN over IPv6 from a router to one of our appliances: never wrapped again.
  const Net& n = net();
  Result loop = h.send(ether(n.fromA(), kEthIpv6,
                             ipv6(n.client6, a.appliance, 17, udp(n.client6, a.appliance, 5000, kExtPort, pattern(30)))),
                       kPortA);
  EXPECT_EQ(loop.drop, Counter::drop_loop_geneve) << describe(loop);
  expectCounterInvariant(h.counters(), "drops");
}

// The outer IPv6 header is 20 bytes longer than IPv4's: the "too big" error
// for an oversize inner packet tells the smaller MTU.
TEST_F(Vxlan6, InnerMtuFollowsTheIpv6Outer) {
  Harness& h = *h_;
  const Net& n = net();
  const size_t inner_mtu = 1500 - (kOuter6 - 14) - 14;
  auto flow = [&](size_t payload) {
    return Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43010, 443, pattern(payload), kTcpAck)),
                 kPortA};
  };
  Result fits = h.send(flow(inner_mtu - 40));
  ASSERT_EQ(fits.verdict, Verdict::kAppliance) << describe(fits);
  EXPECT_EQ(fits.bytes.size() - 14, 1500u) << "exactly the underlay MTU";
  Result big = h.send(flow(inner_mtu - 40 + 1));
  ASSERT_EQ(big.verdict, Verdict::kRouter) << describe(big);
  ASSERT_GE(big.bytes.size(), 42u);
  EXPECT_EQ(big.bytes[34], 3);
  EXPECT_EQ(big.bytes[35], 4) << "fragmentation needed";
  EXPECT_EQ(get16(big.bytes, 40), inner_mtu);
}

}  // namespace
}  // namespace gwlb::dptest
