// The parts of a config that every gateway of a fleet must run alike, each
// as a short digest (docs/fleet.md "Config drift"). Flow sync assumes one
// config on every node: a record names its listener by index and its
// appliance by address, and the nodes must pick alike for the same flow.
// Each node sends its digests to its peers with its health view; a peer
// whose digest of a section differs shows in `gwlbctl fleet` and in
// gwlb_fleet_config_differs with the section's name.
//
// Pure code (the config and OpenSSL's SHA-256). Thread: any.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/flow_key.h"
#include "common/sync_codec.h"
#include "control/config/config.h"

namespace gwlb::ctl {

// The sections compared, by their wire id (1..). What is left out on
// purpose differs per node by design: node.* (addresses, MACs, ports, MTU),
// dataplane, control, metrics, health_endpoint, fleet (node name, listen
// address, peers, BIRD), eal, log_level, appliance MACs, probe source
// addresses and CA file paths.
enum class DigestSection : uint8_t {
  kGroups = 1,        // group names and order, Geneve, failover_mode, when_all_unhealthy, draining on/off
  kAppliances = 2,    // each group's appliance addresses
  kWeights = 3,       // each appliance's weight
  kListeners = 4,     // listeners: groups in order, failback hold, when_all_unhealthy
  kRegions = 5,       // health aggregation policies, health sources, composite health checks
  kHealthChecks = 6,  // each group's probe settings
  kTimeouts = 7,      // idle timeouts, draining timeout
  kHash = 8,          // the flow hash key, stickiness, Maglev table sizes
  kClasses = 9,       // traffic classes in order: name, action, listener, match fields
};
inline constexpr uint8_t kDigestSections = 9;
// "groups", "appliances", ...; nullptr for an id this version does not know.
const char* digestSectionName(uint8_t id);

// The digests of `c`, one per section in id order. `hash_key` is the flow
// hash key in force (node.flow_hash_secret as loaded): only a one-way
// digest of it leaves the node. Never throws but bad_alloc.
std::vector<sync::DigestEntry> configDigest(const Config& c, const FlowHashKey& hash_key);

// The names of the sections whose digests differ between `here` and
// `there`, in id order. A section only one side sends (another gwlbd
// version) is not compared.
std::vector<std::string> differingSections(const std::vector<sync::DigestEntry>& here,
                                           const std::vector<sync::DigestEntry>& there);

// A digest as 16 hex digits.
std::string digestHex(uint64_t d);

// {section name: digest hex} (API fleet_sync `config_digest`).
nlohmann::json digestJson(const std::vector<sync::DigestEntry>& d);

// A peer's config against ours, as API fleet_sync gives it per peer:
// {state: "same" | "differs" | "unknown", differing_sections: [names],
// digests: {name: hex} or null}. `there` null: the peer sent no digests.
nlohmann::json configComparison(const std::vector<sync::DigestEntry>& here,
                                const std::vector<sync::DigestEntry>* there);

}  // namespace gwlb::ctl
