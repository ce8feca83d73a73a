// The control thread's walks of the flow table in slices (docs/architecture.md
// "Walks in slices"): FlowTable's expiry pass, the engine's housekeeping and
// drain-deadline walks, and the flows API's pages each go over the table a
// bounded stretch per call, and what they assemble over the calls is what one
// whole-table walk gives: the same entries expired (every expired one), the
// same flows per appliance, the same server ids reclaimed, the same flows
// listed and counted. No EAL: tables in anonymous memory, an RCU variable no
// worker registers with (every grace period is over at once).
#include <gtest/gtest.h>
#include <rte_rcu_qsbr.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "control/service/handlers.h"
#include "control/engine/engine.h"
#include "control/engine/flow_policy.h"
#include "dataplane/flow_table.h"
#include "tests/unit/small_config.h"

namespace gwlb {
namespace {

constexpr uint64_t kS = 1'000'000'000ULL;
constexpr uint64_t kT0 = 10'000 * kS;  // the clock at the start (flows seen 400 s before it)

struct Qsbr {
  rte_rcu_qsbr* v = nullptr;
  Qsbr() {
    size_t sz = (rte_rcu_qsbr_get_memsize(1) + 63) / 64 * 64;
    v = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(64, sz));
    if (!v || rte_rcu_qsbr_init(v, 1) != 0) std::abort();
  }
  ~Qsbr() { std::free(v); }
};

FlowKey key(uint32_t i, bool fragment = false) {
  FlowKey k{};
  k.family = 4;
  k.kind = fragment ? KeyKind::kFragment : KeyKind::kFlow;
  k.proto = i % 5 == 0 ? 17 : 6;
  k.a[0] = 198, k.a[1] = 18, k.a[2] = uint8_t(i >> 8), k.a[3] = uint8_t(i);
  k.b[0] = 203, k.b[1] = 0, k.b[2] = uint8_t(i >> 16), k.b[3] = 1;
  k.port_a = fragment ? 0 : uint16_t(1024 + i % 50000);
  k.port_b = fragment ? 0 : 443;
  return k;
}

// What flow i is: its appliance (server id), whether it is idle past its
// timeout at kT0, a fragment entry, or still being created (no timeout yet).
struct Shape {
  uint16_t appliance;
  bool expired, fragment, creating;
};
Shape shapeOf(uint32_t i, uint16_t appliances) {
  return {uint16_t(i % appliances), i % 7 == 3, i % 11 == 5, i % 13 == 6};
}

// Fills `ft` with n flows shaped by shapeOf (the same table for the same n).
void fill(dp::FlowTable& ft, uint32_t n, uint16_t appliances) {
  for (uint32_t i = 0; i < n; ++i) {
    Shape sh = shapeOf(i, appliances);
    FlowKey k = key(i, sh.fragment);
    uint32_t h = flowHash(k);
    int32_t pos = ft.insert(k, h);
    ASSERT_GE(pos, 0) << i;
    dp::FlowEntry& e = ft.entry(pos);
    e.flow_hash.store(h);
    e.route.store(dp::packRoute(sh.appliance, h));
    e.created.store(kT0 - 500 * kS);
    e.last_seen.store(sh.expired ? kT0 - 400 * kS : kT0 - uint64_t(i % 100) * kS);
    if (!sh.creating) e.idle_timeout.store(350 * kS);
  }
}

// Flows (fragment entries excluded) per server id, by one whole walk.
std::vector<uint32_t> wholeCount(const dp::FlowTable& ft) {
  std::vector<uint32_t> out;
  ctl::countByAppliance(ft, out);
  return out;
}

std::set<uint32_t> present(const dp::FlowTable& ft, uint32_t n, uint16_t appliances) {
  std::set<uint32_t> in;
  for (uint32_t i = 0; i < n; ++i) {
    FlowKey k = key(i, shapeOf(i, appliances).fragment);
    if (ft.lookup(k, flowHash(k)) >= 0) in.insert(i);
  }
  return in;
}

// --- FlowTable's expiry pass ------------------------------------------------

TEST(SlicedExpiry, EachCallStaysWithinItsBoundAndThePassExpiresWhatOneWalkDoes) {
  Qsbr q;
  constexpr uint32_t kN = 30000;
  dp::FlowTable whole("whole", 65536, q.v, 0), sliced("sliced", 65536, q.v, 0);
  fill(whole, kN, 3);
  fill(sliced, kN, 3);
  std::vector<uint16_t> whole_appliances, sliced_appliances;
  size_t deleted = whole.expire(kT0, 0, &whole_appliances);

  constexpr size_t kSlots = 1000, kKeys = 37;
  dp::FlowTable::ExpiryPass p;
  sliced.expireBegin(p, kT0);
  std::vector<uint32_t> visited;
  size_t calls = 0;
  for (bool done = false; !done; ++calls) {
    ASSERT_LT(calls, 1'000'000u) << "the pass never ends";
    uint32_t cursor = p.cursor;
    size_t live = p.live;
    done = sliced.expireStep(p, kSlots, kKeys, &sliced_appliances, [&](const FlowKey& k, int32_t, const dp::FlowEntry& e) {
      uint64_t r = e.route.load();
      if (k.kind == KeyKind::kFlow && (r & dp::kRouteSet)) {
        if (visited.size() <= dp::routeAppliance(r)) visited.resize(dp::routeAppliance(r) + 1u, 0);
        ++visited[dp::routeAppliance(r)];
      }
    });
    EXPECT_LE(p.cursor - cursor, kSlots) << "call " << calls << " walked past its slot bound";
    EXPECT_LE(p.live - live, kKeys) << "call " << calls << " looked at more keys than its bound";
  }
  EXPECT_GT(calls, sliced.slots() / 2 / kSlots) << "the pass went in slices";

  // Every expired flow, and only those, is gone from both.
  std::set<uint32_t> expect;
  for (uint32_t i = 0; i < kN; ++i) {
    Shape sh = shapeOf(i, 3);
    if (!sh.expired || sh.creating) expect.insert(i);
  }
  EXPECT_EQ(present(sliced, kN, 3), expect);
  EXPECT_EQ(present(whole, kN, 3), expect);
  EXPECT_EQ(p.expired, deleted);
  EXPECT_EQ(p.expired, kN - expect.size());
  std::multiset<uint16_t> a(whole_appliances.begin(), whole_appliances.end()), b(sliced_appliances.begin(), sliced_appliances.end());
  EXPECT_EQ(a, b) << "the servers of expired flows";
  // The flows the pass kept, counted as it went, are one walk's count after it.
  EXPECT_EQ(visited, wholeCount(whole));
  EXPECT_EQ(wholeCount(sliced), wholeCount(whole));
}

TEST(SlicedExpiry, TheExhaustionPolicyEvictsTheIdlestInSlices) {
  Qsbr q;
  constexpr uint32_t kCap = 4096;
  dp::FlowTable ft("evict", kCap, q.v, 0);
  // 95 % full, nobody idle past the timeout; flow i last seen i x 100 ms
  // before kT0 (distinct idle times, far more than 1/256 apart).
  constexpr uint32_t kN = kCap * 95 / 100;
  std::map<uint32_t, uint64_t> idle_ns;
  for (uint32_t i = 0; i < kN; ++i) {
    FlowKey k = key(i);
    uint32_t h = flowHash(k);
    int32_t pos = ft.insert(k, h);
    ASSERT_GE(pos, 0);
    dp::FlowEntry& e = ft.entry(pos);
    e.route.store(dp::packRoute(0, h));
    e.last_seen.store(kT0 - uint64_t(i) * kS / 10);
    e.idle_timeout.store(6000 * kS);
    idle_ns[i] = uint64_t(i) * kS / 10;
  }
  dp::FlowTable::ExpiryPass p;
  ft.expireBegin(p, kT0);
  size_t calls = 0;
  for (bool done = false; !done; ++calls) {
    uint32_t cursor = p.cursor;
    size_t evicted = p.evicted;
    done = ft.expireStep(p, 256, 16);
    // The call that ends the first walk starts the second at slot 0.
    size_t walked = p.cursor >= cursor ? p.cursor - cursor : ft.slots() / 2 - cursor;
    EXPECT_LE(walked, 256u);
    EXPECT_LE(p.evicted - evicted, 16u);
  }
  const size_t want = kN - kCap * 80 / 100;
  EXPECT_EQ(p.evicted, want);
  EXPECT_EQ(ft.evicted(), want);
  // The idlest went: every evicted flow was idle at least as long as every
  // kept one, up to the histogram's resolution (1/256 of the idle time).
  size_t kept = 0;
  uint64_t oldest_kept = 0, youngest_gone = UINT64_MAX;
  for (uint32_t i = 0; i < kN; ++i) {
    FlowKey k = key(i);
    if (ft.lookup(k, flowHash(k)) >= 0) {
      ++kept;
      oldest_kept = std::max(oldest_kept, idle_ns[i]);
    } else {
      youngest_gone = std::min(youngest_gone, idle_ns[i]);
    }
  }
  EXPECT_EQ(kept, kN - want);
  EXPECT_GE(double(youngest_gone), double(oldest_kept) * (1 - 1.0 / 128));
}

// --- The engine's walks ------------------------------------------------------

struct Rig {
  Qsbr q;
  dp::FlowTable ft;
  dp::Dataplane dp;
  std::vector<uint16_t> freed;
  std::unique_ptr<ctl::Engine> engine;
  size_t budget;
  Rig(uint32_t capacity, size_t b, std::initializer_list<const char*> apps)
      : ft("rig", capacity, q.v, 0), budget(b) {
    dp.flows = &ft;
    ctl::Config c = ctl::testing::smallConfig(apps);
    c.server_groups[0].failover_mode = ctl::FailoverMode::kNoRebalance;
    c.server_groups[0].connection_draining.enabled = true;
    ctl::Engine::Hooks h;
    h.ids_freed = [this](const std::vector<uint16_t>& ids) { freed.insert(freed.end(), ids.begin(), ids.end()); };
    engine = std::make_unique<ctl::Engine>(c, ft, dp, q.v, ctl::Engine::Inputs{}, h);
    engine->setWalkBudget(budget);
    engine->start(kT0 - 1 * kS);
  }
  // advance(t) until no walk is left; how many calls it took.
  size_t runUntil(uint64_t t) {
    size_t calls = 0;
    do {
      uint64_t slices = engine->walkSlices();
      engine->advance(t);
      ++calls;
      if (budget == 1) {
        EXPECT_LE(engine->walkSlices() - slices, 1u) << "one slice per call";
      }
    } while (engine->walking() && calls < 100000);
    return calls;
  }
};

// A table of 2^20 (1.15 M slots): at most kWalkSlots slots a slice, so a walk
// takes at least five advance() calls with gwlbd's budget.
constexpr uint32_t kBigTable = 1u << 20;
constexpr uint32_t kBigFlows = 120000;

TEST(EngineWalks, HousekeepingInSlicesExpiresAndCountsAsOneWalk) {
  Rig whole(kBigTable, 0, {"10.0.0.11", "10.0.0.12", "10.0.0.13"});
  Rig sliced(kBigTable, 1, {"10.0.0.11", "10.0.0.12", "10.0.0.13"});
  fill(whole.ft, kBigFlows, 3);
  fill(sliced.ft, kBigFlows, 3);
  EXPECT_EQ(whole.runUntil(kT0), 1u);
  size_t calls = sliced.runUntil(kT0);
  EXPECT_GE(calls, whole.ft.slots() / 2 / ctl::Engine::kWalkSlots) << "the walk went in slices";
  EXPECT_GE(calls, kBigFlows / ctl::Engine::kWalkKeys) << "at most kWalkKeys keys a slice";
  EXPECT_EQ(sliced.engine->walkSlices(), calls);
  // Every expired flow is gone; the counts are one walk's count of what is left.
  EXPECT_EQ(present(sliced.ft, kBigFlows, 3), present(whole.ft, kBigFlows, 3));
  EXPECT_EQ(sliced.engine->flowsByAppliance(), wholeCount(whole.ft));
  EXPECT_EQ(whole.engine->flowsByAppliance(), wholeCount(whole.ft));
  EXPECT_EQ(sliced.engine->flowsCountedAt(), kT0);
  uint32_t expired = 0;
  for (uint32_t i = 0; i < kBigFlows; ++i) expired += shapeOf(i, 3).expired && !shapeOf(i, 3).creating;
  EXPECT_EQ(present(sliced.ft, kBigFlows, 3).size(), kBigFlows - expired);
}

TEST(EngineWalks, ServerIdsAreReclaimedByTheSlicedCountAsByAWholeWalk) {
  // 10.0.0.14 has no flow, 10.0.0.13 has flows: both removed. The first is
  // forgotten and its id reclaimed; the second's id stays held by its flows.
  auto run = [](size_t budget) {
    auto r = std::make_unique<Rig>(kBigTable, budget,
                                   std::initializer_list<const char*>{"10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"});
    fill(r->ft, kBigFlows, 3);
    ctl::Config next = r->engine->config();
    next.server_groups[0].appliances.resize(2);
    r->engine->applyConfig(next, "removed", kT0 - kS / 2, true);
    for (uint64_t t = kT0; t <= kT0 + 4 * kS; t += kS) r->runUntil(t);
    return r;
  };
  auto whole = run(0), sliced = run(1);
  EXPECT_EQ(whole->freed, std::vector<uint16_t>{3}) << "10.0.0.14's id";
  EXPECT_EQ(sliced->freed, whole->freed);
  EXPECT_NE(sliced->engine->registry().find(IpAddr::parse("10.0.0.13")->v4HostOrder()), dp::kNoAppliance)
      << "an appliance with flows keeps its id";
  EXPECT_EQ(sliced->engine->registry().find(IpAddr::parse("10.0.0.14")->v4HostOrder()), dp::kNoAppliance);
}

TEST(EngineWalks, ADrainDeadlineIsJudgedOnASlicedCount) {
  auto run = [](size_t budget) {
    auto r = std::make_unique<Rig>(kBigTable, budget,
                                   std::initializer_list<const char*>{"10.0.0.11", "10.0.0.12", "10.0.0.13"});
    fill(r->ft, kBigFlows, 3);
    r->runUntil(kT0);  // the expired flows go first
    std::string err = r->engine->drain(IpAddr::parse("10.0.0.12")->v4HostOrder(), 1, kT0 + kS / 4);
    EXPECT_EQ(err, "");
    r->runUntil(kT0 + kS + kS / 4);  // the housekeeping at +1 s, then the deadline's walk
    return r;
  };
  auto whole = run(0), sliced = run(1);
  const uint32_t ip = IpAddr::parse("10.0.0.12")->v4HostOrder();
  const ctl::ApplianceLifecycle::Entry* a = whole->engine->lifecycle().find(ip);
  const ctl::ApplianceLifecycle::Entry* b = sliced->engine->lifecycle().find(ip);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->phase, dp::AppliancePhase::kDrained);
  EXPECT_EQ(b->phase, dp::AppliancePhase::kDrained) << "the drain timed out on the sliced count";
  EXPECT_EQ(b->flows, a->flows);
  EXPECT_EQ(b->flows, wholeCount(whole->ft)[1]);
  EXPECT_EQ(sliced->engine->lifecycle().stats().drains_timed_out, 1u);
}

// --- The flows API's pages ---------------------------------------------------

TEST(FlowsPages, EachPageIsBoundedAndThePagesListAndCountEveryFlowOnce) {
  Qsbr q;
  dp::FlowTable ft("pages", kBigTable, q.v, 0);
  fill(ft, kBigFlows, 3);
  auto name = [](int, uint32_t) { return std::string("fw"); };
  // The expected: flows (not fragment entries) on server 1, by one whole walk.
  size_t expect = 0, total = 0;
  ft.forEach([&](const FlowKey&, int32_t, const dp::FlowEntry& e) {
    ++total;
    expect += dp::routeAppliance(e.route.load()) == 1;
  });
  ctl::FlowsQuery query;
  query.by_appliance = true;
  query.appliance = 1;
  query.limit = 10000;
  std::set<std::string> rows;
  size_t pages = 0, scanned = 0;
  for (;;) {
    nlohmann::json r = ctl::flowsPage(ft, nullptr, query, kT0, name);
    ++pages;
    EXPECT_LE(r["scanned"].get<size_t>(), size_t(1) << 14) << "page " << pages;
    EXPECT_LE(r["flows"].size(), 512u) << "at most 512 rows a page, whatever the limit";
    scanned += r["scanned"].get<size_t>();
    for (const auto& f : r["flows"])
      EXPECT_TRUE(rows.insert(f["src"].get<std::string>() + ":" + std::to_string(f["sport"].get<int>()) + " " +
                              f["dst"].get<std::string>() + " " + f["kind"].get<std::string>())
                      .second)
          << "listed twice: " << f.dump();
    if (r["next_cursor"].is_null()) break;
    query.cursor = uint32_t(std::stoul(r["next_cursor"].get<std::string>()));
  }
  EXPECT_EQ(rows.size(), expect);
  EXPECT_EQ(scanned, total);
  EXPECT_GE(pages, ft.slots() / 2 / (size_t(1) << 18)) << "at most 2^18 slots a page";

  ctl::FlowsQuery count;
  count.count_only = true;
  size_t counted = 0, count_pages = 0;
  for (;;) {
    nlohmann::json r = ctl::flowsPage(ft, nullptr, count, kT0, name);
    ++count_pages;
    EXPECT_LE(r["scanned"].get<size_t>(), size_t(1) << 14);
    counted += r["count"].get<size_t>();
    if (r["next_cursor"].is_null()) break;
    count.cursor = uint32_t(std::stoul(r["next_cursor"].get<std::string>()));
  }
  EXPECT_EQ(counted, total);
  EXPECT_GT(count_pages, 1u);
}

}  // namespace
}  // namespace gwlb
