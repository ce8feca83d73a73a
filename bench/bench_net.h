// The network the pipeline benchmarks share: one server, three appliances in
// one aws-format group, the underlay of the dp tests. Header-only.
#pragma once

#include <cstdint>

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
  ctl::ServerGroupConfig g;
  g.name = "inspection";
  g.geneve.vni = 0x123456;
  g.geneve.endpoint_id = 0x0A0B0C0D01020304ULL;
  g.geneve.attachment_id = 0x1122334455667788ULL;
  g.failover_mode = mode;
  for (int i = 0; i < appliances; ++i) {
    ctl::ServerConfig s;
    s.address = benchAppliance(i);
    g.servers.push_back(s);
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

// Every appliance of benchConfig healthy.
inline ctl::HealthMap benchAllHealthy(int appliances = 3) {
  ctl::HealthMap h;
  for (int i = 0; i < appliances; ++i) h[benchAppliance(i).v4HostOrder()] = HealthState::kHealthy;
  return h;
}

}  // namespace gwlb::bench
