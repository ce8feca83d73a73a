// Passive detection (docs/product-rules.md "Passive detection"): per appliance,
// the packets the workers sent it and the packets that came back from it
// (their per-server counters, read by the control thread), over a sliding
// window. An appliance in service that was sent at least min_packets and
// returned none in the last window is a black hole - a firewall that denies
// some traffic still returns the rest - and is ejected: unhealthy (no
// returns), as Envoy's outlier detection ejects hosts, but never more than
// max_ejection_percent of a group at once. An ejected appliance stays out for
// at least its ejection time, base_ejection_time x its ejections in a row
// (capped): one whose own checks pass while it swallows traffic would
// otherwise be back, and ejected again, every window. Pure: time and
// counters are passed in. Control thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "control/config/config.h"

namespace gwlb::ctl {

class PassiveDetector {
 public:
  // The counters of one appliance at one time (totals since its id was given).
  struct Sample {
    uint64_t at_ms = 0, sent = 0, returned = 0;
  };
  // What the last window of an appliance holds.
  struct Window {
    uint64_t sent = 0, returned = 0;
    uint64_t span_ms = 0;  // how far back the window reaches (< window: not full yet)
    bool black_hole = false;
  };

  // Feeds the counters of an appliance that receives new flows at now_ms;
  // returns its window as of now (black_hole: full, >= min_packets sent, none
  // returned).
  Window observe(uint32_t ip, const PassiveCheckConfig& p, const Sample& now);
  // It stopped receiving new flows (ejected, unhealthy, removed): its window
  // starts afresh when it is in service again.
  void reset(uint32_t ip) { samples_.erase(ip); }
  // The last window seen of `ip`, if it is watched.
  std::optional<Window> window(uint32_t ip) const;

  // `ip` is ejected at now_ms: its ejections in a row grow by one and the
  // time it stays out is returned, base_ejection_time x that count, at most
  // max(max_ejection_time, base_ejection_time). The count falls by one for
  // each base_ejection_time that passed since its last ejection time ended
  // (as Envoy lowers its multiplier while a host stays in), so an appliance
  // ejected again soon after it came back stays out longer each time.
  uint64_t ejectionTimeMs(uint32_t ip, const PassiveCheckConfig& p, uint64_t now_ms);
  // Its ejections in a row as of its last ejection (0: never ejected).
  uint32_t ejectionsInARow(uint32_t ip) const {
    auto it = ejections_.find(ip);
    return it == ejections_.end() ? 0 : it->second.in_a_row;
  }

  // How many of a group of `n` may be ejected at once: max_ejection_percent
  // of it rounded down, at least one (as Envoy) unless the percent is 0.
  static uint32_t maxEjected(size_t n, uint32_t percent);

 private:
  struct Watch {
    std::deque<Sample> samples;
    Window last;
  };
  std::map<uint32_t, Watch> samples_;
  struct Ejections {
    uint32_t in_a_row = 0;
    uint64_t out_until_ms = 0;  // when its last ejection time ended
  };
  std::map<uint32_t, Ejections> ejections_;  // kept across reset(): the history is the point
};

// "no returns: 412 packets sent, none returned in 2.0 s": the ejection's reason.
std::string noReturnsReason(const PassiveDetector::Window& w);

}  // namespace gwlb::ctl
