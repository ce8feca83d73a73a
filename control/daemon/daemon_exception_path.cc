// The kernel exception path in gwlbd (control/daemon/exception_path.h), when
// node.exception_path is on: its tap per port and ring at start, the poll that
// moves packets both ways, and the close after the workers stop. Control thread.
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <stdexcept>

#include "control/daemon/daemon.h"
#include "control/daemon/memory_plan.h"
#include "dataplane/eal.h"

namespace gwlb::ctl {

void Daemon::setupExceptionPath() {
  const ExceptionPathConfig& ep = cfg().node.exception_path;
  if (!ep.enabled) return;
  std::vector<MacAddr> macs;
  for (const dp::PortView& v : resolvePorts(cfg(), &port_macs_)) macs.push_back(v.mac);
  macs.resize(n_ports_);
  exception_ = std::make_unique<ExceptionPath>(ep.name_prefix, macs, cfg().node.underlay_mtu, pool_);
  try {
    dp_.exception = dp::createRing("gwlbd_exception", kExceptionRingSize);
  } catch (const std::exception& e) {
    throw std::runtime_error(e.what() + allocationHint(cfg(), "rings and RCU"));
  }
}

void Daemon::pollExceptionPath() {
  if (!exception_) return;
  exception_->drainWorkers(dp_.exception);
  exception_->pollKernel(control_tx_);
}

void Daemon::closeExceptionPath() {
  if (!exception_) return;
  // The workers have stopped: what they queued last is freed with the taps.
  void* obj;
  while (rte_ring_dequeue(dp_.exception, &obj) == 0) rte_pktmbuf_free(static_cast<rte_mbuf*>(obj));
  exception_.reset();
}

}  // namespace gwlb::ctl
