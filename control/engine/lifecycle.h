// What becomes of appliances that leave their group (docs/product-rules.md section 2):
// removal by config (reload, `gwlbctl server remove`) or an operator drain
// (`gwlbctl server drain`). Remembers a leaving appliance while flows may
// still use it, runs its drain timer, and tells the snapshot builder its phase.
//
// The six-row table, as gwlbd applies it (the dataplane applies `move` lazily,
// on each flow's next packet):
//   failed health checks, rebalance      -> move now (builder: ApplianceSlot::move)
//   failed health checks, no_rebalance   -> stay
//   removed, draining, rebalance         -> stay until the drain timeout, then move
//   removed, draining, no_rebalance      -> stay (never cut or moved)
//   removed, no draining, rebalance      -> move now
//   removed, no draining, no_rebalance   -> stay (never cut or moved)
// A leaving appliance is forgotten (phase kGone) once no flow is left on it.
//
// Pure: the caller passes the time (monotonic ns, or capture time in replay)
// and the flow counts. Control thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/snapshot.h"
#include "control/config/config.h"

namespace gwlb::ctl {

class ApplianceLifecycle {
 public:
  // An appliance that is draining, drained, or removed with flows left on it.
  struct Entry {
    uint32_t ip = 0;                 // host order
    ApplianceConfig appliance;             // as last configured (address, weight, mac)
    std::string group;               // the group it was in
    // That group as it was when the appliance left (servers omitted), and the
    // listener it served then ("" for none): a removed appliance keeps its
    // encapsulation (format, VNI, IDs) and its flows' keys while flows are
    // left on it, even when a reload deleted or changed the group.
    ApplianceGroupConfig group_config;
    std::string listener;
    bool removed = false;            // gone from the config (else: operator drain)
    bool rebalance = false;          // its group's failover_mode when it left
    bool draining_enabled = false;   // its group's connection_draining.enabled
    dp::AppliancePhase phase = dp::AppliancePhase::kDraining;
    dp::MoveReason move_reason = dp::MoveReason::kNone;  // what its remaining flows do
    uint64_t since_ns = 0;           // when it left
    uint64_t deadline_ns = 0;        // drain deadline (kDraining only)
    uint32_t flows = 0;              // flows on it at the last count
    bool counted = false;            // `flows` comes from a count taken after it left
    std::string why;                 // e.g. "removed by reload", "drained by operator"
  };

  struct Stats {
    uint64_t drains_started = 0;     // removals and operator drains with draining on
    uint64_t drains_emptied = 0;     // drains that ended because their last flow ended
    uint64_t drains_timed_out = 0;   // drains that ended at their timeout with flows left
    uint64_t flows_drained = 0;      // flows that ended (idle) on a draining appliance
    uint64_t flows_drain_timed_out = 0;  // flows still on an appliance when its drain timed out
    uint64_t removals = 0;           // appliances that left the config
    uint64_t forgotten = 0;          // leaving appliances forgotten (no flow left)
    uint64_t flows_swept = 0;        // idle flows the control thread moved off a leaving appliance
  };

  // The config changed from prev to next at now_ns: appliances that left
  // start draining (their group drains) or are drained at once; appliances
  // that came back are active again. `why` names the cause in the status.
  void applyConfig(const Config& prev, const Config& next, uint64_t now_ns,
                   const std::string& why);

  // Operator drain of a configured appliance (timeout_s: the group's when
  // absent). Returns an error text, or "" when the drain started.
  std::string drain(const Config& cfg, uint32_t ip, std::optional<uint32_t> timeout_s,
                    uint64_t now_ns);
  // Ends an operator drain: the appliance takes new flows again. Error or "".
  std::string undrain(uint32_t ip);

  // Records that flows expired (idle) on these server ids (registry addresses
  // by id): counts flows_drained for draining appliances.
  void flowsExpired(const std::vector<uint16_t>& ids, const std::vector<uint32_t>& id_to_ip);

  // Time passed and (optionally) fresh per-server-id flow counts: drains that
  // emptied or timed out end, removed appliances without flows are forgotten.
  // Returns true when any phase changed (the snapshot must be rebuilt).
  bool tick(uint64_t now_ns, const std::vector<uint32_t>* flows_by_id,
            const std::vector<uint32_t>& id_to_ip);

  // The control thread moved n idle flows off leaving appliances
  // (ctl::sweepMoves, control/engine/flow_policy.h).
  void addSwept(uint64_t n) { stats_.flows_swept += n; }

  // Earliest drain deadline, if any drain runs (to arm a timer).
  std::optional<uint64_t> nextDeadline() const;

  const Entry* find(uint32_t ip) const {
    auto it = entries_.find(ip);
    return it == entries_.end() ? nullptr : &it->second;
  }
  const std::map<uint32_t, Entry>& entries() const { return entries_; }
  const Stats& stats() const { return stats_; }

 private:
  void endDrain(Entry& e, uint64_t now_ns);
  std::map<uint32_t, Entry> entries_;
  Stats stats_;
};

}  // namespace gwlb::ctl
