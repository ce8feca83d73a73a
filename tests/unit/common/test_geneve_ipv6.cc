// Geneve over an IPv6 underlay: the writer, the per-appliance template the
// worker patches, and the checksum offload form, checked field by field and
// against the packet builder's own checksum arithmetic (an implementation
// independent of common/).
#include <gtest/gtest.h>

#include <cstring>

#include "common/checksum.h"
#include "common/fast_path.h"
#include "common/geneve.h"
#include "common/packet_parser.h"
#include "tests/dp/packet_builder.h"

namespace gwlb {
namespace {

using namespace dptest;

const IpAddr kUs = ip("2001:db8:f::1"), kAppliance = ip("2001:db8:f::a");

EncapParams params(bool aws) {
  EncapParams ep;
  ep.src_mac = mac("02:00:00:00:00:01");
  ep.dst_mac = mac("02:00:00:00:00:fe");
  ep.ipv6 = true;
  ep.src_ip6 = kUs.b;
  ep.dst_ip6 = kAppliance.b;
  ep.vni = 0x123456;
  ep.aws_options = aws;
  ep.protocol = aws ? kEtherTypeIpv4 : kEtherTypeTeb;
  ep.endpoint_id = 0x0A0B0C0D01020304ULL;
  ep.attachment_id = 0x1122334455667788ULL;
  return ep;
}

std::vector<Bytes> innerFrames() {
  const L2 l2{mac("02:00:00:00:0a:0a"), mac("02:00:00:00:00:a1"), {}};
  const IpAddr c = ip("198.51.100.9"), s = ip("203.0.113.20");
  const IpAddr c6 = ip("2001:db8:1::9"), s6 = ip("2001:db8:2::20");
  std::vector<Bytes> frames;
  for (size_t n : {0, 1, 57, 1000}) {
    V4 o;
    o.tos = 0xB9;  // DSCP 46 (EF), ECN CE
    frames.push_back(ether(l2, kEthIpv4, ipv4(c, s, 6, tcp(c, s, 40000, 443, pattern(n), kTcpAck), o)));
    frames.push_back(ether(l2, kEthIpv4, ipv4(c, s, 17, udp(c, s, 5353, 53, pattern(n)))));
    frames.push_back(ether(l2, kEthIpv6, ipv6(c6, s6, 6, tcp(c6, s6, 1, 2, pattern(n)))));
    frames.push_back(ether(l2, kEthIpv6, ipv6(c6, s6, 17, udp(c6, s6, 3, 4, pattern(n)), {hopByHop()})));
  }
  return frames;
}

TEST(GeneveIpv6, HeaderLengthIsTwentyBytesLonger) {
  EXPECT_EQ(encapHeaderLen(true, true), encapHeaderLen(true) + 20);
  EXPECT_EQ(encapHeaderLen(false, true), encapHeaderLen(false) + 20);
  EXPECT_EQ(encapHeaderLen(true, true), 14u + 40 + 8 + 8 + 32);
  EXPECT_LE(encapHeaderLen(true, true), sizeof(EncapTemplate::bytes));
}

// The template the worker patches writes the same bytes as the full writer,
// and every outer field is what a receiver expects: version 6, the inner
// DSCP with ECN Not-ECT, the flow's label, payload length, UDP next header,
// hop limit 64, our address to the appliance's, a UDP checksum that verifies
// over the IPv6 pseudo-header, Geneve with the group's VNI.
TEST(GeneveIpv6, TemplateWritesTheWritersBytesAndAValidPacket) {
  uint32_t hash = 0x9E3779B1;
  for (bool aws : {true, false}) {
    EncapParams ep = params(aws);
    EncapTemplate t;
    buildEncapTemplate(t, ep);
    ASSERT_TRUE(t.ipv6);
    ASSERT_EQ(t.len, encapHeaderLen(aws, true));
    for (const Bytes& f : innerFrames()) {
      ParsedPacket p;
      Counter why;
      ASSERT_EQ(parseFrame(f.data(), f.size(), p, why), ParseStatus::kOk);
      size_t start = aws ? p.l3_offset : 0;
      size_t payload = size_t(p.l3_offset) + p.l3_len - start;
      Bytes want(t.len + payload), got(t.len + payload);
      std::memcpy(want.data() + t.len, f.data() + start, payload);
      std::memcpy(got.data() + t.len, f.data() + start, payload);
      const uint32_t tcl = ipv6TrafficClassLabel(f.data() + p.l3_offset, p.ip_version, hash);
      EncapParams q = ep;
      q.udp_sport = geneveSourcePort(hash);
      q.cookie = hash * 3;
      q.traffic_class = uint8_t(tcl >> 20);
      q.flow_label = tcl & 0xFFFFF;
      if (aws) q.protocol = p.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
      writeEncap6(want.data(), payload, q);
      applyEncap6(got.data(), t, payload, q.udp_sport, q.protocol, q.cookie,
                  payloadSum(f.data(), start, p), tcl);
      ASSERT_EQ(got, want) << "aws " << aws;

      const Bytes& o = got;
      EXPECT_EQ(get16(o, 12), kEthIpv6);
      const uint32_t w0 = get32(o, 14);
      EXPECT_EQ(w0 >> 28, 6u);
      const bool ef = p.ip_version == 4 && p.tuple.proto == kProtoTcp;
      EXPECT_EQ((w0 >> 20) & 0xFF, ef ? 0xB8u : 0u) << "DSCP copied, ECN Not-ECT";
      EXPECT_EQ(w0 & 0xFFFFF, geneveFlowLabel(hash));
      EXPECT_NE(w0 & 0xFFFFF, 0u);
      const size_t udp_len = o.size() - 14 - 40;
      EXPECT_EQ(get16(o, 18), udp_len);
      EXPECT_EQ(o[20], kProtoUdp);
      EXPECT_EQ(o[21], 64);
      EXPECT_EQ(slice(o, 22, 16), Bytes(kUs.b.begin(), kUs.b.end()));
      EXPECT_EQ(slice(o, 38, 16), Bytes(kAppliance.b.begin(), kAppliance.b.end()));
      EXPECT_EQ(get16(o, 54), geneveSourcePort(hash));
      EXPECT_EQ(get16(o, 56), kGenevePort);
      EXPECT_EQ(get16(o, 58), udp_len);
      EXPECT_NE(get16(o, 60), 0) << "IPv6 UDP always carries a checksum";
      EXPECT_TRUE(checksumOk(o.data() + 54, udp_len, pseudoSum(kUs, kAppliance, 17, udp_len)));
      GeneveInfo gi;
      ASSERT_EQ(parseGeneve(o.data() + 62, o.size() - 62, gi, why), GeneveStatus::kOk);
      EXPECT_EQ(gi.vni, 0x123456u);
      EXPECT_EQ(gi.has_cookie, aws);
      if (aws) { EXPECT_EQ(gi.cookie, hash * 3); }
      hash = hash * 2654435761u + 7;
    }
  }
}

// Checksum offload: the UDP checksum field holds the pseudo-header's folded
// sum (length included), as DPDK's rte_ipv6_phdr_cksum() gives it; the NIC
// sums the UDP bytes over it and complements: that result must verify.
TEST(GeneveIpv6, OffloadLeavesThePseudoHeaderSumForTheNic) {
  for (bool aws : {true, false}) {
    EncapTemplate t;
    buildEncapTemplate(t, params(aws));
    Bytes payload = pattern(333);
    Bytes o(t.len + payload.size());
    std::memcpy(o.data() + t.len, payload.data(), payload.size());
    applyEncapOffload6(o.data(), t, payload.size(), 50000, kEtherTypeIpv6, 0xAABBCCDD, 0x12345);
    const size_t udp_len = o.size() - 54;
    EXPECT_EQ(get16(o, 60), uint16_t(~fold(pseudoSum(kUs, kAppliance, 17, udp_len)) & 0xFFFF));
    put16(o, 60, fold(sum16(o.data() + 54, udp_len)));  // what the NIC does
    EXPECT_TRUE(checksumOk(o.data() + 54, udp_len, pseudoSum(kUs, kAppliance, 17, udp_len)));
    EXPECT_EQ(get32(o, 14), 6u << 28 | 0x12345);
  }
}

TEST(GeneveIpv6, FlowLabelIsNeverZeroAndFollowsTheHash) {
  EXPECT_EQ(geneveFlowLabel(0), 1u);
  EXPECT_EQ(geneveFlowLabel(0xFFF), 1u) << "the source port's bits alone give no label";
  EXPECT_EQ(geneveFlowLabel(0xABCDE000), 0xABCDEu);
  EXPECT_EQ(geneveFlowLabel(0x12345678), geneveFlowLabel(0x12345678));
}

}  // namespace
}  // namespace gwlb
