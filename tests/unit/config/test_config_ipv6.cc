// IPv6 appliances: an appliance's address family decides its outer family;
// what an IPv6 one needs of the node, and the mixes that cannot work (yet),
// each refused with the key to change.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/net_types.h"
#include "control/config/config.h"

namespace gwlb::ctl {
namespace {

struct Result {
  bool ok = false;
  Config cfg;
  std::vector<ConfigError> errors;
};

Result parse(const std::string& text) {
  Result r;
  r.ok = parseConfig(text, r.cfg, r.errors);
  return r;
}

// Exactly the errors at `paths`, each containing its needle.
::testing::AssertionResult errorsAre(const Result& r,
                                     std::vector<std::pair<std::string, std::string>> want) {
  if (r.ok && !want.empty()) return ::testing::AssertionFailure() << "parse succeeded";
  if (r.errors.size() != want.size())
    return ::testing::AssertionFailure() << "errors:\n" << formatErrors(r.errors);
  for (const auto& [path, needle] : want) {
    bool found = std::any_of(r.errors.begin(), r.errors.end(), [&](const ConfigError& e) {
      return e.path == path && e.message.find(needle) != std::string::npos;
    });
    if (!found)
      return ::testing::AssertionFailure() << "no error at " << path << " with '" << needle
                                           << "'; errors:\n" << formatErrors(r.errors);
  }
  return ::testing::AssertionSuccess();
}

std::string config(const std::string& node_more, const std::string& appliances,
                   const std::string& group_more = "") {
  return "node:\n  underlay_ip: 192.0.2.1\n  underlay_mac: 02:00:00:00:00:01\n" + node_more +
         "server_groups:\n  - name: g\n    servers: [" + appliances + "]\n" + group_more;
}

const std::string kV6Node = "  underlay_ipv6: 2001:db8:f::1\n  gateway_mac: 02:00:00:00:00:fe\n";

TEST(ConfigIpv6, IpvSixAppliancesBesideIpv4OnesLoad) {
  Result r = parse(config(kV6Node, "{ address: 2001:db8:f::a }, { address: 10.0.0.11 }, "
                                   "{ address: '2001:db8:f::b', mac: 02:00:00:00:00:0b }"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  ASSERT_TRUE(r.cfg.node.underlay_ipv6.has_value());
  EXPECT_EQ(r.cfg.node.underlay_ipv6->str(), "2001:db8:f::1");
  EXPECT_TRUE(r.cfg.server_groups[0].appliances[0].address.isV6());
  EXPECT_TRUE(r.cfg.server_groups[0].appliances[1].address.isV4());
  // Each appliance has a key of its own (the registry's, health's, the cookie's).
  EXPECT_NE(applianceKey(r.cfg.server_groups[0].appliances[0].address),
            applianceKey(r.cfg.server_groups[0].appliances[2].address));
  // The dump reads back the same.
  Result again = parse(dumpConfig(r.cfg));
  ASSERT_TRUE(again.ok) << formatErrors(again.errors) << dumpConfig(r.cfg);
  EXPECT_EQ(again.cfg.node.underlay_ipv6, r.cfg.node.underlay_ipv6);
  EXPECT_EQ(again.cfg.server_groups[0].appliances[0].address, r.cfg.server_groups[0].appliances[0].address);
}

TEST(ConfigIpv6, WhatAnIpv6ApplianceNeedsOfTheNode) {
  EXPECT_TRUE(errorsAre(parse(config("  gateway_mac: 02:00:00:00:00:fe\n", "{ address: 2001:db8:f::a }")),
                        {{"server_groups[0].servers[0].address", "set node.underlay_ipv6"}}));
  // No MAC in the config: neighbor discovery finds it, as ARP does for IPv4.
  Result nd = parse(config("  underlay_ipv6: 2001:db8:f::1\n", "{ address: 2001:db8:f::a }"));
  EXPECT_TRUE(nd.ok) << formatErrors(nd.errors);
  EXPECT_TRUE(errorsAre(parse(config(kV6Node, "{ address: 2001:db8:f::1 }")),
                        {{"server_groups[0].servers[0].address", "is node.underlay_ipv6"}}));
}

TEST(ConfigIpv6, AddressesThatCannotBeAnUnderlay) {
  EXPECT_TRUE(errorsAre(parse(config("  underlay_ipv6: 192.0.2.9\n", "{ address: 10.0.0.11 }")),
                        {{"node.underlay_ipv6", "is IPv4"}}));
  EXPECT_TRUE(errorsAre(parse(config("  underlay_ipv6: ff02::1\n", "{ address: 10.0.0.11 }")),
                        {{"node.underlay_ipv6", "multicast"}}));
  EXPECT_TRUE(errorsAre(parse(config(kV6Node, "{ address: '::' }")),
                        {{"server_groups[0].servers[0].address", "'::' is not a usable address"}}));
  EXPECT_TRUE(errorsAre(parse(config(kV6Node, "{ address: '::1' }")),
                        {{"server_groups[0].servers[0].address", "loopback"}}));
  EXPECT_TRUE(errorsAre(parse(config(kV6Node, "{ address: '::ffff:10.0.0.11' }")),
                        {{"server_groups[0].servers[0].address", "IPv4-mapped"}}));
  EXPECT_TRUE(errorsAre(parse(config(kV6Node, "{ address: 2001:db8:f::a }, { address: 2001:db8:f::a }")),
                        {{"server_groups[0].servers[1].address", "listed twice"}}));
}

// An IPv6-only node: node.underlay_ipv6 and no IPv4 underlay address at all,
// every appliance IPv6. Loads, with every path that could need IPv4 (data-path
// probes, forwarding checks, a mirror, a VXLAN group, a fleet over IPv6), and
// dumps back without an underlay_ip line (nothing written as 0.0.0.0).
std::string v6Only(const std::string& appliances, const std::string& group_more = "",
                   const std::string& rest = "") {
  return "node:\n  underlay_ipv6: 2001:db8:f::1\n  underlay_mac: 02:00:00:00:00:01\n"
         "  exception_path: { enabled: true }\n"
         "server_groups:\n  - name: g\n    servers: [" + appliances + "]\n" + group_more + rest;
}

TEST(ConfigIpv6, AnIpv6OnlyNodeNeedsNoIpv4Address) {
  Result r = parse(v6Only("{ address: 2001:db8:f::a }, { address: 2001:db8:f::b }",
                          "    health_check: { port: 80, protocol: http, path: /h, forwarding: true }\n"
                          "  - name: v\n    encapsulation: vxlan\n    servers: [{ address: 2001:db8:f::c }]\n"
                          "    health_check: { enabled: false }\n"
                          "  - name: tools\n    servers: [{ address: 2001:db8:f::d }]\n"
                          "    health_check: { enabled: false }\n",
                          "traffic_classes:\n  - { name: all, action: inspect, mirror: { group: tools } }\n"
                          "fleet: { node_name: gw-1, secret: 00112233445566778899aabbccddeeff, "
                          "sync_listen: '[2001:db8:f::1]:7946', peers: ['[2001:db8:f::2]:7946'] }\n"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_FALSE(r.cfg.node.underlay_ip.has_value());
  EXPECT_EQ(underlayAddresses(r.cfg.node), "2001:db8:f::1");
  DumpOptions with_secrets;
  with_secrets.secrets = true;  // the fleet's inline secret, so that it loads back
  const std::string dump = dumpConfig(r.cfg, with_secrets);
  EXPECT_EQ(dump.find("underlay_ip:"), std::string::npos) << dump;
  EXPECT_EQ(dump.find("0.0.0.0"), std::string::npos) << dump;
  Result again = parse(dump);
  ASSERT_TRUE(again.ok) << formatErrors(again.errors) << dump;
  EXPECT_FALSE(again.cfg.node.underlay_ip.has_value());
  EXPECT_EQ(again.cfg.node.underlay_ipv6, r.cfg.node.underlay_ipv6);
  // Both families: each address in its place.
  Result both = parse(config(kV6Node, "{ address: 2001:db8:f::a }, { address: 10.0.0.11 }"));
  ASSERT_TRUE(both.ok) << formatErrors(both.errors);
  EXPECT_EQ(underlayAddresses(both.cfg.node), "192.0.2.1 and 2001:db8:f::1");
}

// An IPv4 appliance on it is refused at its address, with the key to set; a
// node with neither underlay address is refused at node.underlay_ip.
TEST(ConfigIpv6, AnIpv4ApplianceNeedsTheIpv4Address) {
  EXPECT_TRUE(errorsAre(parse(v6Only("{ address: 2001:db8:f::a }, { address: 10.0.0.11 }")),
                        {{"server_groups[0].servers[1].address",
                          "'10.0.0.11' is IPv4: set node.underlay_ip, this node's IPv4 underlay address"}}));
  EXPECT_TRUE(errorsAre(parse(v6Only("{ address: 2001:db8:f::a }",
                                     "  - name: m\n    encapsulation: vxlan\n    servers: [{ address: 10.0.0.12 }]\n"
                                     "    health_check: { enabled: false }\n")),
                        {{"server_groups[1].servers[0].address", "set node.underlay_ip"}}));
  EXPECT_TRUE(errorsAre(parse("node:\n  underlay_mac: 02:00:00:00:00:01\n"
                              "server_groups:\n  - name: g\n    servers: [{ address: 2001:db8:f::a }]\n"),
                        {{"node.underlay_ip", "is required: set this node's IPv4 address on the underlay, or "
                                              "node.underlay_ipv6 for an IPv6-only underlay"},
                         {"server_groups[0].servers[0].address", "is IPv6: set node.underlay_ipv6"}}));
}

// A VXLAN group reaches each appliance in the appliance's family, as a
// Geneve group does: IPv6 and IPv4 appliances load side by side.
TEST(ConfigIpv6, VxlanGroupsTakeAppliancesOfEitherFamily) {
  Result r = parse(config(kV6Node, "{ address: 2001:db8:f::a }, { address: 10.0.0.11 }",
                          "    encapsulation: vxlan\n    health_check: { enabled: false }\n"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_EQ(r.cfg.server_groups[0].encapsulation, Encapsulation::kVxlan);
  EXPECT_TRUE(r.cfg.server_groups[0].appliances[0].address.isV6());
  // What an IPv6 appliance needs of the node is the same in a VXLAN group.
  EXPECT_TRUE(errorsAre(parse(config("  gateway_mac: 02:00:00:00:00:fe\n", "{ address: 2001:db8:f::a }",
                                     "    encapsulation: vxlan\n    health_check: { enabled: false }\n")),
                        {{"server_groups[0].servers[0].address", "set node.underlay_ipv6"}}));
}

// Two appliances whose addresses fold to one key would share health,
// weights and lifecycle: refused, whichever family the other one has.
TEST(ConfigIpv6, AppliancesWhoseKeysCollideAreRefused) {
  // 2001:db8::a:0:b folds to 0x20010db8 ^ 0xa ^ 0xb = 0x20010db9, 32.1.13.185.
  EXPECT_TRUE(errorsAre(parse(config(kV6Node, "{ address: '2001:db8::a:0:b' }, { address: 32.1.13.185 }")),
                        {{"server_groups[0].servers[0].address", "same 32-bit appliance key"}}));
  EXPECT_TRUE(errorsAre(parse(config(kV6Node, "{ address: '2001:db8::1:0:0' }, { address: '2001:db8::0:0:1' }")),
                        {{"server_groups[0].servers[1].address", "server_groups[0].servers[0]"}}));
}

TEST(ConfigIpv6, PathsThatAreIpv4OnlyAreRefused) {
  // TCP and HTTP probes reach IPv6 appliances, on the data path or a management one.
  for (const char* hc : {"    health_check: { port: 80 }\n",
                         "    health_check: { port: 80, protocol: http, path: /h }\n",
                         "    health_check: { port: 80, interface: mgmt0 }\n"}) {
    Result r = parse(config(kV6Node, "{ address: 2001:db8:f::a }, { address: 10.0.0.11 }", hc));
    EXPECT_TRUE(r.ok) << hc << formatErrors(r.errors);
  }
  // Forwarding checks too: the probe leaves in the appliance's outer family.
  EXPECT_TRUE(parse(config(kV6Node, "{ address: 2001:db8:f::a }",
                           "    health_check: { port: 80, forwarding: true }\n")).ok);
  EXPECT_TRUE(parse(config(kV6Node, "{ address: 2001:db8:f::a }",
                           "    health_check: { enabled: false }\n")).ok);
}

// A fleet over IPv6: IPv6 appliances in a fleet (their flows are synced by
// address), flow sync between IPv6 addresses, and the addresses that cannot
// carry it refused with the reason.
TEST(ConfigIpv6, AFleetSyncsOverIpv6) {
  const std::string fleet = "fleet: { node_name: gw-1, secret: 00112233445566778899aabbccddeeff";
  auto with = [&](const std::string& sync) {
    return parse(config(kV6Node, "{ address: 2001:db8:f::a }, { address: 10.0.0.11 }") + fleet + sync + " }\n");
  };
  Result ok = with(", sync_listen: '[2001:db8:f::1]:7946', peers: ['[2001:db8:f::2]:7946', '[2001:db8:f::3]:7946']");
  ASSERT_TRUE(ok.ok) << formatErrors(ok.errors);
  EXPECT_EQ(ok.cfg.fleet.peers[1], "[2001:db8:f::3]:7946");
  // The IPv6 wildcard takes both families (Linux's dual stack); IPv4 to IPv4.
  EXPECT_TRUE(with(", sync_listen: '[::]:7946', peers: ['[2001:db8:f::2]:7946', '10.0.0.3:7946']").ok);
  EXPECT_TRUE(with(", sync_listen: '10.0.0.1:7946', peers: ['10.0.0.2:7946']").ok);
  // Records leave from the sync_listen socket: it must reach every peer's family.
  EXPECT_TRUE(errorsAre(with(", sync_listen: '10.0.0.1:7946', peers: ['[2001:db8:f::2]:7946']"),
                        {{"fleet.peers[0]", "is IPv6 but fleet.sync_listen '10.0.0.1:7946' is IPv4"}}));
  EXPECT_TRUE(errorsAre(with(", sync_listen: '0.0.0.0:7946', peers: ['[2001:db8:f::2]:7946']"),
                        {{"fleet.peers[0]", "or [::]:7946, which takes both families"}}));
  EXPECT_TRUE(errorsAre(with(", sync_listen: '[2001:db8:f::1]:7946', peers: ['10.0.0.2:7946']"),
                        {{"fleet.peers[0]", "is IPv4 but fleet.sync_listen '[2001:db8:f::1]:7946' is an IPv6 address"}}));
  // Addresses no socket can use as written, and peers that are no one node.
  EXPECT_TRUE(errorsAre(with(", sync_listen: '[fe80::1]:7946', peers: ['[fe80::2]:7946']"),
                        {{"fleet.sync_listen", "link-local"}, {"fleet.peers[0]", "link-local"}}));
  EXPECT_TRUE(errorsAre(with(", sync_listen: '[::]:7946', peers: ['[::ffff:10.0.0.2]:7946', '[::]:7947', "
                             "'[ff02::1]:7946', '239.1.1.1:7946', '0.0.0.0:7946']"),
                        {{"fleet.peers[0]", "IPv4-mapped"}, {"fleet.peers[1]", "wildcard"},
                         {"fleet.peers[2]", "multicast"}, {"fleet.peers[3]", "multicast"},
                         {"fleet.peers[4]", "wildcard"}}));
  // The same address in another spelling is still this node's own.
  EXPECT_TRUE(errorsAre(with(", sync_listen: '[2001:db8:f::1]:7946', peers: ['[2001:db8:f:0::1]:7946']"),
                        {{"fleet.peers[0]", "this node's own fleet.sync_listen"}}));
}

}  // namespace
}  // namespace gwlb::ctl
