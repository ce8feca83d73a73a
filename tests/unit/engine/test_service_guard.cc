// The guard rail of issue 14 item 13: which operator changes leave a server
// group with no appliance in service, and what gwlbd says would happen.
#include <gtest/gtest.h>

#include "tests/unit/small_config.h"

#include <algorithm>

#include "control/engine/service_guard.h"

namespace gwlb::ctl {
namespace {

IpAddr ip(const char* s) { return *IpAddr::parse(s); }
uint32_t v4(const char* a) { return ip(a).v4HostOrder(); }

Config config(bool checks = true, WhenAllUnhealthy all = WhenAllUnhealthy::kFailOpen) {
  Config c = testing::smallConfig();
  ApplianceGroupConfig& g = c.server_groups[0];
  g.failover_mode = FailoverMode::kRebalance;
  g.when_all_unhealthy = all;
  g.health_check.configured = checks;
  return c;
}

ApplianceConfig* appliance(Config& c, const char* a) {
  for (auto& s : c.server_groups[0].appliances)
    if (s.address == ip(a)) return &s;
  return nullptr;
}

Config without(Config c, const char* a) {
  auto& s = c.server_groups[0].appliances;
  s.erase(std::remove_if(s.begin(), s.end(), [&](const ApplianceConfig& x) { return x.address == ip(a); }),
          s.end());
  return c;
}

const HealthMap kOneHealthy = {{v4("10.0.0.11"), HealthState::kHealthy},
                               {v4("10.0.0.12"), HealthState::kUnhealthy},
                               {v4("10.0.0.13"), HealthState::kInitializing}};

TEST(ServiceGuard, DrainingTheLastApplianceInServiceIsALoss) {
  Config c = config();
  ApplianceLifecycle life, next = life;
  ASSERT_EQ(next.drain(c, v4("10.0.0.11"), std::nullopt, 0), "");
  auto losses = serviceLosses(c, life, c, next, kOneHealthy);
  ASSERT_EQ(losses.size(), 1u);
  const ServiceLoss& l = losses[0];
  EXPECT_EQ(l.group, "fw");
  EXPECT_EQ(l.taken, std::vector<std::string>{"10.0.0.11"});
  ASSERT_EQ(l.left.size(), 2u);
  EXPECT_EQ(l.left[0], (std::pair<std::string, std::string>{"10.0.0.12", "unhealthy"}));
  EXPECT_EQ(l.left[1], (std::pair<std::string, std::string>{"10.0.0.13", "initializing"}));
  std::string text = describeLosses(losses);
  SCOPED_TRACE(text);
  EXPECT_NE(text.find("server group 'fw' would have no appliance in service"), std::string::npos);
  EXPECT_NE(text.find("new flows go to 10.0.0.12, 10.0.0.13 anyway"), std::string::npos);
  EXPECT_NE(text.find("fail_open"), std::string::npos);
  EXPECT_NE(text.find("flows on 10.0.0.11 stay there"), std::string::npos);
  EXPECT_NE(describeLosses(losses, true).find("'fw' has no appliance in service"), std::string::npos);
}

TEST(ServiceGuard, ChangesThatLeaveServiceAreNotLosses) {
  HealthMap two = kOneHealthy;
  two[v4("10.0.0.12")] = HealthState::kHealthy;
  Config c = config();
  ApplianceLifecycle life, next = life;
  ASSERT_EQ(next.drain(c, v4("10.0.0.11"), std::nullopt, 0), "");
  EXPECT_TRUE(serviceLosses(c, life, c, next, two).empty()) << "10.0.0.12 is still in service";
  // A group that has no appliance in service already: the change loses nothing.
  HealthMap none = {{v4("10.0.0.11"), HealthState::kUnhealthy},
                    {v4("10.0.0.12"), HealthState::kUnhealthy},
                    {v4("10.0.0.13"), HealthState::kUnhealthy}};
  EXPECT_TRUE(serviceLosses(c, life, c, next, none).empty());
  // Without health checks every appliance is in service.
  Config off = config(false);
  EXPECT_TRUE(serviceLosses(off, life, off, next, {}).empty());
}

TEST(ServiceGuard, WeightZeroAndRemovalOfTheLastOne) {
  Config c = config();
  ApplianceLifecycle life;
  Config w0 = c;
  appliance(w0, "10.0.0.11")->weight = 0;
  ApplianceLifecycle after = life;
  after.applyConfig(c, w0, 0, "weight");
  EXPECT_EQ(serviceLosses(c, life, w0, after, kOneHealthy).size(), 1u);

  Config rm = without(c, "10.0.0.11");
  after = life;
  after.applyConfig(c, rm, 0, "removed");
  auto losses = serviceLosses(c, life, rm, after, kOneHealthy);
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_EQ(losses[0].taken, std::vector<std::string>{"10.0.0.11"});
}

TEST(ServiceGuard, DropSaysNewFlowsAreDropped) {
  Config c = config(true, WhenAllUnhealthy::kDrop);
  ApplianceLifecycle life, next = life;
  ASSERT_EQ(next.drain(c, v4("10.0.0.11"), std::nullopt, 0), "");
  std::string text = describeLosses(serviceLosses(c, life, c, next, kOneHealthy));
  EXPECT_NE(text.find("new flows are dropped (when_all_unhealthy: drop"), std::string::npos) << text;
}

TEST(ServiceGuard, NothingLeftMeansDroppedEvenWithFailOpen) {
  Config c = config(false);  // no checks: all in service
  ApplianceLifecycle life;
  ASSERT_EQ(life.drain(c, v4("10.0.0.12"), std::nullopt, 0), "");
  Config w = c;
  appliance(w, "10.0.0.13")->weight = 0;
  ApplianceLifecycle mid = life;
  mid.applyConfig(c, w, 0, "weight");
  ApplianceLifecycle next = mid;
  ASSERT_EQ(next.drain(w, v4("10.0.0.11"), std::nullopt, 0), "");
  auto losses = serviceLosses(w, mid, w, next, {});
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_TRUE(losses[0].left.empty());
  EXPECT_NE(losses[0].new_flows.find("dropped: no appliance left"), std::string::npos)
      << losses[0].new_flows;
}

// Reloads: appliances the change adds are judged as the health checker will
// start them: initializing, in provisional service only in a group without
// any verdict.
TEST(ServiceGuard, ReloadJudgesNewAppliancesAsTheyWillStart) {
  Config c = config();
  ApplianceLifecycle life;
  // Replace the healthy one by a new appliance: the group keeps verdicts
  // (.12 unhealthy), so the newcomer waits for its checks: a loss.
  Config next = without(c, "10.0.0.11");
  ApplianceConfig n;
  n.address = ip("10.0.0.14");
  next.server_groups[0].appliances.push_back(n);
  ApplianceLifecycle after = life;
  after.applyConfig(c, next, 0, "reload");
  auto losses = serviceLosses(c, life, next, after, kOneHealthy);
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_NE(describeLosses(losses).find("10.0.0.14 initializing"), std::string::npos);
  // Replace every appliance: the group starts again (no verdict), the new
  // ones serve provisionally: no loss.
  Config fresh = config();
  for (auto& s : fresh.server_groups[0].appliances) s.address = ip(("10.0.1." + std::to_string(s.address.b[3])).c_str());
  after = life;
  after.applyConfig(c, fresh, 0, "reload");
  EXPECT_TRUE(serviceLosses(c, life, fresh, after, kOneHealthy).empty());
  // Turning health checks off puts every appliance in service.
  Config off = c;
  off.server_groups[0].health_check.configured = false;
  appliance(off, "10.0.0.11")->weight = 0;
  after = life;
  after.applyConfig(c, off, 0, "reload");
  EXPECT_TRUE(serviceLosses(c, life, off, after, kOneHealthy).empty());
}

// What gwlbd's control API and gwlb-replay's events both ask: the same
// judgement as serviceLosses on the lifecycle the change would make.
TEST(ServiceGuard, DrainAndConfigChangeLossesJudgeTheChangeOnACopy) {
  Config c = config();
  ApplianceLifecycle life;
  std::string err;
  auto losses = drainLosses(c, life, kOneHealthy, v4("10.0.0.11"), std::nullopt, 0, err);
  EXPECT_EQ(err, "");
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_EQ(losses[0].taken, std::vector<std::string>{"10.0.0.11"});
  EXPECT_EQ(life.find(v4("10.0.0.11")), nullptr) << "the lifecycle itself is not changed";
  EXPECT_EQ(refusalText("server.drain 10.0.0.11", losses).rfind(
                "server.drain 10.0.0.11 refused: server group 'fw' would have no appliance in service", 0),
            0u);
  EXPECT_TRUE(drainLosses(c, life, kOneHealthy, v4("10.0.0.12"), std::nullopt, 0, err).empty());
  EXPECT_TRUE(drainLosses(c, life, kOneHealthy, v4("10.9.9.9"), std::nullopt, 0, err).empty());
  EXPECT_EQ(err, "not a configured appliance");

  EXPECT_EQ(configChangeLosses(c, life, kOneHealthy, without(c, "10.0.0.11"), 0, "removed").size(), 1u);
  EXPECT_TRUE(configChangeLosses(c, life, kOneHealthy, without(c, "10.0.0.12"), 0, "removed").empty());
  Config zero = c;
  appliance(zero, "10.0.0.11")->weight = 0;
  EXPECT_EQ(configChangeLosses(c, life, kOneHealthy, zero, 0, "removed").size(), 1u);
  // An invalid next config loses nothing here: applying it reports its errors.
  Config empty = c;
  empty.server_groups[0].appliances.clear();
  EXPECT_TRUE(configChangeLosses(c, life, kOneHealthy, empty, 0, "removed").empty());
}

}  // namespace
}  // namespace gwlb::ctl
