#include "control/snapshot_builder.h"

#include <algorithm>
#include <stdexcept>

#include "common/maglev.h"

static_assert(gwlb::ctl::kMaxServersTotal == gwlb::dp::kMaxServerIds);

namespace gwlb::ctl {

uint16_t ServerRegistry::idFor(uint32_t ip) {
  auto it = ids_.find(ip);
  if (it != ids_.end()) return it->second;
  if (ids_.size() >= dp::kMaxServerIds)
    throw std::length_error("more than " + std::to_string(dp::kMaxServerIds) +
                            " distinct appliance addresses since start");
  uint16_t id = uint16_t(ids_.size());
  ids_.emplace(ip, id);
  return id;
}

std::unique_ptr<dp::Snapshot> buildSnapshot(const Config& cfg, ServerRegistry& reg,
                                            const NeighbourTable& neigh, uint64_t generation,
                                            const OutOfService& out) {
  std::vector<ConfigError> errors;
  if (!validateConfig(cfg, errors)) throw std::invalid_argument(formatErrors(errors));

  auto s = std::make_unique<dp::Snapshot>();
  s->generation = generation;
  s->underlay_ip = cfg.node.underlay_ip.v4HostOrder();
  s->underlay_mac = cfg.node.underlay_mac;
  s->underlay_port = cfg.node.underlay_port;
  s->underlay_mtu = cfg.node.underlay_mtu;
  s->icmp_rate_per_s = cfg.node.icmp_rate_per_s;
  s->default_group = 0;

  for (size_t gi = 0; gi < cfg.server_groups.size(); ++gi) {
    const ServerGroupConfig& gc = cfg.server_groups[gi];
    dp::GroupView g;
    g.stickiness = StickinessMode(uint8_t(gc.stickiness));
    g.aws = gc.geneve.format == GeneveFormat::kAws;
    g.vni = gc.geneve.vni;
    g.endpoint_id = gc.geneve.endpoint_id;
    g.attachment_id = gc.geneve.attachment_id;
    g.tcp_idle_ns = uint64_t(gc.tcp_idle_timeout_s) * 1'000'000'000ULL;
    g.other_idle_ns = uint64_t(gc.other_idle_timeout_s) * 1'000'000'000ULL;

    std::vector<MaglevBackend> backends;
    std::vector<uint16_t> ids;
    for (const ServerConfig& sc : gc.servers) {
      uint32_t ip = sc.address.v4HostOrder();
      uint16_t id = reg.idFor(ip);
      if (s->servers.size() <= id) s->servers.resize(size_t(id) + 1);
      dp::ServerView& v = s->servers[id];
      v.ip = ip;
      v.group = uint8_t(gi);
      v.weight = sc.weight;
      v.in_use = true;
      if (sc.mac) {
        v.mac = *sc.mac;
        v.mac_known = true;
      } else if (cfg.node.gateway_mac) {
        v.mac = *cfg.node.gateway_mac;
        v.mac_known = true;
      } else if (auto it = neigh.find(ip); it != neigh.end()) {
        v.mac = it->second;
        v.mac_known = true;
      }
      auto o = out.find(ip);
      bool in_service = o == out.end() || !o->second;
      backends.push_back({sc.address.str(), in_service ? sc.weight : 0});
      ids.push_back(id);
    }
    bool any = std::any_of(backends.begin(), backends.end(),
                           [](const MaglevBackend& b) { return b.weight > 0; });
    if (!any && gc.when_all_unhealthy == WhenAllUnhealthy::kFailOpen)
      for (size_t i = 0; i < backends.size(); ++i) backends[i].weight = gc.servers[i].weight;
    std::vector<uint16_t> table = buildMaglevTable(backends, gc.maglev_table_size);
    g.maglev.resize(table.size());
    for (size_t i = 0; i < table.size(); ++i)
      g.maglev[i] = table[i] == kMaglevNoBackend ? dp::kNoServer : ids[table[i]];
    s->groups.push_back(std::move(g));
  }
  // Servers the registry knows from earlier configs stay as ids, not in use:
  // flows that still name them (removed appliances) show their address.
  if (s->servers.size() < reg.size()) s->servers.resize(reg.size());
  std::vector<uint32_t> addrs = reg.addresses();
  for (size_t id = 0; id < s->servers.size(); ++id)
    if (!s->servers[id].in_use) s->servers[id].ip = addrs[id];
  for (size_t id = 0; id < s->servers.size(); ++id)
    if (s->servers[id].in_use) s->by_ip.emplace_back(s->servers[id].ip, uint16_t(id));
  std::sort(s->by_ip.begin(), s->by_ip.end());
  return s;
}

}  // namespace gwlb::ctl
