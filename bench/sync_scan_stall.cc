// Benchmark (never pass/fail): how long fleet sync's
// refresh scan holds the control thread on a large flow table with few
// flows. gwlbd's control thread runs everything on one io_context: the
// exception path's poll every 1 ms (BGP, BFD), probes, BIRD, the API, and the
// fleet sync tick every 10 ms (FleetSync::kTick). Here the same io_context
// runs
//  - the sync tick every 10 ms, as FleetSync's own timer does (a FleetSync
//    with no peers and no ring: the tick is the refresh scan), each one timed;
//  - a 1 ms timer standing for the exception path's poll: how late each of
//    its handlers ran behind its deadline is the stall the rest of the
//    control thread sees.
// The table has `capacity` slots' worth of keys mapped and faulted in (as
// gwlbd's is) and `flows` live IPv4 flows.
//
//   sync_scan_stall [--capacity N] [--flows F] [--seconds S] [--cpu C]
// Prints the conditions and figures, then one JSON line (last line of stdout).
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

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
#include "control/fleet/fleet_sync.h"
#include "dataplane/flow_table.h"
#include "dataplane/worker.h"
#include "tests/dp/sync_sockets.h"  // freeSyncPort: one copy for the tests and this bench

namespace gwlb::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

FlowKey flowKey(uint32_t i) {
  FlowKey k{};
  k.family = 4;
  k.kind = KeyKind::kFlow;
  k.proto = 6;
  k.a[0] = 198, k.a[1] = 18, k.a[2] = uint8_t(i >> 8), k.a[3] = uint8_t(i);
  k.b[0] = 203, k.b[1] = 0, k.b[2] = 113, k.b[3] = 1;
  k.port_a = uint16_t(1024 + i % 60000);
  k.port_b = 443;
  return k;
}

struct Options {
  uint32_t capacity = 16u << 20;
  uint32_t flows = 10;
  double seconds = 5;
  int cpu = -1;
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
    else {
      std::fprintf(stderr,
                   "usage: sync_scan_stall [--capacity N] [--flows F] [--seconds S] [--cpu C]\n");
      return 2;
    }
  }
  const int cpu = pinToCpu(o.cpu);

  auto t0 = Clock::now();
  dp::FlowTable ft("bench", o.capacity, nullptr, 0);
  double map_s = std::chrono::duration<double>(Clock::now() - t0).count();
  uint64_t now = dp::monotonicNs();
  for (uint32_t i = 0; i < o.flows; ++i) {
    FlowKey k = flowKey(i);
    int32_t pos = ft.insert(k, flowHash(k));
    if (pos < 0) {
      std::fprintf(stderr, "insert %u failed\n", i);
      return 1;
    }
    dp::FlowEntry& e = ft.entry(pos);
    e.flow_hash.store(flowHash(k));
    e.route.store(dp::packRoute(1, 1));
    e.created.store(now);
    e.last_seen.store(now);
    e.idle_timeout.store(350'000'000'000ULL);
  }

  asio::io_context io;
  ctl::FleetSync::Options fo;
  fo.node_name = "bench";
  fo.listen = "127.0.0.1:" + std::to_string(gwlb::dptest::freeSyncPort());
  fo.secret = flowHashKey();
  ctl::FleetSync fs(io, fo, ft, nullptr, [] { return static_cast<const dp::Snapshot*>(nullptr); });

  std::vector<double> tick_us, late_us;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(o.seconds));
  asio::steady_timer tick_timer(io), poll_timer(io);
  std::function<void()> arm_tick = [&] {
    tick_timer.expires_after(ctl::FleetSync::kTick);
    tick_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec || Clock::now() >= end) return;
      auto a = Clock::now();
      fs.tick(dp::monotonicNs());
      tick_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
      arm_tick();
    });
  };
  Clock::time_point due = Clock::now() + std::chrono::milliseconds(1);
  std::function<void()> arm_poll = [&] {
    poll_timer.expires_at(due);
    poll_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec || Clock::now() >= end) return;
      auto at = Clock::now();
      late_us.push_back(std::chrono::duration<double, std::micro>(at - due).count());
      due = at + std::chrono::milliseconds(1);
      arm_poll();
    });
  };
  arm_tick();
  arm_poll();
  io.run();

  Stats t = stats(tick_us), l = stats(late_us);
  std::sort(late_us.begin(), late_us.end());
  double l99 = late_us.empty() ? 0 : late_us[size_t(0.99 * double(late_us.size() - 1))];
  size_t slots = ft.slots() / 2;
  std::printf("sync_scan_stall: FleetSync::tick (refresh scan) on a table of %u flows (%zu slots, "
              "%.1f MiB of tags; mapped and faulted in %.2f s) holding %u IPv4 flows; no peers; "
              "%.1f s on cpu %d; a 1 ms timer on the same io_context\n",
              o.capacity, slots, double(slots) * 4 / 1048576, map_s, o.flows, o.seconds, cpu);
  std::printf("  tick: %zu ticks, median %.1f us, p90 %.1f us, max %.1f us\n", tick_us.size(),
              t.median, t.p90, t.max);
  std::printf("  1 ms timer lateness: %zu handlers, median %.1f us, p99 %.1f us, max %.1f us\n",
              late_us.size(), l.median, l99, l.max);
  std::printf("{\"capacity\": %u, \"slots\": %zu, \"flows\": %u, \"seconds\": %.1f, \"ticks\": %zu, "
              "\"tick_us\": {\"median\": %.1f, \"p90\": %.1f, \"max\": %.1f}, "
              "\"poll_late_us\": {\"median\": %.1f, \"p99\": %.1f, \"max\": %.1f}}\n",
              o.capacity, slots, o.flows, o.seconds, tick_us.size(), t.median, t.p90, t.max,
              l.median, l99, l.max);
  return 0;
}
