// What the control core does between the health it is given and the snapshot
// it builds (docs/product-rules.md "Flap dampening" and "Slow start"):
//   - flap dampening: every change of a checked appliance into or out of
//     service by its health adds a penalty (control/engine/flap_dampener.h);
//     above `suppress` it is held down (`dampened`): no new flows, its
//     existing flows stay;
//   - slow start: an appliance that comes into service (recovered, released
//     from a hold-down, undrained, weight set, newly added) takes a growing
//     part of its Maglev weight, in steps, until slow_start has passed;
//   - settling after a whole-group outage: when every appliance of a group
//     that sheds flows on failure (rebalance, or send_tcp_reset.on_unhealthy)
//     failed its checks at once and one passes again, those still failing
//     keep their flows for settleNs() more (`settling`): a fault on the
//     gateway's own side ends with its appliances passing again one by one,
//     and the first back must not take the others' flows. A listener of two
//     or more groups (regions) settles alike when all their appliances
//     failed at once: its groups shed no flows by region meanwhile.
// Both depend only on the builds' times and inputs, so gwlb-replay's events
// reproduce them. Pure (no clock, no DPDK); control thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/config/config.h"
#include "control/engine/flap_dampener.h"
#include "control/engine/lifecycle.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {

// What a build applies: appliances held down, and the slow-start step of
// those ramping (k of their group's slowStartSteps(); a missing one has its
// full weight).
struct Shaping {
  std::set<uint32_t> held;
  std::map<uint32_t, uint32_t> ramp;
  std::set<uint32_t> settling;  // failed, but its flows stay (neither moved nor reset)
  std::set<std::string> settling_groups;  // settling (or their listener): shed no flows by region failover
};

// How long a group settles after a whole-group outage, from the first of its
// appliances to pass again: two check intervals and the timeout. Appliances
// that recover together pass their thresholds at most one interval and one
// response apart (each is probed once an interval, at its own offset); the
// second interval is the margin for probes that start late on a busy
// control thread.
uint64_t settleNs(const HealthCheckConfig& hc);

// Steps of a slow start of `s` seconds: one a second, at most 10 (each step
// is a snapshot build, so the rebuilds it causes stay bounded).
uint32_t slowStartSteps(uint32_t slow_start_s);
// The step at `elapsed` ns after coming into service: 1 (of n) until 2/n of
// the time has passed, then k = floor(elapsed x n / S); nullopt once S has
// passed (full weight). The weight in force is weight x k / n.
std::optional<uint32_t> slowStartStep(uint64_t elapsed_ns, uint32_t slow_start_s);
DampeningParams dampeningParams(const DampeningConfig& c);

class ServiceShaper {
 public:
  // The appliances of `cfg` at a build at `now`: `health` is the health
  // input (unlisted: unchecked, in service by health). Lines for the
  // decisions (holds started and ended, slow starts begun) go to `lines`.
  Shaping update(const Config& cfg, const HealthMap& health, const ApplianceLifecycle& life,
                 uint64_t now, std::vector<std::string>* lines = nullptr);
  // When a build would next shape differently: a hold ends or a ramp steps.
  std::optional<uint64_t> nextDue() const;

  const FlapDampener& dampener() const { return dampener_; }
  // Since when `ip` ramps up (slow start), if it does.
  std::optional<uint64_t> rampSince(uint32_t ip) const;
  // Until when the group named `group` (or its listener) settles after a
  // whole-group outage (its failing appliances keep their flows), if it does.
  std::optional<uint64_t> settlingUntil(const std::string& group) const;

 private:
  struct Seen {
    std::optional<bool> up;          // in service by its health (nullopt: no verdict to compare)
    bool in_service = false;         // given new flows at the last build
    std::optional<uint64_t> ramp_since;
    bool held = false;
  };
  std::map<uint32_t, Seen> seen_;
  struct SettleSeen {
    bool all_down = false;                 // every counted appliance failed at the last build
    std::optional<uint64_t> settle_until;  // settling after such an outage
  };
  std::map<std::string, SettleSeen> groups_;     // by group name
  std::map<std::string, SettleSeen> listeners_;  // by listener name (two or more groups)
  std::map<std::string, std::string> group_listener_;  // group -> its listener, while that settles
  struct GroupCount {
    size_t counted = 0;
    const std::vector<uint32_t>* failing = nullptr;
    uint64_t settle_ns = 0;
    bool sheds = false;  // rebalance or resets on unhealthy, with checks
  };
  template <class Due, class Say>
  bool settleStep(const char* kind, const std::string& name, bool sheds, size_t counted, size_t failing,
                  uint64_t settle_ns, uint64_t now, SettleSeen& gs, Due& due, Say& say);
  template <class Due, class Say>
  void settleListeners(const Config& cfg, const std::map<std::string, GroupCount>& counts, uint64_t now,
                       Shaping& out, Due& due, Say& say);
  FlapDampener dampener_;
  bool started_ = false;  // the first build sets what is seen, without ramps
  std::optional<uint64_t> next_due_;
};

}  // namespace gwlb::ctl
