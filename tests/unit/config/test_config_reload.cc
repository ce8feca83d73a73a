// Unit tests of what the key table says about keys as a whole (issue 15):
// which changes a reload cannot apply (restartNeeded, holdRestartKeys) and
// the one HTTP status code grammar of the config and the probes.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/http_codes.h"
#include "control/config/config.h"

namespace gwlb::ctl {
namespace {

const char* const kRunning = R"(
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, underlay_port: 0,
        flow_hash_secret: 00112233445566778899aabbccddeeff }
server_groups:
  - name: g0
    servers: [ { address: 192.0.2.10 } ]
dataplane: { workers: 1 }
eal: ["--no-huge"]
log_level: info
control: { socket: /run/gwlbd/gwlbd.sock, socket_mode: "0660" }
metrics: { listen: "127.0.0.1:9100" }
health_endpoint: { listen: "127.0.0.1:8081" }
)";

Config running() {
  Config c;
  std::vector<ConfigError> errs;
  EXPECT_TRUE(parseConfig(kRunning, c, errs)) << formatErrors(errs);
  return c;
}

struct Change {
  const char* what;
  std::function<void(Config&)> apply;
  std::vector<std::string> restart;  // what restart_needed must say
};

// Every key a reload cannot apply, and the name the API has always reported
// it by (tests/cli, docs/control-api.md): one change each.
const std::vector<Change>& restartChanges() {
  static const std::vector<Change> v = {
      {"dataplane.workers", [](Config& c) { c.dataplane.workers = 2; }, {"dataplane"}},
      {"dataplane.burst", [](Config& c) { c.dataplane.burst = 64; }, {"dataplane"}},
      {"dataplane.flow_table_size", [](Config& c) { c.dataplane.flow_table_size = 4096; }, {"dataplane"}},
      {"dataplane.mbufs", [](Config& c) { c.dataplane.mbufs = 4096; }, {"dataplane"}},
      {"dataplane.rx_queue_size", [](Config& c) { c.dataplane.rx_queue_size = 512; }, {"dataplane"}},
      {"dataplane.tx_queue_size", [](Config& c) { c.dataplane.tx_queue_size = 512; }, {"dataplane"}},
      {"eal", [](Config& c) { c.eal_args.push_back("--no-pci"); }, {"eal"}},
      {"node.underlay_port", [](Config& c) { c.node.underlay_port = 1; }, {"node.underlay_port"}},
      {"node.flow_hash_secret", [](Config& c) { c.node.flow_hash_secret = std::string(32, 'f'); },
       {"node.flow_hash_secret"}},
      // The taps are created once, at start.
      {"node.exception_path.enabled", [](Config& c) { c.node.exception_path.enabled = true; },
       {"node.exception_path"}},
      {"node.exception_path.name_prefix", [](Config& c) { c.node.exception_path.name_prefix = "x"; },
       {"node.exception_path"}},
      {"control.socket", [](Config& c) { c.control.socket = "/run/x.sock"; }, {"control"}},
      {"control.socket_mode", [](Config& c) { c.control.socket_mode = 0600; }, {"control"}},
      {"control.socket_group", [](Config& c) { c.control.socket_group = "adm"; }, {"control"}},
      {"metrics.listen", [](Config& c) { c.metrics.listen = "127.0.0.1:9200"; }, {"metrics"}},
      {"health_endpoint.listen", [](Config& c) { c.health_endpoint.listen = ""; }, {"health_endpoint"}},
      // The fleet secret keys the flow hash: a new one would strand every flow.
      {"fleet.node_name", [](Config& c) { c.fleet.node_name = "gw-2"; }, {"fleet"}},
      {"fleet.secret", [](Config& c) { c.fleet.secret = std::string(32, 'e'); }, {"fleet"}},
      {"fleet.secret_file", [](Config& c) { c.fleet.secret_file = "/etc/gwlb/k"; }, {"fleet"}},
      // gwlbd sets its log level at start only: a reload used to apply
      // nothing and say nothing about it.
      {"log_level", [](Config& c) { c.log_level = "debug"; }, {"log_level"}},
  };
  return v;
}

TEST(ConfigReload, RestartNeededNamesEveryRestartKey) {
  const Config run = running();
  for (const Change& ch : restartChanges()) {
    SCOPED_TRACE(ch.what);
    Config next = run;
    ch.apply(next);
    EXPECT_EQ(restartNeeded(run, next), ch.restart);
  }
  // A section is named once however many of its keys change.
  Config next = run;
  for (const Change& ch : restartChanges()) ch.apply(next);
  EXPECT_EQ(restartNeeded(run, next),
            (std::vector<std::string>{"node.underlay_port", "node.flow_hash_secret", "node.exception_path",
                                      "dataplane", "eal",
                                      "log_level", "control", "metrics", "health_endpoint",
                                      "fleet"}));
  EXPECT_TRUE(restartNeeded(run, run).empty());
}

// What a reload applies: nothing to report.
TEST(ConfigReload, ReloadableKeysNeedNoRestart) {
  const Config run = running();
  Config next = run;
  next.node.underlay_ip = IpAddr::v4(0xC0000202);
  next.node.underlay_mtu = 9000;
  next.node.gateway_mac = MacAddr::parse("02:00:00:00:00:fe");
  next.node.ipv6_addresses.push_back(*IpAddr::parse("2001:db8::1"));
  next.server_groups[0].appliances.push_back({IpAddr::v4(0xC000020B), 5, std::nullopt});
  next.server_groups[0].tcp_idle_timeout_s = 600;
  next.server_groups[0].health_check.configured = true;
  next.server_groups.push_back(next.server_groups[0]);
  next.server_groups.back().name = "g1";
  next.listeners.push_back({"l", {"g0"}, 30, WhenAllUnhealthy::kDrop});
  EXPECT_TRUE(restartNeeded(run, next).empty());
}

// A reload keeps the running value of every key it cannot apply and takes
// the rest from the file.
TEST(ConfigReload, HoldRestartKeysKeepsRunningValues) {
  const Config run = running();
  for (const Change& ch : restartChanges()) {
    SCOPED_TRACE(ch.what);
    Config next = run;
    ch.apply(next);
    next.node.underlay_mtu = 9000;  // reloadable: taken from the file
    EXPECT_EQ(holdRestartKeys(run, next), ch.restart);
    EXPECT_TRUE(restartNeeded(run, next).empty()) << "still differs after hold";
    EXPECT_EQ(next.node.underlay_mtu, 9000u);
    EXPECT_EQ(next.log_level, run.log_level);
    EXPECT_EQ(next.eal_args, run.eal_args);
  }
}

// One grammar for http_codes: what the config accepts, the probes accept.
// The config file is the source of truth: a reload reverts the runtime
// changes its file does not carry (gwlbd's reload, gwlb-replay's reload event).
TEST(ConfigReload, RevertedByReloadListsRuntimeChangesTheFileDoesNotCarry) {
  const Config file = running();
  Config run = file;
  run.server_groups[0].appliances.clear();  // 192.0.2.10 removed at runtime
  ApplianceConfig added;
  added.address = *IpAddr::parse("192.0.2.11");
  added.weight = 7;
  run.server_groups[0].appliances.push_back(added);  // added at runtime
  auto changes = runtimeChanges(file, run);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].text(), "192.0.2.11 (group g0): added at runtime, not in the file");
  EXPECT_EQ(changes[1].text(), "192.0.2.10 (group g0): removed at runtime, still in the file");
  // Reloading the same file reverts both.
  auto reverted = revertedByReload(file, run, file);
  ASSERT_EQ(reverted.size(), 2u);
  EXPECT_STREQ(reverted[1].change(), "removed");
  EXPECT_EQ(reverted[1].after_reload, 100);
  EXPECT_EQ(reverted[0].after_reload, -1);
  // A file that now says what the running config says reverts nothing.
  EXPECT_TRUE(revertedByReload(file, run, run).empty());
  Config weight = file;
  weight.server_groups[0].appliances[0].weight = 5;
  auto w = runtimeChanges(file, weight);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].text(), "192.0.2.10 (group g0): weight 5 at runtime, 100 in the file");
}

TEST(HttpCodes, OneGrammar) {
  struct Case {
    const char* text;
    int lo, hi;  // lo == 0: rejected
  };
  const Case cases[] = {{"http_2xx", 200, 299}, {"http_5xx", 500, 599}, {"200", 200, 200},
                        {"200-299", 200, 299},  {"100", 100, 100},      {"599-599", 599, 599},
                        {"http_1xx", 0, 0},     {"http_6xx", 0, 0},     {"600", 0, 0},
                        {"099", 0, 0},          {"299-200", 0, 0},      {"20", 0, 0},
                        {"200-", 0, 0},         {"-200", 0, 0},         {"200-2-3", 0, 0},
                        {"HTTP_2XX", 0, 0},     {"", 0, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto r = parseHttpCode(c.text);
    ASSERT_EQ(r.has_value(), c.lo != 0);
    if (r) {
      EXPECT_EQ(r->lo, c.lo);
      EXPECT_EQ(r->hi, c.hi);
    }
    Config cfg;
    std::vector<ConfigError> errs;
    // kRunning's group is not the last key: put the check under it.
    std::string text = kRunning;
    text.insert(text.find("dataplane:"), "    health_check: { protocol: http, http_codes: [\"" +
                                             std::string(c.text) + "\"] }\n");
    EXPECT_EQ(parseConfig(text, cfg, errs), c.lo != 0) << formatErrors(errs);
  }
}

// gwlbctl config dump (issue 18 item 9): the running config as YAML that
// loads back to the same config, with runtime changes in it, and secrets
// written in the config left out unless asked for.
TEST(ConfigDump, LoadsBackToTheSameConfigWithRuntimeChangesAndNoSecrets) {
  const char* text = R"(
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: fw-one
    geneve: { format: ethernet, vni: 0xffffff }
    tcp_idle_timeout: 60s
    health_check: { protocol: http, port: 8080, path: /healthz, interval: 250ms, http_codes: [http_2xx, 301-302] }
    servers: [ { address: 10.0.0.1, weight: 0 }, { address: 10.0.0.2, mac: 02:00:00:00:00:02 } ]
control: { socket: /run/gwlbd/x.sock, socket_mode: "0600" }
eal: [--no-huge, "-m", "256"]
fleet: { node_name: gw-a, secret: 00112233445566778899aabbccddeeff, sync_listen: "127.0.0.1:7000",
         peers: ["127.0.0.1:7001"] }
)";
  Config c;
  std::vector<ConfigError> errs;
  ASSERT_TRUE(parseConfig(text, c, errs)) << formatErrors(errs);
  // What server.add and server.set do to the running config.
  c.server_groups[0].appliances.push_back(ApplianceConfig{});
  c.server_groups[0].appliances.back().address = IpAddr::v4(0x0A000003u);
  c.server_groups[0].appliances[0].weight = 7;

  std::vector<std::string> hidden;
  std::string dump = dumpConfig(c, {}, &hidden);
  EXPECT_EQ(hidden, std::vector<std::string>{"fleet.secret"});
  EXPECT_EQ(dump.find("00112233445566778899aabbccddeeff"), std::string::npos) << dump;
  EXPECT_NE(dump.find("# secret: (a secret, not shown"), std::string::npos) << dump;
  EXPECT_NE(dump.find("address: 10.0.0.3"), std::string::npos) << dump;
  EXPECT_NE(dump.find("weight: 7"), std::string::npos) << dump;
  EXPECT_NE(dump.find("interval: 250ms"), std::string::npos) << dump;
  EXPECT_NE(dump.find("path: \"/healthz\""), std::string::npos) << dump;

  std::string full = dumpConfig(c, {.secrets = true});
  Config back;
  ASSERT_TRUE(parseConfig(full, back, errs)) << formatErrors(errs) << "\n" << full;
  EXPECT_EQ(dumpConfig(back, {.secrets = true}), full);
  EXPECT_TRUE(restartNeeded(c, back).empty());
  ASSERT_EQ(back.server_groups[0].appliances.size(), 3u);
  EXPECT_EQ(back.server_groups[0].appliances[0].weight, 7u);
  EXPECT_EQ(back.server_groups[0].appliances[2].address, IpAddr::v4(0x0A000003u));
  EXPECT_EQ(back.server_groups[0].name, "fw-one");
  EXPECT_EQ(back.fleet.secret, c.fleet.secret);
  EXPECT_EQ(back.eal_args, c.eal_args);
}

}  // namespace
}  // namespace gwlb::ctl
