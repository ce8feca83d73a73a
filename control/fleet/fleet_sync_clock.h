// Clocks and randomness of fleet sync's network side (fleet_sync_net.cc,
// fleet_warm_server.cc, fleet_sync_warm.cc; fleet_sync_status.cc reads the
// time): message times are Unix milliseconds (the peers compare them with
// theirs), epochs and nonces are random. Any thread.
#pragma once

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

}  // namespace gwlb::ctl::fleet_clock
