// Benchmark (never pass/fail): what the lazy move check costs on the
// fast path. dp::processBurst looks at its flow's appliance (ApplianceSlot::move)
// on every packet of an existing flow and moves the flow when it is set.
//
// This binary holds three copies of dataplane/pipeline.cc: the normal one
// (dp::processBurst), one compiled with -DGWLB_BENCH_NO_MOVE_CHECK, its entry
// point renamed by -DprocessBurst=processBurstNoMoveCheck (everything else in
// pipeline.cc has internal linkage), and an identical second copy of the
// normal one (processBurstCopy), see bench/meson.build. All run in the same
// process on the same flow table and mbufs, in alternating windows, so that
// machine noise hits them alike; the second copy measures how far two
// identical copies differ (code placement), the floor under any difference.
//
// One worker (the main lcore, pinned), established flows (the table is warmed
// first), one 64-byte UDP/IPv4 packet per flow, bursts of 32 over all flows
// in turn. A fixed set of mbufs is re-used: before each burst the frames are
// copied back into them from templates (outside the timed region); only the
// processBurst call is timed (TSC).
//
// Steady state, ns per packet and Mpps in each window, for:
//   base        check compiled out, healthy snapshot
//   check       check compiled in, no appliance shedding flows
//   check-copy  the same, second copy of the code (A/A control)
//   shedding    check compiled in, a snapshot where 1 appliance of 3 sheds its
//               flows (unhealthy, failover_mode rebalance); its flows have
//               already moved, so every packet pays the check and no move
// reported as medians over windows and the median of each window's ratio to
// the base window of the same cycle. Windows take the flows in turn, so with
// many flows every window finds its flows equally cold.
//
// One-time cost of a move: in each round a fresh table is warmed under the
// healthy snapshot, the shedding snapshot is published, and the first packet
// of K flows that move (they were on the shedding appliance) and of K flows
// that do not is timed; (t_move - t_stay) / K is the cost per moved flow.
//
// Instructions instead of time (--instructions, under valgrind --tool=callgrind
// --toggle-collect='*processBurst*'): the same phases, a fixed number of
// windows per variant, each phase dumped separately (CALLGRIND_DUMP_STATS_AT
// with the variant's name); instructions per packet = the dump's total / the
// packets it ran. Deterministic, free of the machine's noise and of code
// placement; bench.sh runs it when valgrind is installed.
//
//   move_check [--flows N] [--seconds S] [--rounds R] [--cpu C] [--window-bursts W]
//              [--instructions]
// Prints a summary, then one JSON line (last line of stdout).
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <sched.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define GWLB_HAVE_CALLGRIND 1
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "common/counters.h"
#include "common/snapshot.h"
#include "control/config/config.h"
#include "control/engine/snapshot_builder.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "bench/bench_net.h"
#include "tests/dp/packet_builder.h"

namespace gwlb::dp {
// dataplane/pipeline.cc built with -DGWLB_BENCH_NO_MOVE_CHECK (bench/meson.build).
void processBurstNoMoveCheck(Dataplane& dp, WorkerState& w, rte_mbuf** pkts, uint16_t n,
                             uint64_t now_ns, BurstOutput& out) noexcept;
// The same file built again unchanged (A/A control).
void processBurstCopy(Dataplane& dp, WorkerState& w, rte_mbuf** pkts, uint16_t n,
                      uint64_t now_ns, BurstOutput& out) noexcept;
}  // namespace gwlb::dp

namespace gwlb::bench {
namespace {

using ProcessFn = void (*)(dp::Dataplane&, dp::WorkerState&, rte_mbuf**, uint16_t, uint64_t,
                           dp::BurstOutput&) noexcept;

constexpr uint16_t kBurst = 32;
constexpr size_t kFrameLen = 64;
constexpr unsigned kMbufs = 1024;  // re-used ring of mbufs (multiple of kBurst)
constexpr uint64_t kNow = 1'000'000'000'000ULL;

struct Options {
  uint32_t flows = 4096;
  double seconds = 6;
  unsigned rounds = 15;
  int cpu = -1;
  unsigned window_bursts = 256;
  bool instructions = false;
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "move_check: %s\n", what.c_str());
  std::exit(1);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1) + 0.5)];
}

IpAddr appliance(int i) { return benchAppliance(i); }

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o) {
    pool_ = dp::createMbufPool("mc_pool", 2 * kMbufs - 1, 2048);
    for (unsigned i = 0; i < kMbufs; ++i) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool_);
      if (!m) die("mbuf pool too small");
      mbufs_.push_back(m);
    }
    qsbr_ = dp::createQsbr(1);
    buildFrames();
    buildSnapshots();
    w_ = std::make_unique<dp::WorkerState>();
  }

  // A fresh flow table (each round of the move measurement starts from one).
  void newTable() {
    dp_.flows = nullptr;
    table_.reset();
    table_ = std::make_unique<dp::FlowTable>("mc_ft" + std::to_string(tables_++),
                                             std::max<uint32_t>(2 * o_.flows, 1024), qsbr_,
                                             int(rte_socket_id()));
    dp_.flows = table_.get();
  }

  // Processes the packets of `ids` (one per flow, in order) in bursts; returns
  // the TSC cycles spent inside processBurst. When `where` is given, records
  // the appliance (outer destination) each flow was sent to.
  uint64_t run(ProcessFn fn, const dp::Snapshot* snap, const uint32_t* ids, size_t n,
               std::vector<uint32_t>* where = nullptr) {
    dp_.snapshot.store(snap, std::memory_order_release);
    uint64_t cycles = 0;
    dp::BurstOutput out;
    rte_mbuf* pkts[kBurst];
    for (size_t at = 0; at < n; at += kBurst) {
      uint16_t k = uint16_t(std::min<size_t>(kBurst, n - at));
      for (uint16_t j = 0; j < k; ++j) {
        rte_mbuf* m = mbufs_[cursor_];
        cursor_ = (cursor_ + 1) % kMbufs;
        // Undo what the last pass did to this mbuf (Geneve header prepended).
        m->data_off = RTE_PKTMBUF_HEADROOM;
        std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), &frames_[size_t(ids[at + j]) * kFrameLen],
                    kFrameLen);
        m->data_len = kFrameLen;
        m->pkt_len = kFrameLen;
        m->port = 0;
        pkts[j] = m;
      }
      uint64_t before = w_->counters.get(Counter::encapsulated);
      uint64_t t0 = rte_rdtsc();
      fn(dp_, *w_, pkts, k, kNow, out);
      cycles += rte_rdtsc() - t0;
      // Every packet must come out (a drop would free one of our mbufs).
      if (out.n_appliance != k || w_->counters.get(Counter::encapsulated) != before + k)
        die("a packet was not encapsulated (" + std::to_string(out.n_appliance) + " of " +
            std::to_string(k) + ")");
      if (where)
        for (uint16_t j = 0; j < k; ++j) {
          const uint8_t* f = rte_pktmbuf_mtod(out.to_appliance[j], const uint8_t*);
          (*where)[ids[at + j]] = (uint32_t(f[30]) << 24) | (uint32_t(f[31]) << 16) |
                                  (uint32_t(f[32]) << 8) | f[33];
        }
    }
    return cycles;
  }

  uint64_t moved() const { return w_->counters.get(Counter::flows_rebalanced); }
  const dp::Snapshot* healthy() const { return healthy_.get(); }
  const dp::Snapshot* shedding() const { return shedding_.get(); }
  uint32_t shedIp() const { return appliance(2).v4HostOrder(); }
  const std::vector<uint32_t>& allIds() const { return all_; }
  double tscHz() const { return double(rte_get_tsc_hz()); }

 private:
  void buildFrames() {
    frames_.resize(size_t(o_.flows) * kFrameLen);
    for (uint32_t i = 0; i < o_.flows; ++i) {
      dptest::Bytes f = benchUdpFrame(i);
      if (f.size() != kFrameLen) die("frame is not 64 bytes");
      std::memcpy(&frames_[size_t(i) * kFrameLen], f.data(), kFrameLen);
      all_.push_back(i);
    }
  }

  void buildSnapshots() {
    cfg_ = benchConfig(3, ctl::FailoverMode::kRebalance);
    healthy_ = ctl::buildSnapshot(cfg_, reg_, {}, 1);
    ctl::HealthMap h = benchAllHealthy();
    h[shedIp()] = HealthState::kUnhealthy;
    shedding_ = ctl::buildSnapshot(cfg_, reg_, {}, 2, h);
    uint16_t id = reg_.find(shedIp());
    if (id >= shedding_->appliances.size() ||
        shedding_->appliances[id].move_reason != dp::MoveReason::kUnhealthy)
      die("the shedding snapshot does not shed");
  }

  Options o_;
  rte_mempool* pool_ = nullptr;
  std::vector<rte_mbuf*> mbufs_;
  unsigned cursor_ = 0;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::vector<uint8_t> frames_;
  std::vector<uint32_t> all_;
  ctl::Config cfg_;
  ctl::ApplianceRegistry reg_;
  std::unique_ptr<dp::Snapshot> healthy_, shedding_;
  std::unique_ptr<dp::FlowTable> table_;
  unsigned tables_ = 0;
  dp::Dataplane dp_;
  std::unique_ptr<dp::WorkerState> w_;
};

struct Variant {
  const char* name;
  const char* what;
  ProcessFn fn;
  bool shedding;
  std::vector<double> ns, ratio;
};


// --instructions: each phase in its own callgrind dump (see the file comment).
int countInstructions(Bench& b, const std::vector<Variant>& vs, size_t window_pkts) {
#ifdef GWLB_HAVE_CALLGRIND
  if (!RUNNING_ON_VALGRIND) die("--instructions runs under valgrind --tool=callgrind");
  const auto& all = b.allIds();
  constexpr size_t kWindows = 4;
  std::vector<uint32_t> ids(window_pkts);
  size_t next = 0;
  for (const Variant& v : vs) {
    CALLGRIND_ZERO_STATS;
    for (size_t w = 0; w < kWindows; ++w) {
      for (size_t j = 0; j < window_pkts; ++j) ids[j] = all[(next + j) % all.size()];
      next = (next + window_pkts) % all.size();
      b.run(v.fn, v.shedding ? b.shedding() : b.healthy(), ids.data(), ids.size());
    }
    CALLGRIND_DUMP_STATS_AT(v.name);
  }
  // The first packet of flows that move and of flows that stay.
  b.newTable();
  std::vector<uint32_t> where(all.size(), 0);
  b.run(dp::processBurst, b.healthy(), all.data(), all.size());
  b.run(dp::processBurst, b.healthy(), all.data(), all.size(), &where);
  std::vector<uint32_t> go, stay;
  for (uint32_t id : all) (where[id] == b.shedIp() ? go : stay).push_back(id);
  size_t k = std::min(go.size(), stay.size());
  k -= k % kBurst;
  uint64_t m0 = b.moved();
  CALLGRIND_ZERO_STATS;
  b.run(dp::processBurst, b.shedding(), stay.data(), k);
  CALLGRIND_DUMP_STATS_AT("first_stay");
  b.run(dp::processBurst, b.shedding(), go.data(), k);
  CALLGRIND_DUMP_STATS_AT("first_move");
  if (b.moved() - m0 != k) die("expected " + std::to_string(k) + " moves");
  std::string names;
  for (const Variant& v : vs) names += std::string(names.empty() ? "" : ",") + "\"" + v.name + "\"";
  std::printf("{\"mode\":\"instructions\",\"packets_per_variant\":%zu,\"variants\":[%s],"
              "\"first_packets\":%zu}\n",
              kWindows * window_pkts, names.c_str(), k);
  return 0;
#else
  (void)b;
  (void)vs;
  (void)window_pkts;
  die("built without <valgrind/callgrind.h>: --instructions is not available");
#endif
}

int run(const Options& o) {
  std::string lcores = "--lcores=0@" + std::to_string(o.cpu);
  dp::initEal("gwlb-move-check", {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m",
                                  "512", "--log-level=*:warning", lcores});
  Bench b(o);
  const double ns_per_cycle = 1e9 / b.tscHz();
  const auto& all = b.allIds();

  // The two copies really differ: under the shedding snapshot only the one
  // with the check moves flows.
  b.newTable();
  b.run(dp::processBurst, b.healthy(), all.data(), all.size());
  b.run(dp::processBurstNoMoveCheck, b.shedding(), all.data(), all.size());
  if (b.moved() != 0) die("the copy without the check moved flows");
  b.run(dp::processBurst, b.shedding(), all.data(), all.size());
  if (b.moved() == 0) die("the copy with the check moved no flow");

  // ---- Steady state ----
  // Fresh table, flows created and warmed, then the shedding appliance's flows
  // moved once (so the shedding snapshot is steady too).
  b.newTable();
  for (int pass = 0; pass < 3; ++pass) b.run(dp::processBurst, b.healthy(), all.data(), all.size());
  uint64_t moved_before = b.moved();
  b.run(dp::processBurst, b.shedding(), all.data(), all.size());
  const uint64_t steady_moves = b.moved() - moved_before;
  b.run(dp::processBurst, b.shedding(), all.data(), all.size());

  std::vector<Variant> vs = {
      {"base", "check compiled out, healthy snapshot", dp::processBurstNoMoveCheck, false, {}, {}},
      {"check", "check compiled in, no appliance shedding", dp::processBurst, false, {}, {}},
      {"check-copy", "as check, from a second copy of the code (A/A control)",
       dp::processBurstCopy, false, {}, {}},
      {"shedding", "check compiled in, 1 of 3 appliances shedding (its flows already moved)",
       dp::processBurst, true, {}, {}},
  };
  const size_t window_pkts = size_t(o.window_bursts) * kBurst;
  std::vector<uint32_t> ids(window_pkts);
  size_t next = 0;
  if (o.instructions) return countInstructions(b, vs, window_pkts);
  const uint64_t end = rte_rdtsc() + uint64_t(o.seconds * b.tscHz());
  uint64_t cycle = 0;
  while (rte_rdtsc() < end) {
    // Each window takes the next flows in turn, whichever variant runs it, so
    // every window finds its flows equally cold (with many flows, a second
    // pass over the same flows would find them in cache); the order of the
    // variants rotates per cycle.
    double base_ns = 0;
    std::vector<double> this_cycle(vs.size());
    for (size_t k = 0; k < vs.size(); ++k) {
      size_t v = (k + cycle) % vs.size();
      Variant& var = vs[v];
      for (size_t j = 0; j < window_pkts; ++j) ids[j] = all[(next + j) % all.size()];
      next = (next + window_pkts) % all.size();
      uint64_t c = b.run(var.fn, var.shedding ? b.shedding() : b.healthy(), ids.data(), ids.size());
      this_cycle[v] = double(c) * ns_per_cycle / double(window_pkts);
    }
    base_ns = this_cycle[0];
    for (size_t v = 0; v < vs.size(); ++v) {
      vs[v].ns.push_back(this_cycle[v]);
      vs[v].ratio.push_back(this_cycle[v] / base_ns);
    }
    ++cycle;
  }
  if (b.moved() != moved_before + steady_moves) die("flows moved during the steady state");

  // ---- One-time cost of a move ----
  std::vector<double> per_move, first_move, first_stay;
  size_t k_used = 0;
  for (unsigned r = 0; r < o.rounds; ++r) {
    b.newTable();
    std::vector<uint32_t> where(all.size(), 0);
    b.run(dp::processBurst, b.healthy(), all.data(), all.size());
    b.run(dp::processBurst, b.healthy(), all.data(), all.size(), &where);
    std::vector<uint32_t> go, stay;
    for (uint32_t id : all) (where[id] == b.shedIp() ? go : stay).push_back(id);
    size_t k = std::min(go.size(), stay.size());
    k -= k % kBurst;
    if (k < kBurst) die("too few flows on each side to time moves");
    k_used = k;
    uint64_t m0 = b.moved();
    uint64_t t_go, t_stay;
    if (r % 2 == 0) {
      t_stay = b.run(dp::processBurst, b.shedding(), stay.data(), k);
      t_go = b.run(dp::processBurst, b.shedding(), go.data(), k);
    } else {
      t_go = b.run(dp::processBurst, b.shedding(), go.data(), k);
      t_stay = b.run(dp::processBurst, b.shedding(), stay.data(), k);
    }
    if (b.moved() - m0 != k) die("expected " + std::to_string(k) + " moves, saw " +
                                 std::to_string(b.moved() - m0));
    double g = double(t_go) * ns_per_cycle / double(k), s = double(t_stay) * ns_per_cycle / double(k);
    first_move.push_back(g);
    first_stay.push_back(s);
    per_move.push_back(g - s);
  }

  // ---- Report ----
  std::printf("move_check: %u flows (64 B UDP/IPv4, one packet per flow in turn), bursts of %u, "
              "1 worker on cpu %d, %llu windows of %zu packets per variant\n",
              o.flows, kBurst, o.cpu, (unsigned long long)cycle, window_pkts);
  std::string j = "{\"flows\":" + std::to_string(o.flows) + ",\"burst\":" + std::to_string(kBurst) +
                  ",\"frame_bytes\":" + std::to_string(kFrameLen) + ",\"cpu\":" +
                  std::to_string(o.cpu) + ",\"windows\":" + std::to_string(cycle) +
                  ",\"window_packets\":" + std::to_string(window_pkts) + ",\"steady_moves\":" +
                  std::to_string(steady_moves) + ",\"variants\":{";
  for (size_t v = 0; v < vs.size(); ++v) {
    const Variant& var = vs[v];
    double ns = median(var.ns);
    std::printf("  %-10s %6.2f ns/pkt (p10-p90 %.2f-%.2f)  %6.2f Mpps  ratio to base %.4f "
                "(p10-p90 %.4f-%.4f)  %s\n",
                var.name, ns, quantile(var.ns, 0.1), quantile(var.ns, 0.9), 1e3 / ns,
                median(var.ratio), quantile(var.ratio, 0.1), quantile(var.ratio, 0.9), var.what);
    j += std::string(v ? "," : "") + "\"" + var.name + "\":{\"what\":\"" + var.what +
         "\",\"ns_per_pkt\":" + fmt("%.4f", ns) + ",\"ns_p10\":" +
         fmt("%.4f", quantile(var.ns, 0.1)) + ",\"ns_p90\":" + fmt("%.4f", quantile(var.ns, 0.9)) +
         ",\"mpps\":" + fmt("%.4f", 1e3 / ns) + ",\"ratio\":" + fmt("%.5f", median(var.ratio)) +
         ",\"ratio_p10\":" + fmt("%.5f", quantile(var.ratio, 0.1)) + ",\"ratio_p90\":" +
         fmt("%.5f", quantile(var.ratio, 0.9)) + "}";
  }
  std::printf("  first packet after the swap: %.1f ns moving vs %.1f ns staying: %.1f ns per "
              "moved flow (p10-p90 %.1f-%.1f; %u rounds of %zu flows each way)\n",
              median(first_move), median(first_stay), median(per_move), quantile(per_move, 0.1),
              quantile(per_move, 0.9), o.rounds, k_used);
  j += "},\"move_once\":{\"rounds\":" + std::to_string(o.rounds) + ",\"flows_each_way\":" +
       std::to_string(k_used) + ",\"ns_first_moving\":" + fmt("%.3f", median(first_move)) +
       ",\"ns_first_staying\":" + fmt("%.3f", median(first_stay)) + ",\"ns_per_move\":" +
       fmt("%.3f", median(per_move)) + ",\"ns_per_move_p10\":" +
       fmt("%.3f", quantile(per_move, 0.1)) + ",\"ns_per_move_p90\":" +
       fmt("%.3f", quantile(per_move, 0.9)) + "}}";
  std::printf("%s\n", j.c_str());
  return 0;
}

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  gwlb::bench::Options o;
  o.cpu = gwlb::bench::defaultCpu();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) gwlb::bench::die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--flows") o.flows = uint32_t(std::strtoul(val(), nullptr, 10));
    else if (a == "--seconds") o.seconds = std::atof(val());
    else if (a == "--rounds") o.rounds = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--cpu") o.cpu = std::atoi(val());
    else if (a == "--window-bursts") o.window_bursts = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--instructions") o.instructions = true;
    else gwlb::bench::die("usage: move_check [--flows N] [--seconds S] [--rounds R] [--cpu C] "
                          "[--window-bursts W] [--instructions]");
  }
  if (o.flows < 1024) gwlb::bench::die("--flows must be at least 1024");
  try {
    return gwlb::bench::run(o);
  } catch (const std::exception& e) {
    gwlb::bench::die(e.what());
  }
}
