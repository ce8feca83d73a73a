// Issue 24 item 7: fleet config drift. The per-section digests of the config
// parts every node must run alike (control/config/config_digest.h): a change in one
// section changes that section's digest only; what differs per node by
// design changes none; and two nodes whose configs differ in one section
// are reported with that section's name by the API's comparison and by
// `gwlbctl fleet`.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "cli/fleet_render.h"
#include "control/config/config_digest.h"

namespace gwlb::ctl {
namespace {

// Node gw-1's file. Node gw-2's is the same with its own node section.
const char* const kNode1 = R"(
node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:01
  gateway_mac: 02:00:00:00:00:fe
)";
const char* const kNode2 = R"(
node:
  underlay_ip: 192.0.2.2
  underlay_mac: 02:00:00:00:00:02
  gateway_mac: 02:00:00:00:00:fd
  underlay_mtu: 9000
)";
const char* const kShared = R"(
server_groups:
  - name: firewalls
    stickiness: 5-tuple
    geneve: { format: aws, vni: 0, endpoint_id: 0x0123456789abcdef, attachment_id: 1 }
    maglev_table_size: 65537
    tcp_idle_timeout: 350s
    other_idle_timeout: 120s
    servers:
      - { address: 192.0.2.10, weight: 100 }
      - { address: 192.0.2.11 }
      - { address: 192.0.2.12, mac: 02:00:00:00:00:12 }
dataplane:
  workers: 1
eal: ["--no-huge", "--no-pci"]
)";

Config parse(const std::string& text) {
  Config c;
  std::vector<ConfigError> errors;
  EXPECT_TRUE(parseConfig(text, c, errors)) << (errors.empty() ? "" : errors[0].path + ": " + errors[0].message);
  return c;
}

const FlowHashKey kKey{0x0011223344556677ULL, 0x8899aabbccddeeffULL};

std::vector<std::string> diff(const Config& a, const Config& b, FlowHashKey kb = kKey) {
  return differingSections(configDigest(a, kKey), configDigest(b, kb));
}

TEST(ConfigDigest, EverySectionHasADigestAndANameOnTheWire) {
  auto d = configDigest(parse(std::string(kNode1) + kShared), kKey);
  ASSERT_EQ(d.size(), size_t(kDigestSections));
  for (uint8_t i = 0; i < kDigestSections; ++i) {
    EXPECT_EQ(d[i].section, i + 1);
    EXPECT_NE(digestSectionName(d[i].section), nullptr);
    EXPECT_NE(d[i].digest, 0u);
  }
  EXPECT_EQ(digestSectionName(0), nullptr);
  EXPECT_EQ(digestSectionName(kDigestSections + 1), nullptr) << "a newer peer's section is not compared";
  EXPECT_STREQ(digestSectionName(9), "classes");
}

TEST(ConfigDigest, WhatDiffersPerNodeByDesignChangesNothing) {
  Config a = parse(std::string(kNode1) + kShared);
  Config b = parse(std::string(kNode2) + kShared);
  b.fleet.configured = true;
  b.fleet.node_name = "gw-2";
  b.fleet.sync_listen = "10.0.0.2:7946";
  b.fleet.peers = {"10.0.0.1:7946"};
  b.dataplane.workers = 4;
  b.log_level = "debug";
  b.server_groups[0].appliances[2].mac.reset();                               // learnt by ARP there
  std::swap(b.server_groups[0].appliances[0], b.server_groups[0].appliances[1]);  // order in the file
  b.server_groups[0].health_check.source = *IpAddr::parse("192.0.2.2");
  EXPECT_EQ(diff(a, b), std::vector<std::string>{});
}

// One change per section: that section and no other differs.
TEST(ConfigDigest, AChangeInOneSectionIsReportedAsThatSection) {
  const Config base = parse(std::string(kNode1) + kShared + R"(
listeners:
  - { name: web, server_groups: [firewalls] }
traffic_classes:
  - { name: tenant-a, match: { vlans: [100, 200], l4_ports: [80, 443] }, listener: web }
  - { name: backups, match: { prefixes: [10.9.0.0/16] }, action: bypass }
)");
  struct Case {
    std::vector<std::string> sections;
    std::function<void(Config&)> change;
  };
  const Case cases[] = {
      {{"groups"}, [](Config& c) { c.server_groups[0].geneve.vni = 7; }},
      {{"groups"}, [](Config& c) { c.server_groups[0].failover_mode = FailoverMode::kRebalance; }},
      // An appliance gone: its weight is gone too.
      {{"appliances", "weights"}, [](Config& c) { c.server_groups[0].appliances.pop_back(); }},
      {{"appliances", "weights"},
       [](Config& c) { c.server_groups[0].appliances[0].address = *IpAddr::parse("192.0.2.99"); }},
      {{"weights"}, [](Config& c) { c.server_groups[0].appliances[1].weight = 50; }},
      {{"listeners"}, [](Config& c) { c.listeners[0].failback_hold_s = 30; }},
      // Appliance bypass: a node that honours other requests bypasses other flows.
      {{"listeners"}, [](Config& c) { c.listeners[0].appliance_bypass.allow = true; }},
      {{"groups"}, [](Config& c) { c.node.geneve_option_class = 0xFF02; }},
      {{"regions"},
       [](Config& c) { c.health_sources.push_back({"fw-src", "firewalls", ""}); }},
      {{"health_checks"},
       [](Config& c) {
         c.server_groups[0].health_check.configured = true;
         c.server_groups[0].health_check.port = 8080;
       }},
      {{"timeouts"}, [](Config& c) { c.server_groups[0].tcp_idle_timeout_s = 600; }},
      {{"hash"}, [](Config& c) { c.server_groups[0].stickiness = Stickiness::kThreeTuple; }},
      {{"hash"}, [](Config& c) { c.server_groups[0].maglev_table_size = 251; }},
      // Issue 27: the classes (a node that classifies otherwise sends flows elsewhere).
      {{"classes"}, [](Config& c) { c.traffic_classes[0].match.vlans.push_back(300); }},
      {{"classes"}, [](Config& c) { std::swap(c.traffic_classes[0], c.traffic_classes[1]); }},
      {{"classes"}, [](Config& c) { c.traffic_classes[1].action = ClassAction::kDrop; }},
      {{"classes"}, [](Config& c) { c.traffic_classes[1].match.prefixes[0].len = 17; }},
      {{"classes"}, [](Config& c) { c.traffic_classes[0].match.l4_ports[1].hi = 444; }},
      {{"classes"}, [](Config& c) { c.traffic_classes.pop_back(); }},
      // The order of a field's values changes nothing.
      {{}, [](Config& c) { std::swap(c.traffic_classes[0].match.vlans[0], c.traffic_classes[0].match.vlans[1]); }},
  };
  for (const Case& k : cases) {
    Config b = base;
    k.change(b);
    EXPECT_EQ(diff(base, b), k.sections) << (k.sections.empty() ? "none" : k.sections[0]);
  }
  EXPECT_EQ(diff(base, base, FlowHashKey{1, 2}), std::vector<std::string>{"hash"})
      << "another flow hash key";
}

// Without `listeners`, an inspect class naming the implicit listener
// (`listener: default`) and one leaving it out send flows to the same
// place: no drift between two nodes written either way. With `listeners`,
// the name is a real listener's and counts.
TEST(ConfigDigest, TheImplicitListenerNamedOrLeftOutIsTheSameClass) {
  auto withClasses = [](const std::string& classes) {
    return parse(std::string(kNode1) + kShared + "traffic_classes:\n" + classes);
  };
  Config named = withClasses("  - { name: web, match: { l4_ports: [80] }, listener: default }\n"
                             "  - { name: rest, action: bypass }\n");
  Config left_out = withClasses("  - { name: web, match: { l4_ports: [80] } }\n"
                                "  - { name: rest, action: bypass }\n");
  EXPECT_EQ(diff(named, left_out), std::vector<std::string>{});
  EXPECT_EQ(configDigest(named, kKey), configDigest(left_out, kKey));
  // Another class still differs.
  Config other = withClasses("  - { name: web, match: { l4_ports: [81] }, listener: default }\n"
                             "  - { name: rest, action: bypass }\n");
  EXPECT_EQ(diff(named, other), std::vector<std::string>{"classes"});
  // With `listeners`, "default" is the name of a configured listener, not
  // the implicit one: it is digested as written.
  Config configured = parse(std::string(kNode1) + kShared +
                            "listeners:\n  - { name: default, server_groups: [firewalls] }\n"
                            "traffic_classes:\n  - { name: c, listener: default }\n");
  Config unnamed = configured;
  unnamed.traffic_classes[0].listener.clear();
  EXPECT_EQ(diff(configured, unnamed), std::vector<std::string>{"classes"});
}

// Two nodes whose files differ in one line (an idle timeout): the API's
// per-peer comparison and `gwlbctl fleet` name that section.
TEST(ConfigDigest, TwoConfigsDifferingInOneSectionAreReportedWithItsName) {
  Config here = parse(std::string(kNode1) + kShared);
  std::string shared2 = kShared;
  shared2.replace(shared2.find("tcp_idle_timeout: 350s"), 22, "tcp_idle_timeout: 900s");
  Config there = parse(std::string(kNode2) + shared2);
  auto mine = configDigest(here, kKey), theirs = configDigest(there, kKey);
  nlohmann::json cmp = configComparison(mine, &theirs);
  EXPECT_EQ(cmp["state"], "differs");
  EXPECT_EQ(cmp["differing_sections"], nlohmann::json::array({"timeouts"}));
  EXPECT_EQ(cmp["digests"]["timeouts"], digestHex(theirs[6].digest));
  nlohmann::json same = configComparison(mine, &mine);
  EXPECT_EQ(same["state"], "same");
  EXPECT_EQ(configComparison(mine, nullptr)["state"], "unknown");

  nlohmann::json fleet = {{"node_name", "gw-1"},
                          {"announce", {{"state", "off"}, {"reason", "no fleet.bird section"}}},
                          {"peers",
                           {{{"address", "10.0.0.2:7946"}, {"reachable", true}, {"config", cmp}},
                            {{"address", "10.0.0.3:7946"}, {"reachable", true}, {"config", same}}}}};
  std::string text = cli::renderFleet(fleet);
  EXPECT_NE(text.find("config drift"), std::string::npos) << text;
  EXPECT_NE(text.find("10.0.0.2:7946  timeouts"), std::string::npos) << text;
  EXPECT_EQ(text.find("10.0.0.3:7946  timeouts"), std::string::npos) << text;
  EXPECT_NE(text.find("differs"), std::string::npos) << text;
  // Nothing differs: no drift table.
  fleet["peers"][0]["config"] = same;
  EXPECT_EQ(cli::renderFleet(fleet).find("config drift"), std::string::npos);
  // Replays of this node's own datagrams show per peer, only when there were any.
  EXPECT_EQ(cli::renderFleet(fleet).find("own datagrams replayed"), std::string::npos);
  fleet["peers"][1]["self_replayed"] = 3;
  text = cli::renderFleet(fleet);
  EXPECT_NE(text.find("this node's own datagrams replayed from a peer's address (dropped):\n"
                      "  10.0.0.3:7946: 3\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace gwlb::ctl
