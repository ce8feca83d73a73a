// The workers' clock: the CPU's time-stamp counter read once per burst and
// converted to the control thread's clock (CLOCK_MONOTONIC, ns) with one
// 64x64 multiply, instead of a clock_gettime per burst.
//
// The conversion is anchored at a (TSC, monotonic ns) pair taken together and
// re-anchored once a second (resync), so the workers' times never drift from
// the control thread's by more than the TSC's drift over one second (ppm:
// microseconds). Times handed out never go backwards, across re-anchoring
// included. Pure arithmetic on the values it is given (no DPDK, no clock
// reads): the worker passes rte_rdtsc() and monotonicNs(), tests pass their own.
#pragma once

#include <cstdint>

namespace gwlb::dp {

__extension__ typedef unsigned __int128 TscWide;  // GCC/Clang 128-bit (one MUL on x86-64)

class TscClock {
 public:
  // hz: the TSC's frequency (rte_get_tsc_hz()); tsc and ns: read together.
  void init(uint64_t hz, uint64_t tsc, uint64_t ns) noexcept {
    hz_ = hz;
    // ns per cycle in 24.40 fixed point (hz >= 60 kHz keeps it in 64 bits;
    // the error is 2^-40 ns per cycle: under 0.01 ns a second at 2.5 GHz).
    mult_ = hz ? uint64_t((TscWide(1'000'000'000ULL) << kShift) / hz) : 0;
    anchor(tsc, ns);
    last_ = ns;
  }
  // A new anchor (once a second): keeps the error from accumulating.
  void resync(uint64_t tsc, uint64_t ns) noexcept { anchor(tsc, ns); }
  // The monotonic time at `tsc`, never earlier than a time given before.
  uint64_t toNs(uint64_t tsc) noexcept {
    uint64_t d = tsc - base_tsc_;  // a TSC read before the anchor wraps: clamped below
    uint64_t ns = tsc >= base_tsc_
                      ? base_ns_ + uint64_t((TscWide(d) * mult_) >> kShift)
                      : base_ns_;
    if (ns < last_) ns = last_;
    last_ = ns;
    return ns;
  }
  uint64_t hz() const noexcept { return hz_; }

 private:
  static constexpr int kShift = 40;
  void anchor(uint64_t tsc, uint64_t ns) noexcept {
    base_tsc_ = tsc;
    base_ns_ = ns;
  }
  uint64_t hz_ = 0, mult_ = 0, base_tsc_ = 0, base_ns_ = 0, last_ = 0;
};

}  // namespace gwlb::dp
