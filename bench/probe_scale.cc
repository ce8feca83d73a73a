// Benchmark (never pass/fail): many health-check targets probed from one control
// thread, on loopback only, with gwlbd's schedule (control/health/health_checker.cc):
// first probe jittered over one interval (firstProbeDelayMs), then probe, wait
// for the result, wait the interval, probe again. Each result goes through a
// HealthTracker as in gwlbd.
//
// Reports, per run: CPU of the prober thread (getrusage RUSAGE_THREAD, user +
// sys, % of one core), probes completed per second, ok / failed results, the
// lateness of each probe start against its schedule (actual start - scheduled
// start; ideal 0 ms) and the spread of probe starts over time (starts per
// 100 ms window; ideal targets / interval x 100 ms).
//
// Targets: TCP probes to listeners on 127.0.0.1..127.0.0.L served by a separate
// accept thread (accept, close once the prober reset it), so the measured thread
// is only the prober; or, in the "refused" mode, to closed ports on the same
// addresses.
// Note: loopback connects run the peer's half of the handshake in softirq on the
// connecting thread, so the prober's sys time also holds the listener's kernel work.
//
//   probe_scale [--targets 1000,10000] [--modes accept,refused] [--duration 10]
//               [--interval-ms 1000] [--timeout-ms 1000] [--listeners 8]
//               [--listener-policy batch|other] [--pin]
// --pin puts the prober on cpu 0 and the listener thread on cpu 1.
// Prints a table, then one JSON line (last line of stdout).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/probe_targets.h"
#include "common/health.h"
#include "probes/probe.h"

namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using gwlb::IpAddr;

using gwlb::bench::CpuTimes, gwlb::bench::die, gwlb::bench::loadAvg, gwlb::bench::pinTo, gwlb::bench::threadCpu;

// Listening sockets on 127.0.0.1..127.0.0.L (kernel-chosen ports), served by one
// thread that accepts everything and closes each connection once the prober has
// reset it.
gwlb::bench::ProbeTargets::Options listenersOn(int count, int pin_cpu, bool batch) {
  gwlb::bench::ProbeTargets::Options t{.pin_cpu = pin_cpu, .batch = batch};
  for (int k = 0; k < count; ++k) t.addresses.push_back(0x7f000001u + uint32_t(k));  // 127.0.0.(1 + k)
  return t;
}

// A port on 127.0.0.(1 + k) with no listener: probes get RST (connect_refused).
uint16_t closedPort(int k) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = gwlb::bench::ProbeTargets::address(0x7f000001u + uint32_t(k), 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) die("bind closed port");
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

struct Options {
  std::vector<size_t> targets{1000, 10000};
  std::vector<std::string> modes{"accept"};
  double duration_s = 10;
  uint64_t interval_ms = 1000, timeout_ms = 1000;
  int listeners = 8;
  bool pin = false;
  bool batch = true;  // listener thread under SCHED_BATCH
};

struct Result {
  std::string mode;
  size_t targets = 0;
  double wall_s = 0, cpu_s = 0, user_s = 0, sys_s = 0;
  uint64_t started = 0, completed = 0, ok = 0, failed = 0;
  std::map<std::string, uint64_t> reasons;
  std::map<std::string, std::string> examples;  // first detail per failure reason
  double late_p50_ms = 0, late_p99_ms = 0, late_max_ms = 0, late_mean_ms = 0;
  uint32_t win_min = 0, win_median = 0, win_max = 0;  // starts per 100 ms window
  uint32_t sched_min = 0, sched_max = 0;               // due times per 100 ms window
  double win_ideal = 0;
  size_t max_in_flight = 0;
  long preempted = 0;  // involuntary context switches of the prober thread
  double load_before = 0, load_after = 0;  // 1-minute load average
  double listener_cpu_s = 0;                // the stand-in targets' thread
};

// One run: N targets on one io_context, the calling thread being the control thread.
class Run {
 public:
  Run(const Options& o, size_t n, const std::string& mode, const gwlb::bench::ProbeTargets& ls)
      : o_(o), tls_(asio::ssl::context::tls_client) {
    p_.interval_ms = o.interval_ms;
    p_.timeout_ms = o.timeout_ms;
    std::vector<uint16_t> closed;
    if (mode == "refused")
      for (int k = 0; k < o.listeners; ++k) closed.push_back(closedPort(k));
    res_.mode = mode;
    res_.targets = n;
    for (size_t i = 0; i < n; ++i) {
      int k = int(i % size_t(o.listeners));
      gwlb::probe::ProbeSpec s;
      s.protocol = gwlb::probe::Protocol::kTcp;
      s.address = IpAddr::v4(0x7f000001u + uint32_t(k));
      s.port = mode == "refused" ? closed[size_t(k)] : ls.port(size_t(k));
      s.timeout = std::chrono::milliseconds(o.timeout_ms);
      // The jitter key is the appliance IP in gwlbd: one synthetic address per target.
      uint32_t key = 0x0a000000u + uint32_t(i);
      targets_.push_back(std::make_unique<Target>(io_, s, gwlb::HealthTracker(p_, true, 1, 0), key));
    }
  }

  Result run() {
    const auto span = std::chrono::duration<double>(o_.duration_s);
    t0_ = Clock::now();
    end_ = t0_ + std::chrono::duration_cast<Clock::duration>(span);
    windows_.assign(size_t(o_.duration_s * 10 + 0.5), 0);
    sched_windows_ = windows_;
    late_us_.reserve(size_t(double(targets_.size()) * o_.duration_s * 1000.0 /
                            double(std::max<uint64_t>(1, o_.interval_ms))) + 1024);
    res_.load_before = loadAvg();
    const CpuTimes cpu0 = threadCpu();
    for (auto& t : targets_) schedule(*t, gwlb::firstProbeDelayMs(p_, t->key, true));
    io_.run();  // returns once nothing is due before end_ and no probe is in flight
    const CpuTimes cpu1 = threadCpu();
    res_.user_s = cpu1.user - cpu0.user;
    res_.sys_s = cpu1.sys - cpu0.sys;
    res_.cpu_s = res_.user_s + res_.sys_s;
    res_.preempted = cpu1.involuntary - cpu0.involuntary;
    res_.load_after = loadAvg();
    res_.wall_s = std::chrono::duration<double>(Clock::now() - t0_).count();
    summarize();
    return res_;
  }

 private:
  struct Target {
    gwlb::probe::ProbeSpec spec;
    gwlb::HealthTracker tracker;
    asio::steady_timer timer;
    uint32_t key;
    Clock::time_point due;
    Target(asio::io_context& io, gwlb::probe::ProbeSpec s, gwlb::HealthTracker t, uint32_t k)
        : spec(std::move(s)), tracker(std::move(t)), timer(io), key(k) {}
  };

  uint64_t nowMs() const {
    return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0_).count());
  }

  // As HealthChecker::schedule: expires_after(delay) from now; nothing due after the run.
  void schedule(Target& t, uint64_t delay_ms) {
    t.due = Clock::now() + std::chrono::milliseconds(delay_ms);
    if (t.due >= end_) return;
    size_t w = size_t((t.due - t0_) / std::chrono::milliseconds(100));
    if (w < sched_windows_.size()) ++sched_windows_[w];
    t.timer.expires_at(t.due);
    t.timer.async_wait([this, &t](const boost::system::error_code& ec) {
      if (!ec) start(t);
    });
  }

  void start(Target& t) {
    const Clock::time_point now = Clock::now();
    late_us_.push_back(std::chrono::duration_cast<std::chrono::microseconds>(now - t.due).count());
    size_t w = size_t((now - t0_) / std::chrono::milliseconds(100));
    if (w < windows_.size()) ++windows_[w];
    ++res_.started;
    res_.max_in_flight = std::max(res_.max_in_flight, ++in_flight_);
    gwlb::probe::startProbe(
        io_, t.spec,
        [this, &t](const gwlb::probe::ProbeResult& r) {
          --in_flight_;
          ++res_.completed;
          ++(r.ok ? res_.ok : res_.failed);
          if (res_.reasons[r.reason]++ == 0 && !r.ok)
            res_.examples[r.reason] = r.detail;
          gwlb::ProbeOutcome o;  // as HealthChecker builds it
          o.ok = r.ok;
          o.reason = r.ok ? "ok" : (r.detail.empty() ? r.reason : r.reason + ": " + r.detail);
          o.response_ms = uint64_t(r.elapsed.count() / 1000);
          t.tracker.onResult(o, nowMs());
          schedule(t, p_.interval_ms);
        },
        &tls_);
  }

  void summarize() {
    auto pct = [this](double q) {
      if (late_us_.empty()) return 0.0;
      size_t i = std::min(late_us_.size() - 1, size_t(q * double(late_us_.size())));
      std::nth_element(late_us_.begin(), late_us_.begin() + long(i), late_us_.end());
      return double(late_us_[i]) / 1000.0;
    };
    if (!late_us_.empty()) {
      double sum = 0;
      for (int64_t v : late_us_) sum += double(v);
      res_.late_mean_ms = sum / double(late_us_.size()) / 1000.0;
      res_.late_max_ms = double(*std::max_element(late_us_.begin(), late_us_.end())) / 1000.0;
    }
    res_.late_p50_ms = pct(0.50);
    res_.late_p99_ms = pct(0.99);
    if (!windows_.empty()) {
      std::vector<uint32_t> w = windows_;
      std::sort(w.begin(), w.end());
      res_.win_min = w.front();
      res_.win_median = w[w.size() / 2];
      res_.win_max = w.back();
      res_.sched_min = *std::min_element(sched_windows_.begin(), sched_windows_.end());
      res_.sched_max = *std::max_element(sched_windows_.begin(), sched_windows_.end());
    }
    res_.win_ideal = double(targets_.size()) * 100.0 / double(std::max<uint64_t>(1, o_.interval_ms));
  }

  const Options& o_;
  gwlb::HealthParams p_;
  asio::io_context io_{1};
  asio::ssl::context tls_;
  std::vector<std::unique_ptr<Target>> targets_;
  Clock::time_point t0_, end_;
  std::vector<int64_t> late_us_;
  std::vector<uint32_t> windows_, sched_windows_;  // probe starts, due times per 100 ms
  size_t in_flight_ = 0;
  Result res_;
};

void usage() {
  std::fprintf(stderr,
               "usage: probe_scale [--targets 1000,10000] [--modes accept,refused] "
               "[--duration S] [--interval-ms MS] [--timeout-ms MS] [--listeners L] "
               "[--listener-policy batch|other] [--pin]\n");
  std::exit(2);
}

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
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
    if (a == "--targets")
      o.targets = gwlb::bench::splitList<size_t>(val(), [](const std::string& x) { return size_t(std::stoul(x)); });
    else if (a == "--modes")
      o.modes = gwlb::bench::splitList<std::string>(val(), [](const std::string& x) { return x; });
    else if (a == "--duration")
      o.duration_s = std::stod(val());
    else if (a == "--interval-ms")
      o.interval_ms = std::stoull(val());
    else if (a == "--timeout-ms")
      o.timeout_ms = std::stoull(val());
    else if (a == "--listeners")
      o.listeners = std::stoi(val());
    else if (a == "--listener-policy") {
      std::string v = val();
      if (v != "batch" && v != "other") usage();
      o.batch = v == "batch";
    }
    else if (a == "--pin")
      o.pin = true;
    else
      usage();
  }
  if (o.targets.empty() || o.modes.empty() || o.listeners < 1 || o.listeners > 254 ||
      o.duration_s <= 0)
    usage();
  for (const auto& m : o.modes)
    if (m != "accept" && m != "refused") usage();

  // Every probe holds one socket while in flight; a slow prober could hold many.
  const rlimit rl = gwlb::bench::raiseFileLimit();
  if (o.pin) pinTo(0);

  gwlb::bench::ProbeTargets ls(listenersOn(o.listeners, o.pin ? 1 : -1, o.batch));
  std::vector<Result> results;
  for (const auto& mode : o.modes) {
    for (size_t n : o.targets) {
      uint64_t acc0 = ls.accepted();
      Run run(o, n, mode, ls);
      double lcpu0 = ls.cpuSeconds();
      results.push_back(run.run());
      results.back().listener_cpu_s = ls.cpuSeconds() - lcpu0;
      std::fprintf(stderr, "probe_scale: %s %zu targets done (listener accepted %llu)\n",
                   mode.c_str(), n, static_cast<unsigned long long>(ls.accepted() - acc0));
      for (const auto& [reason, detail] : results.back().examples)
        std::fprintf(stderr, "  %s x%llu, e.g. %s\n", reason.c_str(),
                     static_cast<unsigned long long>(results.back().reasons[reason]), detail.c_str());
    }
  }

  std::printf("probe_scale: TCP probes on loopback (127.0.0.1-%d), interval %llu ms, timeout %llu ms, "
              "%.0f s per run, one prober thread%s, listener thread %s; ideal lateness 0 ms\n",
              o.listeners, static_cast<unsigned long long>(o.interval_ms),
              static_cast<unsigned long long>(o.timeout_ms), o.duration_s,
              o.pin ? " on cpu 0" : " (not pinned)",
              o.pin ? (o.batch ? "on cpu 1, SCHED_BATCH" : "on cpu 1") : (o.batch ? "SCHED_BATCH" : "SCHED_OTHER"));
  std::printf("%-8s %7s %9s %8s %8s %9s %13s %8s %8s %8s %8s %22s %11s %9s\n", "mode",
              "targets", "probes/s", "ok", "failed", "CPU %core", "(user+sys)", "us/probe",
              "late p50", "late p99", "late max", "starts/100ms", "(scheduled)", "listener");
  for (const Result& r : results) {
    char win[64];
    char sched[32], split[40];
    std::snprintf(split, sizeof(split), "(%.1f+%.1f)", 100.0 * r.user_s / r.wall_s,
                  100.0 * r.sys_s / r.wall_s);
    std::snprintf(win, sizeof(win), "%u-%u (ideal %.0f)", r.win_min, r.win_max, r.win_ideal);
    std::snprintf(sched, sizeof(sched), "(%u-%u)", r.sched_min, r.sched_max);
    std::printf("%-8s %7zu %9.0f %8llu %8llu %8.1f%% %13s %8.1f %6.2fms %6.2fms %6.2fms %22s %11s %8.1f%%\n",
                r.mode.c_str(), r.targets, double(r.completed) / r.wall_s,
                static_cast<unsigned long long>(r.ok), static_cast<unsigned long long>(r.failed),
                100.0 * r.cpu_s / r.wall_s, split,
                r.completed ? 1e6 * r.cpu_s / double(r.completed) : 0.0, r.late_p50_ms,
                r.late_p99_ms, r.late_max_ms, win, sched, 100.0 * r.listener_cpu_s / r.wall_s);
  }

  // One JSON line, last on stdout.
  std::string j = "{\"interval_ms\":" + std::to_string(o.interval_ms) +
                  ",\"timeout_ms\":" + std::to_string(o.timeout_ms) +
                  ",\"duration_s\":" + std::to_string(o.duration_s) +
                  ",\"listeners\":" + std::to_string(o.listeners) +
                  ",\"pinned\":" + (o.pin ? "true" : "false") +
                  ",\"listener_policy\":\"" + (o.batch ? "batch" : "other") + "\"" +
                  ",\"nofile\":" + std::to_string(rl.rlim_cur) + ",\"runs\":[";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    char buf[1024];
    std::snprintf(buf, sizeof(buf),
                  "%s{\"mode\":\"%s\",\"targets\":%zu,\"wall_s\":%.3f,\"cpu_s\":%.4f,"
                  "\"user_s\":%.4f,\"sys_s\":%.4f,"
                  "\"cpu_pct_of_core\":%.2f,\"cpu_us_per_probe\":%.2f,\"started\":%llu,"
                  "\"completed\":%llu,\"probes_per_s\":%.1f,\"ok\":%llu,\"failed\":%llu,"
                  "\"late_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f,\"mean\":%.3f},"
                  "\"starts_per_100ms\":{\"min\":%u,\"median\":%u,\"max\":%u,\"ideal\":%.1f,"
                  "\"scheduled_min\":%u,\"scheduled_max\":%u},"
                  "\"max_in_flight\":%zu,\"preempted\":%ld,\"load_avg_1m\":[%.2f,%.2f],"
                  "\"listener_cpu_pct_of_core\":%.1f,"
                  "\"reasons\":{",
                  i ? "," : "", r.mode.c_str(), r.targets, r.wall_s, r.cpu_s, r.user_s, r.sys_s,
                  100.0 * r.cpu_s / r.wall_s,
                  r.completed ? 1e6 * r.cpu_s / double(r.completed) : 0.0,
                  static_cast<unsigned long long>(r.started),
                  static_cast<unsigned long long>(r.completed), double(r.completed) / r.wall_s,
                  static_cast<unsigned long long>(r.ok), static_cast<unsigned long long>(r.failed),
                  r.late_p50_ms, r.late_p99_ms, r.late_max_ms, r.late_mean_ms, r.win_min,
                  r.win_median, r.win_max, r.win_ideal, r.sched_min, r.sched_max, r.max_in_flight, r.preempted, r.load_before, r.load_after,
                  100.0 * r.listener_cpu_s / r.wall_s);
    j += buf;
    bool first = true;
    for (const auto& [reason, count] : r.reasons) {
      j += (first ? "\"" : ",\"") + jsonEscape(reason) + "\":" + std::to_string(count);
      first = false;
    }
    j += "}}";
  }
  j += "]}";
  std::printf("%s\n", j.c_str());
  return 0;
}
