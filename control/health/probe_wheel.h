// When each appliance's next probe is due, on a hashed timing wheel: one slot
// per millisecond, a few seconds round, and a round count for what is due
// later. Adding and taking an entry cost O(1) whatever the number of
// appliances, and the checker keeps one Asio timer for all of them (armed at
// the next slot that holds anything) instead of one per appliance, whose
// heap and timerfd updates grew with the fleet. Pure: time is passed in
// (milliseconds on the caller's clock); no Asio. Control thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gwlb::ctl {

class ProbeWheel {
 public:
  static constexpr uint64_t kSlots = 4096;  // 4.096 s per round at 1 ms a slot

  // An entry: whose probe (`key`) and which of its schedules (`seq`): the
  // owner ignores an entry whose seq is no longer its latest (it was
  // rescheduled or cancelled), so nothing is ever searched for and removed.
  struct Entry {
    uint32_t key;
    uint64_t seq;
  };

  explicit ProbeWheel(uint64_t now_ms) : slots_(kSlots), cursor_(now_ms) {}

  // Due at `due_ms` (one in the past is due at the next expire()).
  void add(uint64_t due_ms, uint32_t key, uint64_t seq);

  // Appends to `out` every entry due at or before now_ms, slot by slot
  // (within a slot, in the order added): in time order when the last call
  // was less than a round ago; after a longer sleep, every entry due still
  // comes out, in slot order. Returns how many.
  size_t expire(uint64_t now_ms, std::vector<Entry>& out);

  // The time of the first slot at or after the cursor that holds an entry
  // (possibly one due in a later round: expiring it then just counts the
  // round down), or nullopt when the wheel is empty.
  std::optional<uint64_t> nextDue() const;

  size_t size() const { return size_; }

 private:
  struct Slotted {
    Entry e;
    uint64_t due;  // absolute ms: a later round's entry stays until its due
  };
  std::vector<std::vector<Slotted>> slots_;
  uint64_t cursor_;  // every slot before this time has been expired
  size_t size_ = 0;
};

}  // namespace gwlb::ctl
