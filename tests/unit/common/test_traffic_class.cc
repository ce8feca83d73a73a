// ClassTable (common/traffic_class.h, issue 27): the matching table the
// workers classify with. Every field, both directions of a flow, IPv4 and
// IPv6, VLAN 0 (untagged), port ranges, first match, packets without ports.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include "common/traffic_class.h"

namespace gwlb {
namespace {

IpAddr ip(const char* s) { return *IpAddr::parse(s); }

L4Tuple tuple(const char* src, const char* dst, uint8_t proto, uint16_t sport, uint16_t dport) {
  L4Tuple t;
  t.src = ip(src);
  t.dst = ip(dst);
  t.proto = proto;
  t.sport = sport;
  t.dport = dport;
  return t;
}
L4Tuple reversed(const L4Tuple& t) { return tuple(t.dst.str().c_str(), t.src.str().c_str(), t.proto, t.dport, t.sport); }

ClassRule inspect(uint8_t listener) {
  ClassRule r;
  r.listener = listener;
  return r;
}

const L4Tuple kWeb = tuple("198.51.100.7", "10.1.2.3", kProtoTcp, 40000, 443);

TEST(ClassTable, EmptyHasNoClasses) {
  ClassTable t;
  EXPECT_TRUE(t.empty());
  EXPECT_TRUE(ClassTable(std::vector<ClassRule>{}).empty());
}

TEST(ClassTable, ARuleWithoutMatchTakesEverything) {
  ClassTable t({inspect(3)});
  EXPECT_EQ(t.classify(0, 0, kWeb), 0);
  EXPECT_EQ(t.classify(200, 4095, reversed(kWeb)), 0);
  EXPECT_EQ(t.listener(0), 3);
  EXPECT_EQ(t.action(0), ClassVerdict::kInspect);
}

TEST(ClassTable, IngressPorts) {
  ClassRule a = inspect(1);
  a.ingress_ports = {2, 5};
  ClassTable t({a});
  EXPECT_EQ(t.classify(2, 0, kWeb), 0);
  EXPECT_EQ(t.classify(5, 0, reversed(kWeb)), 0);
  EXPECT_EQ(t.classify(3, 0, kWeb), kNoClass);
  EXPECT_EQ(t.classify(300, 0, kWeb), kNoClass);  // beyond any DPDK port id
}

TEST(ClassTable, VlansWithZeroForUntagged) {
  ClassRule tagged = inspect(1);
  tagged.vlans = {100, 200};
  ClassRule untagged = inspect(2);
  untagged.vlans = {0};
  ClassTable t({tagged, untagged});
  EXPECT_EQ(t.classify(0, 100, kWeb), 0);
  EXPECT_EQ(t.classify(0, 200, reversed(kWeb)), 0);  // the other direction on its own VLAN
  EXPECT_EQ(t.classify(0, 0, kWeb), 1);
  EXPECT_EQ(t.classify(0, 300, kWeb), kNoClass);
  EXPECT_EQ(t.classify(0, 4095, kWeb), kNoClass);
}

TEST(ClassTable, ProtocolsByNumber) {
  ClassRule r = inspect(1);
  r.protocols = {kProtoUdp, 132, 47};  // UDP, SCTP, GRE
  ClassTable t({r});
  EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", kProtoUdp, 1, 53)), 0);
  EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", 47, 0, 0)), 0);
  EXPECT_EQ(t.classify(0, 0, kWeb), kNoClass);
}

TEST(ClassTable, PortsAndRangesMatchEitherEndpoint) {
  ClassRule r = inspect(1);
  r.l4_ports = {{443, 443}, {8000, 8099}};
  ClassTable t({r});
  EXPECT_EQ(t.classify(0, 0, kWeb), 0);
  EXPECT_EQ(t.classify(0, 0, reversed(kWeb)), 0);  // 443 is now the source port
  for (uint16_t p : {8000, 8050, 8099})
    EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", kProtoTcp, 50000, p)), 0) << p;
  for (uint16_t p : {442, 444, 7999, 8100})
    EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", kProtoTcp, 50000, p)), kNoClass) << p;
  EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", kProtoTcp, 0, 65535)), kNoClass);
}

TEST(ClassTable, PortsAtTheEndsOfTheRange) {
  ClassRule lo = inspect(1), hi = inspect(2);
  lo.l4_ports = {{0, 0}};
  hi.l4_ports = {{65535, 65535}};
  ClassTable t({lo, hi});
  EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", kProtoUdp, 0, 7)), 0);
  EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", kProtoUdp, 7, 65535)), 1);
  EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", kProtoUdp, 7, 8)), kNoClass);
}

TEST(ClassTable, PacketsWithoutPortsMatchOnlyRulesWithoutPorts) {
  ClassRule dns = inspect(1), rest = inspect(2);
  dns.l4_ports = {{53, 53}};
  ClassTable t({dns, rest});
  L4Tuple frag = tuple("10.0.0.1", "10.0.0.2", kProtoUdp, 0, 0);
  EXPECT_EQ(t.classify(0, 0, tuple("10.0.0.1", "10.0.0.2", kProtoUdp, 5000, 53)), 0);
  EXPECT_EQ(t.classify(0, 0, frag, /*ports=*/false), 1);
  EXPECT_EQ(ClassTable({dns}).classify(0, 0, frag, false), kNoClass);
}

TEST(ClassTable, Ipv4PrefixesMatchEitherEndpoint) {
  ClassRule r = inspect(1);
  r.prefixes = {{ip("10.1.0.0"), 16}, {ip("192.0.2.9"), 32}};
  ClassTable t({r});
  EXPECT_EQ(t.classify(0, 0, kWeb), 0);
  EXPECT_EQ(t.classify(0, 0, reversed(kWeb)), 0);
  EXPECT_EQ(t.classify(0, 0, tuple("192.0.2.9", "203.0.113.1", kProtoUdp, 1, 2)), 0);
  EXPECT_EQ(t.classify(0, 0, tuple("10.0.255.255", "10.2.0.0", kProtoUdp, 1, 2)), kNoClass);
  EXPECT_EQ(t.classify(0, 0, tuple("192.0.2.8", "192.0.2.10", kProtoUdp, 1, 2)), kNoClass);
  // An IPv4 prefix says nothing of IPv6 packets.
  EXPECT_EQ(t.classify(0, 0, tuple("2001:db8::1", "2001:db8::2", kProtoUdp, 1, 2)), kNoClass);
}

TEST(ClassTable, Ipv6PrefixesAndTheWholeSpace) {
  ClassRule v6 = inspect(1), all4 = inspect(2);
  v6.prefixes = {{ip("2001:db8:1::"), 48}};
  all4.prefixes = {{ip("0.0.0.0"), 0}};
  ClassTable t({v6, all4});
  EXPECT_EQ(t.classify(0, 0, tuple("2001:db8:1:ffff::1", "2001:db8:9::1", kProtoTcp, 1, 2)), 0);
  EXPECT_EQ(t.classify(0, 0, tuple("2001:db8:9::1", "2001:db8:1::", kProtoTcp, 2, 1)), 0);
  EXPECT_EQ(t.classify(0, 0, tuple("2001:db8:2::1", "2001:db8:9::1", kProtoTcp, 1, 2)), kNoClass);
  EXPECT_EQ(t.classify(0, 0, tuple("255.255.255.255", "0.0.0.0", kProtoTcp, 1, 2)), 1);
  ClassRule none6 = inspect(3);
  none6.prefixes = {{ip("::"), 0}};
  EXPECT_EQ(ClassTable({none6}).classify(0, 0, tuple("ffff::1", "::1", kProtoTcp, 1, 2)), 0);
}

TEST(ClassTable, EveryGivenFieldMustMatch) {
  ClassRule r = inspect(1);
  r.ingress_ports = {1};
  r.vlans = {100};
  r.prefixes = {{ip("10.1.0.0"), 16}};
  r.protocols = {kProtoTcp};
  r.l4_ports = {{443, 443}};
  ClassTable t({r});
  EXPECT_EQ(t.classify(1, 100, kWeb), 0);
  EXPECT_EQ(t.classify(1, 100, reversed(kWeb)), 0);
  EXPECT_EQ(t.classify(2, 100, kWeb), kNoClass);
  EXPECT_EQ(t.classify(1, 101, kWeb), kNoClass);
  EXPECT_EQ(t.classify(1, 100, tuple("198.51.100.7", "10.2.2.3", kProtoTcp, 40000, 443)), kNoClass);
  EXPECT_EQ(t.classify(1, 100, tuple("198.51.100.7", "10.1.2.3", kProtoUdp, 40000, 443)), kNoClass);
  EXPECT_EQ(t.classify(1, 100, tuple("198.51.100.7", "10.1.2.3", kProtoTcp, 40000, 444)), kNoClass);
}

TEST(ClassTable, FirstMatchWinsAndActionsAreKept) {
  ClassRule backups;
  backups.prefixes = {{ip("10.9.0.0"), 16}};
  backups.l4_ports = {{873, 873}};
  backups.action = ClassVerdict::kBypass;
  ClassRule blocked;
  blocked.protocols = {kProtoUdp};
  blocked.action = ClassVerdict::kDrop;
  ClassTable t({backups, blocked, inspect(4)});
  EXPECT_EQ(t.classify(0, 0, tuple("10.9.1.1", "10.0.0.1", kProtoTcp, 873, 50000)), 0);
  EXPECT_EQ(t.classify(0, 0, tuple("10.9.1.1", "10.0.0.1", kProtoUdp, 873, 50000)), 0);
  EXPECT_EQ(t.classify(0, 0, tuple("10.8.1.1", "10.0.0.1", kProtoUdp, 873, 50000)), 1);
  EXPECT_EQ(t.classify(0, 0, kWeb), 2);
  EXPECT_EQ(t.action(0), ClassVerdict::kBypass);
  EXPECT_EQ(t.action(1), ClassVerdict::kDrop);
  EXPECT_EQ(t.action(2), ClassVerdict::kInspect);
  EXPECT_EQ(t.listener(2), 4);
}

// Past one 64-bit word of rules: a late rule still wins only when no earlier
// one matches, and identical field sets share storage.
TEST(ClassTable, AThousandRulesFirstMatchAcrossWords) {
  std::vector<ClassRule> rs;
  for (int i = 0; i < 1000; ++i) {
    ClassRule r = inspect(uint8_t(i % 16));
    r.vlans = {uint16_t(1 + i % 4000)};
    r.l4_ports = {{uint16_t(10000 + i), uint16_t(10000 + i)}};
    rs.push_back(r);
  }
  rs[700].vlans = {5};  // also rule 4's VLAN, with a later port
  ClassTable t(rs);
  EXPECT_EQ(t.size(), 1000u);
  EXPECT_EQ(t.classify(0, 1000, tuple("10.0.0.1", "10.0.0.2", kProtoTcp, 1, 10999)), 999);
  EXPECT_EQ(t.classify(0, 5, tuple("10.0.0.1", "10.0.0.2", kProtoTcp, 10004, 10700)), 4);
  EXPECT_EQ(t.classify(0, 5, tuple("10.0.0.1", "10.0.0.2", kProtoTcp, 1, 10700)), 700);
  EXPECT_EQ(t.classify(0, 1000, tuple("10.0.0.1", "10.0.0.2", kProtoTcp, 1, 10998)), kNoClass);
  EXPECT_EQ(t.listener(999), 999 % 16);
}

// The snapshot builder reuses a compiled table while the rules compare equal.
TEST(ClassTable, RulesCompareByEveryField) {
  using Rules = std::vector<ClassRule>;
  ClassRule a = inspect(1);
  a.vlans = {7};
  ClassRule b = a;
  EXPECT_TRUE(Rules{a} == Rules{b});
  b.listener = 2;
  EXPECT_FALSE(Rules{a} == Rules{b});
  b = a;
  b.prefixes = {{ip("10.0.0.0"), 8}};
  EXPECT_FALSE(Rules{a} == Rules{b});
  b = a;
  b.action = ClassVerdict::kDrop;
  EXPECT_FALSE(Rules{a} == Rules{b});
  EXPECT_FALSE(Rules{a} == (Rules{a, a}));
}


// --- The compiled table against the rule text, on random rule sets: the
// cross product and the bit-vector form (a cell limit of 0) must both give
// the first rule whose every given field matches.

bool inPrefix(const IpAddr& a, const IpAddr& p, uint8_t len) {
  if (a.family != p.family) return false;
  for (int bit = 0; bit < len; ++bit) {
    const uint8_t m = uint8_t(0x80 >> (bit % 8));
    if ((a.b[size_t(bit / 8)] & m) != (p.b[size_t(bit / 8)] & m)) return false;
  }
  return true;
}

uint16_t naive(const std::vector<ClassRule>& rs, uint16_t port, uint16_t vlan, const L4Tuple& t, bool ports) {
  auto has = [](const auto& v, auto x) { return v.empty() || std::find(v.begin(), v.end(), x) != v.end(); };
  for (size_t i = 0; i < rs.size(); ++i) {
    const ClassRule& r = rs[i];
    if (!has(r.ingress_ports, port) || !has(r.vlans, vlan) || !has(r.protocols, t.proto)) continue;
    if (!r.l4_ports.empty()) {
      bool hit = false;
      for (auto [lo, hi] : r.l4_ports)
        hit |= ports && ((t.sport >= lo && t.sport <= hi) || (t.dport >= lo && t.dport <= hi));
      if (!hit) continue;
    }
    if (!r.prefixes.empty()) {
      bool hit = false;
      for (const auto& [a, len] : r.prefixes) hit |= inPrefix(t.src, a, len) || inPrefix(t.dst, a, len);
      if (!hit) continue;
    }
    return uint16_t(i);
  }
  return kNoClass;
}

TEST(ClassTable, CrossProductAndBitVectorsAgreeWithTheRulesOnRandomSets) {
  std::mt19937 rng(27);
  auto pick = [&](uint32_t n) { return uint32_t(rng() % n); };
  // Values drawn from small pools so that rules and packets meet often.
  const char* v4[] = {"10.0.0.0", "10.1.0.0", "10.1.2.0", "10.1.2.3", "192.0.2.0", "0.0.0.0", "10.1.2.128"};
  const char* v6[] = {"2001:db8::", "2001:db8:1::", "2001:db8:1::5", "::"};
  for (int set = 0; set < 200; ++set) {
    std::vector<ClassRule> rs(1 + pick(set < 180 ? 12 : 300));
    for (ClassRule& r : rs) {
      r.listener = uint8_t(pick(16));
      r.action = ClassVerdict(pick(3));
      if (pick(4) == 0) r.ingress_ports = {uint16_t(pick(3))};
      if (pick(3) == 0) r.vlans = {uint16_t(pick(4)), uint16_t(pick(4))};
      if (pick(3) == 0) r.protocols = {uint8_t(pick(2) ? kProtoTcp : kProtoUdp)};
      if (pick(3) == 0) {
        uint16_t lo = uint16_t(pick(40));
        r.l4_ports = {{lo, uint16_t(lo + pick(5))}};
      }
      for (uint32_t n = pick(3); n-- > 0;) {
        if (pick(3)) r.prefixes.push_back({ip(v4[pick(7)]), uint8_t(pick(33))});
        else r.prefixes.push_back({ip(v6[pick(4)]), uint8_t(pick(129))});
      }
    }
    const ClassTable cross(rs), bits(rs, 0);
    // No trie budget: IPv4 through the interval search (out of line).
    const ClassTable search(rs, ClassTable::kDefaultCellLimit, 0);
    ASSERT_TRUE(cross.crossProduct());
    ASSERT_FALSE(bits.crossProduct());
    ASSERT_TRUE(search.crossProduct());
    for (int k = 0; k < 300; ++k) {
      L4Tuple t;
      if (pick(4)) {
        t.src = ip(v4[pick(7)]), t.dst = ip(v4[pick(7)]);
        t.src.b[3] ^= uint8_t(pick(2) ? 0 : pick(256));
      } else {
        t.src = ip(v6[pick(4)]), t.dst = ip(v6[pick(4)]);
        t.dst.b[15] ^= uint8_t(pick(256));
      }
      t.proto = uint8_t(pick(3) ? kProtoTcp : kProtoUdp);
      t.sport = uint16_t(pick(45)), t.dport = uint16_t(pick(45));
      const uint16_t port = uint16_t(pick(4) == 0 ? 300 : pick(3)), vlan = uint16_t(pick(4));
      const bool ports = pick(5) != 0;
      const uint16_t want = naive(rs, port, vlan, t, ports);
      ASSERT_EQ(cross.classify(port, vlan, t, ports), want) << "set " << set << " packet " << k;
      ASSERT_EQ(bits.classify(port, vlan, t, ports), want) << "set " << set << " packet " << k;
      ASSERT_EQ(search.classify(port, vlan, t, ports), want) << "set " << set << " packet " << k;
      ASSERT_EQ(cross.classify(port, vlan, reversed(t), ports), cross.classify(port, vlan, t, ports));
    }
  }
}

// L4 port sets get 16-bit ids, and up to 65,536 ports plus "ports unknown"
// (a non-first fragment) can each have a set of their own. 74 rules of at
// most 1,024 ranges do it: one rule for every port, then per bit of the port
// number the rules holding the ports with that bit set (bit b's 2^(15-b)
// runs, 1,024 runs a rule), so every port's set differs from every other's
// and from the fragments' (only the last rule, which has no l4_ports).
TEST(ClassTable, EveryPortItsOwnSetAndFragmentsTooAgreeWithTheRules) {
  std::vector<ClassRule> rs;
  ClassRule any = inspect(0);
  any.l4_ports = {{0, 65535}};
  for (int b = 15; b >= 0; --b) {
    const uint32_t run = 1u << b;
    ClassRule r = inspect(1);
    for (uint32_t lo = run; lo < 65536; lo += 2 * run) {
      r.l4_ports.push_back({uint16_t(lo), uint16_t(lo + run - 1)});
      if (r.l4_ports.size() == 1024) rs.push_back(r), r.l4_ports.clear();
    }
    if (!r.l4_ports.empty()) rs.push_back(r);
  }
  rs.push_back(any);
  ClassRule fragments = inspect(2);
  fragments.protocols = {kProtoUdp};
  rs.push_back(fragments);
  ASSERT_EQ(rs.size(), 75u);
  const ClassTable table(rs), bits(rs, 0);
  std::mt19937 rng(34);
  for (int k = 0; k < 3000; ++k) {
    L4Tuple t = tuple("10.0.0.1", "10.0.0.2", k % 2 ? kProtoUdp : kProtoTcp, uint16_t(rng()), uint16_t(rng()));
    if (k < 4) t.sport = t.dport = uint16_t(k * 65535 / 3);  // ports 0 and 65535 among them
    for (bool ports : {true, false}) {
      const uint16_t want = naive(rs, 0, 0, t, ports);
      ASSERT_EQ(table.classify(0, 0, t, ports), want) << "packet " << k << (ports ? "" : ", ports unknown");
      ASSERT_EQ(bits.classify(0, 0, t, ports), want) << "packet " << k << (ports ? "" : ", ports unknown");
    }
  }
}

// The mixed 1,000-rule set of the benchmark (bench/bench_net.h) compiles to
// the cross product within the default limit.
TEST(ClassTable, AThousandMixedRulesGetTheCrossProduct) {
  std::vector<ClassRule> rs;
  for (uint32_t i = 0; i < 999; ++i) {
    ClassRule r = inspect(0);
    if (i % 4 == 0) r.vlans = {uint16_t(100 + i % 3900)}, r.protocols = {kProtoUdp};
    if (i % 4 == 1) {
      uint8_t a[4] = {10, uint8_t(100 + i / 256 % 100), uint8_t(i % 256), 0};
      r.prefixes = {{IpAddr::v4(a), 24}};
      r.l4_ports = {{uint16_t(2000 + i), uint16_t(2000 + i)}};
    }
    if (i % 4 == 2) r.protocols = {kProtoTcp}, r.l4_ports = {{uint16_t(30000 + i), uint16_t(30005 + i)}};
    if (i % 4 == 3) {
      std::array<uint8_t, 16> a{0x20, 0x01, 0x0d, 0xb8, uint8_t(i >> 8), uint8_t(i)};
      r.prefixes = {{IpAddr::v6(a.data()), 48}};
      r.vlans = {uint16_t(1 + i % 4000)};
    }
    rs.push_back(r);
  }
  ClassRule last = inspect(1);
  last.prefixes = {{ip("10.64.0.0"), 16}};
  last.protocols = {kProtoUdp};
  last.l4_ports = {{53, 53}};
  last.vlans = {0};
  rs.push_back(last);
  const ClassTable t(rs);
  EXPECT_TRUE(t.crossProduct());
  // docs/performance.md quotes this size ("34.0 MiB").
  EXPECT_NEAR(double(t.memoryBytes()) / (1 << 20), 34.0, 0.05);
  EXPECT_EQ(t.classify(0, 0, tuple("10.64.1.1", "198.51.100.1", kProtoUdp, 4000, 53)), 999);
  EXPECT_EQ(t.classify(0, 0, tuple("10.100.5.9", "198.51.100.1", kProtoTcp, 2005, 9)), 5);
  EXPECT_EQ(t.classify(0, 104, tuple("10.64.1.1", "198.51.100.1", kProtoUdp, 4000, 53)), 4);
}

// Scattered /32s (each in a /24 of its own: a 1 KiB trie node apiece) past
// the trie's budget: IPv4 goes through the interval search, the compiled
// size stays a few bytes per prefix, and every answer is the rules'.
TEST(ClassTable, ScatteredHostRoutesPastTheTrieBudgetUseTheIntervalSearch) {
  std::mt19937 rng(34);
  std::vector<ClassRule> rs(1000);
  std::vector<IpAddr> hosts;
  for (size_t i = 0; i < rs.size(); ++i) {
    ClassRule& r = rs[i];
    r.listener = uint8_t(i % 7);
    if (i % 5 == 0) r.l4_ports = {{uint16_t(1000 + i), uint16_t(1000 + i)}};
    if (i % 3 == 0) r.protocols = {kProtoTcp};
    for (int k = 0; k < 48; ++k) {  // 48,000 host routes in all
      const uint32_t a = uint32_t(rng());
      const uint8_t b[4] = {uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), uint8_t(a)};
      r.prefixes.push_back({IpAddr::v4(b), 32});
      hosts.push_back(IpAddr::v4(b));
    }
  }
  rs[500].prefixes.push_back({ip("10.0.0.0"), 8});  // one wide prefix over many of them
  rs[999].prefixes.clear();                         // and a catch-all
  const ClassTable t(rs);
  EXPECT_FALSE(t.ipv4Trie());
  EXPECT_TRUE(t.crossProduct());
  // The trie alone would take 1 KiB for each of ~48,000 /24s (47 MiB).
  EXPECT_LT(t.memoryBytes(), size_t(16) << 20) << t.memoryBytes();
  const ClassTable with_trie(rs, ClassTable::kDefaultCellLimit, size_t(1) << 30);
  EXPECT_TRUE(with_trie.ipv4Trie());
  EXPECT_GT(with_trie.memoryBytes(), size_t(40) << 20);
  const ClassTable bits(rs, 0);
  EXPECT_FALSE(bits.ipv4Trie());
  EXPECT_FALSE(bits.crossProduct());
  auto pick = [&](uint32_t n) { return uint32_t(rng() % n); };
  for (int k = 0; k < 20000; ++k) {
    L4Tuple t4;
    t4.src = hosts[pick(uint32_t(hosts.size()))];
    t4.dst = pick(2) ? hosts[pick(uint32_t(hosts.size()))] : ip("198.51.100.1");
    if (pick(4) == 0) t4.src.b[3] ^= 1;  // a neighbour: another interval
    if (pick(8) == 0) t4.dst = ip("10.1.2.3");
    t4.proto = uint8_t(pick(2) ? kProtoTcp : kProtoUdp);
    t4.sport = uint16_t(1000 + pick(1000));
    t4.dport = uint16_t(pick(2) ? 443 : 1000 + pick(1000));
    const bool ports = pick(9) != 0;
    // The reference walks every prefix: a sample of it; the three forms on all.
    const uint16_t want = k % 50 == 0 ? naive(rs, 0, 0, t4, ports) : bits.classify(0, 0, t4, ports);
    ASSERT_EQ(t.classify(0, 0, t4, ports), want) << k;
    ASSERT_EQ(with_trie.classify(0, 0, t4, ports), want) << k;
    ASSERT_EQ(bits.classify(0, 0, t4, ports), want) << k;
  }
}

// A compilation's listeners are replaced without compiling again.
TEST(ClassTable, WithListenersKeepsTheCompilation) {
  ClassRule a = inspect(0), b = inspect(0);
  a.protocols = {kProtoUdp};
  const ClassTable t({a, b});
  const ClassTable u = t.withListeners({4, 9});
  EXPECT_TRUE(u.sameCompilation(t));
  EXPECT_EQ(u.listener(0), 4);
  EXPECT_EQ(u.listener(1), 9);
  EXPECT_EQ(t.listener(1), 0);
  EXPECT_EQ(u.classify(0, 0, kWeb), 1);
}

}  // namespace
}  // namespace gwlb
