// Fuzz target 12: the flow table (dataplane/flow_table.cc) under arbitrary
// keys, hashes and operation sequences, single-threaded, against a std::map
// oracle. Input: byte 0 picks the hash (0: flowHash; else flowHash masked so
// that many keys share a tag and buckets), then operations of 1 + 6 bytes:
// opcode, then a seed the 40-byte key is grown from (bytes of the input, so
// keys repeat; any family byte, IPv4 keys with bytes past the address set:
// the wide slots).
//   insert  -> a position below slots() whose key reads back (keyAt), and the
//              same position for a key already in; -1 only for a key not in
//   lookup / lookupBulk -> the oracle's position or -1
//   retire  -> the key made idle; expire() deletes exactly the retired keys,
//              reclaim() frees them (no reader registered), and they miss
// A table of capacity 48 fills up: count() stays exact and never above it.
#include <rte_rcu_qsbr.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "common/flow_key.h"
#include "dataplane/flow_table.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;

namespace {

constexpr uint32_t kCapacity = 48;
constexpr uint64_t kNow = 5000ULL * 1'000'000'000ULL;

rte_rcu_qsbr* qsbr() {
  static rte_rcu_qsbr* q = [] {
    size_t sz = rte_rcu_qsbr_get_memsize(1);
    auto* v = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(64, (sz + 63) & ~size_t(63)));
    std::memset(v, 0, sz);
    rte_rcu_qsbr_init(v, 1);
    return v;
  }();
  return q;
}

struct KeyLess {
  bool operator()(const FlowKey& a, const FlowKey& b) const { return std::memcmp(&a, &b, sizeof a) < 0; }
};

FlowKey grow(const uint8_t* seed) {
  FlowKey k;
  std::memset(&k, 0, sizeof k);
  uint8_t mode = seed[0] % 4;
  if (mode == 0 || mode == 1) {  // IPv4 flow or fragment
    std::memcpy(k.a, seed + 1, 2);
    std::memcpy(k.b, seed + 3, 2);
    k.port_a = seed[5];
    k.family = 4;
    k.proto = 6;
    k.kind = mode ? KeyKind::kFragment : KeyKind::kFlow;
  } else if (mode == 2) {  // IPv6
    std::memcpy(k.a + 10, seed + 1, 3);
    std::memcpy(k.b + 13, seed + 4, 2);
    k.family = 6;
    k.proto = 17;
  } else {  // anything: every byte from the seed
    for (size_t i = 0; i < sizeof k; ++i) reinterpret_cast<uint8_t*>(&k)[i] = seed[1 + i % 5] ^ uint8_t(i);
  }
  return k;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const uint32_t kMasks[4] = {0xFFFFFFFFu, 0xFFFF000Fu, 0xF000000Fu, 0x00000003u};
  const uint32_t mask = kMasks[data[0] % 4];
  auto hashOf = [&](const FlowKey& k) { return flowHash(k) & mask; };
  dp::FlowTable ft("fuzz", kCapacity, qsbr(), 0);
  std::map<FlowKey, int32_t, KeyLess> in;          // present keys -> position
  std::map<FlowKey, int32_t, KeyLess> retired;     // made idle, not yet expired
  for (size_t at = 1; at + 7 <= size; at += 7) {
    uint8_t op = data[at] % 8;
    FlowKey k = grow(data + at + 1);
    uint32_t h = hashOf(k);
    auto it = in.find(k);
    if (op <= 2) {  // insert (op 2: as the pipeline does, with the bulk lookup's hint)
      int32_t pos;
      if (op == 2) {
        const FlowKey* ks[1] = {&k};
        int32_t ps[1];
        uint32_t hint[1];
        ft.lookupBulk(ks, &h, 1, ps, hint);
        FUZZ_CHECK(ps[0] < 0 || hint[0] == dp::FlowTable::kNoHint, "a hit came with a hint");
        FUZZ_CHECK(hint[0] == dp::FlowTable::kNoHint || hint[0] < ft.slots(), "hint %u past slots()", hint[0]);
        pos = ft.insert(k, h, hint[0]);
      } else {
        pos = ft.insert(k, h);
      }
      if (it != in.end()) {
        FUZZ_CHECK(pos == it->second, "insert of a present key: %d, expected %d", pos, it->second);
      } else if (retired.count(k)) {
        FUZZ_CHECK(pos == retired[k], "insert of a retired key: %d", pos);
      } else if (pos >= 0) {
        FUZZ_CHECK(size_t(pos) < ft.slots(), "position %d past slots()", pos);
        FlowKey back;
        FUZZ_CHECK(ft.keyAt(pos, back) && back == k, "keyAt does not give the key back");
        FUZZ_CHECK(ft.entry(pos).route.load() == 0, "a new key's entry is not fresh");
        ft.entry(pos).route.store(dp::packRoute(1, uint32_t(pos)));
        ft.entry(pos).last_seen.store(kNow);
        ft.entry(pos).idle_timeout.store(600'000'000'000ULL);
        in[k] = pos;
      }
      FUZZ_CHECK(ft.count() <= kCapacity, "count %u above capacity", ft.count());
    } else if (op <= 4) {  // lookup, single and bulk
      int32_t pos = ft.lookup(k, h);
      int32_t want = it != in.end() ? it->second : retired.count(k) ? retired[k] : -1;
      FUZZ_CHECK(pos == want, "lookup %d, expected %d", pos, want);
      const FlowKey* ks[2] = {&k, &k};
      uint32_t hs[2] = {h, h};
      int32_t ps[2];
      ft.lookupBulk(ks, hs, 2, ps);
      FUZZ_CHECK(ps[0] == want && ps[1] == want, "bulk lookup %d/%d, expected %d", ps[0], ps[1], want);
    } else if (op == 5) {  // retire
      if (it == in.end()) continue;
      ft.entry(it->second).last_seen.store(0);
      retired[k] = it->second;
      in.erase(it);
    } else {  // expire + reclaim
      // (With a bound, expire() leaves the exhaustion policy alone.)
      size_t n = ft.expire(kNow, size_t(1) << 30);
      FUZZ_CHECK(n == retired.size(), "expire deleted %zu, %zu retired", n, retired.size());
      for (auto& [rk, rp] : retired) FUZZ_CHECK(ft.lookup(rk, hashOf(rk)) < 0, "an expired key is found");
      retired.clear();
      ft.reclaim(true);
      FUZZ_CHECK(ft.count() == in.size(), "count %u, %zu present", ft.count(), in.size());
    }
  }
  size_t live = 0;
  ft.forEach([&](const FlowKey& k, int32_t pos, const dp::FlowEntry&) {
    ++live;
    auto a = in.find(k);
    auto b = retired.find(k);
    FUZZ_CHECK((a != in.end() && a->second == pos) || (b != retired.end() && b->second == pos),
               "forEach visits a key the oracle does not have");
  });
  FUZZ_CHECK(live == in.size() + retired.size(), "forEach visits %zu, oracle %zu", live,
             in.size() + retired.size());
  return 0;
}
