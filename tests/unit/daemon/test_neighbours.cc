// The appliances' neighbour entries (control/daemon/neighbours.h) on a fake clock:
// learned, aged, probed and forgotten as the state machine says, so that an
// appliance replaced with the same address and a new MAC is found again
// (issue 14 item 6). Also which MAC and role each port gets
// (control/engine/snapshot_builder.h resolvePorts, item 4 and 17).
#include <gtest/gtest.h>

#include <vector>

#include "control/daemon/neighbours.h"
#include "control/engine/snapshot_builder.h"
#include "tests/unit/small_config.h"

namespace gwlb::ctl {
namespace {

constexpr uint64_t kS = 1'000'000'000ULL;
constexpr uint32_t kApp = 0x0A00000B;  // 10.0.0.11
const MacAddr kOld = *MacAddr::parse("02:00:00:00:11:01");
const MacAddr kNew = *MacAddr::parse("02:00:00:00:11:02");

using State = NeighbourCache::State;
using Requests = std::vector<NeighbourCache::Request>;

Requests tickAt(NeighbourCache& c, uint64_t t, bool* forgot = nullptr) {
  Requests r;
  bool f = c.tick(t, r);
  if (forgot) *forgot = f;
  return r;
}

// Reachable after an answer; the reachable time runs out; three unicast
// probes a second apart go to the MAC it has; unanswered, the MAC is
// forgotten (the snapshot must change) and broadcasts start; the appliance,
// now at a new MAC, answers one and is reachable again at the new MAC.
TEST(Neighbours, ReplacedApplianceIsFoundAgainAfterUnansweredProbes) {
  NeighbourCache c;
  c.track({kApp}, 0);
  Requests r = tickAt(c, 0);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].ip, kApp);
  EXPECT_FALSE(r[0].mac) << "first request is a broadcast";
  EXPECT_TRUE(tickAt(c, kS / 2).empty()) << "one request per retrans interval";
  ASSERT_EQ(tickAt(c, kS).size(), 1u) << "still unresolved: asked again";
  EXPECT_TRUE(c.macs().empty());

  EXPECT_TRUE(c.heard(kApp, kOld, kS + kS / 2)) << "a MAC to publish";
  EXPECT_EQ(c.find(kApp)->state, State::kReachable);
  EXPECT_EQ(c.macs().at(kApp), kOld);

  const uint64_t confirmed = kS + kS / 2;
  EXPECT_TRUE(tickAt(c, confirmed + 29 * kS).empty()) << "reachable for 30 s";
  EXPECT_EQ(c.find(kApp)->state, State::kReachable);

  bool forgot = true;
  r = tickAt(c, confirmed + 30 * kS, &forgot);
  EXPECT_FALSE(forgot);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].mac) << "stale: a unicast probe";
  EXPECT_EQ(*r[0].mac, kOld);
  EXPECT_EQ(c.find(kApp)->state, State::kProbe);
  EXPECT_EQ(c.macs().at(kApp), kOld) << "still used while probing";
  EXPECT_TRUE(tickAt(c, confirmed + 30 * kS + kS / 2).empty());
  for (uint64_t k = 1; k <= 2; ++k) {
    r = tickAt(c, confirmed + (30 + k) * kS, &forgot);
    ASSERT_EQ(r.size(), 1u) << "probe " << k + 1;
    EXPECT_EQ(*r[0].mac, kOld);
    EXPECT_FALSE(forgot);
  }
  r = tickAt(c, confirmed + 33 * kS, &forgot);
  EXPECT_TRUE(forgot) << "three probes unanswered: the MAC goes";
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].mac) << "and everyone is asked";
  EXPECT_EQ(c.find(kApp)->state, State::kIncomplete);
  EXPECT_TRUE(c.macs().empty());

  EXPECT_TRUE(c.heard(kApp, kNew, confirmed + 33 * kS + 1));
  EXPECT_EQ(c.macs().at(kApp), kNew);
  EXPECT_EQ(c.find(kApp)->state, State::kReachable);
}

TEST(Neighbours, AnsweredProbeKeepsTheEntryWithoutAChange) {
  NeighbourCache c;
  c.track({kApp}, 0);
  tickAt(c, 0);
  ASSERT_TRUE(c.heard(kApp, kOld, 0));
  Requests r = tickAt(c, 30 * kS);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(c.heard(kApp, kOld, 30 * kS + kS / 10)) << "same MAC: nothing to republish";
  EXPECT_EQ(c.find(kApp)->state, State::kReachable);
  EXPECT_TRUE(tickAt(c, 31 * kS).empty()) << "no more probes";
  EXPECT_TRUE(tickAt(c, 60 * kS).empty()) << "reachable for 30 s from the answer";
  EXPECT_EQ(tickAt(c, 60 * kS + kS / 10).size(), 1u);
}

// A gratuitous ARP (or any ARP the appliance sends) with a new MAC takes
// effect at once, in any state.
TEST(Neighbours, GratuitousArpMovesTheEntryToTheNewMacAtOnce) {
  NeighbourCache c;
  c.track({kApp}, 0);
  tickAt(c, 0);
  ASSERT_TRUE(c.heard(kApp, kOld, 0));
  EXPECT_TRUE(c.heard(kApp, kNew, 5 * kS));
  EXPECT_EQ(c.macs().at(kApp), kNew);
  tickAt(c, 35 * kS);  // probing kNew now
  EXPECT_EQ(c.find(kApp)->state, State::kProbe);
  EXPECT_TRUE(c.heard(kApp, kOld, 35 * kS + 1)) << "and back, while probing";
  EXPECT_EQ(c.find(kApp)->state, State::kReachable);
}

TEST(Neighbours, OnlyTrackedAddressesAreLearnedAndRemovedOnesForgotten) {
  NeighbourCache c;
  const uint32_t other = 0x0A00000C;
  c.track({kApp}, 0);
  EXPECT_FALSE(c.heard(other, kOld, 0)) << "not an appliance to resolve";
  EXPECT_EQ(c.macs().count(other), 0u);
  ASSERT_TRUE(c.heard(kApp, kOld, 0));
  EXPECT_FALSE(c.track({kApp, other}, kS)) << "adding forgets nothing";
  Requests r = tickAt(c, kS);
  ASSERT_EQ(r.size(), 1u) << "the new one is asked for at once";
  EXPECT_EQ(r[0].ip, other);
  EXPECT_TRUE(c.track({other}, 2 * kS)) << "kApp had a MAC";
  EXPECT_EQ(c.find(kApp), nullptr);
  EXPECT_FALSE(c.track({}, 3 * kS)) << "other had none";
}

TEST(Neighbours, TimingIsConfigurable) {
  NeighbourCache c({.reachable_ns = 5 * kS, .retrans_ns = kS / 4, .max_probes = 1});
  c.track({kApp}, 0);
  tickAt(c, 0);
  c.heard(kApp, kOld, 0);
  EXPECT_EQ(tickAt(c, 5 * kS).size(), 1u);
  bool forgot = false;
  tickAt(c, 5 * kS + kS / 4, &forgot);
  EXPECT_TRUE(forgot);
}

// ---- what the snapshot makes of the caches' MACs ------------------------------

// An IPv6 appliance without a `mac` gets the MAC neighbor discovery found
// (the daemon's IPv6 cache, keyed by applianceKey()), as an IPv4 one gets
// ARP's; until then it has none (drop_neighbour_unresolved).
TEST(Neighbours, SnapshotTakesTheMacNeighborDiscoveryFound) {
  Config c = testing::smallConfig({"10.0.0.11", "2001:db8:f::11"});
  c.node.gateway_mac.reset();
  c.node.underlay_ipv6 = *IpAddr::parse("2001:db8:f::1");
  const IpAddr v6 = *IpAddr::parse("2001:db8:f::11");
  ApplianceRegistry reg;
  auto find = [&](const dp::Snapshot& s, const IpAddr& a) -> const dp::ApplianceSlot* {
    for (const dp::ApplianceSlot& v : s.appliances)
      if (v.in_use && v.ip == applianceKey(a)) return &v;
    return nullptr;
  };
  auto before = buildSnapshot(c, reg, {}, 1);
  ASSERT_NE(find(*before, v6), nullptr);
  EXPECT_FALSE(find(*before, v6)->mac_known) << "nothing learned yet";
  reg.release(*before);
  ApplianceMacs learned = {{kApp, kOld}, {applianceKey(v6), kNew}};
  auto after = buildSnapshot(c, reg, learned, 2);
  const dp::ApplianceSlot* sv = find(*after, v6);
  ASSERT_NE(sv, nullptr);
  EXPECT_TRUE(sv->ipv6);
  EXPECT_TRUE(sv->mac_known);
  EXPECT_EQ(sv->mac, kNew);
  reg.release(*after);
}

// ---- resolvePorts -------------------------------------------------------------

Config portConfig(uint16_t underlay_port) {
  Config c;
  c.node.underlay_ip = *IpAddr::parse("192.0.2.1");
  c.node.underlay_mac = *MacAddr::parse("02:00:00:00:00:01");
  c.node.underlay_port = underlay_port;
  return c;
}

TEST(Ports, OnePortIsBothWithTheUnderlayMac) {
  Config c = portConfig(0);
  PortMacs dev = {*MacAddr::parse("02:00:00:00:77:77")};
  for (const PortMacs* d : std::vector<const PortMacs*>{nullptr, &dev}) {
    std::vector<dp::PortView> v = resolvePorts(c, d);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].role, PortRole::kBoth);
    EXPECT_EQ(v[0].mac, c.node.underlay_mac) << "node.underlay_mac, not the device's";
  }
}

TEST(Ports, SeparateUnderlayPortFacesAppliancesOthersRouters) {
  Config c = portConfig(1);
  PortMacs dev = {*MacAddr::parse("02:00:00:00:77:70"), *MacAddr::parse("02:00:00:00:77:71"),
                  MacAddr{}};
  std::vector<dp::PortView> v = resolvePorts(c, &dev);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].role, PortRole::kRouter);
  EXPECT_EQ(v[0].mac, dev[0]) << "the device's own MAC";
  EXPECT_EQ(v[1].role, PortRole::kAppliance);
  EXPECT_EQ(v[1].mac, c.node.underlay_mac);
  EXPECT_EQ(v[2].role, PortRole::kRouter);
  EXPECT_EQ(v[2].mac, c.node.underlay_mac) << "no device MAC: the node's";
  // Without devices (gwlb-replay): ports up to the highest id named.
  v = resolvePorts(c, nullptr);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].role, PortRole::kRouter);
  EXPECT_EQ(v[1].role, PortRole::kAppliance);
}

TEST(Ports, ConfiguredRolesAndMacsWin) {
  Config c = portConfig(1);
  const MacAddr m = *MacAddr::parse("02:00:00:00:aa:aa");
  c.node.ports = {{0, PortRole::kBoth, m}, {1, PortRole::kBoth, std::nullopt},
                  {3, PortRole::kAppliance, std::nullopt}};
  std::vector<dp::PortView> v = resolvePorts(c, nullptr);
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].role, PortRole::kBoth);
  EXPECT_EQ(v[0].mac, m);
  EXPECT_EQ(v[1].role, PortRole::kBoth);
  EXPECT_EQ(v[2].role, PortRole::kRouter);
  EXPECT_EQ(v[3].role, PortRole::kAppliance);
  PortMacs two = {MacAddr{}, MacAddr{}};
  EXPECT_EQ(resolvePorts(c, &two).size(), 2u) << "a port the process does not have is left out";
}

}  // namespace
}  // namespace gwlb::ctl
