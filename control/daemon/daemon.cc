#include "control/daemon/daemon.h"
#include "control/service/handlers.h"

#include <rte_ethdev.h>

#include <spdlog/spdlog.h>

#include <boost/asio.hpp>
#include <chrono>
#include <stdexcept>

#include "control/config/config_digest.h"
#include "control/runtime/control_loop.h"
#include "control/daemon/memory_plan.h"
#include "dataplane/eal.h"

namespace gwlb::ctl {

namespace {

static_assert(FleetSync::kRingSize == kSyncRingSize, "control/daemon/memory_plan.h counts the sync ring");
constexpr std::chrono::microseconds kExceptionPollPeriod{1000};

}  // namespace

Daemon::Daemon(Config config) {
  facts_.started_ns = dp::monotonicNs();
  facts_.started_at = facts_.config_loaded_at = unixNow();
  // A failed allocation says what to change (the key and the size needed),
  // not only DPDK's error.
  auto sized = [&](const char* part, auto make) {
    try {
      return make();
    } catch (const std::exception& e) {
      throw std::runtime_error(e.what() + allocationHint(config, part));
    }
  };
  pool_ = sized("mbuf pool", [&] {
    return dp::createMbufPool("gwlbd_pool", config.dataplane.mbufs, mbufDataRoom(config));
  });
  qsbr_ = sized("rings and RCU", [&] { return dp::createQsbr(config.dataplane.workers); });
  flows_ = sized("flow table", [&] {
    return std::make_unique<dp::FlowTable>("gwlbd_flows", config.dataplane.flow_table_size, qsbr_,
                                           int(rte_socket_id()));
  });
  dp_.flows = flows_.get();
  dp_.punt = sized("rings and RCU", [&] { return dp::createRing("gwlbd_punt", kPuntRingSize); });
  control_tx_ = sized("rings and RCU", [&] { return dp::createRing("gwlbd_ctl_tx", kPuntRingSize); });
  // Flow state sync: the workers queue new and moved flows here (multi-producer).
  // Without peers there is nobody to send to or accept from: no sync at all.
  if (config.fleet.configured && !config.fleet.sync_listen.empty() && !config.fleet.peers.empty())
    dp_.sync = sized("rings and RCU",
                     [&] { return dp::createRing("gwlbd_sync", FleetSync::kRingSize, false); });
  housekeeping_ = std::make_unique<Housekeeping>(workers_, *flows_, facts_, sd_);
  Engine::Inputs in;
  in.devices = &port_macs_;
  in.class_counts = [this](uint16_t slot) { return workers_.classSlot(slot); };
  // A large class set compiles for seconds: never on the control thread.
  in.compile_classes_apart = true;
  in.can_follow = [this](const ValidConfig& next) { return probePathsRefusal(next); };
  Engine::Hooks hooks;
  hooks.decided = [](const Decision& d) {
    if (d.kind == Decision::Kind::kRegion) spdlog::warn("regions: {}", d.text);
    else if (d.kind == Decision::Kind::kLifecycle) spdlog::info("appliance {}", d.text);
    else if (d.kind == Decision::Kind::kService && d.text.rfind("group ", 0) == 0)
      spdlog::warn("{}", d.text);  // a group settling after every appliance failed
    else if (d.kind == Decision::Kind::kService)
      spdlog::log(d.text.find(" dampened: ") != std::string::npos ? spdlog::level::warn : spdlog::level::info,
                  "appliance {}", d.text);
    else spdlog::debug("snapshot {}", d.text);
  };
  hooks.built = [this](const dp::Snapshot& s) {
    appliances_->update(s, unixNow());
    size_t unresolved = 0;
    for (auto& sv : s.appliances)
      if (sv.in_use && !sv.mac_known) ++unresolved;
    spdlog::info("snapshot {} published: {} group(s), {} appliance(s), {} awaiting ARP or ND",
                 s.generation, s.groups.size(), s.by_ip.size(), unresolved);
  };
  hooks.config_changed = [this](const Config& c) {
    // The build that follows this hook has the MACs of the new appliances
    // that are known, and none of those gone.
    if (neighbours_) neighbours_->follow(dp::monotonicNs());
    applyProbePaths();
    // The build that follows this hook reads the new appliances' health.
    if (health_)
      for (const HealthReport& r : health_->reconcile(c)) engine_->recordHealth(r);
    // A reload or an API edit: the peers compare the new digests (fleet.md "Config drift").
    if (fleet_) fleet_->setConfigDigest(configDigest(c, flowHashKey()));
  };
  hooks.ids_freed = [this](const std::vector<uint16_t>& freed) { appliances_->idsFreed(freed); };
  engine_ = std::make_unique<Engine>(std::move(config), *flows_, dp_, qsbr_, std::move(in),
                                     std::move(hooks));
  neighbours_ = std::make_unique<ApplianceNeighbours>(
      *engine_, ApplianceNeighbours::Rings{pool_, dp_.punt, control_tx_}, exception_, health_);
  setupService();
  // One slice of a flow-table walk per advance() call: a walk of a big
  // table never holds the control thread for long (docs/architecture.md
  // "Walks in slices").
  engine_->setWalkBudget(1);
  setupPorts();
  setupExceptionPath();
  setupProbePaths();
  Reloader::Hooks reload;
  reload.started = [this] { sd_.notify("RELOADING=1\nSTATUS=reloading " + cfg().source_path + "\n"); };
  reload.ended = [this](const ReloadOutcome& o) {
    sd_.notify("READY=1\nSTATUS=" + statusLine() +
               (o.refused ? " (last reload failed: running config kept)" : "") + "\n");
  };
  reloader_ = std::make_unique<Reloader>(io_, *engine_, facts_, n_ports_, std::move(reload));
  neighbours_->follow(dp::monotonicNs());
  engine_->start(dp::monotonicNs());
  setupFleetSync();
}

// Flow state sync (fleet.sync_listen and fleet.peers): the peers, warm
// start, and this node's view of every appliance.
void Daemon::setupFleetSync() {
  if (dp_.sync) {
    const FleetConfig& f = cfg().fleet;
    FleetSync::Options o;
    o.node_name = f.node_name;
    o.listen = f.sync_listen;
    o.peers = f.peers;
    o.warm_start_timeout_s = f.warm_start_timeout_s;
    o.warm_connect_timeout_ms = f.warm_start_connect_timeout_ms;
    o.warm_idle_timeout_ms = f.warm_start_idle_timeout_ms;
    o.secret = flowHashKey();  // the fleet secret (gwlbd_main set it from the config)
    o.view_incomplete = &dp_.fleet_view_incomplete;  // read by the workers' miss path
    // This node's view of every configured appliance: its health state
    // (unchecked ones count as "disabled": in service) and whether it takes
    // new flows here — healthy, weight > 0 and not draining, as the Maglev
    // builder decides.
    o.health = [this] {
      std::map<uint32_t, std::pair<uint8_t, bool>> view;
      const dp::Snapshot* s = engine_->current();
      if (!s) return view;
      HealthMap hm = health_ ? health_->states() : HealthMap{};
      for (const dp::ApplianceSlot& sv : s->appliances) {
        if (!sv.in_use) continue;
        auto h = hm.find(sv.ip);
        ApplianceHealth ah = h != hm.end() ? h->second : ApplianceHealth(HealthState::kDisabled);
        bool active = sv.phase == dp::AppliancePhase::kActive;
        HealthState st = !active ? HealthState::kDraining
                         : sv.weight == 0 && ah.state != HealthState::kUnhealthy ? HealthState::kUnused
                                                                                 : ah.state;
        view[sv.ip] = {uint8_t(st), active && sv.weight > 0 && receivesNewFlows(ah)};
      }
      return view;
    };
    fleet_ = std::make_unique<FleetSync>(io_, std::move(o), *flows_, dp_.sync,
                                         [this] { return engine_->current(); });
    fleet_->setConfigDigest(configDigest(cfg(), flowHashKey()));
  }
}

std::string Daemon::statusLine() const {
  const dp::Snapshot* s = dp_.snapshot.load();
  return "running: " + std::to_string(cfg().dataplane.workers) + " worker(s), " +
         std::to_string(n_ports_) + " port(s), snapshot " + std::to_string(s ? s->generation : 0) +
         ", config " + cfg().source_path;
}

void Daemon::setupService() {
  appliances_ = std::make_unique<ApplianceView>(*engine_, health_view_, workers_);
  service_.reset(new ServiceContext{*engine_, health_view_, workers_, *appliances_, facts_,
                                    [this] { return portsJson(); }, [this] { return captureJson(capture_view_); },
                                    [this] { return reloader_ && reloader_->running(); }});
  addServiceMethods(methods_, *service_);
  fleet_view_.reset(new FleetApiView{*engine_, bird_, announce_, fleet_, stopping_, fleet_left_,
                                  [this] { updateAnnounce(); }});
  metrics_view_.reset(new MetricsView{*service_, *fleet_view_, [this] {
                                        return std::vector<const HttpServer*>{metrics_.get(), health_http_.get()};
                                      }});
  addProcessMethods(methods_, *fleet_view_, capture_view_);
  methods_.addDeferred("reload", [this](const nlohmann::json& p, ApiReply reply) {
    return reloadMethod(*reloader_, *engine_, p, std::move(reply));
  });
}

Daemon::~Daemon() {
  stopWorkers();
  // No worker reads a snapshot any more: the engine frees them all (the
  // current one too: storing nullptr alone leaked it, found by LeakSanitizer).
  engine_.reset();
}

// The control socket, the metrics and the health endpoint's listeners.
void Daemon::startListeners() {
  api_ = std::make_unique<ApiServer>(
      io_, cfg().control.socket, cfg().control.socket_mode, cfg().control.socket_group,
      [this](const std::string& m, const nlohmann::json& params, const nlohmann::json&) {
        return methods_.call(m, params);
      },
      methods_.deferred());
  spdlog::info("control API on {}", cfg().control.socket);
  if (!cfg().metrics.listen.empty()) {
    metrics_ = std::make_unique<MetricsServer>(io_, cfg().metrics.listen,
                                               [this] { return metricsText(*metrics_view_); });
    spdlog::info("Prometheus metrics on http://{}/metrics", cfg().metrics.listen);
  }
  if (!cfg().health_endpoint.listen.empty()) {
    health_http_ = std::make_unique<HttpServer>(
        io_, cfg().health_endpoint.listen, "health_endpoint.listen", "health_endpoint",
        [this](const std::string& path) { return healthEndpoint(engine_->regions(), path); });
    spdlog::info("health endpoint on http://{}/destinations/NAME", cfg().health_endpoint.listen);
  }
}

// Each signal of `set` to `handle`, on the control loop, until it stops.
void Daemon::onSignals(boost::asio::signal_set& set, std::function<void(int)> handle) {
  set.async_wait([this, &set, handle = std::move(handle)](const boost::system::error_code& ec, int sig) mutable {
    if (ec) return;
    handle(sig);
    onSignals(set, std::move(handle));
  });
}

// Each health change goes straight to the engine, which builds when it
// changes service. A build that threw must not cost the probe handler
// calling it its next schedule (that appliance's checks would stop).
void Daemon::startHealthChecks() {
  health_ = std::make_unique<HealthChecker>(io_, [this](const HealthReport& r) {
    guarded("health", [&] {
      engine_->reportHealth(r, dp::monotonicNs());
      updateAnnounce();  // a destination that now drops withdraws at once
    });
  });
  health_->setForwardingSender([this](uint32_t ip, uint32_t token) { return sendForwardingProbe(ip, token); });
  // The first snapshot was built before any appliance was checked: one more
  // build when their first health changes service (one of weight 0, unused).
  bool changed = false;
  for (const HealthReport& r : health_->reconcile(cfg())) changed |= engine_->recordHealth(r);
  if (changed) engine_->rebuild("health", dp::monotonicNs());
}

int Daemon::run() {
  launchWorkers();
  startCapture();
  boost::asio::io_context& io = io_;
  startListeners();
  registerTelemetry(*service_);
  if (fleet_) fleet_->start();
  startHealthChecks();
  boost::asio::signal_set stop_signals(io, SIGINT, SIGTERM);
  boost::asio::signal_set hup(io, SIGHUP);
  boost::asio::signal_set usr1(io, SIGUSR1);
  // With fleet.bird the first SIGTERM/SIGINT withdraws the routes and stops
  // after fleet.grace_period (the router moves the traffic meanwhile); a
  // second one, or no fleet.bird, stops at once.
  onSignals(stop_signals, [this](int sig) {
    if (beginGracefulStop(sig)) return;
    spdlog::info("signal {}: stopping", sig);
    io_.stop();
  });
  onSignals(hup, [this](int) { guarded("signal", [&] { sighupReload(); }); });
  onSignals(usr1, [this](int) { guarded("signal", [&] { housekeeping_->logStats("stats"); }); });

  using namespace std::chrono_literals;
  // The control core's clock: every 10 ms, punted ARP/ND first, then every
  // engine action due (drain deadlines, failback hold ends, once a second
  // flow expiry, lifecycle counts and sweeps, server-id reclaim).
  EngineTicker fast(io, *engine_, [] { return dp::monotonicNs(); }, 10ms,
                    [this] { neighbours_->handlePunted(dp::monotonicNs()); });
  boost::asio::steady_timer slow(io);
  unsigned ticks = 0;
  std::function<void()> onSlow = [&]() {
    slow.expires_after(1s);
    slow.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      guarded("timer", [&] {
        const uint64_t now = dp::monotonicNs();
        neighbours_->follow(now);  // appliances the lifecycle forgot
        neighbours_->resolve(now);
        updateAnnounce();
        if (capture_) capture_->detachGone();
        housekeeping_->sampleRates(now);
        refreshTelemetry(*service_);
        if (++ticks % 10 == 0) housekeeping_->logStats("stats", true);
      });
      onSlow();
    });
  };
  fast.start();
  onSlow();
  // The exception path has its own, faster clock: BGP keepalives and BFD
  // (and a ping) should not wait for the 10 ms tick each way.
  boost::asio::steady_timer exception_timer(io);
  std::function<void()> onException = [&]() {
    exception_timer.expires_after(kExceptionPollPeriod);
    exception_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      guarded("exception path", [&] { pollExceptionPath(); });
      onException();
    });
  };
  if (exception_) onException();
  // Passive detection reads the workers' per-appliance counters five times
  // a second: a window of a few seconds is judged to within 200 ms.
  boost::asio::steady_timer passive_timer(io);
  std::function<void()> onPassive = [&]() {
    passive_timer.expires_after(200ms);
    passive_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      guarded("passive detection", [&] { passiveTick(); });
      onPassive();
    });
  };
  onPassive();
  neighbours_->resolve(dp::monotonicNs());
  startFleet();
  spdlog::info("gwlbd running: {} worker(s), {} port(s), underlay {} port {}",
               cfg().dataplane.workers, n_ports_, underlayAddresses(cfg().node), cfg().node.underlay_port);
  // systemd (Type=notify): ready now that the ports are up, the first
  // snapshot is published and the workers run; the watchdog is fed only
  // while every worker's loop moves.
  sd_.notify("READY=1\nSTATUS=" + statusLine() + "\n");
  boost::asio::steady_timer watchdog(io);
  std::function<void()> onWatchdog = [&]() {
    watchdog.expires_after(std::chrono::microseconds(std::max<uint64_t>(sd_.watchdogUsec() / 2, 10000)));
    watchdog.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      guarded("watchdog", [&] { housekeeping_->feedWatchdog(); });
      onWatchdog();
    });
  };
  if (sd_.enabled() && sd_.watchdogUsec()) {
    spdlog::info("systemd watchdog: {} ms; fed while every worker makes progress",
                 sd_.watchdogUsec() / 1000);
    onWatchdog();
  }
  // An exception escaping a handler (a session, a probe) is counted and
  // logged; the loop goes on (the timers above re-arm whatever their body did).
  runControlLoop(io);
  stopAll();
  return 0;
}

// After the control loop: the listeners, probes and fleet first, then the
// workers, then the ports (in that order: nothing is left that reads what
// goes next).
void Daemon::stopAll() {
  sd_.notify("STOPPING=1\nSTATUS=stopping\n");
  // What the workers queued since the last sync tick leaves too.
  if (fleet_) fleet_->tick(dp::monotonicNs());
  capture_.reset();  // detaches every capture while the workers still report quiescence
  stopFleet();
  api_.reset();
  metrics_.reset();
  health_http_.reset();
  health_.reset();
  if (fleet_) fleet_->stop();
  stopWorkers();
  neighbours_->handlePunted(dp::monotonicNs());
  closeExceptionPath();
  for (uint16_t port = 0; port < n_ports_; ++port) {
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);  // net_pcap flushes its output file here
  }
  housekeeping_->logStats("final");
}

}  // namespace gwlb::ctl
