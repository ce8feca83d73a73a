// Benchmark (never pass/fail): sustained connection churn on one worker. How
// many new flows per second one worker takes while its flow table stays at a
// steady --flows (1 M) flows because the control thread expires as many as
// arrive, as in gwlbd: every packet is a new UDP flow's first packet
// (lookup miss, Maglev pick, insert, route, cookie, Geneve), and a second
// thread runs the engine's expiry pass in slices (FlowTable::expireStep with
// the engine's slice sizes, then reclaim() of what the workers' grace period
// freed), over and over.
//
// The clock is virtual so the table's size does not depend on how fast this
// machine is: each new flow advances the dataplane clock by idle / flows, so
// the flows of the last `idle` (UDP idle timeout, 60 s) are --flows, and
// those before have expired or are about to. The worker reports a quiescent
// state after each burst (as dp::workerLoop does), so reclaim() frees slots.
//
// Timed: dp::processBurst only (rte_rdtsc around it); untimed: the frames'
// addresses written into mbufs and the outputs freed. No NIC or ring: its
// RX/TX would add what pipeline_bench's `ring` mode measures.
//
//   churn_bench [--flows 1048576] [--new 4000000] [--burst 32] [--cpu C]
//               [--control-cpu C] [--windows 8]
// The worker runs on --cpu (default: the last cpu), the expiry thread on
// --control-cpu (default: cpu 0), each pinned: a worker's core and gwlbd's
// control thread's are not shared. New flows the table refuses because the
// expiry fell behind are counted (refused_full), not hidden.
// Prints a summary, then one JSON line: median and spread over --windows
// windows of cycles per new flow, new flows per second per worker (TSC Hz /
// cycles), the table's count (min, max) over the run, expired flows, passes,
// and the control thread's CPU.
#include <pthread.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_net.h"
#include "bench/bench_util.h"
#include "common/counters.h"
#include "common/snapshot.h"
#include "control/engine/engine.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"

namespace gwlb::bench {
namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "churn_bench: %s\n", what.c_str());
  std::exit(1);
}

struct Options {
  uint32_t flows = 1u << 20;
  uint64_t fresh = 4'000'000;  // new flows measured, after the table reached steady state
  uint16_t burst = 32;
  int cpu = -1, control_cpu = -1;
  unsigned windows = 8;
};

constexpr uint64_t kBaseNs = 1'000'000'000'000ULL;
constexpr uint32_t kIdleS = 60;

double threadCpuS() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The frame of flow i (UDP, 64 bytes): client 10.64.0.0 + i / 60000, port
// 1024 + i % 60000, to the bench server's port 53; the IPv4 header checksum
// rewritten for the address.
void writeFlow(uint8_t* d, const uint8_t* tmpl, uint32_t i) {
  std::memcpy(d, tmpl, 64);
  const uint32_t src = 0x0A400000u + i / 60000;
  const uint16_t port = uint16_t(1024 + i % 60000);
  d[26] = uint8_t(src >> 24), d[27] = uint8_t(src >> 16), d[28] = uint8_t(src >> 8), d[29] = uint8_t(src);
  d[34] = uint8_t(port >> 8), d[35] = uint8_t(port);
  d[40] = d[41] = 0;  // UDP checksum: none (allowed over IPv4)
  d[24] = d[25] = 0;
  uint32_t sum = 0;
  for (int o = 14; o < 34; o += 2) sum += uint32_t(d[o]) << 8 | d[o + 1];
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  d[24] = uint8_t(~sum >> 8), d[25] = uint8_t(~sum);
}

int run(const Options& o) {
  ctl::Config cfg = benchConfig(3, ctl::FailoverMode::kNoRebalance);
  cfg.server_groups[0].other_idle_timeout_s = kIdleS;
  ctl::ApplianceRegistry reg;
  ctl::HealthMap h = benchAllHealthy();
  std::unique_ptr<dp::Snapshot> snap = ctl::buildSnapshot(cfg, reg, {}, 1, h);

  rte_rcu_qsbr* qsbr = dp::createQsbr(1);
  if (rte_rcu_qsbr_thread_register(qsbr, 0) != 0) die("qsbr register");
  rte_rcu_qsbr_thread_online(qsbr, 0);
  // Twice the steady count, as gwlbd's sizing advice (docs/deploy.md).
  dp::FlowTable table("churn_ft", 2 * o.flows, qsbr, int(rte_socket_id()));
  dp::Dataplane dpl;
  dpl.flows = &table;
  dpl.snapshot.store(snap.get(), std::memory_order_release);
  auto w = std::make_unique<dp::WorkerState>();
  rte_mempool* pool = dp::createMbufPool("churn_pool", 1023, 2048);
  const dptest::Bytes tmpl = benchUdpFrame(0);
  if (tmpl.size() != 64) die("template frame is not 64 bytes");

  const uint64_t step_ns = uint64_t(kIdleS) * 1'000'000'000ULL / o.flows;
  std::atomic<uint64_t> now_ns{kBaseNs};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> expired{0}, passes{0};
  double control_cpu = 0;
  // The engine's housekeeping walk, as Engine::walkSlice runs it: expiry
  // slices of kWalkSlots slots / kWalkKeys keys, then a bounded reclaim.
  std::thread control([&] {
    pinToCpu(o.control_cpu);
    const double c0 = threadCpuS();
    dp::FlowTable::ExpiryPass pass;
    while (!stop.load(std::memory_order_relaxed)) {
      table.expireBegin(pass, now_ns.load(std::memory_order_relaxed));
      while (!stop.load(std::memory_order_relaxed) &&
             !table.expireStep(pass, ctl::Engine::kWalkSlots, ctl::Engine::kWalkKeys))
        table.reclaim(false, ctl::Engine::kWalkKeys);
      table.reclaim(false, ctl::Engine::kWalkKeys);
      expired += pass.expired + pass.evicted;
      ++passes;
    }
    control_cpu = threadCpuS() - c0;
  });

  uint32_t next = 0;
  rte_mbuf* pkts[dp::kMaxBurst];
  dp::BurstOutput out;
  uint32_t count_lo = UINT32_MAX, count_hi = 0;
  // Until steady: the first --flows flows, then as many again (by then the
  // first have expired and the control thread keeps pace or falls behind).
  // Back-pressure: a worker that outruns the expiry would fill the table
  // and measure refusals. Above --flows + 1/8 the worker waits (untimed)
  // for the control thread; the wall rate then is what the pair sustains.
  const uint32_t high = o.flows + o.flows / 8;
  uint64_t waits = 0;
  auto burst = [&](uint64_t& cycles) {
    if (table.count() + o.burst > high) {
      ++waits;
      while (table.count() + o.burst > high) {
        rte_rcu_qsbr_quiescent(qsbr, 0);
        rte_pause();
      }
    }
    if (rte_pktmbuf_alloc_bulk(pool, pkts, o.burst) != 0) die("mbuf pool empty");
    for (uint16_t j = 0; j < o.burst; ++j) {
      writeFlow(rte_pktmbuf_mtod(pkts[j], uint8_t*), tmpl.data(), next++);
      pkts[j]->data_len = 64, pkts[j]->pkt_len = 64, pkts[j]->port = 0;
    }
    const uint64_t now = now_ns.load(std::memory_order_relaxed) + step_ns * o.burst;
    now_ns.store(now, std::memory_order_relaxed);
    const uint64_t t0 = rte_rdtsc();
    dp::processBurst(dpl, *w, pkts, o.burst, now, out);
    cycles += rte_rdtsc() - t0;
    rte_rcu_qsbr_quiescent(qsbr, 0);
    rte_pktmbuf_free_bulk(out.to_appliance, out.n_appliance);
    if (out.n_router) rte_pktmbuf_free_bulk(out.to_router, out.n_router);
  };
  // New flows the table refused (full: the expiry fell behind); any other
  // drop means the bench is broken.
  auto dropped = [&](bool full) {
    uint64_t d = 0;
    for (size_t i = 0; i < kNumCounters; ++i)
      if (kCounterInfo[i].is_drop && (i == size_t(Counter::drop_flow_table_full)) == full) d += w->counters.v[i];
    return d;
  };
  uint64_t warm_cycles = 0;
  while (next < 2 * uint64_t(o.flows)) burst(warm_cycles);

  const uint64_t per_window = std::max<uint64_t>(o.burst, o.fresh / o.windows);
  std::vector<double> cyc;
  const uint64_t expired0 = expired.load(), full0 = dropped(true), waits0 = waits;
  const auto wall0 = std::chrono::steady_clock::now();
  for (unsigned win = 0; win < o.windows; ++win) {
    uint64_t cycles = 0, n = 0;
    while (n < per_window) {
      burst(cycles);
      n += o.burst;
      if ((n & 1023) < o.burst) {
        const uint32_t c = table.count();
        count_lo = std::min(count_lo, c), count_hi = std::max(count_hi, c);
      }
    }
    cyc.push_back(double(cycles) / double(n));
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const uint64_t measured = per_window * o.windows;
  stop = true;
  control.join();
  if (dropped(false) != 0) die("new flows dropped for another reason than a full table");
  const uint64_t full = dropped(true) - full0;

  const Stats s = stats(cyc);
  const double hz = double(rte_get_tsc_hz());
  const double per_s = hz / s.median;
  std::fprintf(stderr,
               "churn: %u flows steady (table %u..%u keys, capacity %u), %llu new flows in %u windows: "
               "%.1f cycles per new flow in processBurst (spread %.1f-%.1f) = %.2f M new flows/s per "
               "worker at TSC %.0f MHz (%.0f LCUs of 600 new flows/s); sustained with the expiry (wall, "
               "frame writing included) %.2f M/s; "
               "control thread %.2f s cpu over the run, %llu passes, %llu expired while measured; %llu new flows "
               "refused (table full); the worker waited for the expiry before %llu of %llu bursts\n",
               o.flows, count_lo, count_hi, table.capacity(), (unsigned long long)measured, o.windows,
               s.median, s.min, s.max, per_s / 1e6, hz / 1e6, per_s / 600.0, double(measured) / wall / 1e6,
               control_cpu, (unsigned long long)passes.load(),
               (unsigned long long)(expired.load() - expired0), (unsigned long long)full,
               (unsigned long long)(waits - waits0), (unsigned long long)(measured / o.burst));
  std::printf("{\"bench\":\"churn\",\"flows\":%u,\"capacity\":%u,\"new_flows\":%llu,\"burst\":%u,"
              "\"windows\":%u,\"tsc_hz\":%.0f,\"cycles_per_new_flow\":%.2f,\"spread\":[%.2f,%.2f],"
              "\"new_flows_per_s\":%.0f,\"lcus\":%.0f,\"sustained_new_flows_per_s\":%.0f,"
              "\"table_count\":[%u,%u],\"expired\":%llu,\"refused_full\":%llu,\"bursts_waited\":%llu,\"passes\":%llu,\"control_cpu_s\":%.3f,"
              "\"hugepages\":%s}\n",
              o.flows, table.capacity(), (unsigned long long)measured, o.burst, o.windows, hz, s.median,
              s.min, s.max, per_s, per_s / 600.0, double(measured) / wall, count_lo, count_hi,
              (unsigned long long)(expired.load() - expired0), (unsigned long long)full,
              (unsigned long long)(waits - waits0), (unsigned long long)passes.load(), control_cpu,
              rte_eal_has_hugepages() ? "true" : "false");
  dpl.flows = nullptr;
  return 0;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--flows") o.flows = uint32_t(std::stoul(next()));
    else if (a == "--new") o.fresh = std::stoull(next());
    else if (a == "--burst") o.burst = uint16_t(std::stoul(next()));
    else if (a == "--cpu") o.cpu = std::stoi(next());
    else if (a == "--control-cpu") o.control_cpu = std::stoi(next());
    else if (a == "--windows") o.windows = unsigned(std::stoul(next()));
    else if (a == "--help") {
      std::printf("churn_bench [--flows N] [--new N] [--burst B] [--cpu C] [--control-cpu C] [--windows W]\n");
      std::exit(0);
    } else die("unknown argument " + a);
  }
  if (o.flows < 1024) die("--flows must be >= 1024");
  if (o.burst == 0 || o.burst > dp::kMaxBurst) die("--burst must be 1..256");
  if (o.windows == 0) die("--windows must be > 0");
  return o;
}

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using namespace gwlb::bench;
  try {
    Options o = parse(argc, argv);
    std::vector<std::string> eal = {"--no-huge", "--no-pci", "--no-shconf", "-m", "512",
                                    "--log-level", "lib.eal:error", "--no-telemetry"};
    // The worker on --cpu (default: the last this process may use), the
    // control thread on another (default: cpu 0), as gwlbd's lcores are.
    if (o.cpu < 0) o.cpu = defaultCpu();
    if (o.control_cpu < 0) o.control_cpu = o.cpu == 0 ? 1 : 0;
    eal.push_back("-l");
    eal.push_back(std::to_string(o.cpu));
    gwlb::dp::initEal("churn_bench", eal);
    return run(o);
  } catch (const std::exception& e) {
    die(e.what());
  }
}
