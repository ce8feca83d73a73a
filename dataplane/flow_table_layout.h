// The flow table's slot layout (docs/architecture.md "The flow table"): the
// 32-bit tag of a slot (state, wide bit, signature), the compares of a line
// of 16 tags, and the 16-byte key of a compact (IPv4) slot. Internal to
// dataplane/flow_table.cc and flow_table_lookup.cc (with the slots and the
// key compare both use); tests that set up a slot state by hand
// (tests/dp/dataplane/flow_table_test_access.h) read it too.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/flow_key.h"
#include "dataplane/flow_table.h"  // GWLB_FT_AVX2

#if defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
#include <emmintrin.h>
#ifdef __SSE4_1__
#include <smmintrin.h>
#endif
#define GWLB_FT_SIMD 1
#endif
// GWLB_FT_AVX2 (flow_table.h): FlowTable::lookupBulk has a copy compiled for
// AVX2, taken when the CPU has it (the build itself targets older CPUs).
#ifdef GWLB_FT_AVX2
#include <immintrin.h>
#endif

namespace gwlb::dp::flow_slot {

// Tag of a slot (docs/architecture.md "The flow table"):
//   bits 0..2  state (kEmpty .. kDead)
//   bit  3     wide: the key is in the two-line slot array
//   bits 4..31 signature: the hash's low 28 bits (buckets come from its high bits)
// Concurrency rule R10 (docs/architecture.md "Flow entries: concurrency rules"):
// empty -> busy (CAS) -> keyed -> ready (CAS) -> deleted -> empty (after a grace
// period); an insert that loses, or is killed, leaves keyed -> dead -> deleted.
inline constexpr uint32_t kEmpty = 0;    // free
inline constexpr uint32_t kBusy = 1;     // claimed by an inserter that is writing the key
inline constexpr uint32_t kKeyed = 2;    // key written; its inserter checks for a twin
inline constexpr uint32_t kReady = 3;    // live: lookups find it
inline constexpr uint32_t kDeleted = 4;  // deleted by the control thread, awaiting its grace period
inline constexpr uint32_t kDead = 5;     // a lost insert's slot: the control thread retires it
inline constexpr uint32_t kStateMask = 7;
inline constexpr uint32_t kWideBit = 8;

inline uint32_t tagSig(uint32_t hash, bool wide) noexcept {
  return (hash << 4) | (wide ? kWideBit : 0);
}
inline uint32_t tagState(uint32_t tag) noexcept { return tag & kStateMask; }
inline uint32_t tagKey(uint32_t tag) noexcept { return tag & ~kStateMask; }

inline constexpr uint32_t kLineTags = 16;  // tags per 64-byte line (one bucket)

// Bit i set when tag i of a 16-tag line equals `want`.
inline uint32_t matchLine(const std::atomic<uint32_t>* line, uint32_t want) noexcept {
#ifdef GWLB_FT_SIMD
  // A plain vector read of the tag line (x86 loads of aligned words are
  // atomic); each match is confirmed by an acquire load before the key is read.
  // The four compare results (0 or -1 per tag) narrow to 16 bytes with
  // saturating packs, in tag order, and one byte mask says which matched.
  const __m128i* v = reinterpret_cast<const __m128i*>(line);
  __m128i w = _mm_set1_epi32(int(want));
  __m128i c01 = _mm_packs_epi32(_mm_cmpeq_epi32(_mm_load_si128(v), w), _mm_cmpeq_epi32(_mm_load_si128(v + 1), w));
  __m128i c23 = _mm_packs_epi32(_mm_cmpeq_epi32(_mm_load_si128(v + 2), w), _mm_cmpeq_epi32(_mm_load_si128(v + 3), w));
  return uint32_t(_mm_movemask_epi8(_mm_packs_epi16(c01, c23)));
#else
  uint32_t m = 0;
  for (uint32_t i = 0; i < kLineTags; ++i)
    m |= uint32_t(line[i].load(std::memory_order_relaxed) == want) << i;
  return m;
#endif
}

#ifdef GWLB_FT_AVX2
// matchLine(l0, want) | matchLine(l1, want) << 16 in AVX2 (only called where
// the CPU has it): two compares of 8 tags per line, narrowed by in-lane
// saturating packs, which leave the 32 byte results in the dword order
// (l0 0-3, l0 8-11, l1 0-3, l1 8-11, l0 4-7, l0 12-15, l1 4-7, l1 12-15);
// one permute restores tag order for the byte mask.
__attribute__((target("avx2"))) inline uint32_t matchPairAvx2(const std::atomic<uint32_t>* l0,
                                                              const std::atomic<uint32_t>* l1,
                                                              uint32_t want) noexcept {
  const __m256i* a = reinterpret_cast<const __m256i*>(l0);
  const __m256i* b = reinterpret_cast<const __m256i*>(l1);
  const __m256i w = _mm256_set1_epi32(int(want));
  __m256i x = _mm256_packs_epi32(_mm256_cmpeq_epi32(_mm256_load_si256(a), w),
                                 _mm256_cmpeq_epi32(_mm256_load_si256(a + 1), w));
  __m256i y = _mm256_packs_epi32(_mm256_cmpeq_epi32(_mm256_load_si256(b), w),
                                 _mm256_cmpeq_epi32(_mm256_load_si256(b + 1), w));
  __m256i z = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(x, y), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  return uint32_t(_mm256_movemask_epi8(z));
}
#endif

#ifdef GWLB_FT_SIMD
// The four compares of a line's 16 tags (each lane all ones or all zeros, or
// at least its sign set on a match) narrowed by signed saturating packs to
// one bit per tag.
inline uint32_t laneMask(__m128i e0, __m128i e1, __m128i e2, __m128i e3) noexcept {
  return uint32_t(_mm_movemask_epi8(_mm_packs_epi16(_mm_packs_epi32(e0, e1), _mm_packs_epi32(e2, e3))));
}
#endif

// Bit i set when (tag i of a line & mask) == want: one line of 16 tags
// compared at once (matchSig and matchState below; both inline to constants).
inline uint32_t matchMasked(const std::atomic<uint32_t>* line, uint32_t want, uint32_t mask) noexcept {
#ifdef GWLB_FT_SIMD
  // As matchLine: four compares narrowed by saturating packs, one byte mask.
  const __m128i* v = reinterpret_cast<const __m128i*>(line);
  const __m128i w = _mm_set1_epi32(int(want));
  const __m128i k = _mm_set1_epi32(int(mask));
  auto eq = [&](int i) { return _mm_cmpeq_epi32(_mm_and_si128(_mm_load_si128(v + i), k), w); };
  return laneMask(eq(0), eq(1), eq(2), eq(3));
#else
  uint32_t m = 0;
  for (uint32_t i = 0; i < kLineTags; ++i)
    m |= uint32_t((line[i].load(std::memory_order_relaxed) & mask) == want) << i;
  return m;
#endif
}

// Bit i set when tag i of a line carries signature and wide bit `sig`
// (any state).
inline uint32_t matchSig(const std::atomic<uint32_t>* line, uint32_t sig) noexcept {
  return matchMasked(line, sig, ~kStateMask);
}

// Bit i set when tag i of a line may carry signature `sig`: its top 16
// bits (the signature's high bits) equal sig's. A superset of matchSig's
// slots (other signatures share the top bits once in 2^16): the caller
// compares the whole tag again, as an insert does before it reads a key.
// One 16-bit compare per four tags and no mask: a lane's compare is
// negative (its top word all ones) exactly when its top bits match, and
// the signed saturating packs keep that sign to the byte mask.
inline uint32_t matchSigHigh(const std::atomic<uint32_t>* line, uint32_t sig) noexcept {
#ifdef GWLB_FT_SIMD
  const __m128i* v = reinterpret_cast<const __m128i*>(line);
  const __m128i w = _mm_set1_epi32(int(sig));
  auto eq = [&](int i) { return _mm_cmpeq_epi16(_mm_load_si128(v + i), w); };
  return laneMask(eq(0), eq(1), eq(2), eq(3));
#else
  uint32_t m = 0;
  for (uint32_t i = 0; i < kLineTags; ++i)
    m |= uint32_t((line[i].load(std::memory_order_relaxed) >> 16) == (sig >> 16)) << i;
  return m;
#endif
}

// Bit i set when tag i of a line is in state `state` (any signature).
inline uint32_t matchState(const std::atomic<uint32_t>* line, uint32_t state) noexcept {
  return matchMasked(line, state, kStateMask);
}

// IPv4 flow and fragment keys (addresses' bytes 4..15 zero) fit 16 bytes:
// the two addresses' first four bytes, then the key's last eight bytes as
// they are (ports, protocol, family, listener, kind), so a key converts with
// three loads.
struct Key4 {
  uint32_t a, b;
  uint16_t port_a, port_b;
  uint8_t proto, family, listener;
  KeyKind kind;
};
static_assert(sizeof(Key4) == 16);
static_assert(offsetof(Key4, port_a) == 8 && offsetof(FlowKey, port_a) == 32 &&
              sizeof(FlowKey) - offsetof(FlowKey, port_a) == 8, "Key4's tail is FlowKey's");

inline bool isCompact(const FlowKey& k) noexcept {
  if (k.family != 4) return false;
#if defined(GWLB_FT_SIMD) && defined(__SSE4_1__)
  // Both addresses' bytes 4..15 zero: one OR of the two, one test under a mask.
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k.a));
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k.b));
  return _mm_testz_si128(_mm_or_si128(a, b), _mm_setr_epi32(0, -1, -1, -1));
#else
  uint64_t w[4];
  std::memcpy(&w[0], k.a + 4, 8);
  std::memcpy(&w[1], k.b + 4, 8);
  uint32_t x, y;
  std::memcpy(&x, k.a + 12, 4);
  std::memcpy(&y, k.b + 12, 4);
  return (w[0] | w[1] | x | y) == 0;
#endif
}
inline Key4 toKey4(const FlowKey& k) noexcept {
  Key4 c;
  std::memcpy(&c.a, k.a, 4);
  std::memcpy(&c.b, k.b, 4);
  std::memcpy(&c.port_a, &k.port_a, 8);
  return c;
}
inline FlowKey fromKey4(const Key4& c) noexcept {
  FlowKey k;
  std::memset(&k, 0, sizeof k);
  std::memcpy(k.a, &c.a, 4);
  std::memcpy(k.b, &c.b, 4);
  std::memcpy(&k.port_a, &c.port_a, 8);
  return k;
}
inline bool sameKey4(const Key4& x, const Key4& y) noexcept {
  uint64_t a[2], b[2];
  std::memcpy(a, &x, 16);
  std::memcpy(b, &y, 16);
  return ((a[0] ^ b[0]) | (a[1] ^ b[1])) == 0;
}

}  // namespace gwlb::dp::flow_slot

namespace gwlb::dp {

// A compact slot is one line, its entry after the 16-byte key; a wide slot
// two lines, its entry after the 40-byte key (FlowTable::entryPtr knows it).
struct alignas(64) FlowTable::Slot4 {
  flow_slot::Key4 key;
  FlowEntry e;
};
struct alignas(64) FlowTable::Slot6 {
  FlowKey key;
  FlowEntry e;
};

// Inserts (flow_table_insert.cc) and lookups (flow_table_lookup.cc) compare keys.
[[gnu::always_inline]] inline bool FlowTable::keyMatches(uint32_t idx, bool wide, const FlowKey& k) const noexcept {
  if (wide) return std::memcmp(&wide_[idx].key, &k, sizeof k) == 0;
  return flow_slot::sameKey4(narrow_[idx].key, flow_slot::toKey4(k));
}

}  // namespace gwlb::dp
