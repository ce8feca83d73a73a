// Symmetric flow keys and the flow hash. Pure code: no DPDK.
//
// Both directions of a flow must reach the same appliance, so a key stores its
// two endpoints in a canonical order (the smaller (address, port) first) and
// remembers, per packet, which direction it saw. The hash is taken over the
// canonical key, so it is symmetric by construction; the same hash picks the
// Maglev slot and the flow-table bucket.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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
  uint8_t listener;  // listener index (Snapshot::listeners): its groups share the key
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
KeyedPacket makeFlowKey(const L4Tuple& t, StickinessMode mode, uint8_t listener) noexcept;

// The key that ties the fragments of one datagram together (not symmetric: all
// fragments of a datagram travel the same way).
FlowKey makeFragmentKey(const L4Tuple& t, uint32_t frag_id, uint8_t listener) noexcept;

// The flow hash is keyed with a 128-bit secret, so nobody who does not know
// it can choose ports that pile flows onto one Maglev slot (one appliance) or
// one flow-table bucket. One secret per process, set before any flow is
// hashed (gwlbd: node.flow_hash_secret, or its own kept one; gwlb-replay: the
// config's, or zero); every gateway of a fleet must share it so that all pick
// the same appliance. The zero key gives the unkeyed hash of earlier releases.
// Not a cryptographic PRF: it resists precomputed collision sets, not an
// attacker who can measure which appliance each of many probes reached.
struct FlowHashKey {
  uint64_t k0 = 0, k1 = 0;
  bool operator==(const FlowHashKey&) const = default;
};
// Sets the process's key. Call before any worker or table hashes a key (a
// changed key makes existing flow entries unreachable). Thread: start-up.
void setFlowHashKey(const FlowHashKey& k) noexcept;
FlowHashKey flowHashKey() noexcept;

// 32-bit keyed hash of a key; also usable as an rte_hash hash function.
uint32_t flowHash(const void* key, uint32_t key_len, uint32_t seed) noexcept;

namespace detail {
// One step of flowHash per 8-byte word: xor in, multiply by an odd constant,
// fold the high half down (each a bijection of the state).
inline uint64_t hashStep(uint64_t h, uint64_t w) noexcept {
  h = (h ^ w) * 0xff51afd7ed558ccdULL;
  return h ^ (h >> 32);
}
// splitmix64's finaliser: every input bit affects every output bit.
inline uint64_t hashFinal(uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}
inline constexpr uint64_t kHashInit = 0x9e3779b97f4a7c15ULL;
// The process's key (setFlowHashKey), on its own cache line: read by every
// packet, written only at start-up.
// init40: the state a FlowKey's hash starts from (kHashInit ^ k0 ^ the
// key's length), kept by setFlowHashKey so a packet does not rebuild it.
struct alignas(64) HashKeyStore {
  uint64_t k0 = 0, k1 = 0;
  uint64_t init40 = kHashInit ^ (uint64_t(40) << 32);
};
inline HashKeyStore g_hash_key;
}  // namespace detail

// flowHash(&k, sizeof k, 0), unrolled for the fast path.
inline uint32_t flowHash(const FlowKey& k) noexcept {
  uint64_t w[5];
  std::memcpy(w, &k, sizeof w);
  static_assert(sizeof k == 40, "init40 is the state of a 40-byte key");
  uint64_t h = detail::g_hash_key.init40;
  for (uint64_t x : w) h = detail::hashStep(h, x);
  h = detail::hashFinal(h ^ detail::g_hash_key.k1);
  return uint32_t(h ^ (h >> 32));
}

// makeFlowKey and flowHash for an IPv4 tuple in one, inline for the fast
// path: the same key (an IPv4 address's bytes 4..15 are zero, so the memcmp
// order of two addresses is the order of their first four bytes read
// big-endian), written as its five 8-byte words, and the same hash, taken
// from those words in registers (two of them are zero). Returns the hash.
// `listener`: the listener's number, or a ListenerWord (the same placed in
// the key's last word) for a caller that takes it once for many packets.
constexpr uint64_t listenerWord(uint8_t listener) noexcept { return uint64_t(listener) << 48; }
struct ListenerWord {
  uint64_t word;
  explicit constexpr ListenerWord(uint8_t listener) noexcept : word(listenerWord(listener)) {}
};
constexpr uint64_t listenerWord(ListenerWord w) noexcept { return w.word; }
template <typename Listener = uint8_t>
[[gnu::always_inline]] inline uint32_t makeFlowKeyV4(const L4Tuple& t, StickinessMode mode, Listener listener,
                                                     FlowKey& k, uint8_t& dir) noexcept {
  static_assert(std::is_same_v<Listener, uint8_t> || std::is_same_v<Listener, ListenerWord>,
                "a listener's number (uint8_t) or its ListenerWord");
  static_assert(std::endian::native == std::endian::little && offsetof(FlowKey, b) == 16 &&
                    offsetof(FlowKey, port_a) == 32 && offsetof(FlowKey, port_b) == 34 &&
                    offsetof(FlowKey, proto) == 36 && offsetof(FlowKey, family) == 37 &&
                    offsetof(FlowKey, listener) == 38 && offsetof(FlowKey, kind) == 39,
                "the key's words as makeFlowKeyV4 writes them");
  uint16_t sp = t.sport, dp = t.dport;
  uint8_t proto = t.proto;
  if (mode != StickinessMode::kFiveTuple) sp = dp = 0;
  if (mode == StickinessMode::kTwoTuple) proto = 0;
  uint32_t s4, d4;
  std::memcpy(&s4, t.src.b.data(), 4);
  std::memcpy(&d4, t.dst.b.data(), 4);
  uint32_t sh = __builtin_bswap32(s4), dh = __builtin_bswap32(d4);
  bool swap = sh > dh || (sh == dh && sp > dp);
  const uint64_t a = swap ? d4 : s4, b = swap ? s4 : d4;
  const uint64_t tail = uint64_t(swap ? dp : sp) | uint64_t(swap ? sp : dp) << 16 |
                        uint64_t(proto) << 32 | uint64_t(4) << 40 | listenerWord(listener) |
                        uint64_t(KeyKind::kFlow) << 56;
  // Word by word straight into the key (a five-word array copied in went
  // through the stack: 8 more instructions a packet).
  const uint64_t zero = 0;
  auto* kb = reinterpret_cast<unsigned char*>(&k);
  std::memcpy(kb, &a, 8);
  std::memcpy(kb + 8, &zero, 8);
  std::memcpy(kb + 16, &b, 8);
  std::memcpy(kb + 24, &zero, 8);
  std::memcpy(kb + 32, &tail, 8);
  dir = swap ? 1 : 0;
  uint64_t h = detail::g_hash_key.init40;
  h = detail::hashStep(h, a);
  h = detail::hashStep(h, 0);
  h = detail::hashStep(h, b);
  h = detail::hashStep(h, 0);
  h = detail::hashStep(h, tail);
  h = detail::hashFinal(h ^ detail::g_hash_key.k1);
  return uint32_t(h ^ (h >> 32));
}
inline KeyedPacket makeFlowKeyV4(const L4Tuple& t, StickinessMode mode, uint8_t listener) noexcept {
  KeyedPacket kp;
  makeFlowKeyV4(t, mode, listener, kp.key, kp.dir);
  return kp;
}

}  // namespace gwlb
