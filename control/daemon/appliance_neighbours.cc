// gwlbd's neighbours on the control thread (control/daemon/appliance_neighbours.h),
// and the forwarding checks' returned probes, which come by the same ring:
// answers ARP (and IPv6 neighbor solicitations) for this node's addresses
// with the MAC of the port each arrived on, and keeps the appliances' MACs
// fresh (control/daemon/neighbours.h): learns from every ARP an IPv4
// appliance sends, and from the neighbor advertisements (and solicitations)
// of an IPv6 one, on a port facing the appliances, probes entries whose
// reachable time ran out (ARP requests, neighbor solicitations), and gives
// the engine the MACs (and has it rebuild) when one changes. Both caches
// hold only the configured (or draining) appliances: a flood of ARP or ND
// for other addresses changes nothing here (and the dataplane punts only
// what names an appliance, through a bounded ring: drop_punt_queue_full).
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/arp.h"
#include "common/ndp.h"
#include "control/daemon/appliance_neighbours.h"
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
void ApplianceNeighbours::follow(uint64_t now) {
  const Config& cfg = engine_.config();
  std::vector<uint32_t> ips, keys6;
  std::map<uint32_t, IpAddr> addr6;
  auto want = [&](const ApplianceConfig& s) {
    if (s.mac) return;
    if (s.address.isV4()) {
      ips.push_back(s.address.v4HostOrder());
    } else if (s.address.isV6()) {
      keys6.push_back(applianceKey(s.address));
      addr6.emplace(applianceKey(s.address), s.address);
    }
  };
  if (!cfg.node.gateway_mac) {
    for (const auto& g : cfg.server_groups)
      for (const auto& s : g.appliances) want(s);
    for (const auto& [ip, e] : engine_.lifecycle().entries()) want(e.appliance);
  }
  // A node without an IPv6 underlay address cannot solicit (config refuses IPv6 appliances then).
  if (!cfg.node.underlay_ipv6) keys6.clear(), addr6.clear();
  for (auto* v : {&ips, &keys6}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  v4_.track(ips, now);
  // A key that now stands for another address is a new neighbour: forgotten first.
  std::vector<uint32_t> kept;
  for (uint32_t key : keys6)
    if (auto it = v6_addr_.find(key); it == v6_addr_.end() || it->second == addr6.at(key))
      kept.push_back(key);
  v6_.track(kept, now);
  v6_.track(keys6, now);
  v6_addr_ = std::move(addr6);
  if (macs() != engine_.neighbours()) push(nullptr, now);
}

ApplianceMacs ApplianceNeighbours::macs() const {
  ApplianceMacs t = v4_.macs();
  for (const auto& [key, mac] : v6_.macs()) t.emplace(key, mac);
  return t;
}

void ApplianceNeighbours::push(const char* why, uint64_t now) {
  engine_.setNeighbours(macs());
  if (why) engine_.rebuild(why, now);
}

// Without Override, an advertisement does not replace a MAC we have
// (RFC 4861 section 7.2.5).
bool ApplianceNeighbours::heardNd(const IpAddr& appliance, const MacAddr& mac, bool override_mac,
                                  uint64_t now) {
  const uint32_t key = applianceKey(appliance);
  auto it = v6_addr_.find(key);
  if (it == v6_addr_.end() || !(it->second == appliance)) return false;
  const NeighbourCache::Entry* e = v6_.find(key);
  if (!override_mac && e && e->mac && !(*e->mac == mac)) return false;
  return v6_.heard(key, mac, now);
}

bool ApplianceNeighbours::onArp(rte_mbuf* m, const dp::PortView& pv, uint64_t now, bool& changed) {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  ArpPacket a;
  if (!parseArp(f, m->data_len, a)) return false;
  // An IPv6-only node has no IPv4 address to answer for (nor 0.0.0.0).
  const std::optional<IpAddr>& ours = engine_.config().node.underlay_ip;
  const uint32_t our_ip = ours ? ours->v4HostOrder() : 0;
  // Only where the appliances are: a router-side host cannot claim one.
  if (acceptsReturns(pv.role) && v4_.heard(a.sender_ip, a.sender_mac, now)) {
    spdlog::info("ARP: appliance {} is at {}", IpAddr::v4(a.sender_ip).str(), a.sender_mac.str());
    changed = true;
  }
  if (ours && a.op == 1 && a.target_ip == our_ip && a.sender_ip != our_ip) {
    size_t len = makeArpReply(f, a, pv.mac);
    if (sendBack(rings_.control_tx, m, len)) return true;
  }
  // A reply to us may answer the kernel's own request (its BGP peer's
  // MAC): the kernel gets every one, after the appliance learning above
  // (it ignores those it did not ask for). Requests for us stay here: we
  // answer them, the kernel would answer twice.
  if (exception_ && ours && a.op == 2 && a.target_ip == our_ip) {
    exception_->toKernel(m);
    return true;
  }
  return false;
}

bool ApplianceNeighbours::onAdvertisement(rte_mbuf* m, const dp::PortView& pv, const dp::Snapshot& snap,
                                          uint64_t now, bool& changed) {
  NeighborAdvertisement na;
  if (!parseNeighborAdvertisement(rte_pktmbuf_mtod(m, uint8_t*), m->data_len, na)) return false;
  // The dataplane punts only advertisements for an IPv6 appliance on a
  // port facing the appliances (dataplane/ingress.h ndVerdict). One
  // without the target's link-layer address confirms the MAC we have.
  const IpAddr target = IpAddr::v6(na.target.data());
  const NeighbourCache::Entry* e = v6_.find(applianceKey(target));
  std::optional<MacAddr> mac = na.has_target_lladdr ? std::optional(na.target_lladdr)
                               : e && na.solicited ? e->mac : std::nullopt;
  if (acceptsReturns(pv.role) && mac && heardNd(target, *mac, na.override_flag || !e || !e->mac, now)) {
    spdlog::info("ND: appliance {} is at {}", target.str(), mac->str());
    changed = true;
  }
  // Sent to one of our addresses (or the tap's link-local one), it may
  // answer the kernel's own solicitation (its probes' next hop).
  const bool link_local = na.dst[0] == 0xfe && (na.dst[1] & 0xc0) == 0x80;
  if (exception_ && (link_local || dp::isNodeIpv6(snap, na.dst.data()))) {
    exception_->toKernel(m);
    return true;
  }
  return false;
}

bool ApplianceNeighbours::onSolicitation(rte_mbuf* m, const dp::PortView& pv, uint64_t now, bool& changed) {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  NeighborSolicitation ns;
  if (!parseNeighborSolicitation(f, m->data_len, ns)) return false;
  // An appliance asking for us says where it is, as its ARP requests do.
  if (acceptsReturns(pv.role) && ns.has_source_lladdr &&
      heardNd(IpAddr::v6(ns.src.data()), ns.source_lladdr, true, now)) {
    spdlog::info("ND: appliance {} is at {}", IpAddr::v6(ns.src.data()).str(), ns.source_lladdr.str());
    changed = true;
  }
  const auto& ours6 = engine_.config().node.ipv6_addresses;
  bool ours = std::any_of(ours6.begin(), ours6.end(),
                          [&](const IpAddr& x) { return x.isV6() && x.b == ns.target; });
  size_t room = size_t(m->data_len) + rte_pktmbuf_tailroom(m);
  size_t len = ours ? makeNeighborAdvertisement(f, room, ns, pv.mac) : 0;
  return len && sendBack(rings_.control_tx, m, len);
}

void ApplianceNeighbours::handlePunted(uint64_t now) {
  void* objs[64];
  unsigned n = rte_ring_dequeue_burst(rings_.punt, objs, 64, nullptr);
  if (n == 0) return;
  // The current snapshot's port views (MAC, role); this thread retires snapshots.
  const dp::Snapshot* snap = engine_.current();
  bool changed = false;
  for (unsigned i = 0; i < n; ++i) {
    auto* m = static_cast<rte_mbuf*>(objs[i]);
    const dp::PortView* pv = snap && m->port < snap->ports.size() ? &snap->ports[m->port] : nullptr;
    if (pv && (onArp(m, *pv, now, changed) || onAdvertisement(m, *pv, *snap, now, changed) ||
               onSolicitation(m, *pv, now, changed)))
      continue;
    // A forwarding check's probe back from an appliance (punted_probe).
    if (ForwardingReturn fr; health_ && parseForwardingReturn(rte_pktmbuf_mtod(m, uint8_t*), m->data_len, fr))
      health_->forwardingReturned(fr.appliance, fr.token);
    rte_pktmbuf_free(m);
  }
  if (changed) push("neighbours", now);
}
void ApplianceNeighbours::sendRequests(const std::vector<NeighbourCache::Request>& arp,
                                       const std::vector<NeighbourCache::Request>& nd) {
  const NodeConfig& node = engine_.config().node;
  // Without an IPv4 underlay address there are no IPv4 appliances to ask
  // for (the config refuses them), and no address to ask from.
  const uint32_t our_ip = node.underlay_ip ? node.underlay_ip->v4HostOrder() : 0;
  for (const NeighbourCache::Request& r : node.underlay_ip ? arp : std::vector<NeighbourCache::Request>{}) {
    rte_mbuf* m = rte_pktmbuf_alloc(rings_.pool);
    if (!m) break;
    uint8_t* f = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, kArpFrameLen));
    makeArpRequest(f, node.underlay_mac, our_ip, r.ip);
    if (r.mac) std::copy(r.mac->b.begin(), r.mac->b.end(), f);  // a unicast probe
    m->port = node.underlay_port;
    if (rte_ring_enqueue(rings_.control_tx, m) != 0) rte_pktmbuf_free(m);
  }
  // Solicitations from node.underlay_ipv6, out of the underlay port as ARP's.
  const std::optional<IpAddr>& us6 = node.underlay_ipv6;
  for (const NeighbourCache::Request& r : us6 ? nd : std::vector<NeighbourCache::Request>{}) {
    auto a = v6_addr_.find(r.ip);
    if (a == v6_addr_.end()) continue;
    rte_mbuf* m = rte_pktmbuf_alloc(rings_.pool);
    if (!m) break;
    const size_t room = rte_pktmbuf_tailroom(m);
    uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
    size_t len = makeNeighborSolicitation(f, room, node.underlay_mac, us6->b, a->second.b,
                                          r.mac ? &*r.mac : nullptr);
    if (!len || !rte_pktmbuf_append(m, uint16_t(len))) {
      rte_pktmbuf_free(m);
      continue;
    }
    m->port = node.underlay_port;
    if (rte_ring_enqueue(rings_.control_tx, m) != 0) rte_pktmbuf_free(m);
  }
}

void ApplianceNeighbours::resolve(uint64_t now) {
  std::vector<NeighbourCache::Request> requests, requests6;
  std::map<uint32_t, MacAddr> before = v4_.macs(), before6 = v6_.macs();
  bool forgot = v4_.tick(now, requests);
  bool forgot6 = v6_.tick(now, requests6);
  sendRequests(requests, requests6);
  if (!forgot && !forgot6) return;
  std::map<uint32_t, MacAddr> after = v4_.macs(), after6 = v6_.macs();
  for (const auto& [ip, mac] : before)
    if (!after.count(ip))
      spdlog::warn("ARP: appliance {} stopped answering at {}; asking everyone again",
                   IpAddr::v4(ip).str(), mac.str());
  for (const auto& [key, mac] : before6)
    if (!after6.count(key) && v6_addr_.count(key))
      spdlog::warn("ND: appliance {} stopped answering at {}; soliciting its multicast group again",
                   v6_addr_.at(key).str(), mac.str());
  push("neighbours", now);
}

}  // namespace gwlb::ctl
