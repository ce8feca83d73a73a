// Benchmark (never pass/fail): gwlbd's own HealthChecker (control/health/)
// probing a fleet of appliances on loopback, one distinct 127.x address per
// appliance, every check's result going into its tracker and every change
// reported as gwlbd's engine gets it. Unlike bench/probe_scale (which runs
// bare probes on a copy of the schedule), this measures gwlbd's probe work
// as it ships: scheduling, probing, judging, reporting.
//
// Reports, per run: CPU of the checker's thread (getrusage RUSAGE_THREAD) as
// % of one core, split into user (gwlbd's work) and sys (the kernel's: socket
// calls, epoll, and on loopback the listener's half of every handshake,
// which the kernel charges to the connecting thread in softirq); probes
// completed per second (the trackers' counts); probe arrivals at the listener
// per 10 ms window after the first interval (min / median / max against the
// ideal targets x 10 ms / interval: a burst shows as a max far above it),
// and the histogram of those windows by their arrivals (bins of ideal / 5).
//
// Targets: one listener thread on 0.0.0.0:PORT (every 127.x address is
// local) that accepts everything; tcp: keeps each connection until the prober
// resets it; http: answers "HTTP/1.1 200 OK" to each request, then waits for
// the prober's reset; https: the same over TLS, with a self-signed certificate
// made at start (the checker does not verify it, as by default) and the
// server's default session resumption. For https it counts the handshakes
// the listener completed and how many resumed a session: the checker resumes
// each appliance's last session, so after the first round nearly all should
// (the run fails, exit 1, when none did).
//
//   probe_fleet [--targets 10000] [--protocols tcp,http,https] [--duration 10]
//               [--interval-ms 1000] [--timeout-ms 1000] [--pin] [--keep-alive]
// --pin puts the checker on cpu 0 and the listener on cpu 1. --keep-alive
// sets health_check.keep_alive for http and https: after the first round each
// probe connects afresh and asks on the appliance's kept connection (the run
// fails when none was kept at the end). --warm S: the steady state (its CPU
// and callgrind's count) starts after S seconds instead of two intervals
// (a fleet whose first round of full TLS handshakes takes longer).
// Prints a table, then one JSON line (last line of stdout).
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include <spdlog/spdlog.h>
#include <valgrind/callgrind.h>

#include "bench/probe_targets.h"
#include "control/health/health_checker.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace gwlb;
using namespace gwlb::ctl;

using bench::CpuTimes, bench::loadAvg, bench::pinTo, bench::taskCpuSeconds, bench::threadCpu;

struct Options {
  size_t targets = 10000;
  std::vector<std::string> protocols{"tcp", "http", "https"};
  double duration_s = 10;
  uint32_t interval_ms = 1000, timeout_ms = 1000;
  bool pin = false;
  bool keep_alive = false;  // http(s): health_check.keep_alive
  double warm_s = -1;       // before the steady state; < 0: two intervals
};

constexpr size_t kHistBins = 16;  // 0 to 3.2 x ideal, then the rest

struct Result {
  std::string protocol;
  size_t targets = 0;
  double wall_s = 0, user_s = 0, sys_s = 0, listener_s = 0;
  uint64_t completed = 0, reports = 0, healthy = 0;
  uint64_t handshakes = 0, resumed = 0;  // https: at the listener
  bool keep_alive = false;
  size_t kept = 0;  // connections kept at the end (keep_alive)
  uint64_t steady_completed = 0;         // after the first two intervals (callgrind's count)
  double steady_user_s = 0, steady_sys_s = 0;  // the checker's CPU meanwhile (no first round)
  double warm_s = 0;                           // when the steady state began
  long preempted = 0;
  uint32_t win_min = 0, win_median = 0, win_max = 0;
  double win_ideal = 0;
  uint32_t win100_min = 0, win100_max = 0;  // the same per 100 ms
  // The 10 ms windows by how many probes arrived in them: hist[k] windows
  // held [k, k + 1) x ideal / 5 arrivals (the last: that and more).
  std::vector<uint32_t> hist;
  double load_before = 0, load_after = 0;
};

// The checker, as gwlbd builds it (its report into a counter here). Built
// against either form of the reporting callback, so that the same bench runs
// on the tree before and after the checker reported its transitions.
template <class Checker>
std::unique_ptr<Checker> makeChecker(boost::asio::io_context& io, uint64_t& reports) {
  if constexpr (std::is_constructible_v<Checker, boost::asio::io_context&, std::function<void()>>)
    return std::make_unique<Checker>(io, std::function<void()>([&reports] { ++reports; }));
  else
    return std::make_unique<Checker>(io, [&reports](const auto&) { ++reports; });
}

Result runOne(const Options& o, const std::string& proto, bench::ProbeTargets& ls) {
  ls.setHttp(proto != "tcp");
  ls.setTls(proto == "https");
  Config cfg;
  ApplianceGroupConfig g;
  g.name = "fleet";
  HealthCheckConfig& h = g.health_check;
  h.configured = true;
  h.protocol = proto == "http"    ? HealthProtocol::kHttp
               : proto == "https" ? HealthProtocol::kHttps
                                  : HealthProtocol::kTcp;
  h.port = ls.port();
  h.interval_ms = o.interval_ms;
  h.timeout_ms = o.timeout_ms;
  h.healthy_threshold = 2;
  h.keep_alive = o.keep_alive && proto != "tcp";
  h.unhealthy_threshold = 2;
  for (size_t i = 0; i < o.targets; ++i) {
    ApplianceConfig s;
    s.address = IpAddr::v4(0x7f000001u + uint32_t(i));  // 127.0.0.1 onwards
    g.appliances.push_back(s);
  }
  cfg.server_groups.push_back(g);

  boost::asio::io_context io{1};
  uint64_t reports = 0;
  auto hc = makeChecker<HealthChecker>(io, reports);
  Result r;
  r.protocol = proto;
  r.keep_alive = h.keep_alive;
  r.targets = o.targets;
  r.load_before = loadAvg();
  const double l0 = taskCpuSeconds(ls.tid());
  const uint64_t hs0 = ls.handshakes(), res0 = ls.resumed();
  const CpuTimes c0 = threadCpu();
  const Clock::time_point t0 = Clock::now();
  hc->reconcile(cfg);
  // Under callgrind (bench/probe_instructions.py): the checker thread's
  // instructions in the steady state (after two intervals: every appliance's
  // first probes and its one transition to healthy are behind), one dump per
  // protocol, with the probes completed meanwhile.
  const auto completedNow = [&] {
    uint64_t n = 0;
    for (const ApplianceConfig& s : cfg.server_groups[0].appliances)
      if (const HealthTracker* t = hc->tracker(applianceKey(s.address))) n += t->latency().count;
    return n;
  };
  const double warm_s = o.warm_s >= 0 ? std::min(o.duration_s / 2, o.warm_s)
                                     : std::min(o.duration_s / 2, 2.0 * o.interval_ms / 1000.0);
  io.run_for(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warm_s)));
  r.warm_s = warm_s;
  const uint64_t steady0 = completedNow();
  const CpuTimes cs = threadCpu();
  CALLGRIND_TOGGLE_COLLECT;
  io.run_for(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s - warm_s)));
  CALLGRIND_TOGGLE_COLLECT;
  const std::string dump = "probe_fleet " + proto;
  CALLGRIND_DUMP_STATS_AT(dump.c_str());
  r.steady_completed = completedNow() - steady0;
  const CpuTimes c1 = threadCpu();
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  r.listener_s = taskCpuSeconds(ls.tid()) - l0;
  r.handshakes = ls.handshakes() - hs0;
  r.resumed = ls.resumed() - res0;
  r.user_s = c1.user - c0.user;
  r.sys_s = c1.sys - c0.sys;
  r.steady_user_s = c1.user - cs.user;
  r.steady_sys_s = c1.sys - cs.sys;
  r.preempted = c1.involuntary - c0.involuntary;
  r.load_after = loadAvg();
  r.reports = reports;
  r.kept = hc->keptConnections().size();
  for (const ApplianceConfig& s : cfg.server_groups[0].appliances) {
    const HealthTracker* t = hc->tracker(applianceKey(s.address));
    if (!t) continue;
    r.completed += t->latency().count;
    r.healthy += t->state() == HealthState::kHealthy;
  }
  // Arrivals after the first interval (the jittered start) to the end.
  const auto ms = [&](Clock::time_point t) {
    return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(t - ls.t0()).count());
  };
  std::vector<uint32_t> w = ls.arrivals(ms(t0) + o.interval_ms, ms(t0) + uint64_t(o.duration_s * 1000) - 10);
  r.win_ideal = double(o.targets) * 10.0 / double(o.interval_ms);
  r.hist.assign(kHistBins, 0);
  const double bin = std::max(1.0, r.win_ideal / 5);
  for (uint32_t a : w) ++r.hist[std::min<size_t>(size_t(double(a) / bin), kHistBins - 1)];
  if (!w.empty()) {
    std::sort(w.begin(), w.end());
    r.win_min = w.front();
    r.win_median = w[w.size() / 2];
    r.win_max = w.back();
  }
  // Per 100 ms: a thread the scheduler runs in slices (a loaded machine)
  // starts its probes in bunches at the 10 ms scale whatever its schedule.
  std::vector<uint32_t> w100 = ls.arrivals(ms(t0) + o.interval_ms, ms(t0) + uint64_t(o.duration_s * 1000) - 10);
  for (size_t i = 0; i + 10 <= w100.size(); i += 10) {
    uint32_t sum = 0;
    for (size_t k = i; k < i + 10; ++k) sum += w100[k];
    if (i == 0 || sum < r.win100_min) r.win100_min = sum;
    r.win100_max = std::max(r.win100_max, sum);
  }
  // Every appliance removed first: a probe still in flight then finds its
  // appliance gone when it completes (during poll) and touches nothing.
  hc->reconcile(Config{});
  io.restart();
  io.poll();
  hc.reset();
  return r;
}

void usage() {
  std::fprintf(stderr, "usage: probe_fleet [--targets N] [--protocols tcp,http,https] [--duration S] "
                       "[--interval-ms MS] [--timeout-ms MS] [--pin] [--keep-alive] [--warm S]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    if (a == "--targets") o.targets = std::stoul(val());
    else if (a == "--protocols")
      o.protocols = bench::splitList<std::string>(val(), [](const std::string& x) { return x; });
    else if (a == "--duration") o.duration_s = std::stod(val());
    else if (a == "--interval-ms") o.interval_ms = uint32_t(std::stoul(val()));
    else if (a == "--timeout-ms") o.timeout_ms = uint32_t(std::stoul(val()));
    else if (a == "--pin") o.pin = true;
    else if (a == "--keep-alive") o.keep_alive = true;
    else if (a == "--warm") o.warm_s = std::stod(val());
    else usage();
  }
  if (o.targets == 0 || o.targets > 65535 || o.duration_s <= 0 || o.protocols.empty()) usage();
  for (const auto& p : o.protocols)
    if (p != "tcp" && p != "http" && p != "https") usage();
  bench::raiseFileLimit();
  if (o.pin) pinTo(0);
  // The first round's 10,000 transitions would be 10,000 log lines: not
  // the steady probe work measured here.
  spdlog::set_level(getenv("PF_LOG") ? spdlog::level::info : spdlog::level::off);
  // One listener on 0.0.0.0 (every 127.x address is local), arrivals per 10 ms
  // for up to 10 minutes.
  bench::ProbeTargets ls({.addresses = {INADDR_ANY}, .backlog = 65535, .pin_cpu = o.pin ? 1 : -1, .reads = true,
                          .events_per_wait = 256, .windows = 100 * 600});
  std::vector<Result> results;
  for (const auto& p : o.protocols) results.push_back(runOne(o, p, ls));

  std::printf("probe_fleet: gwlbd's HealthChecker, %zu appliances on 127.0.0.1 onwards (one listener "
              "thread%s), interval %u ms, timeout %u ms, %.0f s per run, checker thread%s\n",
              o.targets, o.pin ? " on cpu 1" : "", o.interval_ms, o.timeout_ms, o.duration_s,
              o.pin ? " on cpu 0" : " not pinned");
  std::printf("%-5s %8s %9s %10s %8s %8s %9s %8s %8s %8s %40s %9s %11s\n", "proto", "targets", "probes/s",
              "CPU %core", "user", "sys", "us/probe", "user us", "sys us", "healthy", "arrivals/10ms min-med-max",
              "listener", "load");
  std::string j = "{\"interval_ms\":" + std::to_string(o.interval_ms) +
                  ",\"timeout_ms\":" + std::to_string(o.timeout_ms) +
                  ",\"duration_s\":" + std::to_string(o.duration_s) +
                  ",\"pinned\":" + (o.pin ? "true" : "false") + ",\"runs\":[";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    const double cpu = r.user_s + r.sys_s;
    char win[96];
    std::snprintf(win, sizeof win, "%u-%u-%u (ideal %.0f); /100ms %u-%u", r.win_min, r.win_median,
                  r.win_max, r.win_ideal, r.win100_min, r.win100_max);
    const double per = r.completed ? 1e6 / double(r.completed) : 0.0;  // us per probe per CPU second
    // The same after the first two intervals: no first round (for HTTPS, no
    // full handshakes), what a fleet probed for hours costs.
    const auto steady = [&r](double s) {
      return r.steady_completed ? 1e6 * s / double(r.steady_completed) : 0.0;
    };
    std::printf("%-5s %8zu %9.0f %9.1f%% %7.1f%% %7.1f%% %9.1f %8.1f %8.1f %8llu %40s %8.1f%% %5.1f-%.1f\n",
                r.protocol.c_str(), r.targets, double(r.completed) / r.wall_s, 100 * cpu / r.wall_s,
                100 * r.user_s / r.wall_s, 100 * r.sys_s / r.wall_s, per * cpu, per * r.user_s, per * r.sys_s,
                static_cast<unsigned long long>(r.healthy), win, 100 * r.listener_s / r.wall_s,
                r.load_before, r.load_after);
    std::string hist;
    for (size_t k = 0; k < r.hist.size(); ++k) hist += (k ? "," : "") + std::to_string(r.hist[k]);
    char buf[1536];
    std::snprintf(buf, sizeof buf,
                  "%s{\"protocol\":\"%s\",\"targets\":%zu,\"wall_s\":%.3f,\"user_s\":%.4f,\"sys_s\":%.4f,"
                  "\"cpu_pct_of_core\":%.2f,\"user_pct_of_core\":%.2f,\"sys_pct_of_core\":%.2f,"
                  "\"completed\":%llu,\"probes_per_s\":%.1f,\"healthy\":%llu,\"reports\":%llu,"
                  "\"arrivals_per_10ms\":{\"min\":%u,\"median\":%u,\"max\":%u,\"ideal\":%.1f},"
                  "\"arrivals_per_100ms\":{\"min\":%u,\"max\":%u},\"windows_by_arrivals\":[%s],"
                  "\"listener_pct_of_core\":%.1f,\"preempted\":%ld,\"load_avg_1m\":[%.2f,%.2f],"
                  "\"user_us_per_probe\":%.2f,\"sys_us_per_probe\":%.2f,\"tls_handshakes\":%llu,"
                  "\"tls_resumed\":%llu,\"steady_completed\":%llu,\"steady_user_us_per_probe\":%.2f,"
                  "\"steady_sys_us_per_probe\":%.2f,\"keep_alive\":%s,\"kept\":%zu,\"timeout_ms\":%u,\"warm_s\":%.1f}",
                  i ? "," : "", r.protocol.c_str(), r.targets, r.wall_s, r.user_s, r.sys_s,
                  100 * cpu / r.wall_s, 100 * r.user_s / r.wall_s, 100 * r.sys_s / r.wall_s,
                  static_cast<unsigned long long>(r.completed), double(r.completed) / r.wall_s,
                  static_cast<unsigned long long>(r.healthy), static_cast<unsigned long long>(r.reports),
                  r.win_min, r.win_median, r.win_max, r.win_ideal, r.win100_min, r.win100_max, hist.c_str(),
                  100 * r.listener_s / r.wall_s,
                  r.preempted, r.load_before, r.load_after, per * r.user_s, per * r.sys_s,
                  static_cast<unsigned long long>(r.handshakes), static_cast<unsigned long long>(r.resumed),
                  static_cast<unsigned long long>(r.steady_completed), steady(r.steady_user_s),
                  steady(r.steady_sys_s), r.keep_alive ? "true" : "false", r.kept, o.timeout_ms, r.warm_s);
    j += buf;
  }
  j += "]}";
  // The histogram of the 10 ms windows (a burst or a gap shows as windows
  // far from the ideal).
  for (const Result& r : results) {
    const double bin = std::max(1.0, r.win_ideal / 5);
    std::printf("%s: 10 ms windows by probes arriving in them (ideal %.0f)\n", r.protocol.c_str(), r.win_ideal);
    for (size_t k = 0; k < r.hist.size(); ++k) {
      if (!r.hist[k]) continue;
      if (k + 1 < r.hist.size())
        std::printf("  %5.0f-%-5.0f %6u\n", double(k) * bin, double(k + 1) * bin - 1, r.hist[k]);
      else
        std::printf("  %5.0f+      %6u\n", double(k) * bin, r.hist[k]);
    }
  }
  // HTTPS is measured with session resumption: say how many handshakes
  // resumed, and refuse a run where none did (it measured full handshakes).
  // With keep_alive, handshakes after the first round are rare: refuse a
  // run that kept no connection instead (it measured handshakes again).
  int rc = 0;
  for (const Result& r : results) {
    if (r.keep_alive) {
      std::printf("%s: %zu connections kept at the end (keep_alive)\n", r.protocol.c_str(), r.kept);
      if (r.kept == 0) {
        std::fprintf(stderr, "probe_fleet: %s: keep_alive kept no connection\n", r.protocol.c_str());
        rc = 1;
      }
    }
    if (r.protocol != "https") continue;
    std::printf("https: %llu TLS handshakes completed at the listener, %llu resumed a session (%.1f %%)\n",
                static_cast<unsigned long long>(r.handshakes), static_cast<unsigned long long>(r.resumed),
                r.handshakes ? 100.0 * double(r.resumed) / double(r.handshakes) : 0.0);
    if (r.resumed == 0 && !r.keep_alive) {
      std::fprintf(stderr, "probe_fleet: https: no TLS handshake resumed a session\n");
      rc = 1;
    }
  }
  std::printf("%s\n", j.c_str());
  return rc;
}
