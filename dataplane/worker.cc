#include "dataplane/worker.h"

#include <rte_ethdev.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <ctime>

#include "dataplane/tsc_clock.h"

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

// TSC cycles to ns and back without overflow (heartbeat only: called at a new
// maximum gap and once a window, never per packet).
uint64_t cyclesToNs(uint64_t cycles, uint64_t hz) noexcept {
  if (hz == 0) return 0;
  return cycles / hz * 1'000'000'000ULL + cycles % hz * 1'000'000'000ULL / hz;
}

uint64_t cyclesFromNs(uint64_t ns, uint64_t hz) noexcept {
  return ns / 1'000'000'000ULL * hz + ns % 1'000'000'000ULL * hz / 1'000'000'000ULL;
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
  WorkerHeartbeat& hb = run->heartbeat;
  const uint64_t tsc_hz = rte_get_tsc_hz();
  uint64_t loops = hb.loops.load(std::memory_order_relaxed);
  const uint64_t window_cycles = cyclesFromNs(WorkerHeartbeat::kWindowNs, tsc_hz);
  uint64_t max_gap = 0, window_max = 0;  // cycles
  uint64_t last = rte_rdtsc();
  uint64_t window_end = last + window_cycles;
  // Packet times: the TSC per burst, converted (dataplane/tsc_clock.h);
  // re-anchored to the monotonic clock once a heartbeat window.
  TscClock clock;
  clock.init(tsc_hz, rte_rdtsc(), monotonicNs());
  while (!run->stop->load(std::memory_order_relaxed)) {
    // Heartbeat: the time since the previous loop started covers that whole
    // loop (its bursts, its transmits) and any time the thread was not running.
    uint64_t t = rte_rdtsc();
    uint64_t gap = t - last;
    last = t;
    if (gap > window_max) {
      window_max = gap;
      if (gap > max_gap) {
        max_gap = gap;
        hb.max_loop_gap_ns.store(cyclesToNs(gap, tsc_hz), std::memory_order_relaxed);
      }
    }
    if (t >= window_end) {
      hb.recent_max_loop_gap_ns.store(cyclesToNs(window_max, tsc_hz), std::memory_order_relaxed);
      window_max = 0;
      window_end = t + window_cycles;
      clock.resync(rte_rdtsc(), monotonicNs());
    }
    bool idle = true;
    for (const RxQueue& q : c.rx) {
      uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, c.burst);
      if (n == 0) continue;
      idle = false;
      uint64_t now = clock.toNs(rte_rdtsc());
      processBurst(*run->dp, w, pkts, n, now, out);
      transmit(w, c.tx_queue, out.to_appliance, out.n_appliance);
      transmit(w, c.tx_queue, out.to_router, out.n_router);
      if (out.n_mirror) transmit(w, c.tx_queue, out.to_mirror, out.n_mirror);
    }
    if (run->control_tx) {
      // Sorted by port is not needed: transmit() batches runs of equal ports.
      unsigned k = rte_ring_dequeue_burst(run->control_tx, reinterpret_cast<void**>(pkts),
                                          c.burst, nullptr);
      if (k) transmit(w, c.tx_queue, pkts, uint16_t(k));
      if (k) idle = false;
    }
    rte_rcu_qsbr_quiescent(run->qsbr, c.qsbr_id);
    hb.loops.store(++loops, std::memory_order_relaxed);
    if (idle && c.idle_sleep_us) rte_delay_us_sleep(c.idle_sleep_us);  // opt-in (labs, VMs)
    else if (idle) rte_pause();
  }
  rte_rcu_qsbr_thread_offline(run->qsbr, c.qsbr_id);
  rte_rcu_qsbr_thread_unregister(run->qsbr, c.qsbr_id);
  return 0;
}

}  // namespace gwlb::dp
