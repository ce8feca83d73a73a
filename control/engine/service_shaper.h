// What the control core does between the health it is given and the snapshot
// it builds (docs/product-rules.md "Flap dampening" and "Slow start"):
//   - flap dampening: every change of a checked appliance into or out of
//     service by its health adds a penalty (control/engine/flap_dampener.h);
//     above `suppress` it is held down (`dampened`): no new flows, its
//     existing flows stay;
//   - slow start: an appliance that comes into service (recovered, released
//     from a hold-down, undrained, weight set, newly added) takes a growing
//     part of its Maglev weight, in steps, until slow_start has passed.
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
};

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

 private:
  struct Seen {
    std::optional<bool> up;          // in service by its health (nullopt: no verdict to compare)
    bool in_service = false;         // given new flows at the last build
    std::optional<uint64_t> ramp_since;
    bool held = false;
  };
  std::map<uint32_t, Seen> seen_;
  FlapDampener dampener_;
  bool started_ = false;  // the first build sets what is seen, without ramps
  std::optional<uint64_t> next_due_;
};

}  // namespace gwlb::ctl
