// Benchmark (never pass/fail): snapshot publication under load. The real
// worker loop (dp::workerLoop, one worker on lcore 1) forwards traffic between
// two net_ring ports (rte_eth_from_rings) while the main lcore (0), acting as
// gwlbd's control thread, publishes a new snapshot `--rate` times per second.
//
// Ports: port 0 is the router side (its RX ring is fed by the main thread:
// 64-byte UDP/IPv4 packets of `--flows` client flows to one server), port 1
// the underlay (Geneve to 3 appliances, aws format, leaves through its TX
// ring). The main thread tops the feed ring up, drains both TX rings and
// counts what comes out.
//
// Each publication, as gwlbd does it (control/daemon/daemon.cc): build the snapshot
// from the config (control/engine/snapshot_builder.h buildSnapshot; successive
// snapshots alternate between all appliances healthy and one unhealthy, in a
// no_rebalance group, so they really differ), swap the published pointer,
// take an rte_rcu_qsbr token and free the old snapshot once every worker has
// passed a quiescent point after it. The time from just before the swap until
// rte_rcu_qsbr_check(token) (non-blocking, polled) reports every worker
// quiescent is the time until every worker has seen the new snapshot: the
// worker reports a quiescent state once per poll loop, so from then on no
// burst of its can use the old one. TSC, per publication.
//
// The machine is shared: when another thread takes the CPU of the worker or
// of the control thread during a measurement, that measurement says more
// about the scheduler than about the code. Both threads' scheduler counters
// (/proc/self/task/<tid>/schedstat: run time, wait time, timeslices) are read
// just before the swap and just after the worker is seen; a publication during
// which neither thread was switched out is "undisturbed", and its
// distribution is reported beside the distribution of all publications.
//
// Phases: warm-up (flows created, not measured), loaded (publications while
// the worker forwards), idle (publications with no traffic: the floor).
// Packets: every packet fed must come out of a TX ring or be counted by a
// named drop counter of the worker; lost = fed - out - drops.
//
//   snapshot_bench [--seconds S] [--rate R] [--flows F] [--idle-seconds I]
//                  [--appliances N] [--no-maglev-cache] [--classes N]
//                  [--no-class-cache]
// --appliances: the group's size (3 by default; appliance 3 flaps);
// --classes: N traffic classes of mixed fields, unchanged between builds;
// --no-class-cache: compile them at every build (as before the cache);
// --no-maglev-cache: build every Maglev table afresh (as before the Maglev cache).
// Prints a summary, then one JSON line (last line of stdout).
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
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
#include "tests/dp/packet_builder.h"

namespace gwlb::bench {
namespace {

constexpr size_t kFrameLen = 64;
constexpr unsigned kFeedRing = 4096;   // port 0 RX
constexpr unsigned kOutRing = 16384;   // each port's TX
constexpr unsigned kMbufs = 32767;
constexpr unsigned kFeedTarget = 3072;  // keep the feed ring at least this full
constexpr uint16_t kBurst = 32;

struct Options {
  double seconds = 10;
  double idle_seconds = 2;
  unsigned rate = 1000;
  uint32_t flows = 1024;
  unsigned appliances = 3;
  bool no_cache = false;
  uint32_t classes = 0;         // traffic classes (bench/bench_net.h benchClasses)
  bool no_class_cache = false;  // compile the classes at every build
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "snapshot_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

struct Dist {
  size_t n = 0;
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0, min = 0;
  size_t over_10us = 0;
};
Dist dist(std::vector<double> v) {  // values in ns
  Dist d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  auto q = [&](double f) { return v[size_t(f * double(v.size() - 1) + 0.5)]; };
  d.n = v.size();
  d.p50 = q(0.5);
  d.p90 = q(0.9);
  d.p99 = q(0.99);
  d.p999 = q(0.999);
  d.max = v.back();
  d.min = v.front();
  d.over_10us = size_t(v.end() - std::upper_bound(v.begin(), v.end(), 10000.0));
  return d;
}
std::string distJson(const Dist& d) {
  return "{\"n\":" + std::to_string(d.n) + ",\"min\":" + fmt("%.0f", d.min) + ",\"p50\":" +
         fmt("%.0f", d.p50) + ",\"p90\":" + fmt("%.0f", d.p90) + ",\"p99\":" + fmt("%.0f", d.p99) +
         ",\"p999\":" + fmt("%.0f", d.p999) + ",\"max\":" + fmt("%.0f", d.max) +
         ",\"over_10us\":" + std::to_string(d.over_10us) + "}";
}

// A thread's scheduler counters (/proc/self/task/<tid>/schedstat).
class SchedStat {
 public:
  SchedStat() = default;
  explicit SchedStat(const std::string& path) : fd_(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~SchedStat() {
    if (fd_ >= 0) close(fd_);
  }
  SchedStat(const SchedStat&) = delete;
  SchedStat& operator=(const SchedStat&) = delete;
  bool ok() const { return fd_ >= 0; }
  // Timeslices run so far (each switch in adds one), or 0 when unreadable.
  uint64_t slices() const {
    char b[128];
    ssize_t n = fd_ >= 0 ? pread(fd_, b, sizeof b - 1, 0) : -1;
    if (n <= 0) return 0;
    b[n] = 0;
    unsigned long long run = 0, wait = 0, slices = 0;
    if (std::sscanf(b, "%llu %llu %llu", &run, &wait, &slices) != 3) return 0;
    return slices;
  }

 private:
  int fd_ = -1;
};

// The schedstat path of the EAL thread of `lcore` (DPDK names it
// "lcore-worker-<lcore>"), or "" when not found.
std::string lcoreThreadStat(unsigned lcore) {
  std::string want1 = "lcore-worker-" + std::to_string(lcore);
  std::string want2 = "rte-worker-" + std::to_string(lcore);
  std::string found;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string base = std::string("/proc/self/task/") + e->d_name;
      char comm[64] = {};
      int fd = open((base + "/comm").c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t n = read(fd, comm, sizeof comm - 1);
      close(fd);
      std::string c(comm, n > 0 ? size_t(n) : 0);
      while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.pop_back();
      if (c == want1 || c == want2) found = base + "/schedstat";
    }
    closedir(d);
  }
  return found;
}

rte_ring* makeRing(const std::string& name, unsigned size) {
  rte_ring* r = rte_ring_create(name.c_str(), size, int(rte_socket_id()),
                                RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (!r) die("rte_ring_create(" + name + ") failed");
  return r;
}

uint16_t ringPort(const std::string& name, rte_ring* rx, rte_ring* tx, rte_mempool* pool) {
  int port = rte_eth_from_rings(name.c_str(), &rx, 1, &tx, 1, unsigned(rte_socket_id()));
  if (port < 0) die("rte_eth_from_rings(" + name + ") failed");
  rte_eth_conf conf{};
  uint16_t p = uint16_t(port);
  if (rte_eth_dev_configure(p, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(p, 0, 1024, rte_socket_id(), nullptr, pool) != 0 ||
      rte_eth_tx_queue_setup(p, 0, 1024, rte_socket_id(), nullptr) != 0 ||
      rte_eth_dev_start(p) != 0)
    die("cannot start port " + name);
  return p;
}

IpAddr appliance(int i) { return benchAppliance(i); }  // 10.0.0.11..

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o) {}

  int run() {
    if (rte_lcore_count() < 2) die("needs two lcores (main + worker)");
    hz_ = double(rte_get_tsc_hz());
    pool_ = dp::createMbufPool("sb_pool", kMbufs, 2048);
    feed_ = makeRing("sb_feed", kFeedRing);
    out0_ = makeRing("sb_out0", kOutRing);
    out1_ = makeRing("sb_out1", kOutRing);
    unused_rx_ = makeRing("sb_rx1", 1024);
    uint16_t p0 = ringPort("sb_router", feed_, out0_, pool_);
    uint16_t p1 = ringPort("sb_underlay", unused_rx_, out1_, pool_);
    if (p0 != 0 || p1 != 1) die("expected ports 0 and 1 (another device exists?)");
    buildFrames();
    buildConfig();

    qsbr_ = dp::createQsbr(1);
    flows_ = std::make_unique<dp::FlowTable>("sb_flows", 65536, qsbr_, int(rte_socket_id()));
    dp_.flows = flows_.get();
    punt_ = dp::createRing("sb_punt", 1024);
    dp_.punt = punt_;
    dp_.snapshot.store(build().release(), std::memory_order_release);

    state_ = std::make_unique<dp::WorkerState>();
    run_ = std::make_unique<dp::WorkerRun>();
    run_->dp = &dp_;
    run_->qsbr = qsbr_;
    run_->state = state_.get();
    run_->stop = &stop_;
    run_->cfg.qsbr_id = 0;
    run_->cfg.tx_queue = 0;
    run_->cfg.burst = kBurst;
    run_->cfg.rx = {{0, 0}, {1, 0}};
    run_->cfg.n_ports = 2;
    worker_lcore_ = rte_get_next_lcore(-1, 1, 0);
    if (rte_eal_remote_launch(dp::workerLoop, run_.get(), worker_lcore_) != 0)
      die("cannot launch the worker");
    // The worker registers itself with the QSBR variable: wait until it has,
    // or the first token would not wait for it.
    waitFor([&] { return run_->heartbeat.loops.load(std::memory_order_relaxed) > 0; },
            "the worker to start");
    std::string wpath = lcoreThreadStat(worker_lcore_);
    if (!wpath.empty()) worker_stat_ = std::make_unique<SchedStat>(wpath);
    main_stat_ = std::make_unique<SchedStat>("/proc/thread-self/schedstat");
    sched_ok_ = worker_stat_ && worker_stat_->ok() && main_stat_->ok() &&
                worker_stat_->slices() > 0 && main_stat_->slices() > 0;

    // Warm-up: every flow created, caches warm.
    const uint64_t warm_end = rte_rdtsc() + uint64_t(0.5 * hz_);
    while (rte_rdtsc() < warm_end) pump(true);

    // Loaded: publications while the worker forwards.
    Phase loaded = publishFor(o_.seconds, true);
    // Idle: let the worker drain everything, then publications with no traffic.
    drainAll();
    Phase idle = publishFor(o_.idle_seconds, false);
    drainAll();

    stop_.store(true);
    rte_eal_wait_lcore(worker_lcore_);
    pump(false);
    const dp::Snapshot* last = dp_.snapshot.exchange(nullptr);
    delete last;

    // Accounting.
    const WorkerCounters& c = state_->counters;
    uint64_t drops = 0;
    std::string drop_json;
    for (size_t i = 0; i < kNumCounters; ++i) {
      if (!kCounterInfo[i].is_drop || c.v[i] == 0) continue;
      drops += c.v[i];
      drop_json += std::string(drop_json.empty() ? "" : ",") + "\"" + kCounterInfo[i].name +
                   "\":" + std::to_string(c.v[i]);
    }
    uint64_t punted = 0;
    void* obj = nullptr;
    while (rte_ring_dequeue(punt_, &obj) == 0) {
      rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
      ++punted;
    }
    const uint64_t out = out_packets_ + punted;
    const int64_t lost = int64_t(fed_) - int64_t(out) - int64_t(drops);
    const uint64_t rx = c.get(Counter::rx_packets);
    const uint64_t gap_ns = run_->heartbeat.max_loop_gap_ns.load();

    Dist ll = dist(loaded.latency_ns), li = dist(idle.latency_ns);
    Dist lu = dist(loaded.undisturbed_ns), iu = dist(idle.undisturbed_ns);
    Dist bl = dist(loaded.build_ns);
    std::printf("snapshot_bench: 1 worker (lcore %u), control on lcore %u; %u flows of 64 B "
                "UDP/IPv4 -> aws Geneve to %u appliances (Maglev tables %s); %u publications/s "
                "asked; TSC %.3f GHz\n",
                worker_lcore_, rte_get_main_lcore(), o_.flows, o_.appliances,
                o_.no_cache ? "built every time" : "through the cache", o_.rate, hz_ / 1e9);
    auto line = [&](const char* n, const Phase& p, const Dist& d) {
      std::printf("  %-6s %zu publications in %.2f s (%.0f/s, %zu late)  seen by all workers: "
                  "p50 %.2f us  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f  (%zu over 10 us); "
                  "worker forwarded %.3f Mpps\n",
                  n, d.n, p.seconds, double(d.n) / p.seconds, p.late, d.p50 / 1e3, d.p90 / 1e3,
                  d.p99 / 1e3, d.p999 / 1e3, d.max / 1e3, d.over_10us,
                  double(p.out) / p.seconds / 1e6);
    };
    line("loaded", loaded, ll);
    line("idle", idle, li);
    auto undisturbed = [&](const char* n, const Dist& d, const Dist& all) {
      if (!sched_ok_) {
        std::printf("  %-6s undisturbed: not known (no schedstat for the worker thread)\n", n);
        return;
      }
      std::printf("  %-6s undisturbed (neither thread switched out): %zu of %zu  p50 %.2f us  "
                  "p90 %.2f  p99 %.2f  max %.2f  (%zu over 10 us)\n",
                  n, d.n, all.n, d.p50 / 1e3, d.p90 / 1e3, d.p99 / 1e3, d.max / 1e3, d.over_10us);
    };
    undisturbed("loaded", lu, ll);
    undisturbed("idle", iu, li);
    std::printf("  snapshot build %.1f us median (p99 %.1f, max %.1f); worker longest loop gap "
                "%.1f us\n",
                bl.p50 / 1e3, bl.p99 / 1e3, bl.max / 1e3, double(gap_ns) / 1e3);
    std::printf("  packets fed %llu, received by the worker %llu, out %llu (punted %llu), "
                "dropped by named counters %llu {%s}, lost %lld\n",
                (unsigned long long)fed_, (unsigned long long)rx, (unsigned long long)out,
                (unsigned long long)punted, (unsigned long long)drops, drop_json.c_str(),
                (long long)lost);
    auto phaseJson = [&](const Phase& p, const Dist& d, const Dist& u) {
      return "{\"seconds\":" + fmt("%.3f", p.seconds) + ",\"publications\":" +
             std::to_string(d.n) + ",\"late\":" + std::to_string(p.late) + ",\"seen_ns\":" +
             distJson(d) + ",\"undisturbed_ns\":" + (sched_ok_ ? distJson(u) : "null") +
             ",\"packets_out\":" + std::to_string(p.out) + ",\"mpps\":" +
             fmt("%.4f", double(p.out) / p.seconds / 1e6) + "}";
    };
    std::printf("{\"classes\":%u,\"class_cache\":%s,", o_.classes,
                o_.no_class_cache ? "false" : "true");
    std::printf("\"appliances\":%u,\"maglev_cache\":%s,\"rate\":%u,\"flows\":%u,\"frame_bytes\":%zu,\"burst\":%u,\"worker_lcore\":%u,"
                "\"main_lcore\":%u,\"tsc_hz\":%.0f,\"loaded\":%s,\"idle\":%s,\"build_ns\":%s,"
                "\"max_loop_gap_ns\":%llu,\"fed\":%llu,\"rx\":%llu,\"out\":%llu,\"punted\":%llu,"
                "\"drops\":%llu,\"drops_by_counter\":{%s},\"lost\":%lld}\n",
                o_.appliances, o_.no_cache ? "false" : "true", o_.rate, o_.flows, kFrameLen, kBurst,
                worker_lcore_, rte_get_main_lcore(), hz_, phaseJson(loaded, ll, lu).c_str(), phaseJson(idle, li, iu).c_str(),
                distJson(bl).c_str(), (unsigned long long)gap_ns, (unsigned long long)fed_,
                (unsigned long long)rx, (unsigned long long)out, (unsigned long long)punted,
                (unsigned long long)drops, drop_json.c_str(), (long long)lost);
    return 0;
  }

 private:
  struct Phase {
    std::vector<double> latency_ns;
    std::vector<double> undisturbed_ns;  // neither thread switched out meanwhile
    std::vector<double> build_ns;  // buildSnapshot time per publication
    size_t late = 0;
    double seconds = 0;
    uint64_t out = 0;
  };

  void buildFrames() {
    frames_.resize(size_t(o_.flows) * kFrameLen);
    for (uint32_t i = 0; i < o_.flows; ++i) {
      dptest::Bytes f = benchUdpFrame(i);
      if (f.size() != kFrameLen) die("frame is not 64 bytes");
      std::memcpy(&frames_[size_t(i) * kFrameLen], f.data(), kFrameLen);
    }
  }

  void buildConfig() {
    cfg_ = benchConfig(1, ctl::FailoverMode::kNoRebalance, int(o_.appliances));
    cfg_.traffic_classes = benchClasses(o_.classes);
    ctl::setClassCache(!o_.no_class_cache);
  }

  // The next snapshot: odd generations have appliance 3 unhealthy.
  std::unique_ptr<dp::Snapshot> build() {
    ++generation_;
    ctl::HealthMap h = benchAllHealthy(int(o_.appliances));
    if (generation_ % 2) h[appliance(2).v4HostOrder()] = HealthState::kUnhealthy;
    // As gwlbd's engine does it: Maglev tables through its cache.
    return ctl::buildSnapshot(cfg_, reg_, {}, generation_, h, nullptr, nullptr, nullptr,
                              o_.no_cache ? nullptr : &maglev_);
  }

  template <typename F>
  void waitFor(F done, const char* what) {
    const uint64_t limit = rte_rdtsc() + uint64_t(5 * hz_);
    while (!done()) {
      pump(false);
      if (rte_rdtsc() > limit) die(std::string("timed out waiting for ") + what);
    }
  }

  // Drains both TX rings (counting), then, when feeding, tops the feed ring up.
  uint64_t pump(bool feed) {
    rte_mbuf* ms[256];
    uint64_t n_out = 0;
    for (rte_ring* r : {out0_, out1_}) {
      unsigned k;
      while ((k = rte_ring_dequeue_burst(r, reinterpret_cast<void**>(ms), 256, nullptr)) > 0) {
        rte_pktmbuf_free_bulk(ms, k);
        n_out += k;
      }
    }
    out_packets_ += n_out;
    if (!feed) return n_out;
    while (rte_ring_count(feed_) < kFeedTarget) {
      if (rte_pktmbuf_alloc_bulk(pool_, ms, kBurst) != 0) break;  // all in flight
      for (uint16_t j = 0; j < kBurst; ++j) {
        rte_mbuf* m = ms[j];
        std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), &frames_[size_t(next_flow_) * kFrameLen],
                    kFrameLen);
        next_flow_ = (next_flow_ + 1) % o_.flows;
        m->data_len = kFrameLen;
        m->pkt_len = kFrameLen;
        // net_ring does not stamp the receiving port: the router port, as a
        // NIC's receive would (without it every frame is drop_not_our_mac).
        m->port = 0;
      }
      unsigned put = rte_ring_enqueue_burst(feed_, reinterpret_cast<void**>(ms), kBurst, nullptr);
      fed_ += put;
      if (put < kBurst) {
        rte_pktmbuf_free_bulk(ms + put, kBurst - put);
        break;
      }
    }
    return n_out;
  }

  // Waits until the worker has taken and sent everything fed so far.
  void drainAll() {
    waitFor([&] {
      return rte_ring_count(feed_) == 0 &&
             state_->counters.get(Counter::rx_packets) == fed_;
    }, "the worker to take every packet fed");
    // Its last burst is out once it passes a quiescent point after this.
    uint64_t token = rte_rcu_qsbr_start(qsbr_);
    waitFor([&] { return rte_rcu_qsbr_check(qsbr_, token, false) == 1; }, "a quiescent point");
    pump(false);
  }

  Phase publishFor(double seconds, bool feed) {
    Phase p;
    const uint64_t period = uint64_t(hz_ / o_.rate);
    const uint64_t start = rte_rdtsc();
    const uint64_t end = start + uint64_t(seconds * hz_);
    const uint64_t limit = uint64_t(hz_);  // 1 s: the worker is gone
    const uint64_t out0 = out_packets_;
    uint64_t next = start;
    p.latency_ns.reserve(size_t(seconds * o_.rate) + 16);
    for (uint64_t now = start; now < end; now = rte_rdtsc()) {
      pump(feed);
      if (now < next) continue;
      uint64_t b0 = rte_rdtsc();
      std::unique_ptr<dp::Snapshot> s = build();
      const uint64_t ws0 = sched_ok_ ? worker_stat_->slices() : 0;
      const uint64_t ms0 = sched_ok_ ? main_stat_->slices() : 0;
      uint64_t t0 = rte_rdtsc();
      const dp::Snapshot* old = dp_.snapshot.exchange(s.release(), std::memory_order_acq_rel);
      uint64_t token = rte_rcu_qsbr_start(qsbr_);
      while (rte_rcu_qsbr_check(qsbr_, token, false) != 1)
        if (rte_rdtsc() - t0 > limit) die("a worker did not pass a quiescent point within 1 s");
      uint64_t t1 = rte_rdtsc();
      const double ns = double(t1 - t0) * 1e9 / hz_;
      if (sched_ok_ && worker_stat_->slices() == ws0 && main_stat_->slices() == ms0)
        p.undisturbed_ns.push_back(ns);
      delete old;
      p.latency_ns.push_back(ns);
      p.build_ns.push_back(double(t0 - b0) * 1e9 / hz_);
      next += period;
      if (next < t1) {  // behind schedule (a slow build or preemption)
        ++p.late;
        next = t1;
      }
    }
    p.seconds = double(rte_rdtsc() - start) / hz_;
    p.out = out_packets_ - out0;
    return p;
  }

  Options o_;
  double hz_ = 0;
  rte_mempool* pool_ = nullptr;
  rte_ring *feed_ = nullptr, *out0_ = nullptr, *out1_ = nullptr, *unused_rx_ = nullptr;
  rte_ring* punt_ = nullptr;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<dp::FlowTable> flows_;
  dp::Dataplane dp_;
  std::unique_ptr<dp::WorkerState> state_;
  std::unique_ptr<dp::WorkerRun> run_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<SchedStat> worker_stat_, main_stat_;
  bool sched_ok_ = false;
  unsigned worker_lcore_ = 0;
  ctl::Config cfg_;
  ctl::ApplianceRegistry reg_;
  ctl::MaglevCache maglev_;
  uint64_t generation_ = 0;
  std::vector<uint8_t> frames_;
  uint32_t next_flow_ = 0;
  uint64_t fed_ = 0, out_packets_ = 0;
};

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using gwlb::bench::die;
  gwlb::ctl::keepSnapshotMemoryMapped();  // as gwlbd does
  gwlb::bench::Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--seconds") o.seconds = std::atof(val());
    else if (a == "--idle-seconds") o.idle_seconds = std::atof(val());
    else if (a == "--rate") o.rate = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--appliances") o.appliances = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--no-maglev-cache") o.no_cache = true;
    else if (a == "--classes") o.classes = uint32_t(std::strtoul(val(), nullptr, 10));
    else if (a == "--no-class-cache") o.no_class_cache = true;
    else if (a == "--flows") o.flows = uint32_t(std::strtoul(val(), nullptr, 10));
    else die("usage: snapshot_bench [--seconds S] [--rate R] [--flows F] [--idle-seconds I] "
             "[--appliances N] [--no-maglev-cache] [--classes N] [--no-class-cache]");
  }
  if (o.rate < 1 || o.rate > 100000) die("--rate must be 1..100000");
  if (o.appliances < 3 || o.appliances > 4000) die("--appliances must be 3..4000");
  if (o.flows < 1 || o.flows > 60000) die("--flows must be 1..60000");
  if (o.seconds <= 0 || o.idle_seconds < 0) die("--seconds must be > 0");
  try {
    gwlb::dp::initEal("gwlb-snapshot-bench",
                      {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "512",
                       "--log-level=*:warning", "--lcores=0@0,1@1"});
    return gwlb::bench::Bench(o).run();
  } catch (const std::exception& e) {
    die(e.what());
  }
}
