#include "dataplane/worker.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <ctime>

namespace gwlb::dp {

uint64_t monotonicNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ULL + uint64_t(ts.tv_nsec);
}

namespace {

// Sends a list whose mbufs carry their egress port in mbuf->port, one
// rte_eth_tx_burst per run of equal ports; frees and counts what is refused.
void transmit(WorkerState& w, uint16_t txq, rte_mbuf** pkts, uint16_t n) noexcept {
  uint16_t i = 0;
  while (i < n) {
    uint16_t port = pkts[i]->port;
    uint16_t j = i + 1;
    while (j < n && pkts[j]->port == port) ++j;
    uint16_t sent = rte_eth_tx_burst(port, txq, pkts + i, uint16_t(j - i));
    for (uint16_t k = uint16_t(i + sent); k < j; ++k) {
      w.counters.inc(Counter::drop_tx_full);
      rte_pktmbuf_free(pkts[k]);
    }
    i = j;
  }
}

}  // namespace

int workerLoop(void* arg) {
  auto* run = static_cast<WorkerRun*>(arg);
  WorkerState& w = *run->state;
  const WorkerConfig& c = run->cfg;
  rte_rcu_qsbr_thread_register(run->qsbr, c.qsbr_id);
  rte_rcu_qsbr_thread_online(run->qsbr, c.qsbr_id);
  rte_mbuf* pkts[kMaxBurst];
  BurstOutput out;
  while (!run->stop->load(std::memory_order_relaxed)) {
    bool idle = true;
    for (const RxQueue& q : c.rx) {
      uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, c.burst);
      if (n == 0) continue;
      idle = false;
      uint64_t now = monotonicNs();
      processBurst(*run->dp, w, pkts, n, now, out);
      transmit(w, c.tx_queue, out.to_appliance, out.n_appliance);
      transmit(w, c.tx_queue, out.to_router, out.n_router);
    }
    if (run->control_tx) {
      // Sorted by port is not needed: transmit() batches runs of equal ports.
      unsigned k = rte_ring_dequeue_burst(run->control_tx, reinterpret_cast<void**>(pkts),
                                          c.burst, nullptr);
      if (k) transmit(w, c.tx_queue, pkts, uint16_t(k));
    }
    rte_rcu_qsbr_quiescent(run->qsbr, c.qsbr_id);
    if (idle) rte_pause();
  }
  rte_rcu_qsbr_thread_offline(run->qsbr, c.qsbr_id);
  rte_rcu_qsbr_thread_unregister(run->qsbr, c.qsbr_id);
  return 0;
}

}  // namespace gwlb::dp
