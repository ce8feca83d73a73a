// Randomized model test of the flow table (issue 17): millions of
// operations by two worker threads and the control thread at once, checked
// against std::unordered_map oracles.
//
// Each worker owns a private key set (IPv4 in one slot line, one key in eight
// IPv6 in the wide array) and keeps its oracle: key -> position, or absent,
// or "expiring". It inserts (a fresh key gets a fresh entry whose route it
// sets), looks up (a present key must be at its position with its route; an
// absent one must miss), and retires keys by making them look idle: the
// control thread's expire() deletes them and reclaim() frees the slots after
// the grace period, so they are reused by later inserts. A key retired
// before an expiry pass began must miss once that pass ended. Both workers
// also insert one shared key set, in the same order, meeting at a barrier
// every few hundred operations so that they insert the same new keys at the
// same moment: they must get one position per key (one entry), and exactly
// one of them wins the route CAS on it.
#include <gtest/gtest.h>
#include <rte_malloc.h>
#include <pthread.h>
#include <rte_rcu_qsbr.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/flow_key.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"

namespace gwlb::dptest {
namespace {

constexpr uint64_t kSec = 1'000'000'000ULL;
constexpr uint64_t kNow = 1000 * kSec;       // the control thread's clock
constexpr uint64_t kLongIdle = 600 * kSec;   // live keys never expire
constexpr uint32_t kPrivate = 40'000;        // keys per worker
constexpr uint32_t kShared = 20'000;         // keys both workers insert
constexpr uint32_t kBarrierEvery = 256;      // worker ops between shared rounds
constexpr uint32_t kSharedPerRound = 9;

bool sanitized() { return std::getenv("GWLB_SANITIZE") != nullptr; }

FlowKey makeKey(uint32_t space, uint32_t i) {
  L4Tuple t;
  bool v6 = i % 8 == 7;
  if (v6) {
    uint8_t a[16] = {0x20, 0x01, 0x0d, 0xb8, uint8_t(space), 0, 0, 0, 0, 0, 0, 0,
                     uint8_t(i >> 24), uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)};
    uint8_t b[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    t.src = IpAddr::v6(a);
    t.dst = IpAddr::v6(b);
  } else {
    t.src = IpAddr::v4(0x0A000000u | (space << 20) | (i >> 12));
    t.dst = IpAddr::v4(0xC0A80000u | (i & 0xFFF));
  }
  t.proto = i & 1 ? 6 : 17;
  t.sport = uint16_t(1024 + (i * 7919) % 60000);
  t.dport = 443;
  return makeFlowKey(t, StickinessMode::kFiveTuple, uint8_t(space)).key;
}

struct KeyHash {
  size_t operator()(const FlowKey& k) const { return flowHash(k); }
};

// What a worker knows about one of its keys.
struct Known {
  enum State : uint8_t { kAbsent, kPresent, kExpiring } state = kAbsent;
  int32_t pos = -1;
  uint64_t expiring_gen = 0;  // the control generation when it was retired
};

struct Shared {
  dp::FlowTable* ft;
  rte_rcu_qsbr* qsbr;
  std::vector<FlowKey> shared_keys;
  std::atomic<uint64_t> gen{0};        // expiry passes completed
  std::atomic<uint32_t> arrived{0};    // barrier
  std::atomic<bool> stop_control{false};
  std::atomic<uint32_t> failures{0};
  std::vector<int32_t> shared_pos[2];
  std::atomic<uint32_t> route_wins{0};
  uint64_t ops[2] = {0, 0};
  uint64_t reused[2] = {0, 0};
};

void fail(Shared& sh, const std::string& what) {
  if (sh.failures.fetch_add(1) < 20) ADD_FAILURE() << what;
}

// A two-party barrier that gives up after a long bound (the other worker
// failed): every worker calls it the same number of times.
void meet(Shared& sh, uint32_t round) {
  sh.arrived.fetch_add(1, std::memory_order_acq_rel);
  for (uint64_t i = 0; sh.arrived.load(std::memory_order_acquire) < 2 * (round + 1); ++i) {
    if (i > 2'000'000'000ULL) return;
    if ((i & 0xFFFFF) == 0xFFFFF) std::this_thread::yield();  // mostly spin: both on a CPU at release
  }
}

// EAL pinned the main thread (and so the threads it starts) to one CPU: the
// workers and the control thread may run on any, so that they really overlap.
void anyCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; ++c) CPU_SET(int(c), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void worker(Shared& sh, unsigned w, uint64_t n_ops, uint64_t seed) {
  anyCpu();
  dp::FlowTable& ft = *sh.ft;
  rte_rcu_qsbr_thread_register(sh.qsbr, w);
  rte_rcu_qsbr_thread_online(sh.qsbr, w);
  std::mt19937_64 rng(seed);
  std::vector<FlowKey> keys(kPrivate);
  std::vector<uint32_t> hashes(kPrivate);
  std::unordered_map<FlowKey, Known, KeyHash> oracle;
  for (uint32_t i = 0; i < kPrivate; ++i) {
    keys[i] = makeKey(w + 1, i);
    hashes[i] = flowHash(keys[i]);
    oracle[keys[i]] = Known{};
  }
  std::vector<int32_t> seen_pos(kPrivate, -1);  // a key's last position (reuse statistics)
  sh.shared_pos[w].assign(sh.shared_keys.size(), -1);
  uint32_t next_shared = 0, round = 0;
  // Half the inserts go the way the pipeline's do: a bulk lookup that
  // misses and suggests a slot, then an insert that claims it (the twin
  // check of R10 must still catch another worker's insert of the key).
  auto insertKey = [&](const FlowKey& k, uint32_t h, bool hinted) {
    if (!hinted) return ft.insert(k, h);
    const FlowKey* kp[1] = {&k};
    int32_t p[1];
    uint32_t hint[1];
    ft.lookupBulk(kp, &h, 1, p, hint);
    if (p[0] >= 0 && hint[0] != dp::FlowTable::kNoHint) fail(sh, "a hit came with a hint");
    return ft.insert(k, h, hint[0]);
  };

  for (uint64_t op = 0; op < n_ops; ++op) {
    if (op % kBarrierEvery == 0 && next_shared < sh.shared_keys.size()) {
      meet(sh, round++);
      // Worker 1 takes the round's keys in reverse order: the two meet
      // on one key in the middle, inserting it at the same moment.
      const uint32_t base = next_shared;
      const uint32_t in_round = std::min<uint32_t>(kSharedPerRound, uint32_t(sh.shared_keys.size()) - base);
      next_shared += in_round;
      for (uint32_t j = 0; j < in_round; ++j) {
        const uint32_t id = base + (w == 0 ? j : in_round - 1 - j);
        const FlowKey& k = sh.shared_keys[id];
        int32_t pos = -1;
        for (int t = 0; t < 100 && pos < 0; ++t) pos = insertKey(k, flowHash(k), (id + w) % 2 == 0);
        if (pos < 0) {
          fail(sh, "shared insert refused");
          continue;
        }
        sh.shared_pos[w][id] = pos;
        uint64_t r0 = 0;
        if (ft.entry(pos).route.compare_exchange_strong(r0, dp::packRoute(uint16_t(w), id)))
          sh.route_wins.fetch_add(1, std::memory_order_relaxed);
        else if (dp::routeCookie(r0) != id)
          fail(sh, "shared key " + std::to_string(id) + " has another key's route");
      }
    }
    if (op % 64 == 0) rte_rcu_qsbr_quiescent(sh.qsbr, w);  // between "bursts"

    uint32_t i = uint32_t(rng() % kPrivate);
    const FlowKey& k = keys[i];
    Known& kn = oracle[k];
    uint64_t gen_now = sh.gen.load(std::memory_order_acquire);
    if (kn.state == Known::kExpiring && gen_now >= kn.expiring_gen + 2) kn = Known{};
    unsigned what = unsigned(rng() % 10);
    if (what < 4) {  // insert
      if (kn.state == Known::kExpiring) continue;  // may still be there: its fate is the control's
      int32_t pos = -1;
      for (int t = 0; t < 100 && pos < 0; ++t) pos = insertKey(k, hashes[i], what % 2 == 1);
      if (pos < 0) {
        fail(sh, "insert of a private key refused");
        continue;
      }
      if (kn.state == Known::kPresent) {
        if (pos != kn.pos) fail(sh, "insert of a present key moved it");
        continue;
      }
      dp::FlowEntry& e = ft.entry(pos);
      uint64_t r0 = 0;
      if (!e.route.compare_exchange_strong(r0, dp::packRoute(uint16_t(w), i))) {
        fail(sh, "a new key's entry was not fresh (route " + std::to_string(r0) + ")");
        continue;
      }
      e.flow_hash.store(hashes[i], std::memory_order_relaxed);
      e.last_seen.store(kNow);
      e.idle_timeout.store(kLongIdle, std::memory_order_release);
      if (seen_pos[i] >= 0 && seen_pos[i] != pos) ++sh.reused[w];
      seen_pos[i] = pos;
      kn.state = Known::kPresent;
      kn.pos = pos;
    } else if (what < 8) {  // lookup, single or bulk
      int32_t pos;
      if (what == 7) {
        const FlowKey* kp[3] = {&k, &keys[(i + 1) % kPrivate], &k};
        uint32_t hs[3] = {hashes[i], hashes[(i + 1) % kPrivate], hashes[i]};
        int32_t ps[3];
        ft.lookupBulk(kp, hs, 3, ps);
        // An expiring key may be deleted by the control thread between the
        // two comparisons of one call: then the later one misses. Any other
        // key has one answer.
        if (kn.state == Known::kExpiring) {
          for (int32_t p : {ps[0], ps[2]})
            if (p >= 0 && p != kn.pos) fail(sh, "bulk lookup: an expiring key moved");
        } else if (ps[0] != ps[2]) {
          fail(sh, "bulk lookup: one key, two answers");
        }
        pos = ps[0];
      } else {
        pos = ft.lookup(k, hashes[i]);
      }
      if (kn.state == Known::kPresent) {
        if (pos != kn.pos) {
          fail(sh, "lookup of a present key: " + std::to_string(pos) + ", expected " + std::to_string(kn.pos));
          continue;
        }
        uint64_t r = ft.entry(pos).route.load(std::memory_order_acquire);
        if (r != dp::packRoute(uint16_t(w), i)) fail(sh, "a present key's entry lost its route");
        FlowKey back;
        if (!ft.keyAt(pos, back) || !(back == k)) fail(sh, "keyAt does not give the key back");
      } else if (kn.state == Known::kAbsent) {
        if (pos >= 0) fail(sh, "lookup of an absent (expired) key found position " + std::to_string(pos));
      } else if (pos >= 0 && pos != kn.pos) {
        fail(sh, "an expiring key moved");
      }
    } else {  // retire: make it idle; the control thread expires it
      if (kn.state != Known::kPresent) continue;
      dp::FlowEntry& e = ft.entry(kn.pos);
      e.last_seen.store(0);
      e.idle_timeout.store(kSec, std::memory_order_release);
      kn.state = Known::kExpiring;
      kn.expiring_gen = sh.gen.load(std::memory_order_acquire);
    }
    ++sh.ops[w];
  }
  // Shared rounds left (the other worker may still be in them).
  while (next_shared < sh.shared_keys.size()) {
    meet(sh, round++);
    next_shared += kSharedPerRound;
  }
  rte_rcu_qsbr_thread_offline(sh.qsbr, w);
  rte_rcu_qsbr_thread_unregister(sh.qsbr, w);
}

TEST(FlowTableModel, TwoWorkersAndTheControlThreadAgainstAnOracle) {
  const uint64_t ops = sanitized() ? 150'000 : 1'500'000;  // per worker
  rte_rcu_qsbr* qsbr = dp::createQsbr(2);
  ASSERT_NE(qsbr, nullptr);
  // Room for every key twice over: the exhaustion policy never evicts here.
  dp::FlowTable ft("model", 2 * (2 * kPrivate + kShared), qsbr, 0);
  Shared sh;
  sh.ft = &ft;
  sh.qsbr = qsbr;
  // As many shared keys as the workers' rounds reach (a round every
  // kBarrierEvery operations): all 20,000 in a plain build, fewer when the
  // sanitizers cut the operations to a tenth.
  const uint32_t n_shared =
      uint32_t(std::min<uint64_t>(kShared, ops / kBarrierEvery * kSharedPerRound));
  for (uint32_t i = 0; i < n_shared; ++i) sh.shared_keys.push_back(makeKey(9, i));

  std::thread w0(worker, std::ref(sh), 0u, ops, 0x1234);
  std::thread w1(worker, std::ref(sh), 1u, ops, 0x5678);
  // The control thread: expiry passes, reclaims, walks.
  uint64_t passes = 0, expired = 0, walked = 0;
  std::thread control([&] {
    anyCpu();
    while (!sh.stop_control.load(std::memory_order_acquire)) {
      uint64_t g = sh.gen.load(std::memory_order_relaxed);
      expired += ft.expire(kNow);
      ft.reclaim(false);
      sh.gen.store(g + 1, std::memory_order_release);
      ++passes;
      if (passes % 16 == 0) {
        uint32_t cursor = 0;
        ft.scan(cursor, 4096, ft.slots(), [&](const FlowKey& k, int32_t pos, const dp::FlowEntry&) {
          FlowKey back;
          // A key may be deleted between the walk and keyAt, never replaced
          // by another: its slot is reused only after a grace period.
          if (ft.keyAt(pos, back) && !(back == k)) fail(sh, "keyAt gives another key");
          ++walked;
          return true;
        });
      }
      std::this_thread::yield();
    }
  });
  w0.join();
  w1.join();
  sh.stop_control.store(true, std::memory_order_release);
  control.join();

  EXPECT_EQ(sh.failures.load(), 0u);
  // One entry per shared key, the same for both workers, one route winner.
  uint32_t disagree = 0;
  for (uint32_t i = 0; i < n_shared; ++i) {
    disagree += sh.shared_pos[0][i] != sh.shared_pos[1][i];
    const FlowKey& k = sh.shared_keys[i];
    EXPECT_EQ(ft.lookup(k, flowHash(k)), sh.shared_pos[0][i]) << "shared key " << i;
  }
  EXPECT_EQ(disagree, 0u) << "workers that inserted one key got two positions";
  EXPECT_GE(n_shared, 5000u);
  EXPECT_EQ(sh.route_wins.load(), n_shared) << "one route CAS winner per shared key";
  std::unordered_map<FlowKey, int, KeyHash> copies;
  size_t live = 0;
  ft.forEach([&](const FlowKey& k, int32_t, const dp::FlowEntry&) {
    ++copies[k];
    ++live;
  });
  for (auto& [k, n] : copies) EXPECT_EQ(n, 1) << "a key stored twice";
  // Everything deleted is reclaimed once no worker is registered: count() is exact.
  ft.expire(kNow);
  ft.reclaim(true);
  size_t after = 0;
  ft.forEach([&](const FlowKey&, int32_t, const dp::FlowEntry&) { ++after; });
  EXPECT_EQ(ft.count(), after);
  EXPECT_GT(expired, 1000u) << "keys were expired";
  EXPECT_GT(sh.reused[0] + sh.reused[1], 100u) << "keys came back at other positions";
  std::printf("model: %llu + %llu worker ops, %llu expiry passes, %llu expired, %llu walked, "
              "%llu keys re-inserted at another position, %llu inserts abandoned, %zu live\n",
              (unsigned long long)sh.ops[0], (unsigned long long)sh.ops[1],
              (unsigned long long)passes, (unsigned long long)expired,
              (unsigned long long)walked, (unsigned long long)(sh.reused[0] + sh.reused[1]),
              (unsigned long long)ft.insertsAbandoned(), live);
  rte_free(qsbr);
}

}  // namespace
}  // namespace gwlb::dptest
