// Issue 17 item 3: Maglev tables reused between snapshots
// (control/engine/maglev_cache.h). A snapshot built with the cache is the snapshot
// built without it, whatever happened before (health flaps, weight changes,
// removals and re-adds that change server ids, table sizes); states seen
// recently cost no build; the cache never holds more than its capacity.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "control/engine/maglev_cache.h"
#include "control/engine/snapshot_builder.h"
#include "tests/unit/small_config.h"

namespace gwlb::ctl {
namespace {

IpAddr ip(const std::string& s) { return *IpAddr::parse(s); }

std::vector<std::string> applianceAddresses(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back("10.0." + std::to_string(i / 200) + "." + std::to_string(10 + i % 200));
  return v;
}

// A random walk of configs and health states: every snapshot built through
// the cache equals one built from scratch, table for table.
TEST(MaglevCache, SnapshotsEqualFreshBuildsThroughARandomHistory) {
  std::mt19937 rng(17);
  Config cfg = testing::smallConfig({});
  cfg.server_groups[0].appliances.clear();
  const std::vector<std::string> pool = applianceAddresses(24);
  for (int i = 0; i < 8; ++i) {
    ApplianceConfig s;
    s.address = ip(pool[size_t(i)]);
    cfg.server_groups[0].appliances.push_back(s);
  }
  ApplianceRegistry reg_cached, reg_fresh;
  MaglevCache cache(4);
  HealthMap health;
  uint64_t gen = 0;
  for (int step = 0; step < 300; ++step) {
    auto& appliances = cfg.server_groups[0].appliances;
    switch (rng() % 5) {
      case 0: {  // health flap
        const ApplianceConfig& s = appliances[rng() % appliances.size()];
        uint32_t a = s.address.v4HostOrder();
        health[a] = health[a] == HealthState::kUnhealthy ? HealthState::kHealthy : HealthState::kUnhealthy;
        break;
      }
      case 1:  // weight change
        appliances[rng() % appliances.size()].weight = 1 + rng() % 4;
        break;
      case 2:  // remove one (ids are released and reused)
        if (appliances.size() > 2) appliances.erase(appliances.begin() + long(rng() % appliances.size()));
        break;
      case 3: {  // add one not present
        const std::string& a = pool[rng() % pool.size()];
        bool present = false;
        for (const ApplianceConfig& s : appliances) present |= s.address == ip(a);
        if (!present) {
          ApplianceConfig s;
          s.address = ip(a);
          appliances.push_back(s);
        }
        break;
      }
      default:  // table size
        cfg.server_groups[0].maglev_table_size = rng() % 2 ? 251 : 509;
    }
    ++gen;
    auto cached = buildSnapshot(cfg, reg_cached, {}, gen, health, nullptr, nullptr, nullptr, &cache);
    auto fresh = buildSnapshot(cfg, reg_fresh, {}, gen, health);
    reg_cached.release(*cached);
    reg_fresh.release(*fresh);
    ASSERT_EQ(cached->groups.size(), fresh->groups.size());
    for (size_t g = 0; g < fresh->groups.size(); ++g)
      ASSERT_EQ(cached->groups[g].maglev, fresh->groups[g].maglev) << "step " << step;
    ASSERT_LE(cache.size(), 4u);
  }
  EXPECT_EQ(cache.hits() + cache.misses(), 300u);
  EXPECT_GT(cache.hits(), 0u);
}

// An appliance flapping between healthy and unhealthy: two builds, then
// every further snapshot comes from the cache; a weight change is a new
// table; a table size too.
TEST(MaglevCache, FlapsAreServedFromTheCache) {
  Config cfg = testing::smallConfig({});
  cfg.server_groups[0].appliances.clear();
  for (const std::string& a : applianceAddresses(100)) {
    ApplianceConfig s;
    s.address = ip(a);
    cfg.server_groups[0].appliances.push_back(s);
  }
  cfg.server_groups[0].maglev_table_size = 65537;
  ApplianceRegistry reg;
  MaglevCache cache;
  const uint32_t flapper = cfg.server_groups[0].appliances[7].address.v4HostOrder();
  for (int i = 0; i < 20; ++i) {
    HealthMap h;
    if (i % 2) h[flapper] = HealthState::kUnhealthy;
    auto s = buildSnapshot(cfg, reg, {}, uint64_t(i + 1), h, nullptr, nullptr, nullptr, &cache);
    reg.release(*s);
    ASSERT_EQ(s->groups[0].maglev.size(), 65537u);
    bool flapper_has_slots = false;
    for (uint16_t id : s->groups[0].maglev) flapper_has_slots |= s->appliances[id].ip == flapper;
    EXPECT_EQ(flapper_has_slots, i % 2 == 0) << "snapshot " << i;
  }
  EXPECT_EQ(cache.misses(), 2u);
  EXPECT_EQ(cache.hits(), 18u);
  cfg.server_groups[0].appliances[3].weight = 2;
  auto s = buildSnapshot(cfg, reg, {}, 21, {}, nullptr, nullptr, nullptr, &cache);
  EXPECT_EQ(cache.misses(), 3u);
  cfg.server_groups[0].maglev_table_size = 65521;
  s = buildSnapshot(cfg, reg, {}, 22, {}, nullptr, nullptr, nullptr, &cache);
  EXPECT_EQ(cache.misses(), 4u);
  EXPECT_EQ(s->groups[0].maglev.size(), 65521u);
}

// The least recently used table goes first.
TEST(MaglevCache, KeepsTheMostRecentlyUsedTables) {
  MaglevCache cache(2);
  std::vector<MaglevCache::Input> a{{0x0A000001, 1, 0}, {0x0A000002, 1, 1}};
  std::vector<MaglevCache::Input> b{{0x0A000001, 1, 0}, {0x0A000002, 0, 1}};
  std::vector<MaglevCache::Input> c{{0x0A000001, 0, 0}, {0x0A000002, 1, 1}};
  std::vector<uint16_t> ta = cache.table(a, 251, 0xFFFF);
  EXPECT_EQ(ta, buildGroupMaglev(a, 251, 0xFFFF));
  cache.table(b, 251, 0xFFFF);
  EXPECT_EQ(cache.table(a, 251, 0xFFFF), ta);  // hit: a is now the most recent
  cache.table(c, 251, 0xFFFF);                 // miss: b goes
  EXPECT_EQ(cache.misses(), 3u);
  cache.table(a, 251, 0xFFFF);
  EXPECT_EQ(cache.misses(), 3u);
  cache.table(b, 251, 0xFFFF);
  EXPECT_EQ(cache.misses(), 4u);
  EXPECT_EQ(cache.size(), 2u);
  // Same appliances and weights, other ids: another table.
  std::vector<MaglevCache::Input> a2{{0x0A000001, 1, 5}, {0x0A000002, 1, 6}};
  std::vector<uint16_t> t2 = cache.table(a2, 251, 0xFFFF);
  EXPECT_EQ(cache.misses(), 5u);
  for (size_t i = 0; i < t2.size(); ++i) EXPECT_EQ(t2[i], ta[i] + 5);
}

}  // namespace
}  // namespace gwlb::ctl
