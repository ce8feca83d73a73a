// Traffic classes in the pipeline (issue 27): classification to listeners,
// bypass, drop, unclassified, and "changing the classes never moves a flow".
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "control/engine/region_failover.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

Frame v4(const L2& l2, uint16_t port, Bytes l3) { return {l2, kEthIpv4, std::move(l3), port}; }
std::string applianceOf(const Result& r) {
  return r.verdict == Verdict::kAppliance && r.bytes.size() >= 34 ? IpAddr::v4(&r.bytes[30]).str()
                                                                  : std::string("-");
}

Bytes Ltcp(const IpAddr& s, const IpAddr& d, uint16_t sp, uint16_t dp) {
  return ipv4(s, d, kProtoTcp, tcp(s, d, sp, dp));
}
Bytes Ludp(const IpAddr& s, const IpAddr& d, uint16_t sp, uint16_t dp) {
  return ipv4(s, d, kProtoUdp, udp(s, d, sp, dp));
}

ctl::TrafficClassConfig cls(const std::string& name, const std::string& listener,
                            ctl::ClassAction a = ctl::ClassAction::kInspect) {
  ctl::TrafficClassConfig t;
  t.name = name;
  t.listener = listener;
  t.action = a;
  return t;
}

// n listeners "l0".."l<n-1>", listener i owning group "g<i>" with one
// appliance 10.0.<i+1>.21 (listener 0 keeps the harness's group and appliances).
class Classes : public ::testing::Test {
 protected:
  void make(int n) {
    h_ = std::make_unique<Harness>();
    ctl::Config& c = h_->config();
    c.listeners.clear();
    for (int i = 0; i < n; ++i) {
      if (i > 0) {
        ctl::ApplianceGroupConfig g = c.server_groups[0];
        g.name = "g" + std::to_string(i);
        g.appliances.clear();
        ctl::ApplianceConfig sc;
        sc.address = *IpAddr::parse("10.0." + std::to_string(i + 1) + ".21");
        g.appliances.push_back(sc);
        c.server_groups.push_back(g);
      }
      ctl::ListenerConfig l;
      l.name = "l" + std::to_string(i);
      l.server_groups = {c.server_groups[size_t(i)].name};
      c.listeners.push_back(l);
    }
  }
  void publish() {
    regions_.update(h_->config(), health_, nullptr, h_->now, nullptr);
    h_->republish(health_, nullptr, &regions_);
  }
  // The class `name` on VLANs `vlans` to listener l1, then "rest" to l0 (the
  // config's classes); returns the first, for a test that reorders them.
  ctl::TrafficClassConfig vlanClassThenRest(const std::string& name, std::vector<uint16_t> vlans) {
    auto t = cls(name, "l1");
    t.match.vlans = std::move(vlans);
    h_->config().traffic_classes = {t, cls("rest", "l0")};
    return t;
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

TEST_F(Classes, BothDirectionsOnTwoVlansReachTheSameListenerAndAppliance) {
  make(2);
  vlanClassThenRest("tenant-b", {100, 200});
  publish();
  const Net& n = net();
  Result fwd = send(v4(n.fromVlan(100), kPortVlan, Ltcp(n.client4, n.server4, 40000, 443)));
  Result rev = send(v4(n.fromVlan(200), kPortVlan, Ltcp(n.server4, n.client4, 443, 40000)));
  EXPECT_EQ(applianceOf(fwd), "10.0.2.21") << describe(fwd);
  EXPECT_EQ(applianceOf(rev), "10.0.2.21") << describe(rev);
  // Untagged traffic is "rest": listener 0's appliances.
  Result other = send(v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40001, 443)));
  EXPECT_EQ(applianceOf(other).rfind("10.0.0.", 0), 0u) << describe(other);
}

// A flow's first packet and, in the same burst, one of its packets that
// its class sends to another listener: the second misses its own listener's
// key in the burst's bulk lookup and finds the flow under the first's
// (R11), so both reach one appliance.
TEST_F(Classes, APacketOfAnotherListenerFollowsAFlowCreatedEarlierInItsBurst) {
  make(2);
  vlanClassThenRest("tenant-b", {100});
  publish();
  const Net& n = net();
  Frame tagged = v4(n.fromVlan(100), kPortVlan, Ltcp(n.client4, n.server4, 40000, 443));
  Frame untagged = v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40000, 443));
  std::vector<Result> out = h_->sendBurst({{tagged.bytes(), tagged.port}, {untagged.bytes(), untagged.port}});
  h_->quiescent();
  ASSERT_EQ(out.size(), 2u);
  for (const Result& r : out) EXPECT_EQ(applianceOf(r), "10.0.2.21") << describe(r);
  EXPECT_EQ(h_->worker().classPackets(0), 1u);
  EXPECT_EQ(h_->worker().classPackets(1), 1u);
}

TEST_F(Classes, BypassReturnsTheFrameToItsSenderWithoutGeneve) {
  make(1);
  auto b = cls("backups", "", ctl::ClassAction::kBypass);
  b.match.prefixes = {{*IpAddr::parse("203.0.113.0"), 24}};
  b.match.protocols = {kProtoTcp};
  b.match.l4_ports = {{873, 873}};
  h_->config().traffic_classes = {b, cls("rest", "l0")};
  publish();
  const Net& n = net();
  for (Frame f : {v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40000, 873)),
                  v4(n.fromVlan(300), kPortVlan, Ltcp(n.server4, n.client4, 873, 40000))}) {
    Result r = send(f);
    ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
    EXPECT_EQ(r.port, f.port);
    EXPECT_EQ(r.bytes, f.returned());  // MACs swapped, VLAN kept, L3 byte-identical
  }
  EXPECT_EQ(h_->get(Counter::bypassed), 2u);
  EXPECT_EQ(h_->get(Counter::encapsulated), 0u);
  Result other = send(v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40000, 874)));
  EXPECT_EQ(other.verdict, Verdict::kAppliance) << describe(other);
}

TEST_F(Classes, UnclassifiedAndDropClassAreDroppedAndCounted) {
  make(1);
  auto t = cls("tenant", "l0");
  t.match.vlans = {100};
  auto d = cls("blocked", "", ctl::ClassAction::kDrop);
  d.match.protocols = {kProtoUdp};
  h_->config().traffic_classes = {d, t};
  publish();
  const Net& n = net();
  Result r = send(v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40000, 443)));
  EXPECT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_unclassified);
  r = send(v4(n.fromVlan(100), kPortVlan, Ludp(n.client4, n.server4, 40000, 53)));
  EXPECT_EQ(r.drop, Counter::drop_class_drop);
  r = send(v4(n.fromVlan(100), kPortVlan, Ltcp(n.client4, n.server4, 40000, 443)));
  EXPECT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  expectCounterInvariant(h_->counters(), "classes");
}

TEST_F(Classes, ChangingTheClassesMovesNoEstablishedFlow) {
  make(2);
  h_->config().traffic_classes = {cls("all", "l0")};
  publish();
  const Net& n = net();
  Frame f = v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40000, 443));
  Frame back = v4(n.fromB(), kPortB, Ltcp(n.server4, n.client4, 443, 40000));
  Encap before = sendExpectingEncap(*h_, f);
  h_->quiescent();
  ASSERT_EQ(before.appliance.str().rfind("10.0.0.", 0), 0u);
  // Everything now classifies to listener 1, then is bypassed, then dropped:
  // the established flow stays where it is (appliance, cookie, Geneve source
  // port), both directions; new flows follow.
  for (auto now : {cls("all", "l1"), cls("all", "", ctl::ClassAction::kBypass),
                   cls("all", "", ctl::ClassAction::kDrop)}) {
    h_->config().traffic_classes = {now};
    publish();
    for (const Frame& x : {f, back}) {
      Encap e = sendExpectingEncap(*h_, x);
      h_->quiescent();
      EXPECT_EQ(e.appliance, before.appliance);
      EXPECT_EQ(e.cookie, before.cookie);
      EXPECT_EQ(e.sport, before.sport);
    }
  }
  h_->config().traffic_classes = {cls("all", "l1")};
  publish();
  Result fresh = send(v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40001, 443)));
  EXPECT_EQ(applianceOf(fresh), "10.0.2.21") << describe(fresh);
}

// A non-first fragment has no ports: classified alone it could take another
// class (here "rest", whose listener keys flows by addresses only and already
// has one between these hosts). It follows its first fragment's flow instead.
TEST_F(Classes, ALaterFragmentFollowsItsFlowsClassNotItsOwn) {
  make(2);
  h_->config().server_groups[1].stickiness = ctl::Stickiness::kTwoTuple;
  auto dns = cls("dns", "l0");
  dns.match.l4_ports = {{53, 53}};
  h_->config().traffic_classes = {dns, cls("rest", "l1")};
  publish();
  const Net& n = net();
  Result web = send(v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40000, 443)));
  ASSERT_EQ(applianceOf(web), "10.0.2.21") << describe(web);
  Bytes seg = udp(n.client4, n.server4, 5353, 53, pattern(1200, 3));
  auto frags = ipv4Fragments(n.client4, n.server4, kProtoUdp, seg, 800, 0x4242);
  Result first = send(v4(n.fromA(), kPortA, frags[0]));
  std::string app = applianceOf(first);
  ASSERT_EQ(app.rfind("10.0.0.", 0), 0u) << describe(first);
  Result later = send(v4(n.fromA(), kPortA, frags[1]));
  EXPECT_EQ(applianceOf(later), app) << describe(later);
  // Both fragments count under the class of their flow.
  EXPECT_EQ(h_->worker().classPackets(0), 2u);
  EXPECT_EQ(h_->worker().classPackets(1), 1u);
}

// An ICMP error about a flow follows the flow it quotes, even when it arrives
// where the classes would send a packet of its own elsewhere (a router on
// another VLAN), and even when that listener has a flow between the same hosts.
TEST_F(Classes, AnIcmpErrorFollowsTheFlowItQuotes) {
  make(2);
  h_->config().server_groups[0].stickiness = ctl::Stickiness::kTwoTuple;
  vlanClassThenRest("tenant-b", {100, 200});
  publish();
  const Net& n = net();
  Bytes syn = Ltcp(n.client4, n.server4, 40000, 443);
  Result flow = send(v4(n.fromVlan(100), kPortVlan, syn));
  ASSERT_EQ(applianceOf(flow), "10.0.2.21") << describe(flow);
  Result other = send(v4(n.fromA(), kPortA, Ltcp(n.server4, n.client4, 8080, 50000)));
  ASSERT_EQ(applianceOf(other).rfind("10.0.0.", 0), 0u) << describe(other);
  // Port unreachable from a router on VLAN 300, about the flow's packet.
  Bytes err = ipv4(*IpAddr::parse("203.0.113.1"), n.client4, kProtoIcmp,
                   icmp4(3, 3, 0, slice(syn, 0, 28)));
  Result r = send(v4(n.fromVlan(300), kPortVlan, err));
  EXPECT_EQ(applianceOf(r), "10.0.2.21") << describe(r);
}

// What `gwlbctl flows` shows as a flow's class: the entry keeps the class and
// listener it was created under (FlowEntry::origin), and a reload that
// reclassifies leaves them, as it leaves the flow.
TEST_F(Classes, AFlowKeepsTheClassItWasCreatedUnder) {
  make(2);
  auto a = vlanClassThenRest("tenant-a", {100});
  publish();
  const Net& n = net();
  send(v4(n.fromVlan(100), kPortVlan, Ltcp(n.client4, n.server4, 40000, 443)));
  send(v4(n.fromA(), kPortA, Ltcp(n.client4, n.server4, 40001, 443)));
  h_->config().traffic_classes = {cls("rest", "l0"), a};
  publish();
  send(v4(n.fromVlan(100), kPortVlan, Ltcp(n.client4, n.server4, 40000, 443)));
  std::map<uint16_t, std::pair<uint16_t, uint8_t>> by_port;  // client port: (class, listener)
  uint32_t cursor = 0;
  h_->flows().scan(cursor, 1u << 20, h_->flows().slots(),
                   [&](const FlowKey& k, int32_t, const dp::FlowEntry& e) {
                     uint16_t o = e.origin.load();
                     by_port[std::max(k.port_a, k.port_b)] = {dp::originClass(o),
                                                              dp::originListener(o)};
                     return true;
                   });
  ASSERT_EQ(by_port.size(), 2u);
  EXPECT_EQ(by_port[40000], std::make_pair(uint16_t(0), uint8_t(1)));
  EXPECT_EQ(by_port[40001], std::make_pair(uint16_t(1), uint8_t(0)));
}

TEST_F(Classes, SixteenListenersEachReceiveOnlyTheirClass) {
  make(16);
  std::vector<ctl::TrafficClassConfig> cs;
  for (int i = 0; i < 16; ++i) {
    auto t = cls("c" + std::to_string(i), "l" + std::to_string(i));
    t.match.vlans = {uint16_t(10 + i)};
    cs.push_back(t);
  }
  h_->config().traffic_classes = cs;
  publish();
  const Net& n = net();
  for (int i = 0; i < 16; ++i) {
    for (uint16_t sp = 0; sp < 8; ++sp) {
      Result r = send(v4(n.fromVlan(uint16_t(10 + i)), kPortVlan,
                         Ltcp(n.client4, n.server4, uint16_t(41000 + i * 8 + sp), 443)));
      std::string a = applianceOf(r);
      if (i == 0) EXPECT_EQ(a.rfind("10.0.0.", 0), 0u) << a;
      else EXPECT_EQ(a, "10.0." + std::to_string(i + 1) + ".21") << "class " << i;
    }
  }
  for (int i = 0; i < 16; ++i) EXPECT_EQ(h_->worker().classPackets(uint16_t(i)), 8u) << i;
}

}  // namespace
}  // namespace gwlb::dptest
