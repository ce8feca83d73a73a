// Existing flows when an appliance leaves (docs/product-rules.md section 2), through the
// real pipeline: the snapshot says which appliance sheds its flows
// (ApplianceSlot::move, built by the snapshot builder from health and the
// lifecycle) and a flow on it moves on its very next packet, to the Maglev
// choice of the group as it is now, with a new cookie; flows on other
// appliances do not change at all; moved flows never move back; the old
// appliance's late replies are dropped as return_after_move.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/flow_cookie.h"
#include "common/flow_key.h"
#include "control/engine/flow_policy.h"
#include "control/engine/region_failover.h"
#include "dataplane/move.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;
constexpr int kFlows = 90;

struct Seen {
  IpAddr appliance;
  uint32_t cookie = 0;
  uint16_t sport = 0;  // outer UDP source port (flow hash)
  Bytes sent;          // the Geneve packet as sent
  Encap enc;
};

class Rebalance : public ::testing::Test {
 protected:
  void make(ctl::FailoverMode mode, bool draining = false) {
    HarnessOptions o;
    o.failover_mode = mode;
    o.draining = draining;
    h_ = std::make_unique<Harness>(o);
  }
  Frame flow(int i) const {
    const Net& n = net();
    return Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 6,
                      tcp(n.client4, n.server4, uint16_t(20000 + i), 443, pattern(40, uint8_t(i)))),
                 kPortA};
  }
  // The flow hash of flow(i) (both directions share it).
  static uint32_t hashOf(int i) {
    L4Tuple t;
    t.src = net().client4;
    t.dst = net().server4;
    t.proto = 6;
    t.sport = uint16_t(20000 + i);
    t.dport = 443;
    return flowHash(makeFlowKey(t, StickinessMode::kFiveTuple, 0).key);
  }
  Seen send(int i) {
    Frame f = flow(i);
    Result r = h_->send(f);
    h_->quiescent();
    EXPECT_EQ(r.verdict, Verdict::kAppliance) << "flow " << i << ": " << describe(r);
    if (r.verdict != Verdict::kAppliance) return {};
    Encap e = checkEncap(*h_, r.bytes, expectedInner(*h_, f), expectedProtocol(*h_, f));
    return {e.appliance, e.cookie, e.sport, r.bytes, e};
  }
  std::vector<Seen> sendAll() {
    std::vector<Seen> v;
    for (int i = 0; i < kFlows; ++i) v.push_back(send(i));
    return v;
  }
  // The appliance carrying most flows (so every test has some to move).
  IpAddr busiest(const std::vector<Seen>& v) const {
    std::map<std::string, int> n;
    for (auto& s : v) ++n[s.appliance.str()];
    std::string best;
    int most = -1;
    for (auto& [a, c] : n)
      if (c > most) best = a, most = c;
    return *IpAddr::parse(best);
  }
  ctl::HealthMap healthWith(const IpAddr& down) const {
    ctl::HealthMap m;
    for (const IpAddr& a : net().appliances)
      m[a.v4HostOrder()] = a == down ? HealthState::kUnhealthy : HealthState::kHealthy;
    return m;
  }
  ctl::Config removing(const IpAddr& a) const {
    ctl::Config c = h_->config();
    auto& s = c.server_groups[0].appliances;
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it->address == a) {
        s.erase(it);
        break;
      }
    return c;
  }
  std::unique_ptr<Harness> h_;
};

TEST_F(Rebalance, UnhealthyApplianceShedsItsFlowsOnTheirNextPacket) {
  make(ctl::FailoverMode::kRebalance);
  std::vector<Seen> before = sendAll();
  IpAddr down = busiest(before);
  h_->republish(healthWith(down));
  std::vector<Seen> after = sendAll();
  int moved = 0;
  for (int i = 0; i < kFlows; ++i) {
    SCOPED_TRACE("flow " + std::to_string(i));
    EXPECT_NE(after[i].appliance, down) << "no packet may go to the failed appliance";
    EXPECT_EQ(after[i].sport, before[i].sport) << "outer source port follows the flow hash";
    if (before[i].appliance == down) {
      ++moved;
      EXPECT_NE(after[i].cookie, before[i].cookie) << "a moved flow gets a new cookie";
    } else {
      EXPECT_EQ(after[i].appliance, before[i].appliance) << "flows on healthy appliances stay";
      EXPECT_EQ(after[i].cookie, before[i].cookie);
    }
  }
  ASSERT_GT(moved, 0);
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), uint64_t(moved));
  EXPECT_EQ(h_->get(Counter::flows_rebalanced_unhealthy), uint64_t(moved));
  EXPECT_EQ(h_->get(Counter::flows_created), uint64_t(kFlows)) << "moves are not new flows";

  // The failed appliance recovers: moved flows do not move back.
  h_->republish({});
  std::vector<Seen> recovered = sendAll();
  for (int i = 0; i < kFlows; ++i) {
    EXPECT_EQ(recovered[i].appliance, after[i].appliance) << "flow " << i;
    EXPECT_EQ(recovered[i].cookie, after[i].cookie) << "flow " << i;
  }
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), uint64_t(moved));
}

TEST_F(Rebalance, NoRebalanceKeepsFlowsOnTheFailedAppliance) {
  make(ctl::FailoverMode::kNoRebalance);
  std::vector<Seen> before = sendAll();
  IpAddr down = busiest(before);
  h_->republish(healthWith(down));
  std::vector<Seen> after = sendAll();
  for (int i = 0; i < kFlows; ++i) {
    EXPECT_EQ(after[i].appliance, before[i].appliance) << "flow " << i;
    EXPECT_EQ(after[i].cookie, before[i].cookie) << "flow " << i;
  }
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), 0u);
  // New flows avoid it.
  for (int i = kFlows; i < kFlows + 60; ++i) EXPECT_NE(send(i).appliance, down) << "new flow " << i;
}

TEST_F(Rebalance, MovedFlowIsFollowedByItsReturnPathAndTheOldApplianceIsRefused) {
  make(ctl::FailoverMode::kRebalance);
  std::vector<Seen> before = sendAll();
  IpAddr down = busiest(before);
  int i = 0;
  while (before[i].appliance != down) ++i;
  h_->republish(healthWith(down));
  Seen after = send(i);
  ASSERT_NE(after.appliance, down);

  // The old appliance still returns a packet it had, with the old cookie.
  Result late = h_->send(reflect(before[i].sent), kUnderlayPort);
  EXPECT_EQ(late.verdict, Verdict::kDrop);
  EXPECT_EQ(late.drop, Counter::drop_return_after_move) << describe(late);
  // The new appliance's reply (new cookie) goes back to the router unchanged.
  Result ok = h_->send(reflect(after.sent), kUnderlayPort);
  ASSERT_EQ(ok.verdict, Verdict::kRouter) << describe(ok);
  EXPECT_EQ(ok.bytes, flow(i).returned());
  // A third appliance answering for the flow is still "wrong appliance".
  IpAddr third;
  for (const IpAddr& a : net().appliances)
    if (a != down && a != after.appliance) third = a;
  Bytes b = fromAppliance(third, after.sport, after.enc.geneve_hdr, after.enc.inner);
  Result wrong = h_->send(b, kUnderlayPort);
  EXPECT_EQ(wrong.drop, Counter::drop_return_wrong_appliance) << describe(wrong);

  // explain/flows data: where it was and why.
  const dp::FlowEntry* e = nullptr;
  h_->flows().forEach([&](const FlowKey& k, int32_t, const dp::FlowEntry& fe) {
    if (k.kind == KeyKind::kFlow && fe.moved.load() && dp::moveCookie(fe.moved.load()) == before[i].cookie)
      e = &fe;
  });
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(dp::MoveReason(dp::moveReason(e->moved.load())), dp::MoveReason::kUnhealthy);
  EXPECT_EQ(h_->snapshot().appliances[dp::moveFrom(e->moved.load())].ip, down.v4HostOrder());
  EXPECT_EQ(e->moves.load(), 1u);
}

TEST_F(Rebalance, AllUnhealthyFailOpenKeepsFlowsWhereTheyAre) {
  make(ctl::FailoverMode::kRebalance);
  std::vector<Seen> before = sendAll();
  ctl::HealthMap all;
  for (const IpAddr& a : net().appliances) all[a.v4HostOrder()] = HealthState::kUnhealthy;
  h_->republish(all);
  std::vector<Seen> after = sendAll();
  for (int i = 0; i < kFlows; ++i) EXPECT_EQ(after[i].appliance, before[i].appliance) << i;
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), 0u) << "nowhere healthy to go: no churn";
}

TEST_F(Rebalance, FragmentsOfAMovedFlowFollowItWithTheSameCookie) {
  make(ctl::FailoverMode::kRebalance);
  const Net& n = net();
  Bytes seg = udp(n.client4, n.server4, 7000, 7001, pattern(1200, 3));
  auto fr = ipv4Fragments(n.client4, n.server4, 17, seg, 800, 0x4242);
  Frame whole{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 7000, 7001, pattern(20))), kPortA};
  Result r0 = h_->send(whole);
  ASSERT_EQ(r0.verdict, Verdict::kAppliance);
  Encap e0 = checkEncap(*h_, r0.bytes, expectedInner(*h_, whole), expectedProtocol(*h_, whole));
  h_->republish(healthWith(e0.appliance));
  Frame f1{n.fromA(), kEthIpv4, fr[0], kPortA}, f2{n.fromA(), kEthIpv4, fr[1], kPortA};
  Result r1 = h_->send(f1), r2 = h_->send(f2);
  ASSERT_EQ(r1.verdict, Verdict::kAppliance) << describe(r1);
  ASSERT_EQ(r2.verdict, Verdict::kAppliance) << describe(r2);
  Encap e1 = checkEncap(*h_, r1.bytes, expectedInner(*h_, f1), expectedProtocol(*h_, f1));
  Encap e2 = checkEncap(*h_, r2.bytes, expectedInner(*h_, f2), expectedProtocol(*h_, f2));
  EXPECT_NE(e1.appliance, e0.appliance);
  EXPECT_EQ(e2.appliance, e1.appliance);
  EXPECT_EQ(e2.cookie, e1.cookie);
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), 1u) << "fragment entries are not flows";
}

// Removal rows of the table, with the lifecycle deciding.
struct RemovalRow {
  const char* name;
  ctl::FailoverMode mode;
  bool draining;
  bool moves_at_once;      // existing flows leave at the removal
  bool moves_after_drain;  // ... or at the drain timeout
};

class RemovalRows : public Rebalance, public ::testing::WithParamInterface<RemovalRow> {};

TEST_P(RemovalRows, ExistingFlowsFollowTheTable) {
  const RemovalRow& row = GetParam();
  make(row.mode, row.draining);
  std::vector<Seen> before = sendAll();
  IpAddr gone = busiest(before);
  int on_gone = 0;
  for (auto& s : before) on_gone += s.appliance == gone;

  ctl::ApplianceLifecycle life;
  uint64_t t0 = 100 * kSec;
  ctl::Config next = removing(gone);
  life.applyConfig(h_->config(), next, t0, "removed by test");
  h_->config() = next;
  h_->republish({}, &life);
  std::vector<Seen> during = sendAll();
  for (int i = 0; i < kFlows; ++i) {
    SCOPED_TRACE(std::string(row.name) + ", flow " + std::to_string(i));
    if (before[i].appliance != gone) {
      EXPECT_EQ(during[i].appliance, before[i].appliance);
      EXPECT_EQ(during[i].cookie, before[i].cookie);
    } else if (row.moves_at_once) {
      EXPECT_NE(during[i].appliance, gone);
    } else {
      EXPECT_EQ(during[i].appliance, gone);
      EXPECT_EQ(during[i].cookie, before[i].cookie);
    }
  }
  // New flows never go to the removed appliance.
  for (int i = kFlows; i < kFlows + 60; ++i) EXPECT_NE(send(i).appliance, gone) << "new flow " << i;

  // The drain timeout (300 s default) passes with flows still on it.
  std::vector<uint32_t> counts;
  ctl::countByAppliance(h_->flows(), counts);
  std::vector<uint32_t> addrs;
  for (auto& sv : h_->snapshot().appliances) addrs.push_back(sv.ip);
  bool changed = life.tick(t0 + 301 * kSec, &counts, addrs);
  // A drain times out; a removal that moved every flow at once is forgotten
  // (no flow left); a no_rebalance removal keeps its flows and its phase.
  EXPECT_EQ(changed, row.draining || row.moves_at_once);
  if (row.moves_at_once) {
    EXPECT_EQ(life.find(gone.v4HostOrder()), nullptr);
  }
  h_->republish({}, &life);
  std::vector<Seen> later = sendAll();
  for (int i = 0; i < kFlows; ++i) {
    SCOPED_TRACE(std::string(row.name) + ", after the timeout, flow " + std::to_string(i));
    if (before[i].appliance != gone) {
      EXPECT_EQ(later[i].appliance, before[i].appliance);
    }
    else if (row.moves_at_once || row.moves_after_drain) EXPECT_NE(later[i].appliance, gone);
    else EXPECT_EQ(later[i].appliance, gone);
  }
  uint64_t expect_moved = (row.moves_at_once || row.moves_after_drain) ? uint64_t(on_gone) : 0;
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), expect_moved);
  EXPECT_EQ(h_->get(Counter::flows_rebalanced_removed), row.moves_at_once ? expect_moved : 0);
  EXPECT_EQ(h_->get(Counter::flows_rebalanced_drain_timeout),
            row.moves_after_drain ? expect_moved : 0);
  if (row.draining) {
    EXPECT_EQ(life.stats().drains_timed_out, 1u);
    EXPECT_EQ(life.stats().flows_drain_timed_out, uint64_t(on_gone));
  }
}

INSTANTIATE_TEST_SUITE_P(
    DomainTable, RemovalRows,
    ::testing::Values(
        RemovalRow{"removed, draining, rebalance", ctl::FailoverMode::kRebalance, true, false, true},
        RemovalRow{"removed, draining, no_rebalance", ctl::FailoverMode::kNoRebalance, true, false, false},
        RemovalRow{"removed, no draining, rebalance", ctl::FailoverMode::kRebalance, false, true, false},
        RemovalRow{"removed, no draining, no_rebalance", ctl::FailoverMode::kNoRebalance, false, false, false}),
    [](const auto& info) {
      std::string s = info.param.name;
      for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return s;
    });

TEST_F(Rebalance, RemovedApplianceIsForgottenOnceItsLastFlowIsGone) {
  make(ctl::FailoverMode::kNoRebalance);
  std::vector<Seen> before = sendAll();
  IpAddr gone = busiest(before);
  int i = 0;
  while (before[i].appliance != gone) ++i;
  ctl::ApplianceLifecycle life;
  ctl::Config next = removing(gone);
  life.applyConfig(h_->config(), next, 100 * kSec, "removed by test");
  h_->config() = next;
  h_->republish({}, &life);
  // Its replies are still accepted while flows are on it...
  Result r = h_->send(reflect(before[i].sent), kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kRouter) << describe(r);
  // ...and once a count finds none left, it is forgotten: replies from it
  // come from an unknown appliance.
  std::vector<uint32_t> none(h_->snapshot().appliances.size(), 0);
  std::vector<uint32_t> addrs;
  for (auto& sv : h_->snapshot().appliances) addrs.push_back(sv.ip);
  EXPECT_TRUE(life.tick(101 * kSec, &none, addrs));
  EXPECT_EQ(life.find(gone.v4HostOrder()), nullptr);
  EXPECT_EQ(life.stats().forgotten, 1u);
  h_->republish({}, &life);
  Result late = h_->send(reflect(before[i].sent), kUnderlayPort);
  EXPECT_EQ(late.drop, Counter::drop_geneve_unknown_appliance) << describe(late);
  // A flow entry that still names it (a race with the count) moves rather
  // than being sent nowhere.
  Seen s = send(i);
  EXPECT_NE(s.appliance, gone);
  EXPECT_EQ(h_->get(Counter::flows_rebalanced_removed), 1u);
}

TEST_F(Rebalance, ControlSweepMovesIdleFlowsOfALeavingApplianceSoItIsForgotten) {
  make(ctl::FailoverMode::kRebalance);
  std::vector<Seen> before = sendAll();
  IpAddr gone = busiest(before);
  size_t on_gone = 0;
  for (auto& s : before) on_gone += s.appliance == gone;

  // An unhealthy (still configured) appliance is left to the lazy move.
  h_->republish(healthWith(gone));
  EXPECT_EQ(ctl::sweepMoves(h_->flows(), h_->snapshot(), h_->now), 0u);
  h_->republish({});

  ctl::ApplianceLifecycle life;
  ctl::Config next = removing(gone);
  life.applyConfig(h_->config(), next, 100 * kSec, "removed by test");
  h_->config() = next;
  h_->republish({}, &life);
  EXPECT_EQ(ctl::sweepMoves(h_->flows(), h_->snapshot(), h_->now), on_gone);
  EXPECT_EQ(ctl::sweepMoves(h_->flows(), h_->snapshot(), h_->now), 0u) << "each flow moves once";
  std::vector<uint32_t> counts;
  ctl::countByAppliance(h_->flows(), counts);
  uint16_t gid = h_->snapshot().applianceByIp(gone.v4HostOrder());
  ASSERT_NE(gid, dp::kNoAppliance);
  EXPECT_EQ(gid < counts.size() ? counts[gid] : 0u, 0u);
  std::vector<uint32_t> addrs;
  for (auto& sv : h_->snapshot().appliances) addrs.push_back(sv.ip);
  EXPECT_TRUE(life.tick(101 * kSec, &counts, addrs));
  EXPECT_EQ(life.find(gone.v4HostOrder()), nullptr) << "forgotten at once";

  // The next packets find the flows already moved, with the cookie a worker
  // would have chosen; no worker counts a move it did not make.
  h_->republish({}, &life);
  std::vector<Seen> after = sendAll();
  for (int i = 0; i < kFlows; ++i) {
    if (before[i].appliance != gone) {
      EXPECT_EQ(after[i].cookie, before[i].cookie) << i;
      continue;
    }
    EXPECT_NE(after[i].appliance, gone) << i;
    // The flow's cookie on its new appliance, as any gateway computes it.
    EXPECT_EQ(after[i].cookie, flowCookie(hashOf(i), after[i].appliance.v4HostOrder())) << i;
    EXPECT_NE(after[i].cookie, before[i].cookie) << i;
  }
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), 0u);
}

// Two regions behind one listener, each group with its own VNI: a flow keeps
// its entry when new flows fail over, is encapsulated with its appliance's
// own group, and comes back through that group.
class RegionFailover : public Rebalance, public ::testing::WithParamInterface<ctl::FailoverMode> {};

TEST_P(RegionFailover, FlowsFollowTheGroupsFailoverMode) {
  make(GetParam());
  ctl::Config& c = h_->config();
  ctl::ApplianceGroupConfig west = c.server_groups[0];
  west.name = "west";
  west.geneve.vni = 0x222222;
  west.appliances.clear();
  for (const char* a : {"10.0.1.21", "10.0.1.22"}) {
    ctl::ApplianceConfig sc;
    sc.address = *IpAddr::parse(a);
    west.appliances.push_back(sc);
  }
  c.server_groups.push_back(west);
  c.health_sources = {{"east-src", "inspection", ""}};
  c.composite_health_checks = {{"east", {"east-src"}, "svc", false}};
  ctl::ListenerConfig l;
  l.name = "svc";
  l.server_groups = {"inspection", "west"};
  c.listeners = {l};
  ctl::RegionTracker regions;
  ctl::HealthMap h;
  regions.update(c, h, nullptr, h_->now, nullptr);
  h_->republish(h, nullptr, &regions);
  std::vector<Seen> before = sendAll();  // checkEncap: east appliances, east VNI

  // Outer destination and VNI of what the pipeline sends (the harness's
  // checkEncap knows only the east group).
  struct Out {
    std::string appliance;
    uint32_t vni = 0;
    Bytes sent;
  };
  auto sendOuter = [&](int i) {
    Result r = h_->send(flow(i));
    h_->quiescent();
    EXPECT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    Out o;
    if (r.bytes.size() < 50) return o;
    o.appliance = IpAddr::v4(&r.bytes[30]).str();
    o.vni = (uint32_t(r.bytes[46]) << 16) | (uint32_t(r.bytes[47]) << 8) | r.bytes[48];
    o.sent = r.bytes;
    return o;
  };

  // East fails: 2 of its 3 appliances down (60 % needs 2 of 3).
  h[net().appliances[0].v4HostOrder()] = HealthState::kUnhealthy;
  h[net().appliances[1].v4HostOrder()] = HealthState::kUnhealthy;
  regions.update(c, h, nullptr, h_->now, nullptr);
  ASSERT_EQ(regions.listener("svc")->active, 1);
  h_->republish(h, nullptr, &regions);
  Out fresh = sendOuter(kFlows + 1);
  EXPECT_EQ(fresh.appliance.rfind("10.0.1.", 0), 0u) << "new flows go west: " << fresh.appliance;
  EXPECT_EQ(fresh.vni, 0x222222u);
  bool rebalance = GetParam() == ctl::FailoverMode::kRebalance;
  for (int i = 0; i < kFlows; ++i) {
    SCOPED_TRACE("flow " + std::to_string(i));
    Out o = sendOuter(i);
    bool west_now = o.appliance.rfind("10.0.1.", 0) == 0;
    EXPECT_EQ(west_now, rebalance) << o.appliance;
    if (!rebalance) {
      EXPECT_EQ(o.appliance, before[i].appliance.str());
    }
    EXPECT_EQ(o.vni, west_now ? 0x222222u : kVni) << "the appliance's own group's VNI";
    // The appliance's reply comes back through its own group, to the router.
    Result r = h_->send(reflect(o.sent), kUnderlayPort);
    EXPECT_EQ(r.verdict, Verdict::kRouter) << describe(r);
    EXPECT_EQ(r.bytes, flow(i).returned());
  }
  EXPECT_EQ(h_->get(Counter::flows_created), uint64_t(kFlows + 1)) << "no flow re-created";
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), rebalance ? uint64_t(kFlows) : 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, RegionFailover,
                         ::testing::Values(ctl::FailoverMode::kRebalance,
                                           ctl::FailoverMode::kNoRebalance),
                         [](const auto& info) { return std::string(ctl::toString(info.param)); });

}  // namespace
}  // namespace gwlb::dptest
