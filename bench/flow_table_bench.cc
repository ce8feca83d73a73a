// Benchmark (never pass/fail): the flow table (dataplane/flow_table.h) at a
// given number of flows, beside DPDK's own rte_hash in the same process.
//
// Keys: N IPv4 5-tuples (random addresses, ports, TCP or UDP; fixed seed) made
// canonical by gwlb::makeFlowKey (five-tuple stickiness, listener 0): 40-byte
// FlowKeys, hashed by gwlb::flowHash as the pipeline does.
//
// Tables, each sized for N keys (capacity N) and filled with all N keys (a
// plain rte_hash that refuses keys at that size is made 25 % larger until it
// holds them all, see fillRteHash):
//   ours      dp::FlowTable (our own: 16-slot buckets of
//             32-bit tags, one 64-byte slot per IPv4 key with its FlowEntry)
//   rte_hash  a plain rte_hash: key_len 40, the same hash function, no extra
//             flags (the baseline it was measured against)
//   rte_hash_lf  (--lf-baseline) rte_hash with the flags FlowTable used
//             before it had its own table (lock-free readers, multi-writer, extendable)
//
// Memory, measured: resident set (/proc/self/statm) before the table is
// created and after it holds all N keys (the keys the bench itself keeps
// were allocated before), divided by N; beside it the DPDK heap's allocated
// bytes (rte_malloc_get_socket_stats) and the C++ heap's (mallinfo2) deltas.
// With --no-huge, DPDK's memory is anonymous memory that becomes resident as
// it is touched, so the resident set counts what the table really uses.
//
// Insert: every key once, single thread, in random order (TSC around the whole
// pass): keys per second.
//
// Lookup: existing keys in random order, bursts of 32. The keys of a window
// (256 bursts) are copied into a small staging array first, as the pipeline
// has them in its parsed packets; only the lookups are timed (TSC around the
// window). Ours uses FlowTable::lookupBulk when the class has it, else single
// lookups; rte_hash uses rte_hash_lookup_with_hash_bulk (hashes given, as
// ours) and rte_hash_lookup_bulk (hashes computed by rte_hash). Windows
// rotate over the variants, each window the next keys of the random order, so
// no variant finds keys another one just warmed; every lookup must hit.
//
// Expiry: FlowTable::expire over the full table with 10 % of the flows idle
// past their timeout (a different tenth each sweep): total time and ns per
// entry scanned; the expired keys are put back between sweeps.
//
//   flow_table_bench --flows N [--seconds S] [--sweeps K] [--cpu C] [--seed X]
//                    [--lf-baseline]
// Prints a summary, then one JSON line (last line of stdout).
#include <malloc.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "common/flow_key.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"

namespace gwlb::bench {
namespace {

constexpr uint32_t kBurst = 32;
constexpr uint32_t kWindowBursts = 256;
constexpr uint32_t kWindow = kBurst * kWindowBursts;

struct Options {
  uint32_t flows = 1'000'000;
  double seconds = 10;
  unsigned sweeps = 3;
  int cpu = -1;
  uint64_t seed = 0x6777'6c62'0008ULL;
  bool lf_baseline = false;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "flow_table_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string statsJson(const Stats& s) {
  return "{\"median\":" + fmt("%.4f", s.median) + ",\"min\":" + fmt("%.4f", s.min) +
         ",\"p10\":" + fmt("%.4f", s.p10) + ",\"p90\":" + fmt("%.4f", s.p90) +
         ",\"max\":" + fmt("%.4f", s.max) + "}";
}

// Memory as seen from outside the allocators (resident set) and inside them.
struct Mem {
  uint64_t rss = 0;        // bytes resident
  uint64_t rte_alloc = 0;  // DPDK heap, allocated bytes (all sockets)
  uint64_t cxx_alloc = 0;  // glibc heap: in use + mmapped blocks
};
Mem memNow() {
  Mem m;
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  m.rss = resident * uint64_t(sysconf(_SC_PAGESIZE));
  for (unsigned s = 0; s < rte_socket_count(); ++s) {
    rte_malloc_socket_stats st{};
    if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(s), &st) == 0)
      m.rte_alloc += st.heap_allocsz_bytes;
  }
  struct mallinfo2 mi = mallinfo2();
  m.cxx_alloc = mi.uordblks + mi.hblkhd;
  return m;
}
struct MemDelta {
  double rss, rte, cxx;  // bytes per flow
};
MemDelta perFlow(const Mem& a, const Mem& b, uint32_t flows) {
  auto d = [&](uint64_t x, uint64_t y) { return (double(y) - double(x)) / double(flows); };
  return {d(a.rss, b.rss), d(a.rte_alloc, b.rte_alloc), d(a.cxx_alloc, b.cxx_alloc)};
}

// FlowTable::lookupBulk, when this tree's FlowTable has it.
template <typename T>
concept HasLookupBulk = requires(const T& t, const FlowKey* const* k, const uint32_t* h,
                                 int32_t* p) { t.lookupBulk(k, h, kBurst, p); };

// One burst through ours; returns how many hit.
template <typename T>
uint32_t oursBurst(const T& t, const FlowKey* const* keys, const uint32_t* hashes,
                   int32_t* pos) noexcept {
  if constexpr (HasLookupBulk<T>) {
    t.lookupBulk(keys, hashes, kBurst, pos);
  } else {
    for (uint32_t j = 0; j < kBurst; ++j) pos[j] = t.lookup(*keys[j], hashes[j]);
  }
  uint32_t hits = 0;
  for (uint32_t j = 0; j < kBurst; ++j) hits += pos[j] >= 0;
  return hits;
}
constexpr const char* kOursApi =
    HasLookupBulk<dp::FlowTable> ? "FlowTable::lookupBulk (bursts of 32)"
                                 : "FlowTable::lookup, 32 single lookups per burst";

rte_hash* makeRteHash(const std::string& name, uint32_t capacity, uint8_t flags) {
  rte_hash_parameters p{};
  p.name = name.c_str();
  p.entries = capacity;
  p.key_len = sizeof(FlowKey);
  p.hash_func = &gwlb::flowHash;
  p.hash_func_init_val = 0;
  p.socket_id = int(rte_socket_id());
  p.extra_flag = flags;
  rte_hash* h = rte_hash_create(&p);
  if (!h) die("rte_hash_create(" + name + ") failed: " + rte_strerror(rte_errno));
  return h;
}

struct Variant {
  const char* name;
  const char* what;
  std::vector<double> cycles_per_key;
};

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o) {}

  int run() {
    makeKeys();
    qsbr_ = dp::createQsbr(1);
    const double hz = double(rte_get_tsc_hz());

    // ---- Ours: memory and insert rate ----
    Mem m0 = memNow();
    ft_ = std::make_unique<dp::FlowTable>("ftb_ours", o_.flows, qsbr_, int(rte_socket_id()));
    Mem m1 = memNow();
    uint64_t t0 = rte_rdtsc();
    for (uint32_t i = 0; i < o_.flows; ++i) {
      int32_t p = ft_->insert(keys_[i], hashes_[i]);
      if (p < 0) die("our table refused key " + std::to_string(i) + " of " + std::to_string(o_.flows));
    }
    double ours_insert_s = double(rte_rdtsc() - t0) / hz;
    Mem m2 = memNow();
    if (ft_->count() != o_.flows) die("our table holds " + std::to_string(ft_->count()) + " keys");
    MemDelta ours_mem = perFlow(m0, m2, o_.flows), ours_empty = perFlow(m0, m1, o_.flows);

    // ---- rte_hash baselines ----
    double plain_insert_s = 0, lf_insert_s = 0;
    MemDelta plain_mem{}, lf_mem{};
    uint32_t plain_cap = 0, lf_cap = 0;
    plain_ = fillRteHash("ftb_plain", 0, plain_insert_s, plain_mem, plain_cap);
    if (o_.lf_baseline)
      lf_ = fillRteHash("ftb_lf",
                        RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF |
                            RTE_HASH_EXTRA_FLAGS_MULTI_WRITER_ADD |
                            RTE_HASH_EXTRA_FLAGS_EXT_TABLE,
                        lf_insert_s, lf_mem, lf_cap);

    // ---- Lookups, interleaved ----
    std::vector<Variant> vs = {
        {"ours", kOursApi, {}},
        {"rte_hash_with_hash_bulk", "rte_hash_lookup_with_hash_bulk, plain rte_hash", {}},
        {"rte_hash_bulk", "rte_hash_lookup_bulk (rte_hash hashes), plain rte_hash", {}},
    };
    if (lf_)
      vs.push_back({"rte_hash_lf_with_hash_bulk",
                    "rte_hash_lookup_with_hash_bulk, rte_hash with FlowTable's flags", {}});
    std::vector<double> ratio;  // ours / rte_hash_with_hash_bulk, per rotation
    std::mt19937_64 rng(o_.seed ^ 0x5EED);
    std::vector<uint32_t> order(o_.flows);
    for (uint32_t i = 0; i < o_.flows; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<FlowKey> stage(kWindow);
    std::vector<const FlowKey*> ptrs(kWindow);
    std::vector<uint32_t> sig(kWindow);
    std::vector<int32_t> pos(kWindow);
    size_t next = 0;
    uint64_t rotations = 0;
    const uint64_t end = rte_rdtsc() + uint64_t(o_.seconds * hz);
    while (rte_rdtsc() < end || rotations < 3) {
      std::vector<double> this_rot(vs.size());
      for (size_t k = 0; k < vs.size(); ++k) {
        size_t v = (k + rotations) % vs.size();
        for (uint32_t j = 0; j < kWindow; ++j) {
          uint32_t id = order[(next + j) % o_.flows];
          stage[j] = keys_[id];
          sig[j] = hashes_[id];
          ptrs[j] = &stage[j];
        }
        next = (next + kWindow) % o_.flows;
        uint64_t hits = 0;
        uint64_t c0 = rte_rdtsc();
        switch (v) {
          case 0:
            for (uint32_t b = 0; b < kWindow; b += kBurst)
              hits += oursBurst(*ft_, &ptrs[b], &sig[b], &pos[b]);
            break;
          case 1:
          case 3: {
            rte_hash* h = v == 1 ? plain_ : lf_;
            for (uint32_t b = 0; b < kWindow; b += kBurst) {
              rte_hash_lookup_with_hash_bulk(h, reinterpret_cast<const void**>(&ptrs[b]),
                                             &sig[b], kBurst, &pos[b]);
              for (uint32_t j = 0; j < kBurst; ++j) hits += pos[b + j] >= 0;
            }
            break;
          }
          case 2:
            for (uint32_t b = 0; b < kWindow; b += kBurst) {
              rte_hash_lookup_bulk(plain_, reinterpret_cast<const void**>(&ptrs[b]), kBurst,
                                   &pos[b]);
              for (uint32_t j = 0; j < kBurst; ++j) hits += pos[b + j] >= 0;
            }
            break;
        }
        uint64_t c = rte_rdtsc() - c0;
        if (hits != kWindow)
          die(std::string(vs[v].name) + ": " + std::to_string(kWindow - hits) + " of " +
              std::to_string(kWindow) + " lookups of existing keys missed");
        this_rot[v] = double(c) / kWindow;
      }
      for (size_t v = 0; v < vs.size(); ++v) vs[v].cycles_per_key.push_back(this_rot[v]);
      ratio.push_back(this_rot[0] / this_rot[1]);
      ++rotations;
    }

    // ---- Expiry sweeps ----
    // Every flow: route set, seen at kNow, idle timeout 60 s; in sweep s the
    // flows with index % 10 == s were last seen 120 s ago.
    constexpr uint64_t kNow = 10'000'000'000'000ULL;
    constexpr uint64_t kIdle = 60'000'000'000ULL;
    for (uint32_t i = 0; i < o_.flows; ++i) setEntry(i, kNow, kIdle);
    std::vector<double> sweep_ms, sweep_ns_per_entry, reclaim_ms;
    for (unsigned s = 0; s < o_.sweeps; ++s) {
      const uint32_t tenth = s % 10;
      for (uint32_t i = tenth; i < o_.flows; i += 10) setEntry(i, kNow - 2 * kIdle, kIdle);
      const uint32_t scanned = ft_->count();
      uint64_t c0 = rte_rdtsc();
      size_t expired = ft_->expire(kNow);
      uint64_t c1 = rte_rdtsc();
      ft_->reclaim(true);  // no worker is registered: every grace period is over
      uint64_t c2 = rte_rdtsc();
      size_t want = (o_.flows - tenth + 9) / 10;
      if (expired != want)
        die("sweep " + std::to_string(s) + " expired " + std::to_string(expired) + ", expected " +
            std::to_string(want));
      sweep_ms.push_back(double(c1 - c0) / hz * 1e3);
      sweep_ns_per_entry.push_back(double(c1 - c0) / hz * 1e9 / scanned);
      reclaim_ms.push_back(double(c2 - c1) / hz * 1e3);
      // Put the expired flows back.
      for (uint32_t i = tenth; i < o_.flows; i += 10) {
        if (ft_->insert(keys_[i], hashes_[i]) < 0) die("re-insert after a sweep failed");
        setEntry(i, kNow, kIdle);
      }
      if (ft_->count() != o_.flows) die("table does not hold every flow after a sweep");
    }

    // ---- Report ----
    std::printf("flow_table_bench: %u flows (IPv4 5-tuples, 40-byte keys), capacity %u, "
                "sizeof(FlowEntry) %zu, %zu positions, cpu %d, TSC %.3f GHz\n",
                o_.flows, o_.flows, sizeof(dp::FlowEntry), ft_->slots(), o_.cpu, hz / 1e9);
    auto memLine = [&](const char* n, const MemDelta& d) {
      std::printf("  memory %-12s %7.1f B/flow resident (DPDK heap %.1f, C++ heap %.1f)\n", n,
                  d.rss, d.rte, d.cxx);
    };
    memLine("ours", ours_mem);
    std::printf("  memory ours, empty  %7.1f B/flow resident right after creation\n",
                ours_empty.rss);
    memLine("rte_hash", plain_mem);
    if (plain_cap != o_.flows) std::printf("  (rte_hash needed capacity %u to hold every key)\n", plain_cap);
    if (lf_) memLine("rte_hash_lf", lf_mem);
    std::printf("  insert ours %.2f Mkeys/s, rte_hash %.2f Mkeys/s%s\n",
                o_.flows / ours_insert_s / 1e6, o_.flows / plain_insert_s / 1e6,
                lf_ ? fmt(", rte_hash_lf %.2f Mkeys/s", o_.flows / lf_insert_s / 1e6).c_str() : "");
    for (const Variant& v : vs) {
      Stats s = stats(v.cycles_per_key);
      std::printf("  lookup %-27s %7.1f cycles/key (p10-p90 %.1f-%.1f, min %.1f, max %.1f)  %s\n",
                  v.name, s.median, s.p10, s.p90, s.min, s.max, v.what);
    }
    Stats rs = stats(ratio);
    std::printf("  ours / rte_hash_with_hash_bulk %.3f (p10-p90 %.3f-%.3f), %llu rotations of "
                "%u keys per variant\n",
                rs.median, rs.p10, rs.p90, (unsigned long long)rotations, kWindow);
    Stats ss = stats(sweep_ms), se = stats(sweep_ns_per_entry), rc = stats(reclaim_ms);
    std::printf("  expiry sweep %.1f ms (%.2f ns/entry scanned; min %.1f max %.1f ms), reclaim "
                "%.1f ms, %u sweeps of 10 %% expired\n",
                ss.median, se.median, ss.min, ss.max, rc.median, o_.sweeps);

    auto memJson = [&](const MemDelta& d) {
      return "{\"rss\":" + fmt("%.2f", d.rss) + ",\"rte_heap\":" + fmt("%.2f", d.rte) +
             ",\"cxx_heap\":" + fmt("%.2f", d.cxx) + "}";
    };
    std::string j = "{\"flows\":" + std::to_string(o_.flows) + ",\"capacity\":" +
                    std::to_string(o_.flows) + ",\"positions\":" + std::to_string(ft_->slots()) +
                    ",\"flow_entry_bytes\":" + std::to_string(sizeof(dp::FlowEntry)) +
                    ",\"key_bytes\":" + std::to_string(sizeof(FlowKey)) +
                    ",\"rte_hash_capacity\":" + std::to_string(plain_cap) +
                    ",\"rte_hash_lf_capacity\":" + std::to_string(lf_cap) + ",\"burst\":" +
                    std::to_string(kBurst) + ",\"window_keys\":" + std::to_string(kWindow) +
                    ",\"cpu\":" + std::to_string(o_.cpu) + ",\"tsc_hz\":" + fmt("%.0f", hz) +
                    ",\"seed\":" + std::to_string(o_.seed) + ",\"ours_api\":\"" + kOursApi +
                    "\",\"lookup_bulk\":" + (HasLookupBulk<dp::FlowTable> ? "true" : "false") +
                    ",\"bytes_per_flow\":{\"ours\":" + memJson(ours_mem) + ",\"ours_empty\":" +
                    memJson(ours_empty) + ",\"rte_hash\":" + memJson(plain_mem) +
                    (lf_ ? ",\"rte_hash_lf\":" + memJson(lf_mem) : std::string()) +
                    "},\"insert_keys_per_s\":{\"ours\":" + fmt("%.0f", o_.flows / ours_insert_s) +
                    ",\"rte_hash\":" + fmt("%.0f", o_.flows / plain_insert_s) +
                    (lf_ ? ",\"rte_hash_lf\":" + fmt("%.0f", o_.flows / lf_insert_s)
                         : std::string()) +
                    "},\"rotations\":" + std::to_string(rotations) + ",\"lookup_cycles\":{";
    for (size_t v = 0; v < vs.size(); ++v)
      j += std::string(v ? "," : "") + "\"" + vs[v].name + "\":" + statsJson(stats(vs[v].cycles_per_key));
    j += "},\"ratio_ours_rte_hash\":" + statsJson(rs) + ",\"expiry\":{\"sweeps\":" +
         std::to_string(o_.sweeps) + ",\"expired_share\":0.1,\"ms\":" + statsJson(ss) +
         ",\"ns_per_entry\":" + statsJson(se) + ",\"reclaim_ms\":" + statsJson(rc) + "}}";
    std::printf("%s\n", j.c_str());
    return 0;
  }

 private:
  void makeKeys() {
    std::mt19937_64 rng(o_.seed);
    keys_.resize(o_.flows);
    hashes_.resize(o_.flows);
    for (uint32_t i = 0; i < o_.flows; ++i) {
      uint64_t a = rng(), b = rng();
      L4Tuple t;
      t.src = IpAddr::v4(uint32_t(a));
      t.dst = IpAddr::v4(uint32_t(a >> 32));
      t.sport = uint16_t(b);
      t.dport = uint16_t(b >> 16);
      t.proto = (b >> 32) & 1 ? 6 : 17;
      keys_[i] = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
      hashes_[i] = flowHash(keys_[i]);
    }
  }

  // Creates and fills an rte_hash sized for all keys. Without extendable
  // buckets a cuckoo table can refuse keys before it is full (-ENOSPC, seen
  // at 98 % of 65,536): then it is made again, 25 % larger (`capacity` says
  // which size held them).
  rte_hash* fillRteHash(const std::string& name, uint8_t flags, double& insert_s, MemDelta& mem,
                        uint32_t& capacity) {
    capacity = o_.flows;
    // Measured from before the first try: a retry reuses the freed memory of
    // the refused table, so the delta is the final table's resident size.
    const Mem a = memNow();
    for (;;) {
      rte_hash* h = makeRteHash(name, capacity, flags);
      uint64_t t0 = rte_rdtsc();
      uint32_t i = 0;
      int32_t r = 0;
      for (; i < o_.flows; ++i)
        if ((r = rte_hash_add_key_with_hash(h, &keys_[i], hashes_[i])) < 0) break;
      insert_s = double(rte_rdtsc() - t0) / double(rte_get_tsc_hz());
      if (i == o_.flows) {
        if (rte_hash_count(h) != int32_t(o_.flows)) die(name + ": holds fewer keys than inserted");
        mem = perFlow(a, memNow(), o_.flows);
        return h;
      }
      rte_hash_free(h);
      if (r != -ENOSPC || capacity > o_.flows * 2u)
        die(name + ": insert " + std::to_string(i) + " of " + std::to_string(o_.flows) +
            " failed (" + std::to_string(r) + ") at capacity " + std::to_string(capacity));
      std::fprintf(stderr, "flow_table_bench: %s: capacity %u refused key %u of %u; retrying %u\n",
                   name.c_str(), capacity, i, o_.flows, capacity + capacity / 4);
      capacity += capacity / 4;
    }
  }

  void setEntry(uint32_t i, uint64_t seen, uint64_t idle) {
    int32_t p = ft_->lookup(keys_[i], hashes_[i]);
    if (p < 0) die("key " + std::to_string(i) + " is missing");
    dp::FlowEntry& e = ft_->entry(p);
    e.last_seen.store(seen);
    e.idle_timeout.store(idle);
    e.route.store(dp::packRoute(uint16_t(i % 3), i), std::memory_order_release);
  }

  Options o_;
  std::vector<FlowKey> keys_;
  std::vector<uint32_t> hashes_;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<dp::FlowTable> ft_;
  rte_hash* plain_ = nullptr;
  rte_hash* lf_ = nullptr;
};

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using gwlb::bench::die;
  gwlb::bench::Options o;
  o.cpu = gwlb::bench::defaultCpu();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--flows") o.flows = uint32_t(std::strtoul(val(), nullptr, 10));
    else if (a == "--seconds") o.seconds = std::atof(val());
    else if (a == "--sweeps") o.sweeps = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--cpu") o.cpu = std::atoi(val());
    else if (a == "--seed") o.seed = std::strtoull(val(), nullptr, 0);
    else if (a == "--lf-baseline") o.lf_baseline = true;
    else die("usage: flow_table_bench --flows N [--seconds S] [--sweeps K] [--cpu C] [--seed X] "
             "[--lf-baseline]");
  }
  if (o.flows < gwlb::bench::kWindow) die("--flows must be at least 8192");
  if (o.flows > (1u << 27)) die("--flows must be at most 2^27 (gwlbd's flow_table_size limit)");
  // EAL memory: the rte_hash baselines need about 100-130 bytes per key
  // each; reserved, not touched, with --no-huge. (Ours maps its own memory.)
  uint64_t mb = uint64_t(o.flows) * (o.lf_baseline ? 2 : 1) * 160 / (1 << 20) + 256;
  try {
    gwlb::dp::initEal("gwlb-flow-table-bench",
                      {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m",
                       std::to_string(mb), "--log-level=*:warning",
                       "--lcores=0@" + std::to_string(o.cpu)});
    return gwlb::bench::Bench(o).run();
  } catch (const std::exception& e) {
    die(e.what());
  }
}
