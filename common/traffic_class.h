// Traffic classes compiled for the fast path (issue 27): an ordered list of
// rules, first match wins, each naming a listener (inspect), bypass or drop.
// Pure code, no DPDK: the snapshot builder compiles, workers classify.
#pragma once

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

// Bit-vector decomposition: each field maps its value to the set of rules it
// lets match (one bit per rule, rules in order); the first set bit of the
// AND of the fields' sets is the class. Values map to sets by direct tables
// (port, VLAN, protocol, L4 port) or by a binary search over the address
// intervals the prefixes cut (IPv4, IPv6). Identical sets are stored once.
// The compiled tables are immutable and shared by copies (a snapshot builder
// that keeps one table while its rules do not change copies a pointer).
class ClassTable {
 public:
  ClassTable() = default;
  explicit ClassTable(const std::vector<ClassRule>& rules);

  bool empty() const noexcept { return n_rules_ == 0; }
  size_t size() const noexcept { return n_rules_; }
  ClassVerdict action(uint16_t cls) const noexcept { return ClassVerdict(action_[cls]); }
  uint8_t listener(uint16_t cls) const noexcept { return listener_[cls]; }
  // Whether two tables share one compilation (the builder's cache hit).
  bool sameCompilation(const ClassTable& o) const noexcept { return data_ == o.data_; }

  // The first rule matching, or kNoClass. `vlan`: the VLAN ID, 0 untagged.
  // `ports`: false for a packet whose ports are unknown (a non-first
  // fragment): only rules without l4_ports can match it.
  uint16_t classify(uint16_t port, uint16_t vlan, const L4Tuple& t, bool ports = true) const noexcept {
    const uint64_t* a = set(port < 256 ? port_[port] : none_);
    const uint64_t* b = set(vlan_[vlan & 0xFFF]);
    const uint64_t* c = set(proto_[t.proto]);
    const uint64_t* d = set(ports ? l4_[t.sport] : l4_none_);
    const uint64_t* e = set(ports ? l4_[t.dport] : l4_none_);
    const uint64_t* f = set(addrSet(t.src));
    const uint64_t* g = set(addrSet(t.dst));
    for (uint32_t w = 0; w < n_words_; ++w) {
      uint64_t x = a[w] & b[w] & c[w] & (d[w] | e[w]) & (f[w] | g[w]);
      if (x) return uint16_t(w * 64 + uint32_t(__builtin_ctzll(x)));
    }
    return kNoClass;
  }

 private:
  struct Data;
  const uint64_t* set(uint32_t id) const noexcept { return sets_ + size_t(id) * n_words_; }
  uint32_t addrSet(const IpAddr& a) const noexcept;

  std::shared_ptr<const Data> data_;
  // Views into *data_ for the per-packet path.
  uint32_t n_rules_ = 0, n_words_ = 0;
  const uint64_t* sets_ = nullptr;
  const uint16_t *port_ = nullptr, *vlan_ = nullptr, *proto_ = nullptr, *l4_ = nullptr;
  uint16_t none_ = 0, l4_none_ = 0;
  const uint8_t *action_ = nullptr, *listener_ = nullptr;
};

}  // namespace gwlb
