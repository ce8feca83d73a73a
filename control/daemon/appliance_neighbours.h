// The appliances' neighbours in gwlbd (docs/architecture.md "Neighbours: ARP
// and ND"): answers ARP and IPv6 neighbor solicitations for this node's
// addresses, learns and keeps fresh the MACs of the appliances ARP (IPv4) or
// neighbor discovery (IPv6) must find, one NeighbourCache per family
// (control/daemon/neighbours.h), and pushes the MACs it knows into the engine
// (Engine::setNeighbours) whenever they change, so that a build never asks
// for them. Control thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "control/daemon/exception_path.h"
#include "control/daemon/neighbours.h"
#include "control/engine/engine.h"
#include "control/health/health_checker.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace gwlb::ctl {

class ApplianceNeighbours {
 public:
  // The frames' ways in and out: the mbufs requests are built in, the
  // workers' punt ring, and control_tx (worker 0 sends what it holds).
  struct Rings {
    rte_mempool* pool = nullptr;
    rte_ring* punt = nullptr;
    rte_ring* control_tx = nullptr;
  };
  // `exception` (kernel's frames) and `health` (forwarding checks' returned
  // probes) may be null, now or later; each must outlive this.
  ApplianceNeighbours(Engine& engine, Rings rings, const std::unique_ptr<ExceptionPath>& exception,
                      const std::unique_ptr<HealthChecker>& health)
      : engine_(engine), rings_(rings), exception_(exception), health_(health) {}

  // Tracks the appliances the engine's running config and lifecycle name
  // (no static `mac`, no node.gateway_mac; configured or leaving with
  // flows) and gives the engine the MACs that are left. Builds nothing: a
  // config change calls it before its own build, the 1 s tick for
  // appliances the lifecycle forgot.
  void follow(uint64_t now);
  // The frames the workers punted (at most 64): ARP and ND answered and
  // learned, forwarding probes back to the health checker, what the kernel
  // asked to the exception path. A MAC changed: the engine rebuilds.
  void handlePunted(uint64_t now);
  // Each cache's requests due (ARP requests, neighbor solicitations) out of
  // the underlay port; a MAC forgotten (probes unanswered): the engine rebuilds.
  void resolve(uint64_t now);

  // Every MAC known, by applianceKey() (both families).
  ApplianceMacs macs() const;

 private:
  // Each punted frame's kind; true when the frame was kept (sent back or
  // handed to the kernel), false when it is to be freed. `changed`: a MAC
  // in use changed.
  bool onArp(rte_mbuf* m, const dp::PortView& pv, uint64_t now, bool& changed);
  bool onAdvertisement(rte_mbuf* m, const dp::PortView& pv, const dp::Snapshot& snap, uint64_t now,
                       bool& changed);
  bool onSolicitation(rte_mbuf* m, const dp::PortView& pv, uint64_t now, bool& changed);
  // An advertisement (or a solicitation) from an IPv6 appliance says it is
  // at `mac`. True when the MAC in use changed.
  bool heardNd(const IpAddr& appliance, const MacAddr& mac, bool override_mac, uint64_t now);
  void sendRequests(const std::vector<NeighbourCache::Request>& arp,
                    const std::vector<NeighbourCache::Request>& nd);
  // The MACs into the engine; with `why`, a rebuild follows.
  void push(const char* why, uint64_t now);

  Engine& engine_;
  Rings rings_;
  const std::unique_ptr<ExceptionPath>& exception_;
  const std::unique_ptr<HealthChecker>& health_;
  NeighbourCache v4_;  // IPv4 appliances, resolved by ARP
  // IPv6 appliances resolved by neighbor discovery, keyed by applianceKey()
  // (distinct per config), with the address each key stands for.
  NeighbourCache v6_;
  std::map<uint32_t, IpAddr> v6_addr_;
};

}  // namespace gwlb::ctl
