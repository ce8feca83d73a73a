// IPv6 neighbor discovery codec (common/ndp.h): solicitations built by the
// independent test packet builder (tests/dp/packet_builder.h) are parsed and
// validated per RFC 4861 section 7.1.1, and the advertisement that answers
// them is checked field by field with the builder's own checksum.
#include <gtest/gtest.h>

#include <vector>

#include "common/ndp.h"
#include "tests/dp/packet_builder.h"

namespace gwlb {
namespace {

using namespace dptest;

const MacAddr kRouter = mac("02:00:00:00:0a:0a");
const MacAddr kOurs = mac("02:00:00:00:00:a1");

TEST(Ndp, MulticastSolicitationParsesAndTheAdvertisementAnswersIt) {
  IpAddr from = ip("fe80::a"), target = ip("2001:db8:ff::1");
  Bytes f = neighborSolicitation(kRouter, from, target);
  NeighborSolicitation ns;
  ASSERT_TRUE(parseNeighborSolicitation(f.data(), f.size(), ns));
  EXPECT_EQ(ns.eth_src, kRouter);
  EXPECT_EQ(ns.src, from.b);
  EXPECT_EQ(ns.target, target.b);
  EXPECT_EQ(ns.dst, solicitedNode(target).b);
  EXPECT_EQ(solicitedNodeAddress(target.b), solicitedNode(target).b);
  EXPECT_TRUE(ns.has_source_lladdr);
  EXPECT_EQ(ns.source_lladdr, kRouter);
  EXPECT_FALSE(ns.has_vlan);

  Bytes out(200, 0xEE);
  size_t len = makeNeighborAdvertisement(out.data(), out.size(), ns, kOurs);
  ASSERT_EQ(len, 86u);
  out.resize(len);
  EXPECT_EQ(slice(out, 0, 6), Bytes(kRouter.b.begin(), kRouter.b.end())) << "to the asker";
  EXPECT_EQ(slice(out, 6, 6), Bytes(kOurs.b.begin(), kOurs.b.end())) << "from the port's MAC";
  EXPECT_EQ(get16(out, 12), kEthIpv6);
  EXPECT_EQ(out[14] >> 4, 6);
  EXPECT_EQ(get16(out, 18), 32) << "payload: 24-byte NA + 8-byte option";
  EXPECT_EQ(out[20], 58);
  EXPECT_EQ(out[21], 255) << "hop limit";
  EXPECT_EQ(slice(out, 22, 16), Bytes(target.b.begin(), target.b.end())) << "from the target";
  EXPECT_EQ(slice(out, 38, 16), Bytes(from.b.begin(), from.b.end())) << "to the solicitor";
  const size_t m = 54;
  EXPECT_EQ(out[m], 136);
  EXPECT_EQ(out[m + 1], 0);
  EXPECT_EQ(out[m + 4], 0x60) << "Solicited and Override, not Router";
  EXPECT_EQ(slice(out, m + 8, 16), Bytes(target.b.begin(), target.b.end()));
  EXPECT_EQ(out[m + 24], 2) << "target link-layer address option";
  EXPECT_EQ(out[m + 25], 1);
  EXPECT_EQ(slice(out, m + 26, 6), Bytes(kOurs.b.begin(), kOurs.b.end()));
  EXPECT_TRUE(checksumOk(out.data() + m, 32, pseudoSum(target, from, 58, 32)));
}

TEST(Ndp, TaggedUnicastProbeIsAnsweredWithTheSameTag) {
  IpAddr from = ip("2001:db8:ff::a"), target = ip("2001:db8:ff::1");
  Bytes f = neighborSolicitation(kRouter, from, target, kOurs, 0x0123);
  NeighborSolicitation ns;
  ASSERT_TRUE(parseNeighborSolicitation(f.data(), f.size(), ns));
  EXPECT_TRUE(ns.has_vlan);
  EXPECT_EQ(ns.vlan_tci, 0x0123);
  EXPECT_EQ(ns.dst, target.b);
  // Built over the solicitation's own bytes, as the control thread does.
  Bytes out = f;
  out.resize(200);
  size_t len = makeNeighborAdvertisement(out.data(), out.size(), ns, kOurs);
  ASSERT_EQ(len, 90u);
  out.resize(len);
  EXPECT_EQ(get16(out, 12), kEthVlan);
  EXPECT_EQ(get16(out, 14), 0x0123);
  EXPECT_EQ(get16(out, 16), kEthIpv6);
  EXPECT_EQ(slice(out, 0, 6), Bytes(kRouter.b.begin(), kRouter.b.end()));
  EXPECT_TRUE(checksumOk(out.data() + 58, 32, pseudoSum(target, from, 58, 32)));
  EXPECT_EQ(makeNeighborAdvertisement(out.data(), 89, ns, kOurs), 0u) << "room too small";
}

TEST(Ndp, DuplicateAddressDetectionIsAnsweredToAllNodes) {
  IpAddr unspecified = ip("::"), target = ip("2001:db8:ff::1");
  Bytes body(target.b.begin(), target.b.end());
  IpAddr dst = solicitedNode(target);
  Bytes f = ether({multicastMac(dst), kRouter, {}}, kEthIpv6,
                  ipv6(unspecified, dst, 58, icmp6(unspecified, dst, 135, 0, 0, body), {},
                       V6{.hop_limit = 255}));
  NeighborSolicitation ns;
  ASSERT_TRUE(parseNeighborSolicitation(f.data(), f.size(), ns));
  EXPECT_TRUE(ns.dad());
  Bytes out(100);
  ASSERT_EQ(makeNeighborAdvertisement(out.data(), out.size(), ns, kOurs), 86u);
  out.resize(86);
  EXPECT_EQ(slice(out, 0, 6), (Bytes{0x33, 0x33, 0, 0, 0, 1}));
  IpAddr all = ip("ff02::1");
  EXPECT_EQ(slice(out, 38, 16), Bytes(all.b.begin(), all.b.end()));
  EXPECT_EQ(out[54 + 4], 0x20) << "Override only: not solicited";
  EXPECT_TRUE(checksumOk(out.data() + 54, 32, pseudoSum(target, all, 58, 32)));
}

// RFC 4861 section 7.1.1: what a node must silently discard.
TEST(Ndp, InvalidSolicitationsAreRejected) {
  IpAddr from = ip("fe80::a"), target = ip("2001:db8:ff::1");
  const Bytes good = neighborSolicitation(kRouter, from, target);
  NeighborSolicitation ns;
  ASSERT_TRUE(parseNeighborSolicitation(good.data(), good.size(), ns));
  for (size_t len = 0; len < good.size(); ++len)
    EXPECT_FALSE(parseNeighborSolicitation(good.data(), len, ns)) << "cut to " << len;
  auto bad = [&](const char* what, Bytes f) {
    EXPECT_FALSE(parseNeighborSolicitation(f.data(), f.size(), ns)) << what;
  };
  const size_t ip6 = 14, m = 54;
  Bytes f = good;
  f[ip6 + 7] = 64;
  bad("hop limit 64 (forwarded by a router)", f);
  f = good;
  f[m + 1] = 1;
  bad("code 1", f);
  f = good;
  f[m + 2] ^= 1;
  bad("bad checksum", f);
  f = good;
  f[m] = 136;
  bad("an advertisement", f);
  IpAddr mc = ip("ff02::1");
  bad("multicast target", neighborSolicitation(kRouter, from, mc));
  {
    // An option of length 0.
    Bytes body(target.b.begin(), target.b.end());
    body.insert(body.end(), {1, 0, 0, 0, 0, 0, 0, 0});
    IpAddr dst = solicitedNode(target);
    bad("option of length 0",
        ether({multicastMac(dst), kRouter, {}}, kEthIpv6,
              ipv6(from, dst, 58, icmp6(from, dst, 135, 0, 0, body), {}, V6{.hop_limit = 255})));
    // An option claiming more than the message.
    Bytes body2(target.b.begin(), target.b.end());
    body2.insert(body2.end(), {1, 2, 0, 0, 0, 0, 0, 0});
    bad("option past the message",
        ether({multicastMac(dst), kRouter, {}}, kEthIpv6,
              ipv6(from, dst, 58, icmp6(from, dst, 135, 0, 0, body2), {}, V6{.hop_limit = 255})));
    // DAD (from ::) to a unicast address.
    IpAddr un = ip("::");
    bad("from :: to a unicast address",
        ether({kOurs, kRouter, {}}, kEthIpv6,
              ipv6(un, target, 58, icmp6(un, target, 135, 0, 0, Bytes(target.b.begin(), target.b.end())),
                   {}, V6{.hop_limit = 255})));
    // Behind an extension header.
    bad("behind a hop-by-hop header",
        ether({multicastMac(dst), kRouter, {}}, kEthIpv6,
              ipv6(from, dst, 58, icmp6(from, dst, 135, 0, 0, Bytes(target.b.begin(), target.b.end())),
                   {hopByHop(1)}, V6{.hop_limit = 255})));
  }
}

}  // namespace
}  // namespace gwlb
