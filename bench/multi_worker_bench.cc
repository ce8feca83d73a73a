// Benchmark (never pass/fail, except --check): two workers sharing one flow
// table (issue 28 item 6). W = 1 or 2 worker lcores run dp::processBurst over
// ONE shared dp::FlowTable and snapshot, each with its own WorkerState, mbuf
// pool and prebuilt list of packets; the main lcore (cpu 0) is worker 0, EAL
// lcore 1 (cpu 1, rte_eal_remote_launch) is worker 1.
//
// Packets: F established flows of 64 B UDP/IPv4 (client 10.64.x.y port p to
// 203.0.113.20:53, as pipeline_bench's). The mix is what a gateway load
// balancer does with each packet of a flow: once forward (from the router,
// encapsulated in aws Geneve to one of 3 appliances) and once on return (the
// appliance's Geneve back: validated, matched on the cookie, unwrapped, sent
// to the router). Each worker gets a shuffled list of such packets, one
// forward and one return per flow it is given:
//   1w-cpu1, 1w-cpu0  one worker alone (on cpu 1 / cpu 0): every flow
//   2w-sym            two workers; flows split by RSS as a NIC with gwlbd's
//                     symmetric Toeplitz key (0x6d5a repeated) and 2 queues
//                     would split them: both ways of a flow on one worker
//   2w-asym           the same flows split the same way, but each flow's
//                     return is on the OTHER worker (worker 0: forwards of
//                     its half and returns of the other half): the same mix
//                     per worker as 2w-sym, every entry's line written by
//                     both cores (last_seen and packets forward, last_seen
//                     on return)
//   2w-sym-ctlR       2w-sym while a control thread (a std::thread pinned to
//                     cpu 0, beside worker 0, as gwlbd's control thread runs
//                     on the main lcore) publishes R snapshots/s as gwlbd
//                     does: buildSnapshot (Maglev cache), swap, RCU token,
//                     free the old one once both workers passed a quiescent
//                     point (polled at its next tick)
// Per burst (untimed: allocate, copy the packets' frames from per-flow
// templates; timed with the TSC: processBurst only; untimed: check every
// packet came out, free, report a quiescent state). Cases rotate within each
// repetition (so the machine's load drifts over all alike), each for
// --seconds; medians over --reps per worker. Per worker: cycles/packet inside
// processBurst, the rate that implies (TSC / cycles), and the loop rate
// (packets / wall time, the untimed work and any preemption included).
// Also: the share of flows whose return would reach another queue than the
// forward under RSS on the outer header (the underlay port sees the
// appliance's Geneve; its UDP source port comes from the flow hash).
//
// --check (test `multi_worker`, suite perf): correctness of the shared table
// under two workers, not speed. Two workers in lockstep (a barrier per
// burst): F new flows, worker 0 their client-to-server packets, worker 1 the
// server-to-client ones, same flows in the same order, so both create each
// flow at once; then each worker the returns of the packets the OTHER one
// forwarded; then the 2w-asym mix. Fails unless every packet came out, the
// workers' flows_created add up to F (one entry per flow, not two), the table
// holds F keys, both directions of each flow went to one appliance with one
// cookie and UDP source port, and every return left toward the router its
// direction came from.
//
//   multi_worker_bench [--flows F] [--reps R] [--seconds S] [--burst B]
//                      [--rates R1,R2] [--check]
// Prints a summary on stderr and one JSON line (last line of stdout).
#include <pthread.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_thash.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/counters.h"
#include "common/snapshot.h"
#include "control/config/config.h"
#include "control/engine/maglev_cache.h"
#include "control/engine/snapshot_builder.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"
#include "bench/bench_net.h"
#include "bench/bench_util.h"
#include "tests/dp/packet_builder.h"

namespace gwlb::bench {
namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "multi_worker_bench: %s\n", what.c_str());
  std::exit(1);
}

constexpr size_t kFrame = 64;        // forward frames
constexpr size_t kRetStride = 192;   // return frame template per flow and direction
constexpr size_t kInnerAt = 82;      // aws Geneve: 14 + 20 + 8 + 8 + 32 of options
constexpr size_t kOptsAt = 50, kOptsLen = 32;
constexpr uint16_t kRouterPort = 0, kUnderlayPort = 3;
constexpr uint64_t kBaseNs = 1'000'000'000'000ULL;
const MacAddr kPortMac = *MacAddr::parse("02:00:00:00:00:a1");
// The routers each direction comes from (--check: returns must go back there).
const MacAddr kRouterMac[2] = {*MacAddr::parse("02:00:00:00:0a:0a"),
                               *MacAddr::parse("02:00:00:00:0b:0b")};
constexpr uint8_t kSymKey[40] = {0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
                                 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
                                 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
                                 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a};

struct Options {
  uint32_t flows = 4096;
  unsigned reps = 5;
  double seconds = 0.5;
  uint16_t burst = 32;
  std::vector<unsigned> rates = {100, 1000};
  bool check = false;
};

// A packet of a worker's list: flow << 2 | return << 1 | direction
// (0 client to server, 1 server to client).
inline uint32_t item(uint32_t flow, bool ret, unsigned dir) { return flow << 2 | uint32_t(ret) << 1 | dir; }
inline uint32_t itemFlow(uint32_t it) { return it >> 2; }
inline bool itemRet(uint32_t it) { return it & 2; }
inline unsigned itemDir(uint32_t it) { return it & 1; }

IpAddr client(uint32_t f) { return IpAddr::v4(0x0A400000u + f / 60000); }
uint16_t clientPort(uint32_t f) { return uint16_t(1024 + f % 60000); }
uint32_t rd32(const uint8_t* p) { return uint32_t(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3]; }
uint16_t rd16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }

// The flow and direction of an inner IPv4/UDP packet at `ip`, false if not ours.
bool flowOf(const uint8_t* ip, uint32_t flows, uint32_t& flow, unsigned& dir) {
  if ((ip[0] >> 4) != 4) return false;
  uint32_t src = rd32(ip + 12), dst = rd32(ip + 16);
  const uint8_t* l4 = ip + (ip[0] & 15) * 4;
  dir = src == kBenchServer.v4HostOrder() ? 1 : 0;
  uint32_t c = dir ? dst : src;
  uint16_t port = rd16(dir ? l4 + 2 : l4);
  if (c < 0x0A400000u || port < 1024) return false;
  flow = (c - 0x0A400000u) * 60000 + (port - 1024);
  return flow < flows;
}

// The RX queue (of `queues`, RETA filled round-robin) a NIC with the
// symmetric key would give an IPv4 TCP/UDP packet.
unsigned rssQueue(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, unsigned queues) {
  rte_ipv4_tuple t{};
  t.src_addr = src;
  t.dst_addr = dst;
  t.sport = sport;
  t.dport = dport;
  return rte_softrss(reinterpret_cast<uint32_t*>(&t), RTE_THASH_V4_L4_LEN, kSymKey) % 128 % queues;
}

// What the check records of each flow's Geneve in each direction.
struct Seen {
  uint32_t appliance = 0;
  uint16_t sport = 0;
  uint8_t opts[kOptsLen] = {};
  bool fwd = false, ret = false;
};

class Bench;

// One worker: its own state, pool and packet list; results of the last run.
struct Worker {
  Bench* b = nullptr;
  unsigned id = 0;
  rte_mempool* pool = nullptr;
  std::unique_ptr<dp::WorkerState> st;
  const std::vector<uint32_t>* items = nullptr;
  size_t cursor = 0;
  // The run: until end_tsc, or (end_tsc == 0) through the list once.
  uint64_t end_tsc = 0;
  bool lockstep = false;  // --check: a barrier with the other worker per burst
  bool capture = false;   // record outputs (templates, --check's Seen)
  // Results.
  uint64_t packets = 0, cycles = 0, wall = 0, max_gap = 0, lost = 0, bad_l2 = 0, unknown = 0;
  std::vector<uint32_t> burst_cycles;  // timed runs: each full burst's (reserved: no allocation)
  double cpu_s = 0;                    // CPU time the thread got during the run
  long preempted = 0;                  // involuntary context switches during the run
};

double threadCpu() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}
long involuntarySwitches() {
  rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nivcsw;
}

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o), hz_(double(rte_get_tsc_hz())) {
    if (o.burst == 0 || o.burst > dp::kMaxBurst) die("--burst must be 1..256");
    if (rte_lcore_count() < 2) die("needs lcores 0 and 1");
    qsbr_ = dp::createQsbr(2);
    for (unsigned i = 0; i < 2; ++i)
      if (rte_rcu_qsbr_thread_register(qsbr_, i) != 0) die("qsbr register");
    table_ = std::make_unique<dp::FlowTable>("mw_ft", std::max<uint32_t>(2 * o.flows, 1024), qsbr_,
                                             int(rte_socket_id()));
    dp_.flows = table_.get();
    cfg_ = benchConfig(kUnderlayPort, ctl::FailoverMode::kNoRebalance);
    dp_.snapshot.store(build().release(), std::memory_order_release);
    for (unsigned i = 0; i < 2; ++i) {
      w_[i].b = this;
      w_[i].id = i;
      w_[i].pool = dp::createMbufPool("mw_pool" + std::to_string(i), 1023, 2048);
      w_[i].st = std::make_unique<dp::WorkerState>();
      w_[i].st->id = uint16_t(i);
      w_[i].burst_cycles.reserve(size_t(1) << 21);
    }
    buildForward(o.check ? 2 : 1);
    ret_[0].assign(size_t(o.flows) * kRetStride, 0);
    if (o.check) {
      ret_[1].assign(size_t(o.flows) * kRetStride, 0);
      seen_.assign(size_t(o.flows) * 2, Seen{});
    }
    order_.resize(o.flows);
    std::iota(order_.begin(), order_.end(), 0u);
    std::shuffle(order_.begin(), order_.end(), std::mt19937(12345));
  }

  ~Bench() { delete dp_.snapshot.exchange(nullptr); }

  int runBench();
  int runCheck();

  // The worker's loop (worker 1 through rte_eal_remote_launch).
  static int launch(void* arg) {
    auto* w = static_cast<Worker*>(arg);
    w->b->work(*w);
    w->b->done_.store(true, std::memory_order_release);
    return 0;
  }

 private:
  struct CaseResult {
    std::string name;
    unsigned workers = 0;
    unsigned ctl_rate = 0;
    // Per worker, one value per repetition: cycles/packet of the median burst
    // and the mean over undisturbed bursts (under 8x the median: a burst
    // during which the thread was switched out is left out), the rate that
    // mean gives on a core of its own, the loop rate (packets / wall time),
    // the share of the wall time the thread ran, preemptions per second.
    std::vector<double> cpp_med[2], cpp[2], mpps[2], loop_mpps[2], cpu_share[2], preempt[2],
        gap_us[2], agg, agg_loop;
    std::vector<double> ctl_pubs, ctl_build_us, ctl_cpu_pct;
  };

  std::unique_ptr<dp::Snapshot> build() {
    ++generation_;
    ctl::HealthMap h = benchAllHealthy();
    // Snapshots really differ (as snapshot_bench's): odd ones have appliance 3
    // unhealthy, in a no_rebalance group (its flows stay).
    if (generation_ % 2 == 0) h[benchAppliance(2).v4HostOrder()] = HealthState::kUnhealthy;
    return ctl::buildSnapshot(cfg_, reg_, {}, generation_, h, nullptr, nullptr, nullptr, &maglev_);
  }

  void buildForward(unsigned dirs) {
    using namespace dptest;
    for (unsigned d = 0; d < dirs; ++d) {
      fwd_[d].assign(size_t(o_.flows) * kFrame, 0);
      L2 l2{kPortMac, kRouterMac[d], {}};
      for (uint32_t f = 0; f < o_.flows; ++f) {
        IpAddr c = client(f);
        uint16_t p = clientPort(f);
        Bytes l4 = d == 0 ? udp(c, kBenchServer, p, 53, pattern(22))
                          : udp(kBenchServer, c, 53, p, pattern(22));
        Bytes fr = ether(l2, kEthIpv4, d == 0 ? ipv4(c, kBenchServer, 17, l4)
                                              : ipv4(kBenchServer, c, 17, l4));
        if (fr.size() != kFrame) die("frame is not 64 bytes");
        std::memcpy(&fwd_[d][size_t(f) * kFrame], fr.data(), kFrame);
      }
    }
  }

  void fill(rte_mbuf* m, uint32_t it) {
    uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
    uint32_t f = itemFlow(it);
    unsigned dir = itemDir(it);
    if (itemRet(it)) {
      std::memcpy(d, &ret_[dir][size_t(f) * kRetStride], ret_len_);
      m->data_len = uint16_t(ret_len_);
      m->port = kUnderlayPort;
    } else {
      std::memcpy(d, &fwd_[dir][size_t(f) * kFrame], kFrame);
      m->data_len = kFrame;
      m->port = kRouterPort;
    }
    m->pkt_len = m->data_len;
  }

  // Records a Geneve packet the gateway sent: the appliance's reply
  // template (outer MACs and addresses swapped) and, for --check, what
  // must agree between the two directions.
  void captureGeneve(Worker& w, const rte_mbuf* m) {
    const uint8_t* p = rte_pktmbuf_mtod(m, const uint8_t*);
    uint32_t f;
    unsigned dir;
    if (m->data_len > kRetStride || !flowOf(p + kInnerAt, o_.flows, f, dir) || ret_[dir].empty()) {
      ++w.unknown;
      return;
    }
    uint8_t* t = &ret_[dir][size_t(f) * kRetStride];
    std::memcpy(t, p, m->data_len);
    std::swap_ranges(t, t + 6, t + 6);
    std::swap_ranges(t + 26, t + 30, t + 30);
    ret_len_ = m->data_len;
    if (seen_.empty()) return;
    Seen& s = seen_[size_t(f) * 2 + dir];
    s.fwd = true;
    s.appliance = rd32(p + 30);
    s.sport = rd16(p + 34);
    std::memcpy(s.opts, p + kOptsAt, kOptsLen);
  }

  // A returned packet: back toward the router its direction came from.
  void captureReturn(Worker& w, const rte_mbuf* m) {
    const uint8_t* p = rte_pktmbuf_mtod(m, const uint8_t*);
    uint32_t f;
    unsigned dir;
    if (!flowOf(p + 14, o_.flows, f, dir)) {
      ++w.unknown;
      return;
    }
    if (std::memcmp(p, kRouterMac[dir].b.data(), 6) != 0 || std::memcmp(p + 6, kPortMac.b.data(), 6) != 0 ||
        m->port != kRouterPort)
      ++w.bad_l2;
    if (!seen_.empty()) seen_[size_t(f) * 2 + dir].ret = true;
  }

  void work(Worker& w) {
    rte_rcu_qsbr_thread_online(qsbr_, w.id);
    const std::vector<uint32_t>& items = *w.items;
    rte_mbuf* pkts[dp::kMaxBurst];
    dp::BurstOutput out;
    uint64_t bursts = 0;
    w.burst_cycles.clear();
    const double cpu0 = threadCpu();
    const long sw0 = involuntarySwitches();
    const uint64_t start = rte_rdtsc();
    uint64_t last = start;
    w.packets = w.cycles = w.max_gap = 0;
    for (;;) {
      uint64_t now_tsc = rte_rdtsc();
      if (w.end_tsc ? now_tsc >= w.end_tsc : w.cursor >= items.size()) break;
      w.max_gap = std::max(w.max_gap, now_tsc - last);
      last = now_tsc;
      if (w.lockstep) {  // both workers' burst i at once
        barrier_.fetch_add(1, std::memory_order_acq_rel);
        while (barrier_.load(std::memory_order_acquire) < 2 * (bursts + 1)) rte_pause();
      }
      uint16_t k = o_.burst;
      if (!w.end_tsc) k = uint16_t(std::min<size_t>(k, items.size() - w.cursor));
      if (rte_pktmbuf_alloc_bulk(w.pool, pkts, k) != 0) die("mbuf pool empty");
      for (uint16_t j = 0; j < k; ++j) {
        if (w.cursor >= items.size()) w.cursor = 0;
        fill(pkts[j], items[w.cursor++]);
      }
      uint64_t now = dp::monotonicNs() - t_start_ + kBaseNs;
      uint64_t t0 = rte_rdtsc();
      dp::processBurst(dp_, *w.st, pkts, k, now, out);
      uint64_t dt = rte_rdtsc() - t0;
      w.cycles += dt;
      if (w.end_tsc && w.burst_cycles.size() < w.burst_cycles.capacity())
        w.burst_cycles.push_back(uint32_t(std::min<uint64_t>(dt, UINT32_MAX)));
      if (w.capture) {
        for (uint16_t j = 0; j < out.n_appliance; ++j) captureGeneve(w, out.to_appliance[j]);
        for (uint16_t j = 0; j < out.n_router; ++j) captureReturn(w, out.to_router[j]);
      }
      w.lost += k - (out.n_appliance + out.n_router);
      rte_pktmbuf_free_bulk(out.to_appliance, out.n_appliance);
      rte_pktmbuf_free_bulk(out.to_router, out.n_router);
      rte_rcu_qsbr_quiescent(qsbr_, w.id);
      w.packets += k;
      ++bursts;
    }
    w.wall = rte_rdtsc() - start;
    w.cpu_s = threadCpu() - cpu0;
    w.preempted = involuntarySwitches() - sw0;
    rte_rcu_qsbr_thread_offline(qsbr_, w.id);
  }

  // Runs workers `which` (bit i: worker i) together: worker 0 on the main
  // lcore (cpu 0), worker 1 on lcore 1 (cpu 1). With a time limit, all stop
  // at one TSC deadline.
  void runTogether(unsigned which, double seconds) {
    barrier_.store(0);
    uint64_t end = seconds > 0 ? rte_rdtsc() + uint64_t(seconds * hz_) : 0;
    for (Worker& w : w_) w.end_tsc = end;
    unsigned lc1 = rte_get_next_lcore(-1, 1, 0);
    done_.store(false);
    if (which & 2)
      if (rte_eal_remote_launch(&Bench::launch, &w_[1], lc1) != 0) die("cannot launch worker 1");
    if (which & 1) {
      work(w_[0]);
    } else {
      while (!done_.load(std::memory_order_acquire)) usleep(1000);  // cpu 0 stays free
    }
    if (which & 2) rte_eal_wait_lcore(lc1);
  }

  // The control thread of the 2w-sym-ctlR cases.
  struct Control {
    std::atomic<bool> stop{false};
    unsigned rate = 0;
    uint64_t pubs = 0;
    std::vector<double> build_ns;
    double cpu_s = 0, wall_s = 0;
  };
  void control(Control& c) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    struct Pending {
      const dp::Snapshot* s;
      uint64_t token;
    };
    std::deque<Pending> pending;
    timespec next, cpu0, cpu1, w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &next);
    w0 = next;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    const long period = long(1e9 / c.rate);
    while (!c.stop.load(std::memory_order_relaxed)) {
      next.tv_nsec += period;
      while (next.tv_nsec >= 1'000'000'000) {
        next.tv_nsec -= 1'000'000'000;
        ++next.tv_sec;
      }
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
      while (!pending.empty() && rte_rcu_qsbr_check(qsbr_, pending.front().token, false) == 1) {
        delete pending.front().s;
        pending.pop_front();
      }
      uint64_t b0 = rte_rdtsc();
      std::unique_ptr<dp::Snapshot> s = build();
      c.build_ns.push_back(double(rte_rdtsc() - b0) * 1e9 / hz_);
      const dp::Snapshot* old = dp_.snapshot.exchange(s.release(), std::memory_order_acq_rel);
      pending.push_back({old, rte_rcu_qsbr_start(qsbr_)});
      ++c.pubs;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    c.cpu_s = double(cpu1.tv_sec - cpu0.tv_sec) + double(cpu1.tv_nsec - cpu0.tv_nsec) / 1e9;
    c.wall_s = double(w1.tv_sec - w0.tv_sec) + double(w1.tv_nsec - w0.tv_nsec) / 1e9;
    for (Pending& p : pending) {  // the workers are offline by now
      rte_rcu_qsbr_check(qsbr_, p.token, true);
      delete p.s;
    }
  }

  // One untimed pass through every flow's client-to-server packet on worker
  // 0: creates the flows and records their return templates.
  void createFlows() {
    t_start_ = dp::monotonicNs();
    std::vector<uint32_t> items;
    for (uint32_t f : order_) items.push_back(item(f, false, 0));
    Worker& w = w_[0];
    w.items = &items;
    w.cursor = 0;
    w.capture = true;
    runTogether(1, 0);
    w.capture = false;
    if (w.lost || w.unknown) die("creating the flows lost packets: " + drops(w));
    if (table_->count() != o_.flows) die("the table does not hold every flow");
  }

  std::string drops(const Worker& w) const {
    std::string s = "lost " + std::to_string(w.lost) + ", unknown outputs " +
                    std::to_string(w.unknown) + "; ";
    for (size_t i = 0; i < kNumCounters; ++i)
      if (kCounterInfo[i].is_drop && w.st->counters.v[i])
        s += std::string(kCounterInfo[i].name) + "=" + std::to_string(w.st->counters.v[i]) + " ";
    return s;
  }

  Options o_;
  double hz_;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<dp::FlowTable> table_;
  dp::Dataplane dp_;
  ctl::Config cfg_;
  ctl::ServerRegistry reg_;
  ctl::MaglevCache maglev_;
  uint64_t generation_ = 0;
  Worker w_[2];
  std::vector<uint8_t> fwd_[2], ret_[2];
  uint32_t ret_len_ = 0;
  std::vector<Seen> seen_;
  std::vector<uint32_t> order_;
  uint64_t t_start_ = 0;
  std::atomic<uint64_t> barrier_{0};
  std::atomic<bool> done_{false};  // worker 1 returned

  std::string caseJson(const CaseResult& r) const;
};

double med(const std::vector<double>& v) { return stats(v).median; }
std::string spread(const std::vector<double>& v, const char* f) {
  Stats s = stats(v);
  return "[" + fmt(f, s.min) + "," + fmt(f, s.max) + "]";
}

std::string Bench::caseJson(const CaseResult& r) const {
  std::string j = "{\"name\":\"" + r.name + "\",\"workers\":[";
  for (unsigned i = 0; i < 2; ++i) {
    if (r.cpp[i].empty()) continue;
    if (j.back() == '}') j += ",";
    j += "{\"worker\":" + std::to_string(i) + ",\"cpu\":" + std::to_string(i) +
         ",\"cycles_per_packet\":" + fmt("%.1f", med(r.cpp[i])) + ",\"cpp_spread\":" +
         spread(r.cpp[i], "%.1f") + ",\"cycles_per_packet_median_burst\":" +
         fmt("%.1f", med(r.cpp_med[i])) + ",\"cpu_share\":" + fmt("%.3f", med(r.cpu_share[i])) +
         ",\"preempted_per_s\":" + fmt("%.0f", med(r.preempt[i])) + ",\"mpps\":" + fmt("%.3f", med(r.mpps[i])) +
         ",\"loop_mpps\":" + fmt("%.3f", med(r.loop_mpps[i])) + ",\"loop_mpps_spread\":" +
         spread(r.loop_mpps[i], "%.3f") + ",\"max_gap_us\":" + fmt("%.1f", stats(r.gap_us[i]).max) +
         "}";
  }
  j += "],\"aggregate_mpps\":" + fmt("%.3f", med(r.agg)) + ",\"aggregate_loop_mpps\":" +
       fmt("%.3f", med(r.agg_loop)) + ",\"aggregate_loop_spread\":" + spread(r.agg_loop, "%.3f");
  if (r.ctl_rate)
    j += ",\"control\":{\"rate\":" + std::to_string(r.ctl_rate) + ",\"publications_per_s\":" +
         fmt("%.0f", med(r.ctl_pubs)) + ",\"build_us\":" + fmt("%.1f", med(r.ctl_build_us)) +
         ",\"cpu_pct\":" + fmt("%.2f", med(r.ctl_cpu_pct)) + "}";
  return j + "}";
}

int Bench::runBench() {
  createFlows();
  // RSS split (symmetric key, 2 queues) of each flow, and where its return
  // would land if the underlay port hashed the outer header.
  std::vector<uint32_t> uni, sym[2], asym[2];
  uint32_t crossed = 0;
  std::vector<uint32_t> both;
  for (uint32_t f : order_) {
    both.push_back(item(f, false, 0));
    both.push_back(item(f, true, 0));
  }
  std::shuffle(both.begin(), both.end(), std::mt19937(777));
  for (uint32_t it : both) {
    uint32_t f = itemFlow(it);
    unsigned q = rssQueue(client(f).v4HostOrder(), kBenchServer.v4HostOrder(), clientPort(f), 53, 2);
    uni.push_back(it);
    sym[q].push_back(it);
    asym[itemRet(it) ? 1 - q : q].push_back(it);
    if (itemRet(it)) {
      const uint8_t* t = &ret_[0][size_t(f) * kRetStride];
      crossed += rssQueue(rd32(t + 26), rd32(t + 30), rd16(t + 34), rd16(t + 36), 2) != q;
    }
  }
  std::vector<CaseResult> cases;
  auto add = [&](const char* n, unsigned workers, unsigned rate) {
    CaseResult r;
    r.name = n;
    r.workers = workers;
    r.ctl_rate = rate;
    cases.push_back(r);
  };
  add("1w-cpu1", 1, 0);
  add("1w-cpu0", 1, 0);
  add("2w-sym", 2, 0);
  add("2w-asym", 2, 0);
  for (unsigned rate : o_.rates) {
    cases.push_back({});
    cases.back().name = "2w-sym-ctl" + std::to_string(rate);
    cases.back().workers = 2;
    cases.back().ctl_rate = rate;
  }
  for (unsigned rep = 0; rep <= o_.reps; ++rep) {  // rep 0: warm-up, not counted
    for (CaseResult& r : cases) {
      unsigned which;
      if (r.name == "1w-cpu1") {
        which = 2;
        w_[1].items = &uni;
      } else if (r.name == "1w-cpu0") {
        which = 1;
        w_[0].items = &uni;
      } else {
        which = 3;
        bool a = r.name == "2w-asym";
        w_[0].items = a ? &asym[0] : &sym[0];
        w_[1].items = a ? &asym[1] : &sym[1];
      }
      for (Worker& w : w_) w.cursor = 0;
      Control c;
      c.rate = r.ctl_rate;
      std::thread ct;
      if (r.ctl_rate) {
        ct = std::thread([&] { control(c); });
        usleep(20000);
      }
      uint64_t lost0 = w_[0].lost + w_[1].lost;
      uint64_t created0 = w_[0].st->counters.get(Counter::flows_created) +
                          w_[1].st->counters.get(Counter::flows_created);
      runTogether(which, rep ? o_.seconds : o_.seconds / 5);
      if (ct.joinable()) {
        c.stop.store(true);
        ct.join();
      }
      if (w_[0].lost + w_[1].lost != lost0)
        die("case " + r.name + ": a packet did not come out: " + drops(w_[0]) + " | " + drops(w_[1]));
      if (w_[0].st->counters.get(Counter::flows_created) +
              w_[1].st->counters.get(Counter::flows_created) != created0)
        die("case " + r.name + ": an established flow was created again");
      if (!rep) continue;
      double agg = 0, agg_loop = 0;
      for (unsigned i = 0; i < 2; ++i) {
        if (!(which >> i & 1)) continue;
        const Worker& w = w_[i];
        std::vector<double> b(w.burst_cycles.begin(), w.burst_cycles.end());
        double mb = stats(b).median, sum = 0;
        size_t n = 0;
        for (double x : b)
          if (x < 8 * mb) sum += x, ++n;
        double cpp = sum / double(n) / o_.burst;
        double wall_s = double(w.wall) / hz_;
        double loop = double(w.packets) / wall_s / 1e6;
        r.cpp_med[i].push_back(mb / o_.burst);
        r.cpp[i].push_back(cpp);
        r.cpu_share[i].push_back(w.cpu_s / wall_s);
        r.preempt[i].push_back(double(w.preempted) / wall_s);
        r.mpps[i].push_back(hz_ / cpp / 1e6);
        r.loop_mpps[i].push_back(loop);
        r.gap_us[i].push_back(double(w.max_gap) * 1e6 / hz_);
        agg += hz_ / cpp / 1e6;
        agg_loop += loop;
      }
      r.agg.push_back(agg);
      r.agg_loop.push_back(agg_loop);
      if (r.ctl_rate) {
        r.ctl_pubs.push_back(double(c.pubs) / c.wall_s);
        r.ctl_build_us.push_back(stats(c.build_ns).median / 1e3);
        r.ctl_cpu_pct.push_back(100 * c.cpu_s / c.wall_s);
      }
    }
  }
  for (const CaseResult& r : cases) {
    std::fprintf(stderr, "%-16s", r.name.c_str());
    for (unsigned i = 0; i < 2; ++i)
      if (!r.cpp[i].empty())
        std::fprintf(stderr, "  w%u(cpu %u) %.1f cyc/pkt (median burst %.1f), %.2f Mpps, loop %.2f "
                     "Mpps, ran %.0f %%", i, i, med(r.cpp[i]), med(r.cpp_med[i]), med(r.mpps[i]),
                     med(r.loop_mpps[i]), 100 * med(r.cpu_share[i]));
    std::fprintf(stderr, "  | aggregate %.2f Mpps, loop %.2f", med(r.agg), med(r.agg_loop));
    if (r.ctl_rate)
      std::fprintf(stderr, " | control %.0f/s, build %.1f us, %.2f %% cpu", med(r.ctl_pubs),
                   med(r.ctl_build_us), med(r.ctl_cpu_pct));
    std::fprintf(stderr, "\n");
  }
  double la[3] = {0, 0, 0};
  if (getloadavg(la, 3) < 1) la[0] = -1;
  std::printf("{\"flows\":%u,\"frame_bytes\":%zu,\"return_frame_bytes\":%u,\"burst\":%u,"
              "\"reps\":%u,\"seconds\":%.2f,\"tsc_hz\":%.0f,\"sym_split\":[%zu,%zu],"
              "\"returns_crossed_by_outer_rss\":%.4f,\"load_avg_1m_end\":%.2f,\"cases\":[",
              o_.flows, kFrame, ret_len_, o_.burst, o_.reps, o_.seconds, hz_, sym[0].size() / 2,
              sym[1].size() / 2, double(crossed) / o_.flows, la[0]);
  for (size_t i = 0; i < cases.size(); ++i)
    std::printf("%s%s", i ? "," : "", caseJson(cases[i]).c_str());
  std::printf("]}\n");
  return 0;
}

int Bench::runCheck() {
  std::vector<std::string> fail;
  t_start_ = dp::monotonicNs();
  // 1. Both directions of every new flow at once: worker 0 client to server,
  //    worker 1 server to client, the same flows burst by burst.
  std::vector<uint32_t> l[2];
  for (uint32_t f : order_)
    for (unsigned d = 0; d < 2; ++d) l[d].push_back(item(f, false, d));
  for (unsigned i = 0; i < 2; ++i) {
    w_[i].items = &l[i];
    w_[i].cursor = 0;
    w_[i].lockstep = w_[i].capture = true;
  }
  runTogether(3, 0);
  uint64_t c0 = w_[0].st->counters.get(Counter::flows_created);
  uint64_t c1 = w_[1].st->counters.get(Counter::flows_created);
  std::fprintf(stderr, "new flows, both directions at once: flows_created %llu (worker 0) + %llu "
               "(worker 1) = %llu for %u flows; table holds %u\n", (unsigned long long)c0,
               (unsigned long long)c1, (unsigned long long)(c0 + c1), o_.flows, table_->count());
  if (c0 + c1 != o_.flows)
    fail.push_back("flows_created " + std::to_string(c0 + c1) + " for " + std::to_string(o_.flows) + " flows");
  if (table_->count() != o_.flows)
    fail.push_back("the table holds " + std::to_string(table_->count()) + " keys");
  uint32_t split = 0;
  for (uint32_t f = 0; f < o_.flows; ++f) {
    const Seen& a = seen_[size_t(f) * 2];
    const Seen& b = seen_[size_t(f) * 2 + 1];
    if (!a.fwd || !b.fwd || a.appliance != b.appliance || a.sport != b.sport ||
        std::memcmp(a.opts, b.opts, kOptsLen) != 0)
      ++split;
  }
  if (split) fail.push_back(std::to_string(split) + " flows not on one appliance/cookie both ways");
  // 2. The returns, each on the other worker than its forward.
  for (unsigned i = 0; i < 2; ++i) {
    l[i].clear();
    for (uint32_t f : order_) l[i].push_back(item(f, true, 1 - i));
    w_[i].cursor = 0;
  }
  runTogether(3, 0);
  uint32_t unreturned = 0;
  for (const Seen& s : seen_) unreturned += !s.ret;
  if (unreturned) fail.push_back(std::to_string(unreturned) + " returns did not come back");
  // 3. The 2w-asym mix (forward and return of each flow on different workers), free-running.
  for (unsigned i = 0; i < 2; ++i) {
    l[i].clear();
    for (uint32_t f : order_) {
      unsigned q = rssQueue(client(f).v4HostOrder(), kBenchServer.v4HostOrder(), clientPort(f), 53, 2);
      if (q == i) l[i].push_back(item(f, false, 0));
      else l[i].push_back(item(f, true, 0));
    }
    w_[i].cursor = 0;
    w_[i].lockstep = w_[i].capture = false;
  }
  runTogether(3, 0);
  uint64_t created = w_[0].st->counters.get(Counter::flows_created) +
                     w_[1].st->counters.get(Counter::flows_created);
  if (created != o_.flows) fail.push_back("established flows created again: " + std::to_string(created));
  for (const Worker& w : w_) {
    if (w.lost) fail.push_back("worker " + std::to_string(w.id) + ": " + drops(w));
    if (w.bad_l2) fail.push_back("worker " + std::to_string(w.id) + ": " + std::to_string(w.bad_l2) +
                                 " returns to the wrong router");
    if (w.unknown) fail.push_back("worker " + std::to_string(w.id) + ": unknown outputs");
  }
  uint64_t packets = 0;
  for (const Seen& s : seen_) packets += 2 * (s.fwd + s.ret);
  std::printf("{\"check\":%s,\"flows\":%u,\"flows_created\":[%llu,%llu],\"table_count\":%u}\n",
              fail.empty() ? "true" : "false", o_.flows, (unsigned long long)c0,
              (unsigned long long)c1, table_->count());
  for (const std::string& f : fail) std::fprintf(stderr, "check FAILED: %s\n", f.c_str());
  if (fail.empty())
    std::fprintf(stderr, "check ok: %u flows, both directions created at once on two workers, "
                 "returns on the other worker, no packet lost\n", o_.flows);
  return fail.empty() ? 0 : 1;
}

}  // namespace

int run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--flows") o.flows = uint32_t(std::stoul(next()));
    else if (a == "--reps") o.reps = unsigned(std::stoul(next()));
    else if (a == "--seconds") o.seconds = std::stod(next());
    else if (a == "--burst") o.burst = uint16_t(std::stoul(next()));
    else if (a == "--check") o.check = true;
    else if (a == "--rates") {
      o.rates.clear();
      std::string s = next();
      for (size_t p = 0; p < s.size();) {
        size_t q = s.find(',', p);
        if (q == std::string::npos) q = s.size();
        o.rates.push_back(unsigned(std::stoul(s.substr(p, q - p))));
        p = q + 1;
      }
    } else {
      die("usage: multi_worker_bench [--flows F] [--reps R] [--seconds S] [--burst B] "
          "[--rates R1,R2] [--check]");
    }
  }
  if (o.flows == 0 || o.flows > (1u << 29)) die("--flows must be 1..2^29");
  for (unsigned r : o.rates)
    if (r < 1 || r > 100000) die("--rates: each 1..100000");
  ctl::keepSnapshotMemoryMapped();  // as gwlbd does
  try {
    dp::initEal("multi_worker_bench", {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
                                       "-m", "256", "--log-level", "lib.eal:error", "--lcores=0@0,1@1"});
    Bench b(o);
    return o.check ? b.runCheck() : b.runBench();
  } catch (const std::exception& e) {
    die(e.what());
  }
}

}  // namespace gwlb::bench

int main(int argc, char** argv) { return gwlb::bench::run(argc, argv); }
