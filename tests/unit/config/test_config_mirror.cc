// traffic_classes[].mirror and traffic_classes[].tag with the top-level
// `tags`: what loads, the errors with their key paths, the warnings a mirror
// group no longer gets, and the digest (unchanged for a config without them).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/config/config.h"
#include "control/config/config_digest.h"

namespace gwlb::ctl {
namespace {

const std::string kHead =
    "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
    "server_groups:\n"
    "  - { name: fw, health_check: { port: 80 }, servers: [ { address: 10.0.0.1 } ] }\n"
    "  - { name: tools, health_check: { port: 80 }, servers: [ { address: 10.0.0.2 } ] }\n"
    "listeners:\n"
    "  - { name: web, server_groups: [fw] }\n";

struct Parsed {
  bool ok = false;
  Config cfg;
  std::vector<ConfigError> errors;
};

Parsed parse(const std::string& rest, const std::string& head = kHead) {
  Parsed p;
  p.ok = parseConfig(head + rest, p.cfg, p.errors);
  return p;
}

::testing::AssertionResult onlyError(const Parsed& p, const std::string& path, const std::string& needle) {
  if (p.ok) return ::testing::AssertionFailure() << "accepted; expected an error at " << path;
  if (p.errors.size() != 1 || p.errors[0].path != path ||
      p.errors[0].message.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "expected one error at " << path << " with '" << needle
                                         << "'; got:\n" << formatErrors(p.errors);
  return ::testing::AssertionSuccess();
}

TEST(ClassMirror, LoadsWithEveryField) {
  Parsed p = parse("traffic_classes:\n"
                   "  - { name: a, listener: web, mirror: { group: tools, truncate: 128, sample: 10 } }\n"
                   "  - { name: b, action: bypass, mirror: { group: tools } }\n"
                   "  - { name: c, listener: web }\n");
  ASSERT_TRUE(p.ok) << formatErrors(p.errors);
  const auto& c = p.cfg.traffic_classes;
  EXPECT_EQ(c[0].mirror, (ClassMirrorConfig{"tools", 128, 10}));
  EXPECT_EQ(c[1].mirror, (ClassMirrorConfig{"tools", 0, 1}));
  EXPECT_TRUE(c[2].mirror.group.empty());
  // The mirror group serves no listener: no "receives no traffic" warning for it.
  for (const ConfigError& w : configWarnings(p.cfg))
    EXPECT_EQ(w.message.find("'tools' is in no listener"), std::string::npos) << w.message;
}

TEST(ClassMirror, GroupMustExistAndServeNoListener) {
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: nope } }\n"),
                        "traffic_classes[0].mirror.group", "'nope' is not a server group"));
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: fw } }\n"),
                        "traffic_classes[0].mirror.group", "is in listeners[0].server_groups"));
  const std::string no_listeners =
      "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
      "server_groups:\n"
      "  - { name: fw, servers: [ { address: 10.0.0.1 } ] }\n"
      "  - { name: tools, servers: [ { address: 10.0.0.2 } ] }\n";
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, mirror: { group: fw } }\n", no_listeners),
                        "traffic_classes[0].mirror.group", "is the first server group"));
  EXPECT_TRUE(parse("traffic_classes:\n  - { name: a, mirror: { group: tools } }\n", no_listeners).ok);
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { truncate: 100 } }\n"),
                        "traffic_classes[0].mirror.group", "required"));
}

TEST(ClassMirror, GroupMustBeGeneve) {
  const std::string vxlan_tools =
      "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
      "server_groups:\n"
      "  - { name: fw, health_check: { port: 80 }, servers: [ { address: 10.0.0.1 } ] }\n"
      "  - { name: tools, encapsulation: vxlan, health_check: { port: 80 }, servers: [ { address: 10.0.0.2 } ] }\n"
      "listeners:\n"
      "  - { name: web, server_groups: [fw] }\n";
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: tools } }\n",
                              vxlan_tools),
                        "traffic_classes[0].mirror.group", "'tools' uses encapsulation: vxlan"));
}

TEST(ClassMirror, TruncateAndSampleRanges) {
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: tools, truncate: 63 } }\n"),
                        "traffic_classes[0].mirror.truncate", "63 is too short"));
  EXPECT_FALSE(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: tools, truncate: 65536 } }\n").ok);
  EXPECT_TRUE(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: tools, truncate: 64 } }\n").ok);
  EXPECT_FALSE(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: tools, sample: 0 } }\n").ok);
  EXPECT_FALSE(parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: tools, colour: red } }\n").ok);
}

TEST(ClassTag, NumbersAndNames) {
  Parsed p = parse("tags:\n  - { name: tenant-a, value: 4242 }\n  - { name: tenant-b, value: 0xffffffff }\n"
                   "traffic_classes:\n"
                   "  - { name: a, listener: web, tag: tenant-a }\n"
                   "  - { name: b, listener: web, tag: tenant-b }\n"
                   "  - { name: c, listener: web, tag: 17 }\n"
                   "  - { name: d, listener: web, tag: \"0x10\" }\n"
                   "  - { name: e, listener: web }\n");
  ASSERT_TRUE(p.ok) << formatErrors(p.errors);
  const auto& c = p.cfg.traffic_classes;
  EXPECT_EQ(classTagValue(p.cfg.tags, c[0].tag), 4242u);
  EXPECT_EQ(classTagValue(p.cfg.tags, c[1].tag), 0xFFFFFFFFu);
  EXPECT_EQ(classTagValue(p.cfg.tags, c[2].tag), 17u);
  EXPECT_EQ(classTagValue(p.cfg.tags, c[3].tag), 16u);
  EXPECT_EQ(classTagValue(p.cfg.tags, c[4].tag), std::nullopt);
}

TEST(ClassTag, Errors) {
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, listener: web, tag: nobody }\n"),
                        "traffic_classes[0].tag", "'nobody' is neither a 32-bit number"));
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, listener: web, tag: 4294967296 }\n"),
                        "traffic_classes[0].tag", "neither a 32-bit number"));
  EXPECT_TRUE(onlyError(parse("traffic_classes:\n  - { name: a, listener: web, tag: 12ab }\n"),
                        "traffic_classes[0].tag", "neither a 32-bit number"));
  EXPECT_TRUE(onlyError(parse("tags:\n  - { name: x, value: 1 }\n  - { name: x, value: 2 }\n"),
                        "tags[1].name", "already the name of tags[0]"));
  EXPECT_TRUE(onlyError(parse("tags:\n  - { name: 7up, value: 1 }\n"), "tags[0].name", "not starting with a digit"));
  EXPECT_FALSE(parse("tags:\n  - { name: x, value: 4294967296 }\n").ok);
  EXPECT_FALSE(parse("tags:\n  - { name: x }\n").ok);
}

TEST(ClassMirrorAndTag, DigestOfClassesChangesOnlyWhenSet) {
  Parsed plain = parse("traffic_classes:\n  - { name: a, listener: web }\n");
  Parsed mirrored = parse("traffic_classes:\n  - { name: a, listener: web, mirror: { group: tools } }\n");
  Parsed tagged = parse("traffic_classes:\n  - { name: a, listener: web, tag: 5 }\n");
  Parsed tagged6 = parse("traffic_classes:\n  - { name: a, listener: web, tag: 6 }\n");
  Parsed named = parse("tags: [ { name: five, value: 5 } ]\ntraffic_classes:\n  - { name: a, listener: web, tag: five }\n");
  ASSERT_TRUE(plain.ok && mirrored.ok && tagged.ok && tagged6.ok && named.ok);
  const FlowHashKey key{1, 2};
  auto diff = [&](const Parsed& a, const Parsed& b) {
    return differingSections(configDigest(a.cfg, key), configDigest(b.cfg, key));
  };
  const std::vector<std::string> classes{"classes"};
  EXPECT_EQ(diff(plain, mirrored), classes);
  EXPECT_EQ(diff(plain, tagged), classes);
  EXPECT_EQ(diff(tagged, tagged6), classes);
  // A name and its number tell the appliance the same: one digest.
  EXPECT_TRUE(diff(named, tagged).empty());
}

}  // namespace
}  // namespace gwlb::ctl
