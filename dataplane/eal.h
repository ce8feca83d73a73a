// Thin wrappers over DPDK start-up: EAL, mempool, RCU variable. Called once per
// process from the main thread; they throw std::runtime_error on failure.
#pragma once

#include <string>
#include <vector>

struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_ring;

namespace gwlb::dp {

// rte_eal_init with argv[0] = prog followed by args.
void initEal(const std::string& prog, const std::vector<std::string>& args);
// Mbuf pool whose data room holds `data_room` bytes after RTE_PKTMBUF_HEADROOM.
rte_mempool* createMbufPool(const std::string& name, unsigned n, unsigned data_room);
// QSBR variable for up to max_threads reader threads.
rte_rcu_qsbr* createQsbr(unsigned max_threads);
// Single-consumer, multi-producer ring (power-of-two size).
rte_ring* createRing(const std::string& name, unsigned size, bool single_producer = false);

}  // namespace gwlb::dp
