// The fast path's shortcuts against the general code they stand in for: a
// shortcut that disagrees would forward a packet differently than the general
// parser/writer does, so each is checked on many generated and mutated inputs
// (fixed seeds: the same cases every run).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/checksum.h"
#include "common/fast_path.h"
#include "common/flow_key.h"
#include "common/geneve.h"
#include "common/packet_parser.h"
#include "tests/dp/packet_builder.h"

namespace gwlb {
namespace {

using namespace dptest;

// RFC 1071 byte by byte: the reference csumAdd must agree with.
uint16_t referenceChecksum(const uint8_t* p, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2) s += uint32_t(p[i] << 8 | p[i + 1]);
  if (n & 1) s += uint32_t(p[n - 1] << 8);
  while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
  return uint16_t(~s);
}

TEST(FastChecksum, AgreesWithByteByByteSum) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(1600);
  for (int iter = 0; iter < 20000; ++iter) {
    size_t off = rng() % 8, n = rng() % 1500;
    int fill = iter % 4;  // random, all 0xFF, all zero, sparse
    for (auto& b : buf)
      b = fill == 0 ? uint8_t(rng()) : fill == 1 ? 0xFF : fill == 2 ? 0 : (rng() % 16 ? 0 : 0xFF);
    ASSERT_EQ(inetChecksum(buf.data() + off, n), referenceChecksum(buf.data() + off, n))
        << "length " << n << " offset " << off << " fill " << fill;
    // A running sum carried in still folds to the same value.
    uint32_t half = uint32_t(n / 2) & ~1u;
    uint32_t s = csumAdd(csumAdd(0, buf.data() + off, half), buf.data() + off + half, n - half);
    ASSERT_EQ(csumFold(s), referenceChecksum(buf.data() + off, n));
  }
}

// csumShort, the inline sum of the headers in front of an encapsulated
// segment, against the byte-by-byte sum, at each length payloadSum uses and
// the extremes of its folds (all 0xFF: the largest sum; all zero).
template <size_t N>
void checkShortSum(std::mt19937& rng) {
  std::vector<uint8_t> buf(N + 8);
  for (int iter = 0; iter < 4000; ++iter) {
    const size_t off = rng() % 8;
    const int fill = iter % 4;
    for (auto& b : buf)
      b = fill == 0 ? uint8_t(rng()) : fill == 1 ? 0xFF : fill == 2 ? 0 : (rng() % 16 ? 0 : 0xFF);
    ASSERT_EQ(csumFold(csumShort<N>(buf.data() + off)), referenceChecksum(buf.data() + off, N))
        << "length " << N << " offset " << off << " fill " << fill;
    ASSERT_EQ(csumFold(csumShort<N>(buf.data() + off)), csumFold(csumAdd(0, buf.data() + off, N)));
  }
}

TEST(FastChecksum, ShortInlineSumAgreesWithByteByByteSum) {
  std::mt19937 rng(9);
  checkShortSum<2>(rng);
  checkShortSum<14 + 8>(rng);
  checkShortSum<14 + 12>(rng);
  checkShortSum<32>(rng);
  checkShortSum<256>(rng);
}

// The inline hash starts from the state setFlowHashKey keeps (init40); the
// table's hashes the key's bytes from the key itself: both agree unkeyed,
// under random keys, and again unkeyed after a key was set.
TEST(FastHash, InlineKeyHashIsTheTableHash) {
  std::mt19937_64 rng(11);
  struct Restore {
    FlowHashKey k = flowHashKey();
    ~Restore() { setFlowHashKey(k); }
  } restore;
  for (int i = 0; i < 30000; ++i) {
    if (i % 10000 == 0) setFlowHashKey(i == 10000 ? FlowHashKey{rng(), rng()} : FlowHashKey{});
    FlowKey k;
    for (size_t j = 0; j < sizeof k; ++j) reinterpret_cast<uint8_t*>(&k)[j] = uint8_t(rng());
    ASSERT_EQ(flowHash(k), flowHash(&k, sizeof k, 0)) << "pass " << i / 10000;
  }
}

// The flow hash is keyed (node.flow_hash_secret): ports chosen so that all
// their flows share one Maglev slot under one key spread out under another,
// and the zero key is the unkeyed hash of earlier releases.
class FlowHashKeyed : public ::testing::Test {
 protected:
  void TearDown() override { setFlowHashKey({}); }
  static FlowKey keyFor(uint16_t sport) {
    L4Tuple t;
    t.src = IpAddr::v4(0xC6336409);
    t.dst = IpAddr::v4(0xCB007114);
    t.sport = sport;
    t.dport = 443;
    t.proto = 6;
    return makeFlowKeyV4(t, StickinessMode::kFiveTuple, 0).key;
  }
};

TEST_F(FlowHashKeyed, ZeroKeyIsTheUnkeyedHash) {
  // flowHash of a fixed key before keys existed (regression pin).
  setFlowHashKey({});
  FlowKey k = keyFor(40000);
  uint64_t w[5];
  std::memcpy(w, &k, sizeof w);
  uint64_t h = detail::kHashInit ^ (uint64_t(sizeof k) << 32);
  for (uint64_t x : w) h = detail::hashStep(h, x);
  h = detail::hashFinal(h);
  EXPECT_EQ(flowHash(k), uint32_t(h ^ (h >> 32)));
}

TEST_F(FlowHashKeyed, KeyChangesEveryHashAndBothFormsAgree) {
  std::mt19937_64 rng(17);
  FlowHashKey a{rng(), rng()}, b{rng(), rng()};
  int same = 0;
  for (uint16_t p = 1000; p < 3000; ++p) {
    FlowKey k = keyFor(p);
    setFlowHashKey(a);
    uint32_t ha = flowHash(k);
    ASSERT_EQ(ha, flowHash(&k, sizeof k, 0)) << "inline and table hash must agree under a key";
    setFlowHashKey(b);
    uint32_t hb = flowHash(k);
    ASSERT_EQ(hb, flowHash(&k, sizeof k, 0));
    same += ha == hb;
    setFlowHashKey(a);
    ASSERT_EQ(flowHash(k), ha) << "deterministic for one key";
  }
  EXPECT_LE(same, 2);
}

TEST_F(FlowHashKeyed, PortsCollidingUnderOneKeySpreadUnderAnother) {
  // An attacker who knows the key (here: the zero key of an unkeyed build)
  // picks source ports whose flows all land in one Maglev slot.
  constexpr uint32_t kSlots = 65537;
  setFlowHashKey({});
  uint32_t target = flowHash(keyFor(1)) % kSlots;
  std::vector<uint16_t> chosen;
  // With 16-bit ports few collide exactly; use a coarser target (1/64 of the
  // slots, one appliance's share of a 64-appliance table) as the attack.
  for (uint32_t p = 1; p < 65536; ++p)
    if (flowHash(keyFor(uint16_t(p))) % kSlots % 64 == target % 64) chosen.push_back(uint16_t(p));
  ASSERT_GT(chosen.size(), 500u);
  // Under a secret key the same ports fall on 1/64 of the shares by chance only.
  std::mt19937_64 rng(23);
  setFlowHashKey({rng(), rng()});
  size_t still = 0;
  for (uint16_t p : chosen) still += flowHash(keyFor(p)) % kSlots % 64 == target % 64;
  EXPECT_LT(still, chosen.size() / 16) << still << " of " << chosen.size() << " still collide";
}

// makeFlowKeyV4 (the listener by number or as a ListenerWord) gives
// makeFlowKey's key and direction and flowHash's hash (unkeyed and keyed).
TEST(FastKey, V4KeyIsTheGeneralKey) {
  std::mt19937 rng(13);
  struct Restore {
    FlowHashKey k = flowHashKey();
    ~Restore() { setFlowHashKey(k); }
  } restore;
  for (int i = 0; i < 50000; ++i) {
    if (i == 25000) setFlowHashKey({0x0123456789ABCDEFULL, 0xFEDCBA9876543210ULL});
    L4Tuple t;
    // Small address and port ranges so that equal addresses and ports occur.
    uint32_t a = 0x0A000000u | (rng() % 4), b = 0x0A000000u | (rng() % 4);
    if (rng() % 2) a ^= (rng() % 256) << 24;
    t.src = IpAddr::v4(a);
    t.dst = IpAddr::v4(b);
    t.proto = uint8_t(rng() % 2 ? 6 : 17);
    t.sport = uint16_t(rng() % 3);
    t.dport = uint16_t(rng() % 3);
    for (StickinessMode m : {StickinessMode::kFiveTuple, StickinessMode::kThreeTuple,
                             StickinessMode::kTwoTuple}) {
      KeyedPacket x = makeFlowKey(t, m, uint8_t(i % 3));
      KeyedPacket y = makeFlowKeyV4(t, m, uint8_t(i % 3));
      ASSERT_TRUE(x.key == y.key) << "tuple " << t.src.str() << ":" << t.sport << " -> "
                                  << t.dst.str() << ":" << t.dport;
      ASSERT_EQ(x.dir, y.dir);
      FlowKey k;
      uint8_t dir = 9;
      const uint32_t h = makeFlowKeyV4(t, m, uint8_t(i % 3), k, dir);
      ASSERT_EQ(h, flowHash(x.key));
      ASSERT_EQ(h, flowHash(&x.key, sizeof x.key, 0));
      ASSERT_TRUE(k == x.key);
      ASSERT_EQ(dir, x.dir);
      // The listener given as the key holds it (the class path's per-burst form).
      FlowKey kw;
      uint8_t dir_w = 9;
      ASSERT_EQ(makeFlowKeyV4(t, m, ListenerWord(uint8_t(i % 3)), kw, dir_w), h);
      ASSERT_TRUE(kw == x.key);
      ASSERT_EQ(dir_w, x.dir);
    }
  }
}

// Storage the worker reuses: what an earlier packet left in every field
// (a tagged ICMP error fragment, and bytes no parse writes).
void dirty(ParsedPacket& p) {
  std::memset(static_cast<void*>(&p), 0xA5, sizeof p);
  p.has_vlan = p.is_fragment = p.icmp_error = true;
  p.first_fragment = p.l4_covers_payload = false;
}

void expectSameParse(const ParsedPacket& a, const ParsedPacket& b, const Bytes& f) {
  SCOPED_TRACE(hex(f));
  EXPECT_EQ(a.l3_offset, b.l3_offset);
  EXPECT_EQ(a.ether_type, b.ether_type);
  EXPECT_EQ(a.has_vlan, b.has_vlan);
  EXPECT_EQ(a.vlan_tci, b.vlan_tci);
  EXPECT_EQ(a.vlan_tpid, b.vlan_tpid);
  EXPECT_EQ(a.ip_version, b.ip_version);
  EXPECT_EQ(a.l3_len, b.l3_len);
  EXPECT_EQ(a.l4_offset, b.l4_offset);
  EXPECT_TRUE(a.tuple.src == b.tuple.src);
  EXPECT_TRUE(a.tuple.dst == b.tuple.dst);
  EXPECT_EQ(a.tuple.proto, b.tuple.proto);
  EXPECT_EQ(a.tuple.sport, b.tuple.sport);
  EXPECT_EQ(a.tuple.dport, b.tuple.dport);
  EXPECT_EQ(a.is_fragment, b.is_fragment);
  EXPECT_EQ(a.first_fragment, b.first_fragment);
  EXPECT_EQ(a.frag_id, b.frag_id);
  EXPECT_EQ(a.icmp_error, b.icmp_error);
}

// Frames the shortcut takes and frames near them (every header byte mutated,
// lengths cut and stretched): whenever it accepts one, parseFrame must accept
// it too, with the same result.
TEST(FastParse, AcceptsOnlyWhatParseFrameAcceptsAndAgrees) {
  const IpAddr c = IpAddr::v4(0xC6336409), s = IpAddr::v4(0xCB007114);
  const L2 l2{*MacAddr::parse("02:00:00:00:00:a1"), *MacAddr::parse("02:00:00:00:0a:0a"), {}};
  std::vector<Bytes> bases = {
      ether(l2, kEthIpv4, ipv4(c, s, 6, tcp(c, s, 40000, 443, pattern(10), kTcpAck))),
      ether(l2, kEthIpv4, ipv4(c, s, 17, udp(c, s, 5353, 53, pattern(22)))),
      ether(l2, kEthIpv4, ipv4(c, s, 17, udp(c, s, 1, 6081, pattern(400)))),
      ether(l2, kEthIpv4, ipv4(c, s, 6, tcp(c, s, 1, 2)), 60),  // runt, padded
      ether(l2, kEthIpv4, ipv4(c, s, 1, icmp4Echo(true, 7, 1))),
  };
  std::mt19937 rng(17);
  size_t accepted = 0, total = 0;
  for (int iter = 0; iter < 200000; ++iter) {
    Bytes f = bases[size_t(iter) % bases.size()];
    int edits = iter % 7 == 0 ? 0 : 1 + int(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0: if (!f.empty()) f[rng() % std::min<size_t>(f.size(), 60)] = uint8_t(rng()); break;
        case 1: if (f.size() > 38) f[14 + rng() % 24] ^= uint8_t(1u << (rng() % 8)); break;
        case 2: f.resize(rng() % (f.size() + 1)); break;
        case 3: if (f.size() > 18) put16(f, 16, uint16_t(get16(f, 16) + int(rng() % 9) - 4)); break;
      }
    }
    ParsedPacket fast, full;
    if (iter % 2) dirty(fast);  // the worker's reused storage: the same answer
    Counter why;
    ++total;
    if (!parseCommon(f.data(), f.size(), fast)) continue;
    ++accepted;
    ASSERT_EQ(parseFrame(f.data(), f.size(), full, why), ParseStatus::kOk) << hex(f);
    expectSameParse(fast, full, f);
    if (HasFailure()) return;
  }
  // The shortcut must be the common case, not a corner.
  EXPECT_GT(accepted, total / 10);
}

// The IPv6 shortcut (an IPv6 appliance's returns: Geneve or VXLAN over an
// outer IPv6 header) against parseFrame, on frames it takes and frames near
// them: extension headers, fragments, ICMPv6, a tag, lengths cut and
// stretched, every header byte mutated. What it accepts, parseFrame accepts
// with the same result; it never claims payloadSum's IPv4 shortcut.
TEST(FastParse, Ipv6ShortcutAgreesWithParseFrame) {
  const IpAddr c = *IpAddr::parse("2001:db8:f::a"), s = *IpAddr::parse("2001:db8:f::1");
  const L2 l2{*MacAddr::parse("02:00:00:00:00:a1"), *MacAddr::parse("02:00:00:00:0a:0a"), {}};
  L2 tagged = l2;
  tagged.vlan = 42;
  const Bytes geneve_like = udp(c, s, 49200, 6081, pattern(24 + 32 + 64));
  std::vector<Bytes> bases = {
      ether(l2, kEthIpv6, ipv6(c, s, 17, geneve_like)),
      ether(l2, kEthIpv6, ipv6(c, s, 17, udp(c, s, 5353, 10800, pattern(8 + 14 + 20 + 8)))),
      ether(l2, kEthIpv6, ipv6(c, s, 6, tcp(c, s, 40000, 443, pattern(10), kTcpAck))),
      ether(l2, kEthIpv6, ipv6(c, s, 17, udp(c, s, 1, 2)), 60),  // no payload: 62 bytes
      ether(l2, kEthIpv6, ipv6(c, s, 17, geneve_like, {hopByHop()})),
      ether(l2, kEthIpv6, ipv6(c, s, 17, geneve_like, {fragmentExt(0, true, 7)})),
      ether(l2, kEthIpv6, ipv6(c, s, 58, icmp6Echo(c, s, true, 7, 1))),
      ether(tagged, kEthIpv6, ipv6(c, s, 17, geneve_like)),
  };
  std::mt19937 rng(23);
  size_t accepted = 0, bases_taken = 0;
  for (int iter = 0; iter < 200000; ++iter) {
    const size_t b = size_t(iter) % bases.size();
    Bytes f = bases[b];
    int edits = iter % 7 == 0 ? 0 : 1 + int(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0: if (!f.empty()) f[rng() % std::min<size_t>(f.size(), 80)] = uint8_t(rng()); break;
        case 1: if (f.size() > 62) f[14 + rng() % 48] ^= uint8_t(1u << (rng() % 8)); break;
        case 2: f.resize(rng() % (f.size() + 1)); break;
        case 3: if (f.size() > 20) put16(f, 18, uint16_t(get16(f, 18) + int(rng() % 9) - 4)); break;
      }
    }
    ParsedPacket fast, full;
    if (iter % 2) {
      dirty(fast);  // the worker's reused storage: the same answer
      fast.l4_covers_payload = true;
    }
    Counter why;
    if (!parseCommon6(f.data(), f.size(), fast)) {
      // The frames it exists for are taken unchanged; the others never.
      if (edits == 0) {
        EXPECT_GE(b, 4u) << "base " << b << " refused: " << hex(f);
      }
      continue;
    }
    ++accepted;
    if (edits == 0) {
      EXPECT_LT(b, 4u) << "base " << b << " taken: " << hex(f);
      ++bases_taken;
    }
    ASSERT_EQ(parseFrame(f.data(), f.size(), full, why), ParseStatus::kOk) << hex(f);
    expectSameParse(fast, full, f);
    EXPECT_FALSE(fast.l4_covers_payload) << hex(f);
    if (HasFailure()) return;
  }
  EXPECT_GT(bases_taken, 0u);
  EXPECT_GT(accepted, 20000u);
}

// A datagram whose 40 + 65,535 bytes behind the Ethernet header would wrap
// the 16-bit l3_len: both parsers refuse it (the frame fuzz target's
// regression v6-payload-65535-l3len-wrap); the longest that fits, both take.
TEST(FastParse, Ipv6ShortcutRefusesAWrappingLength) {
  const IpAddr c = *IpAddr::parse("2001:db8:f::a"), s = *IpAddr::parse("2001:db8:f::1");
  const L2 l2{*MacAddr::parse("02:00:00:00:00:a1"), *MacAddr::parse("02:00:00:00:0a:0a"), {}};
  Bytes f = ether(l2, kEthIpv6, ipv6(c, s, 17, udp(c, s, 49200, 6081, pattern(65535 - 8))));
  ASSERT_EQ(f.size(), 14u + 40 + 65535);
  ParsedPacket fast, full;
  Counter why;
  EXPECT_FALSE(parseCommon6(f.data(), f.size(), fast));
  EXPECT_EQ(parseFrame(f.data(), f.size(), full, why), ParseStatus::kDrop);
  const uint16_t most = 0xFFFF - 14 - 40;  // the longest payload l3_len and l4_offset hold here
  f.resize(14 + 40 + size_t(most));
  put16(f, 18, most);
  put16(f, 54 + 4, most);
  ASSERT_TRUE(parseCommon6(f.data(), f.size(), fast));
  ASSERT_EQ(parseFrame(f.data(), f.size(), full, why), ParseStatus::kOk);
  expectSameParse(fast, full, Bytes(f.begin(), f.begin() + 80));
}

// The bare-IPv4 shortcut (inner packets of aws-format replies) against parseL3.
TEST(FastParse, Ipv4ShortcutAgreesWithParseL3) {
  const IpAddr c = IpAddr::v4(0xC6336409), s = IpAddr::v4(0xCB007114);
  std::vector<Bytes> bases = {ipv4(c, s, 6, tcp(c, s, 40000, 443, pattern(10), kTcpAck)),
                              ipv4(c, s, 17, udp(c, s, 5353, 53, pattern(22)))};
  std::mt19937 rng(19);
  size_t accepted = 0;
  for (int iter = 0; iter < 100000; ++iter) {
    Bytes f = bases[size_t(iter) % bases.size()];
    for (int e = iter % 5 == 0 ? 0 : 1 + int(rng() % 3); e > 0; --e) {
      if (rng() % 3 == 0) f.resize(rng() % (f.size() + 1));
      else if (!f.empty()) f[rng() % std::min<size_t>(f.size(), 44)] = uint8_t(rng());
    }
    ParsedPacket fast, full;
    if (iter % 2) dirty(fast);
    Counter why;
    if (!parseCommonIpv4(f.data(), f.size(), 0, fast)) continue;
    ++accepted;
    ASSERT_EQ(parseL3(f.data(), f.size(), kEtherTypeIpv4, full, why), ParseStatus::kOk) << hex(f);
    expectSameParse(fast, full, f);
    if (HasFailure()) return;
  }
  EXPECT_GT(accepted, 10000u);
}

// A shortcut parser's result field by field against parseGeneve's.
void expectSameGeneve(const GeneveInfo& fast, const GeneveInfo& full) {
  EXPECT_EQ(fast.version, full.version);
  EXPECT_EQ(fast.oam, full.oam);
  EXPECT_EQ(fast.critical, full.critical);
  EXPECT_EQ(fast.protocol, full.protocol);
  EXPECT_EQ(fast.vni, full.vni);
  EXPECT_EQ(fast.header_len, full.header_len);
  EXPECT_EQ(fast.has_cookie, full.has_cookie);
  EXPECT_EQ(fast.cookie, full.cookie);
  EXPECT_EQ(fast.has_endpoint_id, full.has_endpoint_id);
  EXPECT_EQ(fast.endpoint_id, full.endpoint_id);
  EXPECT_EQ(fast.has_attachment_id, full.has_attachment_id);
  EXPECT_EQ(fast.attachment_id, full.attachment_id);
  EXPECT_EQ(fast.has_network_id, full.has_network_id);
  EXPECT_EQ(fast.nsi_egress, full.nsi_egress);
  EXPECT_EQ(fast.has_profile_id, full.has_profile_id);
  EXPECT_EQ(fast.has_nsi_endpoint, full.has_nsi_endpoint);
  EXPECT_EQ(fast.has_bypass, full.has_bypass);
  EXPECT_EQ(fast.bypass_malformed, full.bypass_malformed);
  EXPECT_EQ(fast.bypass_seconds, full.bypass_seconds);
}

// The aws-header shortcut against the general Geneve validator: whatever it
// accepts, parseGeneve accepts with the same result.
TEST(FastGeneve, AwsShortcutAgreesWithParseGeneve) {
  GeneveHdr h;
  h.vni = 0x123456;
  h.options = awsOptions(0x0A0B0C0D01020304ULL, 0x1122334455667788ULL, 0xCAFEF00D);
  const Bytes base = geneve(h);
  std::mt19937 rng(23);
  size_t accepted = 0;
  for (int iter = 0; iter < 100000; ++iter) {
    Bytes g = base;
    for (int e = iter % 5 == 0 ? 0 : 1 + int(rng() % 2); e > 0; --e) {
      if (rng() % 4 == 0) g.resize(rng() % (g.size() + 1));
      else if (!g.empty()) g[rng() % g.size()] ^= uint8_t(1u << (rng() % 8));
    }
    GeneveInfo fast, full;
    Counter why;
    if (!parseGeneveAws(g.data(), g.size(), fast)) continue;
    ++accepted;
    ASSERT_EQ(parseGeneve(g.data(), g.size(), full, why), GeneveStatus::kOk) << hex(g);
    expectSameGeneve(fast, full);
    if (HasFailure()) return;
  }
  EXPECT_GT(accepted, 10000u);
}

// The ethernet format's header shortcut (no options) against the general
// validator, on its header mutated and cut: whatever it accepts, parseGeneve
// accepts with the same result; it takes the header the encapsulation writes.
TEST(FastGeneve, PlainShortcutAgreesWithParseGeneve) {
  GeneveHdr h;
  h.vni = 0x123456;
  h.protocol = kEthTeb;
  const Bytes base = geneve(h);
  GeneveInfo first;
  ASSERT_TRUE(parseGenevePlain(base.data(), base.size(), first)) << hex(base);
  EXPECT_EQ(first.protocol, kEthTeb);
  EXPECT_EQ(first.vni, 0x123456u);
  EXPECT_EQ(first.header_len, kGeneveBaseLen);
  std::mt19937 rng(29);
  size_t accepted = 0, refused = 0;
  for (int iter = 0; iter < 100000; ++iter) {
    Bytes g = base;
    for (int e = iter % 5 == 0 ? 0 : 1 + int(rng() % 2); e > 0; --e) {
      if (rng() % 4 == 0) g.resize(rng() % (g.size() + 1));
      else if (!g.empty()) g[rng() % std::min<size_t>(g.size(), 12)] ^= uint8_t(1u << (rng() % 8));
    }
    GeneveInfo fast, full;
    Counter why;
    std::memset(static_cast<void*>(&fast), 0xA5, sizeof fast);  // written whole, whatever it held
    if (!parseGenevePlain(g.data(), g.size(), fast)) {
      ++refused;
      continue;
    }
    ++accepted;
    ASSERT_EQ(parseGeneve(g.data(), g.size(), full, why), GeneveStatus::kOk) << hex(g);
    expectSameGeneve(fast, full);
    if (HasFailure()) return;
  }
  EXPECT_GT(accepted, 10000u);
  EXPECT_GT(refused, 10000u);
}

// The return path's exact-header tests (isOwnGeneveAwsIpv4,
// isOwnGenevePlain) against the general validator, on the header mutated and
// cut and with the group's VNI or another: whatever they take, parseGeneve
// takes with that VNI, that protocol and cookie, and nothing the return path
// would treat otherwise (no O or C bit, no bypass option).
void mutate(Bytes& g, std::mt19937& rng, int iter) {
  for (int e = iter % 5 == 0 ? 0 : 1 + int(rng() % 2); e > 0; --e) {
    if (rng() % 4 == 0) g.resize(rng() % (g.size() + 1));
    else if (!g.empty()) g[rng() % g.size()] ^= uint8_t(1u << (rng() % 8));
  }
}

// 100,000 mutations of `base` (one in seven asked with a VNI one bit off
// 0x123456): every header `accepts` takes parses with parseGeneve() with that
// VNI and passes `same`; both outcomes are common.
template <class Accepts, class Same>
void mutationsAgree(const Bytes& base, unsigned seed, Accepts accepts, Same same) {
  std::mt19937 rng(seed);
  size_t accepted = 0, refused = 0;
  for (int iter = 0; iter < 100000; ++iter) {
    Bytes g = base;
    mutate(g, rng, iter);
    const uint32_t vni = iter % 7 == 6 ? 0x123456 ^ (1u << (rng() % 24)) : 0x123456;
    uint32_t cookie = 0;
    if (!accepts(g, vni, cookie)) {
      ++refused;
      continue;
    }
    ++accepted;
    GeneveInfo full;
    Counter why;
    ASSERT_EQ(parseGeneve(g.data(), g.size(), full, why), GeneveStatus::kOk) << hex(g);
    EXPECT_EQ(full.vni, vni) << hex(g);
    same(full, cookie, g);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(accepted, 10000u);
  EXPECT_GT(refused, 10000u);
}

TEST(FastGeneve, OwnAwsHeaderTestAgreesWithParseGeneve) {
  GeneveHdr h;
  h.vni = 0x123456;
  h.options = awsOptions(0x0A0B0C0D01020304ULL, 0x1122334455667788ULL, 0xCAFEF00D);
  const Bytes base = geneve(h);
  uint32_t cookie = 0;
  ASSERT_TRUE(isOwnGeneveAwsIpv4(base.data(), base.size(), 0x123456, cookie)) << hex(base);
  EXPECT_EQ(cookie, 0xCAFEF00Du);
  EXPECT_FALSE(isOwnGeneveAwsIpv4(base.data(), base.size(), 0x123457, cookie));
  EXPECT_FALSE(isOwnGeneveAwsIpv4(base.data(), base.size() - 1, 0x123456, cookie));
  // The header gwlb's own writer puts on a packet, echoed back.
  EncapParams ep;
  ep.vni = 0xABCDEF;
  ep.protocol = kEtherTypeIpv4;
  ep.aws_options = true;
  ep.endpoint_id = 7, ep.attachment_id = 9, ep.cookie = 0x01020304;
  Bytes written(encapHeaderLen(true), 0);
  writeEncap(written.data(), 0, ep);
  ASSERT_TRUE(isOwnGeneveAwsIpv4(written.data() + kOuterL2L3L4Len, kGeneveBaseLen + kAwsOptionsLen, 0xABCDEF, cookie));
  EXPECT_EQ(cookie, 0x01020304u);
  mutationsAgree(base, 31, [](const Bytes& g, uint32_t vni, uint32_t& c) {
    return isOwnGeneveAwsIpv4(g.data(), g.size(), vni, c);
  }, [](const GeneveInfo& full, uint32_t fast_cookie, const Bytes& g) {
    EXPECT_EQ(full.protocol, kEtherTypeIpv4) << hex(g);
    EXPECT_TRUE(full.has_cookie) << hex(g);
    EXPECT_EQ(full.cookie, fast_cookie) << hex(g);
    EXPECT_EQ(full.header_len, kGeneveBaseLen + kAwsOptionsLen) << hex(g);
    EXPECT_FALSE(full.oam || full.critical || full.has_bypass || full.has_network_id) << hex(g);
  });
}

TEST(FastGeneve, OwnPlainHeaderTestAgreesWithParseGeneve) {
  GeneveHdr h;
  h.vni = 0x123456;
  h.protocol = kEthTeb;
  const Bytes base = geneve(h);
  ASSERT_TRUE(isOwnGenevePlain(base.data(), base.size(), 0x123456)) << hex(base);
  EXPECT_FALSE(isOwnGenevePlain(base.data(), base.size(), 0x023456));
  EXPECT_FALSE(isOwnGenevePlain(base.data(), base.size() - 1, 0x123456));
  mutationsAgree(base, 37, [](const Bytes& g, uint32_t vni, uint32_t&) {
    return isOwnGenevePlain(g.data(), g.size(), vni);
  }, [](const GeneveInfo& full, uint32_t, const Bytes& g) {
    EXPECT_EQ(full.protocol, kEtherTypeTeb) << hex(g);
    EXPECT_EQ(full.header_len, kGeneveBaseLen) << hex(g);
    EXPECT_FALSE(full.oam || full.critical || full.has_bypass || full.has_cookie) << hex(g);
  });
}

// The encapsulation template plus the derived payload sum writes what the
// reference writer writes, for valid inner packets of every kind we carry.
TEST(FastEncap, TemplateAndDerivedSumMatchTheReferenceWriter) {
  const IpAddr c = IpAddr::v4(0xC6336409), s = IpAddr::v4(0xCB007114);
  const IpAddr c6 = *IpAddr::parse("2001:db8:1::10"), s6 = *IpAddr::parse("2001:db8:2::20");
  const L2 l2{*MacAddr::parse("02:00:00:00:00:a1"), *MacAddr::parse("02:00:00:00:0a:0a"), {}};
  const L2 tagged{l2.dst, l2.src, 0x0064};
  std::vector<Bytes> frames;
  for (size_t n : {0, 1, 2, 7, 100, 1001}) {
    frames.push_back(ether(l2, kEthIpv4, ipv4(c, s, 6, tcp(c, s, 40000, 443, pattern(n), kTcpAck))));
    frames.push_back(ether(l2, kEthIpv4, ipv4(c, s, 17, udp(c, s, 5353, 53, pattern(n)))));
    frames.push_back(ether(tagged, kEthIpv4, ipv4(c, s, 17, udp(c, s, 5353, 53, pattern(n)))));
    frames.push_back(ether(l2, kEthIpv6, ipv6(c6, s6, 6, tcp(c6, s6, 1, 2, pattern(n)))));
    frames.push_back(ether(l2, kEthIpv6, ipv6(c6, s6, 17, udp(c6, s6, 3, 4, pattern(n)), {hopByHop()})));
    frames.push_back(ether(l2, kEthIpv4, ipv4(c, s, 1, icmp4Echo(true, 9, 1, pattern(n)))));
    V4 opts;
    opts.options = Bytes{1, 1, 1, 0};
    frames.push_back(ether(l2, kEthIpv4, ipv4(c, s, 17, udp(c, s, 1, 2, pattern(n)), opts)));
  }
  for (auto frag : ipv4Fragments(c, s, 17, udp(c, s, 7, 8, pattern(300)), 160, 77))
    frames.push_back(ether(l2, kEthIpv4, frag));
  {
    Bytes u = udp(c, s, 9, 10, pattern(30));
    put16(u, 6, 0);  // IPv4 UDP without a checksum
    frames.push_back(ether(l2, kEthIpv4, ipv4(c, s, 17, u)));
    // UDP shorter than its IP payload (RFC 768 surplus area after it).
    Bytes v = udp(c, s, 9, 10, pattern(30));
    v.insert(v.end(), {0xde, 0xad, 0xbe, 0xef, 0x01});
    frames.push_back(ether(l2, kEthIpv4, ipv4(c, s, 17, v)));
  }
  size_t fast_frames = 0;
  // aws, ethernet, and VXLAN (inner frame like ethernet, its own header and port).
  for (int kind : {0, 1, 2}) {
    const bool aws = kind == 0;
    EncapParams ep;
    ep.vxlan = kind == 2;
    ep.udp_dport = 10800;
    ep.src_mac = *MacAddr::parse("02:00:00:00:00:01");
    ep.dst_mac = *MacAddr::parse("02:00:00:00:00:fe");
    ep.src_ip = 0xC0000201;
    ep.dst_ip = 0x0A00000B;
    ep.vni = 0x123456;
    ep.aws_options = aws;
    ep.protocol = aws ? kEtherTypeIpv4 : kEtherTypeTeb;
    ep.endpoint_id = 0x0A0B0C0D01020304ULL;
    ep.attachment_id = 0x1122334455667788ULL;
    EncapTemplate t;
    buildEncapTemplate(t, ep);
    ASSERT_EQ(t.len, encapHeaderLen(aws));
    uint32_t cookie = 0x01020304;
    for (const Bytes& f : frames) for (bool fast : {false, true}) {
      // The worker's two parses: the general one, and the fast one into
      // reused storage (payloadSum's shortcut for what it accepted).
      ParsedPacket p;
      Counter why;
      if (fast) {
        dirty(p);
        if (!parseCommon(f.data(), f.size(), p)) continue;
        ++fast_frames;
      } else {
        ASSERT_EQ(parseFrame(f.data(), f.size(), p, why), ParseStatus::kOk) << hex(f);
      }
      size_t start = aws ? p.l3_offset : 0;
      size_t payload = size_t(p.l3_offset) + p.l3_len - start;
      Bytes want(t.len + payload), got(t.len + payload);
      std::memcpy(want.data() + t.len, f.data() + start, payload);
      std::memcpy(got.data() + t.len, f.data() + start, payload);
      EncapParams q = ep;
      q.udp_sport = uint16_t(49152 + cookie % 16384);
      q.cookie = cookie;
      if (aws) q.protocol = p.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
      writeEncap(want.data(), payload, q);
      applyEncap(got.data(), t, payload, q.udp_sport, q.protocol, cookie, payloadSum(f.data(), start, p));
      ASSERT_EQ(hex(got, 200), hex(want, 200)) << "kind " << kind << " fast " << fast << " frame " << hex(f);
      if (kind == 2) {
        EXPECT_EQ(got[36] << 8 | got[37], 10800) << "VXLAN: the tunnel's port";
        EXPECT_EQ(got[42], 0x08) << "VXLAN: I flag";
      }
      cookie = cookie * 2654435761u + 1;
    }
  }
  // The fast parser takes untagged IPv4 TCP and UDP with a plain header: two
  // frames for each of 6 sizes, and UDP without a checksum or shorter than
  // its IP payload, in each of the three formats.
  EXPECT_EQ(fast_frames, 3u * (2 * 6 + 2));
}

// With a corrupt inner checksum the derived outer checksum does not verify:
// the appliance's UDP stack drops the packet instead of inspecting it.
TEST(FastEncap, CorruptInnerChecksumGivesAnInvalidOuterChecksum) {
  const IpAddr c = IpAddr::v4(0xC6336409), s = IpAddr::v4(0xCB007114);
  const L2 l2{*MacAddr::parse("02:00:00:00:00:a1"), *MacAddr::parse("02:00:00:00:0a:0a"), {}};
  Bytes f = ether(l2, kEthIpv4, ipv4(c, s, 6, tcp(c, s, 40000, 443, pattern(50), kTcpAck)));
  f[14 + 20 + 16] ^= 0x5A;  // TCP checksum
  ParsedPacket p;
  Counter why;
  ASSERT_EQ(parseFrame(f.data(), f.size(), p, why), ParseStatus::kOk);
  EncapParams ep;
  ep.src_ip = 0xC0000201;
  ep.dst_ip = 0x0A00000B;
  ep.aws_options = true;
  EncapTemplate t;
  buildEncapTemplate(t, ep);
  size_t payload = p.l3_len;
  Bytes out(t.len + payload);
  std::memcpy(out.data() + t.len, f.data() + 14, payload);
  applyEncap(out.data(), t, payload, 50000, kEtherTypeIpv4, 1, payloadSum(f.data(), 14, p));
  size_t udp_len = out.size() - 34;
  uint32_t sum = pseudoSum(IpAddr::v4(ep.src_ip), IpAddr::v4(ep.dst_ip), 17, udp_len);
  EXPECT_FALSE(checksumOk(out.data() + 34, udp_len, sum));
  EXPECT_TRUE(checksumOk(out.data() + 14, 20)) << "the outer IPv4 header stays valid";
}


// A source-routed packet's transport checksum covers its final destination
// (IPv4 LSRR/SSRR: the option's last address; IPv6 routing header with
// segments left: its last address, RFC 8200 8.1), not the destination in the
// header: the derived payload sum would be off and the appliance would drop a
// valid packet, so such packets are summed in full.
TEST(FastEncap, SourceRoutedPacketsAreSummedInFull) {
  const L2 l2{*MacAddr::parse("02:00:00:00:00:a1"), *MacAddr::parse("02:00:00:00:0a:0a"), {}};
  std::vector<Bytes> frames;
  {
    IpAddr c = ip("198.51.100.9"), hop = ip("203.0.113.1"), fin = ip("203.0.113.20");
    for (uint8_t type : {131, 137}) {  // LSRR, SSRR
      V4 o;
      o.options = {type, 7, 4, 203, 0, 113, 20};
      frames.push_back(ether(l2, kEthIpv4, ipv4(c, hop, 6, tcp(c, fin, 40000, 443, pattern(50), kTcpAck), o)));
      frames.push_back(ether(l2, kEthIpv4, ipv4(c, hop, 17, udp(c, fin, 40000, 53, pattern(31)), o)));
    }
  }
  {
    IpAddr c = ip("2001:db8::9"), hop = ip("2001:db8:1::1"), fin = ip("2001:db8:2::20");
    for (uint8_t rtype : {0, 4}) {  // type 0 and a segment routing header, one segment left
      Ext rh{43, {2, rtype, 1, 0, 0, 0, 0}};  // length 2: 24 bytes
      for (uint8_t b : fin.b) rh.body.push_back(b);
      frames.push_back(ether(l2, kEthIpv6, ipv6(c, hop, 6, tcp(c, fin, 40000, 443, pattern(50), kTcpAck), {rh})));
      frames.push_back(ether(l2, kEthIpv6, ipv6(c, hop, 17, udp(c, fin, 40000, 53, pattern(31)), {rh})));
    }
  }
  for (const Bytes& f : frames) {
    ParsedPacket p;
    Counter why;
    ASSERT_EQ(parseFrame(f.data(), f.size(), p, why), ParseStatus::kOk) << hex(f);
    size_t end = size_t(p.l3_offset) + p.l3_len;
    for (size_t start : {size_t(0), size_t(p.l3_offset)})
      EXPECT_EQ(csumFold(payloadSum(f.data(), start, p)), csumFold(csumAdd(0, f.data() + start, end - start)))
          << "start " << start << " frame " << hex(f);
  }
}

}  // namespace
}  // namespace gwlb
