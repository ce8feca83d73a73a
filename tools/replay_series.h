// gwlb-replay's time series (summary.json "timeseries", docs/replay.md): what
// went in, to each appliance and back to the routers, in intervals of capture
// time. Filled by the main lcore as it writes the outputs (each packet at its
// input packet's capture timestamp), so the series sum to the totals.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/net_types.h"

namespace gwlb::replay {

// The interval --interval auto picks for a capture spanning span_ns: the
// smallest 1, 2 or 5 x 10^k ns that gives at most 100 intervals (at least
// 1 ms; 1 s for a capture with a single timestamp).
uint64_t autoInterval(uint64_t span_ns);

class Timeline {
 public:
  // Intervals of interval_ns from start_ns, enough to hold end_ns.
  Timeline(uint64_t start_ns, uint64_t end_ns, uint64_t interval_ns);

  void input(uint64_t ts_ns, uint32_t bytes) { in_.add(bucket(ts_ns), bytes); }
  void returned(uint64_t ts_ns, uint32_t bytes) { ret_.add(bucket(ts_ns), bytes); }
  // A frame sent to an appliance (Ethernet, outer IPv4 or IPv6): counted
  // under its outer destination address.
  void toAppliance(const uint8_t* frame, uint32_t len, uint64_t ts_ns);
  // Makes sure an appliance has a series (all zeros if it never got a packet).
  void known(const IpAddr& address) { series(address.str()); }

  uint64_t interval() const { return interval_; }
  size_t points() const { return n_; }
  // {"interval_s", "points", "t_s", "input", "returned", "appliances", "marks"}.
  nlohmann::json toJson(nlohmann::json marks) const;

 private:
  struct Series {
    std::vector<uint64_t> packets, bytes;
    void add(size_t b, uint32_t len) {
      ++packets[b];
      bytes[b] += len;
    }
    nlohmann::json toJson() const { return {{"packets", packets}, {"bytes", bytes}}; }
  };
  size_t bucket(uint64_t ts_ns) const;
  Series& series(const std::string& address);
  Series fresh() const { return {std::vector<uint64_t>(n_), std::vector<uint64_t>(n_)}; }

  uint64_t start_, interval_;
  size_t n_;
  Series in_, ret_;
  std::map<std::string, Series> apps_;  // by address text
};

}  // namespace gwlb::replay
