// The return path: what appliances send back. A well-formed reply (even with
// UDP checksum 0, TTL 2, an unknown non-critical option) goes back to the
// router byte-identical at L3; each malformed one is dropped with its own
// counter. Every return packet here is rebuilt with the test's own builder
// from the Geneve packet the pipeline produced, with one thing changed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

struct ReturnCase {
  std::string name;
  Bytes packet;                     // arrives on the underlay port
  Verdict verdict = Verdict::kDrop;
  Counter drop = Counter::kCount;
};

class ReturnPath : public ::testing::TestWithParam<ctl::GeneveFormat> {
 protected:
  void SetUp() override {
    HarnessOptions o;
    o.format = GetParam();
    h_ = std::make_unique<Harness>(o);
    const Net& n = net();
    flow_ = Frame{n.fromVlan(0x0042), kEthIpv4,
                  ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43000, 443, pattern(64))),
                  kPortVlan};
    Result r = h_->send(flow_);
    ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    sent_ = r.bytes;
    enc_ = checkEncap(*h_, sent_, expectedInner(*h_, flow_), expectedProtocol(*h_, flow_));
  }

  // The Geneve header as sent, with changes.
  GeneveHdr header() const {
    GeneveHdr g;
    g.protocol = get16(enc_.geneve_hdr, 2);
    g.vni = kVni;
    g.options = slice(enc_.geneve_hdr, 8, enc_.geneve_hdr.size() - 8);
    return g;
  }
  Bytes reply(const GeneveHdr& g) const { return reply(g, enc_.inner); }
  Bytes reply(const GeneveHdr& g, const Bytes& inner) const {
    return fromAppliance(enc_.appliance, enc_.sport, geneve(g), inner);
  }
  IpAddr otherAppliance() const {
    for (const IpAddr& a : net().appliances)
      if (a != enc_.appliance) return a;
    return {};
  }

  std::unique_ptr<Harness> h_;
  Frame flow_;
  Bytes sent_;
  Encap enc_;
};

TEST_P(ReturnPath, WellFormedRepliesGoBackToTheRouter) {
  Harness& h = *h_;
  std::vector<ReturnCase> ok;
  ok.push_back({"reflected verbatim", reflect(sent_), Verdict::kRouter});
  ok.push_back({"rebuilt by the test's builder", reply(header()), Verdict::kRouter});
  {
    Bytes b = reply(header());
    put16(b, 40, 0);  // UDP checksum 0 (allowed for IPv4)
    b[22] = 2;        // TTL 2, as some appliances send
    put16(b, 24, 0);
    put16(b, 24, fold(sum16(b.data() + 14, 20)));
    ok.push_back({"UDP checksum 0 and TTL 2", b, Verdict::kRouter});
  }
  {
    GeneveHdr g = header();
    append(g.options, geneveOption(0x0108, 0x05, {1, 2, 3, 4}));  // unknown, not critical
    append(g.options, geneveOption(0xFFFF, 0x01, {}));            // other class, no data
    ok.push_back({"unknown non-critical options", reply(g), Verdict::kRouter});
  }
  {
    GeneveHdr g = header();
    g.critical = true;  // C bit with only known options
    ok.push_back({"C bit set, no unknown critical option", reply(g), Verdict::kRouter});
  }
  {
    Bytes b = reply(header());
    b.push_back(0);  // Ethernet trailer beyond the outer IPv4 length
    b.push_back(0);
    ok.push_back({"outer frame with padding after the IP packet", b, Verdict::kRouter});
  }
  {
    // The underlay delivers the reply with an 802.1Q tag: offsets shift by 4.
    Bytes b = reply(header());
    Bytes tagged = slice(b, 0, 12);
    append16(tagged, kEthVlan);
    append16(tagged, 0x0FFE);
    append(tagged, slice(b, 12, b.size() - 12));
    ok.push_back({"reply carrying an 802.1Q tag on the underlay", tagged, Verdict::kRouter});
  }
  for (const ReturnCase& c : ok) {
    SCOPED_TRACE(c.name);
    Result r = h.send(c.packet, kUnderlayPort);
    ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
    EXPECT_EQ(r.bytes, flow_.returned())
        << "\n got  " << hex(r.bytes) << "\n want " << hex(flow_.returned());
    EXPECT_EQ(r.port, kPortVlan) << "back out of the port the flow came in on";
  }
  EXPECT_EQ(h.get(Counter::returned), ok.size());
}

TEST_P(ReturnPath, MalformedRepliesAreDroppedWithTheirCounter) {
  Harness& h = *h_;
  const Net& n = net();
  std::vector<ReturnCase> t;
  auto bad = [&](std::string name, Bytes b, Counter why) {
    t.push_back({std::move(name), std::move(b), Verdict::kDrop, why});
  };

  bad("from an address that is not an appliance",
      fromAppliance(ip("10.0.0.99"), enc_.sport, enc_.geneve_hdr, enc_.inner),
      Counter::drop_geneve_unknown_appliance);
  {
    GeneveHdr g = header();
    g.version = 1;
    bad("Geneve version 1", reply(g), Counter::drop_geneve_bad_version);
  }
  {
    GeneveHdr g = header();
    g.oam = true;
    bad("O bit (control packet)", reply(g), Counter::drop_geneve_control);
  }
  {
    GeneveHdr g = header();
    // An option whose length (3 words) runs past the option area (2 words of data left).
    append(g.options, geneveOption(0x0108, 0x07, pattern(8)));
    g.options[g.options.size() - 9] = 3;
    bad("option length past the option area", reply(g), Counter::drop_geneve_bad_option);
  }
  {
    GeneveHdr g = header();
    append(g.options, {0x01, 0x08, 0x07, 0x01});  // one word of data claimed, none left
    bad("option header at the very end of the area", reply(g), Counter::drop_geneve_bad_option);
  }
  {
    GeneveHdr g = header();
    g.critical = true;
    append(g.options, geneveOption(0x0108, 0x85, {0, 0, 0, 1}));  // critical, unknown type
    bad("unknown critical option", reply(g), Counter::drop_geneve_unknown_critical_option);
  }
  {
    GeneveHdr g = header();
    g.protocol = h.aws() ? kEthTeb : kEthIpv4;
    bad("protocol type of the other format", reply(g), Counter::drop_geneve_bad_protocol);
  }
  {
    GeneveHdr g = header();
    g.protocol = 0x88CC;  // LLDP
    bad("protocol type that is neither", reply(g), Counter::drop_geneve_bad_protocol);
  }
  if (h.aws()) {
    GeneveHdr g = header();
    g.options.resize(24);  // endpoint and attachment IDs only
    bad("aws format without the cookie option", reply(g), Counter::drop_geneve_missing_cookie);
    GeneveHdr c = header();
    put32(c.options, 28, enc_.cookie ^ 0x00010000);
    bad("cookie of no flow", reply(c), Counter::drop_return_cookie_mismatch);
  }
  {
    GeneveHdr g = header();
    g.vni = kVni + 1;
    bad("wrong VNI", reply(g), Counter::drop_geneve_bad_vni);
  }
  bad("from another configured appliance than the flow's",
      fromAppliance(otherAppliance(), enc_.sport, enc_.geneve_hdr, enc_.inner),
      Counter::drop_return_wrong_appliance);
  {
    Frame other{n.fromA(), kEthIpv4,
                ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 43001, 443)), kPortA};
    bad("inner packet of a flow never seen", reply(header(), expectedInner(h, other)),
        Counter::drop_return_no_flow);
  }
  {
    // The appliance originates a packet in the direction the gateway has not
    // seen yet (e.g. a firewall's RST toward the server side): no L2 to use.
    Frame rev{n.fromB(), kEthIpv4,
              ipv4(n.server4, n.client4, 6, tcp(n.server4, n.client4, 443, 43000, {}, 0x04)),
              kPortB};
    bad("inner packet in the flow's unseen direction", reply(header(), expectedInner(h, rev)),
        Counter::drop_return_no_l2);
  }
  if (h.aws()) {
    const Net& nn = net();
    Bytes v6 = ipv6(nn.client6, nn.server6, 6, tcp(nn.client6, nn.server6, 1, 2));
    bad("protocol 0x0800 carrying an IPv6 packet", reply(header(), v6),
        Counter::drop_return_inner_malformed);
  }
  {
    Bytes inner = slice(enc_.inner, 0, enc_.inner.size() - 30);
    bad("inner packet shorter than its IP total length", reply(header(), inner),
        Counter::drop_return_inner_malformed);
    Bytes tiny = slice(enc_.inner, 0, h.aws() ? 12 : 20);
    bad("inner packet cut inside its IP header", reply(header(), tiny),
        Counter::drop_return_inner_malformed);
  }
  {
    // UDP payload of 6 bytes: not even the fixed Geneve header.
    Bytes g6 = slice(enc_.geneve_hdr, 0, 6);
    bad("Geneve header truncated", fromAppliance(enc_.appliance, enc_.sport, g6, {}),
        Counter::drop_geneve_truncated);
    GeneveHdr g = header();
    g.opt_len_words = 63;  // 252 bytes of options: past the end of the packet
    Bytes short_inner = slice(enc_.inner, 0, 20);
    bad("option area past the end of the packet", reply(g, short_inner),
        Counter::drop_geneve_truncated);
  }
  {
    // The outer IPv4 packet is a fragment: never reassembled, never returned.
    Bytes b = reply(header());
    put16(b, 20, 0x2000);  // MF
    put16(b, 24, 0);
    put16(b, 24, fold(sum16(b.data() + 14, 20)));
    bad("outer IPv4 first fragment", b, Counter::drop_bad_fragment);
  }

  for (const ReturnCase& c : t) {
    SCOPED_TRACE(c.name);
    Result r = h.send(c.packet, kUnderlayPort);
    ASSERT_EQ(r.verdict, Verdict::kDrop) << describe(r);
    EXPECT_EQ(r.drop, c.drop) << describe(r);
  }
  // The flow itself is untouched by all of that.
  Result r = h.send(reflect(sent_), kUnderlayPort);
  ASSERT_EQ(r.verdict, Verdict::kRouter) << describe(r);
  EXPECT_EQ(r.bytes, flow_.returned());
  EXPECT_EQ(h.get(Counter::returned), 1u);
  expectCounterInvariant(h.counters(), "malformed returns");
}

// The reverse direction of the flow returns with its own L2 (untagged, port B).
TEST_P(ReturnPath, EachDirectionReturnsWithItsOwnL2) {
  Harness& h = *h_;
  const Net& n = net();
  Frame rev{n.fromB(), kEthIpv4,
            ipv4(n.server4, n.client4, 6, tcp(n.server4, n.client4, 443, 43000, pattern(9), kTcpAck)),
            kPortB};
  Result r = h.send(rev);
  ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
  Encap e = checkEncap(h, r.bytes, expectedInner(h, rev), expectedProtocol(h, rev));
  EXPECT_EQ(e.appliance, enc_.appliance);
  EXPECT_EQ(e.cookie, enc_.cookie);
  EXPECT_EQ(e.sport, enc_.sport);
  Result back = h.send(reflect(r.bytes), kUnderlayPort);
  ASSERT_EQ(back.verdict, Verdict::kRouter) << describe(back);
  EXPECT_EQ(back.bytes, rev.returned());
  EXPECT_EQ(back.port, kPortB);
  back = h.send(reflect(sent_), kUnderlayPort);
  ASSERT_EQ(back.verdict, Verdict::kRouter) << describe(back);
  EXPECT_EQ(back.bytes, flow_.returned());
  EXPECT_EQ(back.port, kPortVlan);
}

// The return path runs in the burst's three stages with the forward path:
// returns of many flows, new flows, a reply from the wrong appliance and one
// for no flow, all in one burst, each get their own outcome, and the returns
// leave in the order they arrived.
TEST_P(ReturnPath, ABurstMixingReturnsAndNewFlowsHandlesEachPacket) {
  Harness& h = *h_;
  const Net& n = net();
  constexpr uint16_t kFlows = 12;
  std::vector<Frame> flows;
  std::vector<Bytes> replies;
  for (uint16_t i = 0; i < kFlows; ++i) {
    uint16_t sport = uint16_t(44000 + i);
    flows.push_back(Frame{n.fromA(), kEthIpv4,
                          ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, sport, 53, pattern(20 + i))),
                          kPortA});
    Result r = h.send(flows.back());
    ASSERT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    replies.push_back(reflect(r.bytes));
  }
  std::vector<std::pair<Bytes, uint16_t>> burst;
  std::vector<Bytes> want_router;
  const uint64_t returned0 = h.get(Counter::returned);
  const uint64_t created0 = h.get(Counter::flows_created);
  const uint64_t wrong0 = h.get(Counter::drop_return_wrong_appliance);
  const uint64_t noflow0 = h.get(Counter::drop_return_no_flow);
  for (uint16_t i = 0; i < kFlows; ++i) {
    burst.emplace_back(replies[i], kUnderlayPort);
    want_router.push_back(flows[i].returned());
    Frame fresh{n.fromA(), kEthIpv4,
                ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, uint16_t(45000 + i), 443)), kPortA};
    burst.emplace_back(fresh.bytes(), fresh.port);
  }
  burst.emplace_back(reply(header()), kUnderlayPort);
  want_router.push_back(flow_.returned());
  burst.emplace_back(fromAppliance(otherAppliance(), enc_.sport, enc_.geneve_hdr, enc_.inner),
                     kUnderlayPort);
  {
    // The inner TCP source port changed: the key of a flow that does not exist.
    Bytes inner = enc_.inner;
    size_t l4 = h.aws() ? 20 : 14 + 4 + 20;  // aws: bare IP; ethernet: frame with its VLAN tag
    put16(inner, l4, 43999);
    burst.emplace_back(fromAppliance(enc_.appliance, enc_.sport, enc_.geneve_hdr, inner), kUnderlayPort);
  }
  std::vector<Result> out = h.sendBurst(burst);
  std::vector<Bytes> got_router;
  size_t to_appliance = 0;
  for (const Result& r : out) {
    if (r.verdict == Verdict::kRouter) got_router.push_back(r.bytes);
    if (r.verdict == Verdict::kAppliance) ++to_appliance;
  }
  EXPECT_EQ(to_appliance, kFlows);
  EXPECT_EQ(got_router, want_router);
  EXPECT_EQ(h.get(Counter::returned) - returned0, kFlows + 1u);
  EXPECT_EQ(h.get(Counter::flows_created) - created0, kFlows);
  EXPECT_EQ(h.get(Counter::drop_return_wrong_appliance) - wrong0, 1u);
  EXPECT_EQ(h.get(Counter::drop_return_no_flow) - noflow0, 1u);
  expectCounterInvariant(h.counters(), "mixed burst");
}

INSTANTIATE_TEST_SUITE_P(Formats, ReturnPath,
                         ::testing::Values(ctl::GeneveFormat::kAws, ctl::GeneveFormat::kEthernet),
                         [](const auto& info) { return std::string(ctl::toString(info.param)); });

}  // namespace
}  // namespace gwlb::dptest
