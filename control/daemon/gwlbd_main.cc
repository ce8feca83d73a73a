// gwlbd: the gateway load balancer daemon.
//   gwlbd --config FILE [-- EAL ARGS...]   run
//   gwlbd --check-config FILE [-- EAL ARGS...]  validate, print the memory it
//                                          needs, and exit (0 valid, 2 invalid)
#include <rte_eal.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "control/config/config.h"
#include "control/daemon/daemon.h"
#include "control/fleet/fleet_peers.h"
#include "control/daemon/log_setup.h"
#include "control/engine/maglev_cache.h"
#include "control/daemon/memory_plan.h"
#include "control/health/probe_path.h"
#include "dataplane/eal.h"
#include "version.h"

using namespace gwlb;

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: gwlbd --config FILE [-- EAL ARGS...]\n"
               "       gwlbd --check-config FILE [-- EAL ARGS...]\n"
               "       gwlbd --version\n"
               "\n"
               "Runs the gateway load balancer: DPDK worker lcores forward traffic to\n"
               "appliances in Geneve, a control thread checks their health and serves the\n"
               "control API. EAL arguments come from the config's `eal` list, then from\n"
               "everything after `--`.\n"
               "\n"
               "options:\n"
               "  -c, --config FILE     run with this configuration file\n"
               "  --check-config FILE   validate FILE, print the memory it needs (EAL and\n"
               "                        process) and exit\n"
               "  --version             print the version and exit\n"
               "  -h, --help            show this help\n"
               "\n"
               "signals: SIGINT/SIGTERM stop it cleanly; SIGHUP reloads the config file (a\n"
               "bad file keeps the running config); SIGUSR1 logs every counter now.\n"
               "\n"
               "environment: NOTIFY_SOCKET and WATCHDOG_USEC (set by systemd): readiness,\n"
               "status and watchdog notifications. STATE_DIRECTORY (systemd's\n"
               "StateDirectory=; default /var/lib/gwlb): where gwlbd keeps its flow hash\n"
               "key (flow_hash.key) when the config sets none.\n"
               "\n"
               "exit status: 0 stopped cleanly or valid config, 1 start-up failed, 2 bad\n"
               "usage, invalid config, or a config the EAL memory cannot hold.\n");
}

bool load(const std::string& path, ctl::Config& cfg, FlowHashKey* key = nullptr,
          bool* key_configured = nullptr) {
  std::vector<ctl::ConfigError> errors;
  // Beyond the file's own rules and its secret files, gwlbd's: every probed
  // group has a probe path (control/health/probe_path.h); the kernel side is checked at start.
  if (!ctl::loadRunnableConfig(path, cfg, errors, key, key_configured) ||
      !(errors = ctl::probePathErrors(cfg)).empty()) {
    std::fprintf(stderr, "%s: invalid configuration (%zu error%s):\n%s", path.c_str(),
                 errors.size(), errors.size() == 1 ? "" : "s", ctl::formatErrors(errors).c_str());
    return false;
  }
  return true;
}

// The flow hash key and where it comes from (one line, for --check-config
// and the start-up log): the fleet secret, node.flow_hash_secret, or else
// gwlbd's own key in its state directory, created there when `create` and
// missing. False (the error on stderr) when that file cannot be used.
bool keySource(const ctl::Config& cfg, bool key_configured, bool create, FlowHashKey& key,
               std::string& source) {
  if (key_configured) {
    source = cfg.fleet.configured ? "the fleet secret" : "node.flow_hash_secret";
    return true;
  }
  const std::string dir = ctl::stateDirectory(std::getenv("STATE_DIRECTORY"));
  const std::string path = dir + "/" + ctl::kStateKeyFile;
  ctl::StateKeyOutcome got;
  std::string error;
  if (!ctl::loadStateKey(dir, create, key, got, error)) {
    std::fprintf(stderr, "gwlbd: %s\n", error.c_str());
    return false;
  }
  switch (got) {
    case ctl::StateKeyOutcome::kRead: source = path + " (gwlbd's own, kept across restarts)"; break;
    case ctl::StateKeyOutcome::kCreated: source = path + " (gwlbd's own, generated now and kept)"; break;
    case ctl::StateKeyOutcome::kNotReadable:
      source = path + " (gwlbd's own: not readable by this user, so not checked here)";
      break;
    case ctl::StateKeyOutcome::kMissing:
      source = path + " (gwlbd's own: not there yet, generated and kept at the first start)";
      break;
  }
  return true;
}

// gwlbd --check-config FILE: validates the config, the lcores and the memory
// plan as a start would, and prints the plan; the exit code main returns.
int checkConfig(const std::string& check, const std::vector<std::string>& eal_extra) {
  ctl::Config cfg;
  FlowHashKey key;
  bool key_configured = false;
  std::string key_source;
  if (!load(check, cfg, &key, &key_configured)) return 2;
  if (!keySource(cfg, key_configured, false, key, key_source)) return 2;
  std::vector<std::string> eal = cfg.eal_args;
  eal.insert(eal.end(), eal_extra.begin(), eal_extra.end());
  std::string lcores = ctl::checkLcores(cfg, eal);
  if (!lcores.empty()) {
    std::fprintf(stderr, "%s: invalid configuration (1 error):\ndataplane.workers: %s\n",
                 check.c_str(), lcores.c_str());
    return 2;
  }
  ctl::EalBudget budget = ctl::ealBudget(eal);
  ctl::MemoryPlan plan = ctl::planMemory(cfg, budget.pci_ports, !budget.no_huge);
  std::string misfit = ctl::checkFits(plan, budget);
  if (!misfit.empty()) {
    std::printf("%s", ctl::formatPlan(plan, budget).c_str());
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", check.c_str(), misfit.c_str());
    return 2;
  }
  std::printf("%s: configuration is valid (%zu server group(s))\nflow hash key: %s\n%s",
              check.c_str(), cfg.server_groups.size(), key_source.c_str(),
              ctl::formatPlan(plan, budget).c_str());
  std::string warning = ctl::mbufWarning(cfg, budget.pci_ports);
  if (!warning.empty()) std::fprintf(stderr, "%s: warning: %s\n", check.c_str(), warning.c_str());
  for (const ctl::ConfigError& w : ctl::configWarnings(cfg))
    std::fprintf(stderr, "%s: warning: %s: %s\n", check.c_str(), w.path.c_str(), w.message.c_str());
  // fleet.peers entries that reach this node itself on this host: gwlbd skips them.
  for (const ctl::SelfPeer& sp :
       ctl::selfPeers(cfg.fleet.sync_listen, cfg.fleet.peers, ctl::hostAddresses()))
    std::fprintf(stderr, "%s: warning: fleet.peers[%zu]: '%s' is this node (%s); gwlbd skips it\n",
                 check.c_str(), sp.index, cfg.fleet.peers[sp.index].c_str(), sp.why.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Until the control loop's handlers are installed, a reload or stats request
  // must not kill the process (their default action is to terminate).
  std::signal(SIGHUP, SIG_IGN);
  std::signal(SIGUSR1, SIG_IGN);
  gwlb::ctl::keepSnapshotMemoryMapped();  // snapshots rebuilt often: no mmap churn
  std::string config, check;
  std::vector<std::string> eal_extra;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      for (++i; i < argc; ++i) eal_extra.push_back(argv[i]);
      break;
    }
    if ((a == "--config" || a == "-c") && i + 1 < argc) {
      config = argv[++i];
    } else if (a == "--check-config" && i + 1 < argc) {
      check = argv[++i];
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("gwlbd %s\n", gwlb::versionText());
      return 0;
    } else if (a == "--config" || a == "-c" || a == "--check-config") {
      std::fprintf(stderr, "gwlbd: %s needs a file: gwlbd %s FILE\n", a.c_str(), a.c_str());
      usage(stderr);
      return 2;
    } else {
      std::fprintf(stderr, "gwlbd: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (!check.empty()) return checkConfig(check, eal_extra);
  if (config.empty()) {
    usage(stderr);
    return 2;
  }
  ctl::Config cfg;
  FlowHashKey key;
  bool key_configured = false;
  if (!load(config, cfg, &key, &key_configured)) return 2;
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));
  // Under systemd (stdout is the journal's stream): priorities journald reads.
  ctl::setLogPattern(*spdlog::default_logger(), ctl::isJournalStream(1, std::getenv("JOURNAL_STREAM")));
  std::string key_source;
  if (!keySource(cfg, key_configured, true, key, key_source)) return 2;
  if (key_configured && cfg.fleet.configured)
    spdlog::info("fleet node {}: flow hash and cookies keyed with the fleet secret",
                 cfg.fleet.node_name);
  else
    spdlog::info("flow hash and cookies keyed with {}", key_source);
  setFlowHashKey(key);

  std::vector<std::string> eal = cfg.eal_args;
  eal.insert(eal.end(), eal_extra.begin(), eal_extra.end());
  {
    ctl::EalBudget budget = ctl::ealBudget(eal);
    ctl::MemoryPlan plan = ctl::planMemory(cfg, budget.pci_ports, !budget.no_huge);
    const ctl::MemoryPart* ft = plan.find("flow table");
    spdlog::info("memory: EAL {} needed (mbuf pool {}), process up to {}; flow table {} ({})",
                 ctl::mib(plan.ealBytes()), ctl::mib(plan.find("mbuf pool")->bytes),
                 ctl::mib(plan.processBytes()), ctl::mib(ft->bytes),
                 ft->eal ? "hugepages" : "process memory");
    std::string misfit = ctl::checkFits(plan, budget);
    if (!misfit.empty()) spdlog::warn("{}", misfit);
    std::string warning = ctl::mbufWarning(cfg, budget.pci_ports);
    if (!warning.empty()) spdlog::warn("{}", warning);
  }
  try {
    dp::initEal("gwlbd", eal);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  int rc;
  try {
    ctl::Daemon d(std::move(cfg));
    rc = d.run();
  } catch (const std::exception& e) {
    spdlog::critical("startup failed: {}", e.what());
    rc = 1;
  }
  rte_eal_cleanup();
  return rc;
}
