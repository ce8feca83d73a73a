// Aggregated health and cross-region failover (docs/product-rules.md section 3).
//
// A health source judges one server group with one policy: healthy when its
// healthy servers are >= min_healthy_percent of its servers AND >=
// min_healthy_count. "Servers" are the group's configured appliances meant to
// carry traffic: weight 0 (unused) and operator-drained ones are left out of
// both counts. Only health state unhealthy counts as not healthy: healthy, no
// health check, and initializing (no verdict yet, so a restart or an added
// appliance never triggers a failover) count as healthy. A group with no
// server left to count is unhealthy.
//
// A composite is healthy when every source is (AND); its state goes to its
// destination, a listener. The region of a listener's server group is healthy
// when every composite of that listener with a source on the group is healthy
// (dry-run composites are computed and shown but never act: a group covered
// only by dry-run composites never fails over); a group no composite covers
// is healthy while it has a healthy appliance. Without configured listeners,
// one implicit listener serves the first group, which is always its region
// (the group's own when_all_unhealthy applies) and whose destination is
// healthy while an appliance is.
//
// A listener sends new flows to its first server group (in order of
// preference) whose region is healthy. Failing over is immediate; failing back
// to a more preferred region waits until it has been healthy for
// failback_hold. With no region healthy, when_all_unhealthy decides: fail_open
// (the preferred group) or drop.
//
// Pure: the caller passes the time. Control thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/config/config.h"
#include "control/engine/lifecycle.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {

class RegionTracker {
 public:
  struct Source {
    std::string name, group, policy;      // policy "" = the defaults
    uint32_t min_percent = 60, min_count = 1;
    uint32_t appliances = 0, healthy = 0;    // counted as the header says
    bool ok = false;
    std::string why;                      // e.g. "2 of 5 healthy: needs 3 (60 %) and 1"
  };
  struct Composite {
    std::string name, destination;
    bool dry_run = false;
    bool healthy = false;
    uint64_t since_ns = 0;                // last change (or first computation)
    uint64_t changes = 0;
    std::vector<Source> sources;
  };
  struct Region {
    std::string group;
    size_t group_index = 0;
    std::vector<std::string> composites;  // covering composites (empty: implicit default policy)
    bool healthy = false;                 // acting composites only
    bool healthy_with_dry_run = false;    // dry-run composites acting too
    uint64_t healthy_since_ns = 0;        // valid while healthy
    Source implicit;                      // the default-policy judgement when uncovered
  };
  struct Listener {
    std::string name;
    bool implicit = false;                // no listeners configured: the first group alone
    uint32_t failback_hold_s = 0;
    WhenAllUnhealthy when_all_unhealthy = WhenAllUnhealthy::kFailOpen;
    std::vector<Region> regions;
    int active = 0;                       // index into regions; -1 = drop new flows
    int would_be_active = 0;              // the same with dry-run composites acting
    bool destination_healthy = true;      // AND of its acting composites (no composite: any region healthy)
    bool destination_healthy_with_dry_run = true;
    uint64_t since_ns = 0;                // last change of `active`
    std::string reason;                   // why `active` is what it is
  };

  // Recomputes everything from the config, per-server health and operator
  // drains at now_ns. Returns true when a listener's active group, a
  // composite's or a destination's health changed; each change is appended to
  // `log` as one line (also dry-run "would fail over" ones).
  bool update(const Config& cfg, const HealthMap& health, const ApplianceLifecycle* life,
              uint64_t now_ns, std::vector<std::string>* log = nullptr);

  // When a failback hold ends (call update() then), if one is pending.
  std::optional<uint64_t> nextHoldDeadline() const;

  const std::vector<Listener>& listeners() const { return listeners_; }
  const std::vector<Composite>& composites() const { return composites_; }
  const Listener* listener(const std::string& name) const;

 private:
  std::vector<Listener> listeners_;
  std::vector<Composite> composites_;
  bool first_ = true;
};

// The judgement of one group by one policy (exposed for tests).
RegionTracker::Source judge(const Config& cfg, size_t group, uint32_t min_percent,
                            uint32_t min_count, const HealthMap& health,
                            const ApplianceLifecycle* life);

}  // namespace gwlb::ctl
