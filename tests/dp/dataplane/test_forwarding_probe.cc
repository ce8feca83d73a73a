// Forwarding checks in the pipeline (health_check.forwarding,
// docs/product-rules.md "Forwarding checks"): the probe gwlbd builds for an
// appliance, reflected by it, is handed to the control thread (punted,
// punted_probe) and never sent toward a router; the same packet without
// forwarding checks on, or another ICMP echo without a flow, is
// drop_return_no_flow as before.
#include <gtest/gtest.h>

#include "control/health/forwarding_probe.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

class ForwardingProbe : public ::testing::TestWithParam<ctl::GeneveFormat> {
 protected:
  void SetUp() override {
    HarnessOptions o;
    o.format = GetParam();
    o.punt_ring = true;  // gwlbd's ring to the control thread
    h_ = std::make_unique<Harness>(o);
    setForwarding(true);
  }
  void setForwarding(bool on) {
    ctl::HealthCheckConfig& hc = h_->config().server_groups[0].health_check;
    hc.configured = true;
    hc.forwarding = on;
    h_->republish();
  }
  // The probe as gwlbd sends it to the appliance of server id `id`.
  Bytes probe(uint16_t id, uint32_t token) const {
    Bytes b(ctl::kForwardingProbeMaxLen);
    size_t n = ctl::buildForwardingProbe(h_->snapshot(), id, token, b.data(), b.size());
    b.resize(n);
    return b;
  }
  std::unique_ptr<Harness> h_;
};

TEST_P(ForwardingProbe, AReturnedProbeGoesToTheControlThreadNotTheRouter) {
  Harness& h = *h_;
  const dp::Snapshot& s = h.snapshot();
  ASSERT_FALSE(s.appliances.empty());
  for (uint16_t id = 0; id < s.appliances.size(); ++id) {
    if (!s.appliances[id].in_use) continue;
    const uint32_t token = 0x12340000u + id;
    Bytes sent = probe(id, token);
    ASSERT_FALSE(sent.empty()) << "server " << id;
    // As sent: a Geneve packet to the appliance that the probe parser reads
    // as the probe (the token, the appliance it is for, the two addresses).
    ctl::ForwardingReturn out;
    ASSERT_TRUE(ctl::parseForwardingReturn(sent.data(), sent.size(), out));
    EXPECT_EQ(out.sent_to, s.appliances[id].ip);
    EXPECT_EQ(out.token, token);
    EXPECT_EQ(out.src, 0xC6120001u);
    EXPECT_EQ(out.dst, 0xC6120002u);

    const uint64_t before = h.get(Counter::punted_probe);
    Result r = h.send(reflect(sent), kUnderlayPort);
    ASSERT_EQ(r.verdict, Verdict::kPunt) << describe(r);
    EXPECT_EQ(h.get(Counter::punted_probe), before + 1);
    EXPECT_EQ(r.bytes, reflect(sent)) << "handed over as it came";
    ASSERT_TRUE(ctl::parseForwardingReturn(r.bytes.data(), r.bytes.size(), out));
    EXPECT_EQ(out.appliance, s.appliances[id].ip) << "the outer source: who sent it back";
    EXPECT_EQ(out.sent_to, s.appliances[id].ip);
    EXPECT_EQ(out.token, token);
  }
  expectCounterInvariant(h.counters(), "after the probes");
}

TEST_P(ForwardingProbe, WithoutForwardingChecksItIsAReturnWithoutAFlow) {
  Harness& h = *h_;
  Bytes sent = probe(0, 7);
  ASSERT_FALSE(sent.empty());
  setForwarding(false);
  EXPECT_EQ(probe(0, 7).size(), 0u) << "no probe without forwarding checks";
  Result r = h.send(reflect(sent), kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_return_no_flow) << describe(r);
  EXPECT_EQ(h.get(Counter::punted_probe), 0u);
}

TEST_P(ForwardingProbe, OtherPacketsWithoutAFlowAreStillDropped) {
  Harness& h = *h_;
  Bytes sent = probe(0, 7);
  ASSERT_FALSE(sent.empty());
  // The same echo with its inner source changed (the IPv4 header starts
  // after the outer headers, the Geneve header and, ethernet format, 14 more).
  Bytes other = reflect(sent);
  const size_t inner = sent.size() - ctl::kForwardingInnerLen;
  other[inner + 15] ^= 0x40;  // 198.18.0.1 -> 198.18.0.65
  put16(other, inner + 10, 0);
  put16(other, inner + 10, fold(sum16(other.data() + inner, 20)));
  put16(other, 40, 0);  // the outer UDP checksum: none (allowed for IPv4)
  Result r = h.send(other, kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_return_no_flow) << describe(r);
  EXPECT_EQ(h.get(Counter::punted_probe), 0u);
}

// Reserved IPv6 addresses: the probe is an ICMPv6 echo inside IPv6 (RFC
// 5180's benchmarking range), and its return is punted like the IPv4 one;
// an IPv4 echo between the old addresses is then just a return without a flow.
TEST_P(ForwardingProbe, IPv6AddressesMakeAnIcmpv6ProbeThatIsPuntedOnReturn) {
  Harness& h = *h_;
  Bytes v4 = probe(0, 9);
  ASSERT_FALSE(v4.empty());
  ctl::HealthCheckConfig& hc = h.config().server_groups[0].health_check;
  hc.forwarding_probe.src = *IpAddr::parse("2001:2::1");
  hc.forwarding_probe.dst = *IpAddr::parse("2001:2::2");
  h.republish();
  const dp::Snapshot& s = h.snapshot();
  for (uint16_t id = 0; id < s.appliances.size(); ++id) {
    if (!s.appliances[id].in_use) continue;
    const uint32_t token = 0x56780000u + id;
    Bytes sent = probe(id, token);
    ASSERT_EQ(sent.size(), v4.size() + (ctl::kForwardingInnerLen6 - ctl::kForwardingInnerLen)) << "server " << id;
    // The inner packet: IPv6, ICMPv6 echo request, checksum over the pseudo-header.
    const size_t inner = sent.size() - ctl::kForwardingInnerLen6;
    EXPECT_EQ(sent[inner] >> 4, 6);
    EXPECT_EQ(sent[inner + 6], 58);
    EXPECT_EQ(sent[inner + 40], 128);
    uint32_t sum = sum16(sent.data() + inner + 8, 32) + 24 + 58 + sum16(sent.data() + inner + 40, 24);
    EXPECT_EQ(fold(sum), 0) << "ICMPv6 checksum";
    if (GetParam() == ctl::GeneveFormat::kEthernet) { EXPECT_EQ(get16(sent, inner - 2), 0x86DDu); }
    ctl::ForwardingReturn out;
    ASSERT_TRUE(ctl::parseForwardingReturn(sent.data(), sent.size(), out));
    EXPECT_TRUE(out.v6);
    EXPECT_EQ(out.src6, IpAddr::parse("2001:2::1")->b);
    EXPECT_EQ(out.dst6, IpAddr::parse("2001:2::2")->b);
    EXPECT_EQ(out.token, token);
    EXPECT_EQ(out.sent_to, s.appliances[id].ip);

    const uint64_t before = h.get(Counter::punted_probe);
    Result r = h.send(reflect(sent), kUnderlayPort);
    ASSERT_EQ(r.verdict, Verdict::kPunt) << describe(r);
    EXPECT_EQ(h.get(Counter::punted_probe), before + 1);
    ASSERT_TRUE(ctl::parseForwardingReturn(r.bytes.data(), r.bytes.size(), out));
    EXPECT_EQ(out.appliance, s.appliances[id].ip);
    EXPECT_EQ(out.token, token);
  }
  Result r = h.send(reflect(v4), kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_return_no_flow) << describe(r);
  expectCounterInvariant(h.counters(), "after the IPv6 probes");
}

// IPv6 appliances (an IPv6 underlay): the probe leaves in outer IPv6 from
// node.underlay_ipv6 to the appliance, as its data packets do; reflected by
// the appliance it is punted, and the parser names the appliance by its key,
// which forwardingServer() maps back to it. Both inner families.
TEST_P(ForwardingProbe, IpvSixAppliancesGetTheProbeInOuterIpv6AndItsReturnIsPunted) {
  const IpAddr us6 = *IpAddr::parse("2001:db8:f::1");
  HarnessOptions o;
  o.format = GetParam();
  o.punt_ring = true;
  o.appliances = {*IpAddr::parse("2001:db8:f::11"), *IpAddr::parse("2001:db8:f::12")};
  o.underlay_ipv6 = us6;
  Harness h(o);
  ctl::HealthCheckConfig& hc = h.config().server_groups[0].health_check;
  hc.configured = true;
  hc.forwarding = true;
  for (bool inner6 : {false, true}) {
    if (inner6) {
      hc.forwarding_probe.src = *IpAddr::parse("2001:2::1");
      hc.forwarding_probe.dst = *IpAddr::parse("2001:2::2");
    }
    h.republish();
    const dp::Snapshot& s = h.snapshot();
    for (uint16_t id = 0; id < s.appliances.size(); ++id) {
      if (!s.appliances[id].in_use) continue;
      ASSERT_TRUE(s.appliances[id].ipv6);
      const uint32_t token = 0x6a000000u + id;
      Bytes sent(ctl::kForwardingProbeMaxLen);
      sent.resize(ctl::buildForwardingProbe(s, id, token, sent.data(), sent.size()));
      ASSERT_FALSE(sent.empty()) << "server " << id;
      ASSERT_EQ(get16(sent, 12), kEthIpv6) << "outer IPv6";
      EXPECT_EQ(slice(sent, 22, 16), Bytes(us6.b.begin(), us6.b.end())) << "from node.underlay_ipv6";
      EXPECT_EQ(slice(sent, 38, 16), Bytes(s.appliances[id].ip6.begin(), s.appliances[id].ip6.end()));
      EXPECT_EQ(get16(sent, 56), 6081);
      EXPECT_TRUE(checksumOk(sent.data() + 54, sent.size() - 54,
                             pseudoSum(us6, IpAddr::v6(s.appliances[id].ip6.data()), 17, sent.size() - 54)))
          << "UDP checksum over the IPv6 pseudo-header";
      ctl::ForwardingReturn out;
      ASSERT_TRUE(ctl::parseForwardingReturn(sent.data(), sent.size(), out));
      EXPECT_EQ(out.sent_to, s.appliances[id].ip) << "the payload names the appliance by its key";
      EXPECT_EQ(out.v6, inner6);
      // The appliance sends it back: MACs and outer addresses swapped.
      Bytes back = sent;
      for (size_t i = 0; i < 6; ++i) std::swap(back[i], back[6 + i]);
      for (size_t i = 0; i < 16; ++i) std::swap(back[22 + i], back[38 + i]);
      const uint64_t before = h.get(Counter::punted_probe);
      Result r = h.send(back, kUnderlayPort);
      ASSERT_EQ(r.verdict, Verdict::kPunt) << describe(r);
      EXPECT_EQ(h.get(Counter::punted_probe), before + 1);
      ASSERT_TRUE(ctl::parseForwardingReturn(r.bytes.data(), r.bytes.size(), out));
      EXPECT_EQ(out.appliance, s.appliances[id].ip) << "the outer source, by its key";
      EXPECT_EQ(out.token, token);
      EXPECT_EQ(ctl::forwardingServer(s, out.appliance), id);
    }
  }
  EXPECT_EQ(ctl::forwardingServer(h.snapshot(), 0x0a000063u), dp::kNoAppliance);
  expectCounterInvariant(h.counters(), "after the probes over IPv6");
}

INSTANTIATE_TEST_SUITE_P(Formats, ForwardingProbe,
                         ::testing::Values(ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet),
                         [](const auto& info) { return std::string(ctl::toString(info.param)); });

}  // namespace
}  // namespace gwlb::dptest
