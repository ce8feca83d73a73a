// A flow's idle timeout as its entry keeps it: whole milliseconds in 23 bits
// (dp::IdleTimeout's ms field). Shared by the entry and the snapshot's groups,
// which keep their timeouts in this form so that a new flow's entry takes
// them as they are. Pure code: no DPDK.
#pragma once

#include <cstdint>

namespace gwlb {

// The largest timeout an entry holds: 2^23 - 1 ms, about 2.3 hours.
inline constexpr uint32_t kIdleMsMax = (1u << 23) - 1;

// `ns` rounded up to whole ms, at most kIdleMsMax, and 0 only for 0.
constexpr uint32_t idleTimeoutMs(uint64_t ns) noexcept {
  // (ns + 999'999) / 1'000'000 would wrap for ns near 2^64.
  const uint64_t v = ns / 1'000'000 + (ns % 1'000'000 != 0);
  return uint32_t(v > kIdleMsMax ? kIdleMsMax : v == 0 && ns ? 1 : v);
}

}  // namespace gwlb
