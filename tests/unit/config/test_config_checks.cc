// What gwlbd checks in a file beyond its keys, shared by gwlbd (start-up,
// --check-config, reload) and `gwlbctl config check` (issue 24 items 12, 14):
// the secret files as errors with their key path, the key's name under
// restart_needed, the lcores the EAL arguments give, and the warnings.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "control/config/config.h"

namespace gwlb::ctl {
namespace {

const std::string kBase =
    "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
    "server_groups: [ { name: g, servers: [ { address: 10.0.0.1 } ] } ]\n";

class RunnableConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gwlb-runnable-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    std::string p = (dir_ / name).string();
    { std::ofstream(p) << text; }
    ::chmod(p.c_str(), mode);
    return p;
  }
  std::filesystem::path dir_;
};

// loadConfigFile() alone accepted these; gwlbd's start-up refused them.
TEST_F(RunnableConfig, SecretFilesAreCheckedAsGwlbdChecksThem) {
  const std::string digits = "00112233445566778899aabbccddeeff";
  std::string good = write("good.key", digits);
  std::string open = write("open.key", digits, 0644);
  std::string link = (dir_ / "link.key").string();
  std::filesystem::create_symlink(good, link);
  struct Case {
    std::string extra, path, needle;
  };
  const std::vector<Case> cases = {
      {"fleet: { node_name: gw-1, secret_file: " + open + " }\n", "fleet.secret_file", "chmod 600"},
      {"fleet: { node_name: gw-1, secret_file: " + link + " }\n", "fleet.secret_file",
       "must not be a symbolic link"},
      {"fleet: { node_name: gw-1, secret_file: " + write("short.key", "0011") + " }\n",
       "fleet.secret_file", "32 hexadecimal digits"},
      {"fleet: { node_name: gw-1, secret_file: " + (dir_ / "none.key").string() + " }\n",
       "fleet.secret_file", "cannot open"},
      {"fleet: { node_name: gw-1, secret: " + digits + ", secret_file: " +
           write("other.key", "ffeeddccbbaa99887766554433221100") + " }\n",
       "fleet.secret_file", "holds another key than fleet.secret"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.extra);
    std::string file = write("gwlbd.yaml", kBase + c.extra);
    Config cfg;
    std::vector<ConfigError> errors;
    EXPECT_TRUE(loadConfigFile(file, cfg, errors)) << "the keys alone are valid";
    errors.clear();
    EXPECT_FALSE(loadRunnableConfig(file, cfg, errors));
    ASSERT_EQ(errors.size(), 1u) << formatErrors(errors);
    EXPECT_EQ(errors[0].path, c.path);
    EXPECT_NE(errors[0].message.find(c.needle), std::string::npos) << errors[0].message;
    EXPECT_EQ(errors[0].message.find(digits), std::string::npos) << "never the key";
  }
  std::string file = write("gwlbd.yaml", kBase + "fleet: { node_name: gw-1, secret_file: " + good + " }\n");
  Config cfg;
  std::vector<ConfigError> errors;
  FlowHashKey key;
  bool keyed = false;
  ASSERT_TRUE(loadRunnableConfig(file, cfg, errors, &key, &keyed)) << formatErrors(errors);
  EXPECT_TRUE(keyed);
  EXPECT_EQ(key, (FlowHashKey{0x0011223344556677ULL, 0x8899aabbccddeeffULL}));
}

// A new key at the same path is reported under the name a changed path gets.
TEST(ConfigChecks, TheHashKeyIsNamedAsRestartNeededNamesIt) {
  Config c;
  EXPECT_EQ(hashKeyRestartName(c), "node.flow_hash_secret");
  c.fleet.configured = true;
  c.fleet.node_name = "gw-1";
  c.fleet.secret_file = "/etc/gwlb/fleet.key";
  EXPECT_EQ(hashKeyRestartName(c), "fleet");
}

TEST(ConfigChecks, LcoresCountedAsTheEalCountsThem) {
  EXPECT_EQ(ealLcoreCount({"-l", "0-2"}), 3u);
  EXPECT_EQ(ealLcoreCount({"-l0-3,6"}), 5u);
  EXPECT_EQ(ealLcoreCount({"--lcores=0@(0-1),1@(0-1),2@(0-1)"}), 3u);
  EXPECT_EQ(ealLcoreCount({"--lcores", "(0-3)@0,4"}), 5u);
  EXPECT_EQ(ealLcoreCount({"--lcores=1,2@3,(4,5)@(6-7)"}), 4u);
  EXPECT_EQ(ealLcoreCount({"-c", "0x7"}), 3u);
  EXPECT_EQ(ealLcoreCount({"-cf0"}), 4u);
  EXPECT_EQ(ealLcoreCount({"--no-huge", "-m", "64", "-l", "2", "--log-level=*:warning"}), 1u);
  // Not readable: the EAL judges them.
  EXPECT_EQ(ealLcoreCount({"-l", "3-1"}), 0u);
  EXPECT_EQ(ealLcoreCount({"-l", "x"}), 0u);
  EXPECT_EQ(ealLcoreCount({"--lcores=(0-1"}), 0u);
  EXPECT_EQ(ealLcoreCount({"-l", "0-99999"}), 0u);
  // None given: one lcore per CPU this process may run on.
  unsigned cpus = ealLcoreCount({"--no-huge"});
  EXPECT_GE(cpus, 1u);

  Config c;
  c.dataplane.workers = 2;
  EXPECT_EQ(checkLcores(c, {"-l", "0-2"}), "");
  std::string e = checkLcores(c, {"--lcores=0@(0-1),1@(0-1)"});
  EXPECT_NE(e.find("2 worker(s) need 3 lcores"), std::string::npos) << e;
  EXPECT_NE(e.find("give 2"), std::string::npos) << e;
  c.dataplane.workers = cpus;  // needs cpus + 1 without an option
  e = checkLcores(c, {"--no-huge"});
  EXPECT_NE(e.find("no -l or --lcores"), std::string::npos) << e;
  EXPECT_EQ(checkLcores(c, {"-l", "x"}), "") << "unreadable: left to the EAL";
}

TEST(ConfigChecks, AServerGroupNoListenerServesIsAWarning) {
  const std::string groups =
      "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
      "server_groups:\n"
      "  - { name: east, health_check: { port: 80 }, servers: [ { address: 10.0.0.1 } ] }\n"
      "  - { name: west, health_check: { port: 80 }, servers: [ { address: 10.0.0.2 } ] }\n"
      "  - { name: spare, health_check: { port: 80 }, servers: [ { address: 10.0.0.3 } ] }\n";
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_TRUE(parseConfig(groups + "listeners: [ { name: l, server_groups: [east, west] } ]\n", c, errors))
      << formatErrors(errors);
  std::vector<ConfigError> w = configWarnings(c);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].path, "server_groups[2]");
  EXPECT_NE(w[0].message.find("'spare' is in no listener"), std::string::npos) << w[0].message;
  ASSERT_TRUE(parseConfig(groups, c, errors)) << formatErrors(errors);
  w = configWarnings(c);
  ASSERT_EQ(w.size(), 2u) << "without listeners only the first group is served";
  EXPECT_EQ(w[0].path, "server_groups[1]");
  EXPECT_NE(w[0].message.find("only the first group ('east')"), std::string::npos) << w[0].message;
  ASSERT_TRUE(parseConfig(kBase, c, errors)) << formatErrors(errors);
  w = configWarnings(c);
  ASSERT_EQ(w.size(), 1u) << formatErrors(w);
  EXPECT_EQ(w[0].path, "server_groups[0]");
  EXPECT_NE(w[0].message.find("'g' has no health_check"), std::string::npos) << w[0].message;
}

// Found by the soak (issue 26): with the lab's 3 s warm start and the
// default 2 s connect + 3 s idle per peer, a first peer that accepted over a
// congested link and sent nothing used the whole warm start; the node came up
// cold although the second peer was fine.
TEST(ConfigChecks, AWarmStartTooShortToAskASecondPeerIsAWarning) {
  const std::string fleet =
      "fleet:\n  node_name: gw1\n  secret: 7f3a9c1e5b2d4f6081a3c5e7092b4d6f\n"
      "  sync_listen: \"192.0.2.1:7946\"\n";
  auto warnings = [&](const std::string& extra) {
    Config c;
    std::vector<ConfigError> errors;
    EXPECT_TRUE(parseConfig(kBase + fleet + extra, c, errors)) << formatErrors(errors);
    std::vector<ConfigError> out;
    for (const ConfigError& w : configWarnings(c))
      if (w.path == "fleet.warm_start_timeout") out.push_back(w);
    return out;
  };
  std::vector<ConfigError> w =
      warnings("  peers: [\"192.0.2.2:7946\", \"192.0.2.3:7946\"]\n  warm_start_timeout: 3s\n");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].message.find("3 s is not more than one peer's warm_start_connect_timeout + "
                              "warm_start_idle_timeout (5000 ms)"),
            std::string::npos)
      << w[0].message;
  // The defaults (10 s; 2 s + 3 s) leave room for a second peer.
  EXPECT_TRUE(warnings("  peers: [\"192.0.2.2:7946\", \"192.0.2.3:7946\"]\n").empty());
  // So do shorter per-peer timeouts (the lab's).
  EXPECT_TRUE(warnings("  peers: [\"192.0.2.2:7946\", \"192.0.2.3:7946\"]\n  warm_start_timeout: 3s\n"
                       "  warm_start_connect_timeout: 500ms\n  warm_start_idle_timeout: 1s\n")
                  .empty());
  // One peer: there is no next peer to reach.
  EXPECT_TRUE(warnings("  peers: [\"192.0.2.2:7946\"]\n  warm_start_timeout: 3s\n").empty());
}

// docs/config.md: "Errors come in the order they appear in the file". The
// items of a list of values had no position of their own: their errors came
// in the order the checks ran (a peer listed twice before an earlier peer
// that is this node itself).
TEST(ConfigChecks, ErrorsComeInFileOrder) {
  const std::string text = kBase +
      "fleet:\n"
      "  node_name: gw1\n"
      "  secret: 7f3a9c1e5b2d4f6081a3c5e7092b4d6f\n"
      "  sync_listen: \"192.0.2.1:7946\"\n"
      "  peers:\n"
      "    - \"192.0.2.1:7946\"\n"
      "    - \"192.0.2.2:7946\"\n"
      "    - \"192.0.2.2:7946\"\n"
      "    - \"10.0.0.9\"\n"
      "  warm_start_timeout: 0\n";
  Config c;
  std::vector<ConfigError> errors;
  ASSERT_FALSE(parseConfig(text, c, errors));
  std::vector<std::string> paths;
  for (const ConfigError& e : errors) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"fleet.peers[0]", "fleet.peers[2]", "fleet.peers[3]",
                                             "fleet.warm_start_timeout"}))
      << formatErrors(errors);
}

// Cores set aside in `eal` that no worker uses (docs/deploy.md: `-l 2-6` with
// the default single worker leaves three isolated cores idle).
TEST(ConfigChecks, LcoresBeyondTheWorkersAreAWarning) {
  auto lcoreWarnings = [](const std::string& extra) {
    Config c;
    std::vector<ConfigError> errors;
    EXPECT_TRUE(parseConfig(kBase + extra, c, errors)) << formatErrors(errors);
    std::vector<std::string> out;
    for (const ConfigError& w : configWarnings(c))
      if (w.path == "dataplane.workers") out.push_back(w.message);
    return out;
  };
  std::vector<std::string> w = lcoreWarnings("eal: [\"-l\", \"2-6\"]\n");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("1 worker(s) use 2 of the 5 lcores"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("3 stay idle; set dataplane.workers: 4"), std::string::npos) << w[0];
  EXPECT_EQ(lcoreWarnings("eal: [\"--lcores=0@(0-1),1@(0-1),2@(0-1)\"]\n").size(), 1u);
  EXPECT_TRUE(lcoreWarnings("dataplane: { workers: 4 }\neal: [\"-l\", \"2-6\"]\n").empty());
  EXPECT_TRUE(lcoreWarnings("eal: [\"-l\", \"0-1\"]\n").empty());
  // No core option: the EAL takes the CPUs it may run on; none was set aside.
  EXPECT_TRUE(lcoreWarnings("eal: [\"--no-huge\"]\n").empty());
}

// The flow table against the config's planned rate of new flows.
TEST(ConfigChecks, AFlowTableBelowThePlannedRateIsAWarning) {
  auto tableWarnings = [](const std::string& extra) {
    Config c;
    std::vector<ConfigError> errors;
    EXPECT_TRUE(parseConfig(extra, c, errors)) << formatErrors(errors);
    std::vector<std::string> out;
    for (const ConfigError& w : configWarnings(c))
      if (w.path == "dataplane.flow_table_size") out.push_back(w.message);
    return out;
  };
  // Default table (1,048,576) and TCP idle timeout (350 s): up to 2,696 new
  // flows a second stay below the 90 % eviction mark.
  EXPECT_TRUE(tableWarnings(kBase + "dataplane: { new_flows_per_s: 2696 }\n").empty());
  std::vector<std::string> w = tableWarnings(kBase + "dataplane: { new_flows_per_s: 2697 }\n");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("at least 350 s (server_groups[0].tcp_idle_timeout)"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("set it to 1048834 or more"), std::string::npos) << w[0];
  // The longest idle timeout of any group, TCP or other.
  w = tableWarnings(
      "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
      "server_groups:\n"
      "  - { name: a, tcp_idle_timeout: 60s, other_idle_timeout: 60s, servers: [ { address: 10.0.0.1 } ] }\n"
      "  - { name: b, tcp_idle_timeout: 60s, other_idle_timeout: 900s, servers: [ { address: 10.0.0.2 } ] }\n"
      "listeners: [ { name: l, server_groups: [a, b] } ]\n"
      "dataplane: { flow_table_size: 1024, new_flows_per_s: 10 }\n");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("900 s (server_groups[1].other_idle_timeout), so the table holds 9000 flows"),
            std::string::npos)
      << w[0];
  // Not said (0, the default): nothing to compare.
  EXPECT_TRUE(tableWarnings(kBase + "dataplane: { flow_table_size: 1024 }\n").empty());
}

}  // namespace
}  // namespace gwlb::ctl
