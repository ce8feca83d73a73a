// gwlbd's periodic housekeeping on the control thread
// (control/daemon/housekeeping.h): the workers' counters summed, the packet
// rates, the stats line and systemd's watchdog feed.
#include "control/daemon/housekeeping.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gwlb::ctl {

void Housekeeping::sampleRates(uint64_t now) {
  WorkerCounters t = workers_.totals();
  uint64_t rx = t.get(Counter::rx_packets);
  uint64_t tx = t.get(Counter::encapsulated) + t.get(Counter::returned) + t.get(Counter::icmp_sent) +
                t.get(Counter::tcp_resets_sent);
  if (last_sample_ns_) {
    double dt = double(now - last_sample_ns_) / 1e9;
    facts_.rx_pps = double(rx - last_rx_) / dt;
    facts_.tx_pps = double(tx - last_tx_) / dt;
  }
  last_rx_ = rx;
  last_tx_ = tx;
  last_sample_ns_ = now;
}

void Housekeeping::feedWatchdog() {
  std::vector<uint64_t> loops;
  for (const auto& r : workers_.runs) loops.push_back(r->heartbeat.loops.load(std::memory_order_relaxed));
  if (progress_.advanced(loops)) {
    if (watchdog_stalled_) spdlog::warn("systemd watchdog: every worker makes progress again");
    watchdog_stalled_ = false;
    sd_.notify("WATCHDOG=1\n");
    return;
  }
  if (!watchdog_stalled_)
    spdlog::error("systemd watchdog: a worker made no progress in {} ms (loop counters {}): "
                  "not feeding the watchdog",
                  sd_.watchdogUsec() / 2000, nlohmann::json(loops).dump());
  watchdog_stalled_ = true;
}

void Housekeeping::logStats(const char* why, bool periodic) const {
  WorkerCounters t = workers_.totals();
  std::string line;
  for (size_t k = 0; k < kNumCounters; ++k)
    if (t.v[k]) line += std::string(" ") + kCounterInfo[k].name + "=" + std::to_string(t.v[k]);
  // The line every 10 s is routine (debug); SIGUSR1's and the final one
  // were asked for (info).
  spdlog::log(periodic ? spdlog::level::debug : spdlog::level::info, "{}: flows={}{}", why,
              flows_.count(), line.empty() ? " (no packets)" : line);
}

}  // namespace gwlb::ctl
