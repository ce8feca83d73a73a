// The nsi format (common/geneve.h; docs/wire-format.md "nsi format"):
// Google Cloud Network Security Integration's three options, byte for byte
// as documented, written by the writer and by the template the fast path
// copies (its D bit per template, its cookie in the endpoint ID's low half),
// and read back by the return path's validator.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/fast_path.h"
#include "common/geneve.h"

using namespace gwlb;

namespace {

EncapParams nsiParams(bool egress) {
  EncapParams p;
  p.src_mac = MacAddr{{2, 0, 0, 0, 0, 1}};
  p.dst_mac = MacAddr{{2, 0, 0, 0, 0, 2}};
  p.src_ip = 0xC0000201;
  p.dst_ip = 0xC000020A;
  p.udp_sport = 50000;
  p.vni = 0x123456;
  p.protocol = kEtherTypeIpv4;
  p.aws_options = true;
  p.nsi = true;
  p.nsi_egress = egress;
  p.endpoint_id = 7;
  p.profile_id = 4242;
  p.cookie = 0xC0FFEE01;
  return p;
}

// The 32 bytes of options docs/wire-format.md states.
std::vector<uint8_t> documented(uint32_t vni, bool egress, uint64_t profile, uint32_t eid, uint32_t cookie) {
  const uint32_t net = vni << 4 | (egress ? 1 : 0);
  return {0x01, 0x32, 0x01, 0x01, uint8_t(net >> 24), uint8_t(net >> 16), uint8_t(net >> 8), uint8_t(net),
          0x01, 0x32, 0x03, 0x02, uint8_t(profile >> 56), uint8_t(profile >> 48), uint8_t(profile >> 40),
          uint8_t(profile >> 32), uint8_t(profile >> 24), uint8_t(profile >> 16), uint8_t(profile >> 8),
          uint8_t(profile),
          0x01, 0x32, 0x02, 0x02, uint8_t(eid >> 24), uint8_t(eid >> 16), uint8_t(eid >> 8), uint8_t(eid),
          uint8_t(cookie >> 24), uint8_t(cookie >> 16), uint8_t(cookie >> 8), uint8_t(cookie)};
}

}  // namespace

TEST(NsiFormat, TheWriterPutsGooglesThreeOptionsAsDocumented) {
  for (bool egress : {false, true}) {
    SCOPED_TRACE(egress ? "egress" : "ingress");
    const EncapParams p = nsiParams(egress);
    ASSERT_EQ(encapHeaderLen(true), kOuterL2L3L4Len + kGeneveBaseLen + 32) << "the length of aws's options";
    std::vector<uint8_t> f(encapHeaderLen(true) + 20, 0x45);
    writeEncap(f.data(), 20, p);
    const uint8_t* g = f.data() + kOuterL2L3L4Len;
    EXPECT_EQ(g[0], 8) << "8 words of options";
    EXPECT_EQ(g[1], 0) << "no critical option";
    EXPECT_EQ(rd16(g + 2), kEtherTypeIpv4);
    EXPECT_EQ(rd32(g + 4) >> 8, 0x123456u);
    EXPECT_EQ(std::vector<uint8_t>(g + 8, g + 40), documented(0x123456, egress, 4242, 7, 0xC0FFEE01));
    // The validator reads it back.
    GeneveInfo gi;
    Counter why = Counter::kCount;
    ASSERT_EQ(parseGeneve(g, f.size() - kOuterL2L3L4Len, gi, why), GeneveStatus::kOk);
    EXPECT_TRUE(gi.has_network_id && gi.has_profile_id && gi.has_nsi_endpoint && gi.has_cookie);
    EXPECT_EQ(gi.network_id, 0x123456u);
    EXPECT_EQ(gi.nsi_egress, egress);
    EXPECT_EQ(gi.profile_id, 4242u);
    EXPECT_EQ(gi.nsi_endpoint, uint64_t(7) << 32 | 0xC0FFEE01);
    EXPECT_EQ(gi.cookie, 0xC0FFEE01u);
    EXPECT_EQ(gi.header_len, 40u);
  }
}

// What the fast path writes from the template (the cookie patched in where
// aws has its own) equals the writer's bytes, checksums included; the
// template's profile ID is 0 (a tag is written per packet).
TEST(NsiFormat, TheTemplateGivesTheWritersBytes) {
  for (bool egress : {false, true}) {
    SCOPED_TRACE(egress ? "egress" : "ingress");
    EncapParams p = nsiParams(egress);
    p.profile_id = 0;
    EncapTemplate t;
    buildEncapTemplate(t, p);
    EXPECT_TRUE(t.aws && t.nsi);
    ASSERT_EQ(t.len, encapHeaderLen(true));
    const std::vector<uint8_t> payload = {0x45, 0, 0, 20, 1, 2, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2};
    std::vector<uint8_t> a(t.len + payload.size()), b(t.len + payload.size());
    std::memcpy(a.data() + t.len, payload.data(), payload.size());
    std::memcpy(b.data() + t.len, payload.data(), payload.size());
    writeEncap(a.data(), payload.size(), p);
    applyEncap(b.data(), t, payload.size(), p.udp_sport, p.protocol, p.cookie,
               csumAdd(0, payload.data(), payload.size()));
    EXPECT_EQ(a, b);
  }
}

TEST(NsiFormat, OptionsOfOtherLengthsAreNotReadAndAnUnknownCriticalOneDrops) {
  // An endpoint ID of 4 bytes gives no cookie; a critical network ID of 8
  // bytes is not one we know: the packet is undeliverable (RFC 8926 3.5).
  std::vector<uint8_t> g = {2, 0, 0x08, 0x00, 0, 0, 0, 0, 0x01, 0x32, 0x02, 0x01, 0, 0, 0, 9};
  GeneveInfo gi;
  Counter why = Counter::kCount;
  ASSERT_EQ(parseGeneve(g.data(), g.size(), gi, why), GeneveStatus::kOk);
  EXPECT_FALSE(gi.has_cookie || gi.has_nsi_endpoint);
  g = {3, 0x40, 0x08, 0x00, 0, 0, 0, 0, 0x01, 0x32, 0x81, 0x02, 0, 0, 0, 0, 0, 0, 0, 0};
  ASSERT_EQ(parseGeneve(g.data(), g.size(), gi, why), GeneveStatus::kDrop);
  EXPECT_EQ(why, Counter::drop_geneve_unknown_critical_option);
}
