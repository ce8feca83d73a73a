#include "dataplane/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

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

}  // namespace gwlb::dp
