// Which fleet.peers entries are this node (control/fleet/fleet_peers.h; issue 24
// item 2): one peers list written for every node, with a wildcard
// sync_listen, holds this node's own address; gwlbd, `--check-config` and
// `gwlbctl fleet` name that entry, and the node skips it.
#include <gtest/gtest.h>

#include "control/fleet/fleet_peers.h"

namespace gwlb::ctl {
namespace {

IpAddr ip(const char* s) { return *IpAddr::parse(s); }

std::vector<size_t> indices(const std::vector<SelfPeer>& v) {
  std::vector<size_t> out;
  for (const SelfPeer& s : v) out.push_back(s.index);
  return out;
}

const std::vector<IpAddr> kHost = {ip("127.0.0.1"), ip("10.0.0.2"), ip("::1"), ip("2001:db8::2")};

TEST(SelfPeers, OneListForEveryNodeWithAWildcardListen) {
  // Node 2 of three: its own address is the second entry.
  std::vector<std::string> peers = {"10.0.0.1:7946", "10.0.0.2:7946", "10.0.0.3:7946"};
  auto self = selfPeers("0.0.0.0:7946", peers, kHost);
  ASSERT_EQ(indices(self), (std::vector<size_t>{1}));
  EXPECT_EQ(self[0].why, "10.0.0.2 is an address of this host, and fleet.sync_listen 0.0.0.0:7946 takes it");
  // Another port there is another process, not this node.
  EXPECT_TRUE(selfPeers("0.0.0.0:7947", peers, kHost).empty());
  // A specific listen address takes only itself.
  EXPECT_TRUE(selfPeers("10.0.0.9:7946", peers, kHost).empty());
}

TEST(SelfPeers, TheListenAddressItselfAndLoopback) {
  EXPECT_EQ(indices(selfPeers("10.0.0.2:7946", {"10.0.0.1:7946", "10.0.0.2:7946"}, {})),
            (std::vector<size_t>{1}));
  EXPECT_EQ(selfPeers("10.0.0.2:7946", {"10.0.0.2:7946"}, {})[0].why, "it is fleet.sync_listen");
  // Any 127/8 address and ::1 reach a wildcard socket, listed or not.
  auto lo = selfPeers("0.0.0.0:7946", {"127.0.0.5:7946", "[::1]:7946"}, {});
  EXPECT_EQ(indices(lo), (std::vector<size_t>{0})) << "an IPv4 wildcard does not take ::1";
  EXPECT_NE(lo[0].why.find("loopback"), std::string::npos);
}

TEST(SelfPeers, AnIpv6WildcardTakesIpv4Too) {
  std::vector<std::string> peers = {"10.0.0.2:7946", "[2001:db8::2]:7946", "[2001:db8::3]:7946",
                                    "[::1]:7946"};
  EXPECT_EQ(indices(selfPeers("[::]:7946", peers, kHost)), (std::vector<size_t>{0, 1, 3}));
  EXPECT_EQ(indices(selfPeers("[2001:db8:0::2]:7946", peers, kHost)), (std::vector<size_t>{1}))
      << "compared as addresses, not text";
}

TEST(SelfPeers, EntriesThatDoNotParseAreLeftToTheConfigChecks) {
  EXPECT_TRUE(selfPeers("0.0.0.0:7946", {"10.0.0.2", "", "host:7946"}, kHost).empty());
  EXPECT_TRUE(selfPeers("", {"10.0.0.2:7946"}, kHost).empty());
}

TEST(SelfPeers, HostAddressesIncludeLoopback) {
  auto host = hostAddresses();
  EXPECT_NE(std::find(host.begin(), host.end(), ip("127.0.0.1")), host.end());
}

}  // namespace
}  // namespace gwlb::ctl
