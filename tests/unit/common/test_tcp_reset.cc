// The RST that answers a segment of a flow that cannot continue
// (common/tcp_reset.h): a table of segments (IPv4 and IPv6, tagged or not,
// with and without ACK, SYN, FIN, payload, IP options, extension headers)
// and the RST each must get, every field checked and both checksums
// verified; then the segments that must get none, and the token bucket.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/tcp_reset.h"
#include "tests/dp/packet_builder.h"

namespace gwlb {
namespace {

using namespace dptest;

const MacAddr kRouter = mac("02:00:00:00:0a:0a"), kUs = mac("02:00:00:00:00:a1");
const IpAddr kClient4 = ip("198.51.100.10"), kServer4 = ip("203.0.113.20");
const IpAddr kClient6 = ip("2001:db8:1::10"), kServer6 = ip("2001:db8:2::20");

struct Case {
  std::string what;
  bool v6 = false;
  std::optional<uint16_t> vlan;
  uint8_t flags = kTcpAck;
  uint32_t seq = 1000, ack = 1;
  size_t payload = 0;
  bool ip_options = false;  // IPv4 options / an IPv6 destination options header
  // The RST's sequence number, acknowledgment number and flags.
  uint32_t want_seq = 0, want_ack = 0;
  uint8_t want_flags = 0;
};

Bytes segment(const Case& k) {
  const IpAddr& src = k.v6 ? kClient6 : kClient4;
  const IpAddr& dst = k.v6 ? kServer6 : kServer4;
  Bytes t = tcp(src, dst, 41000, 443, pattern(k.payload), k.flags, k.seq, k.ack);
  if (k.v6) {
    std::vector<Ext> ext;
    if (k.ip_options) ext.push_back(destOpts(2));
    return ether({kUs, kRouter, k.vlan}, kEthIpv6, ipv6(src, dst, 6, t, ext));
  }
  V4 o;
  if (k.ip_options) o.options = Bytes{0x01, 0x01, 0x01, 0x00, 0x07, 0x07, 0x04, 0, 0, 0, 0};
  return ether({kUs, kRouter, k.vlan}, kEthIpv4, ipv4(src, dst, 6, t, o));
}

ParsedPacket parse(const Bytes& f) {
  ParsedPacket p;
  Counter why;
  EXPECT_EQ(parseFrame(f.data(), f.size(), p, why), ParseStatus::kOk);
  return p;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {.what = "IPv4 data segment with ACK: SEQ=SEG.ACK, RST alone", .seq = 5000, .ack = 77777,
       .payload = 100, .want_seq = 77777, .want_ack = 0, .want_flags = kTcpRst},
      {.what = "IPv6 data segment with ACK", .v6 = true, .seq = 5000, .ack = 0xFFFFFFF0,
       .payload = 300, .want_seq = 0xFFFFFFF0, .want_flags = kTcpRst},
      {.what = "IPv4, VLAN 100: the RST keeps the tag", .vlan = 100, .ack = 42, .payload = 10,
       .want_seq = 42, .want_flags = kTcpRst},
      {.what = "IPv6, VLAN 7 with priority bits", .v6 = true, .vlan = uint16_t(0xA007), .ack = 9,
       .want_seq = 9, .want_flags = kTcpRst},
      {.what = "IPv4 FIN+ACK", .flags = kTcpAck | kTcpFin, .seq = 10, .ack = 20, .want_seq = 20,
       .want_flags = kTcpRst},
      {.what = "IPv4 without ACK, 100 bytes: SEQ=0, ACK=SEG.SEQ+SEG.LEN", .flags = 0, .seq = 5000,
       .payload = 100, .want_seq = 0, .want_ack = 5100, .want_flags = kTcpRst | kTcpAckFlag},
      {.what = "IPv6 FIN without ACK counts the FIN", .v6 = true, .flags = kTcpFin, .seq = 7,
       .payload = 3, .want_seq = 0, .want_ack = 11, .want_flags = kTcpRst | kTcpAckFlag},
      {.what = "IPv4 SYN counts the SYN (sequence wraps)", .flags = kTcpSyn, .seq = 0xFFFFFFFF,
       .want_seq = 0, .want_ack = 0, .want_flags = kTcpRst | kTcpAckFlag},
      {.what = "IPv4 with options: the RST has none", .ack = 3, .payload = 5, .ip_options = true,
       .want_seq = 3, .want_flags = kTcpRst},
      {.what = "IPv6 with a destination options header: the RST has none", .v6 = true, .ack = 3,
       .payload = 5, .ip_options = true, .want_seq = 3, .want_flags = kTcpRst},
  };
  return c;
}

TEST(TcpReset, EachSegmentGetsTheRstItsSenderAccepts) {
  for (const Case& k : cases()) {
    SCOPED_TRACE(k.what);
    Bytes f = segment(k);
    const Bytes orig = f;
    ParsedPacket p = parse(f);
    ASSERT_TRUE(tcpResettable(p));
    size_t len = buildTcpReset(f.data(), f.size(), p);
    const size_t l2 = k.vlan ? 18 : 14, ip_len = k.v6 ? 40 : 20;
    ASSERT_EQ(len, l2 + ip_len + 20);
    f.resize(len);
    // L2: MACs swapped, the tag (TCI) as it came.
    EXPECT_EQ(slice(f, 0, 6), slice(orig, 6, 6)) << "to the neighbour it came from";
    EXPECT_EQ(slice(f, 6, 6), slice(orig, 0, 6)) << "from the MAC it was sent to";
    EXPECT_EQ(slice(f, 12, l2 - 12), slice(orig, 12, l2 - 12)) << "tag and EtherType";
    const size_t l3 = l2, l3o = l2, l4 = l3 + ip_len;
    IpAddr src = k.v6 ? kServer6 : kServer4, dst = k.v6 ? kClient6 : kClient4;
    if (k.v6) {
      EXPECT_EQ(get32(f, l3), 0x60000000u) << "version 6, class and label 0";
      EXPECT_EQ(get16(f, l3 + 4), 20) << "payload length: the TCP header";
      EXPECT_EQ(f[l3 + 6], 6) << "next header TCP";
      EXPECT_EQ(f[l3 + 7], 64) << "hop limit";
      EXPECT_EQ(slice(f, l3 + 8, 16), slice(orig, l3o + 24, 16)) << "from the segment's destination";
      EXPECT_EQ(slice(f, l3 + 24, 16), slice(orig, l3o + 8, 16)) << "to its source";
    } else {
      EXPECT_EQ(f[l3], 0x45);
      EXPECT_EQ(get16(f, l3 + 2), 40) << "total length";
      EXPECT_EQ(get16(f, l3 + 6), 0x4000) << "DF";
      EXPECT_EQ(f[l3 + 8], 64) << "TTL";
      EXPECT_EQ(f[l3 + 9], 6) << "protocol TCP";
      EXPECT_TRUE(checksumOk(f.data() + l3, 20)) << "IPv4 header checksum";
      EXPECT_EQ(slice(f, l3 + 12, 4), slice(orig, l3o + 16, 4)) << "from the segment's destination";
      EXPECT_EQ(slice(f, l3 + 16, 4), slice(orig, l3o + 12, 4)) << "to its source";
    }
    EXPECT_EQ(get16(f, l4), 443) << "source port: the segment's destination port";
    EXPECT_EQ(get16(f, l4 + 2), 41000) << "destination port: its source port";
    EXPECT_EQ(get32(f, l4 + 4), k.want_seq) << "sequence number";
    EXPECT_EQ(get32(f, l4 + 8), k.want_ack) << "acknowledgment number";
    EXPECT_EQ(f[l4 + 12], 5 << 4) << "data offset: no options";
    EXPECT_EQ(f[l4 + 13], k.want_flags) << "flags";
    EXPECT_EQ(get16(f, l4 + 14), 0) << "window";
    EXPECT_EQ(get16(f, l4 + 18), 0) << "urgent pointer";
    EXPECT_TRUE(checksumOk(f.data() + l4, 20, pseudoSum(src, dst, 6, 20))) << "TCP checksum";
  }
}

TEST(TcpReset, NeverAnRstForAnRstNorForWhatIsNotAWholeSegment) {
  Case k{.what = "RST", .flags = kTcpRst, .ack = 5};
  for (uint8_t flags : {uint8_t(kTcpRst), uint8_t(kTcpRst | kTcpAck), uint8_t(kTcpRst | kTcpSyn)}) {
    k.flags = flags;
    for (bool v6 : {false, true}) {
      k.v6 = v6;
      Bytes f = segment(k);
      const Bytes orig = f;
      ParsedPacket p = parse(f);
      EXPECT_EQ(buildTcpReset(f.data(), f.size(), p), 0u) << "flags " << int(flags) << " v6 " << v6;
      EXPECT_EQ(f, orig) << "left untouched";
    }
  }
  // UDP, an ICMP error quoting TCP, a TCP first fragment: no RST.
  Bytes u = ether({kUs, kRouter, {}}, kEthIpv4, ipv4(kClient4, kServer4, 17, udp(kClient4, kServer4, 1, 2)));
  EXPECT_EQ(buildTcpReset(u.data(), u.size(), parse(u)), 0u);
  Bytes seg = ipv4(kServer4, kClient4, 6, tcp(kServer4, kClient4, 443, 41000, {}, kTcpAck));
  Bytes e = ether({kUs, kRouter, {}}, kEthIpv4, ipv4(kClient4, kServer4, 1, icmp4(3, 3, 0, seg)));
  ParsedPacket pe = parse(e);
  EXPECT_TRUE(pe.icmp_error);
  EXPECT_FALSE(tcpResettable(pe));
  EXPECT_EQ(buildTcpReset(e.data(), e.size(), pe), 0u);
  auto frags = ipv4Fragments(kClient4, kServer4, 6,
                             tcp(kClient4, kServer4, 41000, 443, pattern(64), kTcpAck), 32, 9);
  Bytes f0 = ether({kUs, kRouter, {}}, kEthIpv4, frags[0]);
  EXPECT_EQ(buildTcpReset(f0.data(), f0.size(), parse(f0)), 0u) << "a fragment";
}

TEST(TcpReset, NeverWritesPastItsRoom) {
  Case k{.what = "short room", .ack = 5};
  Bytes f = segment(k);
  ParsedPacket p = parse(f);
  EXPECT_EQ(buildTcpReset(f.data(), f.size() - 1, p), 0u) << "a frame longer than its room";
}

TEST(TokenBucket, StartsFullRefillsAtTheRateAndBanksOneSecond) {
  TokenBucket b;
  const uint64_t t0 = 5'000'000'000ULL;
  int sent = 0;
  for (int i = 0; i < 50; ++i) sent += b.take(t0, 10);
  EXPECT_EQ(sent, 10) << "one second's worth at once";
  EXPECT_FALSE(b.take(t0 + 99'000'000, 10)) << "0.99 of a token after 99 ms";
  EXPECT_TRUE(b.take(t0 + 100'000'000, 10)) << "one token after 100 ms";
  EXPECT_FALSE(b.take(t0 + 100'000'000, 10));
  sent = 0;
  for (int i = 0; i < 50; ++i) sent += b.take(t0 + 60'000'000'000ULL, 10);
  EXPECT_EQ(sent, 10) << "a minute idle banks one second, no more";
  TokenBucket none;
  EXPECT_FALSE(none.take(t0, 0)) << "rate 0 sends nothing";
  EXPECT_FALSE(none.take(t0 + 10'000'000'000ULL, 0));
  TokenBucket back;
  EXPECT_TRUE(back.take(t0, 1));
  EXPECT_FALSE(back.take(t0 - 2'000'000'000ULL, 1)) << "a clock that steps back gives nothing";
}

}  // namespace
}  // namespace gwlb
