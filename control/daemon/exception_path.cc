#include "control/daemon/exception_path.h"

#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "dataplane/eal.h"

namespace gwlb::ctl {
namespace {

constexpr uint16_t kTapDescriptors = 512;
constexpr unsigned kBurst = 32;
// At most this many frames each way per poll: the control thread has other work.
constexpr unsigned kMaxPerPoll = 1024;

std::string vdevName(const std::string& iface) { return "net_tap_" + iface; }

}  // namespace

ExceptionPath::ExceptionPath(const std::string& prefix, const std::vector<MacAddr>& macs,
                             unsigned mtu, rte_mempool* pool) {
  for (size_t port = 0; port < macs.size(); ++port) {
    Tap t;
    t.iface = prefix + std::to_string(port);
    const std::string name = vdevName(t.iface);
    const std::string args = "iface=" + t.iface + ",mac=" + macs[port].str();
    const std::string who = "exception path: tap " + t.iface + " for port " + std::to_string(port);
    int rc = rte_vdev_init(name.c_str(), args.c_str());
    if (rc != 0)
      throw std::runtime_error(who + ": cannot create " + name + " (" + args + "): " +
                               rte_strerror(-rc) +
                               " (net_tap needs CAP_NET_ADMIN and /dev/net/tun; is an interface "
                               "of that name left over?)");
    if (rte_eth_dev_get_port_by_name(name.c_str(), &t.tap_port) != 0)
      throw std::runtime_error(who + ": created, but no DPDK port is named " + name);
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(t.tap_port, 1, 1, &conf) != 0)
      throw std::runtime_error(who + ": configure failed");
    spdlog::info("{}", dp::setPortMtu(t.tap_port, mtu, "node.underlay_mtu"));
    uint16_t nrx = kTapDescriptors, ntx = kTapDescriptors;
    rte_eth_dev_adjust_nb_rx_tx_desc(t.tap_port, &nrx, &ntx);
    if (rte_eth_rx_queue_setup(t.tap_port, 0, nrx, unsigned(rte_socket_id()), nullptr, pool) != 0 ||
        rte_eth_tx_queue_setup(t.tap_port, 0, ntx, unsigned(rte_socket_id()), nullptr) != 0)
      throw std::runtime_error(who + ": queue setup failed");
    if (rte_eth_dev_start(t.tap_port) != 0) throw std::runtime_error(who + ": start failed");
    spdlog::info("{}: DPDK port {}, MAC {}, MTU {}", who, t.tap_port, macs[port].str(), mtu);
    taps_.push_back(std::move(t));
  }
}

ExceptionPath::~ExceptionPath() {
  for (const Tap& t : taps_) {
    rte_eth_dev_stop(t.tap_port);
    rte_eth_dev_close(t.tap_port);
    rte_vdev_uninit(vdevName(t.iface).c_str());
  }
}

bool ExceptionPath::toKernel(rte_mbuf* m) {
  if (m->port >= taps_.size()) {
    rte_pktmbuf_free(m);
    return false;
  }
  Tap& t = taps_[m->port];
  if (rte_eth_tx_burst(t.tap_port, 0, &m, 1) == 1) {
    ++t.to_kernel;
    return true;
  }
  ++t.drop_tap;
  rte_pktmbuf_free(m);
  return false;
}

unsigned ExceptionPath::drainWorkers(rte_ring* exception) {
  if (!exception) return 0;
  void* objs[kBurst];
  unsigned total = 0;
  while (total < kMaxPerPoll) {
    unsigned n = rte_ring_dequeue_burst(exception, objs, kBurst, nullptr);
    for (unsigned i = 0; i < n; ++i) toKernel(static_cast<rte_mbuf*>(objs[i]));
    total += n;
    if (n < kBurst) break;
  }
  return total;
}

unsigned ExceptionPath::pollKernel(rte_ring* control_tx) {
  rte_mbuf* pkts[kBurst];
  unsigned total = 0;
  for (uint16_t port = 0; port < taps_.size(); ++port) {
    Tap& t = taps_[port];
    unsigned here = 0;
    while (here < kMaxPerPoll) {
      uint16_t n = rte_eth_rx_burst(t.tap_port, 0, pkts, kBurst);
      for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = pkts[i];
        m->port = port;
        // The workers' transmit takes single-segment frames; the pool's
        // buffers hold the port's MTU, so a chain is a frame too long for it.
        if (m->nb_segs != 1 || rte_ring_enqueue(control_tx, m) != 0) {
          ++t.drop_wire;
          rte_pktmbuf_free(m);
        } else {
          ++t.from_kernel;
        }
      }
      here += n;
      if (n < kBurst) break;
    }
    total += here;
  }
  return total;
}

}  // namespace gwlb::ctl
