// The dataplane's ports and workers: brings up every DPDK port (queues,
// symmetric RSS, MTU, checksum offload, promiscuous mode) and gives each
// worker lcore its RX queues; stops the workers at shutdown. Control thread.
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "control/daemon/daemon.h"
#include "dataplane/eal.h"

namespace gwlb::ctl {

namespace {

// A Toeplitz key made of one repeated 16-bit word hashes (a, b) and (b, a) alike,
// so both directions of a flow land on the same RX queue where the NIC uses it.
// Fragment types hash on addresses only, which keeps every fragment of a
// datagram on one queue, in order (the pipeline needs the first one first).
constexpr uint8_t kSymmetricRssKey[40] = {
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a,
    0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a, 0x6d, 0x5a};

std::string portName(uint16_t port) {
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(port, name);
  return name;
}

}  // namespace

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
  // The config's warnings, once the ports a class may name are known.
  for (const ConfigError& w : configWarnings(cfg(), n_ports_)) spdlog::warn("{}: {}", w.path, w.message);
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

using nlohmann::json;

json Daemon::portsJson() const {
  json ports = json::array();
  const dp::Snapshot* snap = dp_.snapshot.load(std::memory_order_acquire);
  for (uint16_t port = 0; port < n_ports_; ++port) {
    char name[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port, name);
    rte_eth_link link{};
    rte_eth_link_get_nowait(port, &link);
    rte_eth_stats st{};
    rte_eth_stats_get(port, &st);
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(port, &info);
    ports.push_back({{"id", port},
                     {"name", name},
                     {"link_up", link.link_status == RTE_ETH_LINK_UP},
                     {"speed_mbps", link.link_speed},
                     {"rx_queues", info.nb_rx_queues},
                     {"tx_queues", info.nb_tx_queues},
                     {"rx_packets", st.ipackets},
                     {"tx_packets", st.opackets},
                     {"rx_bytes", st.ibytes},
                     {"tx_bytes", st.obytes},
                     {"rx_missed", st.imissed},
                     {"rx_errors", st.ierrors},
                     {"tx_errors", st.oerrors}});
    if (exception_ && port < exception_->taps().size()) {
      const ExceptionPath::Tap& t = exception_->taps()[port];
      ports.back()["exception_path"] = {{"tap", t.iface},
                                        {"to_kernel", t.to_kernel},
                                        {"from_kernel", t.from_kernel},
                                        {"dropped_tap", t.drop_tap},
                                        {"dropped_wire", t.drop_wire}};
    }
    if (snap && port < snap->ports.size()) {
      ports.back()["role"] = toString(snap->ports[port].role);
      ports.back()["mac"] = snap->ports[port].mac.str();
    }
  }
  return ports;
}

}  // namespace gwlb::ctl
