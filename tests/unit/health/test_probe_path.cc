// Where health probes travel (control/health/probe_path.h; issue 24 item 11): the
// path each group's probes take, the config rules gwlbd refuses a file on,
// and the kernel's route answers on loopback (rtnetlink needs no privilege).
#include <gtest/gtest.h>

#include <string>

#include "control/health/probe_path.h"

namespace gwlb::ctl {
namespace {

Config parsed(const std::string& yaml) {
  Config c;
  std::vector<ConfigError> errors;
  EXPECT_TRUE(parseConfig(yaml, c, errors)) << (errors.empty() ? "" : errors[0].path + ": " + errors[0].message);
  return c;
}

std::string file(const std::string& node_extra, const std::string& check_extra) {
  return "node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, underlay_port: 1" +
         node_extra +
         " }\n"
         "server_groups:\n"
         "  - name: fw\n"
         "    health_check: { protocol: tcp, port: 80" +
         check_extra +
         " }\n"
         "    servers: [ { address: 192.0.2.10 } ]\n";
}

const std::string kExceptionPath = ", exception_path: { enabled: true, name_prefix: gw }";

TEST(ProbePath, DefaultIsTheDataPathThroughTheAppliancePortsTap) {
  Config c = parsed(file(kExceptionPath, ""));
  ProbePath p = probePathOf(c, c.server_groups[0].health_check);
  EXPECT_EQ(p.kind, ProbePath::Kind::kData);
  EXPECT_EQ(p.device, "gw1");  // node.underlay_port 1
  ASSERT_TRUE(p.source);
  EXPECT_EQ(p.source->str(), "192.0.2.1");
  EXPECT_EQ(p.describe(), "data path (tap gw1, from 192.0.2.1)");
  EXPECT_TRUE(probePathErrors(c).empty());
}

TEST(ProbePath, HealthChecksWithoutAnyPathAreRefused) {
  // Before issue 24 this file started and probed by the host's own routes.
  Config c = parsed(file("", ""));
  auto errors = probePathErrors(c);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "server_groups[0].health_check");
  EXPECT_NE(errors[0].message.find("node.exception_path.enabled: true"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("health_check.interface"), std::string::npos) << errors[0].message;
  // Checks off (or disabled): no probes, no path needed.
  Config off = parsed(file("", ", enabled: false"));
  EXPECT_TRUE(probePathErrors(off).empty());
}

TEST(ProbePath, InterfaceIsTheManagementPath) {
  Config c = parsed(file("", ", interface: mgmt0, source: 10.0.0.5"));
  ProbePath p = probePathOf(c, c.server_groups[0].health_check);
  EXPECT_EQ(p.kind, ProbePath::Kind::kManagement);
  EXPECT_EQ(p.device, "mgmt0");
  EXPECT_EQ(p.source->str(), "10.0.0.5");
  EXPECT_TRUE(probePathErrors(c).empty());
  // The exception path on as well: interface still wins.
  Config both = parsed(file(kExceptionPath, ", interface: vrf-mgmt"));
  EXPECT_EQ(probePathOf(both, both.server_groups[0].health_check).device, "vrf-mgmt");
  EXPECT_FALSE(probePathOf(both, both.server_groups[0].health_check).source);
}

TEST(ProbePath, SourceOnTheDataPathMustBeTheUnderlayAddress) {
  Config c = parsed(file(kExceptionPath, ", source: 10.0.0.5"));
  auto errors = probePathErrors(c);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "server_groups[0].health_check.source");
  EXPECT_NE(errors[0].message.find("needs health_check.interface"), std::string::npos) << errors[0].message;
  Config same = parsed(file(kExceptionPath, ", source: 192.0.2.1"));
  EXPECT_TRUE(probePathErrors(same).empty());
}

// An IPv6-only node (no node.underlay_ip): the data path's probes come from
// node.underlay_ipv6, and a source of IPv4 is refused naming the missing key.
TEST(ProbePath, AnIpv6OnlyNodeProbesFromItsIpv6Address) {
  const std::string v6only =
      "node: { underlay_ipv6: 2001:db8:f::1, underlay_mac: 02:00:00:00:00:01, underlay_port: 1" + kExceptionPath +
      " }\nserver_groups:\n  - name: fw\n    health_check: { protocol: tcp, port: 80 }\n"
      "    servers: [ { address: 2001:db8:f::a } ]\n";
  Config c = parsed(v6only);
  ProbePath p = probePathOf(c, c.server_groups[0].health_check);
  EXPECT_EQ(p.kind, ProbePath::Kind::kData);
  EXPECT_FALSE(p.source);
  EXPECT_EQ(p.sourceFor(c.server_groups[0].appliances[0].address)->str(), "2001:db8:f::1");
  EXPECT_EQ(p.describe(), "data path (tap gw1, from 2001:db8:f::1)");
  EXPECT_TRUE(probePathErrors(c).empty());
  c.server_groups[0].health_check.source = IpAddr::parse("192.0.2.1");
  auto errors = probePathErrors(c);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("come from node.underlay_ip (not set)"), std::string::npos) << errors[0].message;
}

TEST(ProbePath, InterfaceNamesAreChecked) {
  for (const char* bad : {"a/b", "\"with space\"", "toolonginterface", "..", "\"eth0:1\""}) {
    Config c;
    std::vector<ConfigError> errors;
    EXPECT_FALSE(parseConfig(file("", std::string(", interface: ") + bad), c, errors)) << bad;
    ASSERT_FALSE(errors.empty()) << bad;
    EXPECT_EQ(errors[0].path, "server_groups[0].health_check.interface") << bad;
  }
}

TEST(ProbePath, KernelRouteOnLoopback) {
  KernelRoute r = kernelRoute(*IpAddr::parse("127.0.0.1"), "lo", std::nullopt);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.out, "lo");
  KernelRoute missing = kernelRoute(*IpAddr::parse("127.0.0.1"), "gwlb-nosuch0", std::nullopt);
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.error, "no interface gwlb-nosuch0 in gwlbd's network namespace");
  // A source that is no address of this host: the kernel has no route from it.
  KernelRoute foreign = kernelRoute(*IpAddr::parse("127.0.0.1"), "", IpAddr::parse("198.51.100.77"));
  EXPECT_FALSE(foreign.ok);
}

TEST(ProbePath, RouteErrorsNameTheGroupAndAppliance) {
  Config c = parsed(file("", ", interface: gwlb-nosuch0"));
  auto errors = probeRouteErrors(c);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].path, "server_groups[0].health_check");
  EXPECT_EQ(errors[0].message,
            "appliance 192.0.2.10 (fw): no route for its probes on the management path "
            "(interface gwlb-nosuch0): no interface gwlb-nosuch0 in gwlbd's network namespace");
  Config lo = parsed(file("", ", interface: lo"));
  lo.server_groups[0].appliances[0].address = *IpAddr::parse("127.0.0.1");
  EXPECT_TRUE(probeRouteErrors(lo).empty());
}

}  // namespace
}  // namespace gwlb::ctl
