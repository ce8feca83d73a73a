// Prefix files (traffic_classes[].match.prefixes_file) and the config file's
// size limit: a file over the limit is a clear error; a prefix file's errors
// name FILE:LINE; its prefixes are the class's prefixes exactly as if written
// inline (checks, shadow warning, compiled rules, digest); a changed file is
// a changed config for the digest, a reload and gwlbctl config dump.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "control/config/config.h"
#include "control/config/config_digest.h"
#include "control/config/prefix_list.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {
namespace {

namespace fs = std::filesystem;

const std::string kHead =
    "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
    "server_groups:\n"
    "  - { name: fa, health_check: { port: 80 }, servers: [ { address: 10.0.0.1 } ] }\n";

// A directory of its own, removed at the end.
struct TempDir {
  fs::path dir;
  TempDir() {
    char t[] = "/tmp/gwlb-prefix-files.XXXXXX";
    dir = ::mkdtemp(t);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    fs::create_directories((dir / name).parent_path());
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
};

struct Loaded {
  bool ok = false;
  Config cfg;
  std::vector<ConfigError> errors;
};

Loaded load(const std::string& path) {
  Loaded l;
  l.ok = loadRunnableConfig(path, l.cfg, l.errors);
  return l;
}

::testing::AssertionResult oneError(const Loaded& l, const std::string& path, const std::string& start) {
  if (l.ok) return ::testing::AssertionFailure() << "accepted; expected " << start;
  if (l.errors.size() != 1 || l.errors[0].path != path || l.errors[0].message.rfind(start, 0) != 0)
    return ::testing::AssertionFailure() << "expected one error at " << path << " starting '" << start << "'; got:\n"
                                         << formatErrors(l.errors);
  return ::testing::AssertionSuccess();
}

TEST(ConfigFileSize, AConfigOverTheLimitIsAClearErrorAndOneAtItLoads) {
  TempDir t;
  std::string text = kHead;
  std::string at = text + std::string(kMaxConfigBytes - text.size() - 1, '#') + "\n";
  ASSERT_EQ(at.size(), kMaxConfigBytes);
  Loaded ok = load(t.write("at.yaml", at));
  EXPECT_TRUE(ok.ok) << formatErrors(ok.errors);
  Loaded over = load(t.write("over.yaml", "#" + at));
  ASSERT_FALSE(over.ok);
  ASSERT_EQ(over.errors.size(), 1u) << formatErrors(over.errors);
  EXPECT_EQ(over.errors[0].path, "");
  EXPECT_EQ(over.errors[0].message,
            "config file '" + (t.dir / "over.yaml").string() + "' is larger than 1 MiB; a configuration is at most "
            "that long (large prefix sets go in prefix files: traffic_classes[].match.prefixes_file)");
}

// Every kind of bad line, each at its FILE:LINE.
TEST(PrefixFiles, ErrorsPointAtFileAndLine) {
  TempDir t;
  const std::string key = "traffic_classes[0].match.prefixes_file";
  struct Case {
    std::string file, extra, start;
  };
  const std::string f = (t.dir / "p.txt").string();
  const Case cases[] = {
      {"10.0.0.0/8\n10.1.0.0/33\n", "", f + ":2: '10.1.0.0/33' has a bad prefix length; allowed 0..32 for IPv4"},
      {"# c\n\n10.1.0.1/16\n", "", f + ":3: '10.1.0.1/16' has host bits set; the network is 10.1.0.0/16"},
      {"2001:db8::/129\n", "", f + ":1: '2001:db8::/129' has a bad prefix length; allowed 0..128 for IPv6"},
      {"tenant/8\n", "", f + ":1: 'tenant/8' is not a prefix"},
      {"10.0.0.0/8 10.1.0.0/16\n", "", f + ":1: '10.0.0.0/8 10.1.0.0/16' is not one prefix"},
      {"10.0.0.0/8\n\n10.0.0.0/8  # again\n", "", f + ":3: '10.0.0.0/8' repeats line 1"},
      {"10.2.0.0/16\n10.0.0.0/8\n", ", prefixes: [10.0.0.0/8]",
       f + ":2: '10.0.0.0/8' is also in traffic_classes[0].match.prefixes[0]"},
      {"10.0.0.0/8\n", ", prefixes: [10.1.0.0/16]", ""},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.file);
    t.write("p.txt", k.file);
    Loaded l = load(t.write("c.yaml", kHead + "traffic_classes:\n  - { name: a, action: drop, match: { "
                                              "prefixes_file: p.txt" + k.extra + " } }\n"));
    if (k.start.empty()) { EXPECT_TRUE(l.ok) << formatErrors(l.errors); }
    else EXPECT_TRUE(oneError(l, key, k.start));
  }
  // More than a class may have: 1,024 in the file with one inline.
  std::string many;
  for (uint32_t i = 0; i < 1024; ++i) many += "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + "\n";
  t.write("p.txt", many);
  Loaded l = load(t.write("c.yaml", kHead + "traffic_classes:\n  - { name: a, action: drop, match: { "
                                            "prefixes_file: p.txt } }\n"));
  EXPECT_TRUE(l.ok) << formatErrors(l.errors);
  l = load(t.write("c.yaml", kHead + "traffic_classes:\n  - { name: a, action: drop, match: { "
                                     "prefixes_file: p.txt, prefixes: [11.0.0.0/8] } }\n"));
  EXPECT_TRUE(oneError(l, key, f + ":1024: more than 1024 prefixes with the class's 1 in prefixes"));
  t.write("p.txt", many + "10.9.9.9\n");
  l = load(t.write("c.yaml", kHead + "traffic_classes:\n  - { name: a, action: drop, match: { "
                                     "prefixes_file: p.txt } }\n"));
  EXPECT_TRUE(oneError(l, key, f + ":1025: more than 1024 prefixes"));
  // The file itself.
  l = load(t.write("c.yaml", kHead + "traffic_classes:\n  - { name: a, action: drop, match: { "
                                     "prefixes_file: missing.txt } }\n"));
  EXPECT_TRUE(oneError(l, key, "cannot open '" + (t.dir / "missing.txt").string() + "': No such file or directory"));
  l = load(t.write("c.yaml", kHead + "traffic_classes:\n  - { name: a, action: drop, match: { "
                                     "prefixes_file: " + t.dir.string() + " } }\n"));
  EXPECT_TRUE(oneError(l, key, "'" + t.dir.string() + "' is not a regular file"));
  t.write("big.txt", "10.0.0.0/8\n" + std::string(kMaxPrefixFileBytes, '#'));
  l = load(t.write("c.yaml", kHead + "traffic_classes:\n  - { name: a, action: drop, match: { "
                                     "prefixes_file: big.txt } }\n"));
  EXPECT_TRUE(oneError(l, key, "'" + (t.dir / "big.txt").string() + "' is larger than 1024 KiB"));
  // A file named by two classes is read once and its errors told once.
  t.write("p.txt", "10.0.0.0/40\n");
  l = load(t.write("c.yaml", kHead + "traffic_classes:\n"
                                     "  - { name: a, action: drop, match: { prefixes_file: p.txt, vlans: [1] } }\n"
                                     "  - { name: b, action: drop, match: { prefixes_file: p.txt, vlans: [2] } }\n"));
  EXPECT_TRUE(oneError(l, key, f + ":1: '10.0.0.0/40' has a bad prefix length"));
}

// The files of a config together: at most kMaxFilePrefixes prefixes, a
// shared file counted once.
TEST(PrefixFiles, TheFilesTogetherAreBounded) {
  TempDir t;
  std::string classes = "traffic_classes:\n";
  const size_t files = kMaxFilePrefixes / 1024 + 1;
  for (size_t i = 0; i < files; ++i) {
    std::string f;
    for (uint32_t k = 0; k < 1024; ++k) f += IpAddr::v4(uint32_t(i << 16 | k)).str() + "\n";
    t.write("f" + std::to_string(i), f);
    classes += "  - { name: c" + std::to_string(i) + ", action: drop, match: { prefixes_file: f" +
               std::to_string(i) + ", l4_ports: [" + std::to_string(i + 1) + "] } }\n";
  }
  Loaded l = load(t.write("c.yaml", kHead + classes));
  const std::string last = "traffic_classes[" + std::to_string(files - 1) + "].match.prefixes_file";
  EXPECT_TRUE(oneError(l, last, "'" + (t.dir / ("f" + std::to_string(files - 1))).string() +
                                     "' brings the prefix files to more than 262144 prefixes"));
  // The same file named by every class: counted once.
  classes = "traffic_classes:\n";
  for (size_t i = 0; i < files; ++i)
    classes += "  - { name: c" + std::to_string(i) + ", action: drop, match: { prefixes_file: f0, l4_ports: [" +
               std::to_string(i + 1) + "] } }\n";
  l = load(t.write("c.yaml", kHead + classes));
  EXPECT_TRUE(l.ok) << formatErrors(l.errors);
}

// The same classes written inline and in files (comments, blank lines, CRLF,
// spaces, a bare address, a file in a subdirectory named relative to the
// config's directory): the same prefixes, warnings (the shadow check),
// compiled rules and config digest.
TEST(PrefixFiles, FilePrefixesAreTheInlineOnes) {
  TempDir t;
  const std::string inline_classes =
      "traffic_classes:\n"
      "  - { name: wide, action: drop, match: { prefixes: [10.0.0.0/8, \"2001:db8::/32\"], l4_ports: [22] } }\n"
      "  - { name: inside, action: bypass, match: { prefixes: [10.9.0.0/16, 10.1.2.3/32, \"2001:db8:1::/48\"], "
      "l4_ports: [22] } }\n"
      "  - { name: other, action: bypass, match: { prefixes: [11.0.0.0/8, 10.9.0.0/16] } }\n";
  t.write("lists/wide.txt", "# the wide one\r\n10.0.0.0/8\r\n\r\n  2001:db8::/32\t# v6\r\n");
  t.write("lists/inside.txt", "10.9.0.0/16\n10.1.2.3\n#\n2001:db8:1::/48");
  t.write("lists/other.txt", "10.9.0.0/16\n");
  const std::string file_classes =
      "traffic_classes:\n"
      "  - { name: wide, action: drop, match: { prefixes_file: lists/wide.txt, l4_ports: [22] } }\n"
      "  - { name: inside, action: bypass, match: { prefixes_file: lists/inside.txt, l4_ports: [22] } }\n"
      "  - { name: other, action: bypass, match: { prefixes: [11.0.0.0/8], prefixes_file: lists/other.txt } }\n";
  Loaded a = load(t.write("inline.yaml", kHead + inline_classes));
  Loaded b = load(t.write("files.yaml", kHead + file_classes));
  ASSERT_TRUE(a.ok) << formatErrors(a.errors);
  ASSERT_TRUE(b.ok) << formatErrors(b.errors);
  ASSERT_EQ(a.cfg.traffic_classes.size(), b.cfg.traffic_classes.size());
  for (size_t i = 0; i < a.cfg.traffic_classes.size(); ++i) {
    const auto &x = a.cfg.traffic_classes[i].match.prefixes, &y = b.cfg.traffic_classes[i].match.prefixes;
    ASSERT_EQ(x.size(), y.size()) << i;
    for (size_t k = 0; k < x.size(); ++k) {
      EXPECT_EQ(x[k].addr, y[k].addr) << i << " " << k;
      EXPECT_EQ(x[k].len, y[k].len) << i << " " << k;
    }
  }
  EXPECT_EQ(b.cfg.traffic_classes[1].match.prefixes_file, (t.dir / "lists/inside.txt").string());
  EXPECT_EQ(classRules(a.cfg), classRules(b.cfg));
  const std::vector<ConfigError> wa = configWarnings(a.cfg), wb = configWarnings(b.cfg);
  EXPECT_EQ(formatErrors(wa), formatErrors(wb));
  bool shadowed = false;
  for (const ConfigError& e : wb)
    shadowed |= e.path == "traffic_classes[1]" &&
                e.message.find("class 'inside' matches no packet: traffic_classes[0] ('wide') comes first") !=
                    std::string::npos;
  EXPECT_TRUE(shadowed) << formatErrors(wb);
  const FlowHashKey key{1, 2};
  EXPECT_EQ(configDigest(a.cfg, key), configDigest(b.cfg, key));
}

// A changed prefix file: a reload (which reads the config file again, as
// gwlbd's SIGHUP and API reload and gwlbctl config check do) gets its new
// prefixes, the fleet's config digest of the classes differs, gwlbctl
// config dump tells which file content runs, and the dump reads back.
TEST(PrefixFiles, AChangedFileIsAChangedConfig) {
  TempDir t;
  t.write("block.txt", "10.0.0.0/8\n192.0.2.0/24\n");
  const std::string path = t.write("c.yaml", kHead + "traffic_classes:\n"
                                                     "  - { name: block, action: drop, match: { prefixes_file: block.txt } }\n");
  Loaded before = load(path);
  ASSERT_TRUE(before.ok) << formatErrors(before.errors);
  const std::string dump = dumpConfig(before.cfg);
  EXPECT_NE(dump.find("prefixes_file: \"" + (t.dir / "block.txt").string() +
                      "\"  # 2 prefixes, sha256 "),
            std::string::npos) << dump;
  EXPECT_EQ(dump.find("prefixes: ["), std::string::npos) << dump;
  Config back;
  std::vector<ConfigError> e;
  ASSERT_TRUE(parseConfig(dump, back, e)) << formatErrors(e);
  back.source_path = before.cfg.source_path;
  EXPECT_EQ(dumpConfig(back), dump);

  t.write("block.txt", "10.0.0.0/8\n198.51.100.0/24\n");
  Loaded after = load(path);
  ASSERT_TRUE(after.ok) << formatErrors(after.errors);
  ASSERT_EQ(after.cfg.traffic_classes[0].match.prefixes.size(), 2u);
  EXPECT_EQ(after.cfg.traffic_classes[0].match.prefixes[1].addr, *IpAddr::parse("198.51.100.0"));
  const FlowHashKey key{1, 2};
  EXPECT_EQ(differingSections(configDigest(before.cfg, key), configDigest(after.cfg, key)),
            std::vector<std::string>{"classes"});
  EXPECT_TRUE(restartNeeded(before.cfg, after.cfg).empty());
  EXPECT_NE(classRules(before.cfg), classRules(after.cfg));
  EXPECT_NE(dumpConfig(after.cfg), dump);
}

// docs/config.md's example of a prefix file's errors is what the loader
// prints for it (the temporary directory shown as /etc/gwlb).
TEST(PrefixFiles, TheDocsExampleIsWhatTheLoaderPrints) {
  const char* root = std::getenv("GWLB_SOURCE_ROOT");
  ASSERT_NE(root, nullptr) << "run by meson (GWLB_SOURCE_ROOT)";
  std::ifstream in(std::string(root) + "/docs/config.md");
  std::stringstream doc;
  doc << in.rdbuf();
  TempDir t;
  t.write("blocklist.txt",
          "# blocklist, 2026-12-06\n192.0.2.0/24\n198.51.100.7          # one host\n2001:db8:bad::/48\n"
          "10.1.0.1/16\n192.0.2.0/24\n");
  Loaded l = load(t.write("gwlbd.yaml", kHead + "traffic_classes:\n"
                                               "  - { name: blocklist, action: drop, match: { prefixes_file: blocklist.txt } }\n"));
  ASSERT_FALSE(l.ok);
  std::string out = formatErrors(l.errors);
  for (size_t at; (at = out.find(t.dir.string())) != std::string::npos;) out.replace(at, t.dir.string().size(), "/etc/gwlb");
  EXPECT_NE(doc.str().find("```\n" + out + "```\n"), std::string::npos) << out;
  // And the limit of a config file, as config.md states it and upgrade.md
  // quotes its error (line breaks in the docs read as spaces).
  EXPECT_NE(doc.str().find("The file is at most " + std::to_string(kMaxConfigBytes >> 20) + " MiB"), std::string::npos);
  Loaded over = load(t.write("gwlbd.yaml", kHead + std::string(kMaxConfigBytes, '#')));
  ASSERT_EQ(over.errors.size(), 1u);
  std::string msg = over.errors[0].message;
  msg.replace(msg.find(t.dir.string()), t.dir.string().size(), "/etc/gwlb");
  std::ifstream up(std::string(root) + "/docs/upgrade.md");
  std::stringstream upgrade;
  upgrade << up.rdbuf();
  std::string flat;
  for (char c : upgrade.str()) {
    const bool space = c == '\n' || c == ' ';
    if (!space) flat += c;
    else if (flat.empty() || flat.back() != ' ') flat += ' ';
  }
  EXPECT_NE(flat.find("`" + msg + "`"), std::string::npos) << msg;
}

}  // namespace
}  // namespace gwlb::ctl
