// gwlbd's control side: owns the config, the ports, the worker lcores and the
// Boost.Asio control loop (signals, ARP, flow expiry, snapshot retirement).
// Everything here runs on the main lcore; workers only read what it publishes.
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
#include <sstream>
#include <string>
#include <vector>

#include "control/fleet/announce.h"
#include "control/api/api_server.h"
#include "control/fleet/bird_client.h"
#include "control/config/config.h"
#include "control/engine/api_failure.h"
#include "control/engine/engine.h"
#include "control/daemon/engine_ticker.h"
#include "control/daemon/exception_path.h"
#include "control/fleet/fleet_sync.h"
#include "control/health/health_checker.h"
#include "control/health/passive_monitor.h"
#include "control/health/probe_path.h"
#include "control/engine/lifecycle.h"
#include "control/api/metrics_server.h"
#include "control/daemon/neighbours.h"
#include "control/engine/regions.h"
#include "control/engine/reload_plan.h"
#include "control/daemon/sd_notify.h"
#include "control/engine/snapshot_builder.h"
#include "dataplane/capture.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"

struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_ring;

namespace gwlb::ctl {

// Wall-clock time (Unix seconds) for the API's timestamps.
double unixNow();

// Packets and bytes sent to one appliance and returned from it.
struct ServerTraffic {
  uint64_t sent_packets = 0, sent_bytes = 0, returned_packets = 0, returned_bytes = 0;
  // Packets of flows it handed back (appliance_bypass), sent straight back instead.
  uint64_t bypassed_packets = 0, bypassed_bytes = 0;
};

class Daemon {
 public:
  // EAL must already be initialised. Throws std::runtime_error when ports,
  // lcores or memory cannot be set up (startup only).
  explicit Daemon(Config cfg);
  ~Daemon();

  // Runs until SIGINT/SIGTERM; SIGHUP reloads the config file. Returns the exit code.
  int run();

  // Summed counters of all workers (any thread; approximate while running).
  WorkerCounters totals() const;

  // Flow state sync (null without fleet.sync_listen and fleet.peers). Control thread.
  // Route announcement waits for fleetSync()->warmStartDone().
  const FleetSync* fleetSync() const { return fleet_.get(); }

 private:
  // Ports and workers (control/daemon/daemon_ports.cc).
  void setupPorts();
  void launchWorkers();
  void stopWorkers();
  // An input changed (health, neighbours): the engine builds and publishes.
  void rebuildSnapshot(const char* why);

  // Reloads of the config file (control/daemon/daemon_reload.cc): SIGHUP and
  // the API's `reload` ask; the file is read, checked and its classes
  // compiled on ReloadWorker's thread (control/engine/reload_plan.h); the
  // plan comes back to the control thread, which applies it and tells every
  // requester the outcome. One reload at a time: one asked while another
  // runs waits and is run after it (requests asked meanwhile with the same
  // `force` share that one run: it reads the file after each was asked).
  struct ReloadOutcome {
    std::optional<ApiFailure> refused;  // nothing changed, and why
    uint64_t generation = 0;
    std::vector<std::string> restart_needed;
    std::vector<RuntimeChange> reverted;
    std::vector<std::string> warnings;  // forced losses, then the config's warnings
  };
  using ReloadWaiter = std::function<void(const ReloadOutcome&)>;
  void requestReload(bool force, const char* origin, ReloadWaiter waiter);
  void startReload();
  void finishReload(ReloadPlan plan);
  // The control thread's part of a reload. Throws ApiFailure: nothing changed then.
  ReloadOutcome applyReload(ReloadPlan plan, bool force, const char* origin);
  void sighupReload();
  bool reloading() const { return reload_run_.has_value(); }
  // ARP and neighbor discovery (control/daemon/daemon_neighbours.cc).
  void handlePunted();
  void resolveNeighbours();
  void trackNeighbours();
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
  // Periodic housekeeping (control/daemon/daemon_housekeeping.cc): the stats
  // line, the rates, the watchdog. The counters in one line: at info, or at
  // debug for the periodic line.
  void logStats(const char* why, bool periodic = false) const;
  void sampleRates();
  void registerTelemetry();
  void refreshTelemetry();
  std::string metricsText() const;
  void serverMetrics(std::ostringstream& o) const;
  // Each appliance's traffic and status (control/daemon/daemon_servers.cc).
  void updateServerStatus(const dp::Snapshot& s);
  // Server ids the engine gave back: their traffic counters start from zero
  // for the next appliance to get them.
  void idsFreed(const std::vector<uint16_t>& freed);
  // What workers sent to server id `id`, and returned from it, since the id
  // was last given out (summed over workers; control thread).
  ServerTraffic trafficOf(uint16_t id) const;
  void sentTo(uint16_t id, uint64_t& packets, uint64_t& bytes) const;
  // Every appliance gwlbd knows (configured, then removed ones still carrying
  // flows) with the one state the API, /metrics and telemetry show: one of
  // kServerStates (control/daemon/daemon_metrics.cc). Control thread.
  struct ServerRow {
    std::string group, address, state;
    uint32_t ip = 0;
    uint16_t id = 0;
  };
  std::vector<ServerRow> serverRows() const;
  // The state of configured appliance ip (lifecycle phase first, then status).
  std::string serverState(uint32_t ip) const;
  // Passive detection, flap dampening and slow start (control/daemon/daemon_service.cc):
  // the monitor's turn, each appliance's view for the API, the state
  // `dampened`'s reason and the /metrics families.
  void passiveTick();
  nlohmann::json serviceJson(uint32_t ip) const;
  std::string dampenedReason(uint32_t ip) const;
  void serviceMetrics(std::ostringstream& o) const;
  // The appliance's health tracker when its group has health checks on, else null.
  const HealthTracker* checkedTracker(uint32_t ip) const;

  // Control API (control/daemon/daemon_api.cc; servers and groups in
  // daemon_api_servers.cc, flows and explain in daemon_api_flows.cc). Each
  // returns the reply object.
  nlohmann::json handleApi(const std::string& method, const nlohmann::json& params);
  nlohmann::json apiStatus(const nlohmann::json& p);
  nlohmann::json apiServers(const nlohmann::json& p);
  nlohmann::json apiGroups(const nlohmann::json& p);
  nlohmann::json apiFlows(const nlohmann::json& p);
  nlohmann::json apiExplain(const nlohmann::json& p);
  // Traffic classes (control/daemon/daemon_classes.cc): `classes`, the
  // per-class metric families, and the class `explain` names.
  struct ClassRow {
    size_t index = 0;
    std::string name, action, listener;  // listener: inspect only ("" otherwise)
    ClassCount count;                    // since the class's name took its counter slot
  };
  std::vector<ClassRow> classRows() const;
  // The workers' counts in a class counter slot (summed; any slot below kMaxClasses).
  ClassCount classSlotCounts(uint16_t slot) const;
  nlohmann::json apiClasses(const nlohmann::json& p);
  void classMetrics(std::ostringstream& o) const;
  nlohmann::json classExplainJson(const L4Tuple& t, std::optional<uint16_t> port, uint16_t vlan) const;
  nlohmann::json apiStats(const nlohmann::json& p);
  nlohmann::json apiServerAdd(const nlohmann::json& p);
  nlohmann::json apiServerRemove(const nlohmann::json& p);
  nlohmann::json apiServerSet(const nlohmann::json& p);
  nlohmann::json apiServerDrain(const nlohmann::json& p);
  nlohmann::json apiServerUndrain(const nlohmann::json& p);
  nlohmann::json drainJson(const ServerLifecycle::Entry& e) const;
  // Name of a snapshot group index: a configured group, or the group a
  // removed appliance (address ip) left ("?" when neither).
  std::string groupName(int group, uint32_t ip) const;
  // The name of a snapshot's listener index (dp::ListenerView, ClassTable::listener).
  std::string snapshotListenerName(uint8_t li) const;
  nlohmann::json lifecycleStatsJson() const;
  // `reload`, answered when the reload ends (ApiDeferredMethod).
  ApiDeferral apiReload(const nlohmann::json& p, ApiReply reply);
  nlohmann::json reloadJson(const ReloadOutcome& o) const;
  nlohmann::json apiConfig(const nlohmann::json& p);
  nlohmann::json apiHealth(const nlohmann::json& p);
  nlohmann::json apiDestinations(const nlohmann::json& p);
  nlohmann::json apiFleetSync(const nlohmann::json& p);
  // One destination (listener) with its regions, composites and sources.
  nlohmann::json destinationJson(const RegionTracker::Listener& l) const;
  // GET /destinations and /destinations/NAME on the health endpoint.
  HttpReply healthEndpoint(const std::string& path) const;
  nlohmann::json healthJson(uint32_t ip) const;
  // The fleet (control/daemon/daemon_fleet.cc): route announcement through BIRD.
  void startFleet();
  void stopFleet();
  AnnounceInputs announceInputs() const;
  void updateAnnounce();
  // SIGTERM/SIGINT with fleet.bird: withdraw, stop after the grace period.
  // False when there is nothing to withdraw (stop at once) or already stopping.
  bool beginGracefulStop(int sig);
  nlohmann::json apiFleet(const nlohmann::json& p);
  nlohmann::json apiFleetLeave(const nlohmann::json& p, bool leave);
  void fleetMetrics(std::ostringstream& o) const;
  nlohmann::json portsJson() const;
  // Applies a changed config (validated once, by the caller); the result.
  // `why` names the cause for appliances the change removes. Throws
  // ApiFailure (invalid_config: probe paths; limit_reached): nothing changed.
  nlohmann::json applyConfig(ValidConfig next, const std::string& why);
  // Throws ApiFailure busy while a change waits for its classes
  // (Engine::pending) or a reload runs: the change would undo it, or it this.
  void refuseWhileCompiling(const std::string& what) const;

  // The control core: config, registry, lifecycle, regions, snapshots.
  const Config& cfg() const { return engine_->config(); }
  const ServerLifecycle& lifecycle() const { return engine_->lifecycle(); }
  const RegionTracker& regions() const { return engine_->regions(); }
  const ServerRegistry& registry() const { return engine_->registry(); }
  std::unique_ptr<Engine> engine_;
  rte_mempool* pool_ = nullptr;
  rte_rcu_qsbr* qsbr_ = nullptr;
  std::unique_ptr<dp::FlowTable> flows_;
  dp::Dataplane dp_;
  NeighbourCache neighbours_;  // appliances resolved by ARP
  PortMacs port_macs_;         // each DPDK port's own MAC, by port id
  std::vector<std::unique_ptr<dp::WorkerState>> states_;
  std::vector<std::unique_ptr<dp::WorkerRun>> runs_;
  std::vector<unsigned> worker_lcores_;
  std::atomic<bool> stop_{false};
  uint16_t n_ports_ = 0;
  rte_ring* control_tx_ = nullptr;  // control -> worker 0 -> wire
  std::unique_ptr<ExceptionPath> exception_;  // node.exception_path: one tap per port
  std::vector<NeighbourPin> tap_pins_;  // what gwlbd pinned on the data path's tap
  // dpdk-dumpcap / dpdk-pdump on the data ports (dataplane/capture.h).
  std::unique_ptr<dp::CaptureServer> capture_;
  std::string capture_why_;  // why captures cannot attach, when they cannot
  // control/daemon/daemon_capture.cc
  void startCapture();
  nlohmann::json captureJson() const;
  void detachGoneCaptures();
  nlohmann::json apiCaptureStop(const nlohmann::json& p);
  uint64_t started_ns_ = 0;
  double started_at_ = 0;        // Unix time
  double config_loaded_at_ = 0;  // Unix time
  // The config as applied at the last start or reload (its appliances are
  // the file's): what the running config differs from by the control API's
  // changes (server add, remove, set), which a reload reverts (docs/cli.md
  // "Runtime changes"). Shared with the engine: no copy.
  std::shared_ptr<const ValidConfig> file_cfg_;
  // The reload under way (planned or being applied) and those asked since.
  struct ReloadRun {
    bool force = false;
    const char* origin = "control API";  // the first requester: "SIGHUP" or "control API"
    std::vector<ReloadWaiter> waiters;
  };
  std::optional<ReloadRun> reload_run_;
  std::deque<ReloadRun> reload_queue_;  // at most one per value of `force`

  struct ServerStatus {
    std::string state;  // initializing | active | unresolved | unhealthy | idle
    std::string reason;
    double since = 0;   // Unix time of the last state change
  };
  std::map<uint32_t, ServerStatus> server_status_;
  // Per server id: the workers' traffic counters when the id was reclaimed
  // (a reused id starts from zero for its new appliance).
  std::vector<ServerTraffic> traffic_base_;
  uint64_t last_rx_ = 0, last_tx_ = 0, last_sample_ns_ = 0;
  double rx_pps_ = 0, tx_pps_ = 0;

  boost::asio::io_context io_;
  // After io_: destroyed first, so that no plan is posted to a gone io_.
  ReloadWorker reload_worker_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<HttpServer> health_http_;
  std::unique_ptr<HealthChecker> health_;
  PassiveMonitor passive_;
  std::unique_ptr<FleetSync> fleet_;  // fleet.sync_listen: flow state sync
  // The fleet: BIRD client (fleet.bird), announce state, operator leave, stop.
  std::shared_ptr<BirdClient> bird_;
  AnnounceState announce_;
  bool fleet_left_ = false;
  bool stopping_ = false;
  std::unique_ptr<boost::asio::steady_timer> grace_timer_;
  // systemd: readiness, status and the watchdog (control/daemon/sd_notify.h).
  SdNotifier sd_;
  WorkerProgress progress_;
  bool watchdog_stalled_ = false;
  // control/daemon/daemon_housekeeping.cc
  void feedWatchdog();
  std::string statusLine() const;
};

}  // namespace gwlb::ctl
