// Appliance-requested bypass in the pipeline (docs/product-rules.md
// "Appliance-requested bypass"): a valid return of the flow's own appliance
// carrying gwlb's bypass option, where its listener allows it, sends both
// directions of the flow straight back to the router (no Geneve) until the
// bypass ends, the listener stops allowing it, or the flow moves; every other
// request is refused and counted by its reason. Both Geneve formats.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "control/engine/region_failover.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;

class ApplianceBypass : public ::testing::TestWithParam<ctl::GeneveFormat> {
 protected:
  // One listener over the harness's group, allowing bypasses of at most max_s.
  // With classes: traffic_classes "streams" (TCP) and "rest", both
  // inspected by that listener.
  void make(bool allow, uint32_t max_s = 0, bool classes = false) {
    HarnessOptions o;
    o.format = GetParam();
    h_ = std::make_unique<Harness>(o);
    ctl::ListenerConfig l;
    l.name = "l0";
    l.server_groups = {h_->config().server_groups[0].name};
    l.appliance_bypass.allow = allow;
    l.appliance_bypass.max_seconds = max_s;
    h_->config().listeners = {l};
    if (classes) {
      ctl::TrafficClassConfig streams, rest;
      streams.name = "streams";
      streams.match.protocols = {kProtoTcp};
      streams.listener = "l0";
      rest.name = "rest";
      rest.listener = "l0";
      h_->config().traffic_classes = {streams, rest};
    }
    publish();
    const Net& n = net();
    fwd_ = Frame{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43000, 443, pattern(64))),
                 kPortA};
    rev_ = Frame{n.fromB(), kEthIpv4, ipv4(n.server4, n.client4, 6, tcp(n.server4, n.client4, 443, 43000, pattern(32))),
                 kPortB};
    Result r = send(fwd_.bytes(), fwd_.port);
    ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    enc_ = checkEncap(*h_, r.bytes, expectedInner(*h_, fwd_), expectedProtocol(*h_, fwd_));
    appliance_id_ = h_->snapshot().applianceByIp(enc_.appliance.v4HostOrder());
  }
  void publish() {
    regions_.update(h_->config(), health_, nullptr, h_->now, nullptr);
    h_->republish(health_, nullptr, &regions_);
  }
  Result send(const Bytes& b, uint16_t port) {
    Result r = h_->send(b, port);
    h_->quiescent();
    return r;
  }
  // The appliance returns the forward packet, with options added.
  Result ret(const Bytes& extra_options, const IpAddr* from = nullptr, uint32_t cookie_xor = 0) {
    GeneveHdr g;
    g.protocol = get16(enc_.geneve_hdr, 2);
    g.vni = kVni;
    g.options = slice(enc_.geneve_hdr, 8, enc_.geneve_hdr.size() - 8);
    if (cookie_xor && g.options.size() >= 32) put16(g.options, 30, uint16_t(get16(g.options, 30) ^ cookie_xor));
    append(g.options, extra_options);
    return send(fromAppliance(from ? *from : enc_.appliance, enc_.sport, geneve(g), enc_.inner), kUnderlayPort);
  }
  static Bytes bypassOpt(uint32_t seconds, uint8_t words = 1) {
    Bytes d;
    for (int i = 0; i < words; ++i) append(d, Bytes{uint8_t(seconds >> 24), uint8_t(seconds >> 16),
                                                    uint8_t(seconds >> 8), uint8_t(seconds)});
    return geneveOption(0xFF01, 0x01, d);
  }
  // Both directions go straight back out of the port they came in on (MACs
  // swapped, L3 untouched), or both go to the appliance.
  void expectBypassed(const char* where) {
    SCOPED_TRACE(where);
    for (const Frame* f : {&fwd_, &rev_}) {
      Result r = send(f->bytes(), f->port);
      ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
      EXPECT_EQ(r.bytes, f->returned());
      EXPECT_EQ(r.port, f->port);
    }
  }
  void expectInspected(const char* where) {
    SCOPED_TRACE(where);
    for (const Frame* f : {&fwd_, &rev_}) {
      Result r = send(f->bytes(), f->port);
      ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    }
  }
  IpAddr otherAppliance() const {
    for (const IpAddr& a : net().appliances)
      if (a != enc_.appliance) return a;
    return {};
  }

  std::unique_ptr<Harness> h_;
  ctl::RegionTracker regions_;
  ctl::HealthMap health_;
  Frame fwd_, rev_;
  Encap enc_;
  uint16_t appliance_id_ = 0;
};

TEST_P(ApplianceBypass, ForTheFlowsLifeBothDirectionsGoStraightBack) {
  make(true);
  Result r = ret(bypassOpt(0));
  ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
  EXPECT_EQ(r.bytes, fwd_.returned()) << "the packet that asked is delivered as any return";
  EXPECT_EQ(h_->get(Counter::bypass_granted), 1u);
  uint64_t sent = h_->get(Counter::encapsulated);
  expectBypassed("granted");
  h_->now += 3000 * kSec;  // far past any timed bypass: this one has no end
  expectBypassed("an hour later");
  EXPECT_EQ(h_->get(Counter::encapsulated), sent) << "nothing more reached the appliance";
  EXPECT_EQ(h_->get(Counter::appliance_bypassed), 4u);
  EXPECT_EQ(h_->get(Counter::bypassed), 4u);
  EXPECT_EQ(h_->worker().bypassedPackets(appliance_id_), 4u);
  // The entry says so: the route's bypass bits, untimed.
  const dp::FlowTable& ft = h_->flows();
  bool seen = false;
  ft.forEach([&](const FlowKey&, int32_t, const dp::FlowEntry& e) {
    uint64_t route = e.route.load();
    seen = seen || (dp::routeBypassed(route) && !dp::routeBypassTimed(route) && dp::routeAppliance(route) == appliance_id_);
  });
  EXPECT_TRUE(seen);
}

TEST_P(ApplianceBypass, ATimedBypassEndsAndTheNextPacketIsInspected) {
  make(true);
  ASSERT_EQ(ret(bypassOpt(10)).verdict, Verdict::kRouter);
  h_->now += 9 * kSec;
  expectBypassed("after 9 s of 10");
  h_->now += 3 * kSec;
  expectInspected("after 12 s");
  EXPECT_EQ(h_->get(Counter::bypass_ended_expired), 1u);
  // The appliance sees the flow again and may ask again (a renewal of an
  // ended bypass is a new grant).
  ASSERT_EQ(ret(bypassOpt(10)).verdict, Verdict::kRouter);
  EXPECT_EQ(h_->get(Counter::bypass_granted), 2u);
  expectBypassed("asked again");
}

TEST_P(ApplianceBypass, MaxSecondsCutsTheFlowsLifeAndLongerRequests) {
  make(true, 5);
  ASSERT_EQ(ret(bypassOpt(0)).verdict, Verdict::kRouter);
  h_->now += 4 * kSec;
  expectBypassed("4 s of at most 5");
  h_->now += 3 * kSec;
  expectInspected("7 s");
}

TEST_P(ApplianceBypass, RefusedWhereTheListenerDoesNotAllowIt) {
  make(false);
  Result r = ret(bypassOpt(0));
  ASSERT_EQ(r.verdict, Verdict::kRouter) << "the packet itself is delivered";
  EXPECT_EQ(h_->get(Counter::bypass_refused_not_allowed), 1u);
  EXPECT_EQ(h_->get(Counter::bypass_granted), 0u);
  expectInspected("refused");
}

TEST_P(ApplianceBypass, RefusedFromAnotherApplianceOrWithAnotherCookie) {
  make(true);
  IpAddr other = otherAppliance();
  Result r = ret(bypassOpt(0), &other);
  EXPECT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(h_->get(Counter::bypass_refused_not_flow_appliance), 1u);
  if (h_->aws()) {
    r = ret(bypassOpt(0), nullptr, 0x5A5A);
    EXPECT_EQ(r.drop, Counter::drop_return_cookie_mismatch) << describe(r);
    EXPECT_EQ(h_->get(Counter::bypass_refused_not_flow_appliance), 2u);
  }
  EXPECT_EQ(h_->get(Counter::bypass_granted), 0u);
  expectInspected("refused");
}

TEST_P(ApplianceBypass, AMalformedOptionIsRefusedAndThePacketDelivered) {
  make(true);
  Result r = ret(bypassOpt(7, 2));
  ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
  EXPECT_EQ(r.bytes, fwd_.returned());
  EXPECT_EQ(h_->get(Counter::bypass_refused_bad_option), 1u);
  expectInspected("refused");
}

TEST_P(ApplianceBypass, AnOptionOfAnotherClassIsNotARequest) {
  make(true);
  h_->config().node.geneve_option_class = 0xFF42;
  publish();
  ASSERT_EQ(ret(bypassOpt(0)).verdict, Verdict::kRouter);
  EXPECT_EQ(h_->get(Counter::bypass_granted), 0u);
  expectInspected("0xFF01 under class 0xFF42");
}

TEST_P(ApplianceBypass, AReloadThatDisallowsItEndsIt) {
  make(true);
  ASSERT_EQ(ret(bypassOpt(0)).verdict, Verdict::kRouter);
  expectBypassed("granted");
  h_->config().listeners[0].appliance_bypass.allow = false;
  publish();
  expectInspected("after the reload");
  EXPECT_EQ(h_->get(Counter::bypass_ended_disallowed), 1u);
  // Allowing it again does not bring the ended bypass back.
  h_->config().listeners[0].appliance_bypass.allow = true;
  publish();
  expectInspected("allowed again, not asked again");
}

TEST_P(ApplianceBypass, TheFlowsAppliancesLeavingEndsIt) {
  make(true);
  ASSERT_EQ(ret(bypassOpt(0)).verdict, Verdict::kRouter);
  // The appliance leaves the group: its id is no longer routable.
  auto& appliances = h_->config().server_groups[0].appliances;
  std::erase_if(appliances, [&](const ctl::ApplianceConfig& s) { return s.address == enc_.appliance; });
  publish();
  for (const Frame* f : {&fwd_, &rev_}) {
    Result r = send(f->bytes(), f->port);
    EXPECT_NE(r.verdict, Verdict::kRouter) << "no longer bypassed: " << describe(r);
  }
  EXPECT_EQ(h_->get(Counter::appliance_bypassed), 0u);
}

// What a bypass took out of inspection counts per appliance and per class
// (the class's counter slot: gwlb_class_appliance_bypassed_packets_total).
TEST_P(ApplianceBypass, ItCountsPerApplianceAndClass) {
  make(true, 0, true);
  ASSERT_EQ(ret(bypassOpt(0)).verdict, Verdict::kRouter);
  expectBypassed("granted");
  expectBypassed("again");
  const uint16_t streams = h_->snapshot().class_slot[0], rest = h_->snapshot().class_slot[1];
  EXPECT_EQ(h_->worker().bypassedPackets(appliance_id_), 4u);
  EXPECT_EQ(h_->worker().classBypassedPackets(streams), 4u);
  EXPECT_EQ(h_->worker().classBypassedBytes(streams), 2 * (fwd_.bytes().size() + rev_.bytes().size()));
  EXPECT_EQ(h_->worker().classBypassedPackets(rest), 0u);
  EXPECT_EQ(h_->get(Counter::appliance_bypassed), 4u);
}

// A bypassed flow's fragmented datagram: the first fragment leaves the
// datagram's fragment entry, and the later fragments (no ports) follow it
// straight back too, not to the appliance that handed the flow back. With
// and without traffic classes (both keep fragment entries under five-tuple
// stickiness).
TEST_P(ApplianceBypass, NonFirstFragmentsFollowTheBypass) {
  for (bool classes : {false, true}) {
    SCOPED_TRACE(classes ? "traffic classes" : "no classes");
    make(true, 0, classes);
    ASSERT_EQ(ret(bypassOpt(0)).verdict, Verdict::kRouter);
    uint64_t sent = h_->get(Counter::encapsulated);
    const Net& n = net();
    Bytes seg = tcp(n.client4, n.server4, 43000, 443, pattern(1200, 5));
    auto frags = ipv4Fragments(n.client4, n.server4, kProtoTcp, seg, 800, 0x5151);
    for (size_t i = 0; i < frags.size(); ++i) {
      Frame f{n.fromA(), kEthIpv4, frags[i], kPortA};
      Result r = send(f.bytes(), f.port);
      ASSERT_EQ(r.verdict, Verdict::kRouter) << "fragment " << i << ": " << describe(r);
      EXPECT_EQ(r.bytes, f.returned()) << "fragment " << i;
    }
    EXPECT_EQ(h_->get(Counter::encapsulated), sent) << "no fragment reached the appliance";
    EXPECT_EQ(h_->worker().bypassedPackets(appliance_id_), 2u);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ApplianceBypass,
                         ::testing::Values(ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet),
                         [](const auto& i) { return std::string(i.param == ctl::GeneveFormat::kAws ? "aws" : "ethernet"); });

}  // namespace
}  // namespace gwlb::dptest
