// What a flow's state does when the world changes under it, through the real
// pipeline: the neighbour a direction comes from changes (router failover, a
// new MAC, another port or VLAN), another flow reuses a datagram's IP ID, and
// a reload deletes the group of an appliance that still drains.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "control/engine/lifecycle.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

// The reply an appliance sends for a Geneve packet the pipeline produced.
Bytes replyTo(const Bytes& sent) { return reflect(sent); }

// ---- return L2 follows the sender ------------------------------------------

class ReturnL2 : public ::testing::TestWithParam<ctl::GeneveFormat> {};

TEST_P(ReturnL2, ReturnsGoToTheNeighbourThatSentTheLatestPacket) {
  HarnessOptions o;
  o.format = GetParam();
  Harness h(o);
  const Net& n = net();
  Bytes l3 = ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43100, 443, pattern(64)));
  // The same direction of one flow, as it arrives over time: first through
  // the tagged port, then the router fails over to another port (untagged),
  // then that router's MAC changes, then it is tagged again with another VLAN.
  const MacAddr new_router = mac("02:00:00:00:0d:0d");
  std::vector<Frame> steps = {
      {n.fromVlan(0x0042), kEthIpv4, l3, kPortVlan},
      {n.fromA(), kEthIpv4, l3, kPortA},
      {L2{n.our_a, new_router, {}}, kEthIpv4, l3, kPortA},
      {n.fromVlan(0x0077), kEthIpv4, l3, kPortVlan},
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const Frame& f = steps[i];
    Result out = h.send(f);
    ASSERT_EQ(out.verdict, Verdict::kAppliance) << describe(out);
    Result back = h.send(replyTo(out.bytes), kUnderlayPort);
    ASSERT_EQ(back.verdict, Verdict::kRouter) << describe(back);
    EXPECT_EQ(back.port, f.port) << "out of the port the latest packet came in on";
    EXPECT_EQ(back.bytes, f.returned())
        << "\n got  " << hex(back.bytes) << "\n want " << hex(f.returned());
    EXPECT_EQ(h.get(Counter::return_l2_changed), i);
    h.quiescent();
  }
  // The same L2 again changes nothing.
  h.send(steps.back());
  EXPECT_EQ(h.get(Counter::return_l2_changed), steps.size() - 1);
  EXPECT_EQ(h.get(Counter::flows_created), 1u);
}

TEST_P(ReturnL2, EachDirectionKeepsItsOwnNeighbour) {
  HarnessOptions o;
  o.format = GetParam();
  Harness h(o);
  const Net& n = net();
  Frame fwd{n.fromA(), kEthIpv4,
            ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, 5353, 53, pattern(20))), kPortA};
  Frame rev{n.fromB(), kEthIpv4,
            ipv4(n.server4, n.client4, 17, udp(n.server4, n.client4, 53, 5353, pattern(30))), kPortB};
  Result a = h.send(fwd), b = h.send(rev);
  ASSERT_EQ(a.verdict, Verdict::kAppliance);
  ASSERT_EQ(b.verdict, Verdict::kAppliance);
  Result ra = h.send(replyTo(a.bytes), kUnderlayPort), rb = h.send(replyTo(b.bytes), kUnderlayPort);
  EXPECT_EQ(ra.bytes, fwd.returned());
  EXPECT_EQ(ra.port, kPortA);
  EXPECT_EQ(rb.bytes, rev.returned());
  EXPECT_EQ(rb.port, kPortB);
  EXPECT_EQ(h.get(Counter::return_l2_changed), 0u);
}

INSTANTIATE_TEST_SUITE_P(Formats, ReturnL2,
                         ::testing::Values(ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet),
                         [](const auto& info) {
                           return std::string(ctl::toString(info.param));
                         });

// ---- fragment entries belong to the latest first fragment -------------------

TEST(FragmentEntries, AnotherFlowReusingTheIpIdTakesTheEntryWithItsFirstFragment) {
  Harness h;
  const Net& n = net();
  // Two UDP flows between the same hosts whose appliances differ.
  auto whole = [&](uint16_t sport) {
    return Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, sport, 4500, pattern(20))),
                 kPortA};
  };
  uint16_t p1 = 30000, p2 = 0;
  Encap e1 = sendExpectingEncap(h, whole(p1));
  Encap e2;
  for (uint16_t p = 30001; p < 30200 && !p2; ++p) {
    Encap e = sendExpectingEncap(h, whole(p));
    if (e.appliance != e1.appliance) p2 = p, e2 = e;
  }
  ASSERT_NE(p2, 0) << "no second flow on another appliance";

  const uint16_t kId = 0x5151;  // both datagrams use the same IP ID
  auto frags = [&](uint16_t sport) {
    Bytes seg = udp(n.client4, n.server4, sport, 4500, pattern(1200, uint8_t(sport)));
    auto fr = ipv4Fragments(n.client4, n.server4, 17, seg, 800, kId);
    return std::vector<Frame>{{n.fromA(), kEthIpv4, fr[0], kPortA}, {n.fromA(), kEthIpv4, fr[1], kPortA}};
  };
  struct Want {
    uint16_t sport;
    Encap e;
  };
  for (const Want& w : {Want{p1, e1}, Want{p2, e2}, Want{p1, e1}}) {
    SCOPED_TRACE("datagram of the flow from port " + std::to_string(w.sport));
    for (const Frame& f : frags(w.sport)) {
      Bytes sent;
      Encap e = sendExpectingEncap(h, f, &sent);
      EXPECT_EQ(e.appliance, w.e.appliance);
      EXPECT_EQ(e.cookie, w.e.cookie);
      // The appliance's reply of the later fragment is accepted too.
      Result back = h.send(replyTo(sent), kUnderlayPort);
      EXPECT_EQ(back.verdict, Verdict::kRouter) << describe(back);
    }
  }
  EXPECT_EQ(h.get(Counter::fragment_entries_created), 1u);
  EXPECT_EQ(h.get(Counter::fragment_entries_replaced), 2u);
}

// ---- a draining appliance keeps its group's encapsulation --------------------

TEST(DrainingEncapsulation, RemovedApplianceWhoseGroupIsDeletedKeepsItsGroupsVniAndIds) {
  for (ctl::GeneveFormat format : {ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet}) {
    SCOPED_TRACE(ctl::toString(format));
    HarnessOptions o;
    o.format = format;
    o.draining = true;  // no_rebalance + draining: flows stay on the removed appliance
    Harness h(o);
    const Net& n = net();
    Frame f{n.fromA(), kEthIpv4,
            ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 41000, 443, pattern(48))), kPortA};
    Encap e0 = sendExpectingEncap(h, f);

    // A reload replaces the group by another one (other name, VNI, IDs and
    // format) with other appliances: the old ones drain.
    ctl::Config next = h.config();
    ctl::ApplianceGroupConfig g;
    g.name = "replacement";
    g.geneve.format = format == ctl::GeneveFormat::kAws ? ctl::GeneveFormat::kEthernet
                                                        : ctl::GeneveFormat::kAws;
    g.geneve.vni = kVni + 1000;
    g.geneve.endpoint_id = 0x99;
    g.geneve.attachment_id = 0x98;
    ctl::ApplianceConfig s;
    s.address = ip("10.0.0.41");
    g.appliances.push_back(s);
    next.server_groups = {g};
    ctl::ApplianceLifecycle life;
    life.applyConfig(h.config(), next, 1'000'000'000ULL, "removed by test");
    h.config() = next;
    h.republish({}, &life);
    h.quiescent();

    // The flow stays on its draining appliance, wrapped exactly as before
    // (checkEncap asserts the original group's VNI, format and IDs).
    Bytes sent;
    Encap e1 = sendExpectingEncap(h, f, &sent);
    EXPECT_EQ(e1.appliance, e0.appliance);
    EXPECT_EQ(e1.cookie, e0.cookie);
    EXPECT_EQ(e1.geneve_hdr, e0.geneve_hdr);
    // Its replies, in its group's encapsulation, still reach the router.
    Result back = h.send(replyTo(sent), kUnderlayPort);
    ASSERT_EQ(back.verdict, Verdict::kRouter) << describe(back);
    EXPECT_EQ(back.bytes, f.returned());
  }
}

}  // namespace
}  // namespace gwlb::dptest
