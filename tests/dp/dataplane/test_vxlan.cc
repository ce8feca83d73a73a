// VXLAN groups (encapsulation: vxlan, Azure's two tunnels): what is sent to
// the appliance (every outer field, the tunnel each direction takes, the
// inner frame) and what the return path accepts or drops, by named counter.
// Frames here come from the test's own builder, not from common/.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/dp/dataplane/vxlan_frames.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

using vxlan::kExtPort, vxlan::kIntPort, vxlan::kExtVni, vxlan::kIntVni;

using vxlan::frame, vxlan::Sent;

// Checks every outer field of a VXLAN packet the pipeline sent and returns
// what a return needs.
Sent checkVxlan(const Bytes& out, const Bytes& inner_frame) {
  const Net& n = net();
  Sent s;
  EXPECT_GE(out.size(), 50u + 14u);
  if (out.size() < 64) return s;
  EXPECT_EQ(slice(out, 0, 6), Bytes(n.gateway_mac.b.begin(), n.gateway_mac.b.end()));
  EXPECT_EQ(slice(out, 6, 6), Bytes(n.underlay_mac.b.begin(), n.underlay_mac.b.end()));
  EXPECT_EQ(get16(out, 12), kEthIpv4);
  EXPECT_EQ(out[14], 0x45);
  EXPECT_EQ(get16(out, 16), out.size() - 14) << "IPv4 total length";
  EXPECT_EQ(get16(out, 20), 0x4000) << "DF, not a fragment";
  EXPECT_EQ(out[23], 17);
  EXPECT_TRUE(checksumOk(out.data() + 14, 20)) << "IPv4 header checksum";
  EXPECT_EQ(get32(out, 26), n.underlay.v4HostOrder()) << "outer source = node.underlay_ip";
  uint8_t dst[4] = {out[30], out[31], out[32], out[33]};
  s.appliance = IpAddr::v4(dst);
  vxlan::checkUdpVxlan(out, 34, n.underlay, s, inner_frame);
  return s;
}

class Vxlan : public vxlan::Fixture {
 protected:
  void SetUp() override {
    HarnessOptions o;
    o.format = ctl::GeneveFormat::kAws;  // ignored by a VXLAN group
    start(o, net().underlay);
  }
};

TEST_F(Vxlan, FirstPacketsWayTakesExternalRepliesInternal) {
  Harness& h = *h_;
  Result r = h.send(fwd_);
  ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  Sent a = checkVxlan(r.bytes, fwd_.unpadded());
  EXPECT_EQ(a.dport, kExtPort);
  EXPECT_EQ(a.vni, kExtVni);
  Result b = h.send(back_);
  ASSERT_EQ(b.verdict, Verdict::kAppliance) << describe(b);
  Sent c = checkVxlan(b.bytes, back_.unpadded());
  EXPECT_EQ(c.appliance, a.appliance) << "both directions on one appliance";
  EXPECT_EQ(c.dport, kIntPort);
  EXPECT_EQ(c.vni, kIntVni);
  EXPECT_EQ(c.sport, a.sport) << "one source port per flow";
  // The next packet the first one's way: external again.
  Result d = h.send(fwd_);
  EXPECT_EQ(checkVxlan(d.bytes, fwd_.unpadded()).dport, kExtPort);
  expectCounterInvariant(h.counters(), "forward");
}

TEST_F(Vxlan, ReturnsOnEitherTunnelGoBackUnchangedAtL3) {
  Harness& h = *h_;
  Sent a = checkVxlan(h.send(fwd_).bytes, fwd_.unpadded());
  Sent c = checkVxlan(h.send(back_).bytes, back_.unpadded());
  // A bridging appliance (the kernel's two VXLAN devices) returns each packet
  // on the other tunnel; a reflecting one on the same.
  struct Case { const char* name; Bytes pkt; const Frame* f; bool same; };
  std::vector<Case> cases = {
      {"first way, back on internal (bridged)", ret(a, kIntPort, kIntVni), &fwd_, false},
      {"first way, back on external (reflected)", ret(a, kExtPort, kExtVni), &fwd_, true},
      {"reply, back on external (bridged)", ret(c, kExtPort, kExtVni), &back_, false},
      {"reply, back on internal (reflected)", ret(c, kIntPort, kIntVni), &back_, true},
      {"other flag bits ignored (RFC 7348)", ret(a, kIntPort, kIntVni, 0xFF), &fwd_, false},
  };
  uint64_t same = 0;
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    Result r = h.send(k.pkt, kUnderlayPort);
    ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
    EXPECT_EQ(r.bytes, k.f->returned()) << "\n got  " << hex(r.bytes) << "\n want " << hex(k.f->returned());
    EXPECT_EQ(r.port, k.f->port);
    same += k.same;
    EXPECT_EQ(h.get(Counter::returned_vxlan_same_tunnel), same);
  }
  expectCounterInvariant(h.counters(), "returns");
}

TEST_F(Vxlan, BadReturnsAreDroppedByName) {
  Harness& h = *h_;
  Sent a = checkVxlan(h.send(fwd_).bytes, fwd_.unpadded());
  const Net& n = net();
  IpAddr other;
  for (const IpAddr& s : n.appliances)
    if (s != a.appliance) other = s;
  Bytes short_hdr = frame(a.appliance, n.underlay, a.sport, kIntPort, 0x08, kIntVni, {});
  Bytes stranger_flow = ret(a, kIntPort, kIntVni);
  {
    // Another flow inside: no entry.
    Frame f{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43001, 443)), kPortA};
    stranger_flow = frame(a.appliance, n.underlay, a.sport, kIntPort, 0x08, kIntVni, f.unpadded());
  }
  expectDrops({
      {"I flag clear", ret(a, kIntPort, kIntVni, 0x00), Counter::drop_vxlan_no_vni},
      {"header cut short", short_hdr, Counter::drop_vxlan_truncated},
      {"internal port with external VNI", ret(a, kIntPort, kExtVni), Counter::drop_vxlan_bad_tunnel},
      {"unknown VNI", ret(a, kExtPort, 4242), Counter::drop_vxlan_bad_tunnel},
      {"from a stranger", frame(ip("10.9.9.9"), n.underlay, a.sport, kIntPort, 0x08, kIntVni, a.inner),
       Counter::drop_vxlan_unknown_appliance},
      {"from the flow's other appliance", frame(other, n.underlay, a.sport, kIntPort, 0x08, kIntVni, a.inner),
       Counter::drop_return_wrong_appliance},
      {"a flow it was never sent", stranger_flow, Counter::drop_return_no_flow},
      {"Geneve from a VXLAN group's appliance",
       fromAppliance(a.appliance, a.sport, geneve(GeneveHdr{.protocol = kEthTeb}), a.inner),
       Counter::drop_vxlan_wrong_format},
  });
  // VXLAN to a tunnel port arriving from the router side, to an appliance: never wrapped again.
  Result loop = h.send(ether(n.fromA(), kEthIpv4,
                             ipv4(n.client4, a.appliance, 17, udp(n.client4, a.appliance, 5000, kExtPort, pattern(30)))),
                       kPortA);
  EXPECT_EQ(loop.drop, Counter::drop_loop_geneve) << describe(loop);
  expectCounterInvariant(h.counters(), "drops");
}

TEST(VxlanGeneveGroup, VxlanToAGeneveGroupIsNotAReturn) {
  // Without VXLAN groups the tunnel ports are nobody's: UDP to 10800 at the
  // underlay address is for the node itself (dropped without an exception path).
  Harness h;
  const Net& n = net();
  Bytes pkt = frame(n.appliances[0], n.underlay, 50000, kIntPort, 0x08, kIntVni, pattern(40));
  Result r = h.send(pkt, kUnderlayPort);
  EXPECT_EQ(r.drop, Counter::drop_not_for_us) << describe(r);
}

}  // namespace
}  // namespace gwlb::dptest
