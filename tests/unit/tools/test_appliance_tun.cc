// gwlb-appliance's tun mode, its pure part (tools/appliance_tun_flows.h): a
// packet the kernel forwarded out of the tun goes back with its flow's Geneve
// header, to its gateway; what cannot is counted by name.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tools/appliance_tun_flows.h"

using namespace gwlb::appliance;

namespace {

using Bytes = std::vector<uint8_t>;

// An IPv4 TCP packet (20-byte headers, `payload` bytes after them).
Bytes tcp4(const uint8_t src[4], uint16_t sport, const uint8_t dst[4], uint16_t dport, size_t payload = 0) {
  Bytes p(40 + payload, 0);
  p[0] = 0x45;
  p[2] = uint8_t(p.size() >> 8);
  p[3] = uint8_t(p.size());
  p[8] = 64;
  p[9] = 6;
  std::memcpy(&p[12], src, 4);
  std::memcpy(&p[16], dst, 4);
  p[20] = uint8_t(sport >> 8), p[21] = uint8_t(sport);
  p[22] = uint8_t(dport >> 8), p[23] = uint8_t(dport);
  p[32] = 0x50;
  return p;
}

// An IPv6 UDP packet.
Bytes udp6(uint8_t src_last, uint16_t sport, uint8_t dst_last, uint16_t dport) {
  Bytes p(48, 0);
  p[0] = 0x60;
  p[5] = 8;
  p[6] = 17;
  p[7] = 64;
  p[8] = 0x20, p[9] = 0x01, p[23] = src_last;
  p[24] = 0x20, p[25] = 0x01, p[39] = dst_last;
  p[40] = uint8_t(sport >> 8), p[41] = uint8_t(sport);
  p[42] = uint8_t(dport >> 8), p[43] = uint8_t(dport);
  return p;
}

// A Geneve header of the aws format with a flow cookie (32 bytes of options).
Bytes geneve(uint32_t cookie) {
  Bytes h(8 + 32, 0);
  h[0] = 8;  // options: 8 words
  h[2] = 0x08, h[3] = 0x00;
  h[8 + 24] = 0x01, h[8 + 25] = 0x08, h[8 + 26] = 3, h[8 + 27] = 1;
  h[8 + 28] = uint8_t(cookie >> 24), h[8 + 29] = uint8_t(cookie >> 16);
  h[8 + 30] = uint8_t(cookie >> 8), h[8 + 31] = uint8_t(cookie);
  return h;
}

Inner parsed(const Bytes& p) {
  Inner in;
  EXPECT_TRUE(parseIp(p.data(), p.size(), in));
  return in;
}

const uint8_t kClient[4] = {10, 77, 1, 2}, kServer[4] = {10, 77, 2, 2};

GatewayAddr gw(uint8_t last) {
  GatewayAddr g;
  g.addr[0] = 10, g.addr[1] = 77, g.addr[2] = 9, g.addr[3] = last;
  return g;
}

Bytes concat(const Bytes& a, const Bytes& b) {
  Bytes out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

TEST(TunFlowTable, AnswerTakesTheHeaderItsFlowArrivedWithAndGoesToThatGateway) {
  TunFlowTable t(16, 350);
  TunCounters c;
  Bytes fwd = tcp4(kClient, 40000, kServer, 7000, 10);
  ASSERT_TRUE(t.learn(parsed(fwd), geneve(0xc0ffee).data(), 40, gw(1), 0, c));
  EXPECT_EQ(c.flows_learned, 1u);
  Bytes out;
  // The forwarded packet itself, as the kernel sends it out (TTL changed).
  Bytes again = fwd;
  again[8] = 63;
  const GatewayAddr* to = t.wrap(again.data(), again.size(), out, 1, c);
  ASSERT_NE(to, nullptr);
  EXPECT_EQ(to->addr, gw(1).addr);
  EXPECT_EQ(out, concat(geneve(0xc0ffee), again));
  // The server's answer, whose direction was never seen: the other direction's header.
  Bytes back = tcp4(kServer, 7000, kClient, 40000, 3);
  ASSERT_NE(t.wrap(back.data(), back.size(), out, 2, c), nullptr);
  EXPECT_EQ(out, concat(geneve(0xc0ffee), back));
  EXPECT_EQ(t.wrap(back.data(), back.size(), out, 2, c)->addr, gw(1).addr);
  // Once the answer's direction arrives with its own header from another
  // gateway (a fleet's two directions may cross two), each direction takes
  // its own header, back to its own gateway.
  ASSERT_TRUE(t.learn(parsed(back), geneve(0xbeef).data(), 40, gw(2), 3, c));
  const GatewayAddr* back_to = t.wrap(back.data(), back.size(), out, 4, c);
  ASSERT_NE(back_to, nullptr);
  EXPECT_EQ(back_to->addr, gw(2).addr);
  EXPECT_EQ(out, concat(geneve(0xbeef), back));
  const GatewayAddr* fwd_to = t.wrap(fwd.data(), fwd.size(), out, 4, c);
  ASSERT_NE(fwd_to, nullptr);
  EXPECT_EQ(fwd_to->addr, gw(1).addr);
  EXPECT_EQ(out, concat(geneve(0xc0ffee), fwd));
  EXPECT_EQ(c.flows_learned, 1u);
  EXPECT_EQ(t.size(), 1u);
}

TEST(TunFlowTable, ANewCookieReplacesTheOld) {
  TunFlowTable t(16, 350);
  TunCounters c;
  Bytes p = tcp4(kClient, 40001, kServer, 80);
  t.learn(parsed(p), geneve(1).data(), 40, gw(1), 0, c);
  t.learn(parsed(p), geneve(2).data(), 40, gw(1), 1, c);
  Bytes out;
  ASSERT_NE(t.wrap(p.data(), p.size(), out, 2, c), nullptr);
  EXPECT_EQ(out, concat(geneve(2), p));
}

TEST(TunFlowTable, IPv6) {
  TunFlowTable t(16, 350);
  TunCounters c;
  Bytes q = udp6(2, 5000, 9, 53), a = udp6(9, 53, 2, 5000);
  ASSERT_TRUE(t.learn(parsed(q), geneve(7).data(), 40, gw(1), 0, c));
  Bytes out;
  ASSERT_NE(t.wrap(a.data(), a.size(), out, 1, c), nullptr);
  EXPECT_EQ(out, concat(geneve(7), a));
  Bytes other = udp6(2, 5001, 9, 53);
  EXPECT_EQ(t.wrap(other.data(), other.size(), out, 1, c), nullptr);
  EXPECT_EQ(c.from_tun_unknown_flow, 1u);
}

TEST(TunFlowTable, BadInputIsCountedByName) {
  TunFlowTable t(16, 350);
  TunCounters c;
  Bytes out;
  Bytes unknown = tcp4(kClient, 1, kServer, 2);
  EXPECT_EQ(t.wrap(unknown.data(), unknown.size(), out, 0, c), nullptr);
  EXPECT_EQ(c.from_tun_unknown_flow, 1u);
  Bytes truncated = tcp4(kClient, 1, kServer, 2);
  truncated.resize(22);  // TCP with 2 bytes of header
  truncated[3] = 22;
  EXPECT_EQ(t.wrap(truncated.data(), truncated.size(), out, 0, c), nullptr);
  Bytes lying = tcp4(kClient, 1, kServer, 2);
  lying[3] = 200;  // total length past the end
  EXPECT_EQ(t.wrap(lying.data(), lying.size(), out, 0, c), nullptr);
  Bytes v5 = tcp4(kClient, 1, kServer, 2);
  v5[0] = 0x55;
  EXPECT_EQ(t.wrap(v5.data(), v5.size(), out, 0, c), nullptr);
  EXPECT_EQ(t.wrap(v5.data(), 0, out, 0, c), nullptr);
  EXPECT_EQ(c.from_tun_malformed, 4u);
  EXPECT_EQ(c.from_tun_unknown_flow, 1u);
  // A header longer than Geneve allows is not learned.
  Bytes big(TunFlowTable::kMaxGeneveHeader + 4, 0);
  EXPECT_FALSE(t.learn(parsed(unknown), big.data(), big.size(), gw(1), 0, c));
  EXPECT_EQ(t.size(), 0u);
}

TEST(TunFlowTable, BoundedAndExpiring) {
  TunFlowTable t(2, 10);
  TunCounters c;
  Bytes f1 = tcp4(kClient, 1, kServer, 80), f2 = tcp4(kClient, 2, kServer, 80), f3 = tcp4(kClient, 3, kServer, 80);
  EXPECT_TRUE(t.learn(parsed(f1), geneve(1).data(), 40, gw(1), 0, c));
  EXPECT_TRUE(t.learn(parsed(f2), geneve(2).data(), 40, gw(1), 5, c));
  EXPECT_FALSE(t.learn(parsed(f3), geneve(3).data(), 40, gw(1), 5, c));
  EXPECT_EQ(c.table_full, 1u);
  EXPECT_TRUE(t.learn(parsed(f1), geneve(1).data(), 40, gw(1), 6, c));  // known flows go on
  EXPECT_EQ(t.expire(15, c), 0u);
  EXPECT_EQ(t.expire(16, c), 1u);  // f2: last seen at 5
  EXPECT_EQ(c.flows_expired, 1u);
  Bytes out;
  EXPECT_EQ(t.wrap(f2.data(), f2.size(), out, 16, c), nullptr);
  EXPECT_NE(t.wrap(f1.data(), f1.size(), out, 16, c), nullptr);  // a wrap is activity too
  EXPECT_EQ(t.expire(25, c), 0u);
  EXPECT_TRUE(t.learn(parsed(f3), geneve(3).data(), 40, gw(1), 25, c));
}

// The ethernet format (0x6558): the header kept is Geneve's and the inner
// frame's together; the tun sees only IP. What comes out is rebuilt with the
// frame header its direction arrived with, or the other direction's turned
// round (addresses swapped) when this one was never seen.
TEST(TunFlowTable, EthernetFormatKeepsTheFrameHeaderAndTurnsItRoundForTheOtherDirection) {
  TunFlowTable t(16, 350);
  TunCounters c;
  Bytes gen = geneve(0xc0ffee);
  gen[2] = 0x65, gen[3] = 0x58;
  const Bytes router = {2, 0, 0, 0, 0, 1}, gateway = {2, 0, 0, 0, 0, 2};
  Bytes eth = concat(concat(gateway, router), {0x08, 0x00});  // dst, src, IPv4
  Bytes fwd = tcp4(kClient, 40000, kServer, 7000, 10);
  ASSERT_TRUE(t.learn(parsed(fwd), concat(gen, eth).data(), gen.size() + 14, gw(1), 0, c, 14));
  Bytes out;
  ASSERT_NE(t.wrap(fwd.data(), fwd.size(), out, 1, c), nullptr);
  EXPECT_EQ(out, concat(concat(gen, eth), fwd));
  Bytes back = tcp4(kServer, 7000, kClient, 40000, 3);
  ASSERT_NE(t.wrap(back.data(), back.size(), out, 2, c), nullptr);
  Bytes turned = concat(concat(router, gateway), {0x08, 0x00});
  EXPECT_EQ(out, concat(concat(gen, turned), back));
  // A tagged frame (18 bytes) is kept whole, tag included.
  Bytes tagged = concat(concat(router, gateway), {0x81, 0x00, 0x00, 0x2a, 0x08, 0x00});
  ASSERT_TRUE(t.learn(parsed(back), concat(gen, tagged).data(), gen.size() + 18, gw(2), 3, c, 18));
  ASSERT_NE(t.wrap(back.data(), back.size(), out, 4, c), nullptr);
  EXPECT_EQ(out, concat(concat(gen, tagged), back));
  // The stored frame was not turned round by the earlier wrap.
  ASSERT_NE(t.wrap(fwd.data(), fwd.size(), out, 5, c), nullptr);
  EXPECT_EQ(out, concat(concat(gen, eth), fwd));
  // No Ethernet header is shorter than 14 bytes or longer than one tag allows.
  EXPECT_FALSE(t.learn(parsed(fwd), concat(gen, eth).data(), gen.size() + 13, gw(1), 6, c, 13));
  EXPECT_FALSE(t.learn(parsed(fwd), Bytes(gen.size() + 22, 0).data(), gen.size() + 22, gw(1), 6, c, 22));
  EXPECT_FALSE(t.learn(parsed(fwd), eth.data(), 14, gw(1), 6, c, 14));  // no Geneve header before it
}

// --bypass-after-bytes in tun mode: once the flow is past the stream depth,
// the header its direction's returns take carries gwlb's bypass option after
// the Geneve options (aws: after AWS's three; ethernet: before the inner
// Ethernet header), and every such return is counted.
TEST(TunFlowTable, PastTheStreamDepthReturnsAskForTheBypass) {
  const BypassAsk ask{0xFF01, 30};
  const Bytes opt = {0xFF, 0x01, 0x01, 0x01, 0, 0, 0, 30};
  for (bool ethernet : {false, true}) {
    SCOPED_TRACE(ethernet ? "ethernet" : "aws");
    TunFlowTable t(16, 350);
    TunCounters c;
    Bytes gen = geneve(0xc0ffee);
    Bytes eth;
    if (ethernet) {
      gen[2] = 0x65, gen[3] = 0x58;
      eth = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00};
    }
    Bytes fwd = tcp4(kClient, 40000, kServer, 7000, 10);
    Bytes out;
    ASSERT_TRUE(t.learn(parsed(fwd), concat(gen, eth).data(), gen.size() + eth.size(), gw(1), 0, c, eth.size()));
    ASSERT_NE(t.wrap(fwd.data(), fwd.size(), out, 1, c), nullptr);
    EXPECT_EQ(out, concat(concat(gen, eth), fwd)) << "before the depth: as it came";
    EXPECT_EQ(c.bypass_returned, 0u);
    ASSERT_TRUE(t.learn(parsed(fwd), concat(gen, eth).data(), gen.size() + eth.size(), gw(1), 2, c, eth.size(), &ask));
    ASSERT_NE(t.wrap(fwd.data(), fwd.size(), out, 3, c), nullptr);
    Bytes asked = concat(gen, opt);
    asked[0] = uint8_t(gen[0] + 2);  // two more words of options
    EXPECT_EQ(out, concat(concat(asked, eth), fwd));
    // The other direction, never seen, takes this one's header: it asks too.
    Bytes back = tcp4(kServer, 7000, kClient, 40000, 3);
    ASSERT_NE(t.wrap(back.data(), back.size(), out, 4, c), nullptr);
    EXPECT_EQ(c.bypass_returned, 2u);
    EXPECT_EQ(c.returned, 0u) << "returned is TunPath's count of what it sent";
  }
}
