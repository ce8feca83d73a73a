// The flow table's lookups (docs/architecture.md "The flow table"): one
// key (lookup), and a burst's keys in three stages (lookupBulk), with a
// copy of the bulk lookup compiled for AVX2 where the CPU has it. Inserts,
// expiry and the walks are in dataplane/flow_table.cc.
#include <algorithm>
#include <cstring>

#include "dataplane/flow_table.h"
#include "dataplane/flow_table_layout.h"

namespace gwlb::dp {

// The tag and compact-key layout, and the tag-line compares (dataplane/flow_table_layout.h).
using namespace flow_slot;

int32_t FlowTable::lookup(const FlowKey& k, uint32_t hash) const noexcept {
  bool wide = !isCompact(k);
  uint32_t want = tagSig(hash, wide) | kReady;
  Candidates c;
  candidates(hash, c);
  for (uint32_t b : c.bucket) {
    const std::atomic<uint32_t>* line = tags_ + size_t(b) * kBucketSlots;
    for (uint32_t m = matchLine(line, want); m; m &= m - 1) {
      uint32_t j = uint32_t(__builtin_ctz(m));
      uint32_t idx = b * kBucketSlots + j;
      if (line[j].load(std::memory_order_acquire) == want && keyMatches(idx, wide, k))
        return posOf(idx, wide);
    }
  }
  return -1;
}

// A key's second bucket pair, tag lines and keys (the first pair was searched).
[[gnu::always_inline]] inline int32_t FlowTable::lookupSecond(const FlowKey& k, uint32_t hash,
                                                              uint32_t want) const noexcept {
  const bool wide = want & kWideBit;
  const uint32_t b2 = secondBucket(hash), b3 = nextBucket(b2);
  const std::atomic<uint32_t>* l2 = tags_ + size_t(b2) * kBucketSlots;
  const std::atomic<uint32_t>* l3 = tags_ + size_t(b3) * kBucketSlots;
  for (uint32_t m = matchLine(l2, want) | matchLine(l3, want) << 16; m; m &= m - 1) {
    uint32_t bit = uint32_t(__builtin_ctz(m));
    uint32_t idx = (bit < 16 ? b2 : b3) * kBucketSlots + (bit & 15);
    if (tags_[idx].load(std::memory_order_acquire) == want && keyMatches(idx, wide, k))
      return posOf(idx, wide);
  }
  return -1;
}

// lookupBulk()'s keys whose first candidate did not verify: the pair's other
// matches (the first held another key with the same tag, or was deleted
// since), then the second pair; for a miss, the hint.
[[gnu::always_inline]] inline int32_t FlowTable::bulkMiss(const FlowKey& k, uint32_t hash, uint32_t b, uint32_t mask, uint32_t want,
                            uint32_t* hint) const noexcept {
  auto line = [this](uint32_t bk) { return tags_ + size_t(bk) * kBucketSlots; };
  const bool wide = want & kWideBit;
  for (uint32_t m = mask & (mask - 1); m; m &= m - 1) {
    uint32_t idx = b * kBucketSlots + uint32_t(__builtin_ctz(m));
    idx = idx >= nslots_ ? idx - nslots_ : idx;
    if (tags_[idx].load(std::memory_order_acquire) == want && keyMatches(idx, wide, k))
      return posOf(idx, wide);
  }
  // Concurrency rule R13 (docs/architecture.md "Flow entries: concurrency rules"):
  // the second pair only while a key of this first bucket lives there; a
  // miss while its insert is under way ends in insert(), which reads all four.
  const int32_t r = spilled(b) ? lookupSecond(k, hash, want) : -1;
  if (r >= 0 || wide || !hint) return r;
  // A miss: most likely a new flow whose insert follows in this burst.
  // Its slot (the first empty one of the bucket insert() picks) is
  // fetched for writing now, so the insert does not wait for a cold line.
  // pickBucket()'s choice, reading the second pair's lines only when it
  // needs them (the first pair's less loaded bucket is over half full).
  const uint32_t b1 = nextBucket(b);
  uint32_t e0 = matchLine(line(b), kEmpty), e1 = matchLine(line(b1), kEmpty);
  uint32_t hb = b, he = e0;
  if (__builtin_popcount(e1) > __builtin_popcount(e0)) hb = b1, he = e1;
  if (uint32_t(__builtin_popcount(he)) < kBucketSlots / 2) [[unlikely]] {
    Candidates cs;
    candidates(hash, cs);
    uint32_t empty[4] = {e0, e1, matchLine(line(cs.bucket[2]), kEmpty), matchLine(line(cs.bucket[3]), kEmpty)};
    uint32_t used[4];
    for (uint32_t j = 0; j < 4; ++j) used[j] = kBucketSlots - uint32_t(__builtin_popcount(empty[j]));
    const uint32_t j = pickBucket(used);
    if (j == 4) return r;
    hb = cs.bucket[j];
    he = empty[j];
  }
  const uint32_t idx = hb * kBucketSlots + uint32_t(__builtin_ctz(he));
  *hint = idx;
  __builtin_prefetch(&narrow_[idx], 1, 3);
  return r;
}

uint32_t FlowTable::lookupBulk(const FlowKey* const* keys, const uint32_t* hashes, uint32_t n,
                               int32_t* pos, uint32_t* hints) const noexcept {
#ifdef GWLB_FT_AVX2
  if (avx2_) return lookupBulkAvx2(keys, hashes, n, pos, hints);
#endif
  return lookupBulkIn<false>(keys, hashes, n, pos, hints);
}

#ifdef GWLB_FT_AVX2
// The same body compiled for AVX2: flatten inlines every helper into it,
// so they are compiled for AVX2 too (VEX encoding: no register copies).
__attribute__((target("avx2"), flatten)) uint32_t FlowTable::lookupBulkAvx2(
    const FlowKey* const* keys, const uint32_t* hashes, uint32_t n, int32_t* pos, uint32_t* hints) const noexcept {
  return lookupBulkIn<true>(keys, hashes, n, pos, hints);
}
#endif

template <bool kAvx2>
[[gnu::always_inline]] inline uint32_t FlowTable::lookupBulkIn(const FlowKey* const* keys, const uint32_t* hashes,
                                                           uint32_t n, int32_t* pos,
                                                           uint32_t* hints) const noexcept {
  // What the stages carry for a key (one array: one base register).
  struct Probe {
    uint32_t want;   // the tag of the key's slot, ready
    uint32_t first;  // its first bucket (its pair: it and the next)
    uint32_t mask;   // its tag's matches in the pair: bits 0..15 first, 16..31 the next
    uint32_t cand;   // the slot of the lowest match, or kNoHint (none)
  };
  Probe pr[kLookupBulkMax];
  uint32_t no_hints[kLookupBulkMax];  // hints' stores when the caller wants none
  auto line = [this](uint32_t b) { return tags_ + size_t(b) * kBucketSlots; };
  const uint32_t nslots = nslots_;
  uint32_t misses = 0;
  for (uint32_t at = 0; at < n; at += kLookupBulkMax) {
    const uint32_t cnt = std::min(kLookupBulkMax, n - at);
    const FlowKey* const* const ks = keys + at;
    const uint32_t* const hs = hashes + at;
    int32_t* const ps = pos + at;
    uint32_t* const hint = hints ? hints + at : no_hints;
    // Stage 1: the first bucket pair's tag lines prefetched (inserts put
    // most keys there: pickBucket()). The pair's second line is the one
    // after the first in memory but for the last bucket, whose pair wraps to
    // line 0: that line goes unprefetched (a prefetch past the array cannot
    // fault; the same for the second pair in stage 2).
    for (uint32_t i = 0; i < cnt; ++i) {
      const uint32_t b = firstBucket(hs[i]);
      pr[i].first = b;
      pr[i].want = tagSig(hs[i], !isCompact(*ks[i])) | kReady;
      __builtin_prefetch(line(b), 0, 3);
      __builtin_prefetch(line(b + 1), 0, 3);
    }
    // Stage 2: the pair's tags compared; the first candidate slot of each key
    // prefetched, or, with none in the first pair, the second pair's tag
    // lines if the overflow marker says a key of this first bucket is there.
    // Slot b * 16 + bit for a match `bit` of the pair, less nslots_ when the
    // pair wraps (bit >= 16 of the last bucket: slot bit - 16 of bucket 0).
    for (uint32_t i = 0; i < cnt; ++i) {
      Probe& p = pr[i];
      const uint32_t b = p.first;
      uint32_t m;
#ifdef GWLB_FT_AVX2
      if constexpr (kAvx2) m = matchPairAvx2(line(b), line(nextBucket(b)), p.want);
      else
#endif
        m = matchLine(line(b), p.want) | matchLine(line(nextBucket(b)), p.want) << 16;
      p.mask = m;
      if (m) [[likely]] {
        uint32_t idx = b * kBucketSlots + uint32_t(__builtin_ctz(m));
        idx = idx >= nslots ? idx - nslots : idx;
        p.cand = idx;
        if (p.want & kWideBit) __builtin_prefetch(&wide_[idx], 0, 3);
        else __builtin_prefetch(&narrow_[idx], 0, 3);
      } else {
        p.cand = kNoHint;
        if (spilled(b)) {
          const uint32_t b2 = secondBucket(hs[i]);
          __builtin_prefetch(line(b2), 0, 3);
          __builtin_prefetch(line(b2 + 1), 0, 3);
        }
      }
    }
    // Stage 3: keys compared, the first candidate's first (nearly every
    // hit); bulkMiss() for the rest. The arrays' addresses are copied: the
    // acquire load would make every member read after it a reload.
    const std::atomic<uint32_t>* const tags = tags_;
    const Slot4* const narrow = narrow_;
    for (uint32_t i = 0; i < cnt; ++i) {
      const FlowKey& k = *ks[i];
      const Probe& p = pr[i];
      const uint32_t c = p.cand;
      hint[i] = kNoHint;
      if (c != kNoHint && tags[c].load(std::memory_order_acquire) == p.want) [[likely]] {
        if (!(p.want & kWideBit)) {
          if (sameKey4(narrow[c].key, toKey4(k))) [[likely]] {
            ps[i] = int32_t(c);
            continue;
          }
        } else if (keyMatches(c, true, k)) {
          ps[i] = posOf(c, true);
          continue;
        }
      }
      ps[i] = bulkMiss(k, hs[i], p.first, p.mask, p.want, hints ? &hint[i] : nullptr);
      misses += ps[i] < 0;
    }
  }
  return misses;
}

}  // namespace gwlb::dp
