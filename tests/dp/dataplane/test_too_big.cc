// Packets that would exceed the underlay MTU once wrapped in Geneve: IPv4 with
// DF and IPv6 are answered with ICMP "fragmentation needed" / ICMPv6 "packet
// too big" back toward the source (through the neighbour they came from);
// IPv4 without DF is dropped (drop_too_big). The largest packet that fits is
// still encapsulated, and its outer IPv4 packet is exactly the MTU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

constexpr uint32_t kMtu = 576;

// Largest inner IP packet that fits: MTU - outer IPv4/UDP/Geneve(+options)
// - the inner Ethernet header in the ethernet format.
uint32_t innerMtu(const Harness& h, size_t l2_len) {
  return h.aws() ? kMtu - 68 : uint32_t(kMtu - 36 - l2_len);
}

// A TCP packet of exactly `l3_len` bytes.
Bytes tcp4Of(size_t l3_len, bool df) {
  const Net& n = net();
  V4 o;
  o.df = df;
  return ipv4(n.client4, n.server4, 6,
              tcp(n.client4, n.server4, 41000, 80, pattern(l3_len - 40), kTcpAck), o);
}
Bytes tcp6Of(size_t l3_len) {
  const Net& n = net();
  return ipv6(n.client6, n.server6, 6,
              tcp(n.client6, n.server6, 41000, 80, pattern(l3_len - 60), kTcpAck));
}

// The ICMPv4 error the gateway must send for `f`: from node.underlay_ip to
// the packet's source, DF, TTL 64, quoting as much as fits in 576 bytes.
Bytes expectedFragNeeded(const Frame& f, uint32_t mtu) {
  const Net& n = net();
  uint8_t src[4] = {f.l3[12], f.l3[13], f.l3[14], f.l3[15]};
  Bytes quote = slice(f.l3, 0, std::min<size_t>(f.l3.size(), 576 - 28));
  V4 o;
  o.id = 0;
  return ether({f.l2.src, f.l2.dst, f.l2.vlan}, kEthIpv4,
               ipv4(n.underlay, IpAddr::v4(src), 1, icmp4(3, 4, mtu & 0xFFFF, quote), o));
}

// The ICMPv6 error: from the packet's destination to its source, hop limit 64,
// quoting as much as keeps the error within 1280 bytes.
Bytes expectedPacketTooBig(const Frame& f, uint32_t mtu) {
  IpAddr src = IpAddr::v6(f.l3.data() + 8), dst = IpAddr::v6(f.l3.data() + 24);
  Bytes quote = slice(f.l3, 0, std::min<size_t>(f.l3.size(), 1280 - 48));
  return ether({f.l2.src, f.l2.dst, f.l2.vlan}, kEthIpv6,
               ipv6(dst, src, 58, icmp6(dst, src, 2, 0, mtu, quote)));
}

class TooBig : public ::testing::TestWithParam<ctl::GeneveFormat> {
 protected:
  HarnessOptions opts(uint32_t icmp_rate = 100) const {
    HarnessOptions o;
    o.format = GetParam();
    o.underlay_mtu = kMtu;
    o.icmp_rate_per_s = icmp_rate;
    return o;
  }
};

TEST_P(TooBig, LargestPacketThatFitsIsEncapsulatedToExactlyTheMtu) {
  Harness h(opts());
  const Net& n = net();
  Frame f{n.fromA(), kEthIpv4, tcp4Of(innerMtu(h, 14), true), kPortA};
  Result r = h.send(f);
  ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  checkEncap(h, r.bytes, expectedInner(h, f), expectedProtocol(h, f));
  EXPECT_EQ(get16(r.bytes, 16), kMtu) << "outer IPv4 total length";

  Frame v6f{n.fromA(), kEthIpv6, tcp6Of(innerMtu(h, 14)), kPortA};
  r = h.send(v6f);
  ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  checkEncap(h, r.bytes, expectedInner(h, v6f), expectedProtocol(h, v6f));
  EXPECT_EQ(get16(r.bytes, 16), kMtu);
}

TEST_P(TooBig, Ipv4WithDfGetsFragmentationNeeded) {
  Harness h(opts());
  const Net& n = net();
  for (size_t extra : {size_t(1), size_t(200)}) {
    Frame f{n.fromA(), kEthIpv4, tcp4Of(innerMtu(h, 14) + extra, true), kPortA};
    SCOPED_TRACE("IPv4 packet of " + std::to_string(f.l3.size()) + " bytes");
    Result r = h.send(f);
    ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
    EXPECT_EQ(r.port, kPortA) << "the error leaves through the ingress port";
    const Bytes& b = r.bytes;
    ASSERT_GE(b.size(), 14u + 28u);
    // Field by field, then the whole frame.
    EXPECT_EQ(slice(b, 0, 6), Bytes(n.router_a.b.begin(), n.router_a.b.end())) << "MACs swapped";
    EXPECT_EQ(slice(b, 6, 6), Bytes(n.our_a.b.begin(), n.our_a.b.end())) << "MACs swapped";
    EXPECT_EQ(b[14], 0x45);
    EXPECT_EQ(b[14 + 9], 1) << "protocol ICMP";
    EXPECT_TRUE(checksumOk(b.data() + 14, 20)) << "IPv4 header checksum";
    EXPECT_EQ(get32(b, 14 + 12), kUnderlayIp) << "sent from node.underlay_ip";
    EXPECT_EQ(slice(b, 14 + 16, 4), slice(f.l3, 12, 4)) << "sent to the packet's source";
    EXPECT_EQ(b[34], 3) << "type: destination unreachable";
    EXPECT_EQ(b[35], 4) << "code: fragmentation needed and DF set";
    EXPECT_EQ(get16(b, 40), innerMtu(h, 14)) << "next-hop MTU";
    EXPECT_EQ(get16(b, 38), 0) << "unused";
    EXPECT_TRUE(checksumOk(b.data() + 34, b.size() - 34)) << "ICMP checksum";
    size_t quoted = b.size() - 42;
    EXPECT_EQ(quoted, std::min<size_t>(f.l3.size(), 548)) << "quote up to 576 bytes in all";
    EXPECT_EQ(slice(b, 42, quoted), slice(f.l3, 0, quoted)) << "quoted header";
    EXPECT_EQ(b, expectedFragNeeded(f, innerMtu(h, 14)))
        << "\n got  " << hex(b) << "\n want " << hex(expectedFragNeeded(f, innerMtu(h, 14)));
  }
  EXPECT_EQ(h.get(Counter::icmp_sent), 2u);
  EXPECT_EQ(h.get(Counter::encapsulated), 0u);
}

TEST_P(TooBig, VlanTaggedOversizeKeepsItsTag) {
  Harness h(opts());
  const Net& n = net();
  const uint32_t mtu = innerMtu(h, 18);
  Frame f{n.fromVlan(0x0123), kEthIpv4, tcp4Of(mtu + 1, true), kPortVlan};
  Result r = h.send(f);
  ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
  EXPECT_EQ(r.port, kPortVlan);
  EXPECT_EQ(get16(r.bytes, 12), kEthVlan);
  EXPECT_EQ(get16(r.bytes, 14), 0x0123);
  EXPECT_EQ(r.bytes, expectedFragNeeded(f, mtu));
  // One byte less fits.
  Frame fits{n.fromVlan(0x0123), kEthIpv4, tcp4Of(mtu, true), kPortVlan};
  r = h.send(fits);
  ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  checkEncap(h, r.bytes, expectedInner(h, fits), expectedProtocol(h, fits));
}

TEST_P(TooBig, Ipv6GetsPacketTooBig) {
  Harness h(opts());
  const Net& n = net();
  for (size_t extra : {size_t(1), size_t(900)}) {
    Frame f{n.fromB(), kEthIpv6, tcp6Of(innerMtu(h, 14) + extra), kPortB};
    SCOPED_TRACE("IPv6 packet of " + std::to_string(f.l3.size()) + " bytes");
    Result r = h.send(f);
    ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
    EXPECT_EQ(r.port, kPortB);
    const Bytes& b = r.bytes;
    ASSERT_GE(b.size(), 14u + 48u);
    EXPECT_EQ(slice(b, 0, 6), Bytes(n.router_b.b.begin(), n.router_b.b.end())) << "MACs swapped";
    EXPECT_EQ(slice(b, 6, 6), Bytes(n.our_b.b.begin(), n.our_b.b.end())) << "MACs swapped";
    EXPECT_EQ(get16(b, 18), b.size() - 54) << "IPv6 payload length";
    EXPECT_EQ(b[20], 58) << "next header ICMPv6";
    EXPECT_EQ(slice(b, 22, 16), slice(f.l3, 24, 16)) << "from the packet's destination";
    EXPECT_EQ(slice(b, 38, 16), slice(f.l3, 8, 16)) << "to the packet's source";
    EXPECT_EQ(b[54], 2) << "type: packet too big";
    EXPECT_EQ(b[55], 0);
    EXPECT_EQ(get32(b, 58), innerMtu(h, 14)) << "MTU";
    IpAddr s = IpAddr::v6(b.data() + 22), d = IpAddr::v6(b.data() + 38);
    EXPECT_TRUE(checksumOk(b.data() + 54, b.size() - 54, pseudoSum(s, d, 58, b.size() - 54)))
        << "ICMPv6 checksum";
    size_t quoted = b.size() - 62;
    EXPECT_EQ(quoted, std::min<size_t>(f.l3.size(), 1232)) << "quote up to 1280 bytes in all";
    EXPECT_LE(b.size() - 14, 1280u);
    EXPECT_EQ(b, expectedPacketTooBig(f, innerMtu(h, 14)))
        << "\n got  " << hex(b) << "\n want " << hex(expectedPacketTooBig(f, innerMtu(h, 14)));
  }
  EXPECT_EQ(h.get(Counter::icmp_sent), 2u);
}

TEST_P(TooBig, Ipv4WithoutDfIsDropped) {
  Harness h(opts());
  const Net& n = net();
  Frame f{n.fromA(), kEthIpv4, tcp4Of(innerMtu(h, 14) + 1, false), kPortA};
  Result r = h.send(f);
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_too_big);
  EXPECT_EQ(h.get(Counter::icmp_sent), 0u);
}

TEST_P(TooBig, IcmpErrorsAreNeverAnsweredWithIcmp) {
  Harness h(opts());
  const Net& n = net();
  Bytes big = tcp4Of(1000, true);
  Frame f{n.fromB(), kEthIpv4,
          ipv4(ip("203.0.113.1"), n.client4, 1, icmp4(3, 1, 0, slice(big, 0, innerMtu(h, 14)))),
          kPortB};
  Result r = h.send(f);
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_too_big);
}

// icmp_rate_per_s errors per second per worker, one second's worth banked;
// time is what the caller passes in.
TEST_P(TooBig, ErrorsAreRateLimitedByTheClockPassedIn) {
  Harness h(opts(2));
  const Net& n = net();
  Frame f{n.fromA(), kEthIpv4, tcp4Of(innerMtu(h, 14) + 10, true), kPortA};
  EXPECT_EQ(h.send(f).verdict, Verdict::kRouter);
  EXPECT_EQ(h.send(f).verdict, Verdict::kRouter);
  Result r = h.send(f);
  EXPECT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_too_big);
  h.now += 500'000'000;  // half a second: one more token
  EXPECT_EQ(h.send(f).verdict, Verdict::kRouter);
  EXPECT_EQ(h.send(f).verdict, Verdict::kDrop);
  EXPECT_EQ(h.get(Counter::icmp_sent), 3u);
  EXPECT_EQ(h.get(Counter::drop_too_big), 2u);
}

INSTANTIATE_TEST_SUITE_P(Formats, TooBig,
                         ::testing::Values(ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet),
                         [](const auto& info) { return std::string(ctl::toString(info.param)); });

}  // namespace
}  // namespace gwlb::dptest
