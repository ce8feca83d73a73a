// The flow table's overflow marker (docs/architecture.md "The flow table",
// R13): a bulk lookup that misses a key in its first bucket pair reads the
// second pair only while a key of that first bucket lives there. The count
// behind the marker is raised by an insert into the second pair and lowered
// when that slot is freed, so a key in its second pair stays found whatever
// else comes and goes, and the marker clears when the last such key goes.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/flow_key.h"
#include "tests/dp/dataplane/flow_table_test_access.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

using Access = dp::FlowTableTestAccess;
constexpr uint64_t kSec = 1'000'000'000ULL;

FlowKey udpKey(uint32_t i) {
  L4Tuple t;
  t.src = IpAddr::v4(0x0A000000u + i * 7919u);
  t.dst = IpAddr::v4(0x0B000001u);
  t.proto = 17;
  t.sport = uint16_t(1024 + i % 60000);
  t.dport = 53;
  return makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
}

// An entry expire() may delete: a route, an idle timeout of 10 s, last seen at `seen`.
void settle(dp::FlowTable& ft, int32_t pos, uint64_t seen) {
  dp::FlowEntry& e = ft.entry(pos);
  e.route.store(dp::packRoute(1, uint32_t(pos) + 1));
  e.last_seen.store(seen);
  e.idle_timeout.store(10 * kSec);
}

// lookupBulk()'s positions of `keys` (SSE2 copy or AVX2 copy), in calls of up to 100.
std::vector<int32_t> bulk(dp::FlowTable& ft, const std::vector<FlowKey>& keys, const std::vector<uint32_t>& hashes) {
  std::vector<int32_t> pos(keys.size());
  for (size_t at = 0; at < keys.size(); at += 100) {
    const uint32_t n = uint32_t(std::min<size_t>(100, keys.size() - at));
    const FlowKey* kp[100];
    uint32_t hint[100];
    for (uint32_t j = 0; j < n; ++j) kp[j] = &keys[at + j];
    ft.lookupBulk(kp, &hashes[at], n, &pos[at], hint);
  }
  return pos;
}

// A key stored in its second pair by hand, with no marker raised: the bulk
// lookup does not read that pair (lookup(), which reads all four buckets,
// finds it). Once an insert of the same first bucket spills into its
// second pair, the marker is up and the bulk lookup finds it too.
TEST(FlowTableOverflow, AMissWithTheMarkerClearDoesNotReadTheSecondPair) {
  Harness h;  // for the QSBR variable
  dp::FlowTable ft("dpt_spill_clear", 1024, h.qsbr(), 0);
  const FlowKey planted = udpKey(0);
  const uint32_t hash = flowHash(planted);
  const int32_t at = Access::plantInSecondPair(ft, planted, hash);
  ASSERT_GE(at, 0);
  ASSERT_EQ(ft.lookup(planted, hash), at) << "the key is there";
  EXPECT_EQ(Access::spillCount(ft, hash), 0u);
  EXPECT_EQ(bulk(ft, {planted}, {hash})[0], -1) << "the marker is clear: the second pair is not read";

  // 40 other keys filed under the same hash: the first pair's 32 slots
  // cannot take them all (and inserts leave it once it is over half full).
  uint32_t spilled = 0;
  for (uint32_t i = 1; i <= 40; ++i) {
    const int32_t pos = ft.insert(udpKey(i), hash);
    ASSERT_GE(pos, 0) << "key " << i;
    spilled += !Access::inFirstPair(ft, hash, pos);
  }
  ASSERT_GT(spilled, 0u);
  EXPECT_EQ(Access::spillCount(ft, hash), spilled);
  EXPECT_EQ(bulk(ft, {planted}, {hash})[0], at) << "the marker is up: the second pair is read";
}

// Keys spilled into their second pair stay found after every key of their
// first pair is deleted and its slot freed (the count is lowered only for
// freed slots that spilled), and the marker clears once they go too.
TEST(FlowTableOverflow, ASpilledKeyIsFoundAfterTheOthersAreRemovedAndTheMarkerClears) {
  Harness h;
  dp::FlowTable ft("dpt_spill_keep", 1024, h.qsbr(), 0);
  const uint32_t hash = flowHash(udpKey(0));
  std::vector<FlowKey> first, second;
  const uint64_t t0 = 1000 * kSec;
  for (uint32_t i = 0; i < 48; ++i) {
    const FlowKey k = udpKey(i);
    const int32_t pos = ft.insert(k, hash);
    ASSERT_GE(pos, 0) << "key " << i;
    const bool in_first = Access::inFirstPair(ft, hash, pos);
    // The first pair's keys were last seen long ago; the spilled ones now.
    settle(ft, pos, in_first ? t0 - 100 * kSec : t0);
    (in_first ? first : second).push_back(k);
  }
  ASSERT_FALSE(second.empty());
  ASSERT_EQ(Access::spillCount(ft, hash), second.size());

  EXPECT_EQ(ft.expire(t0), first.size()) << "every key of the first pair goes";
  h.quiescent();
  EXPECT_EQ(ft.reclaim(), first.size());
  EXPECT_EQ(Access::spillCount(ft, hash), second.size()) << "freeing first-pair slots keeps the count";
  const std::vector<uint32_t> hs(second.size(), hash);
  for (bool avx2 : {false, true}) {
    const bool used = Access::useAvx2(ft, avx2);
    if (avx2 && !used) continue;
    SCOPED_TRACE(used ? "AVX2 copy" : "SSE2 copy");
    const std::vector<int32_t> pos = bulk(ft, second, hs);
    for (size_t i = 0; i < second.size(); ++i) {
      ASSERT_GE(pos[i], 0) << "spilled key " << i << " lost";
      EXPECT_EQ(pos[i], ft.lookup(second[i], hash));
    }
    for (const FlowKey& k : first) EXPECT_EQ(bulk(ft, {k}, {hash})[0], -1);
  }

  EXPECT_EQ(ft.expire(t0 + 100 * kSec), second.size());
  h.quiescent();
  EXPECT_EQ(ft.reclaim(), second.size());
  EXPECT_EQ(Access::spillCount(ft, hash), 0u) << "the last spilled key went: the marker clears";
  EXPECT_EQ(Access::spillTotal(ft), 0u);
  EXPECT_EQ(ft.count(), 0u);
}

// A table kept at its capacity through rounds of expiry and new keys (real
// hashes): the bulk lookup (both copies) gives lookup()'s answer for every
// key, present or gone, and once every key is gone every marker is clear.
TEST(FlowTableOverflow, ATableAtCapacityFindsEveryKeyThroughChurn) {
  Harness h;
  dp::FlowTable ft("dpt_spill_churn", 4096, h.qsbr(), 0);
  std::vector<FlowKey> keys;
  std::vector<uint32_t> hashes;
  uint32_t next = 0;
  uint64_t now = 1000 * kSec;
  for (int round = 0; round < 4; ++round) {
    // Fill to capacity; every key's last packet at `now` minus its index's share.
    while (ft.count() < ft.capacity()) {
      keys.push_back(udpKey(next));
      hashes.push_back(flowHash(keys.back()));
      const int32_t pos = ft.insert(keys.back(), hashes.back());
      ASSERT_GE(pos, 0) << "round " << round << " key " << next;
      settle(ft, pos, now - (next * 2654435761u % 20) * kSec);
      ++next;
    }
    for (bool avx2 : {false, true}) {
      const bool used = Access::useAvx2(ft, avx2);
      if (avx2 && !used) continue;
      SCOPED_TRACE(used ? "AVX2 copy" : "SSE2 copy");
      const std::vector<int32_t> pos = bulk(ft, keys, hashes);
      size_t found = 0;
      for (size_t i = 0; i < keys.size(); ++i) {
        ASSERT_EQ(pos[i], ft.lookup(keys[i], hashes[i])) << "round " << round << " key " << i;
        found += pos[i] >= 0;
      }
      EXPECT_EQ(found, ft.capacity()) << "round " << round;
    }
    ASSERT_GT(Access::spillTotal(ft), 0u) << "a full table spills keys into second pairs";
    // About half idle past 10 s go (and the exhaustion policy's share).
    now += 10 * kSec;
    ASSERT_GT(ft.expire(now), 0u);
    h.quiescent();
    ft.reclaim();
  }
  ft.expire(now + 100 * kSec);
  h.quiescent();
  ft.reclaim();
  EXPECT_EQ(ft.count(), 0u);
  EXPECT_EQ(Access::spillTotal(ft), 0u) << "no key left: no marker up";
}

}  // namespace
}  // namespace gwlb::dptest
