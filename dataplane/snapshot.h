// The immutable view of configuration and health that workers read. Built on
// the control thread (control/snapshot_builder), published with one pointer swap,
// freed only after every worker has passed an rte_rcu_qsbr quiescent point.
// Workers treat every field as read-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/flow_key.h"
#include "common/net_types.h"

namespace gwlb::dp {

inline constexpr uint16_t kNoServer = 0xFFFF;
// Server ids are below this; it sizes the per-worker per-server counters.
inline constexpr size_t kMaxServerIds = 16384;

// One appliance. `id` is stable for the life of the process (control keeps an
// address -> id registry), so flow entries that name it survive reloads.
struct ServerView {
  uint32_t ip = 0;          // IPv4, host order
  MacAddr mac;              // next hop toward it on the underlay
  bool mac_known = false;
  uint8_t group = 0;
  uint32_t weight = 0;
  bool in_use = false;      // present in the config with this snapshot
};

struct GroupView {
  StickinessMode stickiness = StickinessMode::kFiveTuple;
  bool aws = true;          // aws format (inner L3 + options) or ethernet (inner frame)
  uint32_t vni = 0;
  uint64_t endpoint_id = 0, attachment_id = 0;
  uint64_t tcp_idle_ns = 350'000'000'000ULL;
  uint64_t other_idle_ns = 120'000'000'000ULL;
  std::vector<uint16_t> maglev;  // slot -> server id (kNoServer when none)
};

struct Snapshot {
  uint64_t generation = 0;
  uint32_t underlay_ip = 0;        // host order
  MacAddr underlay_mac;
  uint16_t underlay_port = 0;
  uint32_t underlay_mtu = 1500;
  uint32_t icmp_rate_per_s = 100;
  uint8_t default_group = 0;
  std::vector<GroupView> groups;
  std::vector<ServerView> servers;  // indexed by server id
  // (ip, server id) sorted by ip: appliance lookup on the return path.
  std::vector<std::pair<uint32_t, uint16_t>> by_ip;

  uint16_t serverByIp(uint32_t ip) const noexcept {
    auto it = std::lower_bound(by_ip.begin(), by_ip.end(), std::pair<uint32_t, uint16_t>{ip, 0});
    if (it == by_ip.end() || it->first != ip) return kNoServer;
    return it->second;
  }
};

}  // namespace gwlb::dp
