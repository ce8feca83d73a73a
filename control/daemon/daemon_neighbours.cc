// gwlbd's neighbours on the control thread (and the forwarding checks'
// returned probes, which come by the same ring): answers ARP (and IPv6 neighbor
// solicitations) for this node's addresses with the MAC of the port each
// arrived on, and keeps the appliances' MACs fresh (control/daemon/neighbours.h):
// learns from every ARP an appliance sends on a port facing the appliances,
// probes entries whose reachable time ran out, and rebuilds the snapshot when
// a MAC changes.
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/arp.h"
#include "common/ndp.h"
#include "control/daemon/daemon.h"
#include "control/health/forwarding_probe.h"
#include "dataplane/eal.h"

namespace gwlb::ctl {
namespace {

// Sends a reply built in place over `m` (now `len` bytes) out of the port it came in on.
bool sendBack(rte_ring* tx, rte_mbuf* m, size_t len) {
  if (len > m->data_len) {
    if (!rte_pktmbuf_append(m, uint16_t(len - m->data_len))) return false;
  } else {
    rte_pktmbuf_trim(m, uint16_t(m->data_len - len));
  }
  return rte_ring_enqueue(tx, m) == 0;
}

}  // namespace

// The appliances whose MAC ARP must find: no static `mac` and no
// node.gateway_mac, in the config or still draining after removal.
void Daemon::trackNeighbours() {
  std::vector<uint32_t> ips;
  if (!cfg().node.gateway_mac) {
    for (const auto& g : cfg().server_groups)
      for (const auto& s : g.servers)
        if (!s.mac && s.address.isV4()) ips.push_back(s.address.v4HostOrder());
    for (const auto& [ip, e] : lifecycle().entries())
      if (!e.server.mac) ips.push_back(ip);
  }
  std::sort(ips.begin(), ips.end());
  ips.erase(std::unique(ips.begin(), ips.end()), ips.end());
  neighbours_.track(ips, dp::monotonicNs());
}

void Daemon::handlePunted() {
  void* objs[64];
  unsigned n = rte_ring_dequeue_burst(dp_.punt, objs, 64, nullptr);
  if (n == 0) return;
  // The current snapshot's port views (MAC, role); this thread retires snapshots.
  const dp::Snapshot* snap = dp_.snapshot.load(std::memory_order_acquire);
  const uint32_t our_ip = cfg().node.underlay_ip.v4HostOrder();
  const uint64_t now = dp::monotonicNs();
  bool changed = false;
  for (unsigned i = 0; i < n; ++i) {
    auto* m = static_cast<rte_mbuf*>(objs[i]);
    uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
    const dp::PortView* pv =
        snap && m->port < snap->ports.size() ? &snap->ports[m->port] : nullptr;
    ArpPacket a;
    NeighborSolicitation ns;
    if (pv && parseArp(f, m->data_len, a)) {
      // Only where the appliances are: a router-side host cannot claim one.
      if (acceptsReturns(pv->role) && neighbours_.heard(a.sender_ip, a.sender_mac, now)) {
        spdlog::info("ARP: appliance {} is at {}", IpAddr::v4(a.sender_ip).str(),
                     a.sender_mac.str());
        changed = true;
      }
      if (a.op == 1 && a.target_ip == our_ip && a.sender_ip != our_ip) {
        size_t len = makeArpReply(f, a, pv->mac);
        if (sendBack(control_tx_, m, len)) continue;
      }
      // A reply to us may answer the kernel's own request (its BGP peer's
      // MAC): the kernel gets every one, after the appliance learning above
      // (it ignores those it did not ask for). Requests for us stay here: we
      // answer them, the kernel would answer twice.
      if (exception_ && a.op == 2 && a.target_ip == our_ip) {
        exception_->toKernel(m);
        continue;
      }
    } else if (pv && parseNeighborSolicitation(f, m->data_len, ns)) {
      bool ours = std::any_of(cfg().node.ipv6_addresses.begin(), cfg().node.ipv6_addresses.end(),
                              [&](const IpAddr& x) { return x.isV6() && x.b == ns.target; });
      size_t room = size_t(m->data_len) + rte_pktmbuf_tailroom(m);
      size_t len = ours ? makeNeighborAdvertisement(f, room, ns, pv->mac) : 0;
      if (len && sendBack(control_tx_, m, len)) continue;
    } else if (ForwardingReturn fr; health_ && parseForwardingReturn(f, m->data_len, fr)) {
      // A forwarding check's probe back from an appliance (punted_probe).
      health_->forwardingReturned(fr.appliance, fr.token);
    }
    rte_pktmbuf_free(m);
  }
  if (changed) rebuildSnapshot("neighbours");
}

void Daemon::resolveNeighbours() {
  std::vector<NeighbourCache::Request> requests;
  std::map<uint32_t, MacAddr> before = neighbours_.macs();
  bool forgot = neighbours_.tick(dp::monotonicNs(), requests);
  uint32_t our_ip = cfg().node.underlay_ip.v4HostOrder();
  for (const NeighbourCache::Request& r : requests) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (!m) break;
    uint8_t* f = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, kArpFrameLen));
    makeArpRequest(f, cfg().node.underlay_mac, our_ip, r.ip);
    if (r.mac) std::copy(r.mac->b.begin(), r.mac->b.end(), f);  // a unicast probe
    m->port = cfg().node.underlay_port;
    if (rte_ring_enqueue(control_tx_, m) != 0) rte_pktmbuf_free(m);
  }
  if (forgot) {
    std::map<uint32_t, MacAddr> after = neighbours_.macs();
    for (const auto& [ip, mac] : before)
      if (!after.count(ip))
        spdlog::warn("ARP: appliance {} stopped answering at {}; asking everyone again",
                     IpAddr::v4(ip).str(), mac.str());
    rebuildSnapshot("neighbours");
  }
}

}  // namespace gwlb::ctl
