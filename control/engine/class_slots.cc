#include "control/engine/class_slots.h"

#include <set>
#include <stdexcept>

namespace gwlb::ctl {

std::vector<uint16_t> ClassSlots::assign(const std::vector<std::string>& names, const Reader& read) {
  if (names.size() > kSlots) throw std::length_error("more traffic classes than counter slots");
  const std::set<std::string> keep(names.begin(), names.end());
  for (auto it = by_name_.begin(); it != by_name_.end();) {
    if (keep.count(it->first)) {
      ++it;
      continue;
    }
    free_.push_back(it->second);
    it = by_name_.erase(it);
  }
  std::vector<uint16_t> out;
  out.reserve(names.size());
  for (const std::string& n : names) {
    auto it = by_name_.find(n);
    if (it != by_name_.end()) {
      out.push_back(it->second);
      continue;
    }
    uint16_t slot;
    if (next_ < kSlots) {
      slot = next_++;
      base_[slot] = {};
    } else {
      slot = free_.front();
      free_.pop_front();
      base_[slot] = read ? read(slot) : ClassCount{};
    }
    by_name_.emplace(n, slot);
    out.push_back(slot);
  }
  return out;
}

uint16_t ClassSlots::slotOf(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? kNoClass : it->second;
}

ClassCount ClassSlots::since(uint16_t slot, ClassCount raw) const {
  if (slot >= kSlots) return {};
  const ClassCount& b = base_[slot];
  return {raw.packets - b.packets, raw.bytes - b.bytes,
          raw.appliance_bypassed_packets - b.appliance_bypassed_packets,
          raw.appliance_bypassed_bytes - b.appliance_bypassed_bytes};
}

}  // namespace gwlb::ctl
