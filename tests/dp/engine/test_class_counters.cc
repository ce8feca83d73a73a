// Per-class counters through the engine (issue 27): a class counts in the
// slot its name holds (control/engine/class_slots.h), so a reload that
// reorders classes keeps each name's counts, and packets after the reload
// count to the right name; a renamed class starts from zero.
#include <gtest/gtest.h>

#include <string>

#include "control/engine/engine.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

ctl::TrafficClassConfig cls(const std::string& name, uint8_t proto) {
  ctl::TrafficClassConfig t;
  t.name = name;
  if (proto) t.match.protocols = {proto};
  return t;
}

class ClassCounters : public ::testing::Test {
 protected:
  void SetUp() override {
    const Net& n = net();
    devices_ = {n.our_a, n.our_b, n.our_v, MacAddr{}};
    ctl::Config c = h_.config();
    c.traffic_classes = {cls("web", kProtoTcp), cls("dns", kProtoUdp), cls("rest", 0)};
    // The engine publishes its own snapshots from here on.
    h_.dataplane().snapshot.store(nullptr);
    ctl::EngineInputs in;
    in.devices = &devices_;
    in.class_counts = [this](uint16_t slot) {
      return ctl::ClassCount{h_.worker().classPackets(slot), h_.worker().classBytes(slot)};
    };
    engine_ = std::make_unique<ctl::Engine>(c, h_.flows(), h_.dataplane(), h_.qsbr(), in);
    engine_->start(h_.now);
  }
  void TearDown() override {
    h_.quiescent();
    engine_.reset();
  }
  // Each class inspects (the implicit listener, named by none): every
  // packet reaches an appliance.
  void sendTcp(uint16_t sport) {
    const Net& n = net();
    Result r = h_.send(Frame{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, kProtoTcp, tcp(n.client4, n.server4, sport, 443))});
    EXPECT_EQ(r.verdict, Verdict::kAppliance);
    h_.quiescent();
  }
  void sendUdp(uint16_t sport) {
    const Net& n = net();
    Result r = h_.send(Frame{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, kProtoUdp, udp(n.client4, n.server4, sport, 53))});
    EXPECT_EQ(r.verdict, Verdict::kAppliance);
    h_.quiescent();
  }
  uint64_t packets(const std::string& name) const {
    const uint16_t slot = engine_->classSlots().slotOf(name);
    if (slot == kNoClass) return ~uint64_t(0);
    return engine_->classSlots()
        .since(slot, {h_.worker().classPackets(slot), h_.worker().classBytes(slot)})
        .packets;
  }
  void reload(std::vector<ctl::TrafficClassConfig> classes) {
    ctl::Config c = engine_->config();
    c.traffic_classes = std::move(classes);
    engine_->applyConfig(c, "test", h_.now, true);
  }

  Harness h_;
  ctl::PortMacs devices_;
  std::unique_ptr<ctl::Engine> engine_;
};

TEST_F(ClassCounters, AReloadThatSwapsTwoClassesKeepsEachNamesCounts) {
  for (uint16_t i = 0; i < 3; ++i) sendTcp(uint16_t(40000 + i));
  for (uint16_t i = 0; i < 2; ++i) sendUdp(uint16_t(50000 + i));
  EXPECT_EQ(packets("web"), 3u);
  EXPECT_EQ(packets("dns"), 2u);
  reload({cls("dns", kProtoUdp), cls("web", kProtoTcp), cls("rest", 0)});
  EXPECT_EQ(packets("web"), 3u);
  EXPECT_EQ(packets("dns"), 2u);
  // After the reload each packet still counts to its own class's name.
  sendTcp(40100);
  sendUdp(50100);
  sendUdp(50101);
  EXPECT_EQ(packets("web"), 4u);
  EXPECT_EQ(packets("dns"), 4u);
  EXPECT_EQ(packets("rest"), 0u);
}

// The workers read a class's slot, listener and the origin its flows' entries
// carry from one precomputed route (Snapshot::routeClasses); it must say what
// class_slot and dp::packOrigin say, also after a reload moves the slots.
TEST_F(ClassCounters, EachClassRouteMatchesItsSlotAndOrigin) {
  auto check = [&] {
    const dp::Snapshot* s = h_.dataplane().snapshot.load();
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->class_route.size(), kMaxClasses);  // any class the table returns indexes it
    for (uint16_t i = 0; i < s->classes.size(); ++i) {
      const dp::Snapshot::ClassRoute& r = s->class_route[i];
      EXPECT_EQ(r.slot, s->class_slot[i]);
      EXPECT_EQ(r.listener, s->classes.listener(i));
      EXPECT_TRUE(r.inspect);
      EXPECT_EQ(r.origin, dp::packOrigin(0, r.listener, r.slot));
    }
  };
  check();
  reload({cls("dns", kProtoUdp), cls("new", kProtoIcmp), cls("web", kProtoTcp), cls("rest", 0)});
  check();
}

// A flow's packets take their class from its entry once classified
// (Snapshot::class_by_flow): a reload that changes what the flow's packets
// match must count them to the class they match now, not the one the
// entry was marked with (the class generation, IdleTimeout's class marks).
TEST_F(ClassCounters, AnEstablishedFlowCountsToTheClassItMatchesAfterAReload) {
  for (int i = 0; i < 3; ++i) sendTcp(40000);
  ASSERT_TRUE(h_.dataplane().snapshot.load()->class_by_flow);
  EXPECT_EQ(packets("web"), 3u);
  // The same flow now fits "other": its entry (and appliance) stays, its
  // packets count to "other".
  ctl::TrafficClassConfig other = cls("other", kProtoTcp);
  other.match.l4_ports = {{40000, 40000}};
  reload({other, cls("web", kProtoTcp), cls("dns", kProtoUdp), cls("rest", 0)});
  for (int i = 0; i < 3; ++i) sendTcp(40000);
  EXPECT_EQ(packets("other"), 3u);
  EXPECT_EQ(packets("web"), 3u);
  // And back: "other" gone, "web" counts again.
  reload({cls("web", kProtoTcp), cls("dns", kProtoUdp), cls("rest", 0)});
  for (int i = 0; i < 2; ++i) sendTcp(40000);
  EXPECT_EQ(packets("web"), 5u);
  // A reload that leaves the classes as they are keeps the entries' marks.
  const uint8_t gen = h_.dataplane().snapshot.load()->class_gen;
  reload({cls("web", kProtoTcp), cls("dns", kProtoUdp), cls("rest", 0)});
  EXPECT_EQ(h_.dataplane().snapshot.load()->class_gen, gen);
  sendTcp(40000);
  EXPECT_EQ(packets("web"), 6u);
}

// A flow's two directions on two VLANs that two classes take apart (both
// inspected by the one listener): every packet counts to the class its own
// VLAN fits, the entry's class mark holding per direction and L2.
TEST_F(ClassCounters, EachDirectionCountsToTheClassItsVlanFits) {
  ctl::TrafficClassConfig out = cls("out", 0), back = cls("back", 0);
  out.match.vlans = {100};
  back.match.vlans = {200};
  reload({out, back, cls("rest", 0)});
  ASSERT_TRUE(h_.dataplane().snapshot.load()->class_by_flow);
  const Net& n = net();
  for (int i = 0; i < 3; ++i) {
    Result f = h_.send(Frame{n.fromVlan(100), kEthIpv4, ipv4(n.client4, n.server4, kProtoTcp, tcp(n.client4, n.server4, 40000, 443)), kPortVlan});
    EXPECT_EQ(f.verdict, Verdict::kAppliance) << describe(f);
    h_.quiescent();
    Result r = h_.send(Frame{n.fromVlan(200), kEthIpv4, ipv4(n.server4, n.client4, kProtoTcp, tcp(n.server4, n.client4, 443, 40000)), kPortVlan});
    EXPECT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    h_.quiescent();
  }
  // The router moves the flow's first direction to VLAN 200: its packets
  // now count to "back".
  for (int i = 0; i < 2; ++i) {
    Result f = h_.send(Frame{n.fromVlan(200), kEthIpv4, ipv4(n.client4, n.server4, kProtoTcp, tcp(n.client4, n.server4, 40000, 443)), kPortVlan});
    EXPECT_EQ(f.verdict, Verdict::kAppliance) << describe(f);
    h_.quiescent();
  }
  EXPECT_EQ(packets("out"), 3u);
  EXPECT_EQ(packets("back"), 5u);
  EXPECT_EQ(packets("rest"), 0u);
}

TEST_F(ClassCounters, ARenamedClassStartsFromZero) {
  for (uint16_t i = 0; i < 3; ++i) sendUdp(uint16_t(50000 + i));
  EXPECT_EQ(packets("dns"), 3u);
  reload({cls("web", kProtoTcp), cls("names", kProtoUdp), cls("rest", 0)});
  EXPECT_EQ(packets("names"), 0u);
  EXPECT_EQ(engine_->classSlots().slotOf("dns"), kNoClass);
  sendUdp(50200);
  EXPECT_EQ(packets("names"), 1u);
  EXPECT_EQ(packets("web"), 0u);
}

}  // namespace
}  // namespace gwlb::dptest
