// The kernel exception path (docs/exception-path.md): one net_tap interface
// per DPDK port, so that BGP, BFD, ping and SSH to the node's own addresses
// reach the kernel although DPDK owns the NIC. The workers queue the frames
// they do not handle (dp::Dataplane::exception); the control thread writes
// them to the tap of the port they came in on, and sends what the kernel
// writes to a tap out of its port (through control_tx, worker 0).
//
// Control thread only (main lcore): the taps are its alone. Nothing here runs
// at packet rate on a worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/net_types.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace gwlb::ctl {

class ExceptionPath {
 public:
  struct Tap {
    std::string iface;         // kernel interface name (<prefix><port>)
    uint16_t tap_port = 0;     // its DPDK port id
    uint64_t to_kernel = 0;    // frames written to the tap
    uint64_t from_kernel = 0;  // frames the kernel sent, queued for the port
    uint64_t drop_tap = 0;     // refused by the tap (interface down, or its queue full)
    uint64_t drop_wire = 0;    // kernel frames dropped: control_tx full or too long
  };

  // Creates, configures and starts one tap per DPDK port 0..macs.size()-1,
  // named prefix + port id, with that port's MAC (`macs`: what the port takes
  // frames to) and MTU `mtu`. Throws std::runtime_error naming the tap and
  // DPDK's answer (startup only).
  ExceptionPath(const std::string& prefix, const std::vector<MacAddr>& macs, unsigned mtu,
                rte_mempool* pool);
  // Stops and closes the taps (their kernel interfaces disappear).
  ~ExceptionPath();
  ExceptionPath(const ExceptionPath&) = delete;
  ExceptionPath& operator=(const ExceptionPath&) = delete;

  // Writes one frame (mbuf->port = the DPDK port it came in on) to that
  // port's tap; takes ownership. Returns false when it was dropped.
  bool toKernel(rte_mbuf* m);
  // Drains the workers' exception ring into the taps. Returns frames handled.
  unsigned drainWorkers(rte_ring* exception);
  // Reads what the kernel wrote to every tap and queues it on control_tx for
  // its DPDK port. Returns frames read.
  unsigned pollKernel(rte_ring* control_tx);

  const std::vector<Tap>& taps() const { return taps_; }

 private:
  std::vector<Tap> taps_;  // by DPDK port id
};

}  // namespace gwlb::ctl
