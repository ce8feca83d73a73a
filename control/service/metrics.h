// The metrics topic (docs/observability.md): the Prometheus text gwlbd serves
// on metrics.listen (api_metrics.cc) and the read-only DPDK telemetry
// commands /gwlb/... (telemetry.cc), on the same narrow views as the control
// API's handlers (the engine, the health checks read-only, the workers'
// figures, the appliances' read model, the ports' figures), the fleet's
// view and the HTTP listeners, never gwlbd's Daemon. Control thread, except
// the telemetry commands, which DPDK runs on its own thread: they read only
// a mutex-guarded copy that refreshTelemetry (control thread) replaces.
#pragma once

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "control/api/metrics_server.h"
#include "control/service/process_methods.h"
#include "control/service/service.h"

namespace gwlb::ctl {

// Every state an appliance can show, as the API, /metrics and telemetry name
// them (docs/control-api.md "servers"): exactly one applies at a time.
inline constexpr const char* kApplianceStates[] = {"initializing", "active",  "unresolved",
                                                "unhealthy",    "dampened", "idle",
                                                "draining",     "drained",  "removed"};

// What /metrics reads. `service.ports()` gives each port's figures as
// `status` shows them (the NIC's counters and, with node.exception_path,
// its tap's); `service.now()` is the uptime's clock.
struct MetricsView {
  const ServiceContext& service;
  const FleetApiView& fleet;
  // The HTTP listeners whose connections /metrics counts (null: not running).
  std::function<std::vector<const HttpServer*>()> listeners;
};

// The whole /metrics page (Prometheus text exposition, each family's
// samples together).
std::string metricsText(const MetricsView& v);
// The per-appliance families: state, probes, forwarding probes, traffic.
void applianceMetrics(std::ostringstream& o, const ServiceContext& c);

// What the telemetry commands show, copied on the control thread.
struct TelemetryServer {
  std::string address, group, state;
  ApplianceTraffic traffic;
  bool probed = false;  // has a health tracker (health checks on)
  uint32_t consecutive_failures = 0;
  uint64_t probes = 0, probe_sum_us = 0;
};
struct TelemetryClass {
  std::string name, action, listener;
  uint64_t index = 0, packets = 0, bytes = 0;
};
struct TelemetryFigures {
  std::vector<std::pair<std::string, uint64_t>> counters;  // totals, every counter
  std::vector<TelemetryServer> appliances;
  std::vector<TelemetryClass> classes;  // in order
  uint64_t flows = 0, capacity = 0, generation = 0;
};
TelemetryFigures telemetryFigures(const ServiceContext& c);
// Registers /gwlb/stats, drops, servers, server, classes and class with
// DPDK's telemetry (once per process), then refreshes their copy.
void registerTelemetry(const ServiceContext& c);
// Replaces the copy the commands read (every second in gwlbd).
void refreshTelemetry(const ServiceContext& c);

}  // namespace gwlb::ctl
