// Symmetric flow keys and the flow hash. Pure code: no DPDK.
//
// Both directions of a flow must reach the same appliance, so a key stores its
// two endpoints in a canonical order (the smaller (address, port) first) and
// remembers, per packet, which direction it saw. The hash is taken over the
// canonical key, so it is symmetric by construction; the same hash picks the
// Maglev slot and the flow-table bucket.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/net_types.h"
#include "common/packet_parser.h"

namespace gwlb {

enum class KeyKind : uint8_t { kFlow = 0, kFragment = 1 };
enum class StickinessMode : uint8_t { kFiveTuple = 0, kThreeTuple = 1, kTwoTuple = 2 };

// 40 bytes, no padding: hashed and compared as raw bytes.
struct FlowKey {
  uint8_t a[16];
  uint8_t b[16];
  uint16_t port_a;  // host order
  uint16_t port_b;
  uint8_t proto;
  uint8_t family;   // 4 or 6
  uint8_t group;    // server group index
  KeyKind kind;
  bool operator==(const FlowKey& o) const { return std::memcmp(this, &o, sizeof o) == 0; }
};
static_assert(sizeof(FlowKey) == 40);

// Direction of a packet relative to its canonical key: 0 when the packet's
// source is endpoint a, 1 when it is endpoint b.
struct KeyedPacket {
  FlowKey key;
  uint8_t dir;
};

// Builds the canonical key of a tuple under a stickiness mode.
KeyedPacket makeFlowKey(const L4Tuple& t, StickinessMode mode, uint8_t group) noexcept;

// The key that ties the fragments of one datagram together (not symmetric: all
// fragments of a datagram travel the same way).
FlowKey makeFragmentKey(const L4Tuple& t, uint32_t frag_id, uint8_t group) noexcept;

// 32-bit hash of a key; also usable as an rte_hash hash function.
uint32_t flowHash(const void* key, uint32_t key_len, uint32_t seed) noexcept;
inline uint32_t flowHash(const FlowKey& k) noexcept { return flowHash(&k, sizeof k, 0); }

}  // namespace gwlb
