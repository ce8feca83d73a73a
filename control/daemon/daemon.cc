#include "control/daemon/daemon.h"

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <filesystem>
#include <spdlog/spdlog.h>

#include <boost/asio.hpp>
#include <chrono>
#include <cstring>
#include <set>
#include <stdexcept>

#include "common/arp.h"
#include "control/api/api_params.h"
#include "control/config/config_digest.h"
#include "control/runtime/control_loop.h"
#include "control/daemon/memory_plan.h"
#include "dataplane/eal.h"

namespace gwlb::ctl {

double unixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {


// A Toeplitz key made of one repeated 16-bit word hashes (a, b) and (b, a) alike,
// so both directions of a flow land on the same RX queue where the NIC uses it.
// Fragment types hash on addresses only, which keeps every fragment of a
// datagram on one queue, in order (the pipeline needs the first one first).
constexpr uint8_t kSymmetricRssKey[40] = {
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a};

static_assert(FleetSync::kRingSize == kSyncRingSize, "control/daemon/memory_plan.h counts the sync ring");
constexpr std::chrono::microseconds kExceptionPollPeriod{1000};

std::string portName(uint16_t port) {
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(port, name);
  return name;
}

}  // namespace

Daemon::Daemon(Config config) {
  started_ns_ = dp::monotonicNs();
  started_at_ = config_loaded_at_ = unixNow();
  file_cfg_ = config;
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
  Engine::Inputs in;
  in.health = [this] { return health_ ? health_->states() : HealthMap{}; };
  in.neighbours = [this] { return neighbours_.macs(); };
  in.devices = &port_macs_;
  Engine::Hooks hooks;
  hooks.decided = [](const Decision& d) {
    if (d.kind == Decision::Kind::kRegion) spdlog::warn("regions: {}", d.text);
    else if (d.kind == Decision::Kind::kLifecycle) spdlog::info("appliance {}", d.text);
    else spdlog::debug("snapshot {}", d.text);
  };
  hooks.before_build = [this] { trackNeighbours(); };
  hooks.built = [this](const dp::Snapshot& s) {
    updateServerStatus(s);
    size_t unresolved = 0;
    for (auto& sv : s.servers)
      if (sv.in_use && !sv.mac_known) ++unresolved;
    spdlog::info("snapshot {} published: {} group(s), {} appliance(s), {} awaiting ARP",
                 s.generation, s.groups.size(), s.by_ip.size(), unresolved);
  };
  hooks.config_changed = [this](const Config& c) {
    if (health_) health_->reconcile(c);
    // A reload or an API edit: the peers compare the new digests (fleet.md "Config drift").
    if (fleet_) fleet_->setConfigDigest(configDigest(c, flowHashKey()));
  };
  hooks.ids_freed = [this](const std::vector<uint16_t>& freed) { idsFreed(freed); };
  engine_ = std::make_unique<Engine>(std::move(config), *flows_, dp_, qsbr_, std::move(in),
                                     std::move(hooks));
  setupPorts();
  setupExceptionPath();
  setupProbePaths();
  engine_->start(dp::monotonicNs());
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
    // This node's view of every configured appliance: its health state
    // (unchecked ones count as "disabled": in service) and whether it takes
    // new flows here — healthy, weight > 0 and not draining, as the Maglev
    // builder decides.
    o.health = [this] {
      std::map<uint32_t, std::pair<uint8_t, bool>> view;
      const dp::Snapshot* s = engine_->current();
      if (!s) return view;
      HealthMap hm = health_ ? health_->states() : HealthMap{};
      for (const dp::ServerView& sv : s->servers) {
        if (!sv.in_use) continue;
        auto h = hm.find(sv.ip);
        ApplianceHealth ah = h != hm.end() ? h->second : ApplianceHealth(HealthState::kDisabled);
        bool active = sv.phase == dp::ServerPhase::kActive;
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

Daemon::~Daemon() {
  stopWorkers();
  // No worker reads a snapshot any more: the engine frees them all (the
  // current one too: storing nullptr alone leaked it, found by LeakSanitizer).
  engine_.reset();
}

void Daemon::setupPorts() {
  n_ports_ = rte_eth_dev_count_avail();
  // A --vdev whose driver refused it leaves no port but lets the EAL start:
  // name it rather than run with the ports shifted (or report none at all).
  std::vector<std::string> unstarted = dp::unstartedVdevs();
  if (!unstarted.empty()) {
    std::string list;
    for (const std::string& d : unstarted) list += (list.empty() ? "" : ", ") + d;
    throw std::runtime_error("device" + std::string(unstarted.size() > 1 ? "s" : "") +
                             " given with --vdev did not start: " + list +
                             " (the EAL's log says why)");
  }
  if (n_ports_ == 0)
    throw std::runtime_error("no DPDK ports: give devices with --vdev (e.g. net_pcap0,...) or PCI");
  if (cfg().node.underlay_port >= n_ports_)
    throw std::runtime_error("node.underlay_port " + std::to_string(cfg().node.underlay_port) +
                             " does not exist: " + std::to_string(n_ports_) + " port(s)");
  unsigned workers = cfg().dataplane.workers;
  if (rte_lcore_count() < workers + 1)
    throw std::runtime_error("dataplane.workers = " + std::to_string(workers) + " needs " +
                             std::to_string(workers + 1) + " lcores (main + workers); EAL has " +
                             std::to_string(rte_lcore_count()) + " (use -l or --lcores)");
  for (uint16_t port = 0; port < n_ports_; ++port) {
    rte_eth_dev_info info;
    if (rte_eth_dev_info_get(port, &info) != 0)
      throw std::runtime_error("port " + std::to_string(port) + ": cannot read device info");
    uint16_t nrx = uint16_t(std::min<unsigned>(workers, info.max_rx_queues));
    uint16_t ntx = uint16_t(workers);
    if (ntx > info.max_tx_queues)
      throw std::runtime_error("port " + std::to_string(port) + " (" + portName(port) +
                               ") has " + std::to_string(info.max_tx_queues) +
                               " TX queue(s); need one per worker: " + std::to_string(ntx));
    rte_eth_conf conf{};
    // The Geneve packets' outer checksums: by the NIC when it can (the
    // workers then skip summing the payload), else in software.
    constexpr uint64_t kCsum = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    if (port == cfg().node.underlay_port) {
      bool offered = (info.tx_offload_capa & kCsum) == kCsum;
      dp_.underlay_csum_offload = offered && cfg().dataplane.checksum_offload;
      if (dp_.underlay_csum_offload) conf.txmode.offloads |= kCsum;
      spdlog::info("port {} ({}): Geneve outer checksums {}", port, portName(port),
                   dp_.underlay_csum_offload ? "by the NIC (IPv4 and UDP TX checksum offload)"
                   : offered ? "in software (dataplane.checksum_offload: false)"
                             : "in software (the device offers no IPv4 and UDP TX checksum offload)");
    }
    if (nrx > 1) {
      conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
      conf.rx_adv_conf.rss_conf.rss_key = const_cast<uint8_t*>(kSymmetricRssKey);
      conf.rx_adv_conf.rss_conf.rss_key_len = sizeof kSymmetricRssKey;
      conf.rx_adv_conf.rss_conf.rss_hf =
          (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_FRAG_IPV4 |
           RTE_ETH_RSS_FRAG_IPV6) &
          info.flow_type_rss_offloads;
      if (info.hash_key_size && info.hash_key_size != sizeof kSymmetricRssKey)
        conf.rx_adv_conf.rss_conf.rss_key = nullptr;  // device default key
    }
    int rc = rte_eth_dev_configure(port, nrx, ntx, &conf);
    if (rc != 0)
      throw std::runtime_error("port " + std::to_string(port) + ": configure failed (" +
                               std::to_string(rc) + ")");
    // Every port takes frames of the underlay MTU: Geneve from the appliances on
    // the underlay port, and on the router side packets the pipeline either
    // wraps or answers with ICMP "too big" (a NIC left at 1500 would drop them
    // silently, and path MTU discovery with them).
    spdlog::info("{}", dp::setPortMtu(port, cfg().node.underlay_mtu, "node.underlay_mtu"));
    uint16_t nb_rxd = uint16_t(cfg().dataplane.rx_queue_size);
    uint16_t nb_txd = uint16_t(cfg().dataplane.tx_queue_size);
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
    int socket = rte_eth_dev_socket_id(port);
    if (socket < 0) socket = int(rte_socket_id());
    // What to change when a queue or the port cannot be set up: the queue
    // sizes the device takes, and the mbufs its RX rings hold from the start.
    auto queueHint = [&](int rc) {
      return " (" + std::string(rte_strerror(-rc)) + "; the device takes " +
             std::to_string(info.rx_desc_lim.nb_min) + ".." + std::to_string(info.rx_desc_lim.nb_max) +
             " RX and " + std::to_string(info.tx_desc_lim.nb_min) + ".." +
             std::to_string(info.tx_desc_lim.nb_max) +
             " TX descriptors: dataplane.rx_queue_size / tx_queue_size; its " + std::to_string(nrx) +
             " RX queue(s) of " + std::to_string(nb_rxd) + " hold " + std::to_string(unsigned(nrx) * nb_rxd) +
             " of the " + std::to_string(cfg().dataplane.mbufs) + " dataplane.mbufs from the start)";
    };
    for (uint16_t q = 0; q < nrx; ++q)
      if (int e = rte_eth_rx_queue_setup(port, q, nb_rxd, unsigned(socket), nullptr, pool_); e != 0)
        throw std::runtime_error("port " + std::to_string(port) + " (" + portName(port) +
                                 "): RX queue setup failed" + queueHint(e));
    for (uint16_t q = 0; q < ntx; ++q)
      if (int e = rte_eth_tx_queue_setup(port, q, nb_txd, unsigned(socket), nullptr); e != 0)
        throw std::runtime_error("port " + std::to_string(port) + " (" + portName(port) +
                                 "): TX queue setup failed" + queueHint(e));
    if (int e = rte_eth_dev_start(port); e != 0)
      throw std::runtime_error("port " + std::to_string(port) + " (" + portName(port) +
                               "): start failed" + queueHint(e));
    // Promiscuous: the port's own MAC may be a configured one the device
    // does not filter for (node.underlay_mac, node.ports[].mac); the pipeline
    // takes in only frames to that MAC (and the ARP/ND it punts) and counts
    // the rest (drop_not_our_mac, drop_l2_broadcast, drop_l2_multicast).
    rte_eth_promiscuous_enable(port);  // best effort: virtual devices may refuse
    rte_ether_addr addr{};
    MacAddr mac;
    if (rte_eth_macaddr_get(port, &addr) == 0) std::memcpy(mac.b.data(), addr.addr_bytes, 6);
    port_macs_.push_back(mac);
    spdlog::info("port {} ({}): {} RX queue(s), {} TX queue(s), {}/{} descriptors, device MAC {}",
                 port, portName(port), nrx, ntx, nb_rxd, nb_txd, mac.str());
  }
  for (size_t i = 0; i < cfg().node.ports.size(); ++i)
    if (cfg().node.ports[i].id >= n_ports_)
      throw std::runtime_error("node.ports[" + std::to_string(i) + "].id " +
                               std::to_string(cfg().node.ports[i].id) + " does not exist: " +
                               std::to_string(n_ports_) + " port(s)");
  std::vector<dp::PortView> views = resolvePorts(cfg(), &port_macs_);
  for (size_t port = 0; port < views.size(); ++port)
    spdlog::info("port {}: role {}, takes in frames to {}", port, toString(views[port].role),
                 views[port].mac.str());
}

void Daemon::setupExceptionPath() {
  const ExceptionPathConfig& ep = cfg().node.exception_path;
  if (!ep.enabled) return;
  std::vector<MacAddr> macs;
  for (const dp::PortView& v : resolvePorts(cfg(), &port_macs_)) macs.push_back(v.mac);
  macs.resize(n_ports_);
  exception_ = std::make_unique<ExceptionPath>(ep.name_prefix, macs, cfg().node.underlay_mtu, pool_);
  try {
    dp_.exception = dp::createRing("gwlbd_exception", kExceptionRingSize);
  } catch (const std::exception& e) {
    throw std::runtime_error(e.what() + allocationHint(cfg(), "rings and RCU"));
  }
}

void Daemon::pollExceptionPath() {
  if (!exception_) return;
  exception_->drainWorkers(dp_.exception);
  exception_->pollKernel(control_tx_);
}

void Daemon::closeExceptionPath() {
  if (!exception_) return;
  // The workers have stopped: what they queued last is freed with the taps.
  void* obj;
  while (rte_ring_dequeue(dp_.exception, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
  exception_.reset();
}

void Daemon::launchWorkers() {
  unsigned workers = cfg().dataplane.workers;
  unsigned lcore = rte_get_next_lcore(-1, 1, 0);
  for (unsigned i = 0; i < workers; ++i, lcore = rte_get_next_lcore(lcore, 1, 0)) {
    auto st = std::make_unique<dp::WorkerState>();
    st->id = uint16_t(i);
    auto run = std::make_unique<dp::WorkerRun>();
    run->dp = &dp_;
    run->qsbr = qsbr_;
    run->state = st.get();
    run->stop = &stop_;
    run->cfg.qsbr_id = i;
    run->cfg.tx_queue = uint16_t(i);
    run->cfg.burst = uint16_t(cfg().dataplane.burst);
    run->cfg.n_ports = n_ports_;
    run->cfg.idle_sleep_us = cfg().node.idle_sleep_us;
    if (i == 0) run->control_tx = control_tx_;
    for (uint16_t port = 0; port < n_ports_; ++port) {
      rte_eth_dev_info info;
      rte_eth_dev_info_get(port, &info);
      uint16_t nrx = uint16_t(std::min<unsigned>(workers, info.max_rx_queues));
      for (uint16_t q = 0; q < nrx; ++q)
        if (q % workers == i) run->cfg.rx.push_back({port, q});
    }
    spdlog::info("worker {} on lcore {}: {} RX queue(s){}", i, lcore, run->cfg.rx.size(),
                 run->cfg.idle_sleep_us
                     ? " (sleeps " + std::to_string(run->cfg.idle_sleep_us) + " us when idle)"
                     : std::string());
    if (rte_eal_remote_launch(dp::workerLoop, run.get(), lcore) != 0)
      throw std::runtime_error("cannot launch worker on lcore " + std::to_string(lcore));
    worker_lcores_.push_back(lcore);
    states_.push_back(std::move(st));
    runs_.push_back(std::move(run));
  }
}

void Daemon::stopWorkers() {
  if (worker_lcores_.empty()) return;
  stop_.store(true);
  for (unsigned lc : worker_lcores_) rte_eal_wait_lcore(lc);
  worker_lcores_.clear();
}

void Daemon::rebuildSnapshot(const char* why) { engine_->rebuild(why, dp::monotonicNs()); }

void Daemon::idsFreed(const std::vector<uint16_t>& freed) {
  if (traffic_base_.size() < dp::kMaxServerIds) traffic_base_.resize(dp::kMaxServerIds);
  for (uint16_t id : freed) {
    traffic_base_[id] = {};
    ServerTraffic& b = traffic_base_[id];
    for (const auto& st : states_) {
      b.sent_packets += st->sentPackets(id);
      b.sent_bytes += st->sentBytes(id);
      b.returned_packets += st->returnedPackets(id);
      b.returned_bytes += st->returnedBytes(id);
    }
  }
  spdlog::debug("server ids: {} reclaimed ({} held, {} free)", freed.size(), registry().held(),
                registry().available());
}

ServerTraffic Daemon::trafficOf(uint16_t id) const {
  ServerTraffic t;
  if (id >= dp::kMaxServerIds) return t;
  for (const auto& st : states_) {
    t.sent_packets += st->sentPackets(id);
    t.sent_bytes += st->sentBytes(id);
    t.returned_packets += st->returnedPackets(id);
    t.returned_bytes += st->returnedBytes(id);
  }
  if (id < traffic_base_.size()) {
    const ServerTraffic& b = traffic_base_[id];
    t.sent_packets -= b.sent_packets, t.sent_bytes -= b.sent_bytes;
    t.returned_packets -= b.returned_packets, t.returned_bytes -= b.returned_bytes;
  }
  return t;
}

void Daemon::sentTo(uint16_t id, uint64_t& packets, uint64_t& bytes) const {
  ServerTraffic t = trafficOf(id);
  packets = t.sent_packets;
  bytes = t.sent_bytes;
}

void Daemon::updateServerStatus(const dp::Snapshot& s) {
  double now = unixNow();
  std::map<uint32_t, ServerStatus> next;
  for (const auto& sv : s.servers) {
    if (!sv.in_use) continue;
    ServerStatus st;
    const HealthTracker* ht = health_ ? health_->tracker(sv.ip) : nullptr;
    if (sv.weight == 0) {
      st = {"idle", "weight 0: keeps its flows, receives no new ones", now};
    } else if (ht && ht->state() == HealthState::kUnhealthy) {
      std::string last;
      for (auto it = ht->history().rbegin(); it != ht->history().rend(); ++it)
        if (!it->is_transition) {
          last = it->reason;
          break;
        }
      st = {"unhealthy", "failed health checks (last: " + last + "): no new flows", now};
    } else if (ht && ht->state() == HealthState::kInitializing) {
      st = {"initializing", ht->provisional()
                                ? "health checks started, no verdict yet: serves new flows until "
                                  "its first failed check (group starting)"
                                : "health checks started, no verdict yet: no new flows",
            now};
    } else if (!sv.mac_known) {
      st = {"unresolved", "no MAC address yet: ARP pending on the underlay", now};
    } else {
      st = {"active", "in the Maglev table", now};
    }
    auto it = server_status_.find(sv.ip);
    if (it != server_status_.end() && it->second.state == st.state) st.since = it->second.since;
    else if (it != server_status_.end())
      spdlog::info("appliance {}: {} -> {} ({})", IpAddr::v4(sv.ip).str(), it->second.state,
                   st.state, st.reason);
    next[sv.ip] = st;
  }
  server_status_ = std::move(next);
}

void Daemon::sampleRates() {
  WorkerCounters t = totals();
  uint64_t now = dp::monotonicNs();
  uint64_t rx = t.get(Counter::rx_packets);
  uint64_t tx = t.get(Counter::encapsulated) + t.get(Counter::returned) + t.get(Counter::icmp_sent);
  if (last_sample_ns_) {
    double dt = double(now - last_sample_ns_) / 1e9;
    rx_pps_ = double(rx - last_rx_) / dt;
    tx_pps_ = double(tx - last_tx_) / dt;
  }
  last_rx_ = rx;
  last_tx_ = tx;
  last_sample_ns_ = now;
}

void Daemon::feedWatchdog() {
  std::vector<uint64_t> loops;
  for (const auto& r : runs_) loops.push_back(r->heartbeat.loops.load(std::memory_order_relaxed));
  if (progress_.advanced(loops)) {
    if (watchdog_stalled_) spdlog::warn("systemd watchdog: every worker makes progress again");
    watchdog_stalled_ = false;
    sd_.notify("WATCHDOG=1\n");
    return;
  }
  if (!watchdog_stalled_)
    spdlog::error("systemd watchdog: a worker made no progress in {} ms (loop counters {}): "
                  "not feeding the watchdog",
                  sd_.watchdogUsec() / 2000, nlohmann::json(loops).dump());
  watchdog_stalled_ = true;
}

std::string Daemon::statusLine() const {
  const dp::Snapshot* s = dp_.snapshot.load();
  return "running: " + std::to_string(cfg().dataplane.workers) + " worker(s), " +
         std::to_string(n_ports_) + " port(s), snapshot " + std::to_string(s ? s->generation : 0) +
         ", config " + cfg().source_path;
}

void Daemon::reload() {
  // SIGHUP and the API's `reload` share one path; a bad file keeps the running config.
  sd_.notify("RELOADING=1\nSTATUS=reloading " + cfg().source_path + "\n");
  reload_origin_ = "SIGHUP";
  nlohmann::json r = handleApi("reload", nlohmann::json::object());
  reload_origin_ = "control API";
  sd_.notify("READY=1\nSTATUS=" + statusLine() +
             (r["ok"].get<bool>() ? "" : " (last reload failed: running config kept)") + "\n");
  // apiReload() logged the outcome (one line, and what changed).
  if (!r["ok"].get<bool>() && r["error"]["code"] != "invalid_config")
    spdlog::error("reload of {} refused; keeping the running config: {}", cfg().source_path,
                  r["error"]["message"].get<std::string>());
}

WorkerCounters Daemon::totals() const {
  WorkerCounters t;
  for (const auto& s : states_)
    for (size_t k = 0; k < kNumCounters; ++k) t.v[k] += s->counters.get(Counter(k));
  return t;
}

void Daemon::logStats(const char* why, bool periodic) const {
  WorkerCounters t = totals();
  std::string line;
  for (size_t k = 0; k < kNumCounters; ++k)
    if (t.v[k]) line += std::string(" ") + kCounterInfo[k].name + "=" + std::to_string(t.v[k]);
  // The line every 10 s is routine (debug); SIGUSR1's and the final one
  // were asked for (info).
  spdlog::log(periodic ? spdlog::level::debug : spdlog::level::info, "{}: flows={}{}", why,
              flows_->count(), line.empty() ? " (no packets)" : line);
}

// Packet capture: dpdk-dumpcap / dpdk-pdump attach as secondary processes,
// which needs the EAL's shared memory (hugepages, no --in-memory or
// --no-shconf). Captures may cover every queue of the data ports.
void Daemon::startCapture() {
  std::vector<uint16_t> ports;
  for (uint16_t p = 0; p < n_ports_; ++p) ports.push_back(p);
  try {
    capture_ = std::make_unique<dp::CaptureServer>(
        qsbr_, std::move(ports), [](int level, const std::string& line) {
          spdlog::log(level ? spdlog::level::warn : spdlog::level::info, "{}", line);
        });
  } catch (const std::exception& e) {
    capture_why_ = e.what();
    spdlog::warn("{}", capture_why_);
    return;
  }
  if (!capture_->listen(capture_why_)) {
    capture_.reset();
    spdlog::info("packet capture: off: {}", capture_why_);
  } else if (!rte_eal_has_hugepages()) {
    capture_why_ = "the EAL runs without hugepages (--no-huge): no secondary process can attach";
    spdlog::info("packet capture: off: {}", capture_why_);
  } else {
    spdlog::info("packet capture: dpdk-dumpcap can attach (--file-prefix {})",
                 std::filesystem::path(rte_eal_get_runtime_dir()).filename().string());
  }
}

int Daemon::run() {
  launchWorkers();
  startCapture();
  boost::asio::io_context& io = io_;
  api_ = std::make_unique<ApiServer>(
      io_, cfg().control.socket, cfg().control.socket_mode, cfg().control.socket_group,
      [this](const std::string& m, const nlohmann::json& params, const nlohmann::json&) {
        return handleApi(m, params);
      });
  spdlog::info("control API on {}", cfg().control.socket);
  if (!cfg().metrics.listen.empty()) {
    metrics_ = std::make_unique<MetricsServer>(io_, cfg().metrics.listen,
                                               [this] { return metricsText(); });
    spdlog::info("Prometheus metrics on http://{}/metrics", cfg().metrics.listen);
  }
  if (!cfg().health_endpoint.listen.empty()) {
    health_http_ = std::make_unique<HttpServer>(
        io_, cfg().health_endpoint.listen, "health_endpoint.listen", "health_endpoint",
        [this](const std::string& path) { return healthEndpoint(path); });
    spdlog::info("health endpoint on http://{}/destinations/NAME", cfg().health_endpoint.listen);
  }
  registerTelemetry();
  if (fleet_) fleet_->start();
  // A rebuild that threw must not cost the probe handler calling it its
  // next schedule (that appliance's checks would stop).
  health_ = std::make_unique<HealthChecker>(
      io_, [this] {
        guarded("health", [&] {
          rebuildSnapshot("health");
          updateAnnounce();  // a destination that now drops withdraws at once
        });
      });
  health_->reconcile(cfg());
  boost::asio::signal_set stop_signals(io, SIGINT, SIGTERM);
  boost::asio::signal_set hup(io, SIGHUP);
  boost::asio::signal_set usr1(io, SIGUSR1);
  // With fleet.bird the first SIGTERM/SIGINT withdraws the routes and stops
  // after fleet.grace_period (the router moves the traffic meanwhile); a
  // second one, or no fleet.bird, stops at once.
  std::function<void()> armStop = [&]() {
    stop_signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (beginGracefulStop(sig)) {
        armStop();
        return;
      }
      spdlog::info("signal {}: stopping", sig);
      io.stop();
    });
  };
  armStop();
  std::function<void()> armHup = [&]() {
    hup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      guarded("signal", [&] { reload(); });
      armHup();
    });
  };
  armHup();
  std::function<void()> armUsr1 = [&]() {
    usr1.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      guarded("signal", [&] { logStats("stats"); });
      armUsr1();
    });
  };
  armUsr1();

  using namespace std::chrono_literals;
  // The control core's clock: every 10 ms, punted ARP/ND first, then every
  // engine action due (drain deadlines, failback hold ends, once a second
  // flow expiry, lifecycle counts and sweeps, server-id reclaim).
  EngineTicker fast(io, *engine_, [] { return dp::monotonicNs(); }, 10ms,
                    [this] { handlePunted(); });
  boost::asio::steady_timer slow(io);
  unsigned ticks = 0;
  std::function<void()> onSlow = [&]() {
    slow.expires_after(1s);
    slow.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      guarded("timer", [&] {
        resolveNeighbours();
        updateAnnounce();
        detachGoneCaptures();
        sampleRates();
        refreshTelemetry();
        if (++ticks % 10 == 0) logStats("stats", true);
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
  resolveNeighbours();
  startFleet();
  spdlog::info("gwlbd running: {} worker(s), {} port(s), underlay {} port {}",
               cfg().dataplane.workers, n_ports_, cfg().node.underlay_ip.str(),
               cfg().node.underlay_port);
  // systemd (Type=notify): ready now that the ports are up, the first
  // snapshot is published and the workers run; the watchdog is fed only
  // while every worker's loop moves.
  sd_.notify("READY=1\nSTATUS=" + statusLine() + "\n");
  boost::asio::steady_timer watchdog(io);
  std::function<void()> onWatchdog = [&]() {
    watchdog.expires_after(std::chrono::microseconds(std::max<uint64_t>(sd_.watchdogUsec() / 2, 10000)));
    watchdog.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      guarded("watchdog", [&] { feedWatchdog(); });
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

  sd_.notify("STOPPING=1\nSTATUS=stopping\n");
  capture_.reset();  // detaches every capture while the workers still report quiescence
  stopFleet();
  api_.reset();
  metrics_.reset();
  health_http_.reset();
  health_.reset();
  if (fleet_) fleet_->stop();
  stopWorkers();
  handlePunted();
  closeExceptionPath();
  for (uint16_t port = 0; port < n_ports_; ++port) {
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);  // net_pcap flushes its output file here
  }
  logStats("final");
  return 0;
}

}  // namespace gwlb::ctl
