// Benchmark (never pass/fail): how long a reload of the largest legal
// traffic-class set holds gwlbd's control thread. gwlbd's control thread runs
// everything on one io_context (the exception path's poll every 1 ms: BGP,
// BFD; probes; fleet sync; the API; the watchdog). Here the same io_context
// runs
//  - the engine's ticker every 10 ms (control/daemon/engine_ticker.h), as in
//    gwlbd;
//  - a 1 ms timer standing for the exception path's poll: how late each of
//    its handlers ran behind its deadline is the stall the rest of the
//    control thread sees;
//  - reloads, every second, with the other of two class sets (A and B: the
//    same shape, other addresses), through gwlbd's reload path
//    (control/engine/reload_plan.h): ReloadWorker runs planReload (load,
//    checks, warnings, the classes compiled) on its thread and the plan is
//    posted to the io_context, which runs what gwlbd's control thread runs
//    with it: previewReload (reverted and changed appliances, the service
//    guard's losses) and Engine::applyConfig with the plan's config and
//    classes, each timed. gwlbd's own steps left out: the probe-path check
//    (it looks at the kernel only when probed appliances change; the class
//    sets here change no appliance), JSON and logging.
// The class set: `--classes` classes of `--hosts` scattered IPv4 /32s each
// (999 x 600 by default: larger than a config file may be; the set handed
// to the plan in memory, copied and validated there as the loader would)
// and a catch-all. --file: each reload reads a YAML file of the set as gwlbd
// does (loadRunnableConfig; 999 x 470 fit in 7.7 MiB). --sync: the whole
// plan on the control thread (what gwlbd did before plans ran apart).
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
#include "control/config/valid_config.h"
#include "control/daemon/engine_ticker.h"
#include "control/engine/engine.h"
#include "control/engine/reload_plan.h"
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
  // One validation of the whole config (the plan's, off the control
  // thread) and the classes compared in place with the running ones (the
  // plan's, and each snapshot build's look-up of the compiled table, on the
  // control thread). Timed once here, apart from the loop.
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
  in.compile_classes_apart = true;  // as gwlbd: a change without a plan's classes still compiles apart
  ctl::Engine engine(cfg[0], ft, dpl, qsbr, in);
  auto t0 = Clock::now();
  engine.start(dp::monotonicNs());
  const double start_ms = msSince(t0);
  const size_t table_bytes = engine.current()->classes.memoryBytes();
  const bool trie = engine.current()->classes.ipv4Trie(), cross = engine.current()->classes.crossProduct();

  asio::io_context io;
  ctl::EngineTicker ticker(io, engine, [] { return dp::monotonicNs(); }, std::chrono::milliseconds(10));
  ticker.start();
  std::vector<double> late_us, late_in, late_out, apply_ms, load_ms, publish_ms;
  bool in_reload = false;
  Clock::time_point due = Clock::now() + std::chrono::milliseconds(1);
  asio::steady_timer poll_timer(io), reload_timer(io);
  bool done = false;
  std::function<void()> arm_poll = [&] {
    poll_timer.expires_at(due);
    poll_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec || done) return;
      auto at = Clock::now();
      late_us.push_back(std::chrono::duration<double, std::micro>(at - due).count());
      // Apart: the handlers that ran while a reload was under way, and the
      // rest (the baseline: what the machine's load alone costs).
      (in_reload ? late_in : late_out).push_back(late_us.back());
      due = at + std::chrono::milliseconds(1);
      arm_poll();
    });
  };
  uint32_t reloads = 0;
  Clock::time_point asked;
  ctl::ReloadWorker worker;
  std::vector<double> plan_ms, compile_ms, preview_ms;
  size_t refused = 0;
  // The control thread's part, as gwlbd's Reloader runs it (Engine::applyReload).
  auto applyPlan = [&](ctl::ReloadPlan plan) {
    if (!plan.errors.empty()) {
      std::fprintf(stderr, "reload refused: %s\n", plan.errors[0].message.c_str());
      ++refused;
      in_reload = false;
      return;
    }
    load_ms.push_back(plan.load_ms);
    plan_ms.push_back(plan.load_ms + plan.check_ms);
    compile_ms.push_back(plan.compile_ms);
    auto a = Clock::now();
    const uint64_t now = dp::monotonicNs();
    ctl::ReloadPreview pv = ctl::previewReload(engine.config(), engine.config(), engine.lifecycle(),
                                               engine.health(), *plan.next, now, "removed by reload");
    preview_ms.push_back(msSince(a));
    if (!pv.losses.empty()) std::exit(1);
    // Engine::applyReload previews again, guards and applies: the control
    // thread's whole part.
    a = Clock::now();
    if (engine.applyReload(std::move(plan), now, false).refused) std::exit(1);
    apply_ms.push_back(msSince(a));
    publish_ms.push_back(msSince(asked));
    in_reload = false;
  };
  std::function<void()> arm_reload = [&] {
    reload_timer.expires_after(std::chrono::seconds(1));
    reload_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if (reloads == o.reloads) {
        // The last reload applied (or a minute gone): the run ends.
        if (publish_ms.size() + refused < o.reloads && msSince(asked) < 60000) return arm_reload();
        done = true;
        ticker.stop();
        return;
      }
      if (worker.busy()) return arm_reload();
      const int k = int(++reloads % 2);
      ctl::ReloadRequest r;
      if (o.file) {
        r.load = [p = path[k]](std::optional<ctl::ValidConfig>& out, std::vector<ctl::ConfigError>& errors,
                               FlowHashKey& key, bool& keyed) {
          return ctl::loadRunnableConfig(p, out, errors, &key, &keyed);
        };
      } else {
        r.load = [c = &cfg[k]](std::optional<ctl::ValidConfig>& out, std::vector<ctl::ConfigError>& errors,
                               FlowHashKey&, bool& keyed) {
          keyed = false;
          out = ctl::validConfig(*c, errors);  // the copy, as a loader would make it
          return out.has_value();
        };
      }
      r.running = engine.sharedConfig();
      asked = Clock::now();
      in_reload = true;
      if (o.sync) {
        applyPlan(ctl::planReload(r));
      } else {
        worker.start(std::move(r), [&io, &applyPlan](ctl::ReloadPlan plan) {
          auto p = std::make_shared<ctl::ReloadPlan>(std::move(plan));
          asio::post(io, [p, &applyPlan] { applyPlan(std::move(*p)); });
        });
      }
      arm_reload();
    });
  };
  arm_poll();
  arm_reload();
  io.run();
  for (const std::string& p : path)
    if (!p.empty()) unlink(p.c_str());

  double load[3];
  getloadavg(load, 3);
  Stats l = stats(late_us), ap = stats(apply_ms), pu = stats(publish_ms), ld = stats(load_ms),
        pl = stats(plan_ms), co = stats(compile_ms), pv = stats(preview_ms);
  std::sort(late_us.begin(), late_us.end());
  double l99 = late_us.empty() ? 0 : late_us[size_t(0.99 * double(late_us.size() - 1))];
  std::printf("class_reload_stall: %u classes of %u scattered IPv4 /32s and a catch-all (%u prefixes; "
              "compiled %.1f MiB, %s, IPv4 %s; first compile %.0f ms); %u reloads alternating two such sets "
              "through gwlbd's reload path%s, the plan %s; cpu %d (the plan's thread too); load average %.2f %.2f %.2f\n",
              o.classes, o.hosts, o.classes * o.hosts, double(table_bytes) / 1048576,
              cross ? "cross product" : "bit vectors", trie ? "trie" : "interval search", start_ms, o.reloads,
              o.file ? ", each read from a YAML file" : " (the set handed over in memory)",
              o.sync ? "on the control thread" : "apart", cpu, load[0], load[1], load[2]);
  if (o.file) std::printf("  file: %.2f MiB\n", double(file_bytes) / 1048576);
  std::printf("  plan (%s): load and checks median %.0f ms, max %.0f ms (the load alone median %.0f ms); "
              "classes compiled median %.0f ms, max %.0f ms\n",
              o.sync ? "control thread" : "apart", pl.median, pl.max, ld.median, co.median, co.max);
  std::printf("  control thread per reload: previewReload and Engine::applyConfig median %.1f ms, max %.1f ms "
              "(previewReload median %.1f ms; timed apart: one validateConfig %.1f ms, classes compared in "
              "place %.1f ms)\n",
              ap.median, ap.max, pv.median, validate_ms, rules_ms);
  std::printf("  reload asked to snapshot published: median %.0f ms, max %.0f ms (%zu of %u reloads published, "
              "%zu refused)\n",
              pu.median, pu.max, publish_ms.size(), o.reloads, refused);
  const Stats li = stats(late_in), lo = stats(late_out);
  std::printf("  1 ms timer lateness: %zu handlers, median %.1f us, p99 %.1f us, max %.1f ms; while a reload "
              "was under way: %zu handlers, max %.1f ms; otherwise (baseline): %zu handlers, max %.1f ms\n",
              late_us.size(), l.median, l99, l.max / 1000, late_in.size(), li.max / 1000, late_out.size(),
              lo.max / 1000);
  std::printf("{\"classes\": %u, \"hosts\": %u, \"sync\": %s, \"file\": %s, \"file_mib\": %.2f, \"table_mib\": %.1f, "
              "\"ipv4\": \"%s\", \"apply_ms\": {\"median\": %.1f, \"max\": %.1f}, "
              "\"plan_ms\": {\"median\": %.1f, \"max\": %.1f}, \"compile_ms\": {\"median\": %.1f, \"max\": %.1f}, "
              "\"publish_ms\": {\"median\": %.1f, \"max\": %.1f}, \"validate_ms\": %.1f, \"rules_ms\": %.1f, "
              "\"poll_late_us\": {\"median\": %.1f, \"p99\": %.1f, \"max\": %.1f, \"max_in_reload\": %.1f, "
              "\"max_baseline\": %.1f}, \"loadavg\": %.2f}\n",
              o.classes, o.hosts, o.sync ? "true" : "false", o.file ? "true" : "false", double(file_bytes) / 1048576,
              double(table_bytes) / 1048576, trie ? "trie" : "intervals", ap.median, ap.max, pl.median, pl.max,
              co.median, co.max, pu.median, pu.max, validate_ms, rules_ms, l.median, l99, l.max, li.max, lo.max,
              load[0]);
  return 0;
}
