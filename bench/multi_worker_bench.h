// multi_worker_bench's parts (multi_worker_bench.cc says what it measures and
// checks): the packets of each flow and direction, the workers sharing one
// flow table and snapshot, and the Bench that runs them (its timed cases in
// multi_worker_bench.cc, its --check in multi_worker_check.cc).
#pragma once

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


[[noreturn]] inline void die(const std::string& what) {
  std::fprintf(stderr, "multi_worker_bench: %s\n", what.c_str());
  std::exit(1);
}

inline constexpr size_t kFrame = 64;        // forward frames
inline constexpr size_t kRetStride = 192;   // return frame template per flow and direction
inline constexpr size_t kInnerAt = 82;      // aws Geneve: 14 + 20 + 8 + 8 + 32 of options
inline constexpr size_t kOptsAt = 50, kOptsLen = 32;
inline constexpr uint16_t kRouterPort = 0, kUnderlayPort = 3;
inline constexpr uint64_t kBaseNs = 1'000'000'000'000ULL;
inline const MacAddr kPortMac = *MacAddr::parse("02:00:00:00:00:a1");
// The routers each direction comes from (--check: returns must go back there).
inline const MacAddr kRouterMac[2] = {*MacAddr::parse("02:00:00:00:0a:0a"),
                               *MacAddr::parse("02:00:00:00:0b:0b")};
inline constexpr uint8_t kSymKey[40] = {0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
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

inline IpAddr client(uint32_t f) { return IpAddr::v4(0x0A400000u + f / 60000); }
inline uint16_t clientPort(uint32_t f) { return uint16_t(1024 + f % 60000); }
inline uint32_t rd32(const uint8_t* p) { return uint32_t(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3]; }
inline uint16_t rd16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }

// The flow and direction of an inner IPv4/UDP packet at `ip`, false if not ours.
inline bool flowOf(const uint8_t* ip, uint32_t flows, uint32_t& flow, unsigned& dir) {
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
inline unsigned rssQueue(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport, unsigned queues) {
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

inline double threadCpu() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}
inline long involuntarySwitches() {
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
  ctl::ApplianceRegistry reg_;
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

inline double med(const std::vector<double>& v) { return stats(v).median; }
inline std::string spread(const std::vector<double>& v, const char* f) {
  Stats s = stats(v);
  return "[" + fmt(f, s.min) + "," + fmt(f, s.max) + "]";
}

}  // namespace gwlb::bench
