// Flow lifetime: expire() deletes entries idle past their protocol's timeout
// (TCP 350 s, others 120 s, fragment entries 30 s) at the `now` it is given;
// reclaim() frees them only after every reader passed a quiescent point; a
// packet after expiry creates a new flow (new cookie), and the old cookie no
// longer returns. Plus the table's own limits.
#include <gtest/gtest.h>
#include <rte_rcu_qsbr.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "dataplane/eal.h"
#include "dataplane/neighbour_table.h"
#include "tests/dp/dataplane/flow_table_test_access.h"
#include "tests/dp/dataplane/neighbour_table_test_access.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;
// Entries keep times in ticks of 2^20 ns: an entry expires no earlier than its
// timeout and at most two ticks (2.1 ms) after it.
constexpr uint64_t kLate = 2 * dp::kTickNs;

// Keys present in the table. (FlowTable::count() also covers deleted keys
// awaiting reclaim().)
size_t liveKeys(const dp::FlowTable& ft) {
  size_t n = 0;
  ft.forEach([&](const FlowKey&, int32_t, const dp::FlowEntry&) { ++n; });
  return n;
}

Frame tcpFlow() {
  const Net& n = net();
  return {n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, 45000, 80)),
          kPortA};
}
Frame udpFlow(uint16_t sport = 45001) {
  const Net& n = net();
  return {n.fromA(), kEthIpv4,
          ipv4(n.client4, n.server4, 17, udp(n.client4, n.server4, sport, 53, pattern(20))),
          kPortA};
}

TEST(FlowLifetime, ExpireUsesTheProtocolIdleTimeoutThenReclaimAfterQuiescence) {
  Harness h;
  const uint64_t t0 = h.now;
  Result tcp0 = h.send(tcpFlow());
  Result udp0 = h.send(udpFlow());
  ASSERT_EQ(tcp0.verdict, Verdict::kAppliance);
  ASSERT_EQ(udp0.verdict, Verdict::kAppliance);
  dp::FlowTable& ft = h.flows();
  EXPECT_EQ(ft.count(), 2u);

  EXPECT_EQ(ft.expire(t0 + 120 * kSec - 1), 0u) << "UDP still inside 120 s";
  EXPECT_EQ(ft.expire(t0 + 120 * kSec + kLate), 1u) << "UDP idle for 120 s";
  EXPECT_EQ(liveKeys(ft), 1u);
  EXPECT_EQ(ft.count(), 2u) << "its slot is held until reclaim()";
  EXPECT_EQ(ft.pendingReclaim(), 1u);
  EXPECT_EQ(ft.reclaim(), 0u) << "freed before the reader's quiescent point";
  EXPECT_EQ(ft.pendingReclaim(), 1u);
  h.quiescent();
  EXPECT_EQ(ft.reclaim(), 1u);
  EXPECT_EQ(ft.pendingReclaim(), 0u);
  EXPECT_EQ(ft.count(), 1u);

  // The expired flow no longer returns; the live one does.
  h.now = t0 + 121 * kSec;
  Result r = h.send(reflect(udp0.bytes), kUnderlayPort);
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_return_no_flow);
  EXPECT_EQ(h.send(reflect(tcp0.bytes), kUnderlayPort).verdict, Verdict::kRouter);

  // TCP: 350 s after its last packet (the return at t0 + 121 s).
  EXPECT_EQ(ft.expire(t0 + 121 * kSec + 350 * kSec - 1), 0u);
  EXPECT_EQ(ft.expire(t0 + 121 * kSec + 350 * kSec + kLate), 1u);
  EXPECT_EQ(liveKeys(ft), 0u);
  h.quiescent();
  EXPECT_EQ(ft.reclaim(), 1u);
  EXPECT_EQ(ft.count(), 0u);

  // A packet after expiry: a new flow, on the same appliance and with the
  // same cookie: the cookie is a function of the flow and its appliance only,
  // so that every gateway of a fleet computes it alike (docs/fleet.md), and a
  // gateway that never saw the expiry still agrees with this one.
  h.now = t0 + 500 * kSec;
  Result udp1 = h.send(udpFlow());
  ASSERT_EQ(udp1.verdict, Verdict::kAppliance);
  EXPECT_EQ(h.get(Counter::flows_created), 3u);
  Encap e0 = checkEncap(h, udp0.bytes, udpFlow().l3, kEthIpv4);
  Encap e1 = checkEncap(h, udp1.bytes, udpFlow().l3, kEthIpv4);
  EXPECT_EQ(e1.appliance, e0.appliance) << "Maglev picks the same appliance again";
  EXPECT_EQ(e1.cookie, e0.cookie) << "the flow's cookie on that appliance";
  EXPECT_EQ(h.send(reflect(udp1.bytes), kUnderlayPort).verdict, Verdict::kRouter);
}

TEST(FlowLifetime, PacketsAndReturnsKeepAFlowAlive) {
  Harness h;
  const uint64_t t0 = h.now;
  Result out = h.send(udpFlow());
  ASSERT_EQ(out.verdict, Verdict::kAppliance);
  h.now = t0 + 100 * kSec;
  ASSERT_EQ(h.send(reflect(out.bytes), kUnderlayPort).verdict, Verdict::kRouter);
  EXPECT_EQ(h.flows().expire(t0 + 219 * kSec), 0u) << "the return at t0+100 s refreshed it";
  h.now = t0 + 200 * kSec;
  ASSERT_EQ(h.send(udpFlow()).verdict, Verdict::kAppliance);
  EXPECT_EQ(h.flows().expire(t0 + 319 * kSec), 0u) << "the packet at t0+200 s refreshed it";
  EXPECT_EQ(h.flows().expire(t0 + 320 * kSec + kLate), 1u);
  EXPECT_EQ(h.get(Counter::flows_created), 1u);
}

TEST(FlowLifetime, FragmentEntriesLiveThirtySeconds) {
  Harness h;
  const Net& n = net();
  const uint64_t t0 = h.now;
  auto frags = ipv4Fragments(n.client4, n.server4, 17,
                             udp(n.client4, n.server4, 45002, 53, pattern(600)), 304, 0x4444);
  ASSERT_EQ(h.send(Frame{n.fromA(), kEthIpv4, frags[0], kPortA}).verdict, Verdict::kAppliance);
  EXPECT_EQ(liveKeys(h.flows()), 2u) << "the flow and its datagram's fragment entry";
  EXPECT_EQ(h.get(Counter::fragment_entries_created), 1u);
  EXPECT_EQ(h.flows().expire(t0 + 30 * kSec - 1), 0u);
  EXPECT_EQ(h.flows().expire(t0 + 30 * kSec + kLate), 1u);
  h.now = t0 + 31 * kSec;
  Result r = h.send(Frame{n.fromA(), kEthIpv4, frags[1], kPortA});
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_fragment_unknown_flow);
}

// The table takes exactly `capacity` keys (its buckets have 10 % more slots,
// so none refuses a key first), each at its own position below slots().
TEST(FlowTableLimits, EveryPositionInsertReturnsHasAnEntry) {
  Harness h;  // for the QSBR variable
  dp::FlowTable ft("dpt_positions", 1024, h.qsbr(), 0);
  std::set<int32_t> seen;
  uint32_t inserted = 0;
  for (uint32_t i = 0; i < 4096; ++i) {
    L4Tuple t;
    t.src = IpAddr::v4(0x0A000000u + i);
    t.dst = IpAddr::v4(0x0B000000u);
    t.proto = 6;
    t.sport = uint16_t(i);
    t.dport = 80;
    FlowKey k = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
    int32_t pos = ft.insert(k, flowHash(k));
    if (pos < 0) break;
    ++inserted;
    ASSERT_LT(size_t(pos), ft.slots()) << "position " << pos << " of key " << i;
    EXPECT_TRUE(seen.insert(pos).second) << "position handed out twice";
    ft.entry(pos).route.store(dp::packRoute(uint16_t(i % 3), i + 1));
    EXPECT_EQ(ft.lookup(k, flowHash(k)), pos);
  }
  EXPECT_EQ(inserted, ft.capacity());
  EXPECT_EQ(ft.count(), ft.capacity());
  EXPECT_EQ(liveKeys(ft), inserted);
}

// Tables of 2 to 9 buckets, where a key's second bucket pair often overlaps
// its first (the same bucket, or a neighbour, across the wrap too): each
// insert, hinted by a bulk lookup's miss or not, gives its key one position
// (an insert never takes its own slot for a twin, nor loses to it), a key
// inserted again keeps it, and the table takes exactly `capacity` keys.
TEST(FlowTableLimits, SmallTablesWhoseBucketPairsOverlapPlaceEveryKeyOnce) {
  Harness h;
  for (uint32_t cap = 1; cap <= 110; cap += 3) {
    dp::FlowTable ft("dpt_overlap", cap, h.qsbr(), 0);
    std::set<int32_t> seen;
    uint32_t inserted = 0;
    for (uint32_t i = 0; i < 4 * cap + 8; ++i) {
      L4Tuple t;
      t.src = IpAddr::v4(0x0A000000u + i * 7919u);
      t.dst = IpAddr::v4(0x0B000000u);
      t.proto = 17;
      t.sport = uint16_t(i);
      t.dport = 53;
      const FlowKey k = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
      const uint32_t hash = flowHash(k);
      const FlowKey* kp[1] = {&k};
      int32_t pos[1];
      uint32_t hint[1];
      ASSERT_EQ(ft.lookupBulk(kp, &hash, 1, pos, hint), 1u) << "capacity " << cap << " key " << i;
      const int32_t at = ft.insert(k, hash, i % 2 ? hint[0] : dp::FlowTable::kNoHint);
      if (inserted == cap) {
        EXPECT_EQ(at, dp::FlowTable::kFull) << "capacity " << cap << " key " << i;
        continue;
      }
      ASSERT_GE(at, 0) << "capacity " << cap << " key " << i;
      ++inserted;
      EXPECT_TRUE(seen.insert(at).second) << "capacity " << cap << ": position handed out twice";
      EXPECT_EQ(ft.insert(k, hash), at) << "capacity " << cap << ": the key inserted again";
      EXPECT_EQ(ft.lookup(k, hash), at) << "capacity " << cap << " key " << i;
    }
    EXPECT_EQ(inserted, cap);
    EXPECT_EQ(ft.count(), cap);
    EXPECT_EQ(liveKeys(ft), cap);
    EXPECT_EQ(ft.insertsAbandoned(), 0u) << "capacity " << cap;
  }
}

// The control thread's batch insert (a warm start's records) gives every key
// the position insertFromControl() would: a key already there keeps its
// position, a key repeated in the batch gets one position, each new key its
// own, and past capacity kFull; lookups then find each key where it was put.
TEST(FlowTableBulk, TheControlThreadsBatchInsertPlacesEveryKeyAsOneInsertWould) {
  Harness h;  // for the QSBR variable
  dp::FlowTable ft("dpt_bulk_insert", 1024, h.qsbr(), 0);
  auto key = [](uint32_t i) {
    L4Tuple t;
    t.src = IpAddr::v4(0x0A000000u + i);
    t.dst = IpAddr::v4(0x0B000000u);
    t.proto = 17;
    t.sport = uint16_t(1000 + i);
    t.dport = 53;
    return makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
  };
  // 100 keys present before, by one insert each.
  std::vector<int32_t> before;
  for (uint32_t i = 0; i < 100; ++i) before.push_back(ft.insertFromControl(key(i), flowHash(key(i))));
  // A batch of 1,200 (more than kLookupBulkMax, and than capacity): keys
  // 50..1249, key 60 twice more, in stages' middles.
  std::vector<FlowKey> ks;
  for (uint32_t i = 50; i < 1250; ++i) ks.push_back(key(i));
  ks.insert(ks.begin() + 70, key(60));
  ks.insert(ks.begin() + 700, key(60));
  std::vector<const FlowKey*> kp;
  std::vector<uint32_t> hs;
  for (const FlowKey& k : ks) kp.push_back(&k), hs.push_back(flowHash(k));
  std::vector<int32_t> pos(ks.size(), 7777);
  ft.insertBulkFromControl(kp.data(), hs.data(), uint32_t(ks.size()), pos.data());
  std::set<int32_t> placed;
  size_t full = 0;
  for (size_t i = 0; i < ks.size(); ++i) {
    if (pos[i] == dp::FlowTable::kFull) {
      ++full;
      EXPECT_LT(ft.lookup(ks[i], hs[i]), 0) << "refused, yet present: batch index " << i;
      continue;
    }
    ASSERT_GE(pos[i], 0) << "batch index " << i;
    EXPECT_EQ(ft.lookup(ks[i], hs[i]), pos[i]) << "batch index " << i;
    placed.insert(pos[i]);
  }
  for (uint32_t i = 50; i < 100; ++i)
    EXPECT_EQ(pos[i - 50 + (i - 50 >= 70 ? 1 : 0)], before[i]) << "key " << i << " kept its position";
  EXPECT_EQ(pos[70], pos[60 - 50]) << "a repeated key: the position it got first";
  EXPECT_EQ(pos[700], pos[60 - 50]);
  EXPECT_EQ(ft.count(), ft.capacity()) << "the table filled to its capacity";
  EXPECT_EQ(liveKeys(ft), ft.capacity());
  EXPECT_EQ(placed.size() + 50, ft.capacity()) << "keys 0..49 were placed before the batch";
  EXPECT_EQ(full, 1250 - ft.capacity()) << "every key past capacity is refused";
  EXPECT_EQ(ft.insertsAbandoned(), 0u);
}

// Inserts keep most keys in their first bucket pair (the less loaded of its
// two buckets while that is at most half full), where a lookup reads only
// two tag lines: at a full table (capacity 4,096) over 80 % of the keys are
// there (the least loaded of all four buckets left 77 % there), and the
// table still takes every key up to its capacity.
TEST(FlowTableLimits, MostKeysAreInTheirFirstBucketPair) {
  Harness h;  // for the QSBR variable
  dp::FlowTable ft("dpt_first_pair", 4096, h.qsbr(), 0);
  const uint64_t nbuckets = ft.slots() / 2 / dp::FlowTable::kBucketSlots;
  uint32_t inserted = 0, in_first = 0;
  for (uint32_t i = 0; i < 8192; ++i) {
    L4Tuple t;
    t.src = IpAddr::v4(0x0A000000u + i * 7919u);
    t.dst = IpAddr::v4(0x0B000001u);
    t.proto = 17;
    t.sport = uint16_t(1024 + i);
    t.dport = 53;
    FlowKey k = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
    const uint32_t hash = flowHash(k);
    int32_t pos = ft.insert(k, hash);
    if (pos < 0) break;
    ++inserted;
    ASSERT_LT(size_t(pos), ft.slots() / 2) << "an IPv4 key in a compact slot";
    const uint64_t b = uint64_t(pos) / dp::FlowTable::kBucketSlots;
    const uint64_t b1 = (uint64_t(hash) * nbuckets) >> 32;
    in_first += b == b1 || b == (b1 + 1 == nbuckets ? 0 : b1 + 1);
  }
  EXPECT_EQ(inserted, ft.capacity());
  EXPECT_GT(in_first * 100, inserted * 80u) << in_first << " of " << inserted << " in the first pair";
}

// lookupBulk() is compiled twice (SSE2 for every CPU, AVX2 where the CPU
// has it, chosen at construction): both copies give lookup()'s answer for
// every key, also where a lookup is not simple: many keys sharing one hash
// (one tag: the first match of a pair is another key's), a pair that wraps
// from the last bucket to bucket 0, keys pushed into their second pair, wide
// (IPv6) keys, absent keys of each such hash, and calls of more keys than
// one pass takes (kLookupBulkMax). A hit never comes with a hint; a miss's
// hint is a compact slot or none.
TEST(FlowTableBulk, BothCompiledCopiesGiveLookupsAnswer) {
  Harness h;  // for the QSBR variable
  dp::FlowTable ft("dpt_bulk_copies", 4096, h.qsbr(), 0);
  auto key = [](uint32_t i, bool v6) {
    L4Tuple t;
    if (v6) {
      uint8_t a[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,
                       uint8_t(i >> 24), uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)};
      uint8_t b[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
      t.src = IpAddr::v6(a);
      t.dst = IpAddr::v6(b);
    } else {
      t.src = IpAddr::v4(0x0A000000u + i);
      t.dst = IpAddr::v4(0x0B000001u);
    }
    t.proto = 17;
    t.sport = uint16_t(1024 + i % 50000);
    t.dport = 53;
    return makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
  };
  // The hash a key is filed under (any hash works: the table never derives one).
  // 0xFFFFFFF0: the last bucket, its pair wrapping; 0x12345678: one more
  // crowded hash; 40 keys each, over a pair's 32 slots. Then keys of their own hashes.
  std::vector<FlowKey> keys;
  std::vector<uint32_t> hashes;
  std::vector<bool> present;
  for (uint32_t i = 0; i < 3000; ++i) {
    const bool v6 = i % 10 == 9;
    keys.push_back(key(i, v6));
    hashes.push_back(i < 60 ? 0xFFFFFFF0u : i < 120 ? 0x12345678u : flowHash(keys.back()));
    present.push_back(i % 3 != 2);  // a third are never inserted
  }
  uint32_t inserted = 0;
  for (size_t i = 0; i < keys.size(); ++i)
    if (present[i]) {
      ASSERT_GE(ft.insert(keys[i], hashes[i]), 0) << "key " << i;
      ++inserted;
    }
  ASSERT_EQ(ft.count(), inserted);
  for (bool avx2 : {false, true}) {
    const bool used = dp::FlowTableTestAccess::useAvx2(ft, avx2);
    if (avx2 && !used) GTEST_LOG_(INFO) << "no AVX2 on this CPU: its copy is not tested";
    SCOPED_TRACE(used ? "AVX2 copy" : "SSE2 copy");
    for (size_t at = 0; at < keys.size(); at += 100) {  // 100 keys a call: two passes of kLookupBulkMax
      const uint32_t n = uint32_t(std::min<size_t>(100, keys.size() - at));
      const FlowKey* kp[100];
      int32_t pos[100];
      uint32_t hint[100];
      for (uint32_t j = 0; j < n; ++j) kp[j] = &keys[at + j];
      const uint32_t misses = ft.lookupBulk(kp, &hashes[at], n, pos, hint);
      ASSERT_EQ(misses, uint32_t(std::count_if(pos, pos + n, [](int32_t p) { return p < 0; })))
          << "the misses lookupBulk counts (pipeline stage 2 skips its Maglev prefetch at 0)";
      for (uint32_t j = 0; j < n; ++j) {
        const size_t i = at + j;
        ASSERT_EQ(pos[j], ft.lookup(keys[i], hashes[i])) << "key " << i;
        ASSERT_EQ(pos[j] >= 0, bool(present[i])) << "key " << i;
        if (pos[j] >= 0) ASSERT_EQ(hint[j], dp::FlowTable::kNoHint) << "key " << i;
        else ASSERT_TRUE(hint[j] == dp::FlowTable::kNoHint || hint[j] < ft.slots() / 2) << "key " << i;
      }
      ft.lookupBulk(kp, &hashes[at], n, pos);  // without hints: the same positions
      for (uint32_t j = 0; j < n; ++j) ASSERT_EQ(pos[j], ft.lookup(keys[at + j], hashes[at + j]));
    }
  }
}

// An inserter stalled right after claiming a slot for a key with the same
// tag makes an insert give up after its bounded retries (R10). The table is
// not full: that is counted apart (before, as drop_flow_table_full, which
// sent operators to raise flow_table_size), and the next packet, once the
// stalled claim is gone, gets its flow.
TEST(FlowTableLimits, AStalledSameTagInserterIsAnAbandonedInsertNotAFullTable) {
  Harness h;
  Frame f = udpFlow(47001);
  L4Tuple t;
  t.src = net().client4;
  t.dst = net().server4;
  t.proto = 17;
  t.sport = 47001;
  t.dport = 53;
  FlowKey k = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
  dp::FlowTableTestAccess::holdSlotBusy(h.flows(), k, flowHash(k));
  EXPECT_EQ(h.flows().insert(k, flowHash(k)), dp::FlowTable::kAbandoned);
  EXPECT_EQ(h.flows().insertsAbandoned(), 1u);
  Result r = h.send(f);
  ASSERT_EQ(r.verdict, Verdict::kDrop);
  EXPECT_EQ(r.drop, Counter::drop_flow_insert_abandoned);
  EXPECT_EQ(h.get(Counter::drop_flow_table_full), 0u);
  EXPECT_EQ(h.flows().insertsAbandoned(), 2u);
  // Another flow (another tag) is not held up.
  EXPECT_EQ(h.send(udpFlow(47002)).verdict, Verdict::kAppliance);
}

// The control thread's insert (a peer's record, a warm start) gives up after
// kControlWaitPauses pauses in all behind a stalled same-tag inserter (issue
// 24 item 6): insert() would wait eight times 2^16 pauses with yields (0.1 s
// to seconds on a busy machine), holding up the exception path, probes and the API. The
// table is not full, and other keys go in at once.
TEST(FlowTableLimits, TheControlThreadsInsertWaitsBoundedBehindAStalledInserter) {
  Harness h;
  dp::FlowTable& ft = h.flows();
  L4Tuple t;
  t.src = net().client4;
  t.dst = net().server4;
  t.proto = 17;
  t.sport = 47011;
  t.dport = 53;
  FlowKey k = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
  dp::FlowTableTestAccess::holdSlotBusy(ft, k, flowHash(k));
  EXPECT_EQ(ft.insertFromControl(k, flowHash(k)), dp::FlowTable::kAbandoned);
  EXPECT_EQ(ft.insertsAbandoned(), 1u);
  EXPECT_GT(ft.controlWaitPauses(), 0u) << "it did wait for the stalled claim";
  EXPECT_LE(ft.controlWaitPauses(), dp::FlowTable::kControlWaitPauses)
      << "one call waits at most kControlWaitPauses pauses";
  uint64_t waited = ft.controlWaitPauses();
  t.sport = 47012;
  FlowKey other = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
  int32_t pos = ft.insertFromControl(other, flowHash(other));
  ASSERT_GE(pos, 0);
  EXPECT_EQ(ft.lookup(other, flowHash(other)), pos);
  EXPECT_EQ(ft.insertFromControl(other, flowHash(other)), pos) << "present: its position";
  EXPECT_EQ(ft.controlWaitPauses(), waited) << "no wait without a stalled same-tag claim";
}

// The refresh scan's step (issue 24 item 4): a call walks at most max_slots
// slots, however few keys the table holds (before, only keys counted and a
// call on a sparse table walked all its tags), and calls one after another
// visit every live key exactly once per pass.
TEST(FlowTableScan, ACallWalksAtMostMaxSlotsAndAPassVisitsEveryKeyOnce) {
  dp::FlowTable ft("scan", 1u << 16, nullptr, 0);
  std::set<int32_t> keys;
  L4Tuple t;
  t.src = net().client4;
  t.dst = net().server4;
  t.proto = 6;
  t.dport = 443;
  for (uint16_t i = 0; i < 10; ++i) {
    t.sport = uint16_t(30000 + i);
    FlowKey k = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
    int32_t pos = ft.insert(k, flowHash(k));
    ASSERT_GE(pos, 0);
    keys.insert(pos);
  }
  L4Tuple t6 = t;
  t6.src = net().client6;
  t6.dst = net().server6;
  FlowKey k6 = makeFlowKey(t6, StickinessMode::kFiveTuple, 0).key;
  int32_t pos6 = ft.insert(k6, flowHash(k6));
  ASSERT_GE(size_t(pos6), ft.slots() / 2) << "an IPv6 key: a wide slot";
  keys.insert(pos6);
  const size_t n = ft.slots() / 2, step = 1000;
  uint32_t cursor = 0;
  size_t calls = 0;
  std::multiset<int32_t> seen;
  bool more = true;
  while (more) {
    uint32_t from = cursor;
    more = ft.scan(cursor, 4096, step, [&](const FlowKey&, int32_t pos, const dp::FlowEntry&) {
      seen.insert(pos);
      return true;
    });
    ++calls;
    ASSERT_LE(cursor - from, step) << "call " << calls;
    ASSERT_LE(calls, n) << "no progress";
  }
  EXPECT_EQ(cursor, n);
  EXPECT_EQ(calls, (n + step - 1) / step);
  EXPECT_EQ(seen, std::multiset<int32_t>(keys.begin(), keys.end()));
  // max_visit still ends a call after that many keys, and fn returning false
  // ends it at once; the next call goes on from there.
  cursor = 0;
  size_t visits = 0;
  EXPECT_TRUE(ft.scan(cursor, 3, n, [&](const FlowKey&, int32_t, const dp::FlowEntry&) {
    ++visits;
    return true;
  }));
  EXPECT_EQ(visits, 3u);
  EXPECT_TRUE(ft.scan(cursor, 100, n, [&](const FlowKey&, int32_t, const dp::FlowEntry&) {
    ++visits;
    return false;
  }));
  EXPECT_EQ(visits, 4u);
  EXPECT_FALSE(ft.scan(cursor, 100, n, [&](const FlowKey&, int32_t, const dp::FlowEntry&) {
    ++visits;
    return true;
  }));
  EXPECT_EQ(visits, keys.size());
}

TEST(FlowTableLimits, FullTableDropsNewFlowsButServesExistingOnes) {
  HarnessOptions o;
  o.flow_table_size = 64;
  Harness h(o);
  uint32_t sent = 0;
  for (uint16_t p = 1; p <= 400; ++p, ++sent) {
    Result r = h.send(udpFlow(p));
    if (r.verdict == Verdict::kDrop) {
      EXPECT_EQ(r.drop, Counter::drop_flow_table_full) << "flow " << p;
    } else {
      EXPECT_EQ(r.verdict, Verdict::kAppliance);
    }
  }
  EXPECT_GT(h.get(Counter::drop_flow_table_full), 0u);
  EXPECT_GE(h.get(Counter::encapsulated), 64u);
  EXPECT_EQ(h.get(Counter::encapsulated) + h.get(Counter::drop_flow_table_full), sent);
  EXPECT_EQ(liveKeys(h.flows()), h.get(Counter::flows_created));
  // Flow 1 was admitted first and still goes through.
  EXPECT_EQ(h.send(udpFlow(1)).verdict, Verdict::kAppliance);
}

// Exhaustion policy: once the control thread's expiry pass finds the table
// above 90 % of its capacity, it evicts the flows idle longest down to 80 %;
// the flows that sent most recently keep their entries, appliance and cookie,
// and new flows are admitted again.
TEST(FlowTableLimits, ExpiryEvictsTheIdlestFlowsWhenTheTableIsNearlyFull) {
  HarnessOptions o;
  o.flow_table_size = 100;
  Harness h(o);
  dp::FlowTable& ft = h.flows();
  std::vector<Result> first(201);
  uint16_t admitted = 0;
  for (uint16_t p = 1; p <= 200; ++p) {
    h.now += kSec / 100;  // flow p last sent at p x 10 ms
    first[p] = h.send(udpFlow(p));
    if (first[p].verdict == Verdict::kAppliance) admitted = p;
  }
  ASSERT_GT(h.get(Counter::drop_flow_table_full), 0u) << "the table filled up";
  uint32_t live = liveKeys(ft);
  ASSERT_GT(live, 90u);
  // Flows 1..10 send again: they are the most recent now.
  for (uint16_t p = 1; p <= 10; ++p) {
    h.now += kSec / 100;
    ASSERT_EQ(h.send(udpFlow(p)).verdict, Verdict::kAppliance);
  }
  size_t deleted = ft.expire(h.now);  // nothing is past its 120 s timeout yet
  EXPECT_EQ(deleted, live - 80u);
  EXPECT_EQ(ft.evicted(), live - 80u);
  EXPECT_EQ(liveKeys(ft), 80u);
  h.quiescent();
  ft.reclaim();
  // The recently active flows kept their entries (same appliance and cookie).
  for (uint16_t p = 1; p <= 10; ++p) {
    Result r = h.send(udpFlow(p));
    ASSERT_EQ(r.verdict, Verdict::kAppliance);
    Encap a = checkEncap(h, first[p].bytes, udpFlow(p).l3, kEthIpv4);
    Encap b = checkEncap(h, r.bytes, udpFlow(p).l3, kEthIpv4);
    EXPECT_EQ(b.appliance, a.appliance) << "flow " << p;
    EXPECT_EQ(b.cookie, a.cookie) << "flow " << p << " kept its entry";
  }
  // The idlest admitted flow lost its entry: its next packet makes a new one.
  uint64_t created = h.get(Counter::flows_created);
  Result again = h.send(udpFlow(11));
  ASSERT_EQ(again.verdict, Verdict::kAppliance);
  EXPECT_EQ(h.get(Counter::flows_created), created + 1);
  // New flows get in again.
  EXPECT_EQ(h.send(udpFlow(admitted + 1)).verdict, Verdict::kAppliance);
  // Below the high-water mark nothing more is evicted.
  EXPECT_EQ(ft.expire(h.now), 0u);
  EXPECT_EQ(ft.evicted(), live - 80u);
}

// A worker preempted between claiming a neighbour slot and marking it ready
// must not make another worker give up: before, intern() returned 0 after a
// bounded wait (counted as neighbour_table_full, and that direction's
// returns dropped as drop_return_no_l2). Now it probes on and interns the L2
// in the next slot; the table still answers one index per L2 it completed.
TEST(NeighbourTable, ASlotLeftBusyIsPassedOverNotAFullTable) {
  dp::NeighbourTable nt;
  const uint64_t peer = 0x0000'0a0b0c0d0e0fULL, self = 0x0001'020304050607ULL;
  dp::NeighbourTableTestAccess::holdHomeSlotBusy(nt, peer, self);
  dp::NeighbourTable::Refusal why;
  uint16_t idx = nt.intern(peer, self, why);
  ASSERT_NE(idx, 0) << "a busy slot made intern() report a full table";
  EXPECT_TRUE(nt.holds(idx, peer, self));
  EXPECT_EQ(nt.intern(peer, self, why), idx) << "the same L2 again: the same index";
  dp::DirL2 d;
  ASSERT_TRUE(nt.read(idx, d));
  EXPECT_EQ(d.peer_mac.b[0], 0x0f);
}

}  // namespace
}  // namespace gwlb::dptest
