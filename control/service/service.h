// The control API's handlers (docs/control-api.md) apart from the process that
// serves them: each method is one entry of a table (name -> handler), and
// each handler gets the narrow views it reads — the engine (the running
// config, the lifecycle, the regions, the published snapshot, the flow
// table), the health checks read-only, the workers' figures, the appliances'
// read model — never gwlbd's Daemon. The daemon builds a ServiceContext from
// what it owns and adds the methods that are about its process alone (the
// fleet's routes, captures). Control thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/counters.h"
#include "control/api/api_server.h"
#include "control/config/valid_config.h"
#include "control/engine/engine.h"
#include "control/health/health_checker.h"
#include "control/health/passive_monitor.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"

namespace gwlb::ctl {

// Wall-clock time (Unix seconds) for the API's timestamps.
double unixNow();

// Packets and bytes sent to one appliance and returned from it.
struct ApplianceTraffic {
  uint64_t sent_packets = 0, sent_bytes = 0, returned_packets = 0, returned_bytes = 0;
  // Packets of flows it handed back (appliance_bypass), sent straight back instead.
  uint64_t bypassed_packets = 0, bypassed_bytes = 0;
};

// The worker lcores' figures as the control thread reads them: summed over
// workers, approximate while they run (workers never reset them). `runs`
// and `lcores` may be empty (no heartbeats to show).
struct WorkerStats {
  const std::vector<std::unique_ptr<dp::WorkerState>>& states;
  const std::vector<std::unique_ptr<dp::WorkerRun>>& runs;
  const std::vector<unsigned>& lcores;

  WorkerCounters totals() const;
  // The counts in a traffic class counter slot (any slot below kMaxClasses).
  ClassCount classSlot(uint16_t slot) const;
  // What went to server id `id` and came back, since the workers started.
  ApplianceTraffic appliance(uint16_t id) const;
};

// The health checks, read-only: the checker (null before gwlbd's loop runs
// and without one) and passive detection's monitor.
struct HealthView {
  const std::unique_ptr<HealthChecker>& checker;
  const PassiveMonitor& passive;

  HealthMap states() const { return checker ? checker->states() : HealthMap{}; }
  const HealthTracker* tracker(uint32_t ip) const { return checker ? checker->tracker(ip) : nullptr; }
  // The tracker when the appliance's group has health checks on, else null.
  const HealthTracker* checkedTracker(uint32_t ip) const;
};

// Facts of the process the `status` and `config` methods report.
struct ProcessFacts {
  uint64_t started_ns = 0;
  double started_at = 0;        // Unix time
  double config_loaded_at = 0;  // Unix time
  double rx_pps = 0, tx_pps = 0;
};

class ApplianceView;

// What a handler may reach. The process's parts it does not own are behind
// functions: the ports' figures and the capture server's (rte_ethdev and the
// exception path's taps belong to the daemon), and whether a reload runs.
// (The probe paths a config change must keep are the engine's input:
// EngineInputs::can_follow.)
struct ServiceContext {
  Engine& engine;
  HealthView health;
  WorkerStats workers;
  ApplianceView& appliances;
  const ProcessFacts& facts;
  std::function<nlohmann::json()> ports;    // `status`, `stats`: each port's figures
  std::function<nlohmann::json()> capture;  // `status`: the capture server
  std::function<bool()> reloading;          // a reload reads, checks or applies its file
  // The monotonic clock the changes are decided at (null: dp::monotonicNs;
  // tests: a fixed one, as gwlb-replay's capture time).
  std::function<uint64_t()> clock;
  uint64_t now() const { return clock ? clock() : dp::monotonicNs(); }
};

// One method of the control API: its reply's `result`, or ApiFailure.
using ServiceHandler = std::function<nlohmann::json(const nlohmann::json& params)>;

// The methods by name. Each answers on the control thread.
class ServiceTable {
 public:
  void add(const std::string& method, ServiceHandler h);
  // The reply object of `method`: {ok, result} or the error reply.
  nlohmann::json call(const std::string& method, const nlohmann::json& params) const;
  // Every method's name, in the order added (and the deferred `reload`).
  std::vector<std::string> names() const { return order_; }
  // A method answered apart (`reload`: ApiDeferredMethod): listed, and
  // served by the ApiServer through deferred(), never called here.
  void addDeferred(const std::string& method,
                   std::function<ApiDeferral(const nlohmann::json& params, ApiReply reply)> start);
  const std::vector<ApiDeferredMethod>& deferred() const { return deferred_; }

 private:
  std::map<std::string, ServiceHandler> handlers_;
  std::vector<ApiDeferredMethod> deferred_;
  std::vector<std::string> order_;
};

// The methods about appliances, groups, flows, classes, health and the
// config (docs/control-api.md), each on `c`'s views. `c` must outlive the table.
void addServiceMethods(ServiceTable& t, ServiceContext& c);

}  // namespace gwlb::ctl
