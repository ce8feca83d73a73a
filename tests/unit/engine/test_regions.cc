// Aggregated health and region failover (docs/product-rules.md section 3): policy
// arithmetic at its boundaries, composites (AND, dry run), listener failover
// and failback with hold, when_all_unhealthy, and the config rules.
#include <gtest/gtest.h>

#include <string>

#include "control/engine/region_failover.h"

namespace gwlb::ctl {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;

IpAddr ip(const std::string& s) { return *IpAddr::parse(s); }

ApplianceGroupConfig group(const std::string& name, int n, int third_octet) {
  ApplianceGroupConfig g;
  g.name = name;
  g.maglev_table_size = 251;
  for (int i = 0; i < n; ++i) {
    ApplianceConfig s;
    s.address = ip("10.0." + std::to_string(third_octet) + "." + std::to_string(10 + i));
    g.appliances.push_back(s);
  }
  return g;
}

std::string addr(int third_octet, int i) {
  return "10.0." + std::to_string(third_octet) + "." + std::to_string(10 + i);
}

// east (5 servers, 10.0.1.x), west (5 servers, 10.0.2.x), ids-east (2, 10.0.3.x).
Config regions(uint32_t pct = 60, uint32_t cnt = 1, bool dry_run = false, uint32_t hold = 0) {
  Config c;
  c.node.underlay_ip = ip("192.0.2.1");
  c.node.underlay_mac = *MacAddr::parse("02:00:00:00:00:01");
  c.server_groups = {group("fw-east", 5, 1), group("fw-west", 5, 2), group("ids-east", 2, 3)};
  c.health_aggregation_policies = {{"strict", pct, cnt}};
  c.health_sources = {{"src-fw-east", "fw-east", "strict"}, {"src-ids-east", "ids-east", ""}};
  c.composite_health_checks = {{"inspect-east", {"src-fw-east", "src-ids-east"}, "inspect", dry_run}};
  ListenerConfig l;
  l.name = "inspect";
  l.server_groups = {"fw-east", "fw-west"};
  l.failback_hold_s = hold;
  c.listeners = {l};
  return c;
}

// Health with `down_east` of east's servers unhealthy (the rest healthy).
HealthMap health(int down_east, int down_west = 0, int down_ids = 0) {
  HealthMap h;
  for (int i = 0; i < 5; ++i) h[ip(addr(1, i)).v4HostOrder()] = i < down_east ? HealthState::kUnhealthy : HealthState::kHealthy;
  for (int i = 0; i < 5; ++i) h[ip(addr(2, i)).v4HostOrder()] = i < down_west ? HealthState::kUnhealthy : HealthState::kHealthy;
  for (int i = 0; i < 2; ++i) h[ip(addr(3, i)).v4HostOrder()] = i < down_ids ? HealthState::kUnhealthy : HealthState::kHealthy;
  return h;
}

TEST(Policy, PercentAndCountAtTheBoundaries) {
  Config c = regions();
  // 60 % of 5 needs 3.
  EXPECT_TRUE(judge(c, 0, 60, 1, health(2), nullptr).ok);    // 3 of 5
  EXPECT_FALSE(judge(c, 0, 60, 1, health(3), nullptr).ok);   // 2 of 5
  EXPECT_EQ(judge(c, 0, 60, 1, health(3), nullptr).why, "2 of 5 healthy; needs 3 (60 % and at least 1)");
  // Rounding up: 61 % of 5 = 3.05 needs 4; 80 % needs exactly 4; 100 % needs all.
  EXPECT_FALSE(judge(c, 0, 61, 1, health(2), nullptr).ok);
  EXPECT_TRUE(judge(c, 0, 61, 1, health(1), nullptr).ok);
  EXPECT_TRUE(judge(c, 0, 80, 1, health(1), nullptr).ok);
  EXPECT_FALSE(judge(c, 0, 100, 1, health(1), nullptr).ok);
  // 0 % and 0: healthy while the group has servers, even with none healthy.
  EXPECT_TRUE(judge(c, 0, 0, 0, health(5), nullptr).ok);
}

TEST(Policy, CountBeatsPercentAndPercentBeatsCount) {
  Config c = regions();
  EXPECT_FALSE(judge(c, 0, 20, 4, health(2), nullptr).ok) << "20 % met (3 of 5) but the count 4 is not";
  EXPECT_TRUE(judge(c, 0, 20, 3, health(2), nullptr).ok);
  EXPECT_FALSE(judge(c, 0, 80, 1, health(2), nullptr).ok) << "count 1 met but 80 % (4) is not";
}

TEST(Policy, ZeroServersAndWhatCounts) {
  Config c = regions();
  HealthMap h = health(0);
  // Weight 0 and drained appliances are not counted at all.
  c.server_groups[0].appliances[0].weight = 0;
  c.server_groups[0].appliances[1].weight = 0;
  ApplianceLifecycle life;
  ASSERT_EQ(life.drain(c, ip(addr(1, 2)).v4HostOrder(), 60u, 0), "");
  auto s = judge(c, 0, 60, 1, h, &life);
  EXPECT_EQ(s.appliances, 2u);
  EXPECT_EQ(s.healthy, 2u);
  EXPECT_TRUE(s.ok);
  // Only unhealthy counts against: initializing (no verdict yet) and
  // unchecked appliances count as healthy.
  h[ip(addr(1, 3)).v4HostOrder()] = HealthState::kInitializing;
  h.erase(ip(addr(1, 4)).v4HostOrder());
  s = judge(c, 0, 60, 1, h, &life);
  EXPECT_EQ(s.healthy, 2u);
  EXPECT_TRUE(s.ok);
  h[ip(addr(1, 3)).v4HostOrder()] = HealthState::kUnhealthy;
  s = judge(c, 0, 60, 1, h, &life);
  EXPECT_EQ(s.healthy, 1u);
  EXPECT_FALSE(s.ok) << "1 of 2 < 60 %";
  // Nothing left to count: unhealthy whatever the policy says.
  for (auto& sv : c.server_groups[0].appliances) sv.weight = 0;
  s = judge(c, 0, 0, 0, h, nullptr);
  EXPECT_EQ(s.appliances, 0u);
  EXPECT_FALSE(s.ok);
}

TEST(Composite, AndOfSources) {
  RegionTracker t;
  Config c = regions();
  t.update(c, health(0), nullptr, 0);
  ASSERT_EQ(t.composites().size(), 1u);
  EXPECT_TRUE(t.composites()[0].healthy);
  std::vector<std::string> log;
  EXPECT_TRUE(t.update(c, health(0, 0, 2), nullptr, kSec, &log)) << "the IDS source fails alone";
  EXPECT_FALSE(t.composites()[0].healthy);
  EXPECT_TRUE(t.composites()[0].sources[0].ok);
  EXPECT_FALSE(t.composites()[0].sources[1].ok);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log[0].find("composite inspect-east: healthy -> unhealthy (src-ids-east: 0 of 2 healthy"), std::string::npos) << log[0];
  EXPECT_EQ(t.composites()[0].since_ns, kSec);
}

TEST(Listener, FailsOverExactlyWhenThePolicySaysAndFailsBack) {
  RegionTracker t;
  Config c = regions(60, 3);
  std::vector<std::string> log;
  t.update(c, health(0), nullptr, 0, &log);
  const auto* l = t.listener("inspect");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->active, 0);
  EXPECT_TRUE(l->destination_healthy);
  // East loses servers one by one: 4, 3 healthy still pass (3 needed).
  EXPECT_FALSE(t.update(c, health(1), nullptr, 1 * kSec));
  EXPECT_FALSE(t.update(c, health(2), nullptr, 2 * kSec));
  EXPECT_EQ(t.listener("inspect")->active, 0);
  // 2 of 5: east fails, new flows go west at once.
  log.clear();
  EXPECT_TRUE(t.update(c, health(3), nullptr, 3 * kSec, &log));
  l = t.listener("inspect");
  EXPECT_EQ(l->active, 1);
  EXPECT_FALSE(l->destination_healthy);
  EXPECT_EQ(l->since_ns, 3 * kSec);
  bool logged = false;
  for (auto& s : log) logged = logged || s.find("listener inspect: new flows fw-east -> fw-west") == 0;
  EXPECT_TRUE(logged) << ::testing::PrintToString(log);
  // East back: no hold configured, traffic fails back at once.
  EXPECT_TRUE(t.update(c, health(2), nullptr, 4 * kSec));
  EXPECT_EQ(t.listener("inspect")->active, 0);
  EXPECT_TRUE(t.listener("inspect")->destination_healthy);
}

TEST(Listener, FailbackWaitsForTheHold) {
  RegionTracker t;
  Config c = regions(60, 1, false, 30);
  t.update(c, health(0), nullptr, 0);
  t.update(c, health(5), nullptr, 10 * kSec);
  ASSERT_EQ(t.listener("inspect")->active, 1);
  EXPECT_FALSE(t.nextHoldDeadline());
  t.update(c, health(0), nullptr, 20 * kSec);
  EXPECT_EQ(t.listener("inspect")->active, 1) << "east healthy for 0 s of 30";
  ASSERT_TRUE(t.nextHoldDeadline());
  EXPECT_EQ(*t.nextHoldDeadline(), 50 * kSec);
  EXPECT_FALSE(t.update(c, health(0), nullptr, 49 * kSec));
  EXPECT_EQ(t.listener("inspect")->active, 1);
  // Flapping restarts the hold.
  t.update(c, health(5), nullptr, 49 * kSec + 1);
  t.update(c, health(0), nullptr, 50 * kSec);
  EXPECT_EQ(t.listener("inspect")->active, 1);
  EXPECT_EQ(*t.nextHoldDeadline(), 80 * kSec);
  EXPECT_TRUE(t.update(c, health(0), nullptr, 80 * kSec));
  EXPECT_EQ(t.listener("inspect")->active, 0);
  EXPECT_NE(t.listener("inspect")->reason.find("failed back"), std::string::npos);
}

TEST(Listener, FailoverIsImmediateEvenDuringAHold) {
  RegionTracker t;
  Config c = regions(60, 1, false, 30);
  t.update(c, health(0), nullptr, 0);
  t.update(c, health(5), nullptr, 1 * kSec);
  t.update(c, health(0), nullptr, 2 * kSec);  // east back, in its hold
  ASSERT_EQ(t.listener("inspect")->active, 1);
  // West fails now: east is the only healthy region, hold or not.
  t.update(c, health(0, 5), nullptr, 3 * kSec);
  EXPECT_EQ(t.listener("inspect")->active, 0);
}

TEST(Listener, BothDownFailOpenOrDrop) {
  RegionTracker t;
  Config c = regions();
  t.update(c, health(5, 5), nullptr, 0);
  EXPECT_EQ(t.listener("inspect")->active, 0) << "fail_open: the preferred region";
  EXPECT_FALSE(t.listener("inspect")->destination_healthy);
  c.listeners[0].when_all_unhealthy = WhenAllUnhealthy::kDrop;
  t.update(c, health(5, 5), nullptr, kSec);
  EXPECT_EQ(t.listener("inspect")->active, -1);
  t.update(c, health(5, 0), nullptr, 2 * kSec);
  EXPECT_EQ(t.listener("inspect")->active, 1);
}

TEST(Listener, DryRunComputesButNeverActs) {
  RegionTracker t;
  Config c = regions(60, 1, true);
  t.update(c, health(0), nullptr, 0);
  std::vector<std::string> log;
  EXPECT_TRUE(t.update(c, health(4), nullptr, kSec, &log));
  const auto* l = t.listener("inspect");
  EXPECT_FALSE(t.composites()[0].healthy);
  EXPECT_EQ(l->would_be_active, 1) << "a dry run shows where traffic would go";
  EXPECT_EQ(l->active, 0) << "covered only by a dry-run composite: never fails over";
  EXPECT_TRUE(l->destination_healthy);
  EXPECT_FALSE(l->destination_healthy_with_dry_run);
  bool would = false;
  for (auto& s : log) would = would || s.find("(dry run): would send new flows fw-east -> fw-west") != std::string::npos;
  EXPECT_TRUE(would) << ::testing::PrintToString(log);
  // Turning the dry run off acts at once.
  c.composite_health_checks[0].dry_run = false;
  t.update(c, health(4), nullptr, 2 * kSec);
  EXPECT_EQ(t.listener("inspect")->active, 1);
  EXPECT_FALSE(t.listener("inspect")->destination_healthy);
}

TEST(Listener, UncoveredRegionIsHealthyWhileAnApplianceIs) {
  RegionTracker t;
  Config c = regions();
  c.composite_health_checks.clear();
  t.update(c, health(0), nullptr, 0);
  EXPECT_EQ(t.listener("inspect")->active, 0);
  t.update(c, health(4), nullptr, kSec);  // 1 of 5: still a region
  EXPECT_EQ(t.listener("inspect")->active, 0);
  t.update(c, health(5), nullptr, 2 * kSec);  // none healthy
  EXPECT_EQ(t.listener("inspect")->active, 1);
  EXPECT_TRUE(t.listener("inspect")->destination_healthy) << "no composite: healthy while a region is";
  t.update(c, health(5, 5), nullptr, 3 * kSec);
  EXPECT_FALSE(t.listener("inspect")->destination_healthy);
}

TEST(Listener, NoListenersMeansTheFirstGroup) {
  RegionTracker t;
  Config c = regions();
  c.listeners.clear();
  c.composite_health_checks.clear();
  c.server_groups[0].when_all_unhealthy = WhenAllUnhealthy::kDrop;
  t.update(c, health(3), nullptr, 0);
  ASSERT_EQ(t.listeners().size(), 1u);
  EXPECT_TRUE(t.listeners()[0].implicit);
  EXPECT_EQ(t.listeners()[0].active, 0)
      << "2 of 5 healthy: the group keeps its new flows (no policy without composites)";
  EXPECT_TRUE(t.listeners()[0].destination_healthy);
  t.update(c, health(5), nullptr, kSec);
  EXPECT_EQ(t.listeners()[0].active, 0)
      << "its own when_all_unhealthy (Maglev builder) decides, not the listener";
  EXPECT_FALSE(t.listeners()[0].destination_healthy);
}

// ---- config rules ---------------------------------------------------------

bool hasError(const std::vector<ConfigError>& e, const std::string& path, const std::string& part) {
  for (auto& x : e)
    if (x.path == path && x.message.find(part) != std::string::npos) return true;
  return false;
}

TEST(RegionConfig, ParsesTheIssueExample) {
  const char* yaml = R"(
node: { underlay_ip: 192.0.2.1, underlay_mac: "02:00:00:00:00:01" }
server_groups:
  - { name: firewalls-east, servers: [{address: 10.0.1.10}, {address: 10.0.1.11}] }
  - { name: firewalls-west, servers: [{address: 10.0.2.10}] }
  - { name: ids-east, servers: [{address: 10.0.3.10}] }
health_aggregation_policies:
  - { name: strict, min_healthy_percent: 75, min_healthy_count: 3 }
health_sources:
  - { name: fw-east, server_group: firewalls-east, policy: strict }
  - { name: ids-east, server_group: ids-east }
composite_health_checks:
  - { name: inspect-east, sources: [fw-east, ids-east], destination: inspect, dry_run: true }
listeners:
  - { name: inspect, server_groups: [firewalls-east, firewalls-west], failback_hold: 5m, when_all_unhealthy: drop }
health_endpoint: { listen: "127.0.0.1:8081" }
)";
  Config c;
  std::vector<ConfigError> e;
  ASSERT_TRUE(parseConfig(yaml, c, e)) << formatErrors(e);
  EXPECT_EQ(c.health_aggregation_policies[0].min_healthy_percent, 75u);
  EXPECT_EQ(c.health_sources[1].policy, "");
  EXPECT_TRUE(c.composite_health_checks[0].dry_run);
  EXPECT_EQ(c.listeners[0].failback_hold_s, 300u);
  EXPECT_EQ(c.listeners[0].when_all_unhealthy, WhenAllUnhealthy::kDrop);
  EXPECT_EQ(c.health_endpoint.listen, "127.0.0.1:8081");
}

TEST(RegionConfig, EveryRuleViolatedIsNamed) {
  const char* yaml = R"(
node: { underlay_ip: 192.0.2.1, underlay_mac: "02:00:00:00:00:01" }
server_groups:
  - { name: a, servers: [{address: 10.0.1.10}] }
  - { name: b, stickiness: 2-tuple, servers: [{address: 10.0.2.10}] }
health_aggregation_policies:
  - { name: p, min_healthy_percent: 101, min_healthy_count: 5000 }
  - { name: p }
health_sources:
  - { name: s1, server_group: nope, policy: missing }
  - { name: c1, server_group: a }
composite_health_checks:
  - { name: c1, sources: [s1], destination: l1 }
  - { name: c2, sources: [c1, ghost, s1, s1], destination: nowhere }
  - { name: c3, sources: [], destination: l1 }
listeners:
  - { name: l1, server_groups: [a, b, zz], failback_hold: 3601 }
  - { name: l2, server_groups: [a] }
health_endpoint: { listen: "8081" }
)";
  Config c;
  std::vector<ConfigError> e;
  ASSERT_FALSE(parseConfig(yaml, c, e));
  EXPECT_TRUE(hasError(e, "health_aggregation_policies[0].min_healthy_percent", "101"));
  EXPECT_TRUE(hasError(e, "health_aggregation_policies[0].min_healthy_count", "5000"));
  EXPECT_TRUE(hasError(e, "health_aggregation_policies[1].name", "already the name"));
  EXPECT_TRUE(hasError(e, "health_sources[0].server_group", "'nope' is not a server group"));
  EXPECT_TRUE(hasError(e, "health_sources[0].policy", "'missing' is not a policy"));
  EXPECT_TRUE(hasError(e, "health_sources[1].name", "also the name of a composite"));
  EXPECT_TRUE(hasError(e, "composite_health_checks[1].sources[0]", "cannot be a source of another composite"));
  EXPECT_TRUE(hasError(e, "composite_health_checks[1].sources[1]", "'ghost' is not a health source"));
  EXPECT_TRUE(hasError(e, "composite_health_checks[1].sources[3]", "listed twice"));
  EXPECT_TRUE(hasError(e, "composite_health_checks[1].destination", "'nowhere' is not a listener"));
  EXPECT_TRUE(hasError(e, "composite_health_checks[2].sources", "needs 1..16"));
  EXPECT_TRUE(hasError(e, "listeners[0].server_groups[1]", "share their stickiness"));
  EXPECT_TRUE(hasError(e, "listeners[0].server_groups[2]", "'zz' is not a server group"));
  EXPECT_TRUE(hasError(e, "listeners[0].failback_hold", "3601"));
  EXPECT_TRUE(hasError(e, "listeners[1].server_groups[0]", "already belongs to listener 'l1'"));
  EXPECT_TRUE(hasError(e, "health_endpoint.listen", "not address:port"));
}

}  // namespace
}  // namespace gwlb::ctl
