// Compiles a validated Config (plus what the control thread has learned, such as
// neighbour MACs) into the immutable dataplane Snapshot. Control thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "control/config.h"
#include "dataplane/snapshot.h"

namespace gwlb::ctl {

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

// Appliances (IPv4, host order) whose health takes them out of service for new
// flows. An appliance not listed is in service.
using OutOfService = std::map<uint32_t, bool>;

// Throws std::invalid_argument only for a Config that validateConfig() rejects.
// New flows go to appliances with weight > 0 that are in service; when none is,
// the group's when_all_unhealthy decides: fail_open uses every appliance with
// weight > 0, drop leaves the group without one (drop_no_healthy_server).
std::unique_ptr<dp::Snapshot> buildSnapshot(const Config& cfg, ServerRegistry& reg,
                                            const NeighbourTable& neigh, uint64_t generation,
                                            const OutOfService& out = {});

}  // namespace gwlb::ctl
