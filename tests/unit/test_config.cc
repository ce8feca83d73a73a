// Unit tests for the configuration loader and validator (control/config.cc).
#include "control/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

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

const char* const kOneServer = "name: g\n    servers: [{ address: 192.0.2.10 }]";

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
  EXPECT_TRUE(c.node.underlay_ip.isV4());
  EXPECT_EQ(c.node.underlay_mac, *MacAddr::parse("02:00:00:00:00:01"));
  ASSERT_TRUE(c.node.gateway_mac.has_value());
  EXPECT_EQ(*c.node.gateway_mac, *MacAddr::parse("02:00:00:00:00:fe"));
  EXPECT_EQ(c.node.underlay_port, 0);
  EXPECT_EQ(c.node.underlay_mtu, 1500u);
  EXPECT_EQ(c.node.icmp_rate_per_s, 100u);

  ASSERT_EQ(c.server_groups.size(), 1u);
  const ServerGroupConfig& g = c.server_groups[0];
  EXPECT_EQ(g.name, "firewalls");
  EXPECT_EQ(g.stickiness, Stickiness::kFiveTuple);
  EXPECT_EQ(g.geneve.format, GeneveFormat::kAws);
  EXPECT_EQ(g.geneve.vni, 0u);
  EXPECT_EQ(g.geneve.endpoint_id, 0x0123456789abcdefull);
  EXPECT_EQ(g.geneve.attachment_id, 1u);
  EXPECT_EQ(g.maglev_table_size, 65537u);
  EXPECT_EQ(g.tcp_idle_timeout_s, 350u);
  EXPECT_EQ(g.other_idle_timeout_s, 120u);
  ASSERT_EQ(g.servers.size(), 3u);
  EXPECT_EQ(g.servers[0].address, *IpAddr::parse("192.0.2.10"));
  EXPECT_EQ(g.servers[0].weight, 100u);
  EXPECT_FALSE(g.servers[0].mac.has_value());
  EXPECT_EQ(g.servers[1].address, *IpAddr::parse("192.0.2.11"));
  EXPECT_EQ(g.servers[1].weight, 100u);
  EXPECT_FALSE(g.servers[1].mac.has_value());
  EXPECT_EQ(g.servers[2].address, *IpAddr::parse("192.0.2.12"));
  ASSERT_TRUE(g.servers[2].mac.has_value());
  EXPECT_EQ(*g.servers[2].mac, *MacAddr::parse("02:00:00:00:00:12"));

  EXPECT_EQ(c.dataplane.workers, 1u);
  EXPECT_EQ(c.eal_args, (std::vector<std::string>{"--no-huge", "--no-pci"}));
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.source_path, "");
  EXPECT_TRUE(validateConfig(c, r.errors));
}

TEST(Config, DefaultsWhenOptionalKeysAbsent) {
  Result r = parse(withGroup(kOneServer));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  const Config& c = r.cfg;
  const Config d;  // the struct's defaults
  EXPECT_FALSE(c.node.gateway_mac.has_value());
  EXPECT_EQ(c.node.underlay_port, 0);
  EXPECT_EQ(c.node.underlay_mtu, 1500u);
  EXPECT_EQ(c.node.icmp_rate_per_s, 100u);
  ASSERT_EQ(c.server_groups.size(), 1u);
  const ServerGroupConfig& g = c.server_groups[0];
  EXPECT_EQ(g.stickiness, Stickiness::kFiveTuple);
  EXPECT_EQ(g.geneve.format, GeneveFormat::kAws);
  EXPECT_EQ(g.geneve.vni, 0u);
  EXPECT_EQ(g.geneve.endpoint_id, 0u);
  EXPECT_EQ(g.geneve.attachment_id, 0u);
  EXPECT_EQ(g.maglev_table_size, 65537u);
  EXPECT_EQ(g.tcp_idle_timeout_s, 350u);
  EXPECT_EQ(g.other_idle_timeout_s, 120u);
  ASSERT_EQ(g.servers.size(), 1u);
  EXPECT_EQ(g.servers[0].weight, 100u);
  EXPECT_FALSE(g.servers[0].mac.has_value());
  EXPECT_EQ(c.dataplane.workers, d.dataplane.workers);
  EXPECT_EQ(c.dataplane.burst, 32u);
  EXPECT_EQ(c.dataplane.flow_table_size, 1u << 20);
  EXPECT_EQ(c.dataplane.mbufs, 16384u);
  EXPECT_EQ(c.dataplane.rx_queue_size, 1024u);
  EXPECT_EQ(c.dataplane.tx_queue_size, 1024u);
  EXPECT_TRUE(c.eal_args.empty());
  EXPECT_EQ(c.log_level, "info");
}

TEST(Config, EmptyOptionalSectionsAreAccepted) {
  Result r = parse(withGroup(kOneServer, "dataplane:\neal:\n"));
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
log_level: off
)");
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  const Config& c = r.cfg;
  EXPECT_EQ(c.node.underlay_port, 31);
  EXPECT_EQ(c.node.underlay_mtu, 9216u);
  EXPECT_EQ(c.node.icmp_rate_per_s, 0u);
  ASSERT_EQ(c.server_groups.size(), 2u);
  const ServerGroupConfig& a = c.server_groups[0];
  EXPECT_EQ(a.name, "A-b_c.1");
  EXPECT_EQ(a.stickiness, Stickiness::kThreeTuple);
  EXPECT_EQ(a.geneve.format, GeneveFormat::kEthernet);
  EXPECT_EQ(a.geneve.vni, 0xFFFFFFu);
  EXPECT_EQ(a.geneve.endpoint_id, 0xffffffffffffffffull);
  EXPECT_EQ(a.geneve.attachment_id, 0xffffffffffffffffull);
  EXPECT_EQ(a.maglev_table_size, 251u);
  EXPECT_EQ(a.tcp_idle_timeout_s, 3600u);
  EXPECT_EQ(a.other_idle_timeout_s, 360u);
  EXPECT_EQ(a.servers[0].weight, 0u);
  EXPECT_EQ(a.servers[1].weight, 10000u);
  const ServerGroupConfig& b = c.server_groups[1];
  EXPECT_EQ(b.stickiness, Stickiness::kTwoTuple);
  EXPECT_EQ(b.tcp_idle_timeout_s, 60u);
  EXPECT_EQ(b.other_idle_timeout_s, 6000u);
  EXPECT_EQ(b.servers[0].weight, 16u);
  EXPECT_EQ(c.dataplane.workers, 64u);
  EXPECT_EQ(c.dataplane.burst, 256u);
  EXPECT_EQ(c.dataplane.flow_table_size, 1u << 27);
  EXPECT_EQ(c.dataplane.mbufs, 1u << 24);
  EXPECT_EQ(c.dataplane.rx_queue_size, 64u);
  EXPECT_EQ(c.dataplane.tx_queue_size, 16384u);
  EXPECT_EQ(c.log_level, "off");
}

TEST(Config, EveryLogLevelAccepted) {
  for (const char* l : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    Result r = parse(withGroup(kOneServer, std::string("log_level: ") + l + "\n"));
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

TEST(Config, ParseResetsOutput) {
  Result r = parse(kSample);
  ASSERT_TRUE(r.ok);
  std::vector<ConfigError> errs;
  ASSERT_TRUE(parseConfig(withGroup(kOneServer), r.cfg, errs)) << formatErrors(errs);
  EXPECT_FALSE(r.cfg.node.gateway_mac.has_value());
  EXPECT_TRUE(r.cfg.eal_args.empty());
  EXPECT_EQ(r.cfg.server_groups[0].servers.size(), 1u);
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
  EXPECT_TRUE(onlyError(parse(withGroup(kOneServer) + "---\n" + withGroup(kOneServer)), "",
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

  EXPECT_TRUE(onlyError(parse(withGroup(kOneServer, "dataplane: { worker: 2 }\n")),
                        "dataplane.worker", {"unknown key 'worker'", "'workers'"}));
  EXPECT_TRUE(onlyError(parse(std::string(kNode) + "  mtu: 1500\nserver_groups:\n  - " +
                              kOneServer + "\n"),
                        "node.mtu", {"unknown key 'mtu'"}));
  EXPECT_TRUE(onlyError(parse(withGroup(std::string(kOneServer) + "\n    geneve: { vin: 5 }")),
                        "server_groups[0].geneve.vin", {"unknown key 'vin'", "'vni'"}));
  EXPECT_TRUE(onlyError(parse(withGroup(std::string(kOneServer) + "\n    sticky: 5-tuple")),
                        "server_groups[0].sticky", {"unknown key 'sticky'"}));
}

TEST(ConfigErrors, DuplicateKey) {
  EXPECT_TRUE(onlyError(parse(withGroup(kOneServer, "log_level: info\nlog_level: debug\n")),
                        "log_level", {"duplicate key 'log_level'"}));
}

TEST(ConfigErrors, WrongNodeKinds) {
  EXPECT_TRUE(onlyError(parse("node: 5\nserver_groups:\n  - " + std::string(kOneServer) + "\n"),
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
  EXPECT_TRUE(onlyError(parse(withGroup(kOneServer, "dataplane: [1]\n")), "dataplane",
                        {"expected a map"}));
  EXPECT_TRUE(onlyError(parse(withGroup(kOneServer, "eal: --no-huge\n")), "eal",
                        {"expected a list of strings"}));
  EXPECT_TRUE(onlyError(parse(withGroup(kOneServer, "eal: [a, { b: c }]\n")), "eal[1]",
                        {"expected a string"}));
  EXPECT_TRUE(onlyError(parse(withGroup(kOneServer, "log_level:\n")), "log_level",
                        {"has no value"}));
  EXPECT_TRUE(onlyError(parse(withGroup(std::string(kOneServer) + "\n    geneve: aws")),
                        "server_groups[0].geneve", {"expected a map", "'aws'"}));
}

// ---------------------------------------------------------------------------
// Node.

TEST(ConfigErrors, MissingUnderlayIpIsReportedOnce) {
  Result r = parse("node:\n  underlay_mac: 02:00:00:00:00:01\nserver_groups:\n  - " +
                   std::string(kOneServer) + "\n");
  EXPECT_TRUE(onlyError(r, "node.underlay_ip", {"required"}));
}

TEST(ConfigErrors, MissingUnderlayMacIsReportedOnce) {
  Result r = parse("node:\n  underlay_ip: 192.0.2.1\nserver_groups:\n  - " +
                   std::string(kOneServer) + "\n");
  EXPECT_TRUE(onlyError(r, "node.underlay_mac", {"required"}));
}

std::string nodeWith(const std::string& ip, const std::string& mac, const std::string& more = "") {
  return "node:\n  underlay_ip: " + ip + "\n  underlay_mac: " + mac + "\n" + more +
         "server_groups:\n  - " + kOneServer + "\n";
}

TEST(ConfigErrors, UnderlayIp) {
  EXPECT_TRUE(onlyError(parse(nodeWith("2001:db8::1", "02:00:00:00:00:01")), "node.underlay_ip",
                        {"'2001:db8::1'", "IPv6 underlay is not supported"}));
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
  EXPECT_TRUE(onlyError(parse(withGroup("name: g\n    servers: [{ address: 2001:db8::10 }]")),
                        "server_groups[0].servers[0].address", {"'2001:db8::10'", "IPv6"}));
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
  const std::string g = std::string(kOneServer) + "\n    ";
  EXPECT_TRUE(onlyError(parse(withGroup(g + "stickiness: 4-tuple")), "server_groups[0].stickiness",
                        {"'4-tuple'", "5-tuple, 3-tuple, 2-tuple"}));
  EXPECT_TRUE(onlyError(parse(withGroup(g + "geneve: { format: gre }")),
                        "server_groups[0].geneve.format", {"'gre'", "aws, ethernet"}));
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
  const std::string g = std::string(kOneServer) + "\n    maglev_table_size: ";
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
  const std::string g = std::string(kOneServer) + "\n    ";
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
    Result r = parse(withGroup(kOneServer, std::string("dataplane:\n  ") + c.key + ": " +
                                               c.value + "\n"));
    EXPECT_TRUE(onlyError(r, std::string("dataplane.") + c.key,
                          {"'" + std::string(c.value) + "'", c.range}))
        << c.key << "=" << c.value;
  }
}

TEST(ConfigErrors, LogLevel) {
  EXPECT_TRUE(onlyError(parse(withGroup(kOneServer, "log_level: verbose\n")), "log_level",
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
  ServerGroupConfig g;
  g.name = "fw";
  g.servers.push_back({IpAddr::v4(0xC000020A), 1, std::nullopt});
  c.server_groups.push_back(g);
  errs.clear();
  EXPECT_TRUE(validateConfig(c, errs)) << formatErrors(errs);

  c.server_groups[0].tcp_idle_timeout_s = 10;
  c.server_groups[0].geneve.vni = 0x1000000;
  c.server_groups[0].servers[0].weight = 10001;
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
  Result d = parse(withGroup(kOneServer));
  ASSERT_TRUE(d.ok) << formatErrors(d.errors);
  EXPECT_EQ(d.cfg.control.socket, "/run/gwlbd/gwlbd.sock");
  EXPECT_EQ(d.cfg.control.socket_mode, 0660u);
  EXPECT_EQ(d.cfg.metrics.listen, "");
  Result r = parse(withGroup(kOneServer,
                             "control: { socket: /tmp/x/gw.sock, socket_mode: \"0600\" }\n"
                             "metrics: { listen: \"[::1]:9100\" }\n"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_EQ(r.cfg.control.socket, "/tmp/x/gw.sock");
  EXPECT_EQ(r.cfg.control.socket_mode, 0600u);
  EXPECT_EQ(r.cfg.metrics.listen, "[::1]:9100");
}

TEST(ConfigErrors, ControlAndMetricsValues) {
  Result r = parse(withGroup(kOneServer,
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
  Result none = parse(withGroup(kOneServer));
  ASSERT_TRUE(none.ok) << formatErrors(none.errors);
  EXPECT_FALSE(none.cfg.server_groups[0].health_check.active());  // off unless configured
  EXPECT_EQ(none.cfg.server_groups[0].when_all_unhealthy, WhenAllUnhealthy::kFailOpen);
  Result r = parse(withGroup(std::string(kOneServer) + R"(
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
  Result r = parse(withGroup(std::string(kOneServer) + R"(
    when_all_unhealthy: panic
    health_check:
      protocol: icmp
      port: 0
      interval: 60s
      timeout: 5ms
      healthy_threshold: 1
      unhealthy_threshold: 11
      enabled: maybe)"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasError(r, "server_groups[0].when_all_unhealthy", {"panic"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.protocol", {"icmp"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.port", {"0"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.interval", {"60s"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.timeout", {"5ms"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.healthy_threshold", {"1"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.unhealthy_threshold", {"11"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].health_check.enabled", {"maybe"}));
  Result h = parse(withGroup(std::string(kOneServer) + R"(
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

TEST(Config, FailoverAndDraining) {
  Result none = parse(withGroup(kOneServer));
  ASSERT_TRUE(none.ok) << formatErrors(none.errors);
  EXPECT_EQ(none.cfg.server_groups[0].failover_mode, FailoverMode::kNoRebalance);
  EXPECT_FALSE(none.cfg.server_groups[0].connection_draining.enabled);
  EXPECT_EQ(none.cfg.server_groups[0].connection_draining.timeout_s, 300u);
  Result r = parse(withGroup(std::string(kOneServer) + R"(
    failover_mode: rebalance
    connection_draining: { enabled: true, timeout: 1h })"));
  ASSERT_TRUE(r.ok) << formatErrors(r.errors);
  EXPECT_EQ(r.cfg.server_groups[0].failover_mode, FailoverMode::kRebalance);
  EXPECT_TRUE(r.cfg.server_groups[0].connection_draining.enabled);
  EXPECT_EQ(r.cfg.server_groups[0].connection_draining.timeout_s, 3600u);
  Result one = parse(withGroup(std::string(kOneServer) + R"(
    connection_draining: { enabled: true, timeout: 1 })"));
  ASSERT_TRUE(one.ok) << formatErrors(one.errors);
  EXPECT_EQ(one.cfg.server_groups[0].connection_draining.timeout_s, 1u);
}

TEST(ConfigErrors, FailoverAndDraining) {
  Result r = parse(withGroup(std::string(kOneServer) + R"(
    failover_mode: rebalanced
    connection_draining: { enabled: yes please, timeout: 3601s, grace: 5 })"));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(hasError(r, "server_groups[0].failover_mode", {"rebalanced", "no_rebalance or rebalance"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].connection_draining.enabled", {"yes please"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].connection_draining.timeout", {"3601s", "1..3600"}));
  EXPECT_TRUE(hasError(r, "server_groups[0].connection_draining.grace", {}));
  Result z = parse(withGroup(std::string(kOneServer) + R"(
    connection_draining: { timeout: 0 })"));
  EXPECT_TRUE(hasError(z, "server_groups[0].connection_draining.timeout", {"0"}));
  Result l = parse(withGroup(std::string(kOneServer) + R"(
    connection_draining: [1, 2])"));
  EXPECT_TRUE(hasError(l, "server_groups[0].connection_draining", {"expected a map"}));
}

}  // namespace
}  // namespace gwlb::ctl
