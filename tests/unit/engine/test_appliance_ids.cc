// ApplianceRegistry (control/engine/snapshot_builder.h) under appliance churn (issue 14
// item 2): ids of appliances that are gone come back for reuse once no flow
// can name them, so an autoscaled fleet that sees more than 16,384 distinct
// addresses over time never exhausts them; and a flow's id always names the
// appliance the flow was created on.
#include <gtest/gtest.h>

#include "tests/unit/small_config.h"

#include <algorithm>
#include <deque>
#include <map>

#include "control/engine/lifecycle.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;

// The n-th address of the churn: 10.0.0.0 + n + 1 (all distinct).
IpAddr nth(uint32_t n) { return IpAddr::v4(0x0A000000u + n + 1); }

Config baseConfig() {
  Config c = testing::smallConfig({});
  ApplianceGroupConfig& g = c.server_groups[0];
  g.failover_mode = FailoverMode::kNoRebalance;  // flows stay on removed appliances
  g.connection_draining.enabled = false;
  return c;
}

// What gwlbd keeps: config, lifecycle, registry, snapshots, and a simulated
// flow table (each flow: the server id it was given and the address that id
// named when the flow was created).
struct Control {
  Config cfg = baseConfig();
  ApplianceLifecycle life;
  ApplianceRegistry reg;
  uint64_t generation = 0;
  uint64_t now = 0;
  std::deque<uint64_t> live_generations;  // snapshots not yet freed, oldest first
  struct Flow {
    uint16_t id;
    uint32_t addr;
    int ends_in;  // cycles left
  };
  std::vector<Flow> flows;

  void rebuild() {
    auto s = buildSnapshot(cfg, reg, {}, ++generation, {}, &life);
    reg.release(*s);
    live_generations.push_back(generation);
    // One snapshot stays alive beside the current one (a grace period that
    // has not passed yet), so the generation rule matters.
    while (live_generations.size() > 2) live_generations.pop_front();
  }
  std::vector<uint32_t> countsById() const {
    std::vector<uint32_t> by_id(reg.size(), 0);
    for (const Flow& f : flows)
      if (f.id < by_id.size()) ++by_id[f.id];
    return by_id;
  }
  // The daemon's slow tick: flow counts, lifecycle, reclaim. Then, until the
  // next tick, the grace period of every replaced snapshot passes.
  std::vector<uint16_t> tick() {
    now += kSec;
    std::vector<uint32_t> counts = countsById();
    if (life.tick(now, &counts, reg.addresses())) rebuild();
    std::vector<uint16_t> freed = reg.reclaim(live_generations.front(), countsById());
    while (live_generations.size() > 1) live_generations.pop_front();
    return freed;
  }
  // A change as applyConfig makes it: refused when the ids do not fit.
  bool apply(const Config& next) {
    if (reg.missing(next) > reg.available()) return false;
    life.applyConfig(cfg, next, now, "removed");
    cfg = next;
    rebuild();
    return true;
  }
};

TEST(ApplianceIds, ChurnPastTheIdLimitReusesIdsOnlyAfterTheirFlowsAreGone) {
  constexpr uint32_t kLive = 16, kPerCycle = 4;
  constexpr uint32_t kDistinct = 20000;  // > dp::kMaxApplianceIds (16,384)
  Control c;
  uint32_t next_addr = 0;
  Config first = c.cfg;
  for (; next_addr < kLive; ++next_addr) first.server_groups[0].appliances.push_back({nth(next_addr)});
  ASSERT_TRUE(c.apply(first));

  size_t max_span = 0;
  uint64_t reused = 0;
  std::map<uint16_t, uint32_t> last_owner;  // id -> the address it named last
  while (next_addr < kDistinct) {
    // New flows on every configured appliance; each lives two cycles.
    for (const ApplianceConfig& sc : c.cfg.server_groups[0].appliances) {
      uint32_t a = sc.address.v4HostOrder();
      c.flows.push_back({c.reg.find(a), a, 2});
    }
    // Remove the oldest kPerCycle appliances, add kPerCycle never seen before.
    Config next = c.cfg;
    auto& appliances = next.server_groups[0].appliances;
    appliances.erase(appliances.begin(), appliances.begin() + kPerCycle);
    for (uint32_t i = 0; i < kPerCycle; ++i) appliances.push_back({nth(next_addr++)});
    bool applied = false;
    ASSERT_NO_THROW(applied = c.apply(next)) << "at address " << next_addr;
    ASSERT_TRUE(applied) << "refused at address " << next_addr;
    for (const ApplianceConfig& sc : c.cfg.server_groups[0].appliances) {
      uint32_t a = sc.address.v4HostOrder();
      uint16_t id = c.reg.find(a);
      auto [it, fresh] = last_owner.emplace(id, a);
      if (!fresh && it->second != a) {
        ++reused;
        it->second = a;
      }
    }
    // Every live flow's id still names the appliance it was created on: an
    // id is never given to another address while a flow names it.
    for (const auto& f : c.flows)
      ASSERT_EQ(c.reg.addresses()[f.id], f.addr)
          << "flow on " << IpAddr::v4(f.addr).str() << " now points at id " << f.id << " of "
          << IpAddr::v4(c.reg.addresses()[f.id]).str();
    // Time passes: flows age out, the control thread ticks.
    for (auto& f : c.flows) --f.ends_in;
    c.flows.erase(std::remove_if(c.flows.begin(), c.flows.end(),
                                 [](const Control::Flow& f) { return f.ends_in <= 0; }),
                  c.flows.end());
    ASSERT_NO_THROW(c.tick());
    max_span = std::max(max_span, c.reg.size());
  }
  EXPECT_GT(next_addr, dp::kMaxApplianceIds);
  EXPECT_GT(reused, 10000u) << "ids of gone appliances are given to new ones";
  EXPECT_LE(max_span, 4 * kLive) << "ids in use stay near the live fleet's size";
  EXPECT_GE(c.reg.reclaimed_total(), reused);
}

TEST(ApplianceIds, ReleasedIdWaitsForOlderSnapshotsAndItsLastFlow) {
  Control c;
  Config a = c.cfg;
  for (uint32_t i = 0; i < 3; ++i) a.server_groups[0].appliances.push_back({nth(i)});
  ASSERT_TRUE(c.apply(a));
  uint32_t gone = nth(1).v4HostOrder();
  uint16_t id = c.reg.find(gone);
  Config b = a;
  b.server_groups[0].appliances.erase(b.server_groups[0].appliances.begin() + 1);
  ASSERT_TRUE(c.apply(b));
  // Removed (no_rebalance, no draining) with one flow: held by the lifecycle.
  c.flows.push_back({id, gone, 1});
  EXPECT_TRUE(c.tick().empty());
  EXPECT_NE(c.life.find(gone), nullptr);
  EXPECT_EQ(c.reg.released(), 0u) << "still routable for its flow";
  // The flow ends: the lifecycle forgets it, the snapshot shows it gone, the
  // registry releases the id at that snapshot's generation.
  c.flows.clear();
  std::vector<uint32_t> none(c.reg.size(), 0);
  c.now += kSec;
  ASSERT_TRUE(c.life.tick(c.now, &none, c.reg.addresses()));
  c.rebuild();
  uint64_t released_at = c.generation;
  EXPECT_EQ(c.reg.released(), 1u);
  EXPECT_EQ(c.reg.find(gone), id) << "keeps its id until reclaimed";
  // A snapshot older than the release is alive: a worker could still pick
  // the id for a new flow there, so the id is not free yet.
  EXPECT_FALSE(c.reg.reclaimable(released_at - 1));
  EXPECT_TRUE(c.reg.reclaim(released_at - 1, none).empty());
  // Older snapshots freed, but a count still sees an entry (a fragment, a
  // flow a worker created late): not free either.
  std::vector<uint32_t> one(c.reg.size(), 0);
  one[id] = 1;
  EXPECT_TRUE(c.reg.reclaimable(released_at));
  EXPECT_TRUE(c.reg.reclaim(released_at, one).empty());
  // Nothing names it: free, and the next new address gets it.
  EXPECT_EQ(c.reg.reclaim(released_at, none), std::vector<uint16_t>{id});
  EXPECT_EQ(c.reg.find(gone), dp::kNoAppliance);
  EXPECT_EQ(c.reg.addresses()[id], 0u);
  Config d = b;
  d.server_groups[0].appliances.push_back({nth(7)});
  ASSERT_TRUE(c.apply(d));
  EXPECT_EQ(c.reg.find(nth(7).v4HostOrder()), id);
}

TEST(ApplianceIds, ConfiguredAgainBeforeReclaimKeepsItsId) {
  Control c;
  Config a = c.cfg;
  for (uint32_t i = 0; i < 3; ++i) a.server_groups[0].appliances.push_back({nth(i)});
  ASSERT_TRUE(c.apply(a));
  uint32_t addr = nth(2).v4HostOrder();
  uint16_t id = c.reg.find(addr);
  Config b = a;
  b.server_groups[0].appliances.pop_back();
  ASSERT_TRUE(c.apply(b));
  c.tick();  // no flow: forgotten and released
  EXPECT_EQ(c.reg.released(), 1u);
  ASSERT_TRUE(c.apply(a));
  EXPECT_EQ(c.reg.find(addr), id);
  EXPECT_EQ(c.reg.released(), 0u) << "in use again: not released any more";
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(c.tick().empty());
  EXPECT_EQ(c.reg.find(addr), id);
}

TEST(ApplianceIds, AtTheLimitAChangeIsRefusedBeforeAnythingChanges) {
  // 16,384 ids held: 16,383 configured appliances plus one removed that still
  // carries a flow. One more new address does not fit.
  Control c;
  Config full = c.cfg;
  full.server_groups.clear();
  for (uint32_t gi = 0; gi < 16; ++gi) {
    ApplianceGroupConfig g = baseConfig().server_groups[0];
    g.name = "fw" + std::to_string(gi);
    g.maglev_table_size = 2053;  // a prime above 1024
    for (uint32_t i = 0; i < 1024; ++i) g.appliances.push_back({nth(gi * 1024 + i)});
    full.server_groups.push_back(g);
  }
  ASSERT_TRUE(c.apply(full));
  EXPECT_EQ(c.reg.held(), dp::kMaxApplianceIds);
  EXPECT_EQ(c.reg.available(), 0u);
  uint32_t leaving = nth(5).v4HostOrder();
  Config less = full;
  less.server_groups[0].appliances.erase(less.server_groups[0].appliances.begin() + 5);
  ASSERT_TRUE(c.apply(less));
  c.flows.push_back({c.reg.find(leaving), leaving, 1000});
  c.tick();
  Config more = less;
  more.server_groups[1].appliances.push_back({nth(20000)});
  EXPECT_EQ(c.reg.missing(more), 1u);
  uint64_t gen = c.generation;
  EXPECT_FALSE(c.apply(more)) << "refused: every id is held";
  EXPECT_EQ(c.generation, gen) << "nothing was built";
  EXPECT_EQ(c.reg.find(nth(20000).v4HostOrder()), dp::kNoAppliance);
  EXPECT_THROW(c.reg.idFor(nth(20000).v4HostOrder()), std::length_error)
      << "the registry itself refuses too (what applyConfig checks first)";
  // The flow ends: the id comes back and the same change fits.
  c.flows.clear();
  c.tick();
  c.tick();
  c.tick();
  EXPECT_EQ(c.reg.available(), 1u);
  EXPECT_TRUE(c.apply(more));
}

}  // namespace
}  // namespace gwlb::ctl
