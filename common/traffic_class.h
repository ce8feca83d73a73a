// Traffic classes compiled for the fast path: an ordered list of
// rules, first match wins, each naming a listener (inspect), bypass or drop.
// Pure code, no DPDK: the snapshot builder compiles, workers classify.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "common/net_types.h"
#include "common/packet_parser.h"

namespace gwlb {

enum class ClassVerdict : uint8_t { kInspect = 0, kBypass = 1, kDrop = 2 };
inline constexpr uint16_t kNoClass = 0xFFFF;
inline constexpr size_t kMaxClasses = 1024;  // the config allows 1,000

// One rule as the builder hands it over (config's TrafficClassConfig with the
// listener resolved to its index). An empty field matches everything;
// prefixes and l4_ports match either endpoint.
struct ClassRule {
  std::vector<uint16_t> ingress_ports;
  std::vector<uint16_t> vlans;  // 0 = untagged
  std::vector<std::pair<IpAddr, uint8_t>> prefixes;
  std::vector<uint8_t> protocols;
  std::vector<std::pair<uint16_t, uint16_t>> l4_ports;  // inclusive ranges
  ClassVerdict action = ClassVerdict::kInspect;
  uint8_t listener = 0;
  bool operator==(const ClassRule&) const = default;
};

// Compiled in two stages. Each field first maps its value to an equivalence
// class: the set of rules that value lets match (one bit per rule, rules in
// order), identical sets numbered once per field. Direct tables do this for
// ingress port, VLAN, protocol and L4 port; a multibit trie (16, 8, 8 bits)
// for IPv4 addresses; a binary search over the intervals the prefixes cut for
// IPv6. Then a cross product (recursive flow classification) combines the
// classes: port x VLAN, x protocol, x L4 port, x address, the last table
// holding the first rule of each combination. Either-endpoint fields are
// combined per endpoint: the class is the first of the four (source or
// destination port) x (source or destination address) lookups, since
//   P & V & R & (Ls | Ld) & (As | Ad) = union of P & V & R & Lx & Ay.
// Two cross products, one per address family, each without the rules whose
// prefixes are all of the other family; and each stage keeps of its set only
// the rules up to the first one that matches whatever the later fields are
// (first match wins, so later rules cannot be the answer). Both keep the
// number of distinct sets, and so the tables, small for rule sets that mix
// fields. A packet costs 7 field lookups and 6 table reads whatever the rule
// count. A rule set whose cross product would still exceed `cell_limit` cells
// (or 65,535 distinct sets in a stage) classifies instead by AND-ing the
// fields' bit vectors, one word per 64 rules. The compiled tables are
// immutable and shared by copies (a snapshot builder that keeps one table
// while its rules do not change copies a pointer).
// Memory: the cross-product stages are bounded by `cell_limit`; the IPv4
// trie costs 1 KiB per /16 and per /24 that a prefix end falls inside, so
// past `trie_limit` bytes of nodes (scattered /32s: one node per /24) IPv4
// addresses are looked up like IPv6 ones, by a binary search over the
// intervals (8 bytes each), out of line. The intervals are found by a sweep
// over the prefixes' ends: no rule set is kept per interval, only one per
// distinct set (one per address class).
class ClassTable {
 public:
  static constexpr size_t kDefaultCellLimit = size_t(1) << 23;  // 16 MiB of uint16_t
  static constexpr size_t kDefaultTrieLimit = size_t(32) << 20;  // 32,768 nodes of 1 KiB

  ClassTable() = default;
  explicit ClassTable(const std::vector<ClassRule>& rules, size_t cell_limit = kDefaultCellLimit,
                      size_t trie_limit = kDefaultTrieLimit);

  bool empty() const noexcept { return n_rules_ == 0; }
  size_t size() const noexcept { return n_rules_; }
  ClassVerdict action(uint16_t cls) const noexcept { return ClassVerdict(action_[cls]); }
  uint8_t listener(uint16_t cls) const noexcept { return listener_[cls]; }
  // Whether two tables share one compilation (the builder's cache hit).
  bool sameCompilation(const ClassTable& o) const noexcept { return data_ == o.data_; }
  // Whether the cross product was built (false: bit vectors, see above).
  bool crossProduct() const noexcept { return v4x_.fin != nullptr; }
  // Whether IPv4 addresses go through the trie (false: the interval search).
  bool ipv4Trie() const noexcept { return a4_top_ != nullptr; }
  // Bytes of the compiled tables (docs/performance.md, the API's `classes`,
  // the memory plan of gwlbd --check-config).
  size_t memoryBytes() const noexcept;
  // This compilation with each class's listener index replaced (`listeners`:
  // one per rule). The match does not depend on listeners, so a builder
  // compiles rules without them and resolves the names per snapshot.
  ClassTable withListeners(std::vector<uint8_t> listeners) const;

  // The first rule matching, or kNoClass. `vlan`: the VLAN ID, 0 untagged.
  // `ports`: false for a packet whose ports are unknown (a non-first
  // fragment): only rules without l4_ports can match it.
  [[gnu::always_inline]] uint16_t classify(uint16_t port, uint16_t vlan, const L4Tuple& t,
                                           bool ports = true) const noexcept {
    // IPv4 inline (always: a call costs a fifth of it); IPv6 and the bit vectors out of line. The stage tables
    // hold row offsets into the next stage (class x its row length).
    // v4_ is set only with the cross product and the trie.
    if (__builtin_expect(t.src.family != 4 || v4_.fin == nullptr, 0)) return classifyOther(port, vlan, t, ports);
    const uint32_t pv = v4_.pv[port_row_[port < 256 ? port : 256] + vlan_[vlan & 0xFFF]];
    const uint32_t pvr = v4_.pvr[pv + proto_[t.proto]];
    const uint16_t* s = v4_.fin + v4_.pl[pvr + l4_[ports ? t.sport : 65536u]];
    const uint16_t* d = v4_.fin + v4_.pl[pvr + l4_[ports ? t.dport : 65536u]];
    const uint32_t as = addr4(t.src.b.data()), ad = addr4(t.dst.b.data());
    return std::min(std::min(s[as], s[ad]), std::min(d[as], d[ad]));
  }

 private:
  struct Data;
  static constexpr uint32_t kChild = 0x80000000u;  // a trie entry naming a child node
  [[gnu::always_inline]] uint32_t addr4(const uint8_t* b) const noexcept {
    uint32_t e = a4_top_[uint32_t(b[0]) << 8 | b[1]];
    if (__builtin_expect(e & kChild, 0)) {
      e = a4_node_[size_t(e & ~kChild) << 8 | b[2]];
      if (e & kChild) e = a4_node_[size_t(e & ~kChild) << 8 | b[3]];
    }
    return e;
  }
  uint16_t classifyOther(uint16_t port, uint16_t vlan, const L4Tuple& t, bool ports) const noexcept;

  std::shared_ptr<const Data> data_;
  // Views into *data_ for the per-packet path.
  uint32_t n_rules_ = 0;
  const uint32_t* port_row_ = nullptr;  // port class x |VLAN classes|
  const uint16_t *vlan_ = nullptr, *proto_ = nullptr, *l4_ = nullptr;
  const uint32_t *a4_top_ = nullptr, *a4_node_ = nullptr;
  struct Product {  // one address family's cross product
    const uint32_t *pv = nullptr, *pvr = nullptr, *pl = nullptr;
    const uint16_t* fin = nullptr;
  } v4_, v4x_, v6_;  // v4x_: IPv4's product whether or not the trie was built
  const uint8_t *action_ = nullptr, *listener_ = nullptr;
  std::shared_ptr<const std::vector<uint8_t>> listeners_;  // withListeners()'s, else none
};

}  // namespace gwlb
