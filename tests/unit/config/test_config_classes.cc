// Issue 27 item 1: traffic_classes in the config. Every match field and its
// bad values (errors with their key paths), the rules between classes and
// listeners, the warnings (a shadowed class, a listener no class names), the
// dump that reads back to the same classes, and a reload applies them.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "control/config/config.h"

namespace gwlb::ctl {
namespace {

const std::string kHead =
    "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01,\n"
    "        ports: [ { id: 3, role: appliance }, { id: 4, role: router } ] }\n"
    "server_groups:\n"
    "  - { name: fa, health_check: { port: 80 }, servers: [ { address: 10.0.0.1 } ] }\n"
    "  - { name: fb, health_check: { port: 80 }, servers: [ { address: 10.0.0.2 } ] }\n"
    "listeners:\n"
    "  - { name: firewalls-a, server_groups: [fa] }\n"
    "  - { name: ids, server_groups: [fb] }\n";

struct Parsed {
  bool ok = false;
  Config cfg;
  std::vector<ConfigError> errors;
};

Parsed parse(const std::string& classes, const std::string& head = kHead) {
  Parsed p;
  p.ok = parseConfig(head + "traffic_classes:\n" + classes, p.cfg, p.errors);
  return p;
}

// The only error is at `path` and its message holds `needle`.
::testing::AssertionResult onlyError(const Parsed& p, const std::string& path, const std::string& needle) {
  if (p.ok) return ::testing::AssertionFailure() << "accepted; expected an error at " << path;
  if (p.errors.size() != 1 || p.errors[0].path != path ||
      p.errors[0].message.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "expected one error at " << path << " with '" << needle
                                         << "'; got:\n" << formatErrors(p.errors);
  return ::testing::AssertionSuccess();
}

TEST(TrafficClasses, TheIssuesExampleLoadsWithEveryField) {
  Parsed p = parse(
      "  - name: tenant-a\n"
      "    match: { vlans: [100, 200, 0], ingress_ports: [0, 4] }\n"
      "    listener: firewalls-a\n"
      "  - name: backups\n"
      "    match: { prefixes: [10.9.0.0/16, \"2001:db8::/32\", 0.0.0.0/0], protocols: [tcp, udp, icmp, icmpv6, sctp, 47],\n"
      "             l4_ports: [873, 1000-2000, \"0-65535\", 0x10] }\n"
      "    action: bypass\n"
      "  - { name: quarantine, action: drop, match: { vlans: [999] } }\n"
      "  - name: rest\n"
      "    listener: ids\n");
  ASSERT_TRUE(p.ok) << formatErrors(p.errors);
  const auto& c = p.cfg.traffic_classes;
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].name, "tenant-a");
  EXPECT_EQ(c[0].action, ClassAction::kInspect);
  EXPECT_EQ(c[0].listener, "firewalls-a");
  EXPECT_EQ(c[0].match.vlans, (std::vector<uint16_t>{100, 200, 0}));
  EXPECT_EQ(c[0].match.ingress_ports, (std::vector<uint16_t>{0, 4}));
  EXPECT_EQ(c[1].action, ClassAction::kBypass);
  ASSERT_EQ(c[1].match.prefixes.size(), 3u);
  EXPECT_EQ(c[1].match.prefixes[0].addr, *IpAddr::parse("10.9.0.0"));
  EXPECT_EQ(c[1].match.prefixes[0].len, 16);
  EXPECT_EQ(c[1].match.prefixes[1].addr, *IpAddr::parse("2001:db8::"));
  EXPECT_EQ(c[1].match.prefixes[1].len, 32);
  EXPECT_EQ(c[1].match.prefixes[2].len, 0);
  EXPECT_EQ(c[1].match.protocols, (std::vector<uint8_t>{6, 17, 1, 58, 132, 47}));
  ASSERT_EQ(c[1].match.l4_ports.size(), 4u);
  EXPECT_EQ(c[1].match.l4_ports[0].lo, 873);
  EXPECT_EQ(c[1].match.l4_ports[0].hi, 873);
  EXPECT_EQ(c[1].match.l4_ports[1].lo, 1000);
  EXPECT_EQ(c[1].match.l4_ports[1].hi, 2000);
  EXPECT_EQ(c[1].match.l4_ports[2].hi, 65535);
  EXPECT_EQ(c[1].match.l4_ports[3].lo, 16);
  EXPECT_EQ(c[2].action, ClassAction::kDrop);
  EXPECT_EQ(c[2].match.vlans, (std::vector<uint16_t>{999}));
  EXPECT_EQ(c[3].listener, "ids");
  EXPECT_TRUE(configWarnings(p.cfg).empty()) << formatErrors(configWarnings(p.cfg));
}

TEST(TrafficClasses, EveryBadValueIsAnErrorAtItsPath) {
  struct Case {
    std::string match, path, needle;
  };
  const std::string at = "traffic_classes[0].match.";
  const Case cases[] = {
      {"vlans: [100, 4095]", at + "vlans[1]", "'4095' is not a VLAN id; allowed 0..4094"},
      {"vlans: [70000]", at + "vlans[0]", "out of range"},
      {"vlans: [0x1000]", at + "vlans[0]", "'0x1000' is not a VLAN id"},  // as written, not 4096
      {"vlans: [-1]", at + "vlans[0]", "is negative"},
      {"vlans: [ten]", at + "vlans[0]", "'ten' is not a number"},
      {"vlans: [5, 5]", at + "vlans[1]", "is already traffic_classes[0].match.vlans[0]"},
      {"vlans: 5", at + "vlans", "expected a list of VLAN ids"},
      {"vlans: [[5]]", at + "vlans[0]", "expected a VLAN id, got a list"},
      {"ingress_ports: [65536]", at + "ingress_ports[0]", "out of range"},
      {"ingress_ports: [1, 1]", at + "ingress_ports[1]", "list each once"},
      {"ingress_ports: [3]", at + "ingress_ports[0]", "port 3 has role appliance"},
      {"protocols: [gre]", at + "protocols[0]", "'gre' is not a protocol; use tcp, udp, icmp, icmpv6, sctp"},
      {"protocols: [TCP]", at + "protocols[0]", "lower case: tcp"},
      {"protocols: [256]", at + "protocols[0]", "out of range"},
      {"protocols: [tcp, 6]", at + "protocols[1]", "'tcp' is already"},
      {"l4_ports: [65536]", at + "l4_ports[0]", "out of range"},
      {"l4_ports: [2000-1000]", at + "l4_ports[0]", "empty range; write the lower port first (1000-2000)"},
      {"l4_ports: [1000-]", at + "l4_ports[0]", "not a number"},
      {"l4_ports: [-5]", at + "l4_ports[0]", "negative"},
      {"l4_ports: [80, 80-80]", at + "l4_ports[1]", "list each once"},
      {"prefixes: [10.9.0.1/16]", at + "prefixes[0]", "host bits set; the network is 10.9.0.0/16"},
      {"prefixes: [\"2001:db8::1/32\"]", at + "prefixes[0]", "the network is 2001:db8::/32"},
      {"prefixes: [10.9.0.0]", at + "prefixes[0]", "has no prefix length; write /32"},
      {"prefixes: [10.9.0.0/33]", at + "prefixes[0]", "allowed 0..32 for IPv4"},
      {"prefixes: [\"2001:db8::/129\"]", at + "prefixes[0]", "allowed 0..128 for IPv6"},
      {"prefixes: [10.9.0.0/x]", at + "prefixes[0]", "bad prefix length"},
      {"prefixes: [tenant/8]", at + "prefixes[0]", "is not a prefix"},
      {"prefixes: [10.0.0.0/8, 10.0.0.0/8]", at + "prefixes[1]", "list each once"},
      {"vlan: [5]", at + "vlan", "did you mean 'vlans'?"},
      {"l4_port: [5]", at + "l4_port", "did you mean 'l4_ports'?"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.match);
    EXPECT_TRUE(onlyError(parse("  - { name: a, action: drop, match: { " + k.match + " } }\n"), k.path,
                          k.needle));
  }
}

TEST(TrafficClasses, NamesActionsAndListeners) {
  EXPECT_TRUE(onlyError(parse("  - { name: a, action: drop }\n  - { name: a, action: drop }\n"),
                        "traffic_classes[1].name", "already the name of traffic_classes[0]"));
  EXPECT_TRUE(onlyError(parse("  - { action: drop }\n"), "traffic_classes[0].name", "required key is missing"));
  EXPECT_TRUE(onlyError(parse("  - { name: 'a b', action: drop }\n"), "traffic_classes[0].name",
                        "is not a valid name"));
  EXPECT_TRUE(onlyError(parse("  - { name: " + std::string(64, 'x') + ", action: drop }\n"),
                        "traffic_classes[0].name", "is not a valid name"));
  EXPECT_TRUE(onlyError(parse("  - { name: a, action: pass }\n"), "traffic_classes[0].action",
                        "'pass' is not a class action; use inspect, bypass or drop"));
  EXPECT_TRUE(onlyError(parse("  - { name: a }\n"), "traffic_classes[0].listener", "is required"));
  EXPECT_TRUE(onlyError(parse("  - { name: a, listener: nope }\n"), "traffic_classes[0].listener",
                        "'nope' is not a listener in listeners"));
  EXPECT_TRUE(onlyError(parse("  - { name: a, action: bypass, listener: ids }\n"),
                        "traffic_classes[0].listener", "applies to action inspect only; action is bypass"));
  EXPECT_TRUE(onlyError(parse("  - { name: a, action: drop, listener: ids }\n"),
                        "traffic_classes[0].listener", "action is drop"));
  EXPECT_TRUE(onlyError(parse("  - { name: a, action: drop, listner: ids }\n"),
                        "traffic_classes[0].listner", "did you mean 'listener'?"));
  EXPECT_TRUE(onlyError(parse("  - { name: a, action: drop, match: [5] }\n"), "traffic_classes[0].match",
                        "expected a map with keys ingress_ports, vlans, prefixes, prefixes_file, protocols, l4_ports"));
  EXPECT_TRUE(onlyError(parse("  - 5\n"), "traffic_classes[0]", "expected a map"));
  // A listener that failed to parse: the reference to it is not reported again.
  Parsed p = parse("  - { name: a, listener: web }\n",
                   "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
                   "server_groups: [ { name: fa, servers: [ { address: 10.0.0.1 } ] } ]\n"
                   "listeners: [ { name: [web], server_groups: [fa] } ]\n");
  ASSERT_EQ(p.errors.size(), 1u) << formatErrors(p.errors);
  EXPECT_EQ(p.errors[0].path, "listeners[0].name");
}

// Without `listeners` the implicit listener ("default", over the first group)
// takes the inspected classes: listener left out or named "default".
TEST(TrafficClasses, WithoutListenersInspectGoesToTheImplicitOne) {
  const std::string head =
      "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
      "server_groups: [ { name: fa, health_check: { port: 80 }, servers: [ { address: 10.0.0.1 } ] } ]\n";
  Parsed p = parse("  - { name: a, match: { vlans: [1] } }\n  - { name: b, listener: default }\n", head);
  ASSERT_TRUE(p.ok) << formatErrors(p.errors);
  EXPECT_TRUE(configWarnings(p.cfg).empty());
  EXPECT_TRUE(onlyError(parse("  - { name: a, listener: fw }\n", head), "traffic_classes[0].listener",
                        "the implicit 'default'"));
  // And without traffic_classes nothing changes.
  Config c;
  std::vector<ConfigError> e;
  ASSERT_TRUE(parseConfig(head, c, e));
  EXPECT_TRUE(c.traffic_classes.empty());
}

TEST(TrafficClasses, AtMostAThousandClasses) {
  std::string many;
  for (int i = 0; i < 1001; ++i) many += "  - { name: c" + std::to_string(i) + ", action: drop }\n";
  EXPECT_TRUE(onlyError(parse(many), "traffic_classes", "has 1001 classes; allowed at most 1000"));
  many.resize(many.rfind("  - "));
  EXPECT_TRUE(parse(many).ok);
  // Built in code (the control API, gwlb-replay): the same limit.
  Config c = parse(many).cfg;
  c.traffic_classes.push_back(c.traffic_classes[0]);
  c.traffic_classes.back().name = "one-more";
  std::vector<ConfigError> e;
  EXPECT_FALSE(validateConfig(c, e));
  ASSERT_FALSE(e.empty());
  EXPECT_EQ(e[0].path, "traffic_classes");
}

// Values set in code get the same checks as parsed ones.
TEST(TrafficClasses, ConfigsBuiltInCodeAreChecked) {
  Parsed p = parse("  - { name: a, action: drop }\n");
  ASSERT_TRUE(p.ok);
  Config c = p.cfg;
  c.traffic_classes[0].match.vlans = {4095};
  c.traffic_classes[0].match.prefixes = {{*IpAddr::parse("10.1.2.3"), 8}, {IpAddr{}, 0}};
  c.traffic_classes[0].match.l4_ports = {{10, 9}};
  std::vector<ConfigError> e;
  EXPECT_FALSE(validateConfig(c, e));
  std::string all = formatErrors(e);
  EXPECT_NE(all.find("traffic_classes[0].match.vlans[0]: '4095' is not a VLAN id"), std::string::npos) << all;
  EXPECT_NE(all.find("prefixes[0]: '10.1.2.3/8' has host bits set"), std::string::npos) << all;
  EXPECT_NE(all.find("prefixes[1]: has no address"), std::string::npos) << all;
  EXPECT_NE(all.find("l4_ports[0]: '10-9' is an empty range"), std::string::npos) << all;
}

TEST(TrafficClasses, AShadowedClassIsAWarning) {
  struct Case {
    std::string earlier, later;
    bool shadowed;
  };
  const Case cases[] = {
      {"{}", "{ vlans: [5] }", true},                                        // a catch-all first
      {"{ vlans: [100, 200] }", "{ vlans: [200], protocols: [tcp] }", true},  // every field a superset
      {"{ vlans: [100] }", "{ vlans: [100, 300] }", false},                   // 300 reaches it
      {"{ vlans: [100] }", "{ protocols: [tcp] }", false},                    // any VLAN reaches it
      {"{ prefixes: [10.0.0.0/8] }", "{ prefixes: [10.9.0.0/16, 10.1.0.0/24] }", true},
      {"{ prefixes: [10.0.0.0/8] }", "{ prefixes: [10.9.0.0/16, 11.0.0.0/16] }", false},
      {"{ prefixes: [10.0.0.0/16] }", "{ prefixes: [10.0.0.0/8] }", false},
      {"{ prefixes: [0.0.0.0/0] }", "{ prefixes: [\"2001:db8::/32\"] }", false},  // another family
      {"{ prefixes: [\"2001:db8::/32\"] }", "{ prefixes: [\"2001:db8:1::/48\"] }", true},
      {"{ l4_ports: [1000-2000] }", "{ l4_ports: [1500, 1600-1700] }", true},
      {"{ l4_ports: [1000-2000] }", "{ l4_ports: [1500-2500] }", false},
      // Covered by two ranges together: each port of it is in one of them.
      {"{ l4_ports: [1000-1999, 2000-3000] }", "{ l4_ports: [1500-2500] }", true},
      {"{ l4_ports: [1000-1999, 2001-3000] }", "{ l4_ports: [1500-2500] }", false},
      {"{ prefixes: [10.0.0.0/25, 10.0.0.128/25] }", "{ prefixes: [10.0.0.0/24] }", true},
      {"{ prefixes: [0.0.0.0/0, \"::/0\"] }", "{ prefixes: [10.0.0.0/24, \"2001:db8::/32\"] }", true},
      {"{ prefixes: [10.0.0.0/8] }", "{ prefixes: [10.0.0.0/24, \"2001:db8::/32\"] }", false},
      {"{ vlans: [0, 1, 2] }", "{ vlans: [2, 0] }", true},
      {"{ protocols: [tcp] }", "{}", false},
      {"{ ingress_ports: [0, 1], protocols: [tcp, udp] }", "{ ingress_ports: [1], protocols: [udp] }", true},
      {"{ ingress_ports: [0] }", "{ ingress_ports: [1] }", false},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.earlier + " then " + k.later);
    Parsed p = parse("  - { name: first, action: drop, match: " + k.earlier +
                     " }\n  - { name: second, action: bypass, match: " + k.later +
                     " }\n  - { name: a, listener: firewalls-a }\n  - { name: b, listener: ids }\n");
    ASSERT_TRUE(p.ok) << formatErrors(p.errors);
    std::vector<ConfigError> w = configWarnings(p.cfg);
    bool found = false;
    for (const ConfigError& e : w)
      if (e.path == "traffic_classes[1]") {
        found = true;
        EXPECT_NE(e.message.find("class 'second' matches no packet: traffic_classes[0] ('first') comes first"),
                  std::string::npos) << e.message;
      }
    EXPECT_EQ(found, k.shadowed) << formatErrors(w);
  }
}

TEST(TrafficClasses, AListenerNoClassNamesAndAListenerWithoutGroupsAreWarnings) {
  Parsed p = parse("  - { name: a, listener: firewalls-a }\n");
  ASSERT_TRUE(p.ok) << formatErrors(p.errors);
  std::vector<ConfigError> w = configWarnings(p.cfg);
  ASSERT_EQ(w.size(), 1u) << formatErrors(w);
  EXPECT_EQ(w[0].path, "listeners[1]");
  EXPECT_NE(w[0].message.find("listener 'ids' is named by no inspect class"), std::string::npos) << w[0].message;
  // Built in code: a listener without a group (the file's checks refuse one).
  Config c = p.cfg;
  c.listeners[0].server_groups.clear();
  c.listeners.pop_back();
  w = configWarnings(c);
  bool found = false;
  for (const ConfigError& e : w)
    if (e.path == "traffic_classes[0].listener") {
      found = true;
      EXPECT_NE(e.message.find("listener 'firewalls-a' has no server group"), std::string::npos) << e.message;
    }
  EXPECT_TRUE(found) << formatErrors(w);
}

TEST(TrafficClasses, DumpReadsBackToTheSameClasses) {
  Parsed p = parse(
      "  - name: tenant-a\n"
      "    match: { vlans: [100, 0], ingress_ports: [4] }\n"
      "    listener: firewalls-a\n"
      "  - name: backups\n"
      "    match: { prefixes: [10.9.0.0/16, \"2001:db8::/32\"], protocols: [tcp, 47], l4_ports: [873, 1000-2000] }\n"
      "    action: bypass\n"
      "  - { name: rest, listener: ids }\n");
  ASSERT_TRUE(p.ok) << formatErrors(p.errors);
  std::string text = dumpConfig(p.cfg);
  EXPECT_NE(text.find("vlans: [100, 0]"), std::string::npos) << text;
  EXPECT_NE(text.find("protocols: [\"tcp\", 47]"), std::string::npos) << text;
  EXPECT_NE(text.find("l4_ports: [873, 1000-2000]"), std::string::npos) << text;
  Config back;
  std::vector<ConfigError> e;
  ASSERT_TRUE(parseConfig(text, back, e)) << formatErrors(e) << text;
  ASSERT_EQ(back.traffic_classes.size(), 3u);
  EXPECT_EQ(dumpConfig(back), text);
  EXPECT_EQ(back.traffic_classes[1].match.prefixes[1].addr, *IpAddr::parse("2001:db8::"));
  EXPECT_EQ(back.traffic_classes[1].action, ClassAction::kBypass);
}

// Classes apply to new flows, so a reload applies them: no restart.
TEST(TrafficClasses, AReloadAppliesThem) {
  Parsed a = parse("  - { name: a, listener: firewalls-a }\n  - { name: b, listener: ids }\n");
  Parsed b = parse("  - { name: b, match: { vlans: [7] }, listener: ids }\n  - { name: a, listener: firewalls-a }\n");
  ASSERT_TRUE(a.ok && b.ok);
  EXPECT_TRUE(restartNeeded(a.cfg, b.cfg).empty());
  Config next = b.cfg;
  EXPECT_TRUE(holdRestartKeys(a.cfg, next).empty());
  EXPECT_EQ(next.traffic_classes[0].name, "b");
  const std::vector<std::string> keys = configKeyPaths();
  for (const char* k : {"traffic_classes", "traffic_classes[].name", "traffic_classes[].match",
                        "traffic_classes[].match.ingress_ports", "traffic_classes[].match.vlans",
                        "traffic_classes[].match.prefixes", "traffic_classes[].match.protocols",
                        "traffic_classes[].match.l4_ports", "traffic_classes[].action",
                        "traffic_classes[].listener"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
}

// The warnings at `path`, and whether any says the shadow check stopped.
std::vector<std::string> warningsAt(const std::vector<ConfigError>& w, const std::string& path) {
  std::vector<std::string> out;
  for (const ConfigError& e : w)
    if (e.path == path) out.push_back(e.message);
  return out;
}
bool notComputed(const std::vector<ConfigError>& w) {
  return std::any_of(w.begin(), w.end(), [](const ConfigError& e) { return e.message.rfind("not computed", 0) == 0; });
}

// A config with `n` drop classes, each matching `prefixes(i)` and `ports(i)`
// (built in code: the largest shapes are more than a 1 MiB file holds, and
// a file's classes reach configWarnings as these do).
Config withClasses(size_t n, const std::function<std::vector<PrefixConfig>(size_t)>& prefixes,
                   const std::function<std::vector<PortRange>(size_t)>& ports) {
  Parsed p = parse("  - { name: c0, action: drop, match: { vlans: [1] } }\n",
                   "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
                   "server_groups: [ { name: fa, health_check: { port: 80 }, servers: [ { address: 10.0.0.1 } ] } ]\n");
  EXPECT_TRUE(p.ok) << formatErrors(p.errors);
  Config c = p.cfg;
  c.traffic_classes.clear();
  for (size_t i = 0; i < n; ++i) {
    TrafficClassConfig t;
    t.name = "c" + std::to_string(i);
    t.action = ClassAction::kDrop;
    t.match.prefixes = prefixes(i);
    t.match.l4_ports = ports(i);
    c.traffic_classes.push_back(std::move(t));
  }
  return c;
}

PrefixConfig v4(uint32_t a, uint8_t len) {
  const uint8_t b[4] = {uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), uint8_t(a)};
  return {IpAddr::v4(b), len};
}

// The shapes that made the shadow check run for minutes (every pair of
// classes compared prefix by prefix) are judged in full: 1,000 classes that
// share one list of 1,024 prefixes (a YAML anchor) and have ports of their
// own, and 1,000 classes of 1,024 scattered /32s. One class of each is
// planted inside an earlier one; it is the only one reported.
TEST(TrafficClasses, TheShadowCheckJudgesLargeSharedAndScatteredSetsInFull) {
  std::vector<PrefixConfig> shared;
  for (uint32_t k = 0; k < 1024; ++k) shared.push_back(v4(0x0A000000u | k * 2654435761u % 65536 << 8, 24));
  auto ownPorts = [](size_t i) {
    if (i == 700) return std::vector<PortRange>{{uint16_t(20 * 40), uint16_t(20 * 40 + 1)}};  // inside class 20's
    return std::vector<PortRange>{{uint16_t(i * 40), uint16_t(i * 40 + 9)}, {uint16_t(60000 + i), uint16_t(60000 + i)}};
  };
  Config c = withClasses(1000, [&](size_t) { return shared; }, ownPorts);
  std::vector<ConfigError> w = configWarnings(c);
  EXPECT_FALSE(notComputed(w)) << formatErrors(w);
  ASSERT_EQ(w.size(), 1u) << formatErrors(w);
  EXPECT_EQ(w[0].path, "traffic_classes[700]");
  EXPECT_NE(w[0].message.find("class 'c700' matches no packet: traffic_classes[20] ('c20') comes first"),
            std::string::npos) << w[0].message;

  std::vector<std::vector<PrefixConfig>> scattered(1000);
  uint32_t x = 1;
  for (auto& list : scattered)
    for (int k = 0; k < 1024; ++k) list.push_back(v4(x = x * 1664525u + 1013904223u, 32));
  scattered[999].assign(scattered[3].begin() + 100, scattered[3].begin() + 900);  // inside class 3's
  c = withClasses(1000, [&](size_t i) { return scattered[i]; }, [](size_t) { return std::vector<PortRange>{}; });
  w = configWarnings(c);
  EXPECT_FALSE(notComputed(w)) << formatErrors(w);
  ASSERT_EQ(w.size(), 1u) << formatErrors(w);
  EXPECT_EQ(w[0].path, "traffic_classes[999]");
  EXPECT_NE(w[0].message.find("traffic_classes[3] ('c3') comes first"), std::string::npos) << w[0].message;
}

// The shadow check's own worst case: 1,000 classes of 1,024 ports, the same
// but for one port each near the top, so that telling two classes apart
// walks almost all of their ports. The check stops at its bound and says so
// (a warning beginning "not computed", at the first class it did not judge),
// after reporting what it had found.
TEST(TrafficClasses, TheShadowCheckSaysWhenItStoppedAtItsBound) {
  auto ports = [](size_t i) {
    std::vector<PortRange> v;
    for (uint32_t p = 0; p < 1023; ++p) v.push_back({uint16_t(p * 64), uint16_t(p * 64)});
    v.push_back({uint16_t(65535 - 2 * i), uint16_t(65535 - 2 * i)});
    if (i == 1) v.back() = {65535, 65535};  // the same ports as class 0
    return v;
  };
  Config c = withClasses(1000, [](size_t) { return std::vector<PrefixConfig>{}; }, ports);
  std::vector<ConfigError> w = configWarnings(c);
  ASSERT_EQ(w.size(), 2u) << formatErrors(w);
  EXPECT_EQ(w[0].path, "traffic_classes[1]");
  EXPECT_NE(w[0].message.find("matches no packet: traffic_classes[0]"), std::string::npos) << w[0].message;
  ASSERT_TRUE(notComputed(w)) << formatErrors(w);
  const std::string& stop = w[1].message;
  EXPECT_NE(stop.find("not computed: whether an earlier class shadows " + w[1].path + " and the "),
            std::string::npos) << stop;
  EXPECT_NE(stop.find("the classes apply as written"), std::string::npos) << stop;
  // It judged some hundreds of classes first.
  const size_t j = std::stoul(w[1].path.substr(w[1].path.find('[') + 1));
  EXPECT_GT(j, 100u) << w[1].path;
  EXPECT_LT(j, 1000u) << w[1].path;
}

// A first class that takes every packet away from the appliances.
TEST(TrafficClasses, AFirstClassThatDropsOrBypassesEverythingIsAWarning) {
  auto first = [](const std::string& cls) {
    Parsed p = parse(cls + "  - { name: a, listener: firewalls-a }\n  - { name: b, listener: ids }\n");
    EXPECT_TRUE(p.ok) << formatErrors(p.errors);
    return warningsAt(configWarnings(p.cfg), "traffic_classes[0]");
  };
  std::vector<std::string> w = first("  - { name: quarantine, action: drop }\n");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], "class 'quarantine' comes first and matches every packet: the gateway drops all traffic and no "
                  "flow reaches an appliance; narrow its match or move it below the classes that should come first");
  w = first("  - { name: all, action: bypass, match: { prefixes: [0.0.0.0/0, \"::/0\"], protocols: [" +
            [] {
              std::string all;
              for (int p = 0; p < 256; ++p) all += (p ? ", " : "") + std::to_string(p);
              return all;
            }() + "] } }\n");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("the gateway bypasses all traffic"), std::string::npos) << w[0];
  // Not when it leaves some packets to the classes after it.
  EXPECT_TRUE(first("  - { name: q, action: drop, match: { prefixes: [0.0.0.0/0] } }\n").empty());
  EXPECT_TRUE(first("  - { name: q, action: drop, match: { l4_ports: [0-65535] } }\n").empty());
  EXPECT_TRUE(first("  - { name: q, action: drop, match: { ingress_ports: [0] } }\n").empty());
  EXPECT_TRUE(first("  - { name: q, listener: ids }\n").empty());
}

// An ingress port the gateway does not have: the class matches nothing
// there, and that port's traffic goes to the next class (found by trying it:
// one tenant's traffic reached another tenant's firewalls in gwlb-replay).
TEST(TrafficClasses, AnIngressPortThatDoesNotExistIsAWarning) {
  // kHead's node gives ports 0..4 (node.ports names 3 and 4).
  Parsed p = parse("  - { name: tenant-a, match: { ingress_ports: [4, 7] }, listener: firewalls-a }\n"
                   "  - { name: tenant-b, listener: ids }\n");
  ASSERT_TRUE(p.ok) << formatErrors(p.errors);
  std::vector<ConfigError> w = configWarnings(p.cfg);
  ASSERT_EQ(w.size(), 1u) << formatErrors(w);
  EXPECT_EQ(w[0].path, "traffic_classes[0].match.ingress_ports[1]");
  EXPECT_EQ(w[0].message,
            "port 7 does not exist: the config gives ports 0..4 (node.underlay_port, node.ports[].id; gwlbd's other "
            "ports are known only when it runs), so class 'tenant-a' matches nothing there and that traffic "
            "goes to the next class that matches; correct the id, or list the port in node.ports (gwlbd then "
            "refuses to start without it)");
  // gwlbd knows its ports: with 8 there is a port 7; with 5 ports 4 exists.
  EXPECT_TRUE(configWarnings(p.cfg, 8).empty());
  w = configWarnings(p.cfg, 5);
  ASSERT_EQ(w.size(), 1u) << formatErrors(w);
  EXPECT_EQ(w[0].message.substr(0, 54), "port 7 does not exist: gwlbd has 5 DPDK ports (0..4), ");
}

TEST(TrafficClasses, AServerGroupWithoutHealthCheckIsAWarning) {
  Parsed p = parse("  - { name: a, match: { vlans: [1] }, listener: firewalls-a }\n  - { name: b, listener: ids }\n",
                   "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
                   "server_groups:\n"
                   "  - { name: fa, servers: [ { address: 10.0.0.1 } ] }\n"
                   "  - { name: fb, health_check: { enabled: false }, servers: [ { address: 10.0.0.2 } ] }\n"
                   "listeners: [ { name: firewalls-a, server_groups: [fa] }, { name: ids, server_groups: [fb] } ]\n");
  ASSERT_TRUE(p.ok) << formatErrors(p.errors);
  std::vector<ConfigError> w = configWarnings(p.cfg);
  ASSERT_EQ(w.size(), 1u) << formatErrors(w);
  EXPECT_EQ(w[0].path, "server_groups[0]");
  EXPECT_EQ(w[0].message, "server group 'fa' has no health_check, so its appliances count as healthy forever and "
                          "new flows keep going to one that is down; add health_check (or health_check: { enabled: "
                          "false } to say so)");
}

}  // namespace
}  // namespace gwlb::ctl
