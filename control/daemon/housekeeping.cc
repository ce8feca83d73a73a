// gwlbd's periodic housekeeping on the control thread: the workers' counters
// summed, the packet rates sampled every second, the stats line (every 10 s,
// SIGUSR1, at exit), and systemd's watchdog feed and status line.
#include <spdlog/spdlog.h>

#include "control/daemon/daemon.h"

namespace gwlb::ctl {

void Daemon::sampleRates() {
  WorkerCounters t = totals();
  uint64_t now = dp::monotonicNs();
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

void Daemon::feedWatchdog() {
  std::vector<uint64_t> loops;
  for (const auto& r : runs_) loops.push_back(r->heartbeat.loops.load(std::memory_order_relaxed));
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

std::string Daemon::statusLine() const {
  const dp::Snapshot* s = dp_.snapshot.load();
  return "running: " + std::to_string(cfg().dataplane.workers) + " worker(s), " +
         std::to_string(n_ports_) + " port(s), snapshot " + std::to_string(s ? s->generation : 0) +
         ", config " + cfg().source_path;
}

WorkerCounters Daemon::totals() const { return workers_.totals(); }

void Daemon::logStats(const char* why, bool periodic) const {
  WorkerCounters t = totals();
  std::string line;
  for (size_t k = 0; k < kNumCounters; ++k)
    if (t.v[k]) line += std::string(" ") + kCounterInfo[k].name + "=" + std::to_string(t.v[k]);
  // The line every 10 s is routine (debug); SIGUSR1's and the final one
  // were asked for (info).
  spdlog::log(periodic ? spdlog::level::debug : spdlog::level::info, "{}: flows={}{}", why,
              flows_->count(), line.empty() ? " (no packets)" : line);
}

}  // namespace gwlb::ctl
