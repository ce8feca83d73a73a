// Per-worker counters and drop reasons, generated from counters.def.
// Each worker owns one WorkerCounters (single writer, plain increments);
// readers sum across workers and never reset a worker's counters.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gwlb {

enum class Counter : uint16_t {
#define GWLB_COUNTER(n, h) n,
#define GWLB_DROP(n, h) drop_##n,
#include "common/counters.def"
#undef GWLB_COUNTER
#undef GWLB_DROP
  kCount
};

inline constexpr size_t kNumCounters = size_t(Counter::kCount);

struct CounterInfo {
  const char* name;  // e.g. "rx_packets" or "drop_truncated_l3"
  const char* help;
  bool is_drop;
};

inline constexpr std::array<CounterInfo, kNumCounters> kCounterInfo = {{
#define GWLB_COUNTER(n, h) {#n, h, false},
#define GWLB_DROP(n, h) {"drop_" #n, h, true},
#include "common/counters.def"
#undef GWLB_COUNTER
#undef GWLB_DROP
}};

// One worker writes, any thread reads: relaxed atomic accesses (plain moves
// on x86-64), so a reader never races the writer.
struct alignas(64) WorkerCounters {
  std::array<uint64_t, kNumCounters> v{};
  void inc(Counter c, uint64_t n = 1) noexcept {
    std::atomic_ref<uint64_t> a(v[size_t(c)]);
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get(Counter c) const noexcept {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(v[size_t(c)])).load(std::memory_order_relaxed);
  }
};

// Sum of several workers' counters (a reader's view).
inline WorkerCounters sumCounters(const WorkerCounters* w, size_t n) {
  WorkerCounters s;
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < kNumCounters; ++k) s.v[k] += w[i].v[k];
  return s;
}

}  // namespace gwlb
