// Compiles a validated Config (plus what the control thread has learned, such as
// neighbour MACs) into the immutable dataplane Snapshot. Control thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "common/health.h"
#include "common/snapshot.h"
#include "control/config/config.h"
#include "control/config/valid_config.h"
#include "control/engine/lifecycle.h"

namespace gwlb::ctl {

class RegionTracker;
class MaglevCache;
struct Shaping;

// Gives every appliance address a server id (below dp::kMaxApplianceIds) that
// does not change while the address is in use: configured, or leaving with
// flows still on it (ApplianceLifecycle), so flow entries naming an id stay
// meaningful across reloads. An id whose address is neither is given back in
// two steps, so that no flow can still name it when another address gets it:
//   release(): the snapshot builder marks every id its snapshot shows as gone
//     (not routable) with that snapshot's generation; the address keeps the
//     id meanwhile (configured again, it gets the same one back);
//   reclaim(): once every snapshot older than that generation is freed (no
//     worker can still pick the id for a new flow) and a flow count taken
//     after that finds no flow (nor fragment entry) on it, the id is free.
// Free ids are handed out lowest first. Control thread only.
// Concurrency rule R8 (docs/architecture.md "Flow entries: concurrency rules"):
// an id outlives every flow entry (and snapshot) that names it.
class ApplianceRegistry {
 public:
  // The id of `ip`: its own, else a free one. Throws std::length_error when
  // all dp::kMaxApplianceIds ids are held; callers check missing() <= available()
  // first, so that a change is refused before anything is applied.
  uint16_t idFor(uint32_t ip);
  // One past the highest id ever given (the length of a snapshot's server list).
  size_t size() const { return addr_.size(); }
  // Address (host order) of every id below size(), indexed by id; 0 for a free id.
  const std::vector<uint32_t>& addresses() const { return addr_; }
  // Server id of an address, or dp::kNoAppliance when it has none.
  uint16_t find(uint32_t ip) const {
    auto it = ids_.find(ip);
    return it == ids_.end() ? dp::kNoAppliance : it->second;
  }

  // Ids held (by configured, leaving or released addresses), and ids that
  // can be given now.
  size_t held() const { return ids_.size(); }
  size_t available() const { return dp::kMaxApplianceIds - ids_.size(); }
  // Addresses of `cfg` that have no id yet (each needs one of available()).
  size_t missing(const Config& cfg) const;

  // Marks every id that `s` shows as not routable (its address neither
  // configured nor leaving) as released at s.generation; ids routable in `s`
  // are in use again. Called with every snapshot built.
  void release(const dp::Snapshot& s);
  size_t released() const { return released_.size(); }
  // True when some released id waits only for a flow count: its generation
  // is at most `oldest_live_generation` (the oldest snapshot not yet freed).
  bool reclaimable(uint64_t oldest_live_generation) const;
  // Frees the released ids of reclaimable() that no entry names in
  // `entries_by_id` (flows and fragment entries by server id, counted after
  // the snapshots older than their release were freed). Returns them.
  std::vector<uint16_t> reclaim(uint64_t oldest_live_generation,
                                const std::vector<uint32_t>& entries_by_id);
  // Ids given back to the free list since start.
  uint64_t reclaimed_total() const { return reclaimed_total_; }

 private:
  std::map<uint32_t, uint16_t> ids_;        // address -> id, every held id
  std::vector<uint32_t> addr_;              // id -> address (0: free)
  std::set<uint16_t> free_;                 // ids below size() not held
  std::map<uint16_t, uint64_t> released_;   // id -> generation of its release
  uint64_t reclaimed_total_ = 0;
};

// An appliance's key (applianceKey(): its IPv4 address in host order, or the
// key of its IPv6 address) -> its MAC on the underlay, as ARP or neighbor
// discovery learned it (control/daemon/neighbours.h). Not the workers' L2 table
// of the L2 neighbours flows came from (dp::NeighbourTable).
using ApplianceMacs = std::map<uint32_t, MacAddr>;

// Health of checked appliances (by applianceKey()): state, and provisional
// service while initializing (common/health.h). An appliance not listed is
// not checked and counts as in service.
using HealthMap = std::map<uint32_t, ApplianceHealth>;

// The dataplane's ports as the process found them, indexed by DPDK port id:
// each device's own MAC (zero when the device has none to give).
using PortMacs = std::vector<MacAddr>;

// Every port's MAC and role (dp::PortView): node.ports[] where listed; else
// the underlay port has node.underlay_mac and role appliance (both when it is
// the only port), and every other port its device's MAC (node.underlay_mac
// when unknown) and role router. `devices` null: no devices (gwlb-replay,
// tests); the ports are 0 .. the highest id the config names.
std::vector<dp::PortView> resolvePorts(const Config& cfg, const PortMacs* devices);

// Throws std::invalid_argument only for a Config that validateConfig() rejects
// (the first form validates it; the second, the engine's, takes it as valid:
// a snapshot is built at every health change, and validating a large config
// costs tens of milliseconds).
// New flows go to appliances with weight > 0 that are in service (healthy or
// unchecked) and not drained; when none is, the group's when_all_unhealthy
// decides: fail_open uses every undrained appliance with weight > 0, drop
// leaves the group without one (drop_no_healthy_server).
// Existing flows (ApplianceSlot::move): an unhealthy appliance in a rebalance
// group sheds its flows when the group has an appliance in service; leaving
// appliances (removed, drained) follow `life`, but keep their flows while the
// group (its listener's active group) has no appliance in service: flows never
// move to an appliance that is not in service. Every other known id is kGone.
// Ports: resolvePorts(cfg, devices).
// Listeners (`regions`, control/engine/region_failover.h): each listener's active group takes
// its new flows; a group whose region is unhealthy (acting composites) sheds
// its flows to the active group when its failover_mode is rebalance, the
// active region is healthy and the active group has an appliance in service. Without `regions`: one listener over group 0.
// Maglev tables come from `maglev` when given (control/engine/maglev_cache.h: the
// same table for the same appliances, weights in force and ids), else are
// built each time.
// `shaping` (control/engine/service_shaper.h): appliances held down take no
// new flows (their existing flows stay, unless their health alone moves
// them); a group with an appliance in slow start builds its table with
// weights x n for the others and weight x k for the one at step k of n;
// failed appliances of a group settling after a whole-group outage keep
// their flows (no move, no reset) until it has settled.
std::unique_ptr<dp::Snapshot> buildSnapshot(const Config& cfg, ApplianceRegistry& reg,
                                            const ApplianceMacs& neigh, uint64_t generation,
                                            const HealthMap& health = {},
                                            const ApplianceLifecycle* life = nullptr,
                                            const RegionTracker* regions = nullptr,
                                            const PortMacs* devices = nullptr,
                                            MaglevCache* maglev = nullptr,
                                            const Shaping* shaping = nullptr);
std::unique_ptr<dp::Snapshot> buildSnapshot(const ValidConfig& cfg, ApplianceRegistry& reg,
                                            const ApplianceMacs& neigh, uint64_t generation,
                                            const HealthMap& health = {},
                                            const ApplianceLifecycle* life = nullptr,
                                            const RegionTracker* regions = nullptr,
                                            const PortMacs* devices = nullptr,
                                            MaglevCache* maglev = nullptr,
                                            const Shaping* shaping = nullptr);

// Builds whose traffic classes reused the last build's compiled table (rules
// unchanged) and builds that compiled them, since the process started.
struct ClassCacheStats {
  uint64_t hits = 0, misses = 0;
};
ClassCacheStats classCacheStats();
// Benches: false compiles the classes at every build (the cache's baseline).
void setClassCache(bool on);

// A traffic class's match fields and action as the workers' ClassTable takes
// them (buildSnapshot compiles these; explain's tests compare against them).
// The listener is left 0: buildSnapshot resolves the name to its index.
ClassRule classRule(const TrafficClassConfig& tc);
// Every class of `cfg` as classRule() gives it, in order: what buildSnapshot
// compiles (the key of the cache below).
std::vector<ClassRule> classRules(const std::vector<TrafficClassConfig>& classes);
std::vector<ClassRule> classRules(const Config& cfg);
// Whether two class lists compile to the same table (match fields and
// actions equal; names and listeners aside), compared in place.
bool sameClassRules(const std::vector<TrafficClassConfig>& a, const std::vector<TrafficClassConfig>& b);
// The compiled table of `rules`: the last build's when its rules were the
// same, else compiled now (and kept for the next build). Any thread. The
// second form compares `classes` with the cached rules in place and takes
// their rules only to compile.
ClassTable compiledClasses(const std::vector<ClassRule>& rules);
ClassTable compiledClasses(const std::vector<TrafficClassConfig>& classes);
// Makes `table` (compiled from `rules` elsewhere, e.g. on the class compiler's
// thread) the one the next build with those rules takes.
void primeClassCache(std::vector<ClassRule> rules, ClassTable table);
// A class set compiled apart (a reload's, off the control thread): its rules
// (classRules) and their table.
struct CompiledClasses {
  std::vector<ClassRule> rules;
  ClassTable table;
};

}  // namespace gwlb::ctl
