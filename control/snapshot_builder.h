// Compiles a validated Config (plus what the control thread has learned, such as
// neighbour MACs) into the immutable dataplane Snapshot. Control thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "common/health.h"
#include "control/config.h"
#include "control/lifecycle.h"
#include "dataplane/snapshot.h"

namespace gwlb::ctl {

class RegionTracker;

// Gives every appliance address a server id that never changes while the
// process runs, so flow entries naming an id stay meaningful across reloads.
class ServerRegistry {
 public:
  // Throws std::length_error past 65534 distinct addresses.
  uint16_t idFor(uint32_t ip);
  size_t size() const { return ids_.size(); }
  // Address (host order) of every id, indexed by id.
  std::vector<uint32_t> addresses() const {
    std::vector<uint32_t> v(ids_.size());
    for (auto& [ip, id] : ids_) v[id] = ip;
    return v;
  }
  // Server id of an address, or dp::kNoServer when it never had one.
  uint16_t find(uint32_t ip) const {
    auto it = ids_.find(ip);
    return it == ids_.end() ? dp::kNoServer : it->second;
  }

 private:
  std::map<uint32_t, uint16_t> ids_;
};

// IPv4 (host order) -> MAC learned by ARP.
using NeighbourTable = std::map<uint32_t, MacAddr>;

// Health of checked appliances (IPv4, host order): state, and provisional
// service while initializing (common/health.h). An appliance not listed is
// not checked and counts as in service.
using HealthMap = std::map<uint32_t, ApplianceHealth>;

// Throws std::invalid_argument only for a Config that validateConfig() rejects.
// New flows go to appliances with weight > 0 that are in service (healthy or
// unchecked) and not drained; when none is, the group's when_all_unhealthy
// decides: fail_open uses every undrained appliance with weight > 0, drop
// leaves the group without one (drop_no_healthy_server).
// Existing flows (ServerView::move): an unhealthy appliance in a rebalance
// group sheds its flows when the group has an appliance in service; leaving
// appliances (removed, drained) follow `life`, but keep their flows while the
// group (its listener's active group) has no appliance in service: flows never
// move to an appliance that is not in service. Every other known id is kGone.
// Listeners (`regions`, control/regions.h): each listener's active group takes
// its new flows; a group whose region is unhealthy (acting composites) sheds
// its flows to the active group when its failover_mode is rebalance, the
// active region is healthy and the active group has an appliance in service. Without `regions`: one listener over group 0.
std::unique_ptr<dp::Snapshot> buildSnapshot(const Config& cfg, ServerRegistry& reg,
                                            const NeighbourTable& neigh, uint64_t generation,
                                            const HealthMap& health = {},
                                            const ServerLifecycle* life = nullptr,
                                            const RegionTracker* regions = nullptr);

}  // namespace gwlb::ctl
