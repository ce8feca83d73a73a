// Test access to the neighbour table's private state (issue 25: test hooks
// live with the tests, not in the product class). NeighbourTable names this
// struct its friend; tests use it to set up and read slot states.
#pragma once

#include <atomic>
#include <cstdint>

#include "dataplane/neighbour_table.h"

namespace gwlb::dp {

struct NeighbourTableTestAccess {
  // Claims this L2's home slot and leaves it busy, as a worker preempted
  // between its claim and its ready store would.
  static void holdHomeSlotBusy(NeighbourTable& nt, uint64_t peer_word, uint64_t self_word) noexcept {
    nt.state_[nt.homeSlot(peer_word, self_word)].store(NeighbourTable::kBusy, std::memory_order_release);
  }
  // The states of the sweep, by index: true when `idx` is retiring.
  static bool isRetiring(const NeighbourTable& nt, uint16_t idx) noexcept {
    return idx && nt.state_[idx - 1].load(std::memory_order_relaxed) == NeighbourTable::kRetiring;
  }
};

}  // namespace gwlb::dp
