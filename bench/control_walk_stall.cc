// Benchmark (never pass/fail): how long the control thread's walks of the
// flow table hold it on a big table, beside bench/sync_scan_stall (fleet
// sync's refresh scan). gwlbd's control thread runs everything on one
// io_context; here, in three phases of --seconds each, an io_context runs
// one kind of walk:
//  - the engine's turns as gwlbd's EngineTicker makes them (every 10 ms, or
//    at once while a walk goes on), driving the real control core
//    (ctl::Engine) with gwlbd's walk budget: the housekeeping walk every second (expiry, the flow counts per
//    appliance the `servers` API reads, the control sweep), a server-id
//    reclaim's count (an appliance without flows is removed at 1 s: it is
//    forgotten, its id released, then counted for and reclaimed) and a drain
//    deadline's walk (an appliance with flows drained at 2 s for 1 s);
//  - the `flows` API's page (ctl::flowsPage, as the `flows` method (control/service/api_flows.cc) calls it)
//    back to back: a `gwlbctl flows --all` (limit 10000, following the
//    cursor), again and again;
//  - its count (`gwlbctl flows --count`), again and again;
// beside a 1 ms timer standing for the exception path's poll: how late each
// of its handlers ran behind its deadline is the stall the rest of the
// control thread sees.
// Every handler of each kind is timed, wall and CPU. `--whole` runs the walks
// as one call each, the shape of the code before the walks went in slices:
// the engine with walk budget 0, a flows page of up to 10000 rows and a count
// of the whole table per request.
//
//   control_walk_stall [--capacity N] [--flows F] [--seconds S] [--cpu C] [--whole]
// Prints the conditions and figures, then one JSON line (last line of stdout).
#include <rte_rcu_qsbr.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "common/flow_key.h"
#include "control/service/handlers.h"
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include "control/engine/engine.h"
#include "dataplane/flow_table.h"
#include "dataplane/worker.h"
#include "tests/unit/small_config.h"

namespace gwlb::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
constexpr uint64_t kS = 1'000'000'000ULL;
// The engine's clock: monotonic time moved on, so that flows last seen
// 400 s "ago" have a positive time however recently the machine booted.
constexpr uint64_t kClockOffset = 10'000 * kS;

FlowKey flowKey(uint32_t i) {
  FlowKey k{};
  k.family = 4;
  k.kind = KeyKind::kFlow;
  k.proto = 6;
  k.a[0] = 198, k.a[1] = uint8_t(18 + (i >> 24)), k.a[2] = uint8_t(i >> 16), k.a[3] = uint8_t(i >> 8);
  k.b[0] = 203, k.b[1] = 0, k.b[2] = 113, k.b[3] = uint8_t(i);
  k.port_a = uint16_t(1024 + (i & 0x3FFF));
  k.port_b = 443;
  return k;
}

struct Options {
  uint32_t capacity = 16u << 20;
  uint32_t flows = 4'000'000;
  double seconds = 6;
  int cpu = -1;
  bool whole = false;
};

// This thread's CPU time (us): on a loaded machine the wall time of a call
// includes the time the kernel ran something else; its CPU time is what the
// call itself costs.
double threadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) / 1e3;
}

// Wall and CPU time of each call of one kind.
struct Timings {
  std::vector<double> us, cpu_us;
  Clock::time_point at{};
  double cpu_at = 0;
  void begin() {
    at = Clock::now();
    cpu_at = threadCpuUs();
  }
  void end() {
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - at).count());
    cpu_us.push_back(threadCpuUs() - cpu_at);
  }
  static double p99(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[size_t(0.99 * double(v.size() - 1))];
  }
  std::string json() const {
    Stats s = stats(us), c = stats(cpu_us);
    char b[320];
    std::snprintf(b, sizeof b,
                  "{\"n\": %zu, \"median\": %.1f, \"p99\": %.1f, \"max\": %.1f, \"cpu_median\": %.1f, "
                  "\"cpu_p99\": %.1f, \"cpu_max\": %.1f}",
                  us.size(), s.median, p99(us), s.max, c.median, p99(cpu_us), c.max);
    return b;
  }
  std::string text() const {
    Stats s = stats(us), c = stats(cpu_us);
    char b[320];
    std::snprintf(b, sizeof b,
                  "%zu calls; wall median %.1f us, p99 %.1f us, max %.1f us; CPU median %.1f us, p99 %.1f us, "
                  "max %.1f us",
                  us.size(), s.median, p99(us), s.max, c.median, p99(cpu_us), c.max);
    return b;
  }
};

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using namespace gwlb;
  using namespace gwlb::bench;
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return optionValue(argc, argv, i); };
    if (a == "--capacity") o.capacity = uint32_t(std::strtoul(next(), nullptr, 10));
    else if (a == "--flows") o.flows = uint32_t(std::strtoul(next(), nullptr, 10));
    else if (a == "--seconds") o.seconds = std::strtod(next(), nullptr);
    else if (a == "--cpu") o.cpu = std::atoi(next());
    else if (a == "--whole") o.whole = true;
    else {
      std::fprintf(stderr, "usage: control_walk_stall [--capacity N] [--flows F] [--seconds S] [--cpu C] "
                           "[--whole]\n");
      return 2;
    }
  }
  if (o.flows > o.capacity) o.flows = o.capacity;
  const int cpu = pinToCpu(o.cpu);

  // No worker registers with the RCU variable: every grace period is over
  // at once (snapshots and deleted positions are freed at the next look).
  size_t qsz = rte_rcu_qsbr_get_memsize(1);
  auto* qsbr = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(64, (qsz + 63) / 64 * 64));
  if (!qsbr || rte_rcu_qsbr_init(qsbr, 1) != 0) {
    std::fprintf(stderr, "cannot create the RCU variable\n");
    return 1;
  }
  auto t0 = Clock::now();
  dp::FlowTable ft("bench", o.capacity, qsbr, 0);
  double map_s = std::chrono::duration<double>(Clock::now() - t0).count();
  dp::Dataplane dp;
  dp.flows = &ft;

  // Appliances 10.0.0.11-14 (server ids 0-3): flows on the first three; 14
  // has none (removed at 1 s: its id is released and reclaimed).
  ctl::Config cfg = ctl::testing::smallConfig({"10.0.0.11", "10.0.0.12", "10.0.0.13", "10.0.0.14"});
  cfg.server_groups[0].connection_draining.enabled = true;
  auto clock = [] { return dp::monotonicNs() + kClockOffset; };
  size_t freed = 0;
  ctl::Engine::Hooks hooks;
  hooks.ids_freed = [&](const std::vector<uint16_t>& ids) { freed += ids.size(); };
  ctl::Engine engine(cfg, ft, dp, qsbr, {}, hooks);
  engine.setWalkBudget(o.whole ? 0 : 1);
  uint64_t start = clock();
  engine.start(start);

  // The flows: an eighth idle for 400 s (they expire in the first walk),
  // the rest seen now with TCP's 350 s timeout.
  auto fill0 = Clock::now();
  for (uint32_t i = 0; i < o.flows; ++i) {
    FlowKey k = flowKey(i);
    uint32_t h = flowHash(k);
    int32_t pos = ft.insert(k, h);
    if (pos < 0) {
      std::fprintf(stderr, "insert %u failed (%d)\n", i, pos);
      return 1;
    }
    dp::FlowEntry& e = ft.entry(pos);
    e.flow_hash.store(h);
    e.route.store(dp::packRoute(uint16_t(i % 3), h));
    e.created.store(start - 500 * kS);
    e.last_seen.store(i % 8 == 0 ? start - 400 * kS : start);
    e.idle_timeout.store(350 * kS);
  }
  double fill_s = std::chrono::duration<double>(Clock::now() - fill0).count();

  // Three phases of `seconds` each, one kind of walk in each, on a fresh
  // io_context beside the 1 ms timer: the engine's turns, then the flows
  // API's pages (a `gwlbctl flows --all`, again and again), then its counts.
  struct Phase {
    const char* name;
    Timings calls, late;
    size_t rounds = 0;  // engine: walk slices; pages and counts: whole passes over the table
  };
  Phase phases[3] = {{"engine", {}, {}}, {"pages", {}, {}}, {"counts", {}, {}}};
  size_t dumped_rows = 0, counted_total = 0;
  for (Phase& ph : phases) {
    asio::io_context io;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(o.seconds));
    const bool is_engine = &ph == &phases[0], counting = &ph == &phases[2];
    // The engine's turns as EngineTicker (control/daemon/engine_ticker.h)
    // makes them, each timed: every 10 ms, or at once while a walk goes on.
    asio::steady_timer tick(io), change(io);
    std::function<void()> arm_tick = [&] {
      tick.expires_after(engine.walking() ? std::chrono::milliseconds(0) : std::chrono::milliseconds(10));
      tick.async_wait([&](const boost::system::error_code& ec) {
        if (ec || Clock::now() >= end) return;
        ph.calls.begin();
        engine.advance(clock());
        ph.calls.end();
        arm_tick();
      });
    };
    // The changes: at 1 s the flow-free appliance is removed (forgotten,
    // then its id reclaimed); at 2 s an appliance with flows is drained for
    // 1 s (its deadline's walk).
    std::function<void()> changes = [&] {
      change.expires_after(std::chrono::seconds(1));
      change.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        ctl::Config next = engine.config();
        next.server_groups[0].appliances.pop_back();
        engine.applyConfig(next, "removed", clock(), true);
        change.expires_after(std::chrono::seconds(1));
        change.async_wait([&](const boost::system::error_code& ec2) {
          if (ec2) return;
          std::string err = engine.drain(IpAddr::parse("10.0.0.12")->v4HostOrder(), 1, clock());
          if (!err.empty()) std::fprintf(stderr, "drain: %s\n", err.c_str());
        });
      });
    };
    // The flows API's requests back to back (posted: every other ready
    // handler runs between two), the reply serialized as the API server does.
    ctl::FlowsQuery q;
    q.limit = 10000;
    q.count_only = counting;
    auto name = [](int, uint32_t) { return std::string("fw"); };
    auto cursorOf = [](const nlohmann::json& r) {
      return r["next_cursor"].is_null() ? 0u : uint32_t(std::stoul(r["next_cursor"].get<std::string>()));
    };
    std::function<void()> request = [&] {
      if (Clock::now() >= end) return;
      ph.calls.begin();
      nlohmann::json r = ctl::flowsPage(ft, dp.snapshot.load(), q, clock(), name);
      q.cursor = cursorOf(r);
      size_t rows = counting ? 0 : r["flows"].size();
      counted_total += counting ? r["count"].get<size_t>() : 0;
      if (o.whole) {
        // As a request was answered before: a page of up to `limit` (10000)
        // rows, a count of the whole table, in one call.
        while (!r["next_cursor"].is_null() && (counting || rows < q.limit)) {
          nlohmann::json more = ctl::flowsPage(ft, dp.snapshot.load(), q, clock(), name);
          q.cursor = cursorOf(more);
          if (counting) {
            counted_total += more["count"].get<size_t>();
          } else {
            rows += more["flows"].size();
            for (auto& f : more["flows"]) r["flows"].push_back(std::move(f));
          }
          r["next_cursor"] = more["next_cursor"];
        }
      }
      dumped_rows += rows;
      std::string wire = r.dump();
      ph.calls.end();
      if (r["next_cursor"].is_null()) ++ph.rounds;
      asio::post(io, request);
    };
    asio::steady_timer poll(io);
    Clock::time_point due = Clock::now() + std::chrono::milliseconds(1);
    std::function<void()> arm_poll = [&] {
      poll.expires_at(due);
      poll.async_wait([&](const boost::system::error_code& ec) {
        if (ec) return;
        auto at = Clock::now();
        ph.late.us.push_back(std::chrono::duration<double, std::micro>(at - due).count());
        due = at + std::chrono::milliseconds(1);
        if (at >= end) {
          change.cancel();
          return;
        }
        arm_poll();
      });
    };
    uint64_t slices0 = engine.walkSlices();
    if (is_engine) {
      arm_tick();
      changes();
    } else {
      asio::post(io, request);
    }
    arm_poll();
    io.run();
    if (is_engine) ph.rounds = engine.walkSlices() - slices0;
  }

  double la[3] = {0, 0, 0};
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3) la[0] = -1;
    std::fclose(f);
  }
  size_t slots = ft.slots() / 2;
  std::printf("control_walk_stall: %s on a table of capacity %u (%zu slots, %.1f MiB of tags; mapped "
              "%.2f s) holding %u IPv4 flows (filled in %.2f s; an eighth idle past their timeout); "
              "%.1f s a phase on cpu %d; load average %.2f\n",
              o.whole ? "walks in one call each (--whole)" : "walks in slices (gwlbd's budget)", o.capacity,
              slots, double(slots) * 4 / 1048576, map_s, o.flows, fill_s, o.seconds, cpu, la[0]);
  const char* what[3] = {"engine turns (housekeeping walks: expiry, counts, sweep, id reclaim; a drain "
                         "deadline's walk)",
                         "flows API pages (limit 10000)", "flows API counts"};
  std::string js;
  for (int i = 0; i < 3; ++i) {
    Phase& ph = phases[i];
    Stats ls = stats(ph.late.us);
    std::printf("  %s: %s; %zu %s\n", what[i], ph.calls.text().c_str(), ph.rounds,
                i == 0 ? "walk slices" : "passes over the table");
    std::printf("    1 ms timer lateness meanwhile: %zu handlers, median %.1f us, p99 %.1f us, max %.1f us\n",
                ph.late.us.size(), ls.median, Timings::p99(ph.late.us), ls.max);
    char b[256];
    std::snprintf(b, sizeof b, "\"%s\": {\"rounds\": %zu, \"late_us\": {\"median\": %.1f, \"p99\": %.1f, \"max\": %.1f}, \"calls_us\": ",
                  ph.name, ph.rounds, ls.median, Timings::p99(ph.late.us), ls.max);
    js += std::string(i ? ", " : "") + b + ph.calls.json() + "}";
  }
  std::printf("    flows left %u; evicted %llu; server ids freed %zu; rows listed %zu; entries counted %zu\n",
              ft.count(), (unsigned long long)ft.evicted(), freed, dumped_rows, counted_total);
  std::printf("{\"mode\": \"%s\", \"capacity\": %u, \"slots\": %zu, \"flows\": %u, \"seconds\": %.1f, "
              "\"load_avg_1m\": %.2f, \"ids_freed\": %zu, %s}\n",
              o.whole ? "whole" : "sliced", o.capacity, slots, o.flows, o.seconds, la[0], freed, js.c_str());
  engine.shutdown();
  return 0;
}
