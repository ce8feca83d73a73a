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
