#include "control/health/probe_wheel.h"

#include <algorithm>

namespace gwlb::ctl {

void ProbeWheel::add(uint64_t due_ms, uint32_t key, uint64_t seq) {
  if (due_ms < cursor_) due_ms = cursor_;  // late: the next expire() takes it
  slots_[due_ms % kSlots].push_back({{key, seq}, due_ms});
  ++size_;
}

size_t ProbeWheel::expire(uint64_t now_ms, std::vector<Entry>& out) {
  size_t taken = 0;
  // At most one round: after it every slot has been looked at, and what
  // stays is due later than now_ms.
  const uint64_t first = cursor_;
  for (; cursor_ <= now_ms && size_ > 0 && cursor_ - first < kSlots; ++cursor_) {
    std::vector<Slotted>& s = slots_[cursor_ % kSlots];
    size_t kept = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i].due <= now_ms) {
        out.push_back(s[i].e);
        ++taken;
        --size_;
      } else {
        s[kept++] = s[i];
      }
    }
    s.resize(kept);
  }
  // Whatever stays is due after now_ms, so the cursor may pass over the
  // empty rest at once.
  if (cursor_ <= now_ms) cursor_ = now_ms + 1;
  return taken;
}

std::optional<uint64_t> ProbeWheel::nextDue() const {
  if (size_ == 0) return std::nullopt;
  for (uint64_t t = cursor_; t < cursor_ + kSlots; ++t)
    if (!slots_[t % kSlots].empty()) return t;
  return std::nullopt;  // not reached: size_ > 0 means some slot holds an entry
}

}  // namespace gwlb::ctl
