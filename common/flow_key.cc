#include "common/flow_key.h"

#include <algorithm>

namespace gwlb {

KeyedPacket makeFlowKey(const L4Tuple& t, StickinessMode mode, uint8_t listener) noexcept {
  KeyedPacket kp;
  FlowKey& k = kp.key;
  std::memset(&k, 0, sizeof k);
  uint16_t sp = t.sport, dp = t.dport;
  uint8_t proto = t.proto;
  if (mode != StickinessMode::kFiveTuple) sp = dp = 0;
  if (mode == StickinessMode::kTwoTuple) proto = 0;
  int c = std::memcmp(t.src.b.data(), t.dst.b.data(), 16);
  bool swap = c > 0 || (c == 0 && sp > dp);
  const IpAddr& first = swap ? t.dst : t.src;
  const IpAddr& second = swap ? t.src : t.dst;
  std::memcpy(k.a, first.b.data(), 16);
  std::memcpy(k.b, second.b.data(), 16);
  k.port_a = swap ? dp : sp;
  k.port_b = swap ? sp : dp;
  k.proto = proto;
  k.family = t.src.family;
  k.listener = listener;
  k.kind = KeyKind::kFlow;
  kp.dir = swap ? 1 : 0;
  return kp;
}

FlowKey makeFragmentKey(const L4Tuple& t, uint32_t frag_id, uint8_t listener) noexcept {
  FlowKey k;
  std::memset(&k, 0, sizeof k);
  std::memcpy(k.a, t.src.b.data(), 16);
  std::memcpy(k.b, t.dst.b.data(), 16);
  k.port_a = uint16_t(frag_id >> 16);
  k.port_b = uint16_t(frag_id);
  // IPv4 datagrams are (src, dst, protocol, id); IPv6 ones (src, dst, id)
  // (RFC 8200 4.5): a later fragment's "protocol" is the fragment header's
  // next header, which differs from the first fragment's transport protocol
  // when extension headers follow the fragment header.
  k.proto = t.src.isV6() ? 0 : t.proto;
  k.family = t.src.family;
  k.listener = listener;
  k.kind = KeyKind::kFragment;
  return k;
}

uint32_t flowHash(const void* key, uint32_t key_len, uint32_t seed) noexcept {
  // About 30 instructions for a 40-byte key, on every packet (the inline
  // flowHash(const FlowKey&) is this, unrolled).
  const uint8_t* p = static_cast<const uint8_t*>(key);
  uint64_t h = detail::kHashInit ^ detail::g_hash_key.k0 ^ seed ^ (uint64_t(key_len) << 32);
  uint32_t i = 0;
  for (; i + 8 <= key_len; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = detail::hashStep(h, w);
  }
  if (i < key_len) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, key_len - i);
    h = detail::hashStep(h, w);
  }
  h = detail::hashFinal(h ^ detail::g_hash_key.k1);
  return uint32_t(h ^ (h >> 32));
}

void setFlowHashKey(const FlowHashKey& k) noexcept {
  detail::g_hash_key.k0 = k.k0;
  detail::g_hash_key.k1 = k.k1;
  detail::g_hash_key.init40 = detail::kHashInit ^ k.k0 ^ (uint64_t(sizeof(FlowKey)) << 32);
}

FlowHashKey flowHashKey() noexcept { return {detail::g_hash_key.k0, detail::g_hash_key.k1}; }

}  // namespace gwlb
