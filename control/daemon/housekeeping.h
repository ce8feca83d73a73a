// gwlbd's periodic housekeeping on the control thread: the packet rates
// sampled every second (status's rx_pps and tx_pps), the stats line (every
// 10 s, SIGUSR1, at exit), and systemd's watchdog, fed only while every
// worker's loop moves. Control thread only.
#pragma once

#include <cstdint>

#include "control/daemon/sd_notify.h"
#include "control/service/service.h"
#include "dataplane/flow_table.h"

namespace gwlb::ctl {

class Housekeeping {
 public:
  // Each reference must outlive this.
  Housekeeping(WorkerStats workers, const dp::FlowTable& flows, ProcessFacts& facts, SdNotifier& sd)
      : workers_(workers), flows_(flows), facts_(facts), sd_(sd) {}

  // The rates since the last sample into facts (none at the first).
  void sampleRates(uint64_t now);
  // The counters in one line: at info, or at debug for the periodic line.
  void logStats(const char* why, bool periodic = false) const;
  // WATCHDOG=1 when every worker's loop counter moved since the last feed;
  // a stall (and its end) is logged once.
  void feedWatchdog();

 private:
  WorkerStats workers_;
  const dp::FlowTable& flows_;
  ProcessFacts& facts_;
  SdNotifier& sd_;
  uint64_t last_rx_ = 0, last_tx_ = 0, last_sample_ns_ = 0;
  WorkerProgress progress_;
  bool watchdog_stalled_ = false;
};

}  // namespace gwlb::ctl
