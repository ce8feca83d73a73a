// Where each traffic class counts its packets and bytes: a counter
// slot per class name that outlives reloads. Workers count a packet of the
// class at position i of the snapshot's ClassTable in slot
// Snapshot::class_slot[i] of their WorkerState; the slot belongs to the
// class's name, not its position, so a reload that reorders, inserts or
// removes classes keeps every remaining name's counts.
//   - A name keeps its slot for as long as the config has a class of that name.
//   - A name that leaves the config frees its slot; a name that appears takes
//     a never-used slot first, else the slot freed longest ago, with the
//     workers' counts in it at that moment as its baseline, so the new name
//     counts from zero. (A worker still on the snapshot before the change may
//     count a last packet of the old name after the baseline was read: at
//     most the packets of one burst per worker.)
// Pure code, no DPDK; control thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/traffic_class.h"

namespace gwlb::ctl {

// Packets and bytes in one counter slot, summed over the workers.
struct ClassCount {
  uint64_t packets = 0, bytes = 0;
  // Of the class's flows, the packets (and bytes) its appliances handed back
  // (listeners[].appliance_bypass) that went straight back uninspected.
  uint64_t appliance_bypassed_packets = 0, appliance_bypassed_bytes = 0;
};

class ClassSlots {
 public:
  static constexpr size_t kSlots = kMaxClasses;  // WorkerState::class_packets
  // The workers' counts in a slot now (gwlbd sums its workers; none: zeros).
  using Reader = std::function<ClassCount(uint16_t slot)>;

  // The slot of every name, in order (names unique, at most kSlots of them:
  // what validateConfig allows). Frees the slots of names no longer listed
  // and gives slots to new ones, reading a reused slot's baseline with `read`.
  std::vector<uint16_t> assign(const std::vector<std::string>& names, const Reader& read);

  // The slot of a class name, or kNoClass when no class has that name.
  uint16_t slotOf(const std::string& name) const;
  // What the class in `slot` counted since its name took it: `raw` (the
  // workers' counts in the slot) less the baseline.
  ClassCount since(uint16_t slot, ClassCount raw) const;
  // Slots held by names, and slots freed and waiting for a new name.
  size_t held() const { return by_name_.size(); }
  size_t freed() const { return free_.size(); }

 private:
  std::map<std::string, uint16_t> by_name_;
  std::vector<ClassCount> base_ = std::vector<ClassCount>(kSlots);
  std::deque<uint16_t> free_;  // freed slots, the one freed longest ago first
  uint16_t next_ = 0;          // slots from here on were never used
};

}  // namespace gwlb::ctl
