// The worker lcore loop for gwlbd: poll the RX queues this worker owns, run the
// pipeline, transmit per port, report a quiescent state once per loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "dataplane/pipeline.h"

struct rte_rcu_qsbr;
struct rte_ring;

namespace gwlb::dp {

struct RxQueue {
  uint16_t port;
  uint16_t queue;
};

struct WorkerConfig {
  unsigned qsbr_id = 0;
  uint16_t tx_queue = 0;            // this worker's TX queue on every port
  uint16_t burst = 32;
  std::vector<RxQueue> rx;          // queues this worker polls
  uint16_t n_ports = 0;
  // node.idle_sleep_us: sleep this long after a round that found nothing
  // (0: busy poll). Opt-in for labs and VMs: it adds up to this much latency.
  uint32_t idle_sleep_us = 0;
};

// A worker's pulse, for the control thread (`status`, /metrics): written by
// the worker alone with relaxed stores, once per poll loop (no lock, no
// syscall; the gap is measured with the TSC). Its own cache line, so these
// stores do not share one with what the worker only reads.
struct alignas(64) WorkerHeartbeat {
  // The window of recent_max_loop_gap_ns.
  static constexpr uint64_t kWindowNs = 1'000'000'000ULL;
  std::atomic<uint64_t> loops{0};            // poll loops completed since start
  std::atomic<uint64_t> max_loop_gap_ns{0};  // longest time between two loop starts, since start
  // Longest time between two loop starts in the last completed window of
  // kWindowNs (a gauge that comes down again after a hiccup).
  std::atomic<uint64_t> recent_max_loop_gap_ns{0};
};

struct WorkerRun {
  WorkerHeartbeat heartbeat;  // first: keeps its own cache line
  Dataplane* dp = nullptr;
  rte_rcu_qsbr* qsbr = nullptr;
  WorkerState* state = nullptr;
  WorkerConfig cfg;
  const std::atomic<bool>* stop = nullptr;
  rte_ring* control_tx = nullptr;  // frames the control thread sends (ARP); drained by worker 0
};

// rte_eal_remote_launch entry point; arg is a WorkerRun*. Returns when *stop.
int workerLoop(void* arg);

// CLOCK_MONOTONIC in ns (vDSO, no syscall).
uint64_t monotonicNs() noexcept;

}  // namespace gwlb::dp
