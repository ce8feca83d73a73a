// Pure-code tests (no EAL): flow-key symmetry, ARP codec, ICMP too-big builder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <vector>

#include "common/arp.h"
#include "common/checksum.h"
#include "common/flow_key.h"
#include "tests/unit/tuples.h"
#include "common/icmp_error.h"
#include "common/packet_parser.h"

using namespace gwlb;

namespace {

L4Tuple tuple(const char* s, uint16_t sp, const char* d, uint16_t dp, uint8_t proto) {
  L4Tuple t;
  t.src = *IpAddr::parse(s);
  t.dst = *IpAddr::parse(d);
  t.sport = sp;
  t.dport = dp;
  t.proto = proto;
  return t;
}

using gwlb::testing::reversed;

}  // namespace

TEST(FlowKey, BothDirectionsGiveTheSameKeyAndHashButOppositeDirections) {
  for (auto mode : {StickinessMode::kFiveTuple, StickinessMode::kThreeTuple,
                    StickinessMode::kTwoTuple}) {
    for (auto t : {tuple("198.51.100.1", 40000, "203.0.113.9", 443, kProtoTcp),
                   tuple("203.0.113.9", 53, "198.51.100.1", 5353, kProtoUdp),
                   tuple("2001:db8::1", 1, "2001:db8::2", 2, kProtoTcp),
                   tuple("10.0.0.1", 9000, "10.0.0.1", 80, kProtoTcp)}) {
      KeyedPacket a = makeFlowKey(t, mode, 0);
      KeyedPacket b = makeFlowKey(reversed(t), mode, 0);
      EXPECT_TRUE(a.key == b.key);
      EXPECT_EQ(flowHash(a.key), flowHash(b.key));
      if (mode == StickinessMode::kFiveTuple) {
        EXPECT_NE(a.dir, b.dir);
      }
    }
  }
}

TEST(FlowKey, StickinessDecidesWhatDistinguishesFlows) {
  auto t1 = tuple("198.51.100.1", 40000, "203.0.113.9", 443, kProtoTcp);
  auto t2 = tuple("198.51.100.1", 40001, "203.0.113.9", 443, kProtoTcp);
  auto t3 = tuple("198.51.100.1", 40000, "203.0.113.9", 443, kProtoUdp);
  EXPECT_FALSE(makeFlowKey(t1, StickinessMode::kFiveTuple, 0).key ==
               makeFlowKey(t2, StickinessMode::kFiveTuple, 0).key);
  EXPECT_TRUE(makeFlowKey(t1, StickinessMode::kThreeTuple, 0).key ==
              makeFlowKey(t2, StickinessMode::kThreeTuple, 0).key);
  EXPECT_FALSE(makeFlowKey(t1, StickinessMode::kThreeTuple, 0).key ==
               makeFlowKey(t3, StickinessMode::kThreeTuple, 0).key);
  EXPECT_TRUE(makeFlowKey(t1, StickinessMode::kTwoTuple, 0).key ==
              makeFlowKey(t3, StickinessMode::kTwoTuple, 0).key);
  // Listeners never share entries.
  EXPECT_FALSE(makeFlowKey(t1, StickinessMode::kFiveTuple, 0).key ==
               makeFlowKey(t1, StickinessMode::kFiveTuple, 1).key);
}

TEST(Arp, RequestParsesAndTheReplyAnswersIt) {
  uint8_t f[64] = {};
  MacAddr peer = *MacAddr::parse("02:00:00:00:00:10");
  MacAddr ours = *MacAddr::parse("02:00:00:00:00:01");
  ASSERT_EQ(makeArpRequest(f, peer, 0xC000020A, 0xC0000201), kArpFrameLen);
  ArpPacket a;
  ASSERT_TRUE(parseArp(f, kArpFrameLen, a));
  EXPECT_EQ(a.op, 1);
  EXPECT_EQ(a.sender_ip, 0xC000020Au);
  EXPECT_EQ(a.target_ip, 0xC0000201u);
  EXPECT_EQ(a.sender_mac, peer);
  makeArpReply(f, a, ours);
  ArpPacket r;
  ASSERT_TRUE(parseArp(f, kArpFrameLen, r));
  EXPECT_EQ(r.op, 2);
  EXPECT_EQ(r.sender_mac, ours);
  EXPECT_EQ(r.sender_ip, 0xC0000201u);
  EXPECT_EQ(r.target_mac, peer);
  EXPECT_EQ(r.target_ip, 0xC000020Au);
  EXPECT_EQ(0, std::memcmp(f, peer.b.data(), 6));      // to the asker
  EXPECT_EQ(0, std::memcmp(f + 6, ours.b.data(), 6));  // from us
}

TEST(Arp, TruncatedOrForeignFramesAreRejected) {
  uint8_t f[64] = {};
  makeArpRequest(f, MacAddr{}, 1, 2);
  ArpPacket a;
  for (size_t len = 0; len < kArpFrameLen; ++len) EXPECT_FALSE(parseArp(f, len, a)) << len;
  f[14 + 7] = 9;  // unknown opcode
  EXPECT_FALSE(parseArp(f, kArpFrameLen, a));
}

TEST(IcmpTooBig, Ipv4ErrorQuotesTheHeaderAndCarriesTheMtu) {
  // Ethernet + IPv4 (DF) + UDP + 1400 bytes payload.
  std::vector<uint8_t> f(14 + 20 + 8 + 1400, 0xAB);
  for (int i = 0; i < 6; ++i) f[size_t(i)] = 0x11, f[size_t(6 + i)] = 0x22;
  wr16(&f[12], kEtherTypeIpv4);
  uint8_t* ip = &f[14];
  ip[0] = 0x45;
  ip[1] = 0;
  wr16(ip + 2, 20 + 8 + 1400);
  wr16(ip + 4, 7);
  wr16(ip + 6, 0x4000);
  ip[8] = 60;
  ip[9] = kProtoUdp;
  wr16(ip + 10, 0);
  wr32(ip + 12, 0xC6336401);
  wr32(ip + 16, 0xCB007109);
  wr16(ip + 10, inetChecksum(ip, 20));
  wr16(ip + 20, 1234);
  wr16(ip + 22, 53);
  wr16(ip + 24, 8 + 1400);
  std::vector<uint8_t> orig_l3(f.begin() + 14, f.end());
  ParsedPacket p;
  Counter why;
  ASSERT_EQ(parseFrame(f.data(), f.size(), p, why), ParseStatus::kOk);
  size_t len = buildTooBig(f.data(), f.size(), p, 1432, 0xC0000201);
  ASSERT_EQ(len, 14u + 576u);
  EXPECT_EQ(f[0], 0x22);  // back to the sender
  EXPECT_EQ(f[6], 0x11);
  const uint8_t* r = &f[14];
  EXPECT_EQ(inetChecksum(r, 20), 0);
  EXPECT_EQ(rd32(r + 12), 0xC0000201u);
  EXPECT_EQ(rd32(r + 16), 0xC6336401u);
  EXPECT_EQ(r[20], 3);
  EXPECT_EQ(r[21], 4);
  EXPECT_EQ(rd16(r + 26), 1432);
  EXPECT_EQ(inetChecksum(r + 20, 576 - 20), 0);
  EXPECT_TRUE(std::equal(r + 28, r + 576, orig_l3.begin()));
  // Without DF there is nothing to send.
  wr16(&orig_l3[6], 0);
  std::vector<uint8_t> g(14, 0);
  wr16(&g[12], kEtherTypeIpv4);
  g.insert(g.end(), orig_l3.begin(), orig_l3.end());
  ASSERT_EQ(parseFrame(g.data(), g.size(), p, why), ParseStatus::kOk);
  EXPECT_EQ(buildTooBig(g.data(), g.size(), p, 1432, 1), 0u);
  // A node without an IPv4 underlay address (v4_src 0) answers from the
  // packet's own destination, as over IPv6, never from 0.0.0.0.
  wr16(&orig_l3[6], 0x4000);
  std::vector<uint8_t> h(14, 0);
  wr16(&h[12], kEtherTypeIpv4);
  h.insert(h.end(), orig_l3.begin(), orig_l3.end());
  ASSERT_EQ(parseFrame(h.data(), h.size(), p, why), ParseStatus::kOk);
  ASSERT_EQ(buildTooBig(h.data(), h.size(), p, 1432, 0), 14u + 576u);
  EXPECT_EQ(rd32(&h[14 + 12]), 0xCB007109u) << "from the packet's destination";
  EXPECT_EQ(rd32(&h[14 + 16]), 0xC6336401u);
  EXPECT_EQ(inetChecksum(&h[14], 20), 0);
}
