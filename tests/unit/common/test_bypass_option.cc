// gwlb's bypass option (common/geneve.h): how the return path's validator
// reads it in both formats, under the configured class, and how an
// appliance's side adds it (addBypassOption).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/geneve.h"
#include "common/packet_parser.h"

using namespace gwlb;

namespace {

std::vector<uint8_t> opt(uint16_t cls, uint8_t type, std::vector<uint8_t> data) {
  std::vector<uint8_t> o = {uint8_t(cls >> 8), uint8_t(cls), type, uint8_t(data.size() / 4)};
  o.insert(o.end(), data.begin(), data.end());
  return o;
}

std::vector<uint8_t> geneve(uint16_t proto, const std::vector<uint8_t>& opts, bool critical = false) {
  std::vector<uint8_t> g = {uint8_t(opts.size() / 4), uint8_t(critical ? 0x40 : 0), uint8_t(proto >> 8),
                            uint8_t(proto), 0x00, 0x00, 0x4D, 0x00};
  g.insert(g.end(), opts.begin(), opts.end());
  for (int i = 0; i < 40; ++i) g.push_back(uint8_t(0x45 + i));  // the inner bytes (not parsed here)
  return g;
}

std::vector<uint8_t> awsOpts(uint32_t cookie) {
  std::vector<uint8_t> o = opt(kAwsOptionClass, kAwsOptEndpointId, std::vector<uint8_t>(8, 1));
  auto a = opt(kAwsOptionClass, kAwsOptAttachmentId, std::vector<uint8_t>(8, 2));
  auto c = opt(kAwsOptionClass, kAwsOptFlowCookie,
               {uint8_t(cookie >> 24), uint8_t(cookie >> 16), uint8_t(cookie >> 8), uint8_t(cookie)});
  o.insert(o.end(), a.begin(), a.end());
  o.insert(o.end(), c.begin(), c.end());
  return o;
}

GeneveInfo parse(const std::vector<uint8_t>& g, uint16_t cls = kGwlbOptionClassDefault,
                 GeneveStatus want = GeneveStatus::kOk) {
  GeneveInfo gi;
  Counter why = Counter::kCount;
  EXPECT_EQ(parseGeneve(g.data(), g.size(), gi, why, cls), want);
  return gi;
}

}  // namespace

TEST(BypassOption, ReadInAwsFormatBesideAwsOptions) {
  auto o = awsOpts(0xC0FFEE01);
  auto b = opt(0xFF01, kGwlbOptBypass, {0, 0, 0x0E, 0x10});  // 3600 s
  o.insert(o.end(), b.begin(), b.end());
  GeneveInfo gi = parse(geneve(0x0800, o));
  EXPECT_TRUE(gi.has_cookie);
  EXPECT_EQ(gi.cookie, 0xC0FFEE01u);
  EXPECT_TRUE(gi.has_bypass);
  EXPECT_FALSE(gi.bypass_malformed);
  EXPECT_EQ(gi.bypass_seconds, 3600u);
  EXPECT_EQ(gi.header_len, 8u + 32 + 8);
}

TEST(BypassOption, ReadInEthernetFormatAndForTheFlowsLife) {
  GeneveInfo gi = parse(geneve(0x6558, opt(0xFF01, kGwlbOptBypass, {0, 0, 0, 0})));
  EXPECT_TRUE(gi.has_bypass);
  EXPECT_EQ(gi.bypass_seconds, 0u);
  EXPECT_FALSE(gi.has_cookie);
}

TEST(BypassOption, OnlyUnderTheConfiguredClass) {
  auto g = geneve(0x6558, opt(0xFF01, kGwlbOptBypass, {0, 0, 0, 9}));
  EXPECT_FALSE(parse(g, 0xFF42).has_bypass);  // another class: an unknown non-critical option
  auto g2 = geneve(0x6558, opt(0xFF42, kGwlbOptBypass, {0, 0, 0, 9}));
  EXPECT_EQ(parse(g2, 0xFF42).bypass_seconds, 9u);
  // Critical under the class gwlb reads: known, so delivered; under another: dropped.
  auto g3 = geneve(0x6558, opt(0xFF01, 0x80 | kGwlbOptBypass, {0, 0, 0, 9}), true);
  EXPECT_TRUE(parse(g3).has_bypass);
  parse(g3, 0xFF42, GeneveStatus::kDrop);
}

TEST(BypassOption, AnotherLengthIsMalformedButThePacketGoesOn) {
  GeneveInfo gi = parse(geneve(0x6558, opt(0xFF01, kGwlbOptBypass, std::vector<uint8_t>(8, 0xFF))));
  EXPECT_TRUE(gi.has_bypass);
  EXPECT_TRUE(gi.bypass_malformed);
  EXPECT_EQ(gi.bypass_seconds, 0u);
  gi = parse(geneve(0x6558, opt(0xFF01, kGwlbOptBypass, {})));
  EXPECT_TRUE(gi.bypass_malformed);
  // Other types of the class are not a request (the mirror and tag types go
  // the other way, gateway to tool and appliance).
  EXPECT_FALSE(parse(geneve(0x6558, opt(0xFF01, kGwlbOptTag, {0, 0, 0, 1}))).has_bypass);
}

TEST(BypassOption, AddedByAnApplianceParsesWithTheSameInnerBytes) {
  auto g = geneve(0x0800, awsOpts(7));
  std::vector<uint8_t> out(g.size() + 8);
  ASSERT_EQ(addBypassOption(g.data(), g.size(), out.data(), out.size(), 0xFF01, 120), g.size() + 8);
  GeneveInfo gi = parse(out);
  EXPECT_TRUE(gi.has_bypass);
  EXPECT_EQ(gi.bypass_seconds, 120u);
  EXPECT_EQ(gi.cookie, 7u);
  EXPECT_EQ(std::memcmp(out.data() + gi.header_len, g.data() + 8 + 32, g.size() - 40), 0);
  // No room: the caller's buffer, or the 252-byte option area.
  EXPECT_EQ(addBypassOption(g.data(), g.size(), out.data(), g.size() + 7, 0xFF01, 1), 0u);
  auto full = geneve(0x6558, opt(0x0200, 1, std::vector<uint8_t>(120, 0)));
  auto more = opt(0x0200, 2, std::vector<uint8_t>(124, 0));
  full.insert(full.begin() + 8 + 124, more.begin(), more.end());
  full[0] = uint8_t((124 + 128) / 4);
  std::vector<uint8_t> o2(full.size() + 8);
  EXPECT_EQ(addBypassOption(full.data(), full.size(), o2.data(), o2.size(), 0xFF01, 1), 0u);
  EXPECT_EQ(addBypassOption(g.data(), 7, out.data(), out.size(), 0xFF01, 1), 0u);
}
