// Benchmark (never pass/fail, except --check): the traffic-class table
// (common/traffic_class.h, ClassTable) beside DPDK's classifiers, in one
// process, on the same rules and the same packets (issue 27 item 3: choose
// the structure by measurement).
//
// Rule sets (ordered, first match wins, as gwlbd compiles them):
//   mixed-N      bench/bench_net.h benchClasses(N), converted by
//                ctl::classRule as the snapshot builder does: a quarter each
//                VLAN+UDP, IPv4 /24+L4 port, TCP+port range, VLAN+IPv6 /48,
//                and the last a /16+UDP+port 53+untagged (N = 10, 100, 1000)
//   vlan-1000    1,000 tenants, one VLAN each (VLANs 1..1000)
//   prefix-1000  1,000 IPv4 /24s (172.16.0.0/24, 172.16.1.0/24, ...), one
//                per rule; a prefix matches either endpoint, and the packets
//                that match one carry it as their source or their
//                destination address in equal shares
//
// Structures:
//   cross_product  ClassTable(rules): equivalence classes, a cross product
//                  per address family (what gwlbd uses)
//   bit_vectors    ClassTable(rules, 0): the same classes AND-ed as bit
//                  vectors (gwlbd's fallback for very large products)
//   rte_acl        DPDK's multi-field classifier. Fields (one input buffer
//                  per packet, network byte order): protocol (1 byte,
//                  bitmask), IPv4 source and destination (masks), source and
//                  destination port (ranges), ingress port and VLAN (ranges).
//                  rte_acl matches a field against one value, mask or range,
//                  so a class becomes several ACL rules: one per ingress-port
//                  run x VLAN run x protocol x (prefix as source, prefix as
//                  destination) x (port range as source port, as destination
//                  port); every ACL rule of class i has priority N - i and
//                  userdata i + 1, so the highest priority match is the first
//                  class. IPv4 only: classes whose prefixes are all IPv6 are
//                  left out (they cannot match an IPv4 packet) and the
//                  packets are IPv4. Classified in bursts of 32
//                  (rte_acl_classify, its intended use) and one packet at a
//                  time.
//   rte_lpm        (prefix-1000 only) DPDK's longest-prefix match, prefix ->
//                  class index, two lookups per packet (source and
//                  destination), the smaller index wins; a prefix's entry
//                  holds the first class whose prefix covers it, so overlaps
//                  keep first-match order. Only for rule sets of prefixes alone.
//
// Figures per rule set and structure: build time (the thread's CPU time
// around the compilation from the rule list: the ACL expansion, create, add,
// build; the LPM create and adds; wall-clock time beside it in the JSON),
// median of --builds (5); memory (ClassTable::
// memoryBytes(); rte_acl and rte_lpm: the DPDK heap's allocated bytes
// before and after, rte_malloc_get_socket_stats, split into the rule store and
// the run-time tables rte_acl_build adds; rte_lpm also as its config implies:
// tbl24 + tbl8s x 256 entries + the rule array); cycles per classification:
// TSC (rte_rdtsc_precise) around --passes (1) loops over a fixed mix of 4,096
// packets (a quarter each: made to match a class among the first tenth,
// among the last tenth, any class, and random fields), median of --reps (11)
// repetitions; the structures take turns within a repetition, each after an
// untimed loop (warm), and a repetition during which the thread was switched
// out is measured again (see timeAll). Packets are pre-parsed (ClassTable:
// port, VLAN and an L4Tuple; rte_acl: its 20-byte input buffer), as a worker
// has them; building rte_acl's buffer from a parsed packet is not counted.
//
//   class_bench [--sets a,b,...] [--builds K] [--reps R] [--passes P] [--cpu C]
//               [--seed X]
//   class_bench --check [--packets N] [--break dst-addr|dport]
// Prints a table, then one JSON line (last line of stdout). --check
// classifies N (20,000) random packets per rule set with every structure and
// exits 1 on the first disagreement with the cross product's answer (the
// first matching class); --break drops one of the ACL expansion's variants,
// for the self-test that shows the check fails.
#include <arpa/inet.h>
#include <fcntl.h>
#include <rte_acl.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_net.h"
#include "bench/bench_util.h"
#include "common/traffic_class.h"
#include "dataplane/eal.h"

namespace gwlb::bench {
namespace {

constexpr uint32_t kMix = 4096;
constexpr uint32_t kBurst = 32;

struct Options {
  std::vector<std::string> sets = {"mixed-10", "mixed-100", "mixed-1000", "vlan-1000", "prefix-1000"};
  unsigned builds = 5, reps = 11, passes = 1;
  int cpu = -1;
  uint64_t seed = 0x6777'6c62'0027ULL;
  bool check = false;
  uint32_t check_packets = 20000;
  std::string break_variant;  // "", "dst-addr" or "dport"
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "class_bench: %s\n", what.c_str());
  std::exit(2);
}

// ---- rule sets ------------------------------------------------------------

std::vector<ClassRule> ruleSet(const std::string& name) {
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

bool prefixOnly(const std::vector<ClassRule>& rules) {
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

uint32_t v4Of(const IpAddr& a) { return uint32_t(a.b[0]) << 24 | a.b[1] << 16 | a.b[2] << 8 | a.b[3]; }

Packet finish(uint16_t port, uint16_t vlan, uint8_t proto, uint32_t src, uint32_t dst, uint16_t sport,
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
std::vector<Packet> timingMix(const std::vector<ClassRule>& rules, uint64_t seed) {
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

// ---- rte_acl ----------------------------------------------------------------

enum { kFProto, kFSrc, kFDst, kFSport, kFDport, kFPort, kFVlan, kFields };
RTE_ACL_RULE_DEF(AclRule, kFields);

rte_acl_config aclConfig() {
  rte_acl_config c{};
  c.num_categories = 1;
  c.num_fields = kFields;
  auto def = [&](int f, uint8_t type, uint8_t size, uint8_t input, uint32_t off) {
    c.defs[f] = rte_acl_field_def{type, size, uint8_t(f), input, off};
  };
  def(kFProto, RTE_ACL_FIELD_TYPE_BITMASK, 1, 0, offsetof(AclKey, proto));
  def(kFSrc, RTE_ACL_FIELD_TYPE_MASK, 4, 1, offsetof(AclKey, src));
  def(kFDst, RTE_ACL_FIELD_TYPE_MASK, 4, 2, offsetof(AclKey, dst));
  def(kFSport, RTE_ACL_FIELD_TYPE_RANGE, 2, 3, offsetof(AclKey, sport));
  def(kFDport, RTE_ACL_FIELD_TYPE_RANGE, 2, 3, offsetof(AclKey, dport));
  def(kFPort, RTE_ACL_FIELD_TYPE_RANGE, 2, 4, offsetof(AclKey, port));
  def(kFVlan, RTE_ACL_FIELD_TYPE_RANGE, 2, 4, offsetof(AclKey, vlan));
  return c;
}

// Sorted, merged runs of consecutive values; one full range for an empty set.
std::vector<std::pair<uint16_t, uint16_t>> runs(std::vector<uint16_t> v) {
  if (v.empty()) return {{0, 0xFFFF}};
  std::sort(v.begin(), v.end());
  std::vector<std::pair<uint16_t, uint16_t>> out;
  for (uint16_t x : v) {
    if (!out.empty() && (x == out.back().second || x == out.back().second + 1)) out.back().second = x;
    else out.emplace_back(x, x);
  }
  return out;
}

struct Expansion {
  std::vector<AclRule> rules;
  size_t classes_left_out = 0;  // IPv6-only prefixes
};

// The classes as ACL rules (see the file comment).
Expansion expand(const std::vector<ClassRule>& classes, const std::string& break_variant) {
  Expansion e;
  const int32_t n = int32_t(classes.size());
  for (int32_t i = 0; i < n; ++i) {
    const ClassRule& c = classes[size_t(i)];
    // Address variants: (field, value, mask length); the other address wildcard.
    struct Addr { int field; uint32_t v; uint8_t len; };
    std::vector<Addr> addrs;
    bool any_v4 = false;
    for (const auto& [a, len] : c.prefixes) {
      if (a.family != 4) continue;
      any_v4 = true;
      addrs.push_back({kFSrc, v4Of(a), len});
      if (break_variant != "dst-addr") addrs.push_back({kFDst, v4Of(a), len});
    }
    if (!c.prefixes.empty() && !any_v4) {
      ++e.classes_left_out;
      continue;
    }
    if (addrs.empty()) addrs.push_back({kFSrc, 0, 0});
    struct L4 { int field; uint16_t lo, hi; };
    std::vector<L4> l4s;
    for (const auto& [lo, hi] : c.l4_ports) {
      l4s.push_back({kFSport, lo, hi});
      if (break_variant != "dport") l4s.push_back({kFDport, lo, hi});
    }
    if (l4s.empty()) l4s.push_back({kFSport, 0, 0xFFFF});
    std::vector<int> protos(c.protocols.begin(), c.protocols.end());
    if (protos.empty()) protos.push_back(-1);
    for (const auto& pr : runs(c.ingress_ports))
      for (const auto& vr : runs(c.vlans))
        for (int proto : protos)
          for (const Addr& a : addrs)
            for (const L4& l : l4s) {
              AclRule r{};
              r.data.category_mask = 1;
              r.data.priority = n - i;
              r.data.userdata = uint32_t(i + 1);
              r.field[kFProto].value.u8 = proto < 0 ? 0 : uint8_t(proto);
              r.field[kFProto].mask_range.u8 = proto < 0 ? 0 : 0xFF;
              r.field[kFSrc].mask_range.u32 = 0;
              r.field[kFDst].mask_range.u32 = 0;
              r.field[a.field].value.u32 = a.v;
              r.field[a.field].mask_range.u32 = a.len;
              r.field[kFSport].mask_range.u16 = 0xFFFF;
              r.field[kFDport].mask_range.u16 = 0xFFFF;
              r.field[l.field].value.u16 = l.lo;
              r.field[l.field].mask_range.u16 = l.hi;
              r.field[kFPort].value.u16 = pr.first;
              r.field[kFPort].mask_range.u16 = pr.second;
              r.field[kFVlan].value.u16 = vr.first;
              r.field[kFVlan].mask_range.u16 = vr.second;
              e.rules.push_back(r);
            }
  }
  return e;
}

uint64_t rteAllocated() {
  uint64_t n = 0;
  for (unsigned s = 0; s < rte_socket_count(); ++s) {
    rte_malloc_socket_stats st{};
    if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(s), &st) == 0) n += st.heap_allocsz_bytes;
  }
  return n;
}

unsigned g_names = 0;
std::string uniqueName(const char* prefix) { return prefix + std::to_string(g_names++); }

struct Acl {
  rte_acl_ctx* ctx = nullptr;
  size_t acl_rules = 0, left_out = 0;
  uint64_t rule_bytes = 0, runtime_bytes = 0;
  Acl() = default;
  Acl(const Acl&) = delete;
  Acl& operator=(const Acl&) = delete;
  ~Acl() { rte_acl_free(ctx); }
};

std::unique_ptr<Acl> buildAcl(const std::vector<ClassRule>& classes, const std::string& break_variant) {
  auto a = std::make_unique<Acl>();
  Expansion e = expand(classes, break_variant);
  a->acl_rules = e.rules.size();
  a->left_out = e.classes_left_out;
  const std::string name = uniqueName("cb_acl");
  const uint64_t m0 = rteAllocated();
  rte_acl_param p{};
  p.name = name.c_str();
  p.socket_id = int(rte_socket_id());
  p.rule_size = RTE_ACL_RULE_SZ(kFields);
  p.max_rule_num = uint32_t(std::max<size_t>(1, e.rules.size()));
  a->ctx = rte_acl_create(&p);
  if (!a->ctx) die("rte_acl_create: " + std::string(rte_strerror(rte_errno)));
  if (!e.rules.empty()) {
    int rc = rte_acl_add_rules(a->ctx, reinterpret_cast<const rte_acl_rule*>(e.rules.data()),
                               uint32_t(e.rules.size()));
    if (rc) die("rte_acl_add_rules: " + std::string(strerror(-rc)));
  }
  const uint64_t m1 = rteAllocated();
  rte_acl_config cfg = aclConfig();
  if (int rc = rte_acl_build(a->ctx, &cfg)) die("rte_acl_build: " + std::string(strerror(-rc)));
  const uint64_t m2 = rteAllocated();
  a->rule_bytes = m1 - m0;
  a->runtime_bytes = m2 - m1;
  return a;
}

// What rte_acl_dump says about a context (alg, num_tries): it prints to stdout.
std::string aclDumpField(const rte_acl_ctx* ctx, const char* field) {
  std::fflush(stdout);
  char path[] = "/tmp/class_bench_dumpXXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "?";
  int saved = dup(1);
  dup2(fd, 1);
  rte_acl_dump(ctx);
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::string text(4096, '\0');
  ssize_t got = pread(fd, text.data(), text.size(), 0);
  close(fd);
  unlink(path);
  text.resize(got > 0 ? size_t(got) : 0);
  const std::string key = std::string(field) + "=";
  size_t at = text.find(key);
  if (at == std::string::npos) return "?";
  at += key.size();
  return text.substr(at, text.find_first_of("\n ", at) - at);
}

// rte_acl_classify_alg's numbers as names.
std::string algName(const std::string& n) {
  static const char* const kNames[] = {"default", "scalar", "sse", "avx2", "neon", "altivec", "avx512x16", "avx512x32"};
  const unsigned long i = std::strtoul(n.c_str(), nullptr, 10);
  return i < std::size(kNames) && n != "?" ? kNames[i] : n;
}

uint16_t aclAnswer(uint32_t r) { return r == 0 ? kNoClass : uint16_t(r - 1); }

// ---- rte_lpm ----------------------------------------------------------------

struct Lpm {
  rte_lpm* lpm = nullptr;
  uint64_t heap_bytes = 0, config_bytes = 0;
  Lpm() = default;
  Lpm(const Lpm&) = delete;
  Lpm& operator=(const Lpm&) = delete;
  ~Lpm() { rte_lpm_free(lpm); }
};
constexpr uint32_t kTbl8s = 256;

std::unique_ptr<Lpm> buildLpm(const std::vector<ClassRule>& classes) {
  auto l = std::make_unique<Lpm>();
  // Every IPv4 prefix with the first class whose prefix covers it.
  std::vector<std::pair<std::pair<uint32_t, uint8_t>, uint32_t>> entries;
  for (uint32_t i = 0; i < classes.size(); ++i)
    for (const auto& [a, len] : classes[i].prefixes)
      if (a.family == 4) entries.push_back({{v4Of(a) & (len ? ~uint32_t(0) << (32 - len) : 0), len}, i});
  auto covers = [](std::pair<uint32_t, uint8_t> outer, std::pair<uint32_t, uint8_t> inner) {
    if (outer.second > inner.second) return false;
    const uint32_t m = outer.second ? ~uint32_t(0) << (32 - outer.second) : 0;
    return (inner.first & m) == outer.first;
  };
  rte_lpm_config c{};
  c.max_rules = uint32_t(std::max<size_t>(1, entries.size()));
  c.number_tbl8s = kTbl8s;
  const std::string name = uniqueName("cb_lpm");
  const uint64_t m0 = rteAllocated();
  l->lpm = rte_lpm_create(name.c_str(), int(rte_socket_id()), &c);
  if (!l->lpm) die("rte_lpm_create: " + std::string(rte_strerror(rte_errno)));
  for (const auto& [p, i] : entries) {
    uint32_t first = i;
    for (const auto& [q, j] : entries)
      if (j < first && covers(q, p)) first = j;
    if (int rc = rte_lpm_add(l->lpm, p.first, p.second, first))
      die("rte_lpm_add: " + std::string(strerror(-rc)));
  }
  l->heap_bytes = rteAllocated() - m0;
  l->config_bytes = uint64_t(RTE_LPM_TBL24_NUM_ENTRIES) * sizeof(rte_lpm_tbl_entry) +
                    uint64_t(kTbl8s) * RTE_LPM_TBL8_GROUP_NUM_ENTRIES * sizeof(rte_lpm_tbl_entry) +
                    uint64_t(c.max_rules) * 8;  // rte_lpm_rule: ip, next hop
  return l;
}

inline uint16_t lpmClassify(const rte_lpm* lpm, const Packet& p) {
  uint32_t a = kNoClass, b = kNoClass;
  if (rte_lpm_lookup(const_cast<rte_lpm*>(lpm), v4Of(p.t.src), &a) != 0) a = kNoClass;
  if (rte_lpm_lookup(const_cast<rte_lpm*>(lpm), v4Of(p.t.dst), &b) != 0) b = kNoClass;
  return uint16_t(std::min(a, b));
}

// ---- measurement --------------------------------------------------------------

// Build times, median of the builds: the building thread's CPU time (what a
// build costs, whatever else the shared machine runs meanwhile) and the
// wall-clock time beside it.
struct BuildTimes {
  std::vector<double> cpu, wall;
  template <typename F>
  void time(F&& f) {
    timespec c0{}, c1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    const auto w0 = std::chrono::steady_clock::now();
    f();
    const auto w1 = std::chrono::steady_clock::now();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    cpu.push_back(double(c1.tv_sec - c0.tv_sec) * 1e3 + double(c1.tv_nsec - c0.tv_nsec) / 1e6);
    wall.push_back(std::chrono::duration<double, std::milli>(w1 - w0).count());
  }
  double cpuMs() const { return stats(cpu).median; }
  double wallMs() const { return stats(wall).median; }
};

volatile uint64_t g_sink;

struct Row {
  std::string set, structure, note;
  double build_ms = 0;  // CPU time
  uint64_t memory = 0;
  double build_wall_ms = 0;
  Stats cycles;
  std::string extra_json;  // further fields, starting with ','
};

// One structure's pass over the mix (returns a checksum of its answers) and
// the row its cycles go to.
struct Timed {
  size_t row;
  std::function<uint64_t()> pass;
  std::vector<double> cycles;
};

// Timeslices this thread has run (/proc/thread-self/schedstat, third
// field): unchanged across a measurement = it was never switched out.
uint64_t timeslices() {
  static const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  char b[128];
  const ssize_t n = fd >= 0 ? pread(fd, b, sizeof b - 1, 0) : -1;
  if (n <= 0) return 0;
  b[n] = '\0';
  unsigned long long run = 0, wait = 0, slices = 0;
  return std::sscanf(b, "%llu %llu %llu", &run, &wait, &slices) == 3 ? slices : 0;
}

uint64_t g_redone = 0;  // repetitions measured again: the thread was switched out

// Cycles per packet: every structure of a rule set in turn within each
// repetition (a disturbance of the shared machine hits them alike), each
// timed warm (one untimed pass first: the previous structure's tables have
// displaced its own from the caches), TSC around `passes` passes over the
// mix. A repetition during which the thread was switched out (another
// process took the cpu) is measured again, up to 20 times. Median of the
// repetitions.
void timeAll(const Options& o, std::vector<Timed>& ts, std::vector<Row>& rows) {
  for (unsigned r = 0; r < o.reps; ++r)
    for (Timed& t : ts) {
      double c = 0;
      for (int attempt = 0; attempt < 20; ++attempt) {
        g_sink = g_sink + t.pass();
        uint64_t acc = 0;
        const uint64_t s0 = timeslices();
        const uint64_t t0 = rte_rdtsc_precise();
        for (unsigned p = 0; p < o.passes; ++p) acc += t.pass();
        const uint64_t t1 = rte_rdtsc_precise();
        const uint64_t s1 = timeslices();
        g_sink = g_sink + acc;
        c = double(t1 - t0) / (double(o.passes) * kMix);
        if (s0 == s1) break;
        ++g_redone;
      }
      t.cycles.push_back(c);
    }
  for (Timed& t : ts) rows[t.row].cycles = stats(t.cycles);
}

std::string statsJson(const Stats& s) {
  return "{\"median\":" + fmt("%.2f", s.median) + ",\"min\":" + fmt("%.2f", s.min) +
         ",\"p10\":" + fmt("%.2f", s.p10) + ",\"p90\":" + fmt("%.2f", s.p90) +
         ",\"max\":" + fmt("%.2f", s.max) + "}";
}

std::string bytesText(uint64_t b) {
  if (b >= (uint64_t(1) << 20)) return fmt("%.1f MiB", double(b) / (1 << 20));
  if (b >= 1024) return fmt("%.1f KiB", double(b) / 1024);
  return std::to_string(b) + " B";
}

void benchSet(const Options& o, const std::string& set, std::vector<Row>& rows, std::string& mix_json) {
  const std::vector<ClassRule> rules = ruleSet(set);
  const std::vector<Packet> mix = timingMix(rules, o.seed);
  std::vector<const uint8_t*> keys;
  for (const Packet& p : mix) keys.push_back(reinterpret_cast<const uint8_t*>(&p.key));
  std::vector<Timed> timed;

  // ClassTable, both ways.
  ClassTable tables[2];
  for (int k = 0; k < 2; ++k) {
    const bool cross = k == 0;
    ClassTable& t = tables[k];
    BuildTimes bt;
    for (unsigned b = 0; b < o.builds; ++b)
      bt.time([&] { t = ClassTable(rules, cross ? ClassTable::kDefaultCellLimit : 0); });
    if (cross != t.crossProduct()) die(set + ": ClassTable did not build what was asked");
    Row r{set, cross ? "cross_product" : "bit_vectors", "", bt.cpuMs(), t.memoryBytes(), bt.wallMs(), {}, ""};
    if (cross) {
      // Where the mix's packets end up (by the cross product's answer).
      const size_t n = rules.size(), tenth = std::max<size_t>(1, n / 10);
      size_t first = 0, last = 0, none = 0;
      for (const Packet& p : mix) {
        const uint16_t c = t.classify(p.port, p.vlan, p.t);
        if (c == kNoClass) ++none;
        else if (c < tenth) ++first;
        else if (c >= n - tenth) ++last;
      }
      mix_json += std::string(mix_json.empty() ? "" : ",") + "\"" + set + "\":{\"packets\":" +
                  std::to_string(kMix) + ",\"first_tenth\":" + std::to_string(first) +
                  ",\"last_tenth\":" + std::to_string(last) + ",\"no_class\":" + std::to_string(none) + "}";
      r.note = "mix: " + std::to_string(first) + " first tenth, " + std::to_string(last) + " last tenth, " +
               std::to_string(none) + " none";
    }
    rows.push_back(r);
    timed.push_back({rows.size() - 1, [&t, &mix] {
                       uint64_t acc = 0;
                       for (const Packet& p : mix) acc += t.classify(p.port, p.vlan, p.t);
                       return acc;
                     }, {}});
  }
  // rte_acl.
  std::unique_ptr<Acl> acl;
  std::vector<uint32_t> res(kMix);
  {
    BuildTimes bt;
    for (unsigned b = 0; b < o.builds; ++b) {
      acl.reset();
      bt.time([&] { acl = buildAcl(rules, ""); });
    }
    const Acl& a = *acl;
    const std::string alg = algName(aclDumpField(a.ctx, "alg")), tries = aclDumpField(a.ctx, "num_tries");
    Row burst{set, "rte_acl (bursts of 32)", "", bt.cpuMs(), a.rule_bytes + a.runtime_bytes, bt.wallMs(), {}, ""};
    burst.note = std::to_string(a.acl_rules) + " ACL rules (" + std::to_string(a.left_out) +
                 " IPv6-only classes left out), " + tries + " tries, " + alg + "; run-time " +
                 bytesText(a.runtime_bytes) + " + rules " + bytesText(a.rule_bytes);
    burst.extra_json = ",\"acl_rules\":" + std::to_string(a.acl_rules) + ",\"classes_left_out\":" +
                       std::to_string(a.left_out) + ",\"num_tries\":\"" + tries + "\",\"alg\":\"" + alg +
                       "\",\"runtime_bytes\":" + std::to_string(a.runtime_bytes) +
                       ",\"rule_bytes\":" + std::to_string(a.rule_bytes);
    Row single = burst;
    single.structure = "rte_acl (one packet)";
    single.note = "the same context, rte_acl_classify(num 1) per packet";
    rows.push_back(burst);
    timed.push_back({rows.size() - 1, [ctx = a.ctx, &keys, &res] {
                       for (uint32_t i = 0; i < kMix; i += kBurst)
                         rte_acl_classify(ctx, keys.data() + i, res.data() + i, kBurst, 1);
                       uint64_t acc = 0;
                       for (uint32_t x : res) acc += x;
                       return acc;
                     }, {}});
    rows.push_back(single);
    timed.push_back({rows.size() - 1, [ctx = a.ctx, &keys] {
                       uint64_t acc = 0;
                       for (uint32_t i = 0; i < kMix; ++i) {
                         uint32_t x = 0;
                         rte_acl_classify(ctx, &keys[i], &x, 1, 1);
                         acc += x;
                       }
                       return acc;
                     }, {}});
  }
  // rte_lpm, for prefixes alone.
  std::unique_ptr<Lpm> lpm;
  if (prefixOnly(rules)) {
    BuildTimes bt;
    for (unsigned b = 0; b < o.builds; ++b) {
      lpm.reset();
      bt.time([&] { lpm = buildLpm(rules); });
    }
    Row r{set, "rte_lpm (src, dst)", "", bt.cpuMs(), lpm->heap_bytes, bt.wallMs(), {}, ""};
    r.note = "config: " + bytesText(lpm->config_bytes) + " (tbl24 64 MiB, " + std::to_string(kTbl8s) + " tbl8s)";
    r.extra_json = ",\"config_bytes\":" + std::to_string(lpm->config_bytes);
    rows.push_back(r);
    timed.push_back({rows.size() - 1, [l = lpm->lpm, &mix] {
                       uint64_t acc = 0;
                       for (const Packet& p : mix) acc += lpmClassify(l, p);
                       return acc;
                     }, {}});
  }
  timeAll(o, timed, rows);
}

int runBench(const Options& o) {
  std::vector<Row> rows;
  std::string mix_json;
  for (const std::string& s : o.sets) benchSet(o, s, rows, mix_json);
  std::printf("%-12s %-24s %10s %12s %10s %8s  %s\n", "rule set", "structure", "build ms", "memory", "cyc/pkt",
              "(min)", "notes");
  for (const Row& r : rows)
    std::printf("%-12s %-24s %10.3f %12s %10.2f %8.2f  %s\n", r.set.c_str(), r.structure.c_str(), r.build_ms,
                bytesText(r.memory).c_str(), r.cycles.median, r.cycles.min, r.note.c_str());
  std::string j = "{\"bench\":\"class_bench\",\"cpu\":" + std::to_string(o.cpu) + ",\"tsc_hz\":" +
                  std::to_string(rte_get_tsc_hz()) + ",\"builds\":" + std::to_string(o.builds) +
                  ",\"reps\":" + std::to_string(o.reps) + ",\"passes\":" + std::to_string(o.passes) + ",\"reps_redone\":" + std::to_string(g_redone) +
                  ",\"mix_packets\":" + std::to_string(kMix) + ",\"burst\":" + std::to_string(kBurst) +
                  ",\"mix\":{" + mix_json + "},\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    j += std::string(i ? "," : "") + "{\"set\":\"" + r.set + "\",\"structure\":\"" + r.structure +
         "\",\"build_ms\":" + fmt("%.4f", r.build_ms) + ",\"build_wall_ms\":" + fmt("%.4f", r.build_wall_ms) + ",\"memory_bytes\":" + std::to_string(r.memory) +
         ",\"cycles\":" + statsJson(r.cycles) + r.extra_json + "}";
  }
  j += "]}";
  std::printf("%s\n", j.c_str());
  return 0;
}

// ---- --check ----------------------------------------------------------------

int runCheck(const Options& o) {
  size_t bad_total = 0;
  for (const std::string& set : o.sets) {
    const std::vector<ClassRule> rules = ruleSet(set);
    const ClassTable cross(rules), bits(rules, 0);
    if (!cross.crossProduct()) die(set + ": the cross product was not built");
    if (bits.crossProduct()) die(set + ": cell limit 0 still built a cross product");
    std::unique_ptr<Acl> acl = buildAcl(rules, o.break_variant);
    std::unique_ptr<Lpm> lpm = prefixOnly(rules) ? buildLpm(rules) : nullptr;
    PacketGen g(rules, o.seed ^ std::hash<std::string>{}(set), true);
    std::vector<Packet> pkts;
    for (uint32_t i = 0; i < o.check_packets; ++i)
      pkts.push_back(i % 2 ? g.random() : g.towards(g.pick(rules.size())));
    std::vector<const uint8_t*> keys;
    for (const Packet& p : pkts) keys.push_back(reinterpret_cast<const uint8_t*>(&p.key));
    std::vector<uint32_t> burst(pkts.size());
    for (size_t i = 0; i < pkts.size(); i += kBurst)
      rte_acl_classify(acl->ctx, keys.data() + i, burst.data() + i, uint32_t(std::min<size_t>(kBurst, pkts.size() - i)), 1);
    size_t bad = 0, matched = 0;
    for (size_t i = 0; i < pkts.size(); ++i) {
      const Packet& p = pkts[i];
      const uint16_t want = cross.classify(p.port, p.vlan, p.t);
      matched += want != kNoClass;
      uint32_t one = 0;
      rte_acl_classify(acl->ctx, &keys[i], &one, 1, 1);
      const std::pair<const char*, uint16_t> got[] = {
          {"bit_vectors", bits.classify(p.port, p.vlan, p.t)},
          {"rte_acl (burst)", aclAnswer(burst[i])},
          {"rte_acl (one)", aclAnswer(one)},
          {"rte_lpm", lpm ? lpmClassify(lpm->lpm, p) : want},
      };
      for (const auto& [who, c] : got) {
        if (c == want) continue;
        if (++bad <= 5)
          std::fprintf(stderr,
                       "%s: %s says %d, cross product %d: port %u vlan %u proto %u %s:%u -> %s:%u\n",
                       set.c_str(), who, c == kNoClass ? -1 : int(c), want == kNoClass ? -1 : int(want),
                       p.port, p.vlan, p.t.proto, p.t.src.str().c_str(), p.t.sport,
                       p.t.dst.str().c_str(), p.t.dport);
      }
    }
    std::printf("%-12s %zu packets (%zu matching a class), %zu ACL rules, %s: %zu disagreements\n",
                set.c_str(), pkts.size(), matched, acl->acl_rules, lpm ? "ClassTable x2, rte_acl x2, rte_lpm"
                                                                       : "ClassTable x2, rte_acl x2",
                bad);
    bad_total += bad;
  }
  if (bad_total) {
    std::printf("FAIL: %zu disagreements with the cross product\n", bad_total);
    return 1;
  }
  std::printf("ok: every structure agrees with the cross product\n");
  return 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t c = s.find(',', at);
    if (c == std::string::npos) c = s.size();
    if (c > at) out.push_back(s.substr(at, c - at));
    at = c + 1;
  }
  return out;
}

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using gwlb::bench::die;
  gwlb::bench::Options o;
  o.cpu = gwlb::bench::defaultCpu();
  const char* usage =
      "usage: class_bench [--sets a,b,...] [--builds K] [--reps R] [--passes P] [--cpu C] [--seed X]\n"
      "       class_bench --check [--packets N] [--break dst-addr|dport] [--sets ...]";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--sets") o.sets = gwlb::bench::split(val());
    else if (a == "--builds") o.builds = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--reps") o.reps = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--passes") o.passes = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--cpu") o.cpu = std::atoi(val());
    else if (a == "--seed") o.seed = std::strtoull(val(), nullptr, 0);
    else if (a == "--check") o.check = true;
    else if (a == "--packets") o.check_packets = uint32_t(std::strtoul(val(), nullptr, 10));
    else if (a == "--break") o.break_variant = val();
    else die(usage);
  }
  if (o.builds == 0 || o.reps == 0 || o.passes == 0 || o.check_packets == 0)
    die("--builds, --reps, --passes and --packets must be positive");
  if (!o.break_variant.empty() && o.break_variant != "dst-addr" && o.break_variant != "dport")
    die("--break takes dst-addr or dport");
  try {
    // rte_lpm's tbl24 alone is 64 MiB; --no-huge memory is touched only as used.
    gwlb::dp::initEal("gwlb-class-bench", {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "512",
                                           "--log-level=*:warning", "--lcores=0@" + std::to_string(o.cpu)});
    return o.check ? gwlb::bench::runCheck(o) : gwlb::bench::runBench(o);
  } catch (const std::exception& e) {
    die(e.what());
  }
}
