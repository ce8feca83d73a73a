// The flow cookie (the AWS-format Geneve option 0x0108/3): a keyed function
// of the flow and its appliance, so that every gateway of a fleet computes
// the same cookie for a flow, in both directions, and any of them accepts the
// cookie another one sent (docs/fleet.md). Pure code: no DPDK.
//
//   t      = fold32(hashFinal(flow_hash ^ k1 ^ kCookieSalt) ^ k0)   per flow, keyed
//   cookie = fmix32(t ^ appliance)                                 per appliance
//
// flow_hash is the keyed flow hash of the canonical (symmetric) flow key
// (common/flow_key.h), appliance the appliance's IPv4 address (host order),
// and (k0, k1) the process's flow hash key: fleet.secret when set, else
// node.flow_hash_secret, else gwlbd's own (kept). fmix32 is a bijection, so
// for one flow two appliances never share a cookie (a moved flow's cookie
// differs from the one it had); the one appliance whose cookie would be 0
// (reserved: "no cookie") takes fmix32(t ^ appliance ^ 2^31) instead.
// Not a MAC: it keeps off-path hosts from guessing a flow's cookie without
// the key; someone who sees a flow's cookie for one appliance can work out
// its cookie for another (the same is true of any 32-bit cookie on the wire).
#pragma once

#include <cstdint>

#include "common/flow_key.h"

namespace gwlb {

namespace detail {
inline constexpr uint64_t kCookieSalt = 0x243F6A8885A308D3ULL;  // pi: domain separation
// MurmurHash3's 32-bit finaliser: a bijection on 32 bits.
inline uint32_t fmix32(uint32_t h) noexcept {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}
inline uint32_t cookieOf(uint64_t k0, uint64_t k1, uint32_t flow_hash, uint32_t appliance) noexcept {
  uint64_t m = hashFinal(uint64_t(flow_hash) ^ k1 ^ kCookieSalt) ^ k0;
  uint32_t x = uint32_t(m ^ (m >> 32)) ^ appliance;
  uint32_t c = fmix32(x);
  return c ? c : fmix32(x ^ 0x80000000u);
}
}  // namespace detail

// Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
// a moved flow's cookie depends on its flow hash and new appliance only.
// The cookie of the flow whose flow hash is `flow_hash` on the appliance at
// `appliance` (IPv4, host order), under the process's key (setFlowHashKey).
// Never 0. Any thread; about 20 instructions, computed once per new or moved
// flow (never per packet).
inline uint32_t flowCookie(uint32_t flow_hash, uint32_t appliance) noexcept {
  return detail::cookieOf(detail::g_hash_key.k0, detail::g_hash_key.k1, flow_hash, appliance);
}

}  // namespace gwlb
