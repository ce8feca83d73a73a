// Clocks and randomness of fleet sync's network side (fleet_sync_net.cc,
// fleet_warm_server.cc, fleet_sync_warm.cc; fleet_sync_status.cc reads the
// time): message times are Unix milliseconds (the peers compare them with
// theirs), epochs and nonces are random. Any thread.
#pragma once

#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <random>

namespace gwlb::ctl::fleet_clock {

inline uint64_t unixMs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}
inline double unixS() { return double(unixMs()) / 1000.0; }

inline uint64_t random64() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

// The calling thread's CPU time in ns (user and system): what a warm start's
// phases cost the control thread, whatever else the machine runs.
inline uint64_t threadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return uint64_t(t.tv_sec) * 1'000'000'000ULL + uint64_t(t.tv_nsec);
}
// The calling thread's user and system CPU time so far, in ns.
struct ThreadCpu {
  uint64_t user_ns = 0, sys_ns = 0;
};
inline ThreadCpu threadCpu() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  auto ns = [](const timeval& v) { return uint64_t(v.tv_sec) * 1'000'000'000ULL + uint64_t(v.tv_usec) * 1000; };
  return {ns(u.ru_utime), ns(u.ru_stime)};
}

}  // namespace gwlb::ctl::fleet_clock
