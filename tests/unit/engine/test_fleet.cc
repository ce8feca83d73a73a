// Issue 16 item 1: two gateways with the same config and the same health view
// pick the same appliance and compute the same cookie for every flow, in both
// directions, whatever each node's history (the order appliances were added
// and removed, hence their server ids and their order in the config).
#include <gtest/gtest.h>

#include "tests/unit/small_config.h"

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/flow_cookie.h"
#include "common/flow_key.h"
#include "tests/unit/tuples.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {
namespace {

IpAddr ip(const char* s) { return *IpAddr::parse(s); }

// One simulated gateway: a config it edits over time and the registry that
// gives its appliances their (local) server ids.
struct Node {
  Config cfg = testing::smallConfig({});
  ApplianceRegistry reg;
  uint64_t generation = 0;
  std::unique_ptr<dp::Snapshot> snap;

  explicit Node(uint32_t table_size) { cfg.server_groups[0].maglev_table_size = table_size; }
  void rebuild() {
    snap = buildSnapshot(cfg, reg, {}, ++generation);
    reg.release(*snap);
  }
  void add(const char* a, uint32_t weight) {
    ApplianceConfig s;
    s.address = ip(a);
    s.weight = weight;
    cfg.server_groups[0].appliances.push_back(s);
    rebuild();
  }
  void remove(const char* a) {
    auto& v = cfg.server_groups[0].appliances;
    v.erase(std::remove_if(v.begin(), v.end(),
                           [&](const ApplianceConfig& s) { return s.address == ip(a); }),
            v.end());
    rebuild();
  }
  // The appliance (IPv4, host order) a new flow with this hash goes to, as
  // the workers pick it (dataplane/pipeline.cc forward()).
  uint32_t pick(uint32_t hash) const {
    const dp::GroupView& g = snap->groups[0];
    uint16_t id = g.maglev[hash % g.maglev.size()];
    return id == dp::kNoAppliance ? 0 : snap->appliances[id].ip;
  }
};

struct Weights {
  uint32_t a, b, c, d;
};

// Three nodes: one added A, B, C, D; one D, C, B, A, then removed B and added
// it back; one (restarted) first had an appliance E that left before A..D came.
struct Fleet {
  Node n1, n2, n3;
  explicit Fleet(const Weights& w, uint32_t table_size = 4093)
      : n1(table_size), n2(table_size), n3(table_size) {
    n1.add("10.0.0.11", w.a);
    n1.add("10.0.0.12", w.b);
    n1.add("10.0.0.13", w.c);
    n1.add("10.0.0.14", w.d);
    n2.add("10.0.0.14", w.d);
    n2.add("10.0.0.13", w.c);
    n2.add("10.0.0.12", w.b);
    n2.add("10.0.0.11", w.a);
    n2.remove("10.0.0.12");
    n2.add("10.0.0.12", w.b);
    n3.add("10.0.0.99", 1);
    n3.add("10.0.0.13", w.c);
    n3.add("10.0.0.11", w.a);
    n3.add("10.0.0.14", w.d);
    n3.remove("10.0.0.99");
    n3.add("10.0.0.12", w.b);
  }
};

L4Tuple randomTuple(std::mt19937_64& rng) {
  L4Tuple t;
  t.src = IpAddr::v4(uint32_t(rng()));
  t.dst = IpAddr::v4(uint32_t(rng()));
  t.sport = uint16_t(rng());
  t.dport = uint16_t(rng());
  t.proto = rng() % 2 ? kProtoTcp : 17;
  return t;
}

using gwlb::testing::reversed;

class Fleet1 : public ::testing::Test {
 protected:
  void SetUp() override { setFlowHashKey({0x0123456789abcdefULL, 0xfedcba9876543210ULL}); }
  void TearDown() override { setFlowHashKey({}); }
};

TEST_F(Fleet1, NodesWithDifferentHistoriesPickTheSameAppliance) {
  for (const Weights& w : {Weights{1, 1, 1, 1}, Weights{1, 2, 1, 3}}) {
    Fleet f(w);
    // The histories did leave different ids and config orders behind.
    ASSERT_NE(f.n1.reg.find(ip("10.0.0.11").v4HostOrder()),
              f.n2.reg.find(ip("10.0.0.11").v4HostOrder()));
    ASSERT_NE(f.n1.cfg.server_groups[0].appliances[0].address,
              f.n2.cfg.server_groups[0].appliances[0].address);
    std::mt19937_64 rng(7);
    size_t disagree = 0;
    std::set<uint32_t> used;
    for (int i = 0; i < 100000; ++i) {
      L4Tuple t = randomTuple(rng);
      uint32_t h = flowHash(makeFlowKey(t, StickinessMode::kFiveTuple, 0).key);
      uint32_t hr = flowHash(makeFlowKey(reversed(t), StickinessMode::kFiveTuple, 0).key);
      ASSERT_EQ(h, hr);
      uint32_t a1 = f.n1.pick(h), a2 = f.n2.pick(hr), a3 = f.n3.pick(h);
      ASSERT_NE(a1, 0u);
      used.insert(a1);
      disagree += a1 != a2 || a1 != a3;
    }
    EXPECT_EQ(disagree, 0u) << "of 100000 flows, weights " << w.a << w.b << w.c << w.d;
    EXPECT_EQ(used.size(), 4u);
  }
}


// The cookie each node gives a flow: a function of the flow key (both
// directions share it) and the appliance the node picked, under the shared
// key; distinct per flow and per appliance; another key gives other cookies.
TEST_F(Fleet1, NodesWithDifferentHistoriesComputeTheSameCookie) {
  Fleet f({1, 2, 1, 3});
  const uint32_t appliances[] = {ip("10.0.0.11").v4HostOrder(), ip("10.0.0.12").v4HostOrder(),
                                 ip("10.0.0.13").v4HostOrder(), ip("10.0.0.14").v4HostOrder()};
  const FlowHashKey fleet_key = flowHashKey();
  const FlowHashKey other_key{0x0123456789abcdefULL, 0xfedcba9876543211ULL};  // one bit apart
  constexpr int kFlows = 100000;
  std::mt19937_64 rng(11);
  std::vector<L4Tuple> tuples;
  std::vector<uint32_t> cookies;  // node 1's, per flow
  size_t disagree = 0;
  for (int i = 0; i < kFlows; ++i) {
    L4Tuple t = randomTuple(rng);
    tuples.push_back(t);
    // Node 1 sees the flow's first direction, nodes 2 and 3 the other one.
    uint32_t h1 = flowHash(makeFlowKey(t, StickinessMode::kFiveTuple, 0).key);
    uint32_t h2 = flowHash(makeFlowKey(reversed(t), StickinessMode::kFiveTuple, 0).key);
    uint32_t c1 = flowCookie(h1, f.n1.pick(h1));
    uint32_t c2 = flowCookie(h2, f.n2.pick(h2));
    uint32_t c3 = flowCookie(h2, f.n3.pick(h2));
    disagree += c1 != c2 || c1 != c3;
    ASSERT_NE(c1, 0u) << "0 means no cookie";
    cookies.push_back(c1);
    // On each appliance the flow has a cookie of its own (a moved flow's
    // cookie is never the one it had).
    std::set<uint32_t> per_appliance;
    for (uint32_t a : appliances) per_appliance.insert(flowCookie(h1, a));
    ASSERT_EQ(per_appliance.size(), 4u) << "flow " << i;
  }
  EXPECT_EQ(disagree, 0u);
  // Distinct per flow: 100,000 random 32-bit values share one by chance about
  // once (birthday bound); a constant or a cookie blind to the ports would
  // share thousands.
  std::set<uint32_t> distinct(cookies.begin(), cookies.end());
  EXPECT_GE(distinct.size(), size_t(kFlows) - 10);

  // A node with another secret computes other cookies: the ones this fleet
  // sends do not validate there (nor theirs here).
  setFlowHashKey(other_key);
  size_t validates = 0;
  for (int i = 0; i < kFlows; ++i) {
    uint32_t h = flowHash(makeFlowKey(tuples[i], StickinessMode::kFiveTuple, 0).key);
    validates += flowCookie(h, f.n1.pick(h)) == cookies[i];
  }
  setFlowHashKey(fleet_key);
  EXPECT_LE(validates, 3u) << "of " << kFlows << " cookies match under another key";
}

}  // namespace
}  // namespace gwlb::ctl
