#include "dataplane/pipeline.h"

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstring>

#include "common/flow_key.h"
#include "common/geneve.h"
#include "common/icmp_error.h"
#include "common/packet_parser.h"
#include "dataplane/move.h"

namespace gwlb::dp {
namespace {

struct Ctx {
  Dataplane& dp;
  WorkerState& w;
  const Snapshot& s;
  uint64_t now;
  BurstOutput& out;
};

inline void drop(Ctx& c, rte_mbuf* m, Counter why) noexcept {
  c.w.counters.inc(why);
  rte_pktmbuf_free(m);
}

inline uint32_t nextCookie(WorkerState& w) noexcept {
  uint64_t x = w.rng;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  w.rng = x;
  uint32_t c = uint32_t(x >> 16);
  return c ? c : 1;
}

inline void relaxedAdd(std::atomic<uint64_t>& a, uint64_t v) noexcept {
  a.store(a.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

// Which table entry a packet belongs to, and in which direction it travels.
struct FlowRef {
  FlowKey key;
  uint32_t hash = 0;
  uint8_t dir = 0;
  bool fragment_key = false;
};

// The key of a packet: an ICMP error belongs to the flow it quotes (travelling
// opposite to the quoted packet); a non-first fragment under 5-tuple
// stickiness belongs to its datagram's fragment entry (its ports are in the
// first fragment only).
inline FlowRef refFor(const ParsedPacket& p, StickinessMode mode, uint8_t group) noexcept {
  FlowRef r;
  if (!p.icmp_error && p.is_fragment && !p.first_fragment && mode == StickinessMode::kFiveTuple) {
    r.key = makeFragmentKey(p.tuple, p.frag_id, group);
    r.fragment_key = true;
  } else {
    KeyedPacket kp = makeFlowKey(p.icmp_error ? p.quoted : p.tuple, mode, group);
    r.key = kp.key;
    r.dir = uint8_t(kp.dir ^ (p.icmp_error ? 1 : 0));
  }
  r.hash = flowHash(r.key);
  return r;
}

// Records, once per direction, where that direction's packets came from.
inline void learnDirection(DirInfo& d, const rte_mbuf* m, const uint8_t* frame,
                           const ParsedPacket& p) noexcept {
  if (d.state.load(std::memory_order_acquire) != 0) return;
  uint8_t expected = 0;
  if (!d.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  d.port = m->port;
  d.has_vlan = p.has_vlan;
  d.vlan_tci = p.vlan_tci;
  d.vlan_tpid = p.vlan_tpid;
  std::memcpy(d.our_mac.b.data(), frame, 6);
  std::memcpy(d.peer_mac.b.data(), frame + 6, 6);
  d.state.store(2, std::memory_order_release);
}

// Installs a route in a fresh entry (first writer wins) and returns the route in force.
inline uint64_t ensureRoute(FlowEntry& e, uint16_t server, uint32_t cookie, uint32_t flow_hash,
                            uint64_t idle_ns, uint64_t now, uint8_t dir, bool& created) noexcept {
  uint64_t r = e.route.load(std::memory_order_acquire);
  if (r & kRouteSet) return r;
  // Racing creators write the same hash and nearly the same time (atomics);
  // the rest only the winner of the route CAS writes (expire() skips the
  // entry until its idle timeout is set).
  e.flow_hash.store(flow_hash, std::memory_order_relaxed);
  e.last_seen_ns.store(now, std::memory_order_relaxed);
  uint64_t want = packRoute(server, cookie);
  if (e.route.compare_exchange_strong(r, want, std::memory_order_acq_rel)) {
    e.created_ns.store(now, std::memory_order_relaxed);
    e.first_dir.store(dir, std::memory_order_relaxed);
    e.idle_timeout_ns.store(idle_ns, std::memory_order_release);
    created = true;
    return want;
  }
  return r;
}

// The flow's appliance sheds its flows (ServerView::move): move it now and
// count the move once (fragment entries follow their flow uncounted).
inline uint64_t moveFlow(Ctx& c, FlowEntry& e, const GroupView& g, uint64_t route,
                         MoveReason why, bool count) noexcept {
  bool moved = false;
  uint64_t r = tryMove(e, c.s, g, route, why, c.now, moved);
  if (moved && count) {
    c.w.counters.inc(Counter::flows_rebalanced);
    switch (why) {
      case MoveReason::kUnhealthy: c.w.counters.inc(Counter::flows_rebalanced_unhealthy); break;
      case MoveReason::kDrainTimeout:
        c.w.counters.inc(Counter::flows_rebalanced_drain_timeout);
        break;
      case MoveReason::kRegionFailover: c.w.counters.inc(Counter::flows_rebalanced_region); break;
      default: c.w.counters.inc(Counter::flows_rebalanced_removed); break;
    }
  }
  return r;
}

void tooBig(Ctx& c, rte_mbuf* m, const ParsedPacket& p, uint32_t inner_mtu) noexcept {
  // Token bucket: icmp_rate_per_s errors per second, at most one second's worth banked.
  double rate = c.s.icmp_rate_per_s;
  if (c.w.icmp_last_ns) {
    c.w.icmp_tokens += double(c.now - c.w.icmp_last_ns) * rate / 1e9;
    if (c.w.icmp_tokens > rate) c.w.icmp_tokens = rate;
  } else {
    c.w.icmp_tokens = rate;
  }
  c.w.icmp_last_ns = c.now;
  if (c.w.icmp_tokens < 1.0) return drop(c, m, Counter::drop_too_big);
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  // The error can be longer than a short packet (header + full quote): let it
  // use the tailroom, then set the frame length to what was built.
  size_t room = size_t(m->data_len) + rte_pktmbuf_tailroom(m);
  size_t len = buildTooBig(f, room, p, inner_mtu, c.s.underlay_ip);
  if (len == 0) return drop(c, m, Counter::drop_too_big);
  c.w.icmp_tokens -= 1.0;
  if (len > m->data_len) rte_pktmbuf_append(m, uint16_t(len - m->data_len));
  else rte_pktmbuf_trim(m, uint16_t(m->data_len - len));
  c.w.counters.inc(Counter::icmp_sent);
  c.w.counters.inc(Counter::tx_bytes, m->pkt_len);
  c.out.to_router[c.out.n_router++] = m;
}

void forward(Ctx& c, rte_mbuf* m, const ParsedPacket& p) noexcept {
  const Snapshot& s = c.s;
  if (s.listeners.empty()) return drop(c, m, Counter::drop_no_server_group);
  constexpr uint8_t kListener = 0;  // the listener that receives all inspected traffic
  const ListenerView& lv = s.listeners[kListener];
  // The group new flows (and moved ones) go to; null when they are dropped.
  const GroupView* ng = lv.active < s.groups.size() ? &s.groups[lv.active] : nullptr;
  FlowTable& ft = *c.dp.flows;
  uint8_t* frame = rte_pktmbuf_mtod(m, uint8_t*);

  FlowRef ref = refFor(p, lv.stickiness, kListener);
  int32_t pos = ft.lookup(ref.key, ref.hash);
  if (pos < 0 && ref.fragment_key) return drop(c, m, Counter::drop_fragment_unknown_flow);
  bool created = false;
  uint64_t route;
  if (pos < 0 || !(ft.entry(pos).route.load(std::memory_order_acquire) & kRouteSet)) {
    if (!ng) return drop(c, m, Counter::drop_no_healthy_server);
    const GroupView& g = *ng;
    uint16_t server = g.maglev.empty() ? kNoServer : g.maglev[ref.hash % g.maglev.size()];
    if (server == kNoServer) return drop(c, m, Counter::drop_no_healthy_server);
    if (pos < 0) pos = ft.insert(ref.key, ref.hash);
    if (pos < 0) return drop(c, m, Counter::drop_flow_table_full);
    uint8_t proto = p.icmp_error ? p.quoted.proto : p.tuple.proto;
    uint64_t idle = proto == kProtoTcp ? g.tcp_idle_ns : g.other_idle_ns;
    route = ensureRoute(ft.entry(pos), server, nextCookie(c.w), ref.hash, idle, c.now,
                        ref.dir, created);
    if (created) c.w.counters.inc(Counter::flows_created);
  } else {
    route = ft.entry(pos).route.load(std::memory_order_acquire);
  }
  FlowEntry& e = ft.entry(pos);
  // Existing flows on an appliance that sheds them move on this packet
  // (DOMAIN.md section 3); the appliance's view is read for the send anyway.
  // (bench/ builds a copy without this check, GWLB_BENCH_NO_MOVE_CHECK, to
  // measure what it costs.)
#ifndef GWLB_BENCH_NO_MOVE_CHECK
  if (routeServer(route) < s.servers.size()) {
    MoveReason why = s.servers[routeServer(route)].move;
    if (why != MoveReason::kNone && ng) route = moveFlow(c, e, *ng, route, why, !ref.fragment_key);
  }
#endif
  e.last_seen_ns.store(c.now, std::memory_order_relaxed);
  relaxedAdd(e.packets[ref.dir], 1);
  relaxedAdd(e.bytes[ref.dir], p.l3_len);
  learnDirection(e.dir[ref.dir], m, frame, p);

  // The first fragment of a datagram leaves a short-lived entry that carries
  // the flow's route to the fragments without ports.
  if (p.is_fragment && p.first_fragment && !p.icmp_error &&
      lv.stickiness == StickinessMode::kFiveTuple) {
    FlowKey fk = makeFragmentKey(p.tuple, p.frag_id, kListener);
    int32_t fpos = ft.insert(fk, flowHash(fk));
    if (fpos >= 0) {
      bool fcreated = false;
      FlowEntry& fe = ft.entry(fpos);
      ensureRoute(fe, routeServer(route), routeCookie(route),
                  e.flow_hash.load(std::memory_order_relaxed), kFragmentTimeoutNs, c.now, 0,
                  fcreated);
      fe.last_seen_ns.store(c.now, std::memory_order_relaxed);
      learnDirection(fe.dir[0], m, frame, p);
      if (fcreated) c.w.counters.inc(Counter::fragment_entries_created);
    }
  }

  uint16_t server = routeServer(route);
  if (server >= s.servers.size() || server >= kMaxServerIds || !s.servers[server].routable)
    return drop(c, m, Counter::drop_no_healthy_server);
  const ServerView& sv = s.servers[server];
  if (!sv.mac_known) return drop(c, m, Counter::drop_neighbour_unresolved);
  if (sv.group >= s.groups.size()) return drop(c, m, Counter::drop_no_server_group);
  // Encapsulation follows the appliance's own group (format, VNI, IDs).
  const GroupView& g = s.groups[sv.group];

  size_t payload = g.aws ? p.l3_len : size_t(p.l3_offset) + p.l3_len;
  size_t hdr = encapHeaderLen(g.aws);
  size_t outer_ip_len = hdr - 14 + payload;
  if (outer_ip_len > s.underlay_mtu) {
    uint32_t inner_mtu = uint32_t(s.underlay_mtu - (hdr - 14) - (g.aws ? 0 : p.l3_offset));
    return tooBig(c, m, p, inner_mtu);
  }
  if (g.aws) rte_pktmbuf_adj(m, p.l3_offset);
  if (m->data_len > payload) rte_pktmbuf_trim(m, uint16_t(m->data_len - payload));
  uint8_t* h = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(m, uint16_t(hdr)));
  if (!h) return drop(c, m, Counter::drop_no_headroom);

  EncapParams ep;
  ep.src_mac = s.underlay_mac;
  ep.dst_mac = sv.mac;
  ep.src_ip = s.underlay_ip;
  ep.dst_ip = sv.ip;
  ep.udp_sport = geneveSourcePort(e.flow_hash.load(std::memory_order_relaxed));
  ep.vni = g.vni;
  ep.protocol = g.aws ? (p.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6) : kEtherTypeTeb;
  ep.aws_options = g.aws;
  ep.endpoint_id = g.endpoint_id;
  ep.attachment_id = g.attachment_id;
  ep.cookie = routeCookie(route);
  writeEncap(h, payload, ep);
  m->port = s.underlay_port;
  c.w.countSent(server, m->pkt_len);
  c.w.counters.inc(Counter::encapsulated);
  c.w.counters.inc(Counter::tx_bytes, m->pkt_len);
  c.out.to_appliance[c.out.n_appliance++] = m;
}

void fromAppliance(Ctx& c, rte_mbuf* m, const ParsedPacket& outer) noexcept {
  const Snapshot& s = c.s;
  uint16_t server = s.serverByIp(outer.tuple.src.v4HostOrder());
  if (server == kNoServer || server >= s.servers.size() || !s.servers[server].routable)
    return drop(c, m, Counter::drop_geneve_unknown_appliance);
  if (outer.is_fragment) return drop(c, m, Counter::drop_bad_fragment);
  const ServerView& sv = s.servers[server];
  const GroupView& g = s.groups[sv.group];

  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  size_t gen_off = size_t(outer.l4_offset) + 8;
  size_t end = size_t(outer.l3_offset) + outer.l3_len;
  GeneveInfo gi;
  Counter why;
  GeneveStatus st = parseGeneve(f + gen_off, end - gen_off, gi, why);
  if (st == GeneveStatus::kControl) return drop(c, m, Counter::drop_geneve_control);
  if (st == GeneveStatus::kDrop) return drop(c, m, why);
  if (gi.vni != g.vni) return drop(c, m, Counter::drop_geneve_bad_vni);
  if (g.aws) {
    if (gi.protocol != kEtherTypeIpv4 && gi.protocol != kEtherTypeIpv6)
      return drop(c, m, Counter::drop_geneve_bad_protocol);
    if (!gi.has_cookie) return drop(c, m, Counter::drop_geneve_missing_cookie);
  } else if (gi.protocol != kEtherTypeTeb) {
    return drop(c, m, Counter::drop_geneve_bad_protocol);
  }

  size_t inner_off = gen_off + gi.header_len;
  ParsedPacket in;
  ParseStatus ps = g.aws ? parseL3(f + inner_off, end - inner_off, gi.protocol, in, why)
                         : parseFrame(f + inner_off, end - inner_off, in, why);
  if (ps != ParseStatus::kOk) return drop(c, m, Counter::drop_return_inner_malformed);

  if (g.listener == kNoListener) return drop(c, m, Counter::drop_return_no_flow);
  FlowRef ref = refFor(in, g.stickiness, g.listener);
  int32_t pos = c.dp.flows->lookup(ref.key, ref.hash);
  if (pos < 0) return drop(c, m, Counter::drop_return_no_flow);
  FlowEntry& e = c.dp.flows->entry(pos);
  uint64_t route = e.route.load(std::memory_order_acquire);
  if (!(route & kRouteSet)) return drop(c, m, Counter::drop_return_no_flow);
  if (routeServer(route) != server || (g.aws && routeCookie(route) != gi.cookie)) {
    // The appliance the flow moved away from, still returning its packets.
    uint64_t mv = e.moved.load(std::memory_order_acquire);
    if (mv && moveFrom(mv) == server && (!g.aws || moveCookie(mv) == gi.cookie))
      return drop(c, m, Counter::drop_return_after_move);
    return drop(c, m, routeServer(route) != server ? Counter::drop_return_wrong_appliance
                                                   : Counter::drop_return_cookie_mismatch);
  }
  const DirInfo& d = e.dir[ref.dir];
  if (d.state.load(std::memory_order_acquire) != 2) return drop(c, m, Counter::drop_return_no_l2);

  // Strip everything up to the inner IP header, then give it the L2 header of
  // the neighbour it came from: byte-identical at L3.
  size_t l3_start = inner_off + in.l3_offset;
  rte_pktmbuf_adj(m, uint16_t(l3_start));
  if (m->data_len > in.l3_len) rte_pktmbuf_trim(m, uint16_t(m->data_len - in.l3_len));
  uint16_t l2 = d.has_vlan ? 18 : 14;
  uint8_t* h = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(m, l2));
  if (!h) return drop(c, m, Counter::drop_no_headroom);
  std::memcpy(h, d.peer_mac.b.data(), 6);
  std::memcpy(h + 6, d.our_mac.b.data(), 6);
  uint16_t et = in.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
  if (d.has_vlan) {
    wr16(h + 12, d.vlan_tpid);
    wr16(h + 14, d.vlan_tci);
    wr16(h + 16, et);
  } else {
    wr16(h + 12, et);
  }
  e.last_seen_ns.store(c.now, std::memory_order_relaxed);
  m->port = d.port;
  c.w.counters.inc(Counter::returned);
  c.w.counters.inc(Counter::tx_bytes, m->pkt_len);
  c.out.to_router[c.out.n_router++] = m;
}

inline bool isGeneveToUs(const ParsedPacket& p, uint32_t underlay_ip) noexcept {
  return p.ip_version == 4 && p.tuple.dst.v4HostOrder() == underlay_ip;
}

}  // namespace

void processBurst(Dataplane& dp, WorkerState& w, rte_mbuf** pkts, uint16_t n, uint64_t now_ns,
                  BurstOutput& out) noexcept {
  out.n_appliance = 0;
  out.n_router = 0;
  const Snapshot* snap = dp.snapshot.load(std::memory_order_acquire);
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    w.counters.inc(Counter::rx_packets);
    w.counters.inc(Counter::rx_bytes, m->pkt_len);
    if (!snap) {
      w.counters.inc(Counter::drop_no_server_group);
      rte_pktmbuf_free(m);
      continue;
    }
    Ctx c{dp, w, *snap, now_ns, out};
    if (m->nb_segs != 1) {
      drop(c, m, Counter::drop_multi_segment);
      continue;
    }
    ParsedPacket p;
    Counter why;
    ParseStatus st = parseFrame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, p, why);
    if (st == ParseStatus::kDrop) {
      drop(c, m, why);
      continue;
    }
    if (st == ParseStatus::kArp) {
      if (dp.punt && rte_ring_enqueue(dp.punt, m) == 0) {
        w.counters.inc(Counter::punted);
      } else {
        drop(c, m, Counter::drop_punt_queue_full);
      }
      continue;
    }
    bool geneve = p.ip_version == 4 && p.tuple.proto == kProtoUdp && p.tuple.dport == kGenevePort;
    if (isGeneveToUs(p, snap->underlay_ip)) {
      if (geneve) fromAppliance(c, m, p);
      else drop(c, m, Counter::drop_not_for_us);
      continue;
    }
    if (geneve && p.tuple.src.v4HostOrder() == snap->underlay_ip) {
      drop(c, m, Counter::drop_loop_geneve);
      continue;
    }
    forward(c, m, p);
  }
}

}  // namespace gwlb::dp
