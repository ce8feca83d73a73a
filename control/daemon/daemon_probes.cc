// Where gwlbd's health probes travel (control/health/probe_path.h, docs/deploy.md
// "Where probes travel"): at start, the data path is readied on the appliance
// port's tap and every probed appliance's route is checked, and gwlbd refuses
// to start rather than probe by another way; every later config change (a
// reload, gwlbctl server add/set/remove) passes the same checks first.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "control/api/api_params.h"
#include "control/daemon/daemon.h"
#include "control/health/probe_path.h"

namespace gwlb::ctl {
namespace {

std::string joined(const std::vector<ConfigError>& errors) {
  std::string all;
  for (const ConfigError& e : errors) all += "\n  " + e.path + ": " + e.message;
  return all;
}

// Every problem with the probe paths of `c`, after readying its data path.
// Throws std::runtime_error when the tap cannot be readied.
std::vector<ConfigError> probePathProblems(const Config& c) {
  std::vector<ConfigError> errors = probePathErrors(c);
  if (!errors.empty()) return errors;
  for (const std::string& line : prepareDataPath(c)) spdlog::info("health probes: {}", line);
  return probeRouteErrors(c);
}

// What the probe-path checks depend on: every probed appliance with its
// path and the MAC the data path pins. A change that leaves it alone (a
// weight, a drain) needs no kernel lookup.
std::vector<std::string> probeTargets(const Config& c) {
  std::vector<std::string> out;
  for (const ServerGroupConfig& g : c.server_groups) {
    if (!g.health_check.active()) continue;
    const std::string path = probePathOf(c, g.health_check).describe();
    for (const ServerConfig& sc : g.servers)
      out.push_back(sc.address.str() + " " + path + " " +
                    (sc.mac ? sc.mac->str() : c.node.gateway_mac ? c.node.gateway_mac->str() : "arp"));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void Daemon::setupProbePaths() {
  std::vector<ConfigError> errors = probePathProblems(cfg());
  if (!errors.empty())
    throw std::runtime_error("health probes cannot see what the data sees (" +
                             std::to_string(errors.size()) + " problem" +
                             (errors.size() == 1 ? "" : "s") + "):" + joined(errors));
  for (size_t i = 0; i < cfg().server_groups.size(); ++i) {
    const ServerGroupConfig& g = cfg().server_groups[i];
    if (g.health_check.active())
      spdlog::info("health probes of group {}: {}", g.name,
                   probePathOf(cfg(), g.health_check).describe());
  }
}

void Daemon::checkProbePaths(const Config& next) {
  if (probeTargets(next) == probeTargets(cfg())) return;  // checked when they were set
  std::vector<ConfigError> errors;
  if (!validateConfig(next, errors)) return;  // the engine reports those
  try {
    errors = probePathProblems(next);
  } catch (const std::runtime_error& e) {
    errors.push_back({"node.exception_path", e.what()});
  }
  if (errors.empty()) return;
  nlohmann::json d = nlohmann::json::array();
  for (const ConfigError& e : errors) d.push_back({{"path", e.path}, {"message", e.message}});
  spdlog::error("config change refused: health probes cannot see what the data sees:{}", joined(errors));
  throw ApiFailure("invalid_config",
                   "health probes cannot see what the data sees (" + std::to_string(errors.size()) +
                       " problem" + (errors.size() == 1 ? "" : "s") + "; see details)",
                   d);
}

}  // namespace gwlb::ctl
