// IPv6 neighbor discovery codec (common/ndp.h): solicitations built by the
// independent test packet builder (tests/dp/packet_builder.h) are parsed and
// validated per RFC 4861 section 7.1.1, and the advertisement that answers
// them is checked field by field with the builder's own checksum. The other
// way round, for IPv6 appliances: the solicitations gwlbd sends to resolve
// one, field by field, and the appliances' advertisements parsed and
// validated per section 7.1.2.
#include <gtest/gtest.h>

#include <optional>
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

const MacAddr kAppliance = mac("02:00:00:00:0b:0b");

// An advertisement from `src` for `target` with flags (R 0x80, S 0x40, O
// 0x20) and, when `lla`, a target link-layer address option.
Bytes advertisement(const MacAddr& eth_dst, const IpAddr& src, const IpAddr& dst, const IpAddr& target,
                    uint8_t flags, std::optional<MacAddr> lla, uint8_t hop_limit = 255) {
  Bytes body(target.b.begin(), target.b.end());
  if (lla) {
    body.insert(body.end(), {2, 1});
    body.insert(body.end(), lla->b.begin(), lla->b.end());
  }
  return ether({eth_dst, kAppliance, {}}, kEthIpv6,
               ipv6(src, dst, 58, icmp6(src, dst, 136, 0, uint32_t(flags) << 24, body), {},
                    V6{.hop_limit = hop_limit}));
}

TEST(Ndp, SolicitationsForAnApplianceAreMulticastThenUnicastProbes) {
  IpAddr us = ip("2001:db8:ff::1"), app = ip("2001:db8:ff::a");
  Bytes f(86 + 16, 0xEE);
  ASSERT_EQ(makeNeighborSolicitation(f.data(), f.size(), kOurs, us.b, app.b, nullptr), 86u);
  IpAddr sn = solicitedNode(app);
  EXPECT_EQ(slice(f, 0, 6), Bytes({0x33, 0x33, 0xff, 0, 0, 0x0a})) << "the solicited-node group's MAC";
  EXPECT_EQ(slice(f, 6, 6), Bytes(kOurs.b.begin(), kOurs.b.end()));
  EXPECT_EQ(get16(f, 12), kEthIpv6);
  EXPECT_EQ(f[14], 0x60);
  EXPECT_EQ(get16(f, 18), 32);
  EXPECT_EQ(f[20], 58);
  EXPECT_EQ(f[21], 255) << "hop limit";
  EXPECT_EQ(slice(f, 22, 16), Bytes(us.b.begin(), us.b.end())) << "from node.underlay_ipv6";
  EXPECT_EQ(slice(f, 38, 16), Bytes(sn.b.begin(), sn.b.end())) << "to ff02::1:ff00:a";
  const size_t m = 54;
  EXPECT_EQ(f[m], 135);
  EXPECT_EQ(f[m + 1], 0);
  EXPECT_EQ(get32(f, m + 4), 0u) << "reserved";
  EXPECT_EQ(slice(f, m + 8, 16), Bytes(app.b.begin(), app.b.end()));
  EXPECT_EQ(f[m + 24], 1) << "source link-layer address option";
  EXPECT_EQ(f[m + 25], 1);
  EXPECT_EQ(slice(f, m + 26, 6), Bytes(kOurs.b.begin(), kOurs.b.end()));
  EXPECT_TRUE(checksumOk(f.data() + m, 32, pseudoSum(us, sn, 58, 32)));
  EXPECT_EQ(f[86], 0xEE) << "nothing past the frame";

  // A probe of a stale entry: to the MAC we have, to the appliance itself.
  ASSERT_EQ(makeNeighborSolicitation(f.data(), f.size(), kOurs, us.b, app.b, &kAppliance), 86u);
  EXPECT_EQ(slice(f, 0, 6), Bytes(kAppliance.b.begin(), kAppliance.b.end()));
  EXPECT_EQ(slice(f, 38, 16), Bytes(app.b.begin(), app.b.end()));
  EXPECT_TRUE(checksumOk(f.data() + m, 32, pseudoSum(us, app, 58, 32)));
  EXPECT_EQ(makeNeighborSolicitation(f.data(), 85, kOurs, us.b, app.b, nullptr), 0u) << "room too small";
}

TEST(Ndp, AnAppliancesAdvertisementsParse) {
  IpAddr us = ip("2001:db8:ff::1"), app = ip("2001:db8:ff::a"), all = ip("ff02::1");
  NeighborAdvertisement na;
  Bytes solicited = advertisement(kOurs, app, us, app, 0x60, kAppliance);
  ASSERT_TRUE(parseNeighborAdvertisement(solicited.data(), solicited.size(), na));
  EXPECT_EQ(na.target, app.b);
  EXPECT_EQ(na.src, app.b);
  EXPECT_EQ(na.dst, us.b);
  EXPECT_TRUE(na.solicited);
  EXPECT_TRUE(na.override_flag);
  EXPECT_FALSE(na.router);
  ASSERT_TRUE(na.has_target_lladdr);
  EXPECT_EQ(na.target_lladdr, kAppliance);
  EXPECT_EQ(na.eth_src, kAppliance);
  EXPECT_EQ(na.l2_len, 14u);
  NeighborSolicitation ns;
  EXPECT_FALSE(parseNeighborSolicitation(solicited.data(), solicited.size(), ns)) << "not a solicitation";

  // Unsolicited, to all nodes (a new MAC announced): Override, not Solicited.
  Bytes announce = advertisement(multicastMac(all), app, all, app, 0x20, kAppliance);
  ASSERT_TRUE(parseNeighborAdvertisement(announce.data(), announce.size(), na));
  EXPECT_FALSE(na.solicited);
  EXPECT_TRUE(na.override_flag);
  // No option: valid, the MAC is not told.
  Bytes bare = advertisement(kOurs, app, us, app, 0x40, std::nullopt);
  ASSERT_TRUE(parseNeighborAdvertisement(bare.data(), bare.size(), na));
  EXPECT_FALSE(na.has_target_lladdr);
}

// RFC 4861 section 7.1.2: what a node must silently discard.
TEST(Ndp, InvalidAdvertisementsAreRejected) {
  IpAddr us = ip("2001:db8:ff::1"), app = ip("2001:db8:ff::a"), all = ip("ff02::1");
  const Bytes good = advertisement(kOurs, app, us, app, 0x60, kAppliance);
  NeighborAdvertisement na;
  for (size_t len = 0; len < good.size(); ++len)
    EXPECT_FALSE(parseNeighborAdvertisement(good.data(), len, na)) << "cut to " << len;
  auto bad = [&](const char* what, const Bytes& f) {
    EXPECT_FALSE(parseNeighborAdvertisement(f.data(), f.size(), na)) << what;
  };
  const size_t m = 54;
  bad("hop limit 64 (forwarded by a router)", advertisement(kOurs, app, us, app, 0x60, kAppliance, 64));
  Bytes f = good;
  f[m + 1] = 1;
  bad("code 1", f);
  f = good;
  f[m + 3] ^= 1;
  bad("bad checksum", f);
  bad("multicast target", advertisement(kOurs, app, us, all, 0x60, kAppliance));
  bad("Solicited to a multicast address", advertisement(multicastMac(all), app, all, app, 0x60, kAppliance));
  {
    Bytes body(app.b.begin(), app.b.end());
    body.insert(body.end(), {2, 0, 0, 0, 0, 0, 0, 0});
    bad("option of length 0", ether({kOurs, kAppliance, {}}, kEthIpv6,
                                    ipv6(app, us, 58, icmp6(app, us, 136, 0, 0x60000000, body), {},
                                         V6{.hop_limit = 255})));
    Bytes body2(app.b.begin(), app.b.end());
    body2.insert(body2.end(), {2, 2, 0, 0, 0, 0, 0, 0});
    bad("option past the message", ether({kOurs, kAppliance, {}}, kEthIpv6,
                                         ipv6(app, us, 58, icmp6(app, us, 136, 0, 0x60000000, body2), {},
                                              V6{.hop_limit = 255})));
    bad("shorter than 24 bytes", ether({kOurs, kAppliance, {}}, kEthIpv6,
                                       ipv6(app, us, 58, icmp6(app, us, 136, 0, 0x60000000, Bytes(8, 0)), {},
                                            V6{.hop_limit = 255})));
  }
}

}  // namespace
}  // namespace gwlb
