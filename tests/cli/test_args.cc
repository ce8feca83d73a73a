// gwlbctl argument parsing and client-side validation.
#include <gtest/gtest.h>

#include <algorithm>

#include "cli/args.h"
#include "cli/validate.h"
#include "control/config/config.h"

using namespace gwlb::cli;

namespace {

Invocation parse(std::vector<std::string> a, const char* env = nullptr) { return parseArgs(a, env); }

// The UsageError message for argv, or "" when it parses and builds.
std::string usageError(std::vector<std::string> a) {
  try {
    Invocation inv = parseArgs(a, nullptr);
    if (inv.command && !inv.command->method.empty() && !inv.help) buildRequest(inv);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Args, GlobalOptionsAnywhereAndDefaults) {
  auto inv = parse({"servers"});
  ASSERT_NE(inv.command, nullptr);
  EXPECT_EQ(inv.command->name, "servers");
  EXPECT_EQ(inv.socket_path, "/run/gwlbd/gwlbd.sock");
  EXPECT_DOUBLE_EQ(inv.timeout_s, 5.0);
  EXPECT_FALSE(inv.json);

  inv = parse({"--socket", "/tmp/a.sock", "servers", "--json", "--timeout=0.5", "--group", "fw"});
  EXPECT_EQ(inv.socket_path, "/tmp/a.sock");
  EXPECT_TRUE(inv.json);
  EXPECT_DOUBLE_EQ(inv.timeout_s, 0.5);
  EXPECT_EQ(inv.opt("--group"), "fw");
}

TEST(Args, SocketFromEnvironmentUnlessGiven) {
  EXPECT_EQ(parse({"status"}, "/tmp/env.sock").socket_path, "/tmp/env.sock");
  EXPECT_EQ(parse({"status"}, "").socket_path, kDefaultSocket);
  EXPECT_EQ(parse({"status", "--socket=/x.sock"}, "/tmp/env.sock").socket_path, "/x.sock");
}

TEST(Args, SubcommandsAndPositionals) {
  auto inv = parse({"server", "add", "firewalls", "192.0.2.20", "--weight", "50"});
  EXPECT_EQ(inv.command->name, "server add");
  EXPECT_EQ(inv.args, (std::vector<std::string>{"firewalls", "192.0.2.20"}));
  auto req = buildRequest(inv);
  EXPECT_EQ(req.method, "server.add");
  EXPECT_EQ(req.params, (Json{{"group", "firewalls"}, {"address", "192.0.2.20"}, {"weight", 50}}));

  inv = parse({"fleet"});
  EXPECT_EQ(inv.command->name, "fleet show") << "`gwlbctl fleet` is `fleet show`";
  EXPECT_EQ(buildRequest(inv).method, "fleet");
  EXPECT_EQ(buildRequest(parse({"fleet", "leave"})).method, "fleet.leave");
  EXPECT_EQ(buildRequest(parse({"--json", "fleet", "join"})).method, "fleet.join");
  EXPECT_TRUE(parse({"fleet", "--help"}).help);
  EXPECT_EQ(parse({"fleet", "--help"}).group, "fleet");

  // capture stop (issue 24 item 10): a device (PCI names have ':'), a queue.
  req = buildRequest(parse({"capture", "stop", "0000:3b:00.0", "--queue", "3"}));
  EXPECT_EQ(req.method, "capture.stop");
  EXPECT_EQ(req.params, (Json{{"device", "0000:3b:00.0"}, {"queue", 3}}));
  EXPECT_EQ(buildRequest(parse({"capture", "stop"})).params, Json::object());
  EXPECT_THROW(buildRequest(parse({"capture", "stop", "net pcap0"})), UsageError);
  EXPECT_THROW(buildRequest(parse({"capture", "stop", "--queue", "65535"})), UsageError);

  inv = parse({"config", "check", "x.yaml"});
  EXPECT_EQ(inv.command->name, "config check");
  EXPECT_EQ(inv.args[0], "x.yaml");
}

TEST(Args, Help) {
  EXPECT_THROW(parse({}), UsageError);
  auto inv = parse({"--help"});
  EXPECT_TRUE(inv.help);
  EXPECT_EQ(inv.command, nullptr);
  inv = parse({"help"});
  EXPECT_TRUE(inv.help);
  EXPECT_EQ(inv.command, nullptr);
  inv = parse({"help", "flows"});
  EXPECT_TRUE(inv.help);
  EXPECT_EQ(inv.command->name, "flows");
  inv = parse({"server", "remove", "--help"});
  EXPECT_TRUE(inv.help);
  EXPECT_EQ(inv.command->name, "server remove");
  inv = parse({"server", "-h"});
  EXPECT_TRUE(inv.help);
  EXPECT_EQ(inv.group, "server");
  inv = parse({"explain", "--help"});  // help needs no positionals
  EXPECT_TRUE(inv.help);
  // Every command's help names every option.
  for (const auto& c : commandTable()) {
    std::string h = commandHelp(c);
    for (const auto& o : c.options) EXPECT_NE(h.find(o.name), std::string::npos) << c.name;
    EXPECT_NE(topLevelHelp().find(c.name), std::string::npos) << c.name;
  }
}

TEST(Args, UsageErrors) {
  EXPECT_NE(usageError({}).find("no command"), std::string::npos);
  EXPECT_NE(usageError({"frobnicate"}).find("unknown command 'frobnicate'"), std::string::npos);
  EXPECT_NE(usageError({"server"}).find("needs a subcommand: add, remove, set"), std::string::npos);
  EXPECT_NE(usageError({"server", "drop", "x"}).find("unknown subcommand 'drop'"), std::string::npos);
  EXPECT_NE(usageError({"servers", "--grup", "x"}).find("unknown option '--grup'"), std::string::npos);
  EXPECT_NE(usageError({"servers", "--group"}).find("needs a value (NAME)"), std::string::npos);
  EXPECT_NE(usageError({"servers", "--json=1"}).find("takes no value"), std::string::npos);
  EXPECT_NE(usageError({"servers", "extra"}).find("unexpected argument 'extra'"), std::string::npos);
  EXPECT_NE(usageError({"server", "remove"}).find("missing ADDRESS"), std::string::npos);
  EXPECT_NE(usageError({"flows", "--port", "1", "--port", "2"}).find("given twice"), std::string::npos);
  EXPECT_NE(usageError({"status", "--timeout", "0"}).find("--timeout: '0'"), std::string::npos);
  EXPECT_NE(usageError({"--group", "x", "servers"}).find("unknown option '--group'"), std::string::npos);
}

TEST(Validate, Numbers) {
  EXPECT_EQ(parseUint("--limit", "7", 1, 10000), 7u);
  EXPECT_THROW(parseUint("--limit", "0", 1, 10000), UsageError);
  EXPECT_THROW(parseUint("--limit", "10001", 1, 10000), UsageError);
  EXPECT_THROW(parseUint("--limit", "-1", 1, 10000), UsageError);
  EXPECT_THROW(parseUint("--limit", "7x", 1, 10000), UsageError);
  EXPECT_THROW(parseUint("--limit", "", 1, 10000), UsageError);
  EXPECT_THROW(parseUint("--limit", "99999999999999999999999", 1, 10000), UsageError);
  EXPECT_DOUBLE_EQ(parseSeconds("--watch", "0.5", 0.1, 10), 0.5);
  EXPECT_THROW(parseSeconds("--watch", "1e3", 0.1, 10), UsageError);
  EXPECT_THROW(parseSeconds("--watch", "nan", 0.1, 10), UsageError);
  EXPECT_THROW(parseSeconds("--watch", "0.01", 0.1, 10), UsageError);
  EXPECT_EQ(parsePort("--port", "65535"), 65535);
  EXPECT_EQ(parsePort("--port", "0"), 0);
  EXPECT_THROW(parsePort("--port", "65536"), UsageError);
  EXPECT_THROW(parsePort("--port", "http"), UsageError);
  try {
    parsePort("DPORT", "99999");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "DPORT: '99999' is not a port number 0-65535");
  }
}

TEST(Validate, AddressesAndPrefixes) {
  EXPECT_EQ(parseAddress("ADDRESS", "192.0.2.10"), "192.0.2.10");
  EXPECT_EQ(parseAddress("ADDRESS", "2001:DB8::1"), "2001:db8::1");
  EXPECT_THROW(parseAddress("ADDRESS", "192.0.2.300"), UsageError);
  EXPECT_THROW(parseAddress("ADDRESS", "fw1"), UsageError);
  EXPECT_EQ(parseCidr("--src", "198.51.100.0/24"), "198.51.100.0/24");
  EXPECT_EQ(parseCidr("--src", "198.51.100.7"), "198.51.100.7/32");
  EXPECT_EQ(parseCidr("--src", "2001:db8::/32"), "2001:db8::/32");
  EXPECT_EQ(parseCidr("--src", "2001:db8::1"), "2001:db8::1/128");
  EXPECT_THROW(parseCidr("--src", "198.51.100.0/33"), UsageError);
  EXPECT_THROW(parseCidr("--src", "2001:db8::/129"), UsageError);
  EXPECT_THROW(parseCidr("--src", "198.51.100.0/"), UsageError);
  EXPECT_THROW(parseCidr("--src", "198.51.100.0/x"), UsageError);
  EXPECT_THROW(parseCidr("--src", "/24"), UsageError);
  EXPECT_EQ(parseMac("--mac", "02-00-00-00-00-AB"), "02:00:00:00:00:ab");
  EXPECT_THROW(parseMac("--mac", "02:00:00:00:00"), UsageError);
  EXPECT_EQ(parseGroupName("GROUP", "fw-1.a_b"), "fw-1.a_b");
  EXPECT_THROW(parseGroupName("GROUP", "fw 1"), UsageError);
  EXPECT_THROW(parseGroupName("GROUP", std::string(64, 'a')), UsageError);
}

TEST(Validate, Protocols) {
  EXPECT_EQ(parseProto("--proto", "UDP"), Json("udp"));
  EXPECT_EQ(parseProto("--proto", "icmpv6"), Json("icmpv6"));
  EXPECT_EQ(parseProto("--proto", "47"), Json("47"));
  EXPECT_EQ(parseProto("--proto", "006"), Json("6"));
  EXPECT_THROW(parseProto("--proto", "256"), UsageError);
  EXPECT_THROW(parseProto("--proto", "gre"), UsageError);
}

TEST(Validate, FlowsRequest) {
  auto req = buildRequest(parse({"flows", "--server", "192.0.2.10", "--src", "198.51.100.0/24",
                                 "--proto", "tcp", "--port", "443", "--limit", "7"}));
  EXPECT_EQ(req.method, "flows");
  EXPECT_EQ(req.params, (Json{{"server", "192.0.2.10"}, {"src", "198.51.100.0/24"},
                              {"proto", "tcp"}, {"port", 443}, {"limit", 7}}));
  EXPECT_EQ(flowFilterArgs(req.params),
            " --server 192.0.2.10 --src 198.51.100.0/24 --proto tcp --port 443 --limit 7");
  req = buildRequest(parse({"flows", "--count", "--dst", "2001:db8::/32"}));
  EXPECT_EQ(req.params, (Json{{"dst", "2001:db8::/32"}, {"count", true}}));
  EXPECT_EQ(buildRequest(parse({"flows", "--all", "--cursor", "abc"})).params, (Json{{"cursor", "abc"}}));
  EXPECT_NE(usageError({"flows", "--count", "--all"}).find("cannot be combined"), std::string::npos);
  EXPECT_NE(usageError({"flows", "--src", "10.0.0.0/40"}).find("--src: '10.0.0.0/40'"), std::string::npos);
  EXPECT_NE(usageError({"flows", "--limit", "0"}).find("--limit: '0'"), std::string::npos);
  EXPECT_NE(usageError({"flows", "--proto", "xyz"}).find("--proto: 'xyz'"), std::string::npos);
  EXPECT_NE(usageError({"flows", "--server", "fw1"}).find("--server: 'fw1'"), std::string::npos);
}

// Issue 14 item 13: --force reaches the API on every command that can take
// the last appliance out of service, and nowhere else.
TEST(Validate, ForceFlag) {
  EXPECT_EQ(buildRequest(parse({"server", "drain", "192.0.2.10", "--force"})).params,
            (Json{{"address", "192.0.2.10"}, {"force", true}}));
  EXPECT_EQ(buildRequest(parse({"server", "set", "192.0.2.10", "--weight", "0", "--force"})).params,
            (Json{{"address", "192.0.2.10"}, {"weight", 0}, {"force", true}}));
  EXPECT_EQ(buildRequest(parse({"server", "remove", "--force", "192.0.2.10"})).params,
            (Json{{"address", "192.0.2.10"}, {"force", true}}));
  EXPECT_EQ(buildRequest(parse({"reload", "--force"})).params, (Json{{"force", true}}));
  EXPECT_EQ(buildRequest(parse({"server", "drain", "192.0.2.10"})).params,
            (Json{{"address", "192.0.2.10"}}));
  EXPECT_THROW(parse({"server", "add", "fw", "192.0.2.10", "--force"}), UsageError);
  EXPECT_THROW(parse({"server", "drain", "192.0.2.10", "--force=yes"}), UsageError);
  EXPECT_NE(commandHelp(*findCommand("server drain")).find("--force"), std::string::npos);
  EXPECT_NE(commandHelp(*findCommand("reload")).find("no appliance in service"), std::string::npos);
}

// `reload --help` names every setting a reload holds for a restart, from the
// list the reload compares (it named four: dataplane, eal,
// node.underlay_port, control).
TEST(Help, ReloadListsEveryRestartSetting) {
  const std::string help = commandHelp(*findCommand("reload"));
  const std::vector<std::string> names = gwlb::ctl::restartKeyNames();
  for (const char* known : {"dataplane", "eal", "node.underlay_port", "control", "log_level", "metrics",
                            "health_endpoint", "fleet", "node.flow_hash_secret"})
    EXPECT_NE(std::find(names.begin(), names.end(), known), names.end()) << known;
  for (const std::string& n : names) {
    const bool named = help.find(" " + n + ",") != std::string::npos ||
                       help.find(" " + n + ".") != std::string::npos ||
                       help.find("\n" + n + ",") != std::string::npos ||
                       help.find("\n" + n + ".") != std::string::npos;
    EXPECT_TRUE(named) << n << " missing from reload --help:\n" << help;
  }
}

TEST(Validate, ExplainRequest) {
  auto req = buildRequest(parse({"explain", "198.51.100.1", "203.0.113.8", "tcp", "20000", "80"}));
  EXPECT_EQ(req.params, (Json{{"src", "198.51.100.1"}, {"dst", "203.0.113.8"}, {"proto", "tcp"},
                              {"sport", 20000}, {"dport", 80}}));
  req = buildRequest(parse({"explain", "2001:db8::1", "2001:db8::2", "icmpv6"}));
  EXPECT_EQ(req.params.size(), 3u);
  EXPECT_NE(usageError({"explain", "198.51.100.1", "2001:db8::2", "udp"}).find("same address family"),
            std::string::npos);
  EXPECT_NE(usageError({"explain", "198.51.100.1", "203.0.113.8", "tcp", "1"}).find("missing DPORT"),
            std::string::npos);
  EXPECT_NE(usageError({"explain", "198.51.100.1", "203.0.113.8"}).find("missing PROTO"),
            std::string::npos);
  EXPECT_NE(usageError({"explain", "a", "203.0.113.8", "tcp"}).find("SRC: 'a'"), std::string::npos);
  EXPECT_NE(usageError({"explain", "198.51.100.1", "203.0.113.8", "tcp", "1", "2", "3"})
                .find("unexpected argument '3'"),
            std::string::npos);
}

// Issue 27: the ingress port and VLAN the traffic classes look at.
TEST(Validate, ExplainPortAndVlan) {
  auto req = buildRequest(parse({"explain", "198.51.100.1", "203.0.113.8", "tcp", "1", "2", "--port", "3",
                                 "--vlan", "100"}));
  EXPECT_EQ(req.params["port"], 3);
  EXPECT_EQ(req.params["vlan"], 100);
  EXPECT_EQ(buildRequest(parse({"explain", "198.51.100.1", "203.0.113.8", "udp", "--vlan", "0"})).params["vlan"], 0);
  EXPECT_NE(usageError({"explain", "198.51.100.1", "203.0.113.8", "udp", "--vlan", "4096"}).find("--vlan"),
            std::string::npos);
  EXPECT_NE(usageError({"explain", "198.51.100.1", "203.0.113.8", "udp", "--port", "x"}).find("--port"),
            std::string::npos);
  EXPECT_EQ(buildRequest(parse({"classes"})).method, "classes");
  EXPECT_THROW(parse({"classes", "web"}), UsageError);
}

TEST(Validate, ServerAndStatsRequests) {
  EXPECT_EQ(buildRequest(parse({"server", "set", "192.0.2.10", "--weight", "0"})).params,
            (Json{{"address", "192.0.2.10"}, {"weight", 0}}));
  EXPECT_NE(usageError({"server", "set", "192.0.2.10"}).find("missing --weight"), std::string::npos);
  EXPECT_NE(usageError({"server", "add", "fw", "192.0.2.10", "--weight", "10001"}).find("--weight"),
            std::string::npos);
  // An IPv6 appliance too (an IPv6-only node has no other kind): gwlbd checks the family.
  EXPECT_EQ(buildRequest(parse({"server", "add", "fw", "2001:db8::1"})).params,
            (Json{{"group", "fw"}, {"address", "2001:db8::1"}}));
  EXPECT_NE(usageError({"server", "add", "fw", "192.0.2.9", "--mac", "zz"}).find("--mac: 'zz'"),
            std::string::npos);
  EXPECT_EQ(buildRequest(parse({"server", "remove", "192.0.2.10"})).method, "server.remove");
  EXPECT_EQ(buildRequest(parse({"stats", "--watch", "1", "--count", "2"})).params, Json::object());
  EXPECT_NE(usageError({"stats", "--count", "2"}).find("--count needs --watch"), std::string::npos);
  EXPECT_NE(usageError({"stats", "--watch", "0"}).find("--watch: '0'"), std::string::npos);
  EXPECT_EQ(buildRequest(parse({"reload"})).method, "reload");
}

TEST(Validate, HealthDestinationsRequest) {
  auto inv = parse({"health-destinations"});
  ASSERT_NE(inv.command, nullptr);
  EXPECT_EQ(inv.command->name, "health-destinations");
  auto req = buildRequest(inv);
  EXPECT_EQ(req.method, "destinations");
  EXPECT_EQ(req.params, Json::object());
  req = buildRequest(parse({"health-destinations", "inspect-1.a_b"}));
  EXPECT_EQ(req.params, (Json{{"name", "inspect-1.a_b"}}));

  // The alias is the same command: same method, parameters, help and errors.
  inv = parse({"regions", "inspect", "--json"});
  ASSERT_NE(inv.command, nullptr);
  EXPECT_EQ(inv.command, findCommand("health-destinations"));
  EXPECT_EQ(findCommand("regions"), findCommand("health-destinations"));
  EXPECT_TRUE(inv.json);
  req = buildRequest(inv);
  EXPECT_EQ(req.method, "destinations");
  EXPECT_EQ(req.params, (Json{{"name", "inspect"}}));
  EXPECT_EQ(buildRequest(parse({"regions"})).params, Json::object());
  inv = parse({"help", "regions"});
  EXPECT_TRUE(inv.help);
  EXPECT_EQ(inv.command->name, "health-destinations");
  std::string h = commandHelp(*inv.command);
  EXPECT_NE(h.find("usage: gwlbctl health-destinations [NAME]\n   or: gwlbctl regions [NAME]\n"),
            std::string::npos)
      << h;
  EXPECT_NE(topLevelHelp().find("health-destinations [NAME]"), std::string::npos);
  EXPECT_NE(topLevelHelp().find("(alias: regions)"), std::string::npos);
  EXPECT_TRUE(parse({"regions", "--help"}).help);

  // NAME is checked like a name in the config file; one at most; no options.
  EXPECT_EQ(usageError({"regions", "in spect"}),
            "NAME: 'in spect' is not a listener name ([A-Za-z0-9_.-], 1-63 characters)");
  EXPECT_NE(usageError({"health-destinations", std::string(64, 'a')}).find("NAME: '"),
            std::string::npos);
  EXPECT_NE(usageError({"health-destinations", "in/spect"}).find("not a listener name"),
            std::string::npos);
  EXPECT_EQ(usageError({"regions", std::string(63, 'a')}), "");
  EXPECT_NE(usageError({"regions", "a", "b"}).find("unexpected argument 'b'"), std::string::npos);
  EXPECT_NE(usageError({"health-destinations", "a", "b"}).find("unexpected argument 'b'"),
            std::string::npos);
  EXPECT_NE(usageError({"regions", "--group", "x"}).find("unknown option '--group' for "
                                                          "'health-destinations'"),
            std::string::npos);
  try {
    parse({"regions", "a", "b"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(e.command(), "health-destinations");  // "Try 'gwlbctl health-destinations --help'."
  }
  EXPECT_NE(usageError({"region"}).find("unknown command 'region'"), std::string::npos);
}

// Issue 18 item 10: --proto sctp, explain's ports as the dataplane keys them,
// servers --watch, flows --sort.
TEST(Validate, SctpAndPortlessProtocols) {
  EXPECT_EQ(parseProto("--proto", "SCTP"), Json("sctp"));
  EXPECT_EQ(buildRequest(parse({"flows", "--proto", "sctp"})).params, (Json{{"proto", "sctp"}}));
  auto req = buildRequest(parse({"explain", "198.51.100.1", "203.0.113.8", "sctp", "5000", "38412"}));
  EXPECT_EQ(req.params, (Json{{"src", "198.51.100.1"}, {"dst", "203.0.113.8"}, {"proto", "sctp"},
                              {"sport", 5000}, {"dport", 38412}}));
  EXPECT_EQ(buildRequest(parse({"explain", "198.51.100.1", "203.0.113.8", "136", "1", "2"})).params["sport"], 1);
  EXPECT_EQ(buildRequest(parse({"explain", "198.51.100.1", "203.0.113.8", "icmp", "7", "7"})).params["dport"], 7);
  // GRE (47) and ESP (50) are keyed on addresses and protocol: ports are refused.
  EXPECT_NE(usageError({"explain", "198.51.100.1", "203.0.113.8", "47", "1", "2"})
                .find("PROTO 47 has no ports: gwlbd keys it on addresses and protocol"),
            std::string::npos);
  EXPECT_EQ(usageError({"explain", "198.51.100.1", "203.0.113.8", "50"}), "");
}

TEST(Validate, ServersWatchAndFlowsSort) {
  EXPECT_EQ(buildRequest(parse({"servers", "--watch", "0.5", "--count", "3", "--group", "fw"})).params,
            (Json{{"group", "fw"}}));
  EXPECT_NE(usageError({"servers", "--count", "3"}).find("--count needs --watch"), std::string::npos);
  EXPECT_NE(usageError({"servers", "--watch", "0.01"}).find("--watch: '0.01'"), std::string::npos);
  // Client-side only: --sort and --reverse are not sent.
  EXPECT_EQ(buildRequest(parse({"flows", "--sort", "-packets", "--proto", "tcp"})).params,
            (Json{{"proto", "tcp"}}));
  EXPECT_EQ(usageError({"flows", "--sort", "appliance", "--reverse"}), "");
  EXPECT_NE(usageError({"flows", "--sort", "bytes"}).find("--sort: 'bytes' is not a field to sort on"),
            std::string::npos);
  EXPECT_NE(usageError({"flows", "--reverse"}).find("--reverse needs --sort"), std::string::npos);
  EXPECT_NE(usageError({"flows", "--sort", "age", "--count"}).find("cannot be combined"), std::string::npos);
  EXPECT_NE(usageError({"flows", "--sort", "age", "--cursor", "5"}).find("cannot be combined"),
            std::string::npos);
  EXPECT_NE(commandHelp(*findCommand("flows")).find("--sort FIELD"), std::string::npos);
  EXPECT_NE(commandHelp(*findCommand("servers")).find("--watch SECONDS"), std::string::npos);
  EXPECT_NE(commandHelp(*findCommand("stats")).find("--all"), std::string::npos);
}
