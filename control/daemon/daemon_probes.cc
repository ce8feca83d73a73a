// Where gwlbd's health probes travel (control/health/probe_path.h, docs/deploy.md
// "Where probes travel"): at start, the data path is readied on the appliance
// port's tap and every probed appliance's route is checked, and gwlbd refuses
// to start rather than probe by another way; every later config change (a
// reload, gwlbctl server add/set/remove) passes the same checks first, with
// nothing changed in the kernel until the change is in force: then the tap's
// pinned MACs follow it (removed with the appliances they were for).
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "control/api/api_params.h"
#include "control/daemon/daemon.h"
#include "control/health/forwarding_probe.h"
#include "control/health/probe_path.h"

namespace gwlb::ctl {
namespace {

std::string joined(const std::vector<ConfigError>& errors) {
  std::string all;
  for (const ConfigError& e : errors) all += "\n  " + e.path + ": " + e.message;
  return all;
}

// Every problem with the probe paths of `c` that gwlbd may run: the rules
// on the config alone, then the kernel's routes. Changes nothing.
std::vector<ConfigError> probePathProblems(const Config& c) {
  std::vector<ConfigError> errors = probePathErrors(c);
  if (!errors.empty()) return errors;
  return probeRouteErrors(c);
}

// What the probe-path checks depend on: every probed appliance with its
// path and the MAC the data path pins. A change that leaves it alone (a
// weight, a drain) needs no kernel lookup.
std::vector<std::string> probeTargets(const Config& c) {
  std::vector<std::string> out;
  for (const ApplianceGroupConfig& g : c.server_groups) {
    if (!g.health_check.active()) continue;
    const std::string path = probePathOf(c, g.health_check).describe();
    for (const ApplianceConfig& sc : g.appliances)
      out.push_back(sc.address.str() + " " + path + " " +
                    (sc.mac ? sc.mac->str() : c.node.gateway_mac ? c.node.gateway_mac->str() : "arp"));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

void Daemon::setupProbePaths() {
  // At start the tap is gwlbd's own (it goes when gwlbd does): ready it
  // first, so that the route checks see the exact source the probes use.
  std::vector<ConfigError> errors = probePathErrors(cfg());
  if (errors.empty()) {
    for (const std::string& line : prepareDataPath(cfg(), tap_))
      spdlog::info("health probes: {}", line);
    errors = probeRouteErrors(cfg());
  }
  if (!errors.empty())
    throw std::runtime_error("health probes cannot see what the data sees (" +
                             std::to_string(errors.size()) + " problem" +
                             (errors.size() == 1 ? "" : "s") + "):" + joined(errors));
  for (size_t i = 0; i < cfg().server_groups.size(); ++i) {
    const ApplianceGroupConfig& g = cfg().server_groups[i];
    if (g.health_check.active())
      spdlog::info("health probes of group {}: {}", g.name,
                   probePathOf(cfg(), g.health_check).describe());
  }
}

void Daemon::checkProbePaths(const ValidConfig& valid) {
  const Config& next = valid.get();
  if (probeTargets(next) == probeTargets(cfg())) return;  // checked when they were set
  std::vector<ConfigError> errors;
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

void Daemon::applyProbePaths() {
  try {
    for (const std::string& line : prepareDataPath(cfg(), tap_))
      spdlog::info("health probes: {}", line);
  } catch (const std::runtime_error& e) {
    // The change is in force already; its probes then fail where they
    // cannot reach, and this says why.
    spdlog::error("health probes: {}", e.what());
  }
}

// The probe leaves by the ring the control thread's other frames take (ARP),
// out of the underlay port, built from the published snapshot: the same
// template, cookie and port a data packet of the appliance's group gets.
bool Daemon::sendForwardingProbe(uint32_t ip, uint32_t token) {
  const dp::Snapshot* snap = dp_.snapshot.load(std::memory_order_acquire);
  if (!snap) return false;
  const uint16_t appliance = forwardingServer(*snap, ip);  // IPv6 appliances by their key
  uint8_t frame[kForwardingProbeMaxLen];
  const size_t len = appliance == dp::kNoAppliance ? 0 : buildForwardingProbe(*snap, appliance, token, frame, sizeof frame);
  if (len == 0) return false;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (!m) return false;
  auto* d = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, uint16_t(len)));
  if (!d) {
    rte_pktmbuf_free(m);
    return false;
  }
  std::copy(frame, frame + len, d);
  m->port = snap->underlay_port;
  if (rte_ring_enqueue(control_tx_, m) != 0) {
    rte_pktmbuf_free(m);
    return false;
  }
  return true;
}

}  // namespace gwlb::ctl
