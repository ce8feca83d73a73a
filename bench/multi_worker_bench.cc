// Benchmark (never pass/fail, except --check): two workers sharing one flow
// table. W = 1 or 2 worker lcores run dp::processBurst over
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
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/multi_worker_bench.h"

namespace gwlb::bench {

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
