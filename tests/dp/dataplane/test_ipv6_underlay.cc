// Geneve over an IPv6 underlay through the real pipeline: appliances with
// IPv6 addresses get outer IPv6 headers from node.underlay_ipv6 (every field
// checked), their returns are matched on the full address, cookie and flow,
// the inner MTU is 20 bytes smaller than over IPv4, and our own Geneve is
// never wrapped again; the appliances' neighbor advertisements reach the
// control thread from their port only. Both Geneve formats.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

const IpAddr kUs6 = ip("2001:db8:f::1");
const std::vector<IpAddr> kAppliances6 = {ip("2001:db8:f::11"), ip("2001:db8:f::12")};

// The appliance's answer: the packet as it was sent, MACs and addresses swapped.
Bytes reflect6(const Bytes& g) {
  Bytes r = g;
  for (size_t i = 0; i < 6; ++i) std::swap(r.at(i), r.at(6 + i));
  for (size_t i = 0; i < 16; ++i) std::swap(r.at(22 + i), r.at(38 + i));
  return r;
}

class Ipv6Underlay : public ::testing::TestWithParam<ctl::GeneveFormat> {
 protected:
  HarnessOptions opts() const {
    HarnessOptions o;
    o.format = GetParam();
    o.appliances = kAppliances6;
    o.underlay_ipv6 = kUs6;
    o.punt_ring = true;
    return o;
  }
  bool aws() const { return GetParam() == ctl::GeneveFormat::kAws; }
  size_t outerLen() const { return 14 + 40 + 8 + 8 + (aws() ? 32 : 0); }
  Frame flow(size_t payload = 64, uint8_t tos = 0) const {
    const Net& n = net();
    V4 o;
    o.tos = tos;
    return Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43000, 443, pattern(payload), kTcpAck), o),
                 kPortA};
  }
};

TEST_P(Ipv6Underlay, ForwardedPacketsCarryAnOuterIpv6HeaderFieldByField) {
  Harness h(opts());
  const Frame f = flow(100, 0xB9);  // DSCP 46 (EF), ECN CE
  Result r = h.send(f);
  ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  const Bytes& b = r.bytes;
  const Bytes inner = expectedInner(h, f);
  ASSERT_EQ(b.size(), outerLen() + inner.size());
  EXPECT_EQ(r.port, kUnderlayPort);
  EXPECT_EQ(slice(b, 0, 6), Bytes(net().gateway_mac.b.begin(), net().gateway_mac.b.end()));
  EXPECT_EQ(slice(b, 6, 6), Bytes(net().underlay_mac.b.begin(), net().underlay_mac.b.end()));
  EXPECT_EQ(get16(b, 12), kEthIpv6);
  const uint32_t w0 = get32(b, 14);
  EXPECT_EQ(w0 >> 28, 6u);
  EXPECT_EQ((w0 >> 20) & 0xFF, 0xB8u) << "DSCP copied from the inner header, ECN Not-ECT";
  EXPECT_NE(w0 & 0xFFFFF, 0u) << "a flow label";
  EXPECT_EQ(get16(b, 18), b.size() - 54) << "payload length";
  EXPECT_EQ(b[20], 17) << "next header UDP";
  EXPECT_EQ(b[21], 64) << "hop limit";
  EXPECT_EQ(slice(b, 22, 16), Bytes(kUs6.b.begin(), kUs6.b.end())) << "from node.underlay_ipv6";
  const IpAddr to = IpAddr::v6(b.data() + 38);
  EXPECT_TRUE(to == kAppliances6[0] || to == kAppliances6[1]) << to.str();
  EXPECT_GE(get16(b, 54), 49152);
  EXPECT_EQ(get16(b, 56), 6081);
  EXPECT_EQ(get16(b, 58), b.size() - 54);
  EXPECT_NE(get16(b, 60), 0);
  EXPECT_TRUE(checksumOk(b.data() + 54, b.size() - 54, pseudoSum(kUs6, to, 17, b.size() - 54)))
      << "UDP checksum over the IPv6 pseudo-header";
  EXPECT_EQ(b[62], aws() ? 8 : 0) << "Geneve version 0, option length";
  EXPECT_EQ(get16(b, 64), aws() ? kEthIpv4 : kEthTeb);
  EXPECT_EQ(get32(b, 66) >> 8, kVni);
  EXPECT_EQ(slice(b, outerLen(), inner.size()), inner);

  // The same flow keeps its appliance, source port and label.
  Result again = h.send(f);
  ASSERT_EQ(again.verdict, Verdict::kAppliance);
  EXPECT_EQ(slice(again.bytes, 14, 4), slice(b, 14, 4));
  EXPECT_EQ(slice(again.bytes, 38, 18), slice(b, 38, 18));
}

TEST_P(Ipv6Underlay, ReturnsAreCheckedAgainstTheFullAddressCookieAndFlow) {
  Harness h(opts());
  const Frame f = flow();
  Result r = h.send(f);
  ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  const Bytes sent = r.bytes;

  Result back = h.send(reflect6(sent), kUnderlayPort);
  ASSERT_EQ(back.verdict, Verdict::kRouter) << describe(back);
  EXPECT_EQ(back.bytes, f.returned()) << "byte-identical at L3, to the neighbour it came from";

  // From the other IPv6 appliance: not the flow's.
  Bytes other = reflect6(sent);
  const IpAddr to = IpAddr::v6(sent.data() + 38);
  const IpAddr& o = to == kAppliances6[0] ? kAppliances6[1] : kAppliances6[0];
  std::copy(o.b.begin(), o.b.end(), other.begin() + 22);
  Result w = h.send(other, kUnderlayPort);
  EXPECT_EQ(w.verdict, Verdict::kDrop);
  EXPECT_EQ(w.drop, Counter::drop_return_wrong_appliance) << describe(w);

  // From an address that is no appliance (it shares the appliances' /64).
  Bytes stranger = reflect6(sent);
  stranger[37] = 0x99;
  Result u = h.send(stranger, kUnderlayPort);
  EXPECT_EQ(u.drop, Counter::drop_geneve_unknown_appliance) << describe(u);

  // To an IPv6 address of ours that is not the underlay's: not a return.
  Bytes elsewhere = reflect6(sent);
  elsewhere[53] ^= 0x40;
  Result e = h.send(elsewhere, kUnderlayPort);
  EXPECT_NE(e.verdict, Verdict::kRouter) << describe(e);

  if (aws()) {
    Bytes forged = reflect6(sent);
    forged[62 + 8 + 28 + 3] ^= 0x01;  // the cookie's last byte
    Result c = h.send(forged, kUnderlayPort);
    EXPECT_EQ(c.drop, Counter::drop_return_cookie_mismatch) << describe(c);
  }

  // Geneve over IPv6 arriving from a router: ours coming back, or to an
  // appliance of ours; never wrapped again.
  Bytes loop = sent;
  const Net& n = net();
  std::copy(n.our_a.b.begin(), n.our_a.b.end(), loop.begin());
  std::copy(n.router_a.b.begin(), n.router_a.b.end(), loop.begin() + 6);
  Result l = h.send(loop, kPortA);
  EXPECT_EQ(l.drop, Counter::drop_loop_geneve) << describe(l);
}

// An outer IPv6 header is 20 bytes longer than IPv4's, so the largest inner
// packet is 20 bytes smaller: the "too big" error tells that MTU.
TEST_P(Ipv6Underlay, InnerMtuIsTwentyBytesSmallerThanOverIpv4) {
  Harness h(opts());
  const size_t inner_mtu = 1500 - (outerLen() - 14) - (aws() ? 0 : 14);
  const size_t tcp_payload = inner_mtu - 40;
  Result fits = h.send(flow(tcp_payload));
  ASSERT_EQ(fits.verdict, Verdict::kAppliance) << describe(fits);
  EXPECT_EQ(fits.bytes.size() - 14, 1500u) << "exactly the underlay MTU";
  Result big = h.send(flow(tcp_payload + 1));
  ASSERT_EQ(big.verdict, Verdict::kRouter) << describe(big);
  ASSERT_GE(big.bytes.size(), 42u);
  EXPECT_EQ(big.bytes[34], 3);
  EXPECT_EQ(big.bytes[35], 4) << "fragmentation needed";
  EXPECT_EQ(get16(big.bytes, 40), inner_mtu) << "the MTU over an IPv6 underlay";
}

// IPv4 and IPv6 appliances in one group: each gets its own outer family.
TEST_P(Ipv6Underlay, EachAppliancesFamilyDecidesItsOuterHeader) {
  HarnessOptions o = opts();
  o.appliances = {kAppliances6[0], ip("10.0.0.11")};
  Harness h(o);
  const Net& n = net();
  int v4 = 0, v6 = 0;
  for (uint16_t port = 1000; port < 1040; ++port) {
    Frame f{n.fromA(), kEthIpv4,
            ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, port, 53, pattern(20))), kPortA};
    Result r = h.send(f);
    ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    if (get16(r.bytes, 12) == kEthIpv6) {
      ++v6;
      EXPECT_EQ(IpAddr::v6(r.bytes.data() + 38), kAppliances6[0]);
    } else {
      ++v4;
      EXPECT_EQ(get32(r.bytes, 30), 0x0A00000Bu);
      EXPECT_EQ(get32(r.bytes, 26), kUnderlayIp);
    }
    Result back = h.send(get16(r.bytes, 12) == kEthIpv6 ? reflect6(r.bytes) : reflect(r.bytes), kUnderlayPort);
    EXPECT_EQ(back.verdict, Verdict::kRouter) << describe(back);
  }
  EXPECT_GT(v4, 0);
  EXPECT_GT(v6, 0);
}

// node.underlay_ipv6 is answered in neighbor discovery, as node.ipv6_addresses are.
TEST_P(Ipv6Underlay, NeighborSolicitationsForTheUnderlayAddressArePunted) {
  Harness h(opts());
  Bytes ns = neighborSolicitation(net().gateway_mac, ip("2001:db8:f::11"), kUs6);
  Result r = h.send(ns, kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kPunt) << describe(r);
}

// An IPv6 appliance's neighbor advertisement (answering our solicitation, or
// announcing a new MAC to all nodes) goes to the control thread, which learns
// its MAC from it; only on the port facing the appliances and only for an
// appliance's address: a router-side host, or an advertisement for any other
// address, is dropped as drop_nd_not_for_us.
TEST_P(Ipv6Underlay, AppliancesNeighborAdvertisementsArePuntedOnlyFromTheirPort) {
  Harness h(opts());
  const MacAddr app_mac = mac("02:00:00:00:0f:11");
  const IpAddr all = ip("ff02::1");
  auto na = [&](const MacAddr& dst_mac, const IpAddr& dst, const IpAddr& target, uint32_t flags) {
    Bytes body(target.b.begin(), target.b.end());
    body.insert(body.end(), {2, 1});
    body.insert(body.end(), app_mac.b.begin(), app_mac.b.end());
    return ether({dst_mac, app_mac, {}}, kEthIpv6,
                 ipv6(target, dst, 58, icmp6(target, dst, 136, 0, flags, body), {}, V6{.hop_limit = 255}));
  };
  const Bytes solicited = na(net().underlay_mac, kUs6, kAppliances6[0], 0x60000000);
  const Bytes announced = na(multicastMac(all), all, kAppliances6[1], 0x20000000);
  Result r = h.send(solicited, kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kPunt) << describe(r);
  r = h.send(announced, kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kPunt) << describe(r);

  r = h.send(na(net().our_a, kUs6, kAppliances6[0], 0x60000000), kPortA);
  EXPECT_EQ(r.verdict, Verdict::kDrop) << describe(r);
  EXPECT_EQ(r.drop, Counter::drop_nd_not_for_us);
  r = h.send(na(multicastMac(all), all, kAppliances6[1], 0x20000000), kPortA);
  EXPECT_EQ(r.verdict, Verdict::kDrop) << describe(r);
  EXPECT_EQ(r.drop, Counter::drop_l2_multicast);
  r = h.send(na(net().underlay_mac, kUs6, ip("2001:db8:f::99"), 0x60000000), kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kDrop) << describe(r);
  EXPECT_EQ(r.drop, Counter::drop_nd_not_for_us) << "not an appliance";
  r = h.send(na(multicastMac(all), all, ip("2001:db8:f::99"), 0x20000000), kUnderlayPort);
  EXPECT_EQ(r.drop, Counter::drop_l2_multicast) << "not an appliance";
}

INSTANTIATE_TEST_SUITE_P(Formats, Ipv6Underlay,
                         ::testing::Values(ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet),
                         [](const auto& i) { return i.param == ctl::GeneveFormat::kAws ? "aws" : "ethernet"; });

}  // namespace
}  // namespace gwlb::dptest
