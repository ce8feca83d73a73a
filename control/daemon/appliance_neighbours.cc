// gwlbd's neighbours on the control thread (and the forwarding checks'
// returned probes, which come by the same ring): answers ARP (and IPv6 neighbor
// solicitations) for this node's addresses with the MAC of the port each
// arrived on, and keeps the appliances' MACs fresh (control/daemon/neighbours.h):
// learns from every ARP an IPv4 appliance sends, and from the neighbor
// advertisements (and solicitations) of an IPv6 one, on a port facing the
// appliances, probes entries whose reachable time ran out (ARP requests,
// neighbor solicitations), and rebuilds the snapshot when a MAC changes. Both
// caches hold only the configured (or draining) appliances: a flood of
// ARP or ND for other addresses changes nothing here (and the dataplane punts
// only what names an appliance, through a bounded ring: drop_punt_queue_full).
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/arp.h"
#include "common/ndp.h"
#include "control/daemon/daemon.h"
#include "control/health/forwarding_probe.h"
#include "dataplane/eal.h"
#include "dataplane/ingress.h"

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

// The appliances whose MAC ARP (IPv4) or neighbor discovery (IPv6) must
// find: no static `mac` and no node.gateway_mac, in the config or still
// draining after removal.
void Daemon::trackNeighbours() {
  std::vector<uint32_t> ips, keys6;
  std::map<uint32_t, IpAddr> addr6;
  auto want = [&](const ServerConfig& s) {
    if (s.mac) return;
    if (s.address.isV4()) {
      ips.push_back(s.address.v4HostOrder());
    } else if (s.address.isV6()) {
      keys6.push_back(applianceKey(s.address));
      addr6.emplace(applianceKey(s.address), s.address);
    }
  };
  if (!cfg().node.gateway_mac) {
    for (const auto& g : cfg().server_groups)
      for (const auto& s : g.servers) want(s);
    for (const auto& [ip, e] : lifecycle().entries()) want(e.server);
  }
  // A node without an IPv6 underlay address cannot solicit (config refuses IPv6 appliances then).
  if (!cfg().node.underlay_ipv6) keys6.clear(), addr6.clear();
  for (auto* v : {&ips, &keys6}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  const uint64_t now = dp::monotonicNs();
  neighbours_.track(ips, now);
  // A key that now stands for another address is a new neighbour: forgotten first.
  std::vector<uint32_t> kept;
  for (uint32_t key : keys6)
    if (auto it = neighbours6_addr_.find(key); it == neighbours6_addr_.end() || it->second == addr6.at(key))
      kept.push_back(key);
  neighbours6_.track(kept, now);
  neighbours6_.track(keys6, now);
  neighbours6_addr_ = std::move(addr6);
}

ApplianceMacs Daemon::neighbourMacs() const {
  ApplianceMacs t = neighbours_.macs();
  for (const auto& [key, mac] : neighbours6_.macs()) t.emplace(key, mac);
  return t;
}

// An advertisement (or a solicitation) from an IPv6 appliance says it is at
// `mac`. Without Override, an advertisement does not replace a MAC we have
// (RFC 4861 section 7.2.5). True when the MAC in use changed.
bool Daemon::heardNd(const IpAddr& appliance, const MacAddr& mac, bool override_mac, uint64_t now) {
  const uint32_t key = applianceKey(appliance);
  auto it = neighbours6_addr_.find(key);
  if (it == neighbours6_addr_.end() || !(it->second == appliance)) return false;
  const NeighbourCache::Entry* e = neighbours6_.find(key);
  if (!override_mac && e && e->mac && !(*e->mac == mac)) return false;
  return neighbours6_.heard(key, mac, now);
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
    NeighborAdvertisement na;
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
    } else if (pv && parseNeighborAdvertisement(f, m->data_len, na)) {
      // The dataplane punts only advertisements for an IPv6 appliance on a
      // port facing the appliances (dataplane/ingress.h ndVerdict). One
      // without the target's link-layer address confirms the MAC we have.
      const IpAddr target = IpAddr::v6(na.target.data());
      const NeighbourCache::Entry* e = neighbours6_.find(applianceKey(target));
      std::optional<MacAddr> mac = na.has_target_lladdr ? std::optional(na.target_lladdr)
                                   : e && na.solicited ? e->mac : std::nullopt;
      if (acceptsReturns(pv->role) && mac && heardNd(target, *mac, na.override_flag || !e || !e->mac, now)) {
        spdlog::info("ND: appliance {} is at {}", target.str(), mac->str());
        changed = true;
      }
      // Sent to one of our addresses (or the tap's link-local one), it may
      // answer the kernel's own solicitation (its probes' next hop).
      const bool link_local = na.dst[0] == 0xfe && (na.dst[1] & 0xc0) == 0x80;
      if (exception_ && snap && (link_local || dp::isNodeIpv6(*snap, na.dst.data()))) {
        exception_->toKernel(m);
        continue;
      }
    } else if (pv && parseNeighborSolicitation(f, m->data_len, ns)) {
      // An appliance asking for us says where it is, as its ARP requests do.
      if (acceptsReturns(pv->role) && ns.has_source_lladdr &&
          heardNd(IpAddr::v6(ns.src.data()), ns.source_lladdr, true, now)) {
        spdlog::info("ND: appliance {} is at {}", IpAddr::v6(ns.src.data()).str(),
                     ns.source_lladdr.str());
        changed = true;
      }
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
  std::vector<NeighbourCache::Request> requests, requests6;
  std::map<uint32_t, MacAddr> before = neighbours_.macs(), before6 = neighbours6_.macs();
  const uint64_t now = dp::monotonicNs();
  bool forgot = neighbours_.tick(now, requests);
  bool forgot6 = neighbours6_.tick(now, requests6);
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
  // Solicitations from node.underlay_ipv6, out of the underlay port as ARP's.
  const std::optional<IpAddr>& us6 = cfg().node.underlay_ipv6;
  for (const NeighbourCache::Request& r : us6 ? requests6 : std::vector<NeighbourCache::Request>{}) {
    auto a = neighbours6_addr_.find(r.ip);
    if (a == neighbours6_addr_.end()) continue;
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (!m) break;
    const size_t room = rte_pktmbuf_tailroom(m);
    uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
    size_t len = makeNeighborSolicitation(f, room, cfg().node.underlay_mac, us6->b, a->second.b,
                                          r.mac ? &*r.mac : nullptr);
    if (!len || !rte_pktmbuf_append(m, uint16_t(len))) {
      rte_pktmbuf_free(m);
      continue;
    }
    m->port = cfg().node.underlay_port;
    if (rte_ring_enqueue(control_tx_, m) != 0) rte_pktmbuf_free(m);
  }
  if (forgot || forgot6) {
    std::map<uint32_t, MacAddr> after = neighbours_.macs(), after6 = neighbours6_.macs();
    for (const auto& [ip, mac] : before)
      if (!after.count(ip))
        spdlog::warn("ARP: appliance {} stopped answering at {}; asking everyone again",
                     IpAddr::v4(ip).str(), mac.str());
    for (const auto& [key, mac] : before6)
      if (!after6.count(key) && neighbours6_addr_.count(key))
        spdlog::warn("ND: appliance {} stopped answering at {}; soliciting its multicast group again",
                     neighbours6_addr_.at(key).str(), mac.str());
    rebuildSnapshot("neighbours");
  }
}

}  // namespace gwlb::ctl
