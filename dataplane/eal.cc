#include "dataplane/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <cerrno>
#include <stdexcept>

namespace gwlb::dp {

void initEal(const std::string& prog, const std::vector<std::string>& args) {
  std::vector<std::string> store;
  store.push_back(prog);
  store.insert(store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : store) argv.push_back(s.data());
  argv.push_back(nullptr);
  if (rte_eal_init(int(store.size()), argv.data()) < 0)
    throw std::runtime_error(std::string("rte_eal_init failed: ") + rte_strerror(rte_errno));
}

rte_mempool* createMbufPool(const std::string& name, unsigned n, unsigned data_room) {
  rte_mempool* p = rte_pktmbuf_pool_create(name.c_str(), n, 256, 0,
                                           uint16_t(data_room + RTE_PKTMBUF_HEADROOM),
                                           int(rte_socket_id()));
  if (!p)
    throw std::runtime_error("mbuf pool '" + name + "' (" + std::to_string(n) +
                             " mbufs): " + rte_strerror(rte_errno));
  return p;
}

rte_rcu_qsbr* createQsbr(unsigned max_threads) {
  size_t sz = rte_rcu_qsbr_get_memsize(max_threads);
  auto* v = static_cast<rte_rcu_qsbr*>(rte_zmalloc("gwlb_qsbr", sz, RTE_CACHE_LINE_SIZE));
  if (!v || rte_rcu_qsbr_init(v, max_threads) != 0)
    throw std::runtime_error("cannot create the RCU QSBR variable");
  return v;
}

rte_ring* createRing(const std::string& name, unsigned size, bool single_producer) {
  unsigned flags = RING_F_SC_DEQ | (single_producer ? RING_F_SP_ENQ : 0);
  rte_ring* r = rte_ring_create(name.c_str(), size, int(rte_socket_id()), flags);
  if (!r) throw std::runtime_error("ring '" + name + "': " + rte_strerror(rte_errno));
  return r;
}

std::string setPortMtu(uint16_t port, unsigned mtu, const std::string& key) {
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(port, name);
  const std::string who = "port " + std::to_string(port) + " (" + name + ")";
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port, &info) != 0)
    throw std::runtime_error(who + ": cannot read device info");
  int rc = mtu > UINT16_MAX ? -EINVAL : rte_eth_dev_set_mtu(port, uint16_t(mtu));
  if (rc == 0) {
    uint16_t now = 0;
    rte_eth_dev_get_mtu(port, &now);
    return who + ": MTU " + std::to_string(now);
  }
  const std::string range = "the device takes MTU " + std::to_string(info.min_mtu) + ".." +
                            std::to_string(info.max_mtu) + ", frames up to " +
                            std::to_string(info.max_rx_pktlen) + " bytes";
  // No MTU operation at all: a capture file or a sink has no frame size limit
  // to raise; accept what the device says it takes.
  if (rc == -ENOTSUP && mtu >= info.min_mtu && mtu <= info.max_mtu &&
      uint64_t(mtu) + 18 <= info.max_rx_pktlen)
    return who + ": no MTU setting on this device (" + range + "): MTU " + std::to_string(mtu) +
           " accepted";
  std::string hint;
  if (std::string(name).rfind("net_af_packet", 0) == 0)
    hint = " (net_af_packet: its framesz, less the 32-byte or so ring header, must hold the MTU)";
  throw std::runtime_error(who + " refused MTU " + std::to_string(mtu) + " from " + key + ": " +
                           rte_strerror(-rc) + "; " + range + hint +
                           ". Lower " + key + " or give the port larger frames");
}

}  // namespace gwlb::dp
