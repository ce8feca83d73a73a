// Thin wrappers over DPDK start-up: EAL, mempool, RCU variable. Called once per
// process from the main thread; they throw std::runtime_error on failure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_ring;

namespace gwlb::dp {

// rte_eal_init with argv[0] = prog followed by args.
void initEal(const std::string& prog, const std::vector<std::string>& args);
// The devices given with --vdev that did not become an ethdev port (their
// driver refused them at probe; the EAL logged its reason and went on), each
// as its name plus what is visibly wrong with its arguments, e.g.
// "net_pcap0 (rx_pcap file /x/a.pcap: No such file or directory)". Call after initEal.
std::vector<std::string> unstartedVdevs();
// Mbuf pool whose data room holds `data_room` bytes after RTE_PKTMBUF_HEADROOM.
rte_mempool* createMbufPool(const std::string& name, unsigned n, unsigned data_room);
// QSBR variable for up to max_threads reader threads.
rte_rcu_qsbr* createQsbr(unsigned max_threads);
// Single-consumer, multi-producer ring (power-of-two size).
rte_ring* createRing(const std::string& name, unsigned size, bool single_producer = false);
// Sets a configured port's MTU (after rte_eth_dev_configure, before its queues
// are set up) and returns a line for the log. A device with no MTU control
// (net_pcap, net_null) is accepted when its advertised range holds `mtu`.
// Throws std::runtime_error naming the port, the MTU, `key` (the config key it
// comes from) and the device's answer when the port refuses it.
std::string setPortMtu(uint16_t port, unsigned mtu, const std::string& key);

}  // namespace gwlb::dp
