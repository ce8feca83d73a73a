// The control thread's half of the neighbour table: the sweep that frees
// neighbours no flow refers to (dataplane/neighbour_table.h; docs/
// architecture.md "Flow entries: concurrency rules", R2).
#include "dataplane/neighbour_table.h"

#include <rte_rcu_qsbr.h>

namespace gwlb::dp {

void NeighbourTable::sweepBegin(rte_rcu_qsbr* qsbr) noexcept {
  std::memset(marks_, 0, sizeof marks_);
  // Checked before the walk: a worker that had an index of the batch from
  // intern() has stored it in its entry by its next quiescent point, so the
  // walk that follows sees every reference made before the batch began.
  retire_over_ = retiring_ && rte_rcu_qsbr_check(qsbr, retire_token_, false) == 1;
  free_over_ = freeing_ && rte_rcu_qsbr_check(qsbr, free_token_, false) == 1;
}

void NeighbourTable::sweepEnd(rte_rcu_qsbr* qsbr) noexcept {
  auto marked = [this](uint32_t s) { return (marks_[s >> 6] >> (s & 63)) & 1; };
  // 1. Freeing slots: no entry held them after their retiring grace period,
  // and a reader that loaded one earlier has passed a quiescent point since.
  if (free_over_) {
    for (uint32_t s = 0; s < kSlots; ++s) {
      if (state_[s].load(std::memory_order_relaxed) != kFreeing) continue;
      port_count_[(self_[s] >> 48) & 0xFF].fetch_sub(1, std::memory_order_relaxed);
      state_[s].store(kFree, std::memory_order_release);
      ++freed_;
    }
    freeing_ = false;
  }
  // 2. Retiring slots, after their grace period: intern() hands them out no
  // more, so an entry that holds one now got it before and keeps it (back to
  // ready); one that no entry holds can only lose readers (to freeing).
  if (retire_over_ && !freeing_) {
    bool any = false;
    for (uint32_t s = 0; s < kSlots; ++s) {
      uint8_t st = kRetiring;
      if (state_[s].load(std::memory_order_relaxed) != kRetiring) continue;
      if (marked(s)) state_[s].compare_exchange_strong(st, kReady, std::memory_order_acq_rel);
      else any |= state_[s].compare_exchange_strong(st, kFreeing, std::memory_order_acq_rel);
    }
    retiring_ = false;
    if (any) {
      free_token_ = rte_rcu_qsbr_start(qsbr);
      freeing_ = true;
    }
  }
  // 3. Ready slots no entry holds: a new retiring batch. (A worker may be
  // about to store one it just interned: the next sweep sees it and
  // revives it.)
  if (!retiring_) {
    bool any = false;
    for (uint32_t s = 0; s < kSlots; ++s) {
      uint8_t st = kReady;
      if (marked(s) || state_[s].load(std::memory_order_relaxed) != kReady) continue;
      any |= state_[s].compare_exchange_strong(st, kRetiring, std::memory_order_acq_rel);
    }
    if (any) {
      retire_token_ = rte_rcu_qsbr_start(qsbr);
      retiring_ = true;
    }
  }
}

}  // namespace gwlb::dp
