// gwlbd's process as wiring: builds the engine, the ports, the worker lcores,
// the exception path, the appliances' neighbours, capture, the health checks,
// the fleet and the control API's views, and runs the Boost.Asio control loop
// (signals, the timers that drive them). It decides nothing itself: the engine
// does (control/engine/), the handlers render (control/service/). Everything
// here runs on the main lcore; workers only read what the engine publishes.
#pragma once

#include <atomic>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/fleet/announce.h"
#include "control/api/api_server.h"
#include "control/fleet/bird_client.h"
#include "control/config/config.h"
#include "control/api/api_failure.h"
#include "control/engine/refusal.h"
#include "control/engine/engine.h"
#include "control/daemon/appliance_neighbours.h"
#include "control/daemon/engine_ticker.h"
#include "control/daemon/exception_path.h"
#include "control/daemon/housekeeping.h"
#include "control/fleet/fleet_sync.h"
#include "control/health/health_checker.h"
#include "control/health/passive_monitor.h"
#include "control/health/probe_path.h"
#include "control/engine/lifecycle.h"
#include "control/api/metrics_server.h"
#include "control/engine/region_failover.h"
#include "control/engine/reload_plan.h"
#include "control/daemon/sd_notify.h"
#include "control/engine/snapshot_builder.h"
#include "control/service/appliance_view.h"
#include "control/service/metrics.h"
#include "control/service/process_methods.h"
#include "control/service/reloader.h"
#include "control/service/service.h"
#include "dataplane/capture.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"

struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_ring;

namespace gwlb::ctl {

class Daemon {
 public:
  // EAL must already be initialised. Throws std::runtime_error when ports,
  // lcores or memory cannot be set up (startup only).
  explicit Daemon(Config cfg);
  ~Daemon();

  // Runs until SIGINT/SIGTERM; SIGHUP reloads the config file. Returns the exit code.
  int run();

  // Summed counters of all workers (any thread; approximate while running).
  WorkerCounters totals() const { return workers_.totals(); }

  // Flow state sync (null without fleet.sync_listen and fleet.peers). Control thread.
  // Route announcement waits for fleetSync()->warmStartDone().
  const FleetSync* fleetSync() const { return fleet_.get(); }

 private:
  // Parts of run() (control/daemon/daemon.cc).
  void startListeners();
  void startHealthChecks();
  void onSignals(boost::asio::signal_set& set, std::function<void(int)> handle);
  void stopAll();
  // Ports and workers (control/daemon/daemon_ports.cc).
  void setupPorts();
  void launchWorkers();
  void stopWorkers();
  // SIGHUP: the reload (control/service/reloader.h), its refusal logged
  // (control/daemon/daemon_reload.cc), and the engine's can_follow input.
  void sighupReload();
  std::optional<Refusal> probePathsRefusal(const ValidConfig& next);
  // The kernel exception path (control/daemon/exception_path.h), when configured
  // (control/daemon/daemon_exception_path.cc).
  void setupExceptionPath();
  void pollExceptionPath();
  void closeExceptionPath();
  // Health probes' paths (daemon_probes.cc): readies the data path and checks
  // every probed appliance's route; throws std::runtime_error (startup) or
  // ApiFailure invalid_config (a config change) when a probe has no path.
  void setupProbePaths();
  void checkProbePaths(const ValidConfig& next);  // changes nothing in the kernel
  // After a config change is in force: the tap's pins follow it.
  void applyProbePaths();
  // Forwarding checks: queues the probe with `token` for the appliance at `ip`
  // on control_tx (worker 0 sends it); false when it cannot be built now.
  bool sendForwardingProbe(uint32_t ip, uint32_t token);
  // Passive detection (control/daemon/daemon_service.cc): the monitor's turn.
  void passiveTick();

  // The control API and the metrics (control/service/): the views their
  // handlers read and the method table.
  void setupService();
  // Flow state sync, when configured (control/daemon/daemon.cc).
  void setupFleetSync();
  // The fleet (control/daemon/daemon_fleet.cc): route announcement through BIRD.
  void startFleet();
  void stopFleet();
  AnnounceInputs announceInputs() const;
  void updateAnnounce();
  // SIGTERM/SIGINT with fleet.bird: withdraw, stop after the grace period.
  // False when there is nothing to withdraw (stop at once) or already stopping.
  bool beginGracefulStop(int sig);
  // Each DPDK port's figures for `status`, `stats` and /metrics (daemon_ports.cc).
  nlohmann::json portsJson() const;

  // The control core: config, registry, lifecycle, regions, snapshots.
  const Config& cfg() const { return engine_->config(); }
  std::unique_ptr<Engine> engine_;
  rte_mempool* pool_ = nullptr;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<dp::FlowTable> flows_;
  dp::Dataplane dp_;
  // ARP and neighbor discovery (control/daemon/appliance_neighbours.h).
  std::unique_ptr<ApplianceNeighbours> neighbours_;
  PortMacs port_macs_;         // each DPDK port's own MAC, by port id
  std::vector<std::unique_ptr<dp::WorkerState>> states_;
  std::vector<std::unique_ptr<dp::WorkerRun>> runs_;
  std::vector<unsigned> worker_lcores_;
  std::atomic<bool> stop_{false};
  uint16_t n_ports_ = 0;
  rte_ring* control_tx_ = nullptr;  // control -> worker 0 -> wire
  std::unique_ptr<ExceptionPath> exception_;  // node.exception_path: one tap per port
  TapState tap_;  // what gwlbd set on the data path's tap (pins, addresses)
  // dpdk-dumpcap / dpdk-pdump on the data ports (dataplane/capture.h).
  std::unique_ptr<dp::CaptureServer> capture_;
  std::string capture_why_;  // why captures cannot attach, when they cannot
  // control/daemon/daemon_capture.cc
  void startCapture();
  // Start time, reload time, rates (control/service/service.h).
  ProcessFacts facts_;

  boost::asio::io_context io_;
  // After io_: destroyed first, so that no plan is posted to a gone io_.
  std::unique_ptr<Reloader> reloader_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<HttpServer> health_http_;
  std::unique_ptr<HealthChecker> health_;
  PassiveMonitor passive_;
  // The handlers' views (control/service/service.h): after what they view.
  WorkerStats workers_{states_, runs_, worker_lcores_};
  HealthView health_view_{health_, passive_};
  std::unique_ptr<ApplianceView> appliances_;
  std::unique_ptr<ServiceContext> service_;
  std::unique_ptr<MetricsView> metrics_view_;
  std::unique_ptr<FleetSync> fleet_;  // fleet.sync_listen: flow state sync
  // The fleet: BIRD client (fleet.bird), announce state, operator leave, stop.
  std::shared_ptr<BirdClient> bird_;
  AnnounceState announce_;
  bool fleet_left_ = false;
  bool stopping_ = false;
  std::unique_ptr<FleetApiView> fleet_view_;
  CaptureView capture_view_{capture_, capture_why_};
  ServiceTable methods_;
  std::unique_ptr<boost::asio::steady_timer> grace_timer_;
  // systemd: readiness, status and the watchdog (control/daemon/sd_notify.h).
  SdNotifier sd_;
  // The rates, the stats line, the watchdog's feed (control/daemon/housekeeping.h).
  std::unique_ptr<Housekeeping> housekeeping_;
  // systemd's STATUS= line.
  std::string statusLine() const;
};

}  // namespace gwlb::ctl
