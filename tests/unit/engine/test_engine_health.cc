// A health checker's reports into the engine (Engine::reportHealth,
// recordHealth): the engine keeps the health it is told and builds only when
// a report changes service; it asks nobody back. The neighbours' MACs alike
// (Engine::setNeighbours): pushed in, used by the next build. A real engine on a fixed
// clock, a flow table in anonymous memory, no EAL.
#include <gtest/gtest.h>
#include <rte_rcu_qsbr.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "control/engine/engine.h"
#include "dataplane/flow_table.h"
#include "tests/unit/small_config.h"

namespace gwlb {
namespace {

constexpr uint64_t kS = 1'000'000'000ULL;

struct Rig {
  rte_rcu_qsbr* q = nullptr;
  std::unique_ptr<dp::FlowTable> ft;
  dp::Dataplane dp;
  std::unique_ptr<ctl::Engine> engine;
  explicit Rig(ctl::Config c = ctl::testing::smallConfig()) {
    size_t sz = (rte_rcu_qsbr_get_memsize(1) + 63) / 64 * 64;
    q = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(64, sz));
    if (!q || rte_rcu_qsbr_init(q, 1) != 0) std::abort();
    ft = std::make_unique<dp::FlowTable>("health", 1024, q, 0);
    dp.flows = ft.get();
    engine = std::make_unique<ctl::Engine>(std::move(c), *ft, dp, q);
    engine->start(1 * kS);
  }
  ~Rig() {
    engine.reset();
    ft.reset();
    std::free(q);
  }
  // Maglev slots of the appliance at `a` in the published snapshot.
  size_t slots(const char* a) const {
    const dp::Snapshot* s = engine->current();
    const uint16_t id = s->applianceByIp(IpAddr::parse(a)->v4HostOrder());
    const auto& m = s->groups.at(0).maglev;
    return size_t(std::count(m.begin(), m.end(), id));
  }
};

HealthReport report(const char* a, ApplianceHealth now, std::optional<HealthState> from = std::nullopt) {
  HealthReport r;
  r.appliance = IpAddr::parse(a)->v4HostOrder();
  r.now = now;
  if (from) r.transition = Transition{*from, now.state, "2 consecutive failures (connect_refused)", 0};
  return r;
}

TEST(EngineHealth, ATransitionReportedIsPublishedWithoutAskingBack) {
  Rig rig;
  const uint64_t gen = rig.engine->generation();
  ASSERT_GT(rig.slots("10.0.0.12"), 0u);
  rig.engine->reportHealth(report("10.0.0.12", HealthState::kUnhealthy, HealthState::kHealthy), 2 * kS);
  EXPECT_EQ(rig.engine->generation(), gen + 1) << "a transition builds and publishes";
  EXPECT_EQ(rig.slots("10.0.0.12"), 0u) << "the unhealthy appliance takes no new flows";
  EXPECT_GT(rig.slots("10.0.0.11"), 0u);
  EXPECT_EQ(rig.engine->health().at(IpAddr::parse("10.0.0.12")->v4HostOrder()).state, HealthState::kUnhealthy);
  rig.engine->reportHealth(report("10.0.0.12", HealthState::kHealthy, HealthState::kUnhealthy), 3 * kS);
  EXPECT_EQ(rig.engine->generation(), gen + 2);
  EXPECT_GT(rig.slots("10.0.0.12"), 0u) << "back in service";
}

TEST(EngineHealth, OnlyAChangeOfServiceBuilds) {
  Rig rig;
  const uint64_t gen = rig.engine->generation();
  // Newly checked, in provisional service: it took new flows unchecked and still does.
  rig.engine->reportHealth(report("10.0.0.11", ApplianceHealth(HealthState::kInitializing, true)), 2 * kS);
  EXPECT_EQ(rig.engine->generation(), gen);
  // Its first check failed: provisional service ends, no transition, and it
  // takes no new flows any more.
  rig.engine->reportHealth(report("10.0.0.11", ApplianceHealth(HealthState::kInitializing, false)), 3 * kS);
  EXPECT_EQ(rig.engine->generation(), gen + 1);
  EXPECT_EQ(rig.slots("10.0.0.11"), 0u);
  // No longer checked: its entry goes, and unchecked it is in service again.
  HealthReport gone = report("10.0.0.11", ApplianceHealth(HealthState::kInitializing, false));
  gone.removed = true;
  rig.engine->reportHealth(gone, 4 * kS);
  EXPECT_EQ(rig.engine->generation(), gen + 2);
  EXPECT_EQ(rig.engine->health().count(IpAddr::parse("10.0.0.11")->v4HostOrder()), 0u);
  EXPECT_GT(rig.slots("10.0.0.11"), 0u);
}

TEST(EngineHealth, RecordedReportsWaitForTheNextBuild) {
  Rig rig;
  const uint64_t gen = rig.engine->generation();
  // A config change's reports: kept, and the change's own build publishes them.
  EXPECT_TRUE(rig.engine->recordHealth(report("10.0.0.13", HealthState::kUnhealthy, HealthState::kHealthy)));
  EXPECT_EQ(rig.engine->generation(), gen) << "recordHealth never builds";
  EXPECT_GT(rig.slots("10.0.0.13"), 0u);
  rig.engine->rebuild("config", 2 * kS);
  EXPECT_EQ(rig.slots("10.0.0.13"), 0u);
}

}  // namespace
// gwlbd's neighbours push the MACs they learn (control/daemon/appliance_neighbours.h):
// the build reads what it was given and calls nobody back for them.
TEST(EngineNeighbours, TheMacsPushedInAreWhatTheNextBuildUses) {
  ctl::Config c = ctl::testing::smallConfig();
  c.node.gateway_mac.reset();  // the appliances' MACs must be found
  Rig rig(c);
  const uint32_t app = IpAddr::parse("10.0.0.12")->v4HostOrder();
  auto view = [&]() -> const dp::ApplianceSlot& {
    const dp::Snapshot* s = rig.engine->current();
    return s->appliances.at(s->applianceByIp(app));
  };
  EXPECT_FALSE(view().mac_known) << "none pushed yet: unresolved";
  const uint64_t gen = rig.engine->generation();
  const MacAddr mac = *MacAddr::parse("02:00:00:00:00:12");
  rig.engine->setNeighbours({{app, mac}});
  EXPECT_EQ(rig.engine->generation(), gen) << "setting the MACs builds nothing";
  EXPECT_FALSE(view().mac_known);
  rig.engine->rebuild("neighbours", 2 * kS);
  ASSERT_TRUE(view().mac_known);
  EXPECT_EQ(view().mac, mac);
  EXPECT_EQ(rig.engine->neighbours().size(), 1u);
  // Forgotten (probes unanswered): the next build has it unresolved again.
  rig.engine->setNeighbours({});
  rig.engine->rebuild("neighbours", 3 * kS);
  EXPECT_FALSE(view().mac_known);
}

}  // namespace gwlb
