// Unit tests for the configuration loader and validator (control/config/config.cc).
#include "control/config/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace gwlb::ctl {
namespace {

const char* const kSample = R"(
node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:01
  gateway_mac: 02:00:00:00:00:fe     # optional
  underlay_port: 0                   # optional
  underlay_mtu: 1500                 # optional
  icmp_rate_per_s: 100               # optional
server_groups:
  - name: firewalls
    stickiness: 5-tuple               # 5-tuple | 3-tuple | 2-tuple
    geneve: { format: aws, vni: 0, endpoint_id: 0x0123456789abcdef, attachment_id: 1 }   # format: aws | ethernet
    maglev_table_size: 65537          # optional
    tcp_idle_timeout: 350s            # optional; accept integer seconds or "350s", "6m", "1h"
    other_idle_timeout: 120s          # optional
    servers:
      - { address: 192.0.2.10, weight: 100 }
      - { address: 192.0.2.11 }
      - { address: 192.0.2.12, mac: 02:00:00:00:00:12 }
dataplane:                            # optional section: workers, burst, flow_table_size, mbufs, rx_queue_size, tx_queue_size
  workers: 1
eal: ["--no-huge", "--no-pci"]        # optional list of strings -> Config::eal_args
log_level: info                       # optional
)";

const char* const kNode = R"(
node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:01
)";

// A minimal valid config with `group` (YAML lines of one list item, indented
// by four spaces) as the only server group, plus `extra` top-level text.
std::string withGroup(const std::string& group, const std::string& extra = "") {
  return std::string(kNode) + "server_groups:\n  - " + group + "\n" + extra;
}

const char* const kOneAppliance = "name: g\n    servers: [{ address: 192.0.2.10 }]";

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

int countPath(const std::vector<ConfigError>& errs, const std::string& path) {
  return int(std::count_if(errs.begin(), errs.end(),
                           [&](const ConfigError& e) { return e.path == path; }));
}

// Passes if exactly one error has `path` and its message contains every `needle`.
::testing::AssertionResult hasError(const Result& r, const std::string& path,
                                    std::initializer_list<std::string> needles = {}) {
  if (r.ok) return ::testing::AssertionFailure() << "parse succeeded; expected error at " << path;
  int n = countPath(r.errors, path);
  if (n != 1) {
    return ::testing::AssertionFailure()
           << n << " errors at '" << path << "'; errors:\n" << formatErrors(r.errors);
  }
  for (const ConfigError& e : r.errors) {
    if (e.path != path) continue;
    for (const std::string& needle : needles) {
      if (e.message.find(needle) == std::string::npos) {
        return ::testing::AssertionFailure()
               << "message '" << e.message << "' lacks '" << needle << "'";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Passes if the only error is at `path` (and mentions every needle).
::testing::AssertionResult onlyError(const Result& r, const std::string& path,
                                     std::initializer_list<std::string> needles = {}) {
  auto res = hasError(r, path, needles);
  if (!res) return res;
  if (r.errors.size() != 1) {
    return ::testing::AssertionFailure() << "expected one error; got:\n" << formatErrors(r.errors);
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------
// Valid input.

TEST(Config, SampleLoadsWithEveryValue) {
  Result r = parse(kSample);
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_TRUE(r.errors.empty());
  const Config& c = r.cfg;

  EXPECT_EQ(c.node.underlay_ip, *IpAddr::parse("192.0.2.1"));
  EXPECT_TRUE(c.node.underlay_ip->isV4());
  EXPECT_EQ(c.node.underlay_mac, *MacAddr::parse("02:00:00:00:00:01"));
  ASSERT_TRUE(c.node.gateway_mac.has_value());
  EXPECT_EQ(*c.node.gateway_mac, *MacAddr::parse("02:00:00:00:00:fe"));
  EXPECT_EQ(c.node.underlay_port, 0);
  EXPECT_EQ(c.node.underlay_mtu, 1500u);
  EXPECT_EQ(c.node.icmp_rate_per_s, 100u);

  ASSERT_EQ(c.server_groups.size(), 1u);
  const ApplianceGroupConfig& g = c.server_groups[0];
  EXPECT_EQ(g.name, "firewalls");
  EXPECT_EQ(g.stickiness, Stickiness::kFiveTuple);
  EXPECT_EQ(g.geneve.format, GeneveFormat::kAws);
  EXPECT_EQ(g.geneve.vni, 0u);
  EXPECT_EQ(g.geneve.endpoint_id, 0x0123456789abcdefull);
  EXPECT_EQ(g.geneve.attachment_id, 1u);
  EXPECT_EQ(g.maglev_table_size, 65537u);
  EXPECT_EQ(g.tcp_idle_timeout_s, 350u);
  EXPECT_EQ(g.other_idle_timeout_s, 120u);
  ASSERT_EQ(g.appliances.size(), 3u);
  EXPECT_EQ(g.appliances[0].address, *IpAddr::parse("192.0.2.10"));
  EXPECT_EQ(g.appliances[0].weight, 100u);
  EXPECT_FALSE(g.appliances[0].mac.has_value());
  EXPECT_EQ(g.appliances[1].address, *IpAddr::parse("192.0.2.11"));
  EXPECT_EQ(g.appliances[1].weight, 100u);
  EXPECT_FALSE(g.appliances[1].mac.has_value());
  EXPECT_EQ(g.appliances[2].address, *IpAddr::parse("192.0.2.12"));
  ASSERT_TRUE(g.appliances[2].mac.has_value());
  EXPECT_EQ(*g.appliances[2].mac, *MacAddr::parse("02:00:00:00:00:12"));

  EXPECT_EQ(c.dataplane.workers, 1u);
  EXPECT_EQ(c.eal_args, (std::vector<std::string>{"--no-huge", "--no-pci"}));
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.source_path, "");
  EXPECT_TRUE(validateConfig(c, r.errors));
}

TEST(Config, DefaultsWhenOptionalKeysAbsent) {
  Result r = parse(withGroup(kOneAppliance));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  const Config& c = r.cfg;
  const Config d;  // the struct's defaults
  EXPECT_FALSE(c.node.gateway_mac.has_value());
  EXPECT_EQ(c.node.underlay_port, 0);
  EXPECT_EQ(c.node.underlay_mtu, 1500u);
  EXPECT_EQ(c.node.icmp_rate_per_s, 100u);
  ASSERT_EQ(c.server_groups.size(), 1u);
  const ApplianceGroupConfig& g = c.server_groups[0];
  EXPECT_EQ(g.stickiness, Stickiness::kFiveTuple);
  EXPECT_EQ(g.geneve.format, GeneveFormat::kAws);
  EXPECT_EQ(g.geneve.vni, 0u);
  EXPECT_EQ(g.geneve.endpoint_id, 0u);
  EXPECT_EQ(g.geneve.attachment_id, 0u);
  EXPECT_EQ(g.maglev_table_size, 65537u);
  EXPECT_EQ(g.tcp_idle_timeout_s, 350u);
  EXPECT_EQ(g.other_idle_timeout_s, 120u);
  ASSERT_EQ(g.appliances.size(), 1u);
  EXPECT_EQ(g.appliances[0].weight, 100u);
  EXPECT_FALSE(g.appliances[0].mac.has_value());
  EXPECT_EQ(c.dataplane.workers, d.dataplane.workers);
  EXPECT_EQ(c.dataplane.burst, 32u);
  EXPECT_EQ(c.dataplane.flow_table_size, 1u << 20);
  EXPECT_EQ(c.dataplane.mbufs, 16384u);
  EXPECT_EQ(c.dataplane.rx_queue_size, 1024u);
  EXPECT_EQ(c.dataplane.tx_queue_size, 1024u);
  EXPECT_TRUE(c.dataplane.checksum_offload);
  EXPECT_TRUE(c.eal_args.empty());
  EXPECT_EQ(c.log_level, "info");
}

TEST(Config, EmptyOptionalSectionsAreAccepted) {
  Result r = parse(withGroup(kOneAppliance, "dataplane:\neal:\n"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_EQ(r.cfg.dataplane.burst, 32u);
  EXPECT_TRUE(r.cfg.eal_args.empty());
}

TEST(Config, AllValueFormsAndAlternatives) {
  Result r = parse(std::string(kNode) + R"(
  underlay_port: 0x1f
  underlay_mtu: 9216
  icmp_rate_per_s: 0
server_groups:
  - name: A-b_c.1
    stickiness: 3-tuple
    geneve: { format: ethernet, vni: 0xFFFFFF, endpoint_id: 0xffffffffffffffff, attachment_id: 18446744073709551615 }
    maglev_table_size: 251
    tcp_idle_timeout: 1h
    other_idle_timeout: 6m
    servers:
      - { address: 192.0.2.10, weight: 0 }
      - { address: 192.0.2.11, weight: 10000 }
  - name: second
    stickiness: 2-tuple
    tcp_idle_timeout: 60
    other_idle_timeout: "6000"
    servers: [{ address: 192.0.2.20, weight: 0x10 }]
dataplane:
  workers: 64
  burst: 256
  flow_table_size: 134217728
  mbufs: 0x1000000
  rx_queue_size: 64
  tx_queue_size: 16384
  checksum_offload: false
log_level: off
)");
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  const Config& c = r.cfg;
  EXPECT_EQ(c.node.underlay_port, 31);
  EXPECT_EQ(c.node.underlay_mtu, 9216u);
  EXPECT_EQ(c.node.icmp_rate_per_s, 0u);
  ASSERT_EQ(c.server_groups.size(), 2u);
  const ApplianceGroupConfig& a = c.server_groups[0];
  EXPECT_EQ(a.name, "A-b_c.1");
  EXPECT_EQ(a.stickiness, Stickiness::kThreeTuple);
  EXPECT_EQ(a.geneve.format, GeneveFormat::kEthernet);
  EXPECT_EQ(a.geneve.vni, 0xFFFFFFu);
  EXPECT_EQ(a.geneve.endpoint_id, 0xffffffffffffffffull);
  EXPECT_EQ(a.geneve.attachment_id, 0xffffffffffffffffull);
  EXPECT_EQ(a.maglev_table_size, 251u);
  EXPECT_EQ(a.tcp_idle_timeout_s, 3600u);
  EXPECT_EQ(a.other_idle_timeout_s, 360u);
  EXPECT_EQ(a.appliances[0].weight, 0u);
  EXPECT_EQ(a.appliances[1].weight, 10000u);
  const ApplianceGroupConfig& b = c.server_groups[1];
  EXPECT_EQ(b.stickiness, Stickiness::kTwoTuple);
  EXPECT_EQ(b.tcp_idle_timeout_s, 60u);
  EXPECT_EQ(b.other_idle_timeout_s, 6000u);
  EXPECT_EQ(b.appliances[0].weight, 16u);
  EXPECT_EQ(c.dataplane.workers, 64u);
  EXPECT_EQ(c.dataplane.burst, 256u);
  EXPECT_EQ(c.dataplane.flow_table_size, 1u << 27);
  EXPECT_EQ(c.dataplane.mbufs, 1u << 24);
  EXPECT_EQ(c.dataplane.rx_queue_size, 64u);
  EXPECT_EQ(c.dataplane.tx_queue_size, 16384u);
  EXPECT_FALSE(c.dataplane.checksum_offload);
  EXPECT_EQ(c.log_level, "off");
}

TEST(Config, EveryLogLevelAccepted) {
  for (const char* l : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    Result r = parse(withGroup(kOneAppliance, std::string("log_level: ") + l + "\n"));
    EXPECT_TRUE(r.ok) << l << ": " << formatErrors(r.errors);
    EXPECT_EQ(r.cfg.log_level, l);
  }
}

TEST(Config, ToString) {
  EXPECT_STREQ(toString(Stickiness::kFiveTuple), "5-tuple");
  EXPECT_STREQ(toString(Stickiness::kThreeTuple), "3-tuple");
  EXPECT_STREQ(toString(Stickiness::kTwoTuple), "2-tuple");
  EXPECT_STREQ(toString(GeneveFormat::kAws), "aws");
  EXPECT_STREQ(toString(GeneveFormat::kEthernet), "ethernet");
}

TEST(Config, VxlanGroupsTakeAzuresTunnelsByDefault) {
  Result r = parse(withGroup(std::string(kOneAppliance) + "\n    encapsulation: vxlan"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  const ApplianceGroupConfig& g = r.cfg.server_groups[0];
  EXPECT_EQ(g.encapsulation, Encapsulation::kVxlan);
  EXPECT_EQ(g.vxlan.internal.port, 10800);
  EXPECT_EQ(g.vxlan.internal.vni, 800u);
  EXPECT_EQ(g.vxlan.external.port, 10801);
  EXPECT_EQ(g.vxlan.external.vni, 801u);
  EXPECT_STREQ(toString(Encapsulation::kVxlan), "vxlan");
  EXPECT_EQ(parse(withGroup(kOneAppliance)).cfg.server_groups[0].encapsulation, Encapsulation::kGeneve);

  r = parse(withGroup(std::string(kOneAppliance) +
                      "\n    encapsulation: vxlan\n    vxlan:\n      internal: { port: 2000, vni: 900 }\n"
                      "      external: { port: 2001, vni: 0xFFFFFF }"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_EQ(r.cfg.server_groups[0].vxlan.internal.port, 2000);
  EXPECT_EQ(r.cfg.server_groups[0].vxlan.external.vni, 0xFFFFFFu);
}

TEST(Config, VxlanTunnelsNeedTwoPortsOfTheirOwn) {
  const std::string g = std::string(kOneAppliance) + "\n    encapsulation: vxlan\n    vxlan:\n";
  EXPECT_TRUE(hasError(parse(withGroup(g + "      internal: { port: 10801 }")),
                       "server_groups[0].vxlan.external.port", {"also vxlan.internal.port"}));
  EXPECT_TRUE(hasError(parse(withGroup(g + "      external: { port: 6081 }")),
                       "server_groups[0].vxlan.external.port", {"Geneve's port"}));
  EXPECT_TRUE(hasError(parse(withGroup(g + "      external: { port: 0 }")),
                       "server_groups[0].vxlan.external.port", {}));
  EXPECT_TRUE(hasError(parse(withGroup(g + "      internal: { vni: 0x1000000 }")),
                       "server_groups[0].vxlan.internal.vni", {}));
  EXPECT_TRUE(hasError(parse(withGroup(std::string(kOneAppliance) + "\n    encapsulation: gre")),
                       "server_groups[0].encapsulation", {"not an encapsulation"}));
  // A Geneve group may keep a vxlan map it does not use.
  EXPECT_TRUE(parse(withGroup(std::string(kOneAppliance) + "\n    vxlan:\n      external: { port: 6081 }")).ok);
}

TEST(Config, ParseResetsOutput) {
  Result r = parse(kSample);
  ASSERT_TRUE(r.ok);
  std::vector<ConfigError> errs;
  ASSERT_TRUE(parseConfig(withGroup(kOneAppliance), r.cfg, errs)) << formatErrors(errs);
  EXPECT_FALSE(r.cfg.node.gateway_mac.has_value());
  EXPECT_TRUE(r.cfg.eal_args.empty());
  EXPECT_EQ(r.cfg.server_groups[0].appliances.size(), 1u);
}

// ---------------------------------------------------------------------------
// Document-level errors.

TEST(ConfigErrors, YamlSyntaxErrorDoesNotThrow) {
  Result r;
  EXPECT_NO_THROW(r = parse("node:\n  underlay_ip: [192.0.2.1\nserver_groups: []\n"));
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(r.errors.size(), 1u) << formatErrors(r.errors);
  EXPECT_EQ(r.errors[0].path, "");
  EXPECT_NE(r.errors[0].message.find("YAML syntax error at line"), std::string::npos);
  EXPECT_NE(r.errors[0].message.find("column"), std::string::npos);

  Result tab;
  EXPECT_NO_THROW(tab = parse("node:\n\tunderlay_ip: 1.2.3.4\n"));
  EXPECT_FALSE(tab.ok);
  EXPECT_EQ(tab.errors.size(), 1u);
}

TEST(ConfigErrors, EmptyDocument) {
  for (const char* text : {"", "   \n", "# only a comment\n", "---\n", "~\n"}) {
    Result r = parse(text);
    EXPECT_TRUE(onlyError(r, "", {"empty"})) << "text: '" << text << "'";
  }
}

TEST(ConfigErrors, TopLevelNotAMap) {
  EXPECT_TRUE(onlyError(parse("- a\n- b\n"), "", {"top level must be a map", "a list"}));
  EXPECT_TRUE(onlyError(parse("hello\n"), "", {"top level must be a map"}));
}

TEST(ConfigErrors, MultipleDocuments) {
  EXPECT_TRUE(onlyError(parse(withGroup(kOneAppliance) + "---\n" + withGroup(kOneAppliance)), "",
                        {"2 YAML documents"}));
}

TEST(ConfigErrors, MissingRequiredSections) {
  Result r = parse("log_level: info\n");
  EXPECT_TRUE(hasError(r, "node", {"required"}));
  EXPECT_TRUE(hasError(r, "server_groups", {"required"}));
  EXPECT_EQ(r.errors.size(), 2u) << formatErrors(r.errors);  // nothing spurious below them
}

// ---------------------------------------------------------------------------
// Unknown keys, duplicate keys and wrong node kinds.

TEST(ConfigErrors, UnknownKeys) {
  Result r = parse(withGroup("name: g\n    servers:\n      - { address: 192.0.2.10, weigth: 5 }",
                             "colour: blue\n"));
  EXPECT_TRUE(hasError(r, "server_groups[0].servers[0].weigth",
                       {"unknown key 'weigth'", "did you mean 'weight'"}));
  EXPECT_TRUE(hasError(r, "colour", {"unknown key 'colour'", "allowed keys", "server_groups"}));
  EXPECT_EQ(r.errors.size(), 2u) << formatErrors(r.errors);

  EXPECT_TRUE(onlyError(parse(withGroup(kOneAppliance, "dataplane: { worker: 2 }\n")),
                        "dataplane.worker", {"unknown key 'worker'", "'workers'"}));
  EXPECT_TRUE(onlyError(parse(std::string(kNode) + "  mtu: 1500\nserver_groups:\n  - " +
                              kOneAppliance + "\n"),
                        "node.mtu", {"unknown key 'mtu'"}));
  EXPECT_TRUE(onlyError(parse(withGroup(std::string(kOneAppliance) + "\n    geneve: { vin: 5 }")),
                        "server_groups[0].geneve.vin", {"unknown key 'vin'", "'vni'"}));
  EXPECT_TRUE(onlyError(parse(withGroup(std::string(kOneAppliance) + "\n    sticky: 5-tuple")),
                        "server_groups[0].sticky", {"unknown key 'sticky'"}));
}

TEST(ConfigErrors, DuplicateKey) {
  EXPECT_TRUE(onlyError(parse(withGroup(kOneAppliance, "log_level: info\nlog_level: debug\n")),
                        "log_level", {"duplicate key 'log_level'"}));
}

TEST(ConfigErrors, WrongNodeKinds) {
  EXPECT_TRUE(onlyError(parse("node: 5\nserver_groups:\n  - " + std::string(kOneAppliance) + "\n"),
                        "node", {"expected a map", "'5'"}));
  EXPECT_TRUE(onlyError(parse(std::string(kNode) + "server_groups: { name: g }\n"),
                        "server_groups", {"expected a list"}));
  EXPECT_TRUE(onlyError(parse(std::string(kNode) + "server_groups: [ g ]\n"),
                        "server_groups[0]", {"expected a map"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: g\n    servers: 192.0.2.10")),
                        "server_groups[0].servers", {"expected a list", "'192.0.2.10'"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: g\n    servers: [192.0.2.10]")),
                        "server_groups[0].servers[0]", {"expected a map"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: g\n    servers: [{ address: { ip: 1.2.3.4 } }]")),
                        "server_groups[0].servers[0].address", {"expected an IPv4 address", "a map"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: [a, b]\n    servers: [{ address: 192.0.2.10 }]")),
                        "server_groups[0].name", {"a list"}));
  EXPECT_TRUE(onlyError(parse(withGroup(kOneAppliance, "dataplane: [1]\n")), "dataplane",
                        {"expected a map"}));
  EXPECT_TRUE(onlyError(parse(withGroup(kOneAppliance, "eal: --no-huge\n")), "eal",
                        {"expected a list of strings"}));
  EXPECT_TRUE(onlyError(parse(withGroup(kOneAppliance, "eal: [a, { b: c }]\n")), "eal[1]",
                        {"expected a string"}));
  EXPECT_TRUE(onlyError(parse(withGroup(kOneAppliance, "log_level:\n")), "log_level",
                        {"has no value"}));
  EXPECT_TRUE(onlyError(parse(withGroup(std::string(kOneAppliance) + "\n    geneve: aws")),
                        "server_groups[0].geneve", {"expected a map", "'aws'"}));
}

// ---------------------------------------------------------------------------
// Node.

TEST(ConfigErrors, MissingUnderlayIpIsReportedOnce) {
  Result r = parse("node:\n  underlay_mac: 02:00:00:00:00:01\nserver_groups:\n  - " +
                   std::string(kOneAppliance) + "\n");
  EXPECT_TRUE(onlyError(r, "node.underlay_ip", {"required"}));
}

TEST(ConfigErrors, MissingUnderlayMacIsReportedOnce) {
  Result r = parse("node:\n  underlay_ip: 192.0.2.1\nserver_groups:\n  - " +
                   std::string(kOneAppliance) + "\n");
  EXPECT_TRUE(onlyError(r, "node.underlay_mac", {"required"}));
}

std::string nodeWith(const std::string& ip, const std::string& mac, const std::string& more = "") {
  return "node:\n  underlay_ip: " + ip + "\n  underlay_mac: " + mac + "\n" + more +
         "server_groups:\n  - " + kOneAppliance + "\n";
}

TEST(ConfigErrors, UnderlayIp) {
  EXPECT_TRUE(onlyError(parse(nodeWith("2001:db8::1", "02:00:00:00:00:01")), "node.underlay_ip",
                        {"'2001:db8::1'", "is IPv6", "goes in node.underlay_ipv6"}));
  EXPECT_TRUE(onlyError(parse(nodeWith("192.0.2.300", "02:00:00:00:00:01")), "node.underlay_ip",
                        {"'192.0.2.300'", "not an IP address"}));
  EXPECT_TRUE(onlyError(parse(nodeWith("0.0.0.0", "02:00:00:00:00:01")), "node.underlay_ip",
                        {"'0.0.0.0'"}));
  EXPECT_TRUE(onlyError(parse(nodeWith("239.1.1.1", "02:00:00:00:00:01")), "node.underlay_ip",
                        {"'239.1.1.1'", "multicast"}));
}

TEST(ConfigErrors, UnderlayMac) {
  EXPECT_TRUE(onlyError(parse(nodeWith("192.0.2.1", "01:00:5e:00:00:01")), "node.underlay_mac",
                        {"'01:00:5e:00:00:01'", "unicast"}));
  EXPECT_TRUE(onlyError(parse(nodeWith("192.0.2.1", "ff:ff:ff:ff:ff:ff")), "node.underlay_mac",
                        {"unicast"}));
  EXPECT_TRUE(onlyError(parse(nodeWith("192.0.2.1", "00:00:00:00:00:00")), "node.underlay_mac",
                        {"non-zero"}));
  EXPECT_TRUE(onlyError(parse(nodeWith("192.0.2.1", "02:00:00:00:01")), "node.underlay_mac",
                        {"'02:00:00:00:01'", "not a MAC address"}));
  EXPECT_TRUE(onlyError(
      parse(nodeWith("192.0.2.1", "02:00:00:00:00:01", "  gateway_mac: 03:00:00:00:00:01\n")),
      "node.gateway_mac", {"unicast"}));
  EXPECT_TRUE(onlyError(
      parse(nodeWith("192.0.2.1", "02:00:00:00:00:01", "  gateway_mac: zz\n")),
      "node.gateway_mac", {"'zz'"}));
}

TEST(ConfigErrors, NodeNumbers) {
  EXPECT_TRUE(onlyError(
      parse(nodeWith("192.0.2.1", "02:00:00:00:00:01", "  underlay_mtu: 575\n")),
      "node.underlay_mtu", {"'575'", "576..9216"}));
  EXPECT_TRUE(onlyError(
      parse(nodeWith("192.0.2.1", "02:00:00:00:00:01", "  underlay_mtu: 9217\n")),
      "node.underlay_mtu", {"576..9216"}));
  EXPECT_TRUE(onlyError(
      parse(nodeWith("192.0.2.1", "02:00:00:00:00:01", "  icmp_rate_per_s: 100001\n")),
      "node.icmp_rate_per_s", {"0..100000"}));
  EXPECT_TRUE(onlyError(
      parse(nodeWith("192.0.2.1", "02:00:00:00:00:01", "  underlay_port: 65536\n")),
      "node.underlay_port", {"'65536'", "0..65535"}));
  EXPECT_TRUE(onlyError(
      parse(nodeWith("192.0.2.1", "02:00:00:00:00:01", "  underlay_port: -1\n")),
      "node.underlay_port", {"'-1'", "negative"}));
}

// ---------------------------------------------------------------------------
// Server groups.

TEST(ConfigErrors, NoServerGroups) {
  EXPECT_TRUE(onlyError(parse(std::string(kNode) + "server_groups: []\n"), "server_groups",
                        {"at least one server group"}));
  EXPECT_TRUE(onlyError(parse(std::string(kNode) + "server_groups:\n"), "server_groups",
                        {"at least one server group"}));
  EXPECT_TRUE(onlyError(parse(kNode), "server_groups", {"required"}));
}

TEST(ConfigErrors, TooManyServerGroups) {
  std::string text = std::string(kNode) + "server_groups:\n";
  for (int i = 0; i < 65; ++i) {
    text += "  - { name: g" + std::to_string(i) + ", servers: [{ address: 10.0.0." +
            std::to_string(i + 1) + " }] }\n";
  }
  EXPECT_TRUE(onlyError(parse(text), "server_groups", {"65", "1..64"}));
}

TEST(ConfigErrors, GroupName) {
  EXPECT_TRUE(onlyError(parse(withGroup("servers: [{ address: 192.0.2.10 }]")),
                        "server_groups[0].name", {"required"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: 'fire walls'\n    servers: [{ address: 192.0.2.10 }]")),
                        "server_groups[0].name", {"'fire walls'", "A-Z a-z 0-9 _ . -"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: ''\n    servers: [{ address: 192.0.2.10 }]")),
                        "server_groups[0].name", {"required"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: " + std::string(64, 'a') +
                                        "\n    servers: [{ address: 192.0.2.10 }]")),
                        "server_groups[0].name", {"1..63"}));
  EXPECT_TRUE(parse(withGroup("name: " + std::string(63, 'a') +
                              "\n    servers: [{ address: 192.0.2.10 }]")).ok);
  Result dup = parse(std::string(kNode) + R"(server_groups:
  - { name: fw, servers: [{ address: 192.0.2.10 }] }
  - { name: fw, servers: [{ address: 192.0.2.11 }] }
)");
  EXPECT_TRUE(onlyError(dup, "server_groups[1].name", {"'fw'", "server_groups[0]", "unique"}));
}

TEST(ConfigErrors, ServerCount) {
  EXPECT_TRUE(onlyError(parse(withGroup("name: g\n    servers: []")), "server_groups[0].servers",
                        {"no servers", "1..4096"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: g")), "server_groups[0].servers", {"required"}));

  std::string many = "name: big\n    servers:\n";
  for (int i = 0; i < 4097; ++i) {
    many += "      - { address: 10.1." + std::to_string(i / 250) + "." +
            std::to_string(i % 250 + 1) + " }\n";
  }
  EXPECT_TRUE(onlyError(parse(withGroup(many)), "server_groups[0].servers", {"4097", "1..4096"}));
}

TEST(ConfigErrors, ServerAddress) {
  // An IPv6 appliance needs the node's IPv6 underlay address (test_config_ipv6.cc).
  EXPECT_TRUE(hasError(parse(withGroup("name: g\n    servers: [{ address: 2001:db8::10 }]")),
                       "server_groups[0].servers[0].address", {"'2001:db8::10'", "node.underlay_ipv6"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: g\n    servers: [{ address: fw1 }]")),
                        "server_groups[0].servers[0].address", {"'fw1'", "not an IP address"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: g\n    servers: [{ weight: 5 }]")),
                        "server_groups[0].servers[0].address", {"required"}));
  EXPECT_TRUE(onlyError(parse(withGroup("name: g\n    servers: [{ address: 192.0.2.1 }]")),
                        "server_groups[0].servers[0].address", {"'192.0.2.1'", "node.underlay_ip"}));
  EXPECT_TRUE(onlyError(
      parse(withGroup("name: g\n    servers: [{ address: 192.0.2.10 }, { address: 192.0.2.10 }]")),
      "server_groups[0].servers[1].address", {"'192.0.2.10'", "server_groups[0].servers[0]"}));
}

TEST(ConfigErrors, ServerAddressUniqueAcrossGroups) {
  Result r = parse(std::string(kNode) + R"(server_groups:
  - name: a
    servers: [{ address: 192.0.2.10 }, { address: 192.0.2.11 }]
  - name: b
    servers: [{ address: 192.0.2.12 }, { address: 192.0.2.11 }]
)");
  EXPECT_TRUE(onlyError(r, "server_groups[1].servers[1].address",
                        {"'192.0.2.11'", "'a'", "server_groups[0].servers[1]",
                         "at most one server group"}));
}

TEST(ConfigErrors, ServerMac) {
  EXPECT_TRUE(onlyError(
      parse(withGroup("name: g\n    servers: [{ address: 192.0.2.10, mac: 01:00:00:00:00:01 }]")),
      "server_groups[0].servers[0].mac", {"unicast"}));
  EXPECT_TRUE(onlyError(
      parse(withGroup("name: g\n    servers: [{ address: 192.0.2.10, mac: 02:00:00:00:00 }]")),
      "server_groups[0].servers[0].mac", {"'02:00:00:00:00'"}));
}

TEST(ConfigErrors, Weight) {
  auto w = [](const std::string& v) {
    return parse(withGroup("name: g\n    servers: [{ address: 192.0.2.9 }, { address: 192.0.2.10, "
                           "weight: " + v + " }]"));
  };
  const std::string p = "server_groups[0].servers[1].weight";
  EXPECT_TRUE(onlyError(w("10001"), p, {"'10001'", "0..10000"}));
  EXPECT_TRUE(onlyError(w("-1"), p, {"'-1'", "negative", "0..10000"}));
  EXPECT_TRUE(onlyError(w("heavy"), p, {"'heavy'", "not a number", "0..10000"}));
  EXPECT_TRUE(onlyError(w("1.5"), p, {"'1.5'", "0..10000"}));
  EXPECT_TRUE(onlyError(w("99999999999999999999999"), p, {"out of range", "0..10000"}));
  EXPECT_TRUE(onlyError(w("0xZZ"), p, {"'0xZZ'"}));
  EXPECT_TRUE(onlyError(w("true"), p, {"'true'"}));
  EXPECT_TRUE(onlyError(w("{ x: 1 }"), p, {"a map"}));
  EXPECT_TRUE(onlyError(w("[1]"), p, {"a list"}));
  EXPECT_TRUE(w("0").ok);

  EXPECT_TRUE(onlyError(
      parse(withGroup("name: g\n    servers: [{ address: 192.0.2.10, weight: 0 }, "
                      "{ address: 192.0.2.11, weight: 0 }]")),
      "server_groups[0].servers", {"weight > 0"}));
}

TEST(ConfigErrors, StickinessAndGeneve) {
  const std::string g = std::string(kOneAppliance) + "\n    ";
  EXPECT_TRUE(onlyError(parse(withGroup(g + "stickiness: 4-tuple")), "server_groups[0].stickiness",
                        {"'4-tuple'", "5-tuple, 3-tuple, 2-tuple"}));
  EXPECT_TRUE(onlyError(parse(withGroup(g + "geneve: { format: gre }")),
                        "server_groups[0].geneve.format", {"'gre'", "aws, ethernet, nsi"}));
  // The nsi format keeps the flow cookie in the endpoint ID's low half.
  EXPECT_TRUE(onlyError(parse(withGroup(g + "geneve: { format: nsi, endpoint_id: 0x100000000 }")),
                        "server_groups[0].geneve.endpoint_id", {"'4294967296'", "format nsi", "4294967295"}));
  EXPECT_TRUE(parse(withGroup(g + "geneve: { format: nsi, vni: 0, endpoint_id: 0xffffffff }")).ok);
  EXPECT_TRUE(onlyError(parse(withGroup(g + "geneve: { vni: 0x1000000 }")),
                        "server_groups[0].geneve.vni", {"'0x1000000'", "0x0..0xffffff"}));
  EXPECT_TRUE(onlyError(parse(withGroup(g + "geneve: { vni: 16777216 }")),
                        "server_groups[0].geneve.vni", {"'16777216'", "0xffffff"}));
  EXPECT_TRUE(onlyError(parse(withGroup(g + "geneve: { endpoint_id: 0x10000000000000000 }")),
                        "server_groups[0].geneve.endpoint_id", {"out of range"}));
  EXPECT_TRUE(onlyError(parse(withGroup(g + "geneve: { attachment_id: -5 }")),
                        "server_groups[0].geneve.attachment_id", {"negative"}));
}

TEST(ConfigErrors, MaglevTableSize) {
  const std::string g = std::string(kOneAppliance) + "\n    maglev_table_size: ";
  const std::string p = "server_groups[0].maglev_table_size";
  EXPECT_TRUE(onlyError(parse(withGroup(g + "65536")), p, {"'65536'", "not prime", "65537"}));
  EXPECT_TRUE(onlyError(parse(withGroup(g + "241")), p, {"'241'", "251..1000003"}));
  EXPECT_TRUE(onlyError(parse(withGroup(g + "1000033")), p, {"'1000033'", "251..1000003"}));

  std::string many = "name: big\n    maglev_table_size: 251\n    servers:\n";
  for (int i = 0; i < 251; ++i) {
    many += "      - { address: 10.1." + std::to_string(i / 200) + "." +
            std::to_string(i % 200 + 1) + " }\n";
  }
  EXPECT_TRUE(onlyError(parse(withGroup(many)), p, {"'251'", "greater than the number of servers"}));
}

TEST(ConfigErrors, IdleTimeouts) {
  const std::string g = std::string(kOneAppliance) + "\n    ";
  auto tcp = [&](const std::string& v) { return parse(withGroup(g + "tcp_idle_timeout: " + v)); };
  const std::string p = "server_groups[0].tcp_idle_timeout";
  EXPECT_TRUE(onlyError(tcp("59"), p, {"'59'", "60..6000"}));
  EXPECT_TRUE(onlyError(tcp("10s"), p, {"'10s'", "60..6000"}));
  EXPECT_TRUE(onlyError(tcp("2h"), p, {"'2h'", "7200", "60..6000"}));
  EXPECT_TRUE(onlyError(tcp("6001"), p, {"60..6000"}));
  EXPECT_TRUE(onlyError(tcp("five minutes"), p, {"'five minutes'", "350s, 6m, 1h"}));
  EXPECT_TRUE(onlyError(tcp("-60"), p, {"negative"}));
  EXPECT_TRUE(onlyError(tcp("12345678901234567890"), p, {"60..6000"}));
  EXPECT_TRUE(onlyError(tcp("1d"), p, {"'1d'"}));
  EXPECT_TRUE(onlyError(parse(withGroup(g + "other_idle_timeout: 30s")),
                        "server_groups[0].other_idle_timeout", {"'30s'", "60..6000"}));
}

// ---------------------------------------------------------------------------
// Dataplane and top-level scalars.

TEST(ConfigErrors, DataplaneRanges) {
  struct Case {
    const char* key;
    const char* value;
    const char* range;
  } cases[] = {
      {"workers", "0", "1..64"},
      {"workers", "65", "1..64"},
      {"burst", "0", "1..256"},
      {"burst", "257", "1..256"},
      {"flow_table_size", "1023", "1024..134217728"},
      {"flow_table_size", "134217729", "1024..134217728"},
      {"mbufs", "1000", "1024..16777216"},
      {"mbufs", "0x1000001", "1024..16777216"},
      {"rx_queue_size", "63", "64..16384"},
      {"tx_queue_size", "16385", "64..16384"},
  };
  for (const Case& c : cases) {
    Result r = parse(withGroup(kOneAppliance, std::string("dataplane:\n  ") + c.key + ": " +
                                               c.value + "\n"));
    EXPECT_TRUE(onlyError(r, std::string("dataplane.") + c.key,
                          {"'" + std::string(c.value) + "'", c.range}))
        << c.key << "=" << c.value;
  }
}

TEST(ConfigErrors, LogLevel) {
  EXPECT_TRUE(onlyError(parse(withGroup(kOneAppliance, "log_level: verbose\n")), "log_level",
                        {"'verbose'", "trace, debug, info, warn, error, critical, off"}));
}

// ---------------------------------------------------------------------------
// Several problems at once, and no spurious follow-up errors.

TEST(ConfigErrors, ReportsEveryProblem) {
  Result r = parse(R"(
node:
  underlay_ip: 2001:db8::1
  underlay_mac: 01:00:00:00:00:01
  underlay_mtu: 100
server_groups:
  - name: bad name
    stickiness: 1-tuple
    maglev_table_size: 1000
    servers:
      - { address: 192.0.2.10, weigth: 1 }
      - { address: 192.0.2.10 }
      - { address: not-an-ip }
  - name: second
    servers:
      - { address: 192.0.2.10, weight: 20000 }
dataplane:
  workers: many
log_level: loud
)");
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasError(r, "node.underlay_ip", {"IPv6"}));
  EXPECT_TRUE(hasError(r, "node.underlay_mac", {"unicast"}));
  EXPECT_TRUE(hasError(r, "node.underlay_mtu", {"'100'"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].name", {"'bad name'"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].stickiness", {"'1-tuple'"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].maglev_table_size", {"'1000'"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].servers[0].weigth", {"unknown key"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].servers[1].address", {"twice"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].servers[2].address", {"'not-an-ip'"}));
  EXPECT_TRUE(hasError(r, "server_groups[1].servers[0].address", {"at most one server group"}));
  EXPECT_TRUE(hasError(r, "server_groups[1].servers[0].weight", {"'20000'"}));
  EXPECT_TRUE(hasError(r, "dataplane.workers", {"'many'"}));
  EXPECT_TRUE(hasError(r, "log_level", {"'loud'"}));
  EXPECT_EQ(r.errors.size(), 13u) << formatErrors(r.errors);
}

TEST(ConfigErrors, FailedValueIsNotReportedTwice) {
  // A malformed address is not also "required"; a malformed weight is not also
  // range-checked; a group that is not a map yields no name/servers errors.
  Result r = parse(std::string(kNode) + R"(server_groups:
  - name: a
    servers:
      - { address: nope }
      - { address: 192.0.2.11, weight: lots }
  - 42
)");
  EXPECT_TRUE(hasError(r, "server_groups[0].servers[0].address", {"'nope'"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].servers[1].weight", {"'lots'"}));
  EXPECT_TRUE(hasError(r, "server_groups[1]", {"expected a map", "'42'"}));
  EXPECT_EQ(r.errors.size(), 3u) << formatErrors(r.errors);
}

// ---------------------------------------------------------------------------
// validateConfig on a Config built in code.

TEST(ValidateConfig, CodeBuiltConfig) {
  Config c;
  std::vector<ConfigError> errs;
  EXPECT_FALSE(validateConfig(c, errs));
  EXPECT_EQ(countPath(errs, "node.underlay_ip"), 1);
  EXPECT_EQ(countPath(errs, "node.underlay_mac"), 1);
  EXPECT_EQ(countPath(errs, "server_groups"), 1);
  EXPECT_EQ(errs.size(), 3u) << formatErrors(errs);

  c.node.underlay_ip = IpAddr::v4(0xC0000201);
  c.node.underlay_mac = *MacAddr::parse("02:00:00:00:00:01");
  ApplianceGroupConfig g;
  g.name = "fw";
  g.appliances.push_back({IpAddr::v4(0xC000020A), 1, std::nullopt});
  c.server_groups.push_back(g);
  errs.clear();
  EXPECT_TRUE(validateConfig(c, errs)) << formatErrors(errs);

  c.server_groups[0].tcp_idle_timeout_s = 10;
  c.server_groups[0].geneve.vni = 0x1000000;
  c.server_groups[0].appliances[0].weight = 10001;
  c.dataplane.workers = 0;
  c.log_level = "loud";
  errs.clear();
  EXPECT_FALSE(validateConfig(c, errs));
  EXPECT_EQ(countPath(errs, "server_groups[0].tcp_idle_timeout"), 1);
  EXPECT_EQ(countPath(errs, "server_groups[0].geneve.vni"), 1);
  EXPECT_EQ(countPath(errs, "server_groups[0].servers[0].weight"), 1);
  EXPECT_EQ(countPath(errs, "dataplane.workers"), 1);
  EXPECT_EQ(countPath(errs, "log_level"), 1);
  EXPECT_EQ(errs.size(), 5u) << formatErrors(errs);
}

// ---------------------------------------------------------------------------
// Files and formatting.

TEST(ConfigFile, MissingFileIsAnError) {
  Config c;
  std::vector<ConfigError> errs;
  EXPECT_NO_THROW(EXPECT_FALSE(loadConfigFile("/nonexistent/gwlb/config.yaml", c, errs)));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].path, "");
  EXPECT_NE(errs[0].message.find("/nonexistent/gwlb/config.yaml"), std::string::npos);
  EXPECT_NE(errs[0].message.find("No such file"), std::string::npos) << errs[0].message;
}

TEST(ConfigFile, DirectoryIsAnError) {
  Config c;
  std::vector<ConfigError> errs;
  EXPECT_FALSE(loadConfigFile("/tmp", c, errs));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].path, "");
}

TEST(ConfigFile, LoadsFileAndRecordsPath) {
  char name[] = "/tmp/gwlb_test_config_XXXXXX";
  int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, kSample, std::char_traits<char>::length(kSample)),
            ssize_t(std::char_traits<char>::length(kSample)));
  close(fd);
  Config c;
  std::vector<ConfigError> errs;
  EXPECT_TRUE(loadConfigFile(name, c, errs)) << formatErrors(errs);
  EXPECT_EQ(c.source_path, name);
  EXPECT_EQ(c.server_groups.size(), 1u);
  unlink(name);
}

TEST(FormatErrors, OneLinePerError) {
  std::vector<ConfigError> errs = {
      {"server_groups[0].servers[2].address", "'x' is not an IP address"},
      {"log_level", "'loud' is not a log level"},
  };
  EXPECT_EQ(formatErrors(errs),
            "server_groups[0].servers[2].address: 'x' is not an IP address\n"
            "log_level: 'loud' is not a log level\n");
  EXPECT_EQ(formatErrors({}), "");
  EXPECT_EQ(formatErrors({{"", "cannot open"}}), "cannot open\n");
}

TEST(Config, ControlAndMetricsSections) {
  Result d = parse(withGroup(kOneAppliance));
  ASSERT_TRUE(d.ok) << formatErrors(d.errors);
  EXPECT_EQ(d.cfg.control.socket, "/run/gwlbd/gwlbd.sock");
  EXPECT_EQ(d.cfg.control.socket_mode, 0660u);
  EXPECT_EQ(d.cfg.metrics.listen, "");
  Result r = parse(withGroup(kOneAppliance,
                             "control: { socket: /tmp/x/gw.sock, socket_mode: \"0600\" }\n"
                             "metrics: { listen: \"[::1]:9100\" }\n"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_EQ(r.cfg.control.socket, "/tmp/x/gw.sock");
  EXPECT_EQ(r.cfg.control.socket_mode, 0600u);
  EXPECT_EQ(r.cfg.metrics.listen, "[::1]:9100");
}

TEST(ConfigErrors, ControlAndMetricsValues) {
  Result r = parse(withGroup(kOneAppliance,
                             "control: { socket: relative.sock, socket_mode: \"0999\", sockt: 1 }\n"
                             "metrics: { listen: \"127.0.0.1:99999\" }\n"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasError(r, "control.socket", {"absolute"}));
  EXPECT_TRUE(hasError(r, "control.socket_mode", {"0999"}));
  EXPECT_TRUE(hasError(r, "control.sockt", {"unknown"}));
  EXPECT_TRUE(hasError(r, "metrics.listen", {"99999"}));
  IpAddr a;
  uint16_t port = 0;
  EXPECT_TRUE(parseListen("127.0.0.1:9100", a, port));
  EXPECT_EQ(port, 9100);
  EXPECT_FALSE(parseListen("::1:9100", a, port));  // v6 needs brackets
  EXPECT_FALSE(parseListen("localhost:9100", a, port));
  EXPECT_FALSE(parseListen("127.0.0.1:", a, port));
}

TEST(Config, HealthCheckSection) {
  Result none = parse(withGroup(kOneAppliance));
  ASSERT_TRUE(none.ok) << formatErrors(none.errors);
  EXPECT_FALSE(none.cfg.server_groups[0].health_check.active());  // off unless configured
  EXPECT_EQ(none.cfg.server_groups[0].when_all_unhealthy, WhenAllUnhealthy::kFailOpen);
  Result r = parse(withGroup(std::string(kOneAppliance) + R"(
    when_all_unhealthy: drop
    health_check:
      protocol: http
      port: 8080
      path: /health?x&y
      domain: fw.example
      http_codes: [http_2xx, 301-302]
      interval: 200ms
      timeout: 1s
      healthy_threshold: 2
      unhealthy_threshold: 10
      source: 127.0.0.2
      jitter: false)"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  const HealthCheckConfig& h = r.cfg.server_groups[0].health_check;
  EXPECT_TRUE(h.active());
  EXPECT_EQ(h.protocol, HealthProtocol::kHttp);
  EXPECT_EQ(h.port, 8080);
  EXPECT_EQ(h.path, "/health?x&y");
  EXPECT_EQ(h.domain, "fw.example");
  EXPECT_EQ(h.http_codes, (std::vector<std::string>{"http_2xx", "301-302"}));
  EXPECT_EQ(h.interval_ms, 200u);
  EXPECT_EQ(h.timeout_ms, 1000u);
  EXPECT_EQ(h.healthy_threshold, 2u);
  EXPECT_EQ(h.unhealthy_threshold, 10u);
  ASSERT_TRUE(h.source.has_value());
  EXPECT_FALSE(h.jitter);
  EXPECT_EQ(r.cfg.server_groups[0].when_all_unhealthy, WhenAllUnhealthy::kDrop);
}

TEST(ConfigErrors, HealthCheckValues) {
  Result r = parse(withGroup(std::string(kOneAppliance) + R"(
    when_all_unhealthy: panic
    health_check:
      protocol: icmp
      port: 0
      interval: 301s
      timeout: 5ms
      healthy_threshold: 1
      unhealthy_threshold: 11
      enabled: maybe)"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasError(r, "server_groups[0].when_all_unhealthy", {"panic"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.protocol", {"icmp"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.port", {"0"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.interval", {"301s"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.timeout", {"5ms"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.healthy_threshold", {"1"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.unhealthy_threshold", {"11"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.enabled", {"maybe"}));
  Result h = parse(withGroup(std::string(kOneAppliance) + R"(
    health_check:
      protocol: https
      path: health
      domain: "bad domain"
      http_codes: [http_6xx, 299-200]
      verify: true)"));
  EXPECT_FALSE(h.ok);
  EXPECT_TRUE(hasError(h, "server_groups[0].health_check.path", {"health"}));
  EXPECT_TRUE(hasError(h, "server_groups[0].health_check.domain", {"bad domain"}));
  EXPECT_TRUE(hasError(h, "server_groups[0].health_check.http_codes[0]", {"http_6xx"}));
  EXPECT_TRUE(hasError(h, "server_groups[0].health_check.http_codes[1]", {"299-200"}));
  EXPECT_TRUE(hasError(h, "server_groups[0].health_check.ca_file", {"verify"}));
}

}  // namespace
}  // namespace gwlb::ctl

namespace gwlb::ctl {
namespace {

// Issue 14 item 14: interval and timeout take the union of the products'
// ranges (AWS: interval 5-300 s, timeout 2-120 s; Alibaba: timeout 1-300 s,
// interval 1-50 s), not 50 s / 60 s.
TEST(ConfigHealth, ProductRangesAreAccepted) {
  for (const char* iv : {"5s", "50s", "300s", "5m"})
    for (const char* to : {"2s", "60s", "120s", "300s"}) {
      Result r = parse(withGroup(std::string(kOneAppliance) + "\n    health_check: { interval: " +
                                 iv + ", timeout: " + to + " }"));
      EXPECT_TRUE(r.ok) << iv << "/" << to << ": " << formatErrors(r.errors);
    }
  Result r = parse(withGroup(std::string(kOneAppliance) +
                             "\n    health_check: { interval: 300s, timeout: 120s }"));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.cfg.server_groups[0].health_check.interval_ms, 300000u);
  EXPECT_EQ(r.cfg.server_groups[0].health_check.timeout_ms, 120000u);
  Result bad = parse(withGroup(std::string(kOneAppliance) +
                               "\n    health_check: { interval: 301s, timeout: 5m1s }"));
  EXPECT_TRUE(hasError(bad, "server_groups[0].health_check.interval", {"10 ms to 300 s"}));
  EXPECT_TRUE(hasError(bad, "server_groups[0].health_check.timeout", {"5m1s"}));
  // validateConfig on a code-built config says the same range.
  Config c = parse(withGroup(kOneAppliance)).cfg;
  c.server_groups[0].health_check.configured = true;
  c.server_groups[0].health_check.timeout_ms = 300001;
  std::vector<ConfigError> errs;
  EXPECT_FALSE(validateConfig(c, errs));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("10 ms to 300 s"), std::string::npos) << errs[0].message;
}

// Issue 14 item 14: ca_file is never silently ignored. Alone it implies
// verify; with verify: false, or on a tcp/http check, it is an error.
TEST(ConfigHealth, CaFileImpliesVerifyOrIsAnError) {
  Result r = parse(withGroup(std::string(kOneAppliance) +
                             "\n    health_check: { protocol: https, ca_file: /etc/ca.pem }"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_TRUE(r.cfg.server_groups[0].health_check.verify);
  Result off = parse(withGroup(std::string(kOneAppliance) +
                               "\n    health_check: { protocol: https, verify: false, ca_file: /etc/ca.pem }"));
  EXPECT_TRUE(hasError(off, "server_groups[0].health_check.ca_file", {"verify is false"}));
  EXPECT_EQ(off.errors.size(), 1u) << formatErrors(off.errors);
  Result http = parse(withGroup(std::string(kOneAppliance) +
                                "\n    health_check: { protocol: http, ca_file: /etc/ca.pem }"));
  EXPECT_TRUE(hasError(http, "server_groups[0].health_check.verify", {"https", "http"}));
  Result tcp = parse(withGroup(std::string(kOneAppliance) + "\n    health_check: { verify: true }"));
  EXPECT_TRUE(hasError(tcp, "server_groups[0].health_check.verify", {"https", "tcp"}));
  // A code-built config (server add, reload) is held to the same rule.
  Config c = r.cfg;
  c.server_groups[0].health_check.verify = false;
  std::vector<ConfigError> errs;
  EXPECT_FALSE(validateConfig(c, errs));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].path, "server_groups[0].health_check.ca_file");
}

// keep_alive: http(s) only; a tcp check has no request to keep a connection for.
TEST(ConfigHealth, KeepAliveIsForHttpAndHttps) {
  for (const char* proto : {"http", "https"}) {
    Result r = parse(withGroup(std::string(kOneAppliance) + "\n    health_check: { protocol: " + proto +
                               ", keep_alive: true }"));
    ASSERT_TRUE(r.ok) << proto << ": " << formatErrors(r.errors);
    EXPECT_TRUE(r.cfg.server_groups[0].health_check.keep_alive);
  }
  Result off = parse(withGroup(std::string(kOneAppliance) + "\n    health_check: { protocol: https }"));
  ASSERT_TRUE(off.ok) << formatErrors(off.errors);
  EXPECT_FALSE(off.cfg.server_groups[0].health_check.keep_alive) << "off unless asked for";
  Result tcp = parse(withGroup(std::string(kOneAppliance) + "\n    health_check: { keep_alive: true }"));
  EXPECT_TRUE(hasError(tcp, "server_groups[0].health_check.keep_alive", {"http and https", "tcp"}));
  EXPECT_EQ(tcp.errors.size(), 1u) << formatErrors(tcp.errors);
}

// A fully qualified domain (trailing dot) is accepted; empty labels are not.
TEST(ConfigHealth, DomainLabels) {
  for (const char* d : {"fw.example.", "fw.example", "a", "x-1.example"}) {
    Result r = parse(withGroup(std::string(kOneAppliance) +
                               "\n    health_check: { protocol: http, domain: \"" + d + "\" }"));
    EXPECT_TRUE(r.ok) << d << ": " << formatErrors(r.errors);
  }
  for (const char* d : {".", "..", "fw..example", ".fw.example", "fw.example..", "-fw.example",
                        "fw-.example"}) {
    Result r = parse(withGroup(std::string(kOneAppliance) +
                               "\n    health_check: { protocol: http, domain: \"" + d + "\" }"));
    EXPECT_TRUE(hasError(r, "server_groups[0].health_check.domain", {"labels"})) << d;
  }
}

TEST(Config, FailoverAndDraining) {
  Result none = parse(withGroup(kOneAppliance));
  ASSERT_TRUE(none.ok) << formatErrors(none.errors);
  EXPECT_EQ(none.cfg.server_groups[0].failover_mode, FailoverMode::kNoRebalance);
  EXPECT_FALSE(none.cfg.server_groups[0].connection_draining.enabled);
  EXPECT_EQ(none.cfg.server_groups[0].connection_draining.timeout_s, 300u);
  Result r = parse(withGroup(std::string(kOneAppliance) + R"(
    failover_mode: rebalance
    connection_draining: { enabled: true, timeout: 1h })"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_EQ(r.cfg.server_groups[0].failover_mode, FailoverMode::kRebalance);
  EXPECT_TRUE(r.cfg.server_groups[0].connection_draining.enabled);
  EXPECT_EQ(r.cfg.server_groups[0].connection_draining.timeout_s, 3600u);
  Result one = parse(withGroup(std::string(kOneAppliance) + R"(
    connection_draining: { enabled: true, timeout: 1 })"));
  ASSERT_TRUE(one.ok) << formatErrors(one.errors);
  EXPECT_EQ(one.cfg.server_groups[0].connection_draining.timeout_s, 1u);
}

TEST(Config, TcpResetsAreOffByDefaultAndScopedAsAws) {
  Result none = parse(withGroup(kOneAppliance));
  ASSERT_TRUE(none.ok) << formatErrors(none.errors);
  EXPECT_FALSE(none.cfg.server_groups[0].send_tcp_reset.on_unhealthy);
  EXPECT_FALSE(none.cfg.server_groups[0].send_tcp_reset.on_deregistration);
  EXPECT_EQ(none.cfg.node.tcp_reset_rate_per_s, 1000u);
  Result r = parse(withGroup(std::string(kOneAppliance) + R"(
    send_tcp_reset: { on_unhealthy: true, on_deregistration: true })"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_TRUE(r.cfg.server_groups[0].send_tcp_reset.on_unhealthy);
  EXPECT_TRUE(r.cfg.server_groups[0].send_tcp_reset.on_deregistration);
  // on_idle_timeout is a listener's (AWS: a listener attribute), not a group's.
  Result g = parse(withGroup(std::string(kOneAppliance) + R"(
    send_tcp_reset: { on_idle_timeout: true })"));
  EXPECT_FALSE(g.ok);
  EXPECT_TRUE(hasError(g, "server_groups[0].send_tcp_reset.on_idle_timeout", {}));
}

TEST(ConfigErrors, FailoverAndDraining) {
  Result r = parse(withGroup(std::string(kOneAppliance) + R"(
    failover_mode: rebalanced
    connection_draining: { enabled: yes please, timeout: 3601s, grace: 5 })"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasError(r, "server_groups[0].failover_mode", {"rebalanced", "no_rebalance or rebalance"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].connection_draining.enabled", {"yes please"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].connection_draining.timeout", {"3601s", "1..3600"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].connection_draining.grace", {}));
  Result z = parse(withGroup(std::string(kOneAppliance) + R"(
    connection_draining: { timeout: 0 })"));
  EXPECT_TRUE(hasError(z, "server_groups[0].connection_draining.timeout", {"0"}));
  Result l = parse(withGroup(std::string(kOneAppliance) + R"(
    connection_draining: [1, 2])"));
  EXPECT_TRUE(hasError(l, "server_groups[0].connection_draining", {"expected a map"}));
}

}  // namespace
}  // namespace gwlb::ctl

// ---------------------------------------------------------------------------
// Every key's bad values (issue 9): one error, at the key's path, that says
// what is wrong. The tables below are checked against configKeyPaths(), the
// loader's own key list: a key without a bad-value case fails KeyTable.

#include <yaml-cpp/yaml.h>

#include <set>

namespace gwlb::ctl {
namespace {

// kFull's prefix file: empty (a valid prefix list), made before any test
// reads kFull; several runs at once write the same nothing.
const bool kEmptyPrefixFile = [] {
  FILE* f = std::fopen("/tmp/gwlb-test-config-empty-prefixes.txt", "w");
  return f && std::fclose(f) == 0;
}();

// A valid config that sets every key the loader knows.
const char* const kFull = R"(
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe,
        underlay_port: 0, underlay_mtu: 1500, icmp_rate_per_s: 100, tcp_reset_rate_per_s: 1000,
        flow_hash_secret: 00112233445566778899aabbccddeeff,
        ports: [ { id: 0, role: both, mac: 02:00:00:00:00:01 }, { id: 1, role: router, mac: 02:00:00:00:00:02 } ],
        ipv6_addresses: [ "2001:db8::1", "fe80::1" ], underlay_ipv6: "2001:db8:f::1",
        exception_path: { enabled: true, name_prefix: gw }, idle_sleep_us: 0,
        geneve_option_class: 0xFF02 }
server_groups:
  - name: g0
    stickiness: 5-tuple
    geneve: { format: aws, vni: 7, endpoint_id: 1, attachment_id: 2 }
    encapsulation: geneve
    vxlan: { internal: { port: 10800, vni: 800 }, external: { port: 10801, vni: 801 } }
    maglev_table_size: 65537
    tcp_idle_timeout: 350s
    other_idle_timeout: 120
    servers: [ { address: 192.0.2.10, weight: 100, mac: 02:00:00:00:00:10 }, { address: 192.0.2.11 } ]
    health_check: { enabled: true, protocol: https, port: 443, path: /health, domain: fw.example,
                    http_codes: [http_2xx, 200-299], interval: 2s, timeout: 1s, healthy_threshold: 3,
                    unhealthy_threshold: 3, interface: mgmt0, source: 192.0.2.1, verify: true, ca_file: /etc/ca.pem,
                    keep_alive: true, jitter: true, forwarding: true, forwarding_probe: { src: 198.18.0.1, dst: 198.18.0.2 },
                    passive: { enabled: true, min_packets: 100, window: 5s, max_ejection_percent: 50,
                               base_ejection_time: 30s, max_ejection_time: 300s },
                    dampening: { enabled: true, penalty: 1000, suppress: 3000, reuse: 750, half_life: 60,
                                 max_hold: 600 } }
    when_all_unhealthy: fail_open
    failover_mode: rebalance
    connection_draining: { enabled: true, timeout: 300 }
    send_tcp_reset: { on_unhealthy: true, on_deregistration: true }
    slow_start: 30s
  - name: g1
    servers: [ { address: 192.0.2.20 } ]
  - name: g2
    servers: [ { address: 192.0.2.30 } ]
dataplane: { workers: 1, burst: 32, flow_table_size: 65536, new_flows_per_s: 100, mbufs: 4096, rx_queue_size: 1024,
             tx_queue_size: 1024, checksum_offload: true }
eal: ["--no-huge"]
log_level: info
control: { socket: /run/gwlbd/gwlbd.sock, socket_mode: "0660", socket_group: adm }
metrics: { listen: "127.0.0.1:9100" }
health_aggregation_policies: [ { name: p, min_healthy_percent: 50, min_healthy_count: 1 } ]
health_sources: [ { name: s0, server_group: g0, policy: p }, { name: s1, server_group: g1 } ]
composite_health_checks: [ { name: c0, sources: [s0], destination: l, dry_run: false } ]
listeners: [ { name: l, server_groups: [g0, g1], failback_hold: 30s, when_all_unhealthy: drop,
               send_tcp_reset: { on_idle_timeout: true, on_fleet_view_incomplete: false },
               appliance_bypass: { allow: true, max_seconds: 600 } } ]
traffic_classes: [ { name: t, match: { ingress_ports: [1], vlans: [0, 100], prefixes: [10.0.0.0/8, "2001:db8::/32"],
                                       prefixes_file: /tmp/gwlb-test-config-empty-prefixes.txt,
                                       protocols: [tcp, 47], l4_ports: [80, 1000-2000] },
                     action: inspect, listener: l, tag: 7, mirror: { group: g2, truncate: 128, sample: 2 } } ]
tags: [ { name: t1, value: 7 } ]
health_endpoint: { listen: "127.0.0.1:8081" }
fleet: { node_name: gw-1, secret: 00112233445566778899AABBCCDDEEFF, secret_file: /etc/gwlb/fleet.key,
         sync_listen: "10.0.0.1:7946", peers: ["10.0.0.2:7946", "10.0.0.3:7946"],
         warm_start_timeout: 20s, warm_start_connect_timeout: 1500ms, warm_start_idle_timeout: 4s,
         bird: { socket: /run/bird/bird.ctl, protocols: [gwlb_routes, gwlb_routes6] }, grace_period: 5s }
)";

// "a.b[2].c" -> {"a", "b", "[2]", "c"}.
std::vector<std::string> splitPath(const std::string& path) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : path) {
    if (c == '.' || c == '[') {
      if (!cur.empty()) out.push_back(cur);
      cur = c == '[' ? "[" : "";
    } else if (c == ']') {
      out.push_back(cur + "]");
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// "server_groups[1].servers[0].mac" -> "server_groups[].servers[].mac".
std::string schemaPath(const std::string& path) {
  std::string out;
  bool in_index = false;
  for (char c : path) {
    if (c == '[') in_index = true, out += '[';
    else if (c == ']') in_index = false, out += ']';
    else if (!in_index) out += c;
  }
  return out;
}

// The node at `path` in `root` (rebinding, never assigning, as yaml-cpp needs).
YAML::Node nodeAt(YAML::Node root, const std::string& path) {
  YAML::Node cur;
  cur.reset(root);
  for (const std::string& part : splitPath(path)) {
    YAML::Node next;
    if (part[0] == '[') next.reset(cur[std::stoul(part.substr(1))]);
    else next.reset(cur[part]);
    cur.reset(next);
  }
  return cur;
}

// kFull with the value at `path` replaced by the YAML text `value`.
std::string fullWith(const std::string& path, const std::string& value) {
  YAML::Node root = YAML::Load(kFull);
  std::vector<std::string> parts = splitPath(path);
  std::string last = parts.back();
  parts.pop_back();
  std::string parent;
  for (const std::string& p : parts) parent += (p[0] == '[' || parent.empty() ? "" : ".") + p;
  YAML::Node at = nodeAt(root, parent);
  YAML::Node v = YAML::Load(value);
  if (last[0] == '[') at[std::stoul(last.substr(1))] = v;
  else at[last] = v;
  YAML::Emitter e;
  e << root;
  return e.c_str();
}

// Every error's path and message is valid UTF-8 (they end up in JSON replies).
bool allUtf8(const std::vector<ConfigError>& errs) {
  auto ok = [](const std::string& s) {
    for (size_t i = 0; i < s.size();) {
      unsigned char c = static_cast<unsigned char>(s[i]);
      size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      if (!n || i + n > s.size()) return false;
      for (size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
      i += n;
    }
    return true;
  };
  return std::all_of(errs.begin(), errs.end(),
                     [&](const ConfigError& e) { return ok(e.path) && ok(e.message); });
}

struct BadValue {
  std::string path;                    // concrete key path set to `value` in kFull
  std::string value;                   // YAML text
  std::vector<std::string> needles;    // in the message
  std::string error_path = "";         // where the error is, if not `path`
  bool only = true;                    // no other error (false: consequences elsewhere too)
};

const std::vector<BadValue>& badValues() {
  static const std::vector<BadValue> v = {
      // Sections of the wrong shape.
      {"node", "5", {"expected a map", "underlay_ip"}},
      {"server_groups", "[]", {"at least one server group"}, "", false},
      {"dataplane", "[1]", {"expected a map", "workers"}},
      {"eal", "[[1]]", {"expected a string, got a list"}, "eal[0]"},
      {"eal", "--no-huge", {"expected a list of strings"}},
      {"log_level", "verbose", {"'verbose'", "trace, debug, info"}},
      {"control", "/run/x.sock", {"expected a map", "socket"}},
      {"metrics", "9100", {"expected a map", "listen"}},
      {"health_aggregation_policies", "{ name: p }", {"expected a list of policies, got a map"}},
      {"health_sources", "s0", {"expected a list of health sources"}},
      {"composite_health_checks", "{}", {"expected a list of composite health checks"}},
      {"listeners", "l", {"expected a list of listeners"}},
      {"health_endpoint", "[8081]", {"expected a map", "listen"}},
      {"fleet", "gw-1", {"expected a map", "node_name"}},
      {"fleet.node_name", "'gw 1'", {"not a valid node name"}},
      {"fleet.secret", "0123456789abcdef", {"32 hexadecimal digits", "16 characters", "not shown"}},
      {"fleet.secret", "ffeeddccbbaa99887766554433221100",
       {"another key than node.flow_hash_secret", "values not shown"}},
      {"fleet.secret_file", "etc/gwlb/fleet.key", {"not an absolute path"}},
      // Flow state sync.
      {"fleet.sync_listen", "10.0.0.1", {"'10.0.0.1' is not address:port", "7946"}, "", false},
      {"fleet.sync_listen", "'10.0.0.1:0'", {"is not address:port"}, "", false},
      {"fleet.sync_listen", "'[2001:db8::1]:99999'", {"is not address:port"}, "", false},
      {"fleet.peers", "10.0.0.2:7946", {"expected a list"}},
      {"fleet.peers", "[\"10.0.0.2\"]", {"'10.0.0.2' is not address:port"}, "fleet.peers[0]"},
      {"fleet.peers", "[\"\"]", {"is empty"}, "fleet.peers[0]"},
      {"fleet.peers", "[\"10.0.0.2:7946\", \"10.0.0.2:7946\"]", {"listed twice"}, "fleet.peers[1]"},
      {"fleet.peers", "[\"10.0.0.1:7946\"]", {"this node's own fleet.sync_listen"}, "fleet.peers[0]"},
      {"fleet.warm_start_timeout", "0", {"0"}},
      {"fleet.warm_start_timeout", "11m", {"660"}},
      {"fleet.warm_start_connect_timeout", "50ms", {"100 ms"}},
      {"fleet.warm_start_connect_timeout", "2m", {"60 s"}},
      {"fleet.warm_start_idle_timeout", "0", {"100 ms"}},
      {"fleet.warm_start_idle_timeout", "11m", {"600 s"}},
      // fleet: route announcement through BIRD
      {"fleet.bird", "/run/bird/bird.ctl", {"expected a map", "socket"}},
      {"fleet.bird.socket", "bird.ctl", {"'bird.ctl'", "absolute socket path"}},
      {"fleet.bird.socket", "''", {"absolute socket path"}},
      {"fleet.bird.protocols", "gwlb_routes", {"expected a list of BIRD protocol names"}},
      {"fleet.bird.protocols", "[]", {"1..16"}},
      {"fleet.bird.protocols", "['gwlb routes']", {"not a BIRD protocol name"}, "fleet.bird.protocols[0]"},
      {"fleet.bird.protocols", "['1st']", {"not a BIRD protocol name"}, "fleet.bird.protocols[0]"},
      {"fleet.bird.protocols", "['x;disable all']", {"not a BIRD protocol name"}, "fleet.bird.protocols[0]"},
      {"fleet.bird.protocols", "[a, a]", {"already fleet.bird.protocols[0]"}, "fleet.bird.protocols[1]"},
      {"fleet.grace_period", "3601", {"0..3600"}},
      {"fleet.grace_period", "soon", {"not a"}},
      {"node.idle_sleep_us", "10001", {"0..10000"}},
      {"node.idle_sleep_us", "-5", {"negative"}},
      {"node.geneve_option_class", "0x0108", {"AWS's option class", "0xFF01"}},
      {"node.geneve_option_class", "0x10000", {"'0x10000'", "0xffff"}},
      // node
      {"node.underlay_ip", "2001:db8::1", {"IPv6", "IPv4"}},
      {"node.underlay_ipv6", "192.0.2.9", {"is IPv4", "node.underlay_ip"}},
      {"node.underlay_ipv6", "ff02::1", {"multicast"}},
      {"node.underlay_ip", "02:00:00:00:00:01", {"is a MAC address", "IPv4"}},
      {"node.underlay_ip", "192.0.2.300", {"not an IP address"}},
      {"node.underlay_ip", "224.0.0.1", {"multicast"}},
      {"node.underlay_ip", "0.0.0.0", {"not a usable address"}},
      {"node.underlay_mac", "192.0.2.1", {"is an IP address", "MAC"}},
      {"node.underlay_mac", "ff:ff:ff:ff:ff:ff", {"multicast/broadcast"}},
      {"node.underlay_mac", "00:00:00:00:00:00", {"not usable"}},
      {"node.gateway_mac", "01:00:5e:00:00:01", {"unicast"}},
      {"node.gateway_mac", "gw", {"not a MAC address"}},
      {"node.underlay_port", "-1", {"negative", "0..65535"}},
      {"node.ports", "5", {"expected a list of ports"}},
      {"node.ports[0].id", "-1", {"negative", "0..65535"}},
      {"node.ports[1].id", "65536", {"out of range", "0..65535"}},
      {"node.ports[1].id", "0", {"already node.ports[0]", "once"}},
      {"node.ports[1].role", "routers", {"'routers'", "router, appliance or both"}},
      {"node.ports[0].role", "router", {"node.underlay_port", "appliance or both"}},
      {"node.ports[1].mac", "ff:ff:ff:ff:ff:ff", {"multicast/broadcast"}},
      {"node.ports[1].mac", "port1", {"not a MAC address"}},
      {"node.ports[0].mac", "02:00:00:00:00:99", {"node.underlay_mac", "02:00:00:00:00:01"}},
      {"node.ipv6_addresses", "2001:db8::1", {"expected a list of IPv6 addresses"}},
      {"node.ipv6_addresses", "[192.0.2.9]", {"not IPv6", "node.underlay_ip"}, "node.ipv6_addresses[0]"},
      {"node.ipv6_addresses", "[ff02::1]", {"multicast"}, "node.ipv6_addresses[0]"},
      {"node.ipv6_addresses", "['::']", {"not a usable address"}, "node.ipv6_addresses[0]"},
      {"node.ipv6_addresses", "[2001:db8::zz]", {"not an IP address", "IPv6"}, "node.ipv6_addresses[0]"},
      {"node.exception_path", "on", {"expected a map"}},
      {"node.exception_path.enabled", "yes please", {"true or false"}},
      {"node.exception_path.name_prefix", "a-very-long-prefix", {"interface name prefix", "1..10"}},
      {"node.exception_path.name_prefix", "''", {"interface name prefix"}},
      {"node.exception_path.name_prefix", "gw/0", {"interface name prefix"}},
      {"node.ipv6_addresses", "[[1]]", {"expected an IPv6 address"}, "node.ipv6_addresses[0]"},
      {"node.ipv6_addresses", "['2001:db8::1', '2001:db8::1']", {"already node.ipv6_addresses[0]"},
       "node.ipv6_addresses[1]"},
      {"node.underlay_port", "65536", {"out of range", "0..65535"}},
      {"node.underlay_port", "99999999999999999999999", {"out of range"}},
      {"node.underlay_mtu", "575", {"576..9216"}},
      {"node.underlay_mtu", "1.5e3", {"not a number"}},
      {"node.icmp_rate_per_s", "100001", {"0..100000"}},
      {"node.tcp_reset_rate_per_s", "1000001", {"0..1000000"}},
      {"node.flow_hash_secret", "0123456789abcdef", {"32 hexadecimal digits", "16 characters", "not shown"}},
      {"node.flow_hash_secret", "0123456789abcdef0123456789abcdeg", {"32 hexadecimal digits"}},
      // server_groups[]
      {"server_groups[0].name", "'fire walls'", {"not a valid group name"}, "", false},  // g0 gone
      {"server_groups[0].name", "''", {"required"}, "", false},
      {"server_groups[1].name", "g0", {"already the name of server_groups[0]"}, "", false},
      {"server_groups[0].stickiness", "4-tuple", {"'4-tuple'", "5-tuple, 3-tuple, 2-tuple"}},
      {"server_groups[0].geneve", "aws", {"expected a map", "format"}},
      {"server_groups[0].geneve.format", "vxlan", {"'vxlan'", "aws, ethernet"}},
      {"server_groups[0].geneve.vni", "0x1000000", {"out of range", "0xffffff"}},
      {"server_groups[0].geneve.vni", "-1", {"negative"}},
      {"server_groups[0].geneve.endpoint_id", "0x10000000000000000", {"out of range"}},
      {"server_groups[0].geneve.endpoint_id", "abc", {"not a number"}},
      {"server_groups[0].geneve.attachment_id", "18446744073709551616", {"out of range"}},
      {"server_groups[0].encapsulation", "gre", {"'gre'", "geneve, vxlan"}},
      {"server_groups[0].vxlan", "10800", {"expected a map"}},
      {"server_groups[0].vxlan.internal", "10800", {"expected a map"}},
      {"server_groups[0].vxlan.external", "[1]", {"expected a map"}},
      {"server_groups[0].vxlan.internal.port", "65536", {"out of range"}},
      {"server_groups[0].vxlan.external.port", "0", {"out of range"}},
      {"server_groups[0].vxlan.internal.vni", "0x1000000", {"out of range", "0xffffff"}},
      {"server_groups[0].vxlan.external.vni", "-1", {"negative"}},
      {"server_groups[0].maglev_table_size", "65536", {"not prime", "65537"}},
      {"server_groups[0].maglev_table_size", "4294967296", {"out of range"}},
      {"server_groups[0].tcp_idle_timeout", "59", {"60..6000 seconds"}},
      {"server_groups[0].tcp_idle_timeout", "2h", {"7200 s", "out of range"}},
      {"server_groups[0].tcp_idle_timeout", "-60", {"negative"}},
      {"server_groups[0].other_idle_timeout", "99999999999s", {"out of range"}},
      {"server_groups[0].other_idle_timeout", "10x", {"not a duration"}},
      {"server_groups[0].servers", "[]", {"no servers"}},
      {"server_groups[0].servers", "{ address: 192.0.2.10 }", {"expected a list of servers"}},
      {"server_groups[0].servers[0].address", "192.0.2.11", {"listed twice", "servers[0]"},
       "server_groups[0].servers[1].address"},
      {"server_groups[0].servers[0].address", "192.0.2.20", {"already in server group 'g0'"},
       "server_groups[1].servers[0].address"},
      {"server_groups[0].servers[0].address", "ff02::10", {"multicast", "IPv6"}},
      {"server_groups[0].servers[0].address", "02:00:00:00:00:10", {"is a MAC address"}},
      {"server_groups[0].servers[0].address", "192.0.2.1", {"node.underlay_ip"}},
      {"server_groups[0].servers[0].address", "255.255.255.255", {"broadcast"}},
      {"server_groups[0].servers[0].weight", "10001", {"0..10000"}},
      {"server_groups[0].servers[0].weight", "-1", {"negative"}},
      {"server_groups[0].servers[0].mac", "ff:ff:ff:ff:ff:ff", {"unicast"}},
      {"server_groups[0].servers[0].mac", "192.0.2.10", {"is an IP address"}},
      {"server_groups[0].health_check", "yes", {"expected a map", "protocol"}},
      {"server_groups[0].health_check.enabled", "yes", {"not true or false"}},
      {"server_groups[0].health_check.protocol", "icmp", {"tcp, http, https"}},
      {"server_groups[0].health_check.port", "0", {"1..65535"}},
      {"server_groups[0].health_check.port", "65536", {"1..65535"}},
      {"server_groups[0].health_check.path", "health", {"starting with '/'"}},
      {"server_groups[0].health_check.domain", "'bad domain!'", {"not a domain"}},
      {"server_groups[0].health_check.http_codes", "[]", {"at least one"}},
      {"server_groups[0].health_check.http_codes", "[http_6xx]", {"'http_6xx'"},
       "server_groups[0].health_check.http_codes[0]"},
      {"server_groups[0].health_check.interval", "5ms", {"out of range", "10 ms to 300 s"}},
      {"server_groups[0].health_check.interval", "-1s", {"negative"}},
      {"server_groups[0].health_check.interval", "99999999999ms", {"out of range"}},
      {"server_groups[0].health_check.timeout", "301s", {"10 ms to 300 s"}},
      {"server_groups[0].health_check.healthy_threshold", "1", {"2..10"}},
      {"server_groups[0].health_check.unhealthy_threshold", "11", {"2..10"}},
      {"server_groups[0].health_check.interface", "eth0/1", {"is not an interface name"}},
      {"server_groups[0].health_check.interface", "a-very-long-name0", {"1..15 bytes"}},
      {"server_groups[0].health_check.interface", "[eth0]", {"expected an interface name"}},
      {"server_groups[0].health_check.source", "2001:db8::1", {"IPv6", "IPv4"}},
      {"server_groups[0].health_check.source", "02:00:00:00:00:01", {"is a MAC address"}},
      {"server_groups[0].health_check.source", "0.0.0.0", {"not a usable address"}},
      {"server_groups[0].health_check.verify", "maybe", {"not true or false"}},
      {"server_groups[0].health_check.verify", "false", {"verify is false"},
       "server_groups[0].health_check.ca_file"},
      {"server_groups[0].health_check.domain", "fw..example", {"labels"}},
      {"server_groups[0].health_check.ca_file", "''", {"required when verify is true"}},
      {"server_groups[0].health_check.ca_file", "[a]", {"expected a file path"}},
      {"server_groups[0].health_check.jitter", "1", {"not true or false"}},
      {"server_groups[0].health_check.keep_alive", "yes please", {"not true or false"}},
      {"server_groups[0].health_check.forwarding", "1", {"not true or false"}},
      {"server_groups[0].health_check.forwarding_probe", "true", {"expected a map", "src"}},
      {"server_groups[0].health_check.forwarding_probe.src", "2001:db8::1", {"is IPv6 but dst is IPv4", "one family"}},
      {"server_groups[0].health_check.forwarding_probe.dst", "0.0.0.0", {"not a usable address"}},
      {"server_groups[0].health_check.forwarding_probe.dst", "198.18.0.1", {"same address as src"}},
      {"server_groups[0].health_check.passive", "true", {"expected a map", "enabled"}},
      {"server_groups[0].health_check.passive.enabled", "on", {"not true or false"}},
      {"server_groups[0].health_check.passive.min_packets", "0", {"1..1000000000"}},
      {"server_groups[0].health_check.passive.window", "50ms", {"out of range"}},
      {"server_groups[0].health_check.passive.base_ejection_time", "3601s", {"out of range"}},
      {"server_groups[0].health_check.passive.max_ejection_time", "86401s", {"out of range"}},
      {"server_groups[0].health_check.passive.max_ejection_percent", "101", {"0..100"}},
      {"server_groups[0].health_check.dampening", "1", {"expected a map", "enabled"}},
      {"server_groups[0].health_check.dampening.enabled", "on", {"not true or false"}},
      {"server_groups[0].health_check.dampening.penalty", "0", {"1..100000"}},
      {"server_groups[0].health_check.dampening.suppress", "100001", {"1..100000"}},
      {"server_groups[0].health_check.dampening.reuse", "0", {"1..100000"}},
      {"server_groups[0].health_check.dampening.half_life", "3601", {"1..3600"}},
      {"server_groups[0].health_check.dampening.max_hold", "0", {"1..86400"}},
      {"server_groups[0].slow_start", "3601", {"0..3600"}},
      {"server_groups[0].when_all_unhealthy", "fail_closed", {"fail_open or drop"}},
      {"server_groups[0].failover_mode", "rehash", {"no_rebalance or rebalance"}},
      {"server_groups[0].connection_draining", "true", {"expected a map", "enabled"}},
      {"server_groups[0].connection_draining.enabled", "on", {"not true or false"}},
      {"server_groups[0].connection_draining.timeout", "3601", {"1..3600"}},
      {"server_groups[0].connection_draining.timeout", "0", {"1..3600"}},
      {"server_groups[0].send_tcp_reset", "true", {"expected a map"}},
      {"server_groups[0].send_tcp_reset.on_unhealthy", "yes please", {"not true or false"}},
      {"server_groups[0].send_tcp_reset.on_deregistration", "1", {"not true or false"}},
      // dataplane
      {"dataplane.workers", "0", {"1..64"}},
      {"dataplane.workers", "65", {"1..64"}},
      {"dataplane.burst", "257", {"1..256"}},
      {"dataplane.flow_table_size", "1023", {"1024.."}},
      {"dataplane.flow_table_size", "134217729", {"..134217728"}},
      {"dataplane.new_flows_per_s", "-1", {"negative"}},
      {"dataplane.new_flows_per_s", "100000001", {"0..100000000"}},
      {"dataplane.mbufs", "16777217", {"..16777216"}},
      {"dataplane.rx_queue_size", "63", {"64..16384"}},
      {"dataplane.tx_queue_size", "16385", {"64..16384"}},
      {"dataplane.checksum_offload", "auto", {"true or false"}},
      // control
      {"control.socket", "relative.sock", {"absolute socket path"}},
      {"control.socket", "/" + std::string(110, 's'), {"at most 107 bytes"}},
      {"control.socket", "/run/", {"absolute socket path"}},
      {"control.socket_mode", "0999", {"not an octal file mode"}},
      {"control.socket_mode", "-660", {"not an octal file mode"}},
      {"control.socket_mode", "1777", {"not a file mode", "0..0777"}},
      {"control.socket_group", "-wheel", {"not a group name"}},
      {"control.socket_group", "'bad group'", {"not a group name"}},
      {"control.socket_group", "4294967295", {"not a group name"}},
      // metrics, health_endpoint
      {"metrics.listen", "9100", {"not address:port"}},
      {"metrics.listen", "localhost:9100", {"not address:port"}},
      {"metrics.listen", "127.0.0.1:0", {"not address:port"}},
      {"metrics.listen", "'127.0.0.1:8081'", {"overlaps metrics.listen"}, "health_endpoint.listen"},
      {"health_endpoint.listen", "'[::1]'", {"not address:port"}},
      {"health_endpoint.listen", "'0.0.0.0:9100'", {"overlaps metrics.listen"}},
      {"health_endpoint.listen", "'[::]:9100'", {"overlaps metrics.listen"}},
      // regions
      {"health_aggregation_policies[0].name", "''", {"required"}, "", false},
      {"health_aggregation_policies[0].min_healthy_percent", "101", {"0..100"}},
      {"health_aggregation_policies[0].min_healthy_count", "4097", {"0..4096"}},
      {"health_sources[0].name", "c0", {"also the name of a composite"}, "", false},  // s0 gone
      {"health_sources[0].server_group", "nope", {"'nope' is not a server group"}},
      {"health_sources[0].policy", "nope", {"not a policy"}},
      {"composite_health_checks[0].name", "'bad!'", {"not a valid name"}},
      {"composite_health_checks[0].sources", "[]", {"needs 1..16"}},
      {"composite_health_checks[0].sources", "[c0]", {"is a composite"},
       "composite_health_checks[0].sources[0]"},
      {"composite_health_checks[0].sources", "[s0, s0]", {"listed twice"},
       "composite_health_checks[0].sources[1]"},
      {"composite_health_checks[0].destination", "nope", {"not a listener"}},
      {"composite_health_checks[0].dry_run", "sometimes", {"not true or false"}},
      {"listeners[0].name", "''", {"required"}, "", false},
      {"listeners[0].server_groups", "[]", {"needs 1..16"}},
      {"listeners[0].server_groups", "[g0, nope]", {"not a server group"},
       "listeners[0].server_groups[1]"},
      {"listeners[0].server_groups", "[g0, g0]", {"listed twice"}, "listeners[0].server_groups[1]"},
      {"server_groups[1].stickiness", "2-tuple", {"share their stickiness"},
       "listeners[0].server_groups[1]"},
      {"listeners[0].failback_hold", "2h", {"0..3600 seconds"}},
      {"listeners[0].when_all_unhealthy", "panic", {"fail_open or drop"}},
      {"listeners[0].send_tcp_reset", "[1]", {"expected a map"}},
      {"listeners[0].send_tcp_reset.on_idle_timeout", "sometimes", {"not true or false"}},
      {"listeners[0].send_tcp_reset.on_fleet_view_incomplete", "sometimes", {"not true or false"}},
      {"listeners[0].appliance_bypass", "[1]", {"expected a map"}},
      {"listeners[0].appliance_bypass.allow", "sometimes", {"not true or false"}},
      {"listeners[0].appliance_bypass.max_seconds", "2h", {"0..3600 seconds"}},
      // traffic_classes[] (every value in tests/unit/config/test_config_classes.cc)
      {"traffic_classes", "t", {"expected a list of traffic classes"}},
      {"traffic_classes[0].name", "''", {"required"}},
      {"traffic_classes[0].match", "any", {"expected a map", "vlans"}},
      {"traffic_classes[0].match.ingress_ports", "[0x10000]", {"out of range"}, "traffic_classes[0].match.ingress_ports[0]"},
      {"traffic_classes[0].match.vlans", "[4095]", {"0..4094"}, "traffic_classes[0].match.vlans[0]"},
      {"traffic_classes[0].match.prefixes", "[10.0.0.1/8]", {"host bits"}, "traffic_classes[0].match.prefixes[0]"},
      {"traffic_classes[0].match.prefixes_file", "/nonexistent/gwlb-prefixes.txt", {"cannot open"}},
      {"traffic_classes[0].match.protocols", "[gre]", {"not a protocol"}, "traffic_classes[0].match.protocols[0]"},
      {"traffic_classes[0].match.l4_ports", "[9-8]", {"empty range"}, "traffic_classes[0].match.l4_ports[0]"},
      {"traffic_classes[0].action", "allow", {"inspect, bypass or drop"}},
      {"traffic_classes[0].listener", "nope", {"not a listener"}},
      {"traffic_classes[0].tag", "nobody", {"neither a 32-bit number"}},
      {"traffic_classes[0].mirror", "[1]", {"expected a map"}},
      {"traffic_classes[0].mirror.group", "nope", {"not a server group"}},
      {"traffic_classes[0].mirror.truncate", "10", {"too short"}},
      {"traffic_classes[0].mirror.sample", "0", {"1..1000000"}},
      {"tags", "t", {"expected a list of tags"}},
      {"tags[0].name", "'9x'", {"not starting with a digit"}},
      {"tags[0].value", "0x100000000", {"out of range"}},
  };
  return v;
}

TEST(ConfigKeys, FullConfigIsValid) {
  Result r = parse(kFull);
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_EQ(r.cfg.control.socket_group, "adm");
  ASSERT_EQ(r.cfg.node.ports.size(), 2u);
  EXPECT_EQ(r.cfg.node.ports[1].id, 1);
  EXPECT_EQ(r.cfg.node.ports[1].role, PortRole::kRouter);
  EXPECT_EQ(r.cfg.node.ports[1].mac, MacAddr::parse("02:00:00:00:00:02"));
  EXPECT_EQ(r.cfg.node.ports[0].role, PortRole::kBoth);
  ASSERT_EQ(r.cfg.node.ipv6_addresses.size(), 2u);
  EXPECT_EQ(r.cfg.node.ipv6_addresses[1], IpAddr::parse("fe80::1"));
}

// node.ports without a role or MAC, and without the section: the defaults
// apply when the snapshot is built (control/engine/snapshot_builder.h resolvePorts).
TEST(ConfigKeys, PortEntriesNeedOnlyAnId) {
  Result r = parse(fullWith("node.ports", "[ { id: 3 } ]"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  ASSERT_EQ(r.cfg.node.ports.size(), 1u);
  EXPECT_EQ(r.cfg.node.ports[0].id, 3);
  EXPECT_FALSE(r.cfg.node.ports[0].role.has_value());
  EXPECT_FALSE(r.cfg.node.ports[0].mac.has_value());
  EXPECT_TRUE(onlyError(parse(fullWith("node.ports", "[ { role: appliance } ]")), "node.ports[0].id",
                        {"required key is missing"}));
}

// Every key the loader accepts has at least one bad-value case here.
TEST(ConfigKeys, KeyTable) {
  std::set<std::string> covered;
  for (const BadValue& b : badValues()) covered.insert(schemaPath(b.path));
  std::vector<std::string> keys = configKeyPaths();
  EXPECT_GT(keys.size(), 70u);
  for (const std::string& k : keys) EXPECT_TRUE(covered.count(k)) << "no bad-value case for " << k;
  std::set<std::string> known(keys.begin(), keys.end());
  for (const std::string& c : covered) EXPECT_TRUE(known.count(c)) << "not a config key: " << c;
}

TEST(ConfigKeys, EveryBadValueIsOneErrorAtItsPath) {
  for (const BadValue& b : badValues()) {
    SCOPED_TRACE(b.path + " = " + b.value);
    Result r = parse(fullWith(b.path, b.value));
    const std::string at = b.error_path.empty() ? b.path : b.error_path;
    std::initializer_list<std::string> none = {};
    auto res = b.only ? onlyError(r, at, none) : hasError(r, at, none);
    EXPECT_TRUE(res);
    for (const ConfigError& e : r.errors) {
      if (e.path != at) continue;
      for (const std::string& n : b.needles) {
        EXPECT_NE(e.message.find(n), std::string::npos) << "'" << e.message << "' lacks '" << n << "'";
      }
    }
    EXPECT_TRUE(allUtf8(r.errors));
  }
}

// Every key given a value of the wrong kind (a map for a scalar, a scalar for
// a list or map): one error at the key's path that says what was expected.
TEST(ConfigKeys, EveryKeyRejectsTheWrongKind) {
  YAML::Node full = YAML::Load(kFull);
  for (const std::string& k : configKeyPaths()) {
    std::string path;
    for (char c : k) path += c == ']' ? "0]" : std::string(1, c);
    SCOPED_TRACE(path);
    YAML::Node cur = nodeAt(full, path);
    ASSERT_TRUE(cur.IsDefined() && !cur.IsNull()) << "kFull does not set " << path;
    Result r = parse(fullWith(path, cur.IsScalar() ? "{ x: 1 }" : "oops"));
    EXPECT_TRUE(onlyError(r, path, {"expected"}));
  }
}

// An unknown key in every section: one error naming it.
TEST(ConfigKeys, EverySectionRejectsUnknownKeys) {
  std::set<std::string> sections;
  for (const std::string& k : configKeyPaths()) {
    size_t cut = k.rfind('.');
    sections.insert(cut == std::string::npos ? "" : k.substr(0, cut));
  }
  EXPECT_GE(sections.size(), 15u);
  for (const std::string& s : sections) {
    std::string path;
    for (char c : s) path += c == ']' ? "0]" : std::string(1, c);
    const std::string key = path.empty() ? "bogus_key" : path + ".bogus_key";
    SCOPED_TRACE(key);
    EXPECT_TRUE(onlyError(parse(fullWith(key, "1")), key, {"unknown key 'bogus_key'"}));
  }
}

TEST(ConfigKeys, EmptyRequiredSections) {
  Result r = parse(fullWith("node", "{}"));
  EXPECT_TRUE(hasError(r, "node.underlay_ip", {"is required", "node.underlay_ipv6"}));
  EXPECT_TRUE(hasError(r, "node.underlay_mac", {"required key is missing"}));
  EXPECT_EQ(r.errors.size(), 2u) << formatErrors(r.errors);
  EXPECT_TRUE(onlyError(parse(fullWith("server_groups[0].servers[0]", "{}")),
                        "server_groups[0].servers[0].address", {"required key is missing"}));
}

// Text that is not UTF-8: one error at the value's path, or at the map holding
// a key that is not UTF-8; messages stay UTF-8 (they go into JSON replies).
TEST(ConfigKeys, NonUtf8) {
  std::string bad_value = std::string(kFull) + "\xff";  // placeholder to keep kFull unchanged
  std::string text = withGroup(std::string(kOneAppliance)) + "log_level: \"in\xff\xfe\"\n";
  Result r = parse(text);
  EXPECT_TRUE(onlyError(r, "log_level", {"not valid UTF-8", "\\xff"}));
  EXPECT_TRUE(allUtf8(r.errors));
  Result k = parse(withGroup(std::string(kOneAppliance)) + "dataplane: { \"w\xc3\": 1 }\n");
  EXPECT_TRUE(onlyError(k, "dataplane", {"not valid UTF-8"}));
  EXPECT_TRUE(allUtf8(k.errors));
  Result eal = parse(withGroup(std::string(kOneAppliance)) + "eal: [\"--x\xed\xa0\x80\"]\n");  // a surrogate
  EXPECT_TRUE(onlyError(eal, "eal[0]", {"not valid UTF-8"}));
  // A long valid name with a two-byte character at the quoting cut: never split.
  Result cut = parse(withGroup("name: \"" + std::string(63, 'a') + "\xc3\xa9\"\n    servers: [{ address: 192.0.2.10 }]"));
  EXPECT_TRUE(onlyError(cut, "server_groups[0].name", {"not a valid group name"}));
  EXPECT_TRUE(allUtf8(cut.errors)) << formatErrors(cut.errors);
  // Valid UTF-8 elsewhere is fine.
  EXPECT_TRUE(parse(withGroup(std::string(kOneAppliance)) + "eal: [\"--x=caf\xc3\xa9\"]\n").ok);
  (void)bad_value;
}

// YAML aliases repeat nodes without repeating text: loading stays bounded
// because lists past their limit are not walked and errors are capped.
TEST(ConfigKeys, AliasBombIsBounded) {
  std::string t = std::string(kNode) + "x_servers: &s [";
  for (int i = 0; i < 4096; ++i) t += std::string(i ? ", " : "") + "*srv";
  t = std::string(kNode) + "anchors:\n  - &srv { address: 10.0.0.1 }\n  - &s [";
  for (int i = 0; i < 4096; ++i) t += std::string(i ? ", " : "") + "*srv";
  t += "]\n  - &g { name: g, servers: *s }\nserver_groups: [";
  for (int i = 0; i < 100000; ++i) t += std::string(i ? ", " : "") + "*g";
  t += "]\n";
  Result r = parse(t);
  EXPECT_FALSE(r.ok);
  EXPECT_LE(r.errors.size(), 101u);
  EXPECT_TRUE(hasError(r, "server_groups", {"100000 groups", "1..64"}));
  // Within the list limits the walk is bounded too: 64 x 4096 server entries
  // all at one address, reported as at most 100 errors plus a count.
  std::string u = std::string(kNode) + "anchors:\n  - &srv { address: 10.0.0.1 }\n  - &s [";
  for (int i = 0; i < 4096; ++i) u += std::string(i ? ", " : "") + "*srv";
  u += "]\n  - &g { name: g, servers: *s }\nserver_groups: [";
  for (int i = 0; i < 64; ++i) u += std::string(i ? ", " : "") + "*g";
  u += "]\n";
  Result b = parse(u);
  EXPECT_FALSE(b.ok);
  ASSERT_EQ(b.errors.size(), 101u);
  EXPECT_EQ(b.errors.back().path, "");
  EXPECT_NE(b.errors.back().message.find("more errors"), std::string::npos) << b.errors.back().message;
  // A list that contains itself.
  Result self = parse(withGroup(std::string(kOneAppliance)) + "eal: &e [\"a\", *e]\n");
  EXPECT_TRUE(onlyError(self, "eal[1]", {"expected a string, got a list"}));
}

TEST(ConfigKeys, ListLimits) {
  std::string eal = "eal: [";
  for (int i = 0; i < 257; ++i) eal += std::string(i ? ", " : "") + "x";
  EXPECT_TRUE(onlyError(parse(withGroup(std::string(kOneAppliance)) + eal + "]\n"), "eal",
                        {"257 arguments", "at most 256"}));
  std::string codes = "[";
  for (int i = 0; i < 33; ++i) codes += std::string(i ? ", " : "") + "http_2xx";
  EXPECT_TRUE(onlyError(parse(fullWith("server_groups[0].health_check.http_codes", codes + "]")),
                        "server_groups[0].health_check.http_codes", {"33 entries", "at most 32"}));
  std::string lis = "[";
  for (int i = 0; i < 17; ++i) lis += std::string(i ? ", " : "") + "{ name: l" + std::to_string(i) + ", server_groups: [g0] }";
  EXPECT_TRUE(hasError(parse(fullWith("listeners", lis + "]")), "listeners", {"17", "at most 16"}));
}

// Many keys in one map (a quadratic duplicate check would take minutes) and
// deep nesting: an answer, bounded.
TEST(ConfigKeys, ManyKeysAndDeepNesting) {
  std::string t = withGroup(std::string(kOneAppliance)) + "dataplane:\n";
  for (int i = 0; i < 100000; ++i) t += "  k" + std::to_string(i) + ": 1\n";
  Result r = parse(t);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.errors.size(), 101u);
  EXPECT_EQ(r.errors[0].path, "dataplane.k0");
  Result d = parse(withGroup(std::string(kOneAppliance)) + "eal: " + std::string(100000, '[') +
                   std::string(100000, ']') + "\n");
  ASSERT_EQ(d.errors.size(), 1u) << formatErrors(d.errors);
  EXPECT_EQ(d.errors[0].path, "");
  EXPECT_NE(d.errors[0].message.find("nests deeper"), std::string::npos) << d.errors[0].message;
}

TEST(ConfigFile, EndlessOrUnreadableFile) {
  Config c;
  std::vector<ConfigError> errs;
  EXPECT_FALSE(loadConfigFile("/dev/zero", c, errs));  // never ends: read at most 1 MiB
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("larger than 1 MiB"), std::string::npos) << errs[0].message;
  errs.clear();
  EXPECT_FALSE(loadConfigFile("/proc/self/mem", c, errs));  // opens, but reading fails (EIO)
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("cannot read"), std::string::npos) << errs[0].message;
  errs.clear();
  EXPECT_FALSE(loadConfigFile("/tmp", c, errs));
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("is a directory"), std::string::npos) << errs[0].message;
}

}  // namespace
}  // namespace gwlb::ctl

namespace gwlb::ctl {
namespace {

// node.flow_hash_secret: inline digits, or a file only its owner can read.
class FlowHashSecret : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gwlb-secret-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text, mode_t mode) {
    std::string p = (dir_ / name).string();
    { std::ofstream(p) << text; }
    ::chmod(p.c_str(), mode);
    return p;
  }
  std::filesystem::path dir_;
};

TEST_F(FlowHashSecret, InlineDigitsAndFilesGiveTheSameKey) {
  NodeConfig n;
  FlowHashKey a, b;
  bool configured = false;
  std::string err;
  n.flow_hash_secret = "00112233445566778899AABBCCDDEEFF";
  ASSERT_TRUE(loadFlowHashKey(n, a, configured, err)) << err;
  EXPECT_TRUE(configured);
  EXPECT_EQ(a.k0, 0x0011223344556677ULL);
  EXPECT_EQ(a.k1, 0x8899aabbccddeeffULL);
  n.flow_hash_secret = write("ok", "  00112233445566778899aabbccddeeff\n", 0600);
  ASSERT_TRUE(loadFlowHashKey(n, b, configured, err)) << err;
  EXPECT_EQ(a, b);
  n.flow_hash_secret = "";
  ASSERT_TRUE(loadFlowHashKey(n, b, configured, err));
  EXPECT_FALSE(configured);
}

// Without a configured key gwlbd keeps its own in its state directory: made
// once (directory 0700, file 0600, 32 hex digits), then read back the same;
// --check-config (create = false) creates nothing; a damaged file is an
// error naming the path and what to do, never replaced.
TEST_F(FlowHashSecret, GwlbdsOwnKeyIsMadeOnceAndKept) {
  const std::string dir = (dir_ / "state").string();
  FlowHashKey a, b;
  StateKeyOutcome got;
  std::string err;
  ASSERT_TRUE(loadStateKey(dir, false, a, got, err)) << err;
  EXPECT_EQ(got, StateKeyOutcome::kMissing);
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the check must create nothing";
  ASSERT_TRUE(loadStateKey(dir, true, a, got, err)) << err;
  EXPECT_EQ(got, StateKeyOutcome::kCreated);
  EXPECT_FALSE(a == FlowHashKey{});
  const std::string file = dir + "/" + kStateKeyFile;
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(std::filesystem::file_size(file), 33u);  // 32 digits and a newline
  ASSERT_TRUE(loadStateKey(dir, true, b, got, err)) << err;
  EXPECT_EQ(got, StateKeyOutcome::kRead);
  EXPECT_EQ(a, b) << "a second start must read the same key";
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1) << "no temporary left";

  write("state/flow_hash.key", "0123456789abcdef\n", 0600);
  EXPECT_FALSE(loadStateKey(dir, true, b, got, err));
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_NE(err.find("32 hexadecimal digits"), std::string::npos) << err;
  EXPECT_NE(err.find("remove it to have gwlbd generate a new one"), std::string::npos) << err;
  EXPECT_EQ(std::filesystem::file_size(file), 17u) << "a damaged key must not be replaced";
  write("state/flow_hash.key", "00112233445566778899aabbccddeeff\n", 0644);
  EXPECT_FALSE(loadStateKey(dir, false, b, got, err));
  EXPECT_NE(err.find("chmod 600"), std::string::npos) << err;

  EXPECT_EQ(stateDirectory(nullptr), "/var/lib/gwlb");
  EXPECT_EQ(stateDirectory(""), "/var/lib/gwlb");
  EXPECT_EQ(stateDirectory("/var/lib/gwlb:/var/lib/other"), "/var/lib/gwlb");
}

// fleet.secret / fleet.secret_file key the flow hash (and the cookies) when
// the config has a fleet section; every key source set must agree.
TEST_F(FlowHashSecret, TheFleetSecretKeysTheFlowHashAndMustAgreeWithTheNodeKey) {
  const std::string digits = "00112233445566778899aabbccddeeff";
  Config c;
  FlowHashKey k;
  bool configured = true;
  std::string err;
  ASSERT_TRUE(loadHashKey(c, k, configured, err)) << err;
  EXPECT_FALSE(configured) << "no key anywhere: gwlbd uses its own (loadStateKey)";

  c.node.flow_hash_secret = "ffeeddccbbaa99887766554433221100";
  ASSERT_TRUE(loadHashKey(c, k, configured, err)) << err;
  EXPECT_TRUE(configured);
  EXPECT_EQ(k, (FlowHashKey{0xffeeddccbbaa9988ULL, 0x7766554433221100ULL})) << "no fleet: the node's";

  c.fleet.configured = true;
  c.fleet.node_name = "gw-1";
  c.fleet.secret = digits;
  err.clear();
  EXPECT_FALSE(loadHashKey(c, k, configured, err));
  EXPECT_NE(err.find("node.flow_hash_secret: holds another key than fleet.secret"), std::string::npos)
      << err;
  EXPECT_EQ(err.find(digits), std::string::npos) << "the secret is never shown";

  c.node.flow_hash_secret = "";
  ASSERT_TRUE(loadHashKey(c, k, configured, err)) << err;
  EXPECT_EQ(k, (FlowHashKey{0x0011223344556677ULL, 0x8899aabbccddeeffULL}));

  c.fleet.secret = "";
  c.fleet.secret_file = write("fleet", digits + "\n", 0600);
  FlowHashKey from_file;
  ASSERT_TRUE(loadHashKey(c, from_file, configured, err)) << err;
  EXPECT_EQ(from_file, k);
  c.node.flow_hash_secret = digits;  // the same key twice is fine
  ASSERT_TRUE(loadHashKey(c, from_file, configured, err)) << err;

  c.fleet.secret = "ffeeddccbbaa99887766554433221100";  // the file says otherwise
  err.clear();
  EXPECT_FALSE(loadHashKey(c, k, configured, err));
  EXPECT_NE(err.find("fleet.secret_file: holds another key than fleet.secret"), std::string::npos)
      << err;
  c.fleet.secret = "";
  c.node.flow_hash_secret = "";
  c.fleet.secret_file = write("loose", digits, 0644);
  err.clear();
  EXPECT_FALSE(loadHashKey(c, k, configured, err));
  EXPECT_NE(err.find("fleet.secret_file: '" + c.fleet.secret_file + "' has mode 0644"),
            std::string::npos)
      << err;
}

// Flow sync peers need a sync address of this node; without any sync keys
// the fleet section is what it was (no sync).
TEST(ConfigFleet, SyncPeersNeedASyncAddress) {
  const std::string base =
      "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
      "server_groups: [ { name: g, servers: [ { address: 10.0.0.1 } ] } ]\n";
  Config c;
  std::vector<ConfigError> errors;
  EXPECT_FALSE(parseConfig(base + "fleet: { node_name: gw-1, secret: 00112233445566778899aabbccddeeff, "
                                  "peers: [\"10.0.0.2:7946\"] }\n",
                           c, errors));
  ASSERT_EQ(errors.size(), 1u) << formatErrors(errors);
  EXPECT_EQ(errors[0].path, "fleet.sync_listen");
  EXPECT_NE(errors[0].message.find("is required when fleet.peers is set"), std::string::npos);
  errors.clear();
  EXPECT_FALSE(parseConfig(base + "fleet: { node_name: gw-1, sync_listen: \"10.0.0.1:7946\" }\n", c,
                           errors));
  ASSERT_EQ(errors.size(), 1u) << formatErrors(errors);
  EXPECT_EQ(errors[0].path, "fleet.secret") << "sync needs the secret";
  errors.clear();
  ASSERT_TRUE(parseConfig(base + "fleet: { node_name: gw-1, secret: 00112233445566778899aabbccddeeff }\n",
                          c, errors));
  EXPECT_TRUE(c.fleet.sync_listen.empty());
  EXPECT_TRUE(c.fleet.peers.empty());
  EXPECT_EQ(c.fleet.warm_start_timeout_s, 10u);
}

// A fleet section needs a secret; without one the config says so.
TEST(ConfigFleet, AFleetWithoutASecretIsRefused) {
  const std::string base =
      "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
      "server_groups: [ { name: g, servers: [ { address: 10.0.0.1 } ] } ]\n";
  Config c;
  std::vector<ConfigError> errors;
  EXPECT_TRUE(parseConfig(base, c, errors)) << formatErrors(errors);
  EXPECT_FALSE(c.fleet.configured);
  errors.clear();
  EXPECT_FALSE(parseConfig(base + "fleet: { node_name: gw-1 }\n", c, errors));
  ASSERT_EQ(errors.size(), 1u) << formatErrors(errors);
  EXPECT_EQ(errors[0].path, "fleet.secret");
  EXPECT_NE(errors[0].message.find("fleet.secret_file"), std::string::npos);
  errors.clear();
  EXPECT_FALSE(parseConfig(base + "fleet: { secret: 00112233445566778899aabbccddeeff }\n", c, errors));
  ASSERT_EQ(errors.size(), 1u) << formatErrors(errors);
  EXPECT_EQ(errors[0].path, "fleet.node_name");
  errors.clear();
  EXPECT_TRUE(parseConfig(base + "fleet: { node_name: gw-1, secret: 00112233445566778899aabbccddeeff }\n",
                          c, errors))
      << formatErrors(errors);
  EXPECT_TRUE(c.fleet.configured);
  EXPECT_EQ(c.fleet.node_name, "gw-1");
}

TEST_F(FlowHashSecret, UnsafeOrBadFilesAreRefusedWithWhatToChange) {
  NodeConfig n;
  FlowHashKey k;
  bool configured = false;
  struct Case {
    std::string path;
    std::string needle;
  };
  std::string good = write("good", "00112233445566778899aabbccddeeff", 0600);
  std::string link = (dir_ / "link").string();
  std::filesystem::create_symlink(good, link);
  std::vector<Case> cases = {
      {write("world", "00112233445566778899aabbccddeeff", 0644), "chmod 600"},
      {write("group", "00112233445566778899aabbccddeeff", 0640), "mode 0640"},
      {write("short", "0011", 0600), "32 hexadecimal digits"},
      {write("empty", "", 0600), "32 hexadecimal digits"},
      {(dir_ / "missing").string(), "cannot open"},
      {link, "is a symbolic link; a secret file must not be a symbolic link"},  // never followed
      {dir_.string(), "not a regular file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    std::string err;
    n.flow_hash_secret = c.path;
    EXPECT_FALSE(loadFlowHashKey(n, k, configured, err));
    EXPECT_NE(err.find(c.needle), std::string::npos) << err;
    EXPECT_EQ(err.find("00112233"), std::string::npos) << "the secret is never printed";
  }
}

}  // namespace
}  // namespace gwlb::ctl

namespace gwlb::ctl {
namespace {
// Passive detection, flap dampening and slow start: parsed, defaults off,
// ranges, and the rules between keys.
TEST(ConfigHealth, PassiveDampeningAndSlowStart) {
  Result r = parse(withGroup(std::string(kOneAppliance) +
                             "\n    slow_start: 30s"
                             "\n    health_check: { passive: { enabled: true, min_packets: 20, window: 1500ms },"
                             " dampening: { enabled: true, half_life: 2m } }"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  const ApplianceGroupConfig& g = r.cfg.server_groups[0];
  EXPECT_EQ(g.slow_start_s, 30u);
  EXPECT_TRUE(g.health_check.passive.enabled);
  EXPECT_EQ(g.health_check.passive.min_packets, 20u);
  EXPECT_EQ(g.health_check.passive.window_ms, 1500u);
  EXPECT_EQ(g.health_check.passive.max_ejection_percent, 50u);
  EXPECT_EQ(g.health_check.passive.base_ejection_time_ms, 30000u);  // Envoy's defaults
  EXPECT_EQ(g.health_check.passive.max_ejection_time_ms, 300000u);
  EXPECT_EQ(g.health_check.dampening.half_life_s, 120u);
  EXPECT_EQ(g.health_check.dampening.suppress, 3000u);
  Result plain = parse(withGroup(std::string(kOneAppliance) + "\n    health_check: { protocol: tcp }"));
  ASSERT_TRUE(plain.ok);
  EXPECT_FALSE(plain.cfg.server_groups[0].health_check.passive.enabled);
  EXPECT_FALSE(plain.cfg.server_groups[0].health_check.dampening.enabled);
  EXPECT_EQ(plain.cfg.server_groups[0].slow_start_s, 0u);

  Result off = parse(withGroup(std::string(kOneAppliance) +
                               "\n    health_check: { enabled: false, passive: { enabled: true } }"));
  EXPECT_TRUE(hasError(off, "server_groups[0].health_check.passive.enabled", {"needs health checks"}));
  Result sup = parse(withGroup(std::string(kOneAppliance) +
                               "\n    health_check: { dampening: { suppress: 700, reuse: 750 } }"));
  EXPECT_TRUE(hasError(sup, "server_groups[0].health_check.dampening.suppress", {"'700'", "above reuse"}));
  // A penalty capped at or below suppress (reuse x 2^(max_hold / half_life)) would never hold.
  Result cap = parse(withGroup(std::string(kOneAppliance) +
                               "\n    health_check: { dampening: { max_hold: 120s, half_life: 60s } }"));
  EXPECT_TRUE(hasError(cap, "server_groups[0].health_check.dampening.max_hold", {"nothing would ever be held down"}));
  Result bad = parse(withGroup(std::string(kOneAppliance) +
                               "\n    slow_start: 2h"
                               "\n    health_check: { passive: { window: 50ms, max_ejection_percent: 101 } }"));
  EXPECT_TRUE(hasError(bad, "server_groups[0].slow_start", {}));
  EXPECT_TRUE(hasError(bad, "server_groups[0].health_check.passive.window", {}));
  EXPECT_TRUE(hasError(bad, "server_groups[0].health_check.passive.max_ejection_percent", {}));
  Result ej = parse(withGroup(std::string(kOneAppliance) +
                              "\n    health_check: { passive: { base_ejection_time: 3601s, max_ejection_time: 86401s } }"));
  EXPECT_TRUE(hasError(ej, "server_groups[0].health_check.passive.base_ejection_time", {}));
  EXPECT_TRUE(hasError(ej, "server_groups[0].health_check.passive.max_ejection_time", {}));
  // IPv6 probe addresses: both of one family.
  Result v6 = parse(withGroup(std::string(kOneAppliance) +
                              "\n    health_check: { forwarding: true, forwarding_probe: { src: \"2001:2::1\", "
                              "dst: \"2001:2::2\" } }"));
  ASSERT_TRUE(v6.ok) << formatErrors(v6.errors);
  EXPECT_TRUE(v6.cfg.server_groups[0].health_check.forwarding_probe.dst.isV6());
  Result mixed = parse(withGroup(std::string(kOneAppliance) +
                                 "\n    health_check: { forwarding_probe: { src: 198.18.0.1, dst: \"2001:2::2\" } }"));
  EXPECT_TRUE(hasError(mixed, "server_groups[0].health_check.forwarding_probe.src", {"dst is IPv6"}));
}
}  // namespace
}  // namespace gwlb::ctl
