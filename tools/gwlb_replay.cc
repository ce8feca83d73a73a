// gwlb-replay: runs the real worker pipeline over a capture file.
//
// The main lcore reads the captures, hands bursts to worker lcores through rings
// (round-robin, so both directions of a flow and its returning Geneve traffic
// land on different workers when there are two), collects what the workers emit,
// writes it to pcap files and, with --reflect, plays a transparent appliance:
// every Geneve packet goes back with outer addresses swapped and the Geneve
// header untouched. The capture's timestamps are the clock.
//
// The control decisions (snapshots, drains, expiry, regions) are gwlbd's own:
// the control core (control/engine/engine.h) runs here on capture time, and --events
// FILE (docs/replay.md) changes appliances at capture times through it. Before
// the first packet at or after an event or another control action, every
// earlier packet (and its reflection) is processed, then the action runs.
//
// This file is argument parsing plus the loop; tools/replay_run.* runs the
// workers and the engine, tools/replay_io.* reads and writes captures,
// tools/replay_summary.* writes summary.json.
#include <getopt.h>
#include <rte_eal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "version.h"
#include "common/flow_key.h"
#include "control/config/config.h"
#include "control/engine/scripted_events.h"
#include "dataplane/eal.h"
#include "dataplane/pipeline.h"
#include "tools/replay_io.h"
#include "tools/replay_run.h"

using namespace gwlb;
using namespace gwlb::replay;

namespace {

constexpr uint16_t kRouterPort = 0;

void usage(FILE* f) {
  std::fprintf(f,
               "usage: gwlb-replay --config FILE --in PCAP --out-dir DIR [--reflect]\n"
               "                   [--appliance-in PCAP] [--events FILE] [--workers N] [--burst N]\n"
               "                   [--node K/N [--ecmp-policy P]] [--interval T|auto] [--strict]\n"
               "                   [--quiet]\n"
               "Runs gwlbd's worker pipeline over a capture. Writes DIR/to-appliances.pcap,\n"
               "DIR/returned.pcap and DIR/summary.json.\n"
               "  --reflect          act as transparent appliances: send every Geneve packet back\n"
               "  --appliance-in F   also feed F as traffic arriving from the appliances (gwlb's bypass\n"
               "                     option in them is honoured as gwlbd does)\n"
               "  --reflect-bypass-after N  with --reflect: once a flow brought N bytes (inner\n"
               "                     packets), its reflections carry gwlb's bypass option (the\n"
               "                     flow's life; class node.geneve_option_class)\n"
               "  --events FILE      YAML list of appliance changes at capture times, applied as\n"
               "                     gwlbd would (docs/replay.md), e.g.\n"
               "                       - { at: 4s, server: 192.0.2.10, health: unhealthy }\n"
               "                       - { at: 6.5s, server: 192.0.2.11, remove: true }\n"
               "                       - { at: 7s, server: 192.0.2.12, drain: true, timeout: 30s }\n"
               "                     actions: health: unhealthy|healthy, remove: true,\n"
               "                     add: GROUP [weight: N], weight: N, drain: true [timeout: T],\n"
               "                     undrain: true, and { at: T, reload: CONFIG } (a reload as\n"
               "                     gwlbd's: established flows keep their listener and appliance);\n"
               "                     a change gwlbd would refuse (a group left with no appliance in\n"
               "                     service) is refused and reported unless it has force: true;\n"
               "                     `at` counts from the first packet's timestamp.\n"
               "                     Listeners, composite health checks and failover between\n"
               "                     regions follow the config as in gwlbd (region log on stderr)\n"
               "  --workers N        worker lcores (1..8, default 1); packets are dealt round-robin\n"
               "  --burst N          packets per burst (1..256, default 32)\n"
               "  --node K/N         be node K (1..N, N 1..4) of a fleet behind a router's ECMP:\n"
               "                     replay only the --in frames the router's hash (not\n"
               "                     symmetric, as ECMP) sends to node K; --events keep the\n"
               "                     capture's clock. Run it for K = 1..N and compare\n"
               "                     (docs/fleet.md)\n"
               "  --ecmp-policy P    how that router hashes (with --node; default l4-linux):\n"
               "                     l3: addresses (Linux fib_multipath_hash_policy 0);\n"
               "                     l4-linux: addresses, protocol and ports, but no ports for\n"
               "                     any fragment, the first included (policy 1);\n"
               "                     l4-first-with-ports: also the ports of a first fragment\n"
               "                     (its later fragments can reach another node and drop)\n"
               "  --interval T       summary.json time series interval of capture time, e.g. 1s,\n"
               "                     100ms (default auto: about 100 points over the capture)\n"
               "  --strict           exit 1 when packets were dropped because the flow table was\n"
               "                     full or an appliance has no MAC (always warned about)\n"
               "  --quiet            no progress line (it is shown only when stderr is a terminal)\n"
               "  --version          print the version and exit\n"
               "Exit status: 0 done, 1 --strict and packets were lost, 2 bad arguments or inputs.\n"
               "Plot the run: tools/plot_replay.py DIR/summary.json --out FILE.svg\n");
}

// A progress line on stderr, rewritten in place at most 4 times a second,
// when stderr is a terminal (never in a log file or a pipe).
class Progress {
 public:
  explicit Progress(bool on) : on_(on) {}
  void tick(const Replay& r, bool last = false) {
    if (!on_) return;
    auto now = std::chrono::steady_clock::now();
    if (!last && shown_ && now - last_ < std::chrono::milliseconds(250)) return;
    last_ = now;
    shown_ = true;
    const size_t total = std::max<size_t>(r.total(), 1);
    std::fprintf(stderr, "\rgwlb-replay: %3zu %% (%zu of %zu frames, capture time %.1f of %.1f s)\033[K%s",
                 r.fed() * 100 / total, r.fed(), r.total(), double(r.captureNow()) / 1e9,
                 double(r.captureSpan()) / 1e9, last ? "\n" : "");
    std::fflush(stderr);
  }

 private:
  bool on_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool quiet = false;
  bool ecmp_policy_given = false;
  static option longopts[] = {{"config", required_argument, nullptr, 'c'},
                              {"in", required_argument, nullptr, 'i'},
                              {"out-dir", required_argument, nullptr, 'o'},
                              {"reflect", no_argument, nullptr, 'r'},
                              {"appliance-in", required_argument, nullptr, 'a'},
                              {"reflect-bypass-after", required_argument, nullptr, 'B'},
                              {"events", required_argument, nullptr, 'e'},
                              {"workers", required_argument, nullptr, 'w'},
                              {"burst", required_argument, nullptr, 'b'},
                              {"node", required_argument, nullptr, 'n'},
                              {"ecmp-policy", required_argument, nullptr, 'E'},
                              {"interval", required_argument, nullptr, 'I'},
                              {"strict", no_argument, nullptr, 's'},
                              {"quiet", no_argument, nullptr, 'q'},
                              {"help", no_argument, nullptr, 'h'},
                              {"version", no_argument, nullptr, 'V'},
                              {nullptr, 0, nullptr, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    switch (ch) {
      case 'c': o.config = optarg; break;
      case 'i': o.in = optarg; break;
      case 'o': o.out_dir = optarg; break;
      case 'r': o.reflect = true; break;
      case 'a': o.appliance_in = optarg; break;
      case 'B': {
        char* end = nullptr;
        o.reflect_bypass_after = std::strtoull(optarg, &end, 10);
        if (!*optarg || *end || o.reflect_bypass_after == 0) {
          std::fprintf(stderr, "gwlb-replay: --reflect-bypass-after: '%s' is not a byte count above 0\n", optarg);
          return 2;
        }
        break;
      }
      case 'e': o.events = optarg; break;
      case 'w': o.workers = unsigned(std::strtoul(optarg, nullptr, 10)); break;
      case 'b': o.burst = unsigned(std::strtoul(optarg, nullptr, 10)); break;
      case 'n':
        if (std::sscanf(optarg, "%u/%u", &o.node, &o.nodes) != 2 || o.nodes < 1 || o.nodes > 4 ||
            o.node < 1 || o.node > o.nodes) {
          std::fprintf(stderr, "gwlb-replay: --node %s: expected K/N with 1 <= K <= N <= 4\n", optarg);
          return 2;
        }
        break;
      case 'E':
        if (!parseEcmpPolicy(optarg, o.ecmp_policy)) {
          std::fprintf(stderr,
                       "gwlb-replay: --ecmp-policy %s: expected l3, l4-linux or "
                       "l4-first-with-ports\n",
                       optarg);
          return 2;
        }
        ecmp_policy_given = true;
        break;
      case 'I':
        if (std::string(optarg) != "auto" && (!ctl::parseDurationNs(optarg, o.interval_ns) ||
                                              o.interval_ns < 1'000'000)) {
          std::fprintf(stderr,
                       "gwlb-replay: --interval %s: expected auto or a duration of at least "
                       "1ms (e.g. 1s, 250ms, 0.5)\n",
                       optarg);
          return 2;
        }
        break;
      case 's': o.strict = true; break;
      case 'q': quiet = true; break;
      case 'h': usage(stdout); return 0;
      case 'V': std::printf("gwlb-replay %s\n", gwlb::versionText()); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (o.config.empty() || (o.in.empty() && o.appliance_in.empty()) || o.out_dir.empty() ||
      o.workers < 1 || o.workers > 8 || o.burst < 1 || o.burst > dp::kMaxBurst) {
    usage(stderr);
    return 2;
  }
  if (ecmp_policy_given && !o.nodes) {
    std::fprintf(stderr, "gwlb-replay: --ecmp-policy needs --node K/N\n");
    return 2;
  }
  if (o.nodes && !o.appliance_in.empty()) {
    std::fprintf(stderr, "gwlb-replay: --node takes --in only (not --appliance-in)\n");
    return 2;
  }
  if (o.reflect_bypass_after && !o.reflect) {
    std::fprintf(stderr, "gwlb-replay: --reflect-bypass-after needs --reflect\n");
    return 2;
  }

  ctl::Config cfg;
  std::vector<ctl::ConfigError> errors;
  if (!ctl::loadConfigFile(o.config, cfg, errors)) {
    std::fprintf(stderr, "gwlb-replay: invalid config %s:\n%s", o.config.c_str(),
                 ctl::formatErrors(errors).c_str());
    return 2;
  }
  // What gwlbd would log at start and `gwlbd --check-config` prints: a replay
  // of a config with a shadowed class must not run it silently.
  for (const ctl::ConfigError& w : ctl::configWarnings(cfg))
    std::fprintf(stderr, "gwlb-replay: warning: %s: %s\n", w.path.c_str(), w.message.c_str());
  {
    // The config's key (the fleet secret, else node.flow_hash_secret), or
    // the zero key: a replay is reproducible.
    FlowHashKey key;
    bool configured = false;
    std::string err;
    if (!ctl::loadHashKey(cfg, key, configured, err)) {
      std::fprintf(stderr, "gwlb-replay: invalid config %s:\n  %s\n", o.config.c_str(), err.c_str());
      return 2;
    }
    setFlowHashKey(key);
  }
  std::vector<ctl::ScriptedEvent> events;
  if (!o.events.empty()) {
    try {
      events = ctl::parseEventsFile(o.events);
    } catch (const ctl::EventError& e) {
      std::fprintf(stderr, "gwlb-replay: invalid events file %s:\n%s\n", o.events.c_str(),
                   e.text.c_str());
      return 2;
    }
  }
  std::vector<Frame> frames;
  std::string err;
  CaptureStats cs;
  if (!o.in.empty() && !readPcap(o.in, kRouterPort, maxDataRoom(), frames, err, cs)) {
    std::fprintf(stderr, "gwlb-replay: %s\n", err.c_str());
    return 2;
  }
  if (o.nodes && !frames.empty()) {
    // Keep the capture's clock (events count from its first frame), then
    // only the frames a router's ECMP sends to this node.
    o.clock_start_ns = std::min_element(frames.begin(), frames.end(), [](const Frame& a,
                                                                         const Frame& b) {
                         return a.ts_ns < b.ts_ns;
                       })->ts_ns;
    size_t all = frames.size();
    std::erase_if(frames, [&](const Frame& f) {
      return ecmpNode(f, o.nodes, o.ecmp_policy) != o.node - 1;
    });
    std::fprintf(stderr, "gwlb-replay: node %u/%u (ECMP %s): %zu of %zu frames\n", o.node,
                 o.nodes, toString(o.ecmp_policy), frames.size(), all);
  }
  o.option_class = cfg.node.geneve_option_class;
  size_t n_router_in = frames.size();
  if (!o.appliance_in.empty() &&
      !readPcap(o.appliance_in, cfg.node.underlay_port, maxDataRoom(), frames, err, cs)) {
    std::fprintf(stderr, "gwlb-replay: %s\n", err.c_str());
    return 2;
  }
  for (size_t i = n_router_in; i < frames.size(); ++i) frames[i].appliance_in = true;
  if (cs.too_large)
    std::fprintf(stderr,
                 "gwlb-replay: warning: %llu frame(s) larger than one mbuf holds (%u bytes; "
                 "largest %zu) not replayed (summary.json frames_too_large)\n",
                 (unsigned long long)cs.too_large, maxDataRoom(), cs.largest_skipped);
  if (cs.cut_by_capture)
    std::fprintf(stderr,
                 "gwlb-replay: warning: %llu frame(s) were cut by the capture (shorter than on "
                 "the wire: snaplen); replayed as captured (summary.json frames_cut_by_capture)\n",
                 (unsigned long long)cs.cut_by_capture);
  std::stable_sort(frames.begin(), frames.end(),
                   [](const Frame& a, const Frame& b) { return a.ts_ns < b.ts_ns; });
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);

  std::string lcores = "--lcores=0@(0-1)";
  for (unsigned i = 1; i <= o.workers; ++i) lcores += "," + std::to_string(i) + "@(0-1)";
  try {
    dp::initEal("gwlb-replay", {"--no-huge", "--no-pci", "--no-shconf", "-m", "512",
                                "--log-level=*:warning", "--no-telemetry", lcores});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gwlb-replay: %s\n", e.what());
    return 2;
  }

  int rc = 0;
  try {
    checkEvents(events, cfg);
    o.progress = !quiet && isatty(STDERR_FILENO);
    Replay replay(o, std::move(cfg), std::move(frames), n_router_in, std::move(events), cs);
    Progress progress(o.progress);
    while (replay.step()) progress.tick(replay);
    progress.tick(replay, true);
    rc = replay.finish();
  } catch (const ctl::EventError& e) {
    std::fprintf(stderr, "gwlb-replay: invalid events file %s:\n%s\n", o.events.c_str(),
                 e.text.c_str());
    rc = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gwlb-replay: %s\n", e.what());
    rc = 2;
  }
  rte_eal_cleanup();
  return rc;
}
