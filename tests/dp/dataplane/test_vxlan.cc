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

// Outer Ethernet / IPv4 (DF) / UDP / VXLAN (flags, VNI) around an inner frame.
Bytes vxlanFrame(const IpAddr& from, const IpAddr& to, uint16_t sport, uint16_t dport, uint8_t flags,
                 uint32_t vni, const Bytes& inner) {
  const Net& n = net();
  return ether({n.underlay_mac, n.gateway_mac, {}}, kEthIpv4,
               ipv4(from, to, 17, udp(from, to, sport, dport, vxlan::payload(flags, vni, inner))));
}

struct Sent {
  IpAddr appliance;
  uint16_t sport = 0, dport = 0;
  uint32_t vni = 0;
  Bytes inner;
};

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
  s.sport = get16(out, 34);
  s.dport = get16(out, 36);
  EXPECT_GE(s.sport, 49152);
  EXPECT_EQ(get16(out, 38), out.size() - 34) << "UDP length";
  EXPECT_TRUE(checksumOk(out.data() + 34, out.size() - 34, pseudoSum(n.underlay, s.appliance, 17, out.size() - 34)))
      << "UDP checksum";
  EXPECT_EQ(out[42], 0x08) << "VXLAN flags: I only";
  EXPECT_EQ(out[43], 0);
  EXPECT_EQ(get16(out, 44), 0) << "VXLAN reserved";
  s.vni = get32(out, 46) >> 8;
  EXPECT_EQ(out[49], 0) << "VXLAN reserved byte";
  s.inner = slice(out, 50, out.size() - 50);
  EXPECT_EQ(s.inner, inner_frame) << "the frame as received, inside\n got  " << hex(s.inner)
                                  << "\n want " << hex(inner_frame);
  return s;
}

class Vxlan : public ::testing::Test {
 protected:
  void SetUp() override {
    HarnessOptions o;
    o.format = ctl::GeneveFormat::kAws;  // ignored by a VXLAN group
    o.encapsulation = ctl::Encapsulation::kVxlan;
    h_ = std::make_unique<Harness>(o);
    const Net& n = net();
    fwd_ = Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43000, 443, pattern(64))), kPortA};
    back_ = Frame{n.fromB(), kEthIpv4,
                  ipv4(n.server4, n.client4, 6, tcp(n.server4, n.client4, 443, 43000, pattern(32), kTcpAck | kTcpSyn)),
                  kPortB};
  }
  Bytes ret(const Sent& s, uint16_t dport, uint32_t vni, uint8_t flags = 0x08) const {
    return vxlanFrame(s.appliance, net().underlay, s.sport, dport, flags, vni, s.inner);
  }
  std::unique_ptr<Harness> h_;
  Frame fwd_, back_;
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
  for (const IpAddr& s : n.servers)
    if (s != a.appliance) other = s;
  Bytes short_hdr = vxlanFrame(a.appliance, n.underlay, a.sport, kIntPort, 0x08, kIntVni, {});
  Bytes stranger_flow = ret(a, kIntPort, kIntVni);
  {
    // Another flow inside: no entry.
    Frame f{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43001, 443)), kPortA};
    stranger_flow = vxlanFrame(a.appliance, n.underlay, a.sport, kIntPort, 0x08, kIntVni, f.unpadded());
  }
  struct Case { const char* name; Bytes pkt; Counter drop; };
  std::vector<Case> cases = {
      {"I flag clear", ret(a, kIntPort, kIntVni, 0x00), Counter::drop_vxlan_no_vni},
      {"header cut short", short_hdr, Counter::drop_vxlan_truncated},
      {"internal port with external VNI", ret(a, kIntPort, kExtVni), Counter::drop_vxlan_bad_tunnel},
      {"unknown VNI", ret(a, kExtPort, 4242), Counter::drop_vxlan_bad_tunnel},
      {"from a stranger", vxlanFrame(ip("10.9.9.9"), n.underlay, a.sport, kIntPort, 0x08, kIntVni, a.inner),
       Counter::drop_vxlan_unknown_appliance},
      {"from the flow's other appliance", vxlanFrame(other, n.underlay, a.sport, kIntPort, 0x08, kIntVni, a.inner),
       Counter::drop_return_wrong_appliance},
      {"a flow it was never sent", stranger_flow, Counter::drop_return_no_flow},
      {"Geneve from a VXLAN group's appliance",
       fromAppliance(a.appliance, a.sport, geneve(GeneveHdr{.protocol = kEthTeb}), a.inner),
       Counter::drop_vxlan_wrong_format},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    uint64_t before = h.get(k.drop);
    Result r = h.send(k.pkt, kUnderlayPort);
    EXPECT_EQ(r.verdict, Verdict::kDrop) << describe(r);
    EXPECT_EQ(r.drop, k.drop) << describe(r);
    EXPECT_EQ(h.get(k.drop), before + 1);
  }
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
  Bytes pkt = vxlanFrame(n.servers[0], n.underlay, 50000, kIntPort, 0x08, kIntVni, pattern(40));
  Result r = h.send(pkt, kUnderlayPort);
  EXPECT_EQ(r.drop, Counter::drop_not_for_us) << describe(r);
}

}  // namespace
}  // namespace gwlb::dptest
