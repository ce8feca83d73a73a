// send_tcp_reset through the real pipeline (docs/product-rules.md "TCP resets
// for flows that cannot continue"): a TCP segment of a flow that cannot
// continue is dropped and its sender gets an RST it accepts (SEQ = the
// segment's ACK), out of the port and VLAN it came in on, IPv4 and IPv6; each
// endpoint at its next segment. Never an RST for an RST, for a SYN, for a flow
// that can continue, or with the setting off. Bounded by the worker's bucket,
// counted by reason. A node that got the flow by fleet sync decides alike.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/flow_cookie.h"
#include "common/tcp_reset.h"
#include "control/engine/lifecycle.h"
#include "control/engine/region_failover.h"
#include "control/fleet/fleet_sync.h"
#include "tests/dp/dp_harness.h"
#include "tests/dp/sync_sockets.h"

namespace gwlb::dptest {
namespace {

constexpr uint32_t kClientAck = 0x10203040, kServerAck = 0x50607080;

// Flow i from the client (router A, or the VLAN port) and its answers from
// the server (router B): an established connection's segments.
struct Flow {
  int i = 0;
  bool v6 = false;
  std::optional<uint16_t> vlan;
  IpAddr c() const { return v6 ? net().client6 : net().client4; }
  IpAddr s() const { return v6 ? net().server6 : net().server4; }
  uint16_t port() const { return uint16_t(41000 + i); }
  uint16_t type() const { return v6 ? kEthIpv6 : kEthIpv4; }
  Bytes l3(const IpAddr& src, const IpAddr& dst, const Bytes& seg) const {
    return v6 ? ipv6(src, dst, 6, seg) : ipv4(src, dst, 6, seg);
  }
  L2 clientL2() const { return vlan ? net().fromVlan(*vlan) : net().fromA(); }
  uint16_t clientPort() const { return vlan ? kPortVlan : kPortA; }
  Frame fromClient(uint8_t flags, const Bytes& data = {}) const {
    return Frame{clientL2(), type(), l3(c(), s(), tcp(c(), s(), port(), 443, data, flags, 7000, kClientAck)),
                 clientPort()};
  }
  Frame syn() const { return fromClient(kTcpSyn); }
  Frame data() const { return fromClient(kTcpAck, pattern(64)); }
  Frame fromServer(uint8_t flags = kTcpAck) const {
    return Frame{net().fromB(), type(), l3(s(), c(), tcp(s(), c(), 443, port(), pattern(32), flags, 9000, kServerAck)),
                 kPortB};
  }
};

// Asserts that r is the RST answering `sent` (RFC 9293 3.10.7.1, segment with ACK).
void expectRst(const Result& r, const Frame& sent, uint32_t seq, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
  EXPECT_EQ(r.port, sent.port) << "out of the port it came in on";
  const Bytes& b = r.bytes;
  const size_t l2 = sent.l2.vlan ? 18 : 14;
  const bool v6 = sent.type == kEthIpv6;
  ASSERT_EQ(b.size(), l2 + (v6 ? 40 : 20) + 20);
  EXPECT_EQ(slice(b, 0, 6), Bytes(sent.l2.src.b.begin(), sent.l2.src.b.end())) << "to the sender's MAC";
  EXPECT_EQ(slice(b, 6, 6), Bytes(sent.l2.dst.b.begin(), sent.l2.dst.b.end())) << "from ours";
  const Bytes in = sent.bytes();
  EXPECT_EQ(slice(b, 12, l2 - 12), slice(in, 12, l2 - 12)) << "same VLAN tag and EtherType";
  const size_t l3 = l2, l4 = l2 + (v6 ? 40 : 20);
  const size_t alen = v6 ? 16 : 4, src_at = v6 ? 8 : 12;
  EXPECT_EQ(slice(b, l3 + src_at, alen), slice(sent.l3, src_at + alen, alen)) << "from its destination";
  EXPECT_EQ(slice(b, l3 + src_at + alen, alen), slice(sent.l3, src_at, alen)) << "to its source";
  const size_t sl4 = v6 ? 40 : 20;
  EXPECT_EQ(get16(b, l4), get16(sent.l3, sl4 + 2)) << "ports swapped";
  EXPECT_EQ(get16(b, l4 + 2), get16(sent.l3, sl4));
  EXPECT_EQ(get32(b, l4 + 4), seq) << "SEQ = the segment's ACK";
  EXPECT_EQ(b[l4 + 13], kTcpRst);
  IpAddr src = v6 ? IpAddr::v6(b.data() + l3 + 8) : IpAddr::v4(b.data() + l3 + 12);
  IpAddr dst = v6 ? IpAddr::v6(b.data() + l3 + 24) : IpAddr::v4(b.data() + l3 + 16);
  EXPECT_TRUE(checksumOk(b.data() + l4, 20, pseudoSum(src, dst, 6, 20))) << "TCP checksum";
  if (!v6) {
    EXPECT_TRUE(checksumOk(b.data() + l3, 20)) << "IPv4 header checksum";
  }
}

class Resets : public ::testing::TestWithParam<ctl::FailoverMode> {
 protected:
  void make(bool on_unhealthy = true, bool on_deregistration = false) {
    HarnessOptions o;
    o.failover_mode = GetParam();
    h_ = std::make_unique<Harness>(o);
    h_->config().server_groups[0].send_tcp_reset.on_unhealthy = on_unhealthy;
    h_->config().server_groups[0].send_tcp_reset.on_deregistration = on_deregistration;
    h_->republish();
  }
  Result send(const Frame& f) {
    Result r = h_->send(f);
    h_->quiescent();
    return r;
  }
  // Starts flows 0..n-1 (SYN then data, both ways); their appliances.
  std::map<int, IpAddr> start(int n, bool v6 = false) {
    std::map<int, IpAddr> at;
    for (int i = 0; i < n; ++i) {
      Flow f{i, v6};
      Result r = send(f.syn());
      EXPECT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
      at[i] = checkEncap(*h_, r.bytes, expectedInner(*h_, f.syn()), expectedProtocol(*h_, f.syn())).appliance;
      EXPECT_EQ(send(f.data()).verdict, Verdict::kAppliance);
      EXPECT_EQ(send(f.fromServer()).verdict, Verdict::kAppliance);
    }
    return at;
  }
  void fail(const IpAddr& down) {
    for (const IpAddr& a : net().appliances)
      health_[a.v4HostOrder()] = a == down ? HealthState::kUnhealthy : HealthState::kHealthy;
    h_->republish(health_);
  }
  IpAddr applianceOf(const Result& r, const Frame& f) {
    EXPECT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    if (r.verdict != Verdict::kAppliance) return {};
    return checkEncap(*h_, r.bytes, expectedInner(*h_, f), expectedProtocol(*h_, f)).appliance;
  }
  std::unique_ptr<Harness> h_;
  ctl::HealthMap health_;
};

TEST_P(Resets, BothEndpointsOfAFailedAppliancesFlowsGetAnRstTheOthersGoOn) {
  make();
  for (bool v6 : {false, true}) {
    SCOPED_TRACE(v6 ? "IPv6" : "IPv4");
    health_.clear();
    h_->republish();
    std::map<int, IpAddr> at;
    for (auto& [i, a] : start(30, v6)) at[i] = a;
    const IpAddr down = at[0];
    const uint64_t resets0 = h_->get(Counter::tcp_resets_sent);
    fail(down);
    int on_down = 0;
    for (auto& [i, a] : at) {
      Flow f{i, v6};
      if (a == down) {
        ++on_down;
        expectRst(send(f.data()), f.data(), kClientAck, "the client's next segment");
        expectRst(send(f.fromServer()), f.fromServer(), kServerAck, "the server's next segment");
      } else {
        EXPECT_EQ(applianceOf(send(f.data()), f.data()), a) << "a flow that can continue goes on";
        EXPECT_EQ(applianceOf(send(f.fromServer()), f.fromServer()), a);
      }
    }
    ASSERT_GT(on_down, 0);
    EXPECT_EQ(h_->get(Counter::tcp_resets_sent) - resets0, uint64_t(2 * on_down));
  }
  EXPECT_EQ(h_->get(Counter::tcp_resets_unhealthy), h_->get(Counter::tcp_resets_sent));
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), 0u) << "TCP flows are reset, never moved";
  expectCounterInvariant(h_->counters(), "resets");
}

TEST_P(Resets, OffByDefaultTheFlowsGoWhereFailoverModeSends) {
  make(false);
  auto at = start(30);
  const IpAddr down = at[0];
  fail(down);
  for (auto& [i, a] : at) {
    Flow f{i};
    IpAddr now = applianceOf(send(f.data()), f.data());
    if (GetParam() == ctl::FailoverMode::kNoRebalance || !(a == down)) EXPECT_EQ(now, a);
    else EXPECT_FALSE(now == down) << "rebalance moves it";
  }
  EXPECT_EQ(h_->get(Counter::tcp_resets_sent), 0u);
}

TEST_P(Resets, NeverAnRstForAnRstNorForUdp) {
  make();
  auto at = start(20);
  const IpAddr down = at[0];
  // A UDP flow on the failed appliance follows failover_mode.
  const Net& n = net();
  int udp_on_down = -1;
  std::map<int, Frame> udps;
  for (int i = 0; i < 40 && udp_on_down < 0; ++i) {
    Frame u{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, uint16_t(50000 + i), 53)), kPortA};
    if (applianceOf(send(u), u) == down) udp_on_down = i, udps.emplace(i, u);
  }
  ASSERT_GE(udp_on_down, 0);
  fail(down);
  for (auto& [i, a] : at) {
    if (!(a == down)) continue;
    Flow f{i};
    Result r = send(f.fromClient(kTcpRst | kTcpAck));
    EXPECT_EQ(r.verdict, Verdict::kDrop) << describe(r);
    EXPECT_EQ(r.drop, Counter::drop_tcp_reset_not_answered);
  }
  const Frame& u = udps.at(udp_on_down);
  IpAddr ua = applianceOf(send(u), u);
  if (GetParam() == ctl::FailoverMode::kRebalance) EXPECT_FALSE(ua == down);
  else EXPECT_EQ(ua, down);
  EXPECT_EQ(h_->get(Counter::tcp_resets_sent), 0u);
  expectCounterInvariant(h_->counters(), "RSTs and UDP");
}

TEST_P(Resets, ASynReusingTheFlowStartsOverOnAnApplianceInService) {
  make();
  auto at = start(20);
  const IpAddr down = at[0];
  fail(down);
  for (auto& [i, a] : at) {
    if (!(a == down)) continue;
    Flow f{i};
    IpAddr to = applianceOf(send(f.syn()), f.syn());
    EXPECT_FALSE(to == down) << "the SYN is not reset: it goes to the group's choice";
    EXPECT_EQ(applianceOf(send(f.data()), f.data()), to) << "and the connection follows it";
    EXPECT_EQ(applianceOf(send(f.fromServer()), f.fromServer()), to);
  }
  EXPECT_EQ(h_->get(Counter::tcp_resets_sent), 0u);
}

TEST_P(Resets, TheWorkersBucketBoundsTheRstsASecond) {
  make();
  h_->config().node.tcp_reset_rate_per_s = 5;
  auto at = start(60);
  const IpAddr down = at[0];
  fail(down);
  std::vector<Flow> on_down;
  for (auto& [i, a] : at)
    if (a == down) on_down.push_back(Flow{i});
  ASSERT_GE(on_down.size(), 8u);
  int rst = 0, limited = 0;
  for (const Flow& f : on_down) {
    Result r = send(f.data());
    if (r.verdict == Verdict::kRouter) ++rst;
    else if (r.drop == Counter::drop_tcp_reset_rate_limited) ++limited;
  }
  EXPECT_EQ(rst, 5) << "one second's worth at once";
  EXPECT_EQ(limited, int(on_down.size()) - 5);
  h_->now += 400'000'000;  // 0.4 s: two more tokens
  rst = 0;
  for (const Flow& f : on_down) rst += send(f.data()).verdict == Verdict::kRouter;
  EXPECT_EQ(rst, 2);
  EXPECT_EQ(h_->get(Counter::drop_tcp_reset_rate_limited), uint64_t(limited) + on_down.size() - 2);
  expectCounterInvariant(h_->counters(), "rate limited");
}

TEST_P(Resets, VlanTaggedIpv6SegmentsGetTheirRstOnTheirVlan) {
  make();
  std::map<int, IpAddr> at;
  for (int i = 0; i < 20; ++i) {
    Flow f{i, true, uint16_t(0x2064)};
    at[i] = applianceOf(send(f.syn()), f.syn());
  }
  fail(at[0]);
  for (auto& [i, a] : at) {
    if (!(a == at[0])) continue;
    Flow f{i, true, uint16_t(0x2064)};
    expectRst(send(f.data()), f.data(), kClientAck, "tagged IPv6");
  }
}

TEST_P(Resets, DeregisteredAppliancesFlowsAreResetWhenTheDrainEnds) {
  make(false, true);
  auto at = start(30);
  const IpAddr down = at[0];
  ctl::ApplianceLifecycle life;
  ASSERT_EQ(life.drain(h_->config(), down.v4HostOrder(), 10, h_->now), "");
  h_->republish({}, &life);
  for (auto& [i, a] : at) {
    Flow f{i};
    EXPECT_EQ(applianceOf(send(f.data()), f.data()), a) << "while it drains, its flows go on";
  }
  h_->now += 11'000'000'000ULL;
  ASSERT_TRUE(life.tick(h_->now, nullptr, {}));
  h_->republish({}, &life);
  for (auto& [i, a] : at) {
    Flow f{i};
    if (a == down) expectRst(send(f.data()), f.data(), kClientAck, "drain over");
    else EXPECT_EQ(applianceOf(send(f.data()), f.data()), a);
  }
  EXPECT_GT(h_->get(Counter::tcp_resets_deregistered), 0u);
  EXPECT_EQ(h_->get(Counter::tcp_resets_deregistered), h_->get(Counter::tcp_resets_sent));
}

INSTANTIATE_TEST_SUITE_P(FailoverModes, Resets,
                         ::testing::Values(ctl::FailoverMode::kNoRebalance, ctl::FailoverMode::kRebalance),
                         [](const auto& info) {
                           return info.param == ctl::FailoverMode::kRebalance ? std::string("Rebalance")
                                                                              : std::string("NoRebalance");
                         });

// on_idle_timeout: a listener setting (AWS scopes it so).
class IdleResets : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = std::make_unique<Harness>();
    ctl::ListenerConfig l;
    l.name = "fw";
    l.server_groups = {h_->config().server_groups[0].name};
    l.send_tcp_reset.on_idle_timeout = true;
    h_->config().listeners = {l};
    regions_.update(h_->config(), health_, nullptr, h_->now, nullptr);
    h_->republish(health_, nullptr, &regions_);
    ASSERT_TRUE(h_->snapshot().listeners.at(0).reset_on_idle);
  }
  Result send(const Frame& f) {
    Result r = h_->send(f);
    h_->quiescent();
    return r;
  }
  std::unique_ptr<Harness> h_;
  ctl::RegionTracker regions_;
  ctl::HealthMap health_;
};

TEST_F(IdleResets, ASegmentWithoutSynAndWithoutAnEntryIsReset) {
  Flow f{1};
  expectRst(send(f.data()), f.data(), kClientAck, "no entry");
  expectRst(send(f.fromServer()), f.fromServer(), kServerAck, "no entry, other way");
  EXPECT_EQ(h_->get(Counter::flows_created), 0u) << "no entry is made for it";
  Result r = send(f.fromClient(kTcpRst));
  EXPECT_EQ(r.drop, Counter::drop_tcp_reset_not_answered) << describe(r);
  // A SYN starts a flow; its segments then go on.
  EXPECT_EQ(send(f.syn()).verdict, Verdict::kAppliance);
  EXPECT_EQ(send(f.data()).verdict, Verdict::kAppliance);
  // UDP is never reset.
  const Net& n = net();
  Frame u{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 5000, 53)), kPortA};
  EXPECT_EQ(send(u).verdict, Verdict::kAppliance);
  EXPECT_EQ(h_->get(Counter::tcp_resets_idle), 2u);
  expectCounterInvariant(h_->counters(), "idle");
}

TEST_F(IdleResets, AnEntryPastItsIdleTimeoutIsResetBeforeTheSweepRemovesIt) {
  Flow f{2};
  EXPECT_EQ(send(f.syn()).verdict, Verdict::kAppliance);
  h_->now += 349'000'000'000ULL;
  EXPECT_EQ(send(f.data()).verdict, Verdict::kAppliance) << "within the 350 s idle timeout";
  h_->now += 351'000'000'000ULL;
  expectRst(send(f.data()), f.data(), kClientAck, "idle past its timeout");
  expectRst(send(f.fromServer()), f.fromServer(), kServerAck, "the other endpoint too");
  EXPECT_EQ(h_->get(Counter::tcp_resets_idle), 2u);
}

TEST(IdleResetsOff, WithoutTheSettingAMidStreamSegmentStartsAFlow) {
  Harness h;
  Flow f{3};
  EXPECT_EQ(h.send(f.data()).verdict, Verdict::kAppliance);
  EXPECT_EQ(h.get(Counter::tcp_resets_sent), 0u);
}

// A node that received the flow by fleet sync holds the same route, and the
// reset decision is made from the route and the snapshot alone: it resets
// the flow's segments as the node that created the flow does.
TEST(ResetsFleet, ANodeThatGotTheFlowBySyncResetsItToo) {
  boost::asio::io_context io;
  Harness origin, peer;
  for (Harness* h : {&origin, &peer}) {
    h->config().server_groups[0].send_tcp_reset.on_unhealthy = true;
    h->republish();
  }
  ctl::FleetSync::Options o;
  o.node_name = "gw-peer";
  o.secret = flowHashKey();
  std::unique_ptr<ctl::FleetSync> fs;
  bindRetrying(o.listen, [&] {
    fs = std::make_unique<ctl::FleetSync>(io, o, peer.flows(), nullptr, [&] { return &peer.snapshot(); });
  });
  // Flows created on the origin node, sent to the peer as records.
  std::map<int, IpAddr> at;
  for (int i = 0; i < 30; ++i) {
    Flow f{i};
    Result r = origin.send(f.syn());
    ASSERT_EQ(r.verdict, Verdict::kAppliance);
    at[i] = checkEncap(origin, r.bytes, expectedInner(origin, f.syn()), expectedProtocol(origin, f.syn())).appliance;
    L4Tuple t;
    t.src = net().client4;
    t.dst = net().server4;
    t.proto = 6;
    t.sport = f.port();
    t.dport = 443;
    sync::Record rec;
    rec.key = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
    rec.flow_hash = flowHash(rec.key);
    rec.appliance = at[i].v4HostOrder();
    rec.cookie = flowCookie(rec.flow_hash, rec.appliance);
    rec.kind = sync::RecordKind::kNew;
    rec.idle_for_ms = 0;
    rec.age_ms = 10;
    ASSERT_EQ(fs->install(rec, peer.now), ctl::InstallResult::kInstalled);
  }
  const IpAddr down = at[0];
  ctl::HealthMap health;
  for (const IpAddr& a : net().appliances)
    health[a.v4HostOrder()] = a == down ? HealthState::kUnhealthy : HealthState::kHealthy;
  origin.republish(health);
  peer.republish(health);
  int reset = 0;
  for (auto& [i, a] : at) {
    Flow f{i};
    // The server's answer reaches the peer (ECMP), the client's the origin.
    Result ro = origin.send(f.data()), rp = peer.send(f.fromServer());
    EXPECT_EQ(ro.verdict == Verdict::kRouter, a == down) << "origin, flow " << i;
    EXPECT_EQ(rp.verdict == Verdict::kRouter, a == down) << "peer, flow " << i;
    if (a == down) {
      expectRst(rp, f.fromServer(), kServerAck, "the peer resets a synced flow");
      ++reset;
    } else {
      EXPECT_EQ(checkEncap(peer, rp.bytes, expectedInner(peer, f.fromServer()),
                           expectedProtocol(peer, f.fromServer())).appliance, a);
    }
  }
  ASSERT_GT(reset, 0);
  EXPECT_EQ(peer.get(Counter::tcp_resets_unhealthy), uint64_t(reset));
  EXPECT_EQ(origin.get(Counter::tcp_resets_unhealthy), uint64_t(reset));
  EXPECT_EQ(peer.get(Counter::flows_created), 0u);
  fs.reset();
}

// on_fleet_view_incomplete (docs/fleet.md "A segment with no record"): while
// this fleet node's peers' records may be missing, a segment without SYN and
// without an entry is reset rather than picked from its own Maglev table;
// once the view is complete it is picked, as before. On by default.
TEST(FleetViewResets, ASegmentWithNoRecordIsResetOnlyWhileTheViewIsIncomplete) {
  Harness h;
  ASSERT_TRUE(h.snapshot().listeners.at(0).reset_on_fleet_unknown) << "on by default";
  h.dataplane().fleet_view_incomplete.store(true);
  Flow f{4}, g{5};
  expectRst(h.send(f.data()), f.data(), kClientAck, "no record, view incomplete");
  expectRst(h.send(f.fromServer()), f.fromServer(), kServerAck, "the other endpoint too");
  EXPECT_EQ(h.get(Counter::flows_created), 0u) << "no entry is made for it";
  EXPECT_EQ(h.send(f.fromClient(kTcpRst)).drop, Counter::drop_tcp_reset_not_answered);
  // A SYN starts a connection: picked, and its segments go on.
  EXPECT_EQ(h.send(f.syn()).verdict, Verdict::kAppliance);
  EXPECT_EQ(h.send(f.data()).verdict, Verdict::kAppliance) << "a flow with an entry goes on";
  const Net& n = net();
  Frame u{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 5001, 53)), kPortA};
  EXPECT_EQ(h.send(u).verdict, Verdict::kAppliance) << "UDP has no mark of a connection's middle";
  EXPECT_EQ(h.get(Counter::tcp_resets_fleet_view_incomplete), 2u);
  EXPECT_EQ(h.get(Counter::tcp_resets_idle), 0u);
  // The view complete: the segment is picked, as a single gateway does.
  h.dataplane().fleet_view_incomplete.store(false);
  EXPECT_EQ(h.send(g.data()).verdict, Verdict::kAppliance);
  EXPECT_EQ(h.get(Counter::tcp_resets_sent), 2u);
  expectCounterInvariant(h.counters(), "fleet view");
}

TEST(FleetViewResets, OffOnTheListenerTheSegmentIsPicked) {
  Harness h;
  ctl::ListenerConfig l;
  l.name = "fw";
  l.server_groups = {h.config().server_groups[0].name};
  l.send_tcp_reset.on_fleet_view_incomplete = false;
  h.config().listeners = {l};
  ctl::RegionTracker regions;
  ctl::HealthMap health;
  regions.update(h.config(), health, nullptr, h.now, nullptr);
  h.republish(health, nullptr, &regions);
  ASSERT_FALSE(h.snapshot().reset_on_fleet_unknown_any);
  h.dataplane().fleet_view_incomplete.store(true);
  Flow f{6};
  EXPECT_EQ(h.send(f.data()).verdict, Verdict::kAppliance);
  EXPECT_EQ(h.get(Counter::tcp_resets_sent), 0u);
}

// The whole way on one node: its warm start finds no peer (the sync link is
// down), so its FleetSync tells the workers that records may be missing, and
// a mid-connection segment of a flow the fleet holds is reset, not guessed.
TEST(FleetViewResets, AWarmStartThatGotNoTableMakesTheWorkersReset) {
  using namespace std::chrono_literals;
  boost::asio::io_context io;
  Harness h;
  ctl::FleetSync::Options o;
  o.node_name = "gw-cold";
  o.secret = flowHashKey();
  o.peers = {"127.0.0.1:9"};  // nobody answers there
  o.warm_start_timeout_s = 1;
  o.warm_connect_timeout_ms = 200;
  o.warm_idle_timeout_ms = 200;
  o.view_incomplete = &h.dataplane().fleet_view_incomplete;
  std::unique_ptr<ctl::FleetSync> fs;
  bindRetrying(o.listen, [&] {
    fs = std::make_unique<ctl::FleetSync>(io, o, h.flows(), nullptr, [&] { return &h.snapshot(); });
  });
  fs->start();
  auto end = std::chrono::steady_clock::now() + 10s;
  while (!fs->warmStartDone() && std::chrono::steady_clock::now() < end) io.run_for(20ms);
  ASSERT_TRUE(fs->warmStartDone());
  io.run_for(50ms);  // a tick publishes the view
  EXPECT_EQ(fs->status()["view"]["complete"], false);
  EXPECT_EQ(fs->status()["view"]["why"],
            "the warm start got no peer's table and a peer has not been heard since");
  std::string m;
  fs->metrics(m);
  EXPECT_NE(m.find("gwlb_fleet_sync_view_complete 0\n"), std::string::npos);
  ASSERT_TRUE(h.dataplane().fleet_view_incomplete.load());
  Flow f{7};
  expectRst(h.send(f.data()), f.data(), kClientAck, "a cold node of a fleet");
  EXPECT_EQ(h.get(Counter::tcp_resets_fleet_view_incomplete), 1u);
  fs->stop();
  fs.reset();
}

}  // namespace
}  // namespace gwlb::dptest
