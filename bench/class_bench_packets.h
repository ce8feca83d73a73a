// class_bench's rule sets and packets (class_bench.cc says what it measures):
// the rule sets by name, and packets parsed as a worker has them (ClassTable's
// fields and rte_acl's input buffer), random or made to match one class.
#pragma once

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_net.h"
#include "common/traffic_class.h"

namespace gwlb::bench {

inline constexpr uint32_t kMix = 4096;
inline constexpr uint32_t kBurst = 32;

[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "class_bench: %s\n", what.c_str());
  std::exit(2);
}

// ---- rule sets ------------------------------------------------------------

inline std::vector<ClassRule> ruleSet(const std::string& name) {
  std::vector<ClassRule> rules;
  if (name.rfind("mixed-", 0) == 0) {
    const uint32_t n = uint32_t(std::strtoul(name.c_str() + 6, nullptr, 10));
    if (n == 0 || n > 1000) die("mixed-N needs 1 <= N <= 1000: " + name);
    for (const ctl::TrafficClassConfig& t : benchClasses(n)) rules.push_back(ctl::classRule(t));
  } else if (name == "vlan-1000") {
    for (uint16_t i = 0; i < 1000; ++i) {
      ClassRule r;
      r.vlans = {uint16_t(1 + i)};
      rules.push_back(r);
    }
  } else if (name == "prefix-1000") {
    for (uint32_t i = 0; i < 1000; ++i) {
      ClassRule r;
      r.prefixes = {{IpAddr::v4(0xAC100000u + (i << 8)), 24}};
      rules.push_back(r);
    }
  } else {
    die("unknown rule set '" + name + "' (mixed-N, vlan-1000, prefix-1000)");
  }
  return rules;
}

inline bool prefixOnly(const std::vector<ClassRule>& rules) {
  for (const ClassRule& r : rules)
    if (!r.ingress_ports.empty() || !r.vlans.empty() || !r.protocols.empty() || !r.l4_ports.empty() ||
        r.prefixes.empty())
      return false;
  return true;
}

// ---- packets --------------------------------------------------------------

struct AclKey {  // rte_acl's input buffer, network byte order
  uint8_t proto;
  uint8_t pad[3];
  uint32_t src, dst;
  uint16_t sport, dport;
  uint16_t port, vlan;
};
static_assert(sizeof(AclKey) == 20);

struct Packet {
  uint16_t port = 0, vlan = 0;
  L4Tuple t;
  AclKey key{};
};

inline uint32_t v4Of(const IpAddr& a) { return uint32_t(a.b[0]) << 24 | a.b[1] << 16 | a.b[2] << 8 | a.b[3]; }

inline Packet finish(uint16_t port, uint16_t vlan, uint8_t proto, uint32_t src, uint32_t dst, uint16_t sport,
              uint16_t dport) {
  Packet p;
  p.port = port;
  p.vlan = vlan;
  p.t.src = IpAddr::v4(src);
  p.t.dst = IpAddr::v4(dst);
  p.t.proto = proto;
  p.t.sport = sport;
  p.t.dport = dport;
  p.key.proto = proto;
  p.key.src = htonl(src);
  p.key.dst = htonl(dst);
  p.key.sport = htons(sport);
  p.key.dport = htons(dport);
  p.key.port = htons(port);
  p.key.vlan = htons(vlan);
  return p;
}

// Packets: random fields, or fields picked to match one class (a member of
// each set it gives; a prefix or a port on either endpoint at random), with
// values at and just beyond the edges of ranges and prefixes now and then
// (and, for --check, of the sets).
class PacketGen {
 public:
  // set_neighbours: a set's member is now and then replaced by its neighbour
  // just outside (--check; the timing mix keeps its members).
  PacketGen(const std::vector<ClassRule>& rules, uint64_t seed, bool set_neighbours = false)
      : rules_(rules), rng_(seed), set_neighbours_(set_neighbours) {}

  Packet random() {
    static constexpr uint8_t kProtos[] = {6, 17, 1, 132, 47};
    const uint16_t port = uint16_t(pick(8));
    const uint16_t vlan = coin() ? 0 : uint16_t(pick(4096));
    const uint8_t proto = pick(8) ? kProtos[pick(5)] : uint8_t(pick(256));
    auto addr = [&]() -> uint32_t {
      switch (pick(4)) {
        case 0: return uint32_t(rng_());
        case 1: return 0x0A000000u | uint32_t(pick(1u << 24));  // 10/8, where benchClasses' prefixes are
        case 2: return 0xAC100000u | uint32_t(pick(1u << 20));  // 172.16/12
        default: return 0xC0A80000u | uint32_t(pick(1u << 16));
      }
    };
    auto l4 = [&]() -> uint16_t { return coin() ? uint16_t(pick(65536)) : uint16_t(pick(40000)); };
    return finish(port, vlan, proto, addr(), addr(), l4(), l4());
  }

  // A packet built to match class i (it may still match an earlier one
  // first, or none: an IPv6-only class cannot match an IPv4 packet).
  Packet towards(size_t i) {
    Packet base = random();
    const ClassRule& r = rules_[i];
    uint16_t port = base.port, vlan = base.vlan, sport = base.t.sport, dport = base.t.dport;
    uint8_t proto = base.t.proto;
    uint32_t src = v4Of(base.t.src), dst = v4Of(base.t.dst);
    // A member of a set, or now and then its neighbour just outside.
    auto member = [&](const auto& set) {
      auto x = set[pick(set.size())];
      if (!set_neighbours_) return x;
      switch (pick(8)) {
        case 0: return decltype(x)(x + 1);
        case 1: return decltype(x)(x - 1);
        default: return x;
      }
    };
    if (!r.ingress_ports.empty()) port = member(r.ingress_ports) & 0xFF;
    if (!r.vlans.empty()) vlan = member(r.vlans) & 0xFFF;
    if (!r.protocols.empty()) proto = member(r.protocols);
    std::vector<std::pair<IpAddr, uint8_t>> v4;
    for (const auto& p : r.prefixes)
      if (p.first.family == 4) v4.push_back(p);
    if (!v4.empty()) {
      const auto& [a, len] = v4[pick(v4.size())];
      const uint32_t base_a = len ? v4Of(a) & ~((uint64_t(1) << (32 - len)) - 1) : 0;
      const uint32_t size_m1 = len ? uint32_t((uint64_t(1) << (32 - len)) - 1) : 0xFFFFFFFFu;
      uint32_t x;
      switch (pick(8)) {
        case 0: x = base_a; break;
        case 1: x = base_a + size_m1; break;
        case 2: x = base_a - 1; break;             // just below
        case 3: x = base_a + size_m1 + 1; break;   // just above
        default: x = base_a + uint32_t(uint64_t(rng_()) % (uint64_t(size_m1) + 1));
      }
      (coin() ? src : dst) = x;
    }
    if (!r.l4_ports.empty()) {
      const auto& [lo, hi] = r.l4_ports[pick(r.l4_ports.size())];
      uint16_t x;
      switch (pick(8)) {
        case 0: x = lo; break;
        case 1: x = hi; break;
        case 2: x = uint16_t(lo - 1); break;
        case 3: x = uint16_t(hi + 1); break;
        default: x = uint16_t(lo + pick(uint32_t(hi - lo) + 1));
      }
      (coin() ? sport : dport) = x;
    }
    return finish(port, vlan, proto, src, dst, sport, dport);
  }

  uint32_t pick(uint64_t n) { return uint32_t(uint64_t(rng_()) % n); }
  bool coin() { return rng_() & 1; }

 private:
  const std::vector<ClassRule>& rules_;
  std::mt19937_64 rng_;
  bool set_neighbours_;
};

// The timing mix: a quarter each towards a class in the first tenth, in the
// last tenth, anywhere, and random; shuffled.
inline std::vector<Packet> timingMix(const std::vector<ClassRule>& rules, uint64_t seed) {
  PacketGen g(rules, seed);
  const size_t n = rules.size(), tenth = std::max<size_t>(1, n / 10);
  std::vector<Packet> v;
  for (uint32_t i = 0; i < kMix; ++i) {
    switch (i % 4) {
      case 0: v.push_back(g.towards(g.pick(tenth))); break;
      case 1: v.push_back(g.towards(n - 1 - g.pick(tenth))); break;
      case 2: v.push_back(g.towards(g.pick(n))); break;
      default: v.push_back(g.random());
    }
  }
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed ^ 0x5eed));
  return v;
}

}  // namespace gwlb::bench
