// FleetSync's memory of what it sent (docs/fleet.md "What is sent, and
// when"): per flow-table position, when this node last sent the flow there to
// its peers and the flow's move count then. The refresh scan compares them
// with the entry to decide whether the flow is new, moved or due a refresh.
//
// 8 bytes a position, in anonymous memory that becomes resident only where
// written: positions are the table's (dp::FlowTable::slots(): the IPv4 slots,
// then as many for other keys), so a node that never sends an IPv6 flow never
// touches the second half. gwlbd --check-config counts it (control/daemon/memory_plan.cc,
// part "fleet sync").
//
// Threads: the control thread only. The constructor throws std::runtime_error
// when the memory cannot be mapped (start-up only); nothing else throws.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/flow_table.h"

namespace gwlb::ctl {

class SentLog {
 public:
  // A time is a 32-bit tick of the dataplane clock (dp::toTick, 2^20 ns),
  // read against `now` like the flow entry's own times.
  struct Entry {
    uint32_t tick;
    uint16_t moves;
    uint8_t set;  // 0: never sent
    uint8_t reserved;
  };
  static_assert(sizeof(Entry) == 8, "8 bytes a table position");

  // A send older than this (12.4 days) reads as never sent: its tick may
  // have wrapped. A live flow is re-sent at least every third of its idle
  // timeout (at most 6000 s) while it has packets, and expires without, so
  // only a position's earlier occupant can be that old, and for the one now
  // there "never sent" is right.
  static constexpr uint32_t kHorizonTicks = 1u << 30;

  // Bytes mapped for `positions` entries (whole pages).
  static uint64_t bytesFor(uint64_t positions) {
    return (positions * sizeof(Entry) + 4095) & ~uint64_t(4095);
  }

  explicit SentLog(size_t positions) : n_(positions), bytes_(bytesFor(positions)) {
    if (bytes_ == 0) return;
    void* m = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      throw std::runtime_error("fleet sync: mmap(" + std::to_string(bytes_) +
                               ") for the sent log failed: " + std::strerror(errno));
    e_ = static_cast<Entry*>(m);
  }
  ~SentLog() {
    if (e_) munmap(e_, bytes_);
  }
  SentLog(const SentLog&) = delete;
  SentLog& operator=(const SentLog&) = delete;

  size_t positions() const noexcept { return n_; }
  uint64_t reservedBytes() const noexcept { return bytes_; }
  // Bytes of the pages written so far (mincore) among those from the first
  // that starts at or after position `from` to the one holding `to` - 1
  // (default: all).
  uint64_t residentBytes(size_t from = 0, size_t to = SIZE_MAX) const {
    to = std::min(to, n_);
    if (!e_ || from >= to) return 0;
    size_t first = (from * sizeof(Entry) + 4095) / 4096, last = (to * sizeof(Entry) + 4095) / 4096;
    if (first >= last) return 0;
    std::vector<unsigned char> v(last - first);
    if (mincore(reinterpret_cast<uint8_t*>(e_) + first * 4096, (last - first) * 4096, v.data()) != 0)
      return 0;
    uint64_t n = 0;
    for (unsigned char c : v) n += c & 1;
    return n * 4096;
  }

  // The flow at `pos` was sent at now_ns with `moves` moves.
  void mark(int32_t pos, uint64_t now_ns, uint16_t moves) noexcept {
    if (pos < 0 || size_t(pos) >= n_) return;
    e_[pos] = Entry{dp::toTick(now_ns), moves, 1, 0};
  }
  // When the flow at `pos` was last sent (dataplane-clock ns, rounded down to
  // its tick) and its move count then; false when never (or beyond the horizon).
  bool get(int32_t pos, uint64_t now_ns, uint64_t& at_ns, uint16_t& moves) const noexcept {
    if (pos < 0 || size_t(pos) >= n_) return false;
    Entry e = e_[pos];
    if (!e.set) return false;
    uint32_t ago = dp::toTick(now_ns) - e.tick;
    if (ago >= kHorizonTicks) return false;  // older, or "after now": a wrapped tick
    uint64_t now_t = now_ns >> dp::kTickShift;
    at_ns = now_t >= ago ? (now_t - ago) << dp::kTickShift : 0;
    moves = e.moves;
    return true;
  }

 private:
  size_t n_ = 0;
  uint64_t bytes_ = 0;
  Entry* e_ = nullptr;
};

}  // namespace gwlb::ctl
