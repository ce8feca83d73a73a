// Benchmark (never pass/fail): how long a reload of the largest legal
// traffic-class set holds gwlbd's control thread. gwlbd's control thread runs
// everything on one io_context (the exception path's poll every 1 ms: BGP,
// BFD; probes; fleet sync; the API; the watchdog). Here the same io_context
// runs
//  - the engine's ticker every 10 ms (control/daemon/engine_ticker.h), as in
//    gwlbd: Engine::advance publishes a change whose classes are compiled;
//  - a 1 ms timer standing for the exception path's poll: how late each of
//    its handlers ran behind its deadline is the stall the rest of the
//    control thread sees;
//  - reloads: every second, Engine::applyConfig with the other of two class
//    sets (A and B: the same shape, other addresses), each timed, then the
//    time until its snapshot is published.
// The class set: `--classes` classes of `--hosts` scattered IPv4 /32s each
// (999 x 600 by default: a little more than an 8 MiB config file, the
// loader's limit, holds; 999 x 470 fit in 7.7 MiB, for --file) and a catch-all. The engine compiles changed
// classes on its own thread, as gwlbd does (--sync: on the control thread, as
// before). --file: each reload also reads and parses the class set from a
// YAML file as gwlbd's reload does (loadConfigFile; no warnings), on the
// control thread, timed apart.
//
//   class_reload_stall [--classes N] [--hosts H] [--reloads R] [--sync] [--file] [--cpu C]
// Prints the conditions and figures, then one JSON line (last line of stdout).
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_net.h"
#include "bench/bench_util.h"
#include "control/daemon/engine_ticker.h"
#include "control/engine/engine.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/worker.h"

namespace gwlb::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

struct Options {
  uint32_t classes = 999, hosts = 600, reloads = 4;  // with the catch-all: the limit of 1,000
  bool sync = false, file = false;
  int cpu = -1;
};

std::vector<ctl::TrafficClassConfig> scatteredClasses(const Options& o, uint32_t seed) {
  std::vector<ctl::TrafficClassConfig> out;
  uint32_t x = seed;
  for (uint32_t i = 0; i < o.classes; ++i) {
    ctl::TrafficClassConfig t;
    t.name = "hosts" + std::to_string(i);
    t.action = i % 2 ? ctl::ClassAction::kBypass : ctl::ClassAction::kDrop;
    for (uint32_t k = 0; k < o.hosts; ++k) {
      x = x * 1664525u + 1013904223u;
      t.match.prefixes.push_back({IpAddr::v4(0x0B000000u + x % 0xC0000000u), 32});
    }
    out.push_back(std::move(t));
  }
  ctl::TrafficClassConfig rest;
  rest.name = "rest";
  rest.listener = "default";
  out.push_back(rest);
  return out;
}

// The config as a file gwlbd would load: the dump without classes, then the
// classes in flow style (the most prefixes per byte).
std::string configText(const ctl::Config& c) {
  ctl::Config base = c;
  base.traffic_classes.clear();
  std::string y = ctl::dumpConfig(base);
  y += "traffic_classes:\n";
  for (const ctl::TrafficClassConfig& t : c.traffic_classes) {
    y += "  - name: " + t.name + "\n";
    if (!t.match.prefixes.empty()) {
      y += "    match: {prefixes: [";
      for (size_t i = 0; i < t.match.prefixes.size(); ++i)
        y += (i ? "," : "") + t.match.prefixes[i].addr.str() + "/32";
      y += "]}\n";
    }
    y += std::string("    action: ") + ctl::toString(t.action) + "\n";
    if (!t.listener.empty()) y += "    listener: " + t.listener + "\n";
  }
  return y;
}

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using namespace gwlb;
  using namespace gwlb::bench;
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return optionValue(argc, argv, i); };
    if (a == "--classes") o.classes = uint32_t(std::strtoul(next(), nullptr, 10));
    else if (a == "--hosts") o.hosts = uint32_t(std::strtoul(next(), nullptr, 10));
    else if (a == "--reloads") o.reloads = uint32_t(std::strtoul(next(), nullptr, 10));
    else if (a == "--sync") o.sync = true;
    else if (a == "--file") o.file = true;
    else if (a == "--cpu") o.cpu = std::atoi(next());
    else {
      std::fprintf(stderr,
                   "usage: class_reload_stall [--classes N] [--hosts H] [--reloads R] [--sync] [--file] [--cpu C]\n");
      return 2;
    }
  }
  if (o.classes < 1 || o.classes > 999 || o.hosts > 1024 || o.reloads < 1) {
    std::fprintf(stderr, "--classes 1..999 (and the catch-all), --hosts 0..1024, --reloads >= 1\n");
    return 2;
  }
  const int cpu = pinToCpu(o.cpu);  // the compiler thread inherits it: one core, as loaded as can be
  dp::initEal("gwlb-class-reload-stall",
              {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "64", "--log-level=*:warning"});

  ctl::Config cfg[2];
  std::string path[2];
  size_t file_bytes = 0;
  for (int k = 0; k < 2; ++k) {
    cfg[k] = benchConfig(1, ctl::FailoverMode::kNoRebalance);
    cfg[k].traffic_classes = scatteredClasses(o, uint32_t(k + 1));
    if (o.file) {
      char tmpl[] = "/tmp/gwlb-class-stall-XXXXXX";
      int fd = mkstemp(tmpl);
      if (fd < 0) return 1;
      close(fd);
      path[k] = tmpl;
      const std::string text = configText(cfg[k]);
      file_bytes = text.size();
      std::ofstream(path[k]) << text;
    }
  }
  // What the control thread still does per change, besides compiling: the
  // config's validation (Engine::applyConfig and buildSnapshot each validate)
  // and the classes compared in place with the running ones. Timed once here, apart from the loop.
  double validate_ms = 0, rules_ms = 0;
  {
    std::vector<ctl::ConfigError> errors;
    auto v = Clock::now();
    if (!ctl::validateConfig(cfg[1], errors)) {
      std::fprintf(stderr, "the class set is not valid: %s\n", errors[0].message.c_str());
      return 1;
    }
    validate_ms = msSince(v);
    // Equal lists: the comparison walks every prefix (its worst case).
    const std::vector<ctl::TrafficClassConfig> copy = cfg[1].traffic_classes;
    v = Clock::now();
    const bool same = !ctl::sameClassRules(copy, cfg[1].traffic_classes) ||
                      ctl::sameClassRules(cfg[0].traffic_classes, cfg[1].traffic_classes);
    rules_ms = msSince(v);
    if (same) return 1;
  }
  rte_rcu_qsbr* qsbr = dp::createQsbr(1);
  dp::FlowTable ft("crs", 4096, qsbr, 0);
  dp::Dataplane dpl;
  dpl.flows = &ft;
  ctl::EngineInputs in;
  in.compile_classes_apart = !o.sync;
  ctl::Engine engine(cfg[0], ft, dpl, qsbr, in);
  auto t0 = Clock::now();
  engine.start(dp::monotonicNs());
  const double start_ms = msSince(t0);
  const size_t table_bytes = engine.current()->classes.memoryBytes();
  const bool trie = engine.current()->classes.ipv4Trie(), cross = engine.current()->classes.crossProduct();

  asio::io_context io;
  ctl::EngineTicker ticker(io, engine, [] { return dp::monotonicNs(); }, std::chrono::milliseconds(10));
  ticker.start();
  std::vector<double> late_us, apply_ms, load_ms, publish_ms;
  Clock::time_point due = Clock::now() + std::chrono::milliseconds(1);
  asio::steady_timer poll_timer(io), reload_timer(io), watch_timer(io);
  bool done = false;
  std::function<void()> arm_poll = [&] {
    poll_timer.expires_at(due);
    poll_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec || done) return;
      auto at = Clock::now();
      late_us.push_back(std::chrono::duration<double, std::micro>(at - due).count());
      due = at + std::chrono::milliseconds(1);
      arm_poll();
    });
  };
  uint32_t reloads = 0;
  Clock::time_point asked;
  uint64_t gen_before = 0;
  std::function<void()> arm_reload_wait;
  std::function<void()> arm_reload = [&] {
    reload_timer.expires_after(std::chrono::seconds(1));
    reload_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if (reloads == o.reloads) {
        // The last change published (or a minute gone): the run ends.
        if (engine.pending() && msSince(asked) < 60000) {
          reload_timer.expires_after(std::chrono::milliseconds(10));
          return arm_reload_wait();
        }
        done = true;
        ticker.stop();
        return;
      }
      const int k = int(++reloads % 2);
      ctl::Config next = cfg[k];
      asked = Clock::now();
      if (o.file) {
        std::vector<ctl::ConfigError> errors;
        if (!ctl::loadConfigFile(path[k], next, errors)) {
          std::fprintf(stderr, "%s: %s\n", path[k].c_str(), errors.empty() ? "?" : errors[0].message.c_str());
          std::exit(1);
        }
        load_ms.push_back(msSince(asked));
      }
      auto a = Clock::now();
      gen_before = engine.generation();
      engine.applyConfig(std::move(next), "reload", dp::monotonicNs());
      apply_ms.push_back(msSince(a));
      arm_reload();
    });
  };
  auto notePublish = [&] {
    if (publish_ms.size() < apply_ms.size() && !engine.pending() && engine.generation() > gen_before)
      publish_ms.push_back(msSince(asked));
  };
  arm_reload_wait = [&] {
    reload_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      notePublish();
      if (engine.pending() && msSince(asked) < 60000) {
        reload_timer.expires_after(std::chrono::milliseconds(10));
        return arm_reload_wait();
      }
      done = true;
      ticker.stop();
    });
  };
  std::function<void()> arm_watch = [&] {  // when each reload's snapshot is out
    watch_timer.expires_after(std::chrono::milliseconds(1));
    watch_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec || done) return;
      notePublish();
      arm_watch();
    });
  };
  arm_poll();
  arm_reload();
  arm_watch();
  io.run();
  for (const std::string& p : path)
    if (!p.empty()) unlink(p.c_str());

  double load[3];
  getloadavg(load, 3);
  Stats l = stats(late_us), ap = stats(apply_ms), pu = stats(publish_ms), ld = stats(load_ms);
  std::sort(late_us.begin(), late_us.end());
  double l99 = late_us.empty() ? 0 : late_us[size_t(0.99 * double(late_us.size() - 1))];
  std::printf("class_reload_stall: %u classes of %u scattered IPv4 /32s and a catch-all (%u prefixes; "
              "compiled %.1f MiB, %s, IPv4 %s; first compile %.0f ms); %u reloads alternating two such sets, "
              "classes compiled %s%s; cpu %d (the compiler thread too); load average %.2f %.2f %.2f\n",
              o.classes, o.hosts, o.classes * o.hosts, double(table_bytes) / 1048576,
              cross ? "cross product" : "bit vectors", trie ? "trie" : "interval search", start_ms, o.reloads,
              o.sync ? "on the control thread" : "apart", o.file ? ", each parsed from a YAML file" : "", cpu,
              load[0], load[1], load[2]);
  if (o.file) std::printf("  file: %.2f MiB; parse and validate (control thread): median %.0f ms, max %.0f ms\n",
                          double(file_bytes) / 1048576, ld.median, ld.max);
  std::printf("  applyConfig on the control thread: median %.1f ms, max %.1f ms (of which, timed apart: "
              "validateConfig %.1f ms; classes compared in place %.1f ms)\n",
              ap.median, ap.max, validate_ms, rules_ms);
  std::printf("  reload to snapshot published: median %.0f ms, max %.0f ms (%zu of %zu reloads published: "
              "one made while another waited replaces it)\n",
              pu.median, pu.max, publish_ms.size(), apply_ms.size());
  std::printf("  1 ms timer lateness: %zu handlers, median %.1f us, p99 %.1f us, max %.1f ms\n", late_us.size(),
              l.median, l99, l.max / 1000);
  std::printf("{\"classes\": %u, \"hosts\": %u, \"sync\": %s, \"file\": %s, \"table_mib\": %.1f, \"ipv4\": \"%s\", "
              "\"apply_ms\": {\"median\": %.1f, \"max\": %.1f}, \"load_ms\": {\"median\": %.1f, \"max\": %.1f}, "
              "\"publish_ms\": {\"median\": %.1f, \"max\": %.1f}, \"validate_ms\": %.1f, \"rules_ms\": %.1f, "
              "\"poll_late_us\": {\"median\": %.1f, \"p99\": %.1f, \"max\": %.1f}, \"loadavg\": %.2f}\n",
              o.classes, o.hosts, o.sync ? "true" : "false", o.file ? "true" : "false", double(table_bytes) / 1048576,
              trie ? "trie" : "intervals", ap.median, ap.max, ld.median, ld.max, pu.median, pu.max, validate_ms, rules_ms, l.median, l99,
              l.max, load[0]);
  return 0;
}
