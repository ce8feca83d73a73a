// Test access to the flow table's private state (issue 25: test hooks live
// with the tests, not in the product class). FlowTable names this struct its
// friend; tests use it to set up a slot state a race would leave.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/flow_key.h"
#include "dataplane/flow_table.h"
#include "dataplane/flow_table_layout.h"

namespace gwlb::dp {

struct FlowTableTestAccess {
  // Claims an empty slot of the key's first bucket with the key's tag and
  // leaves it busy, as an inserter preempted right after its claim would.
  static void holdSlotBusy(FlowTable& ft, const FlowKey& k, uint32_t hash) noexcept {
    using namespace flow_slot;
    const uint32_t sig = tagSig(hash, !isCompact(k));
    FlowTable::Candidates c;
    ft.candidates(hash, c);
    for (uint32_t s = 0; s < FlowTable::kBucketSlots; ++s) {
      uint32_t e = kEmpty;
      if (ft.tags_[c.bucket[0] * FlowTable::kBucketSlots + s].compare_exchange_strong(e, sig | kBusy))
        return;
    }
  }

  // The overflow marker's count of the key's first bucket, and of all buckets.
  static uint32_t spillCount(const FlowTable& ft, uint32_t hash) noexcept {
    return ft.spill_[ft.firstBucket(hash)].load();
  }
  static uint64_t spillTotal(const FlowTable& ft) noexcept {
    uint64_t n = 0;
    for (uint32_t b = 0; b < ft.nbuckets_; ++b) n += ft.spill_[b].load();
    return n;
  }
  // True when position `pos` (a compact slot) is in the first bucket pair of `hash`.
  static bool inFirstPair(const FlowTable& ft, uint32_t hash, int32_t pos) noexcept {
    FlowTable::Candidates c;
    ft.candidates(hash, c);
    const uint32_t b = uint32_t(pos) / FlowTable::kBucketSlots;
    return b == c.bucket[0] || b == c.bucket[1];
  }
  // Stores an IPv4 key ready in an empty slot of its second pair (a bucket
  // not in its first pair) without the overflow marker, as no insert would;
  // its position, or -1 when the second pair is the first.
  static int32_t plantInSecondPair(FlowTable& ft, const FlowKey& k, uint32_t hash) noexcept {
    using namespace flow_slot;
    FlowTable::Candidates c;
    ft.candidates(hash, c);
    for (uint32_t j = 2; j < 4; ++j) {
      if (c.bucket[j] == c.bucket[0] || c.bucket[j] == c.bucket[1]) continue;
      for (uint32_t s = 0; s < FlowTable::kBucketSlots; ++s) {
        const uint32_t idx = c.bucket[j] * FlowTable::kBucketSlots + s;
        if (ft.tags_[idx].load() != kEmpty) continue;
        ft.narrow_[idx].key = toKey4(k);
        ft.count_.fetch_add(1);
        ft.tags_[idx].store(tagSig(hash, false) | kReady);
        return int32_t(idx);
      }
    }
    return -1;
  }

  // Which compiled copy of lookupBulk() the table runs: the AVX2 one only
  // where the CPU has it (false: the SSE2 one every CPU runs).
  static bool useAvx2(FlowTable& ft, bool on) noexcept {
#ifdef GWLB_FT_AVX2
    ft.avx2_ = on && __builtin_cpu_supports("avx2");
    return ft.avx2_;
#else
    (void)ft;
    (void)on;
    return false;
#endif
  }
};

}  // namespace gwlb::dp
