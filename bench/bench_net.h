// The network the pipeline benchmarks share: one server, three appliances in
// one aws-format group, the underlay of the dp tests. Header-only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/health.h"
#include "common/net_types.h"
#include "control/config/config.h"
#include "control/engine/snapshot_builder.h"
#include "tests/dp/packet_builder.h"

namespace gwlb::bench {

inline const IpAddr kBenchServer = IpAddr::v4(0xCB007114);  // 203.0.113.20
// Appliance i: 10.0.0.11 + i.
inline IpAddr benchAppliance(int i) { return IpAddr::v4(0x0A00000Bu + uint32_t(i)); }

// Underlay 192.0.2.1 on `underlay_port` (!= 0), one group "inspection" of
// `appliances` appliances (three by default; VNI 0x123456, fixed endpoint and
// attachment IDs).
inline ctl::Config benchConfig(uint16_t underlay_port, ctl::FailoverMode mode, int appliances = 3) {
  ctl::Config cfg;
  cfg.node.underlay_ip = IpAddr::v4(0xC0000201);
  cfg.node.underlay_mac = *MacAddr::parse("02:00:00:00:00:01");
  cfg.node.gateway_mac = *MacAddr::parse("02:00:00:00:00:fe");
  cfg.node.underlay_port = underlay_port;
  // Port 0 faces the routers and takes in frames to 02:00:00:00:00:a1 (the
  // destination of benchUdpFrame and the benches' own frame templates).
  cfg.node.ports.push_back({0, PortRole::kRouter, MacAddr::parse("02:00:00:00:00:a1")});
  ctl::ApplianceGroupConfig g;
  g.name = "inspection";
  g.geneve.vni = 0x123456;
  g.geneve.endpoint_id = 0x0A0B0C0D01020304ULL;
  g.geneve.attachment_id = 0x1122334455667788ULL;
  g.failover_mode = mode;
  for (int i = 0; i < appliances; ++i) {
    ctl::ApplianceConfig s;
    s.address = benchAppliance(i);
    g.appliances.push_back(s);
  }
  cfg.server_groups.push_back(g);
  return cfg;
}

// Flow i's 64-byte UDP/IPv4 frame from a router: 10.64.x.y (i / 60000) port
// 1024 + i % 60000 to the server's port 53.
inline dptest::Bytes benchUdpFrame(uint32_t i) {
  using namespace dptest;
  L2 l2{*MacAddr::parse("02:00:00:00:00:a1"), *MacAddr::parse("02:00:00:00:0a:0a"), {}};
  IpAddr c = IpAddr::v4(0x0A400000u + i / 60000);
  uint16_t sport = uint16_t(1024 + i % 60000);
  return ether(l2, kEthIpv4, ipv4(c, kBenchServer, 17, udp(c, kBenchServer, sport, 53, pattern(22))));
}

// `n` traffic classes of mixed fields for the benches: rules 0..n-2
// use two fields each out of vlans, prefixes (IPv4 and IPv6), protocols and
// l4_ports (ports and ranges) and match no bench frame (they are tagged or
// from other prefixes or ports); the last rule is the one the bench's flows
// match (10.64.0.0/16, udp, port 53, untagged), so every packet walks the
// whole table: the worst case. All inspect, to listener 0.
inline std::vector<ctl::TrafficClassConfig> benchClasses(uint32_t n) {
  std::vector<ctl::TrafficClassConfig> out;
  for (uint32_t i = 0; i + 1 < n; ++i) {
    ctl::TrafficClassConfig t;
    t.name = "c" + std::to_string(i);
    t.listener = "default";  // benchConfig's implicit listener
    ctl::TrafficClassMatch& m = t.match;
    switch (i % 4) {
      case 0:
        m.vlans = {uint16_t(100 + i % 3900)};
        m.protocols = {17};
        break;
      case 1:
        m.prefixes = {{IpAddr::v4(0x0A000000u | (100 + i / 256 % 100) << 16 | (i % 256) << 8), 24}};
        m.l4_ports = {{uint16_t(2000 + i), uint16_t(2000 + i)}};
        break;
      case 2:
        m.protocols = {6};
        m.l4_ports = {{uint16_t(30000 + i), uint16_t(30005 + i)}};
        break;
      default: {
        std::array<uint8_t, 16> a{0x20, 0x01, 0x0d, 0xb8, uint8_t(i >> 8), uint8_t(i)};
        m.prefixes = {{IpAddr::v6(a.data()), 48}};
        m.vlans = {uint16_t(1 + i % 4000)};
      }
    }
    out.push_back(t);
  }
  if (n) {
    ctl::TrafficClassConfig t;
    t.name = "bench";
    t.listener = "default";
    t.match.prefixes = {{IpAddr::v4(0x0A400000u), 16}};
    t.match.protocols = {17};
    t.match.l4_ports = {{53, 53}};
    t.match.vlans = {0};
    out.push_back(t);
  }
  return out;
}

// Every appliance of benchConfig healthy.
inline ctl::HealthMap benchAllHealthy(int appliances = 3) {
  ctl::HealthMap h;
  for (int i = 0; i < appliances; ++i) h[benchAppliance(i).v4HostOrder()] = HealthState::kHealthy;
  return h;
}

}  // namespace gwlb::bench
