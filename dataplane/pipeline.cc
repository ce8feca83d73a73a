#include "dataplane/pipeline.h"

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include <cstring>
#include <new>

#include "common/checksum.h"
#include "common/fast_path.h"
#include "common/flow_cookie.h"
#include "common/flow_key.h"
#include "common/geneve.h"
#include "common/packet_parser.h"
#include "dataplane/ingress.h"
#include "dataplane/move.h"
#include "dataplane/pipeline_ctx.h"
#include "dataplane/pipeline_return.h"

namespace gwlb::dp {
// NeighbourTable::pack keeps the ingress port in 8 bits.
static_assert(RTE_MAX_ETHPORTS <= 256);
using namespace burst;

namespace {

// Installs a route in a fresh entry (first writer wins) and returns the route in force.
// Concurrency rule R1 (docs/architecture.md "Flow entries: concurrency rules"):
// every creator writes flow_hash and last_seen, the CAS winner the creation fields.
inline uint64_t ensureRoute(FlowEntry& e, uint16_t server, uint32_t cookie, uint32_t flow_hash,
                            uint32_t idle_ms, uint64_t now, uint16_t origin, bool& created,
                            bool opened = false, uint32_t class_mark = 0) noexcept {
  uint64_t r = e.route.load(std::memory_order_acquire);
  if (r & kRouteSet) return r;
  e.flow_hash.store(flow_hash, std::memory_order_relaxed);
  e.last_seen.store(now);
  uint64_t want = packRoute(server, cookie);
  if (e.route.compare_exchange_strong(r, want, std::memory_order_acq_rel)) {
    e.created.store(now);
    e.origin.store(origin, std::memory_order_relaxed);
    e.idle_timeout.storeMs(idle_ms, std::memory_order_release, opened, class_mark);
    created = true;
    return want;
  }
  return r;
}

// A TCP segment with SYN and without ACK: a connection's opening segment.
[[gnu::always_inline]] inline bool opensConnection(const uint8_t* frame, const ParsedPacket& p) noexcept {
  return tcpResettable(p) && (tcpFlags(frame, p) & (kTcpSynFlag | kTcpAckFlag)) == kTcpSynFlag;
}

// The forward path of one packet whose key was looked up in the burst's bulk
// lookup (`pos`: its position, or -1). kClasses: the snapshot has
// traffic_classes (decided once per burst); without, every flow is listener 0's.
// kLean: no IPv6 underlay and no idle resets (runBurst), so neither is checked.
// Inline in runBurst<false>'s stage 3 (a call per packet cost 16
// instructions; a profile shows its lines as runBurst's); with traffic
// classes, forwardClasses below.
// held: with classes, the entry at `pos` when classifyByFlow found the
// packet's L2 held by its direction (R12): its address taken, nothing to learn.
template <bool kClasses, bool kLean>
[[gnu::always_inline]] inline void forward(Ctx& c, rte_mbuf* m, const ParsedPacket& p, const FlowRef& ref, int32_t pos,
             uint32_t hint, FlowEntry* held = nullptr) noexcept {
  const Snapshot& s = c.s;
  FlowTable& ft = *c.dp.flows;
  uint8_t* frame = rte_pktmbuf_mtod(m, uint8_t*);

  // Concurrency rule R6 (docs/architecture.md "Flow entries: concurrency rules"):
  // the bulk lookup came before this burst's inserts.
  if (pos < 0 && c.insertedThisBurst(ref.hash)) pos = ft.lookup(ref.key, ref.hash);
  // The group new flows (and moved ones) go to, of the flow's listener; null
  // when they are dropped. Not needed by an established flow's packet.
  auto newGroup = [&]() -> const GroupView* {
    const ListenerView& lv = s.listeners[kClasses ? originListener(ref.origin) : 0];
    return lv.active < s.groups.size() ? &s.groups[lv.active] : nullptr;
  };
  if (pos < 0 && ref.fragment_key) return drop(c, m, Counter::drop_fragment_unknown_flow);
  // Concurrency rule R1 (docs/architecture.md "Flow entries: concurrency rules"):
  // an entry without a route is being created: join the race (ensureRoute).
  // The entry's address is taken once (it moves only with an insert below).
  FlowEntry* ep = kClasses && held ? held : pos >= 0 ? &ft.entry(pos) : nullptr;
  uint64_t route = ep ? ep->route.load(std::memory_order_acquire) : 0;
  if (!(route & kRouteSet)) {
    // on_idle_timeout: a segment without SYN and without an entry belongs to
    // a connection gwlbd no longer knows (expired, or never seen).
    if (!kLean && pos < 0 && s.reset_on_idle_any && tcpResettable(p) &&
        s.listeners[kClasses ? originListener(ref.origin) : 0].reset_on_idle &&
        !(tcpFlags(frame, p) & kTcpSynFlag)) [[unlikely]]
      return sendReset(c, m, p, ResetReason::kIdle);
    // on_fleet_view_incomplete: such a segment on a fleet node that may have
    // missed its peers' record of the flow; picking would guess its appliance.
    if (pos < 0 && s.reset_on_fleet_unknown_any && tcpResettable(p) &&
        c.dp.fleet_view_incomplete.load(std::memory_order_relaxed) &&
        s.listeners[kClasses ? originListener(ref.origin) : 0].reset_on_fleet_unknown &&
        !(tcpFlags(frame, p) & kTcpSynFlag)) [[unlikely]]
      return sendReset(c, m, p, ResetReason::kFleetUnknown);
    const GroupView* ng = newGroup();
    if (!ng) return drop(c, m, Counter::drop_no_healthy_server);
    const GroupView& g = *ng;
    uint16_t server = g.maglevPick(ref.hash);
    if (server == kNoAppliance) return drop(c, m, Counter::drop_no_healthy_server);
    if (pos < 0) {
      pos = ft.insert(ref.key, ref.hash, hint);
      c.noteInsert(ref.hash);
    }
    if (pos < 0)
      return drop(c, m, pos == FlowTable::kAbandoned ? Counter::drop_flow_insert_abandoned
                                                     : Counter::drop_flow_table_full);
    uint8_t proto = p.icmp_error ? p.quoted.proto : p.tuple.proto;
    uint32_t idle = proto == kProtoTcp ? g.tcp_idle_ms : g.other_idle_ms;
    bool created = false;
    // The cookie is a function of the flow and its appliance only, so every
    // gateway of a fleet gives this flow the same one (docs/fleet.md).
    uint32_t appliance = server < c.n_appliances ? s.appliances[server].ip : 0;
    ep = &ft.entry(pos);
    route = ensureRoute(*ep, server, flowCookie(ref.hash, appliance), ref.hash, idle,
                        c.now, kClasses ? uint16_t((ref.origin & ~1u) | (ref.dir & 1)) : packOrigin(ref.dir, 0, kNoClass),
                        created, opensConnection(frame, p), kClasses ? creationClassMark(s, p, ref) : 0);
    if (created) {
      c.w.counters.inc(Counter::flows_created);
      if (!ref.fragment_key) c.noteSync(pos, SyncEvent::kNew);
    }
  }
  FlowEntry& e = *ep;
  uint16_t server = routeAppliance(route);
  if (server >= c.n_appliances)
    return drop(c, m, Counter::drop_no_healthy_server);
  // The appliance's slot, its address taken once (again wherever server changes).
  const ApplianceSlot* svp = &s.appliances[server];
  // A flow that cannot continue (send_tcp_reset) is reset before any move:
  // moved mid-connection, it would reach an appliance that never saw its SYN.
  if (svp->reset != ResetReason::kNone || (!kLean && s.reset_on_idle_any)) [[unlikely]] {
    if (!resetOrGoOn(c, m, p, e, kClasses ? originListener(ref.origin) : 0, newGroup(),
                     ref.fragment_key ? -1 : pos, route))
      return;
    server = routeAppliance(route);
    if (server >= c.n_appliances) return drop(c, m, Counter::drop_no_healthy_server);
    svp = &s.appliances[server];
  }
  // Existing flows on an appliance that sheds them move on this packet
  // (docs/product-rules.md section 2); the appliance's view is read for the send anyway.
  // (bench/ builds a copy without this check, GWLB_BENCH_NO_MOVE_CHECK, to
  // measure what it costs.)
#ifndef GWLB_BENCH_NO_MOVE_CHECK
  MoveReason why = svp->move_reason;
  const GroupView* ng;
  if (why != MoveReason::kNone && (ng = newGroup())) [[unlikely]] {
    bool moved = false;
    // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
    // one CAS; movers on one snapshot (and this flow's fragment entries) reach one route.
    route = tryMove(e, s, *ng, route, why, c.now, moved);
    if (moved && !ref.fragment_key) {
      countMove(c, why);
      c.noteSync(pos, SyncEvent::kMoved);
    }
    server = routeAppliance(route);
    if (server >= c.n_appliances)
      return drop(c, m, Counter::drop_no_healthy_server);
    svp = &s.appliances[server];
  }
#endif
  if (p.tuple.proto == kProtoTcp && opensConnection(frame, p)) [[unlikely]]
    reopenIfStale(c, e, pos);
  e.last_seen.store(c.now);
  e.packets.store(e.packets.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // R12: another L2 for this direction may classify otherwise.
  if (!(kClasses && held) && learnDirection(c, ft.neighbours(), e.l2[ref.dir], m, frame, p) && kClasses)
    e.idle_timeout.clearClassDir(ref.dir);

  // The first fragment of a datagram leaves a short-lived entry that carries
  // the flow's route to the fragments without ports (with traffic classes
  // under any stickiness: a fragment without ports may classify elsewhere).
  // Concurrency rule R5 (docs/architecture.md "Flow entries: concurrency rules"):
  // its flow_hash and origin (listener, class) are the flow's.
  if (p.is_fragment && p.first_fragment && !p.icmp_error &&
      (kClasses || s.listeners[0].stickiness == StickinessMode::kFiveTuple)) [[unlikely]] {
    FlowKey fk = makeFragmentKey(p.tuple, p.frag_id, kFragmentListener);
    uint32_t fh = flowHash(fk);
    int32_t fpos = ft.insert(fk, fh);
    c.noteInsert(fh);
    if (fpos >= 0) {
      bool fcreated = false;
      FlowEntry& fe = ft.entry(fpos);
      uint32_t flow_hash = e.flow_hash.load(std::memory_order_relaxed);
      // Direction bit: the datagram travels against the flow's first packet (a
      // later fragment's key has none), as a VXLAN group's tunnel choice needs.
      const uint16_t fo = e.origin.load(std::memory_order_relaxed);
      const uint16_t origin = uint16_t((fo & ~1u) | (ref.dir != originDir(fo) ? 1u : 0u));
      uint64_t frag_route = ensureRoute(fe, routeAppliance(route), routeCookie(route), flow_hash,
                                        idleTimeoutMs(kFragmentTimeoutNs), c.now, origin, fcreated);
      // The first fragment owns the entry: a live entry left by an earlier
      // datagram with the same addresses, protocol and IP ID (another flow
      // reusing the ID within the fragment timeout, or this flow before it
      // moved) takes this flow's route now, bypass bits too (a bypassed flow's later fragments follow it).
      // Concurrency rule R5 (docs/architecture.md "Flow entries: concurrency rules"):
      // one CAS, then flow_hash; one worker handles a datagram's fragments.
      if (frag_route != route) [[unlikely]] {
        bool other_flow = fe.flow_hash.load(std::memory_order_relaxed) != flow_hash;
        if (fe.route.compare_exchange_strong(frag_route, route, std::memory_order_acq_rel)) {
          fe.flow_hash.store(flow_hash, std::memory_order_relaxed);
          fe.origin.store(origin, std::memory_order_relaxed);
          fe.moved.store(0, std::memory_order_relaxed);
          if (other_flow) c.w.counters.inc(Counter::fragment_entries_replaced);
        }
      }
      fe.last_seen.store(c.now);
      learnDirection(c, ft.neighbours(), fe.l2[0], m, frame, p);
      if (fcreated) c.w.counters.inc(Counter::fragment_entries_created);
    }
  }

  // An appliance handed this flow back: straight back to the router while its
  // bypass lasts (docs/product-rules.md "Appliance-requested bypass").
  if (routeBypassed(route)) [[unlikely]] {
    if (applianceBypass(c, m, e, route, ref.fragment_key ? -1 : pos)) return;
    server = routeAppliance(route);
    if (server >= c.n_appliances) return drop(c, m, Counter::drop_no_healthy_server);
    svp = &s.appliances[server];
  }
  const ApplianceSlot& sv = *svp;
  // Encapsulation follows the appliance's own group (format, VNI, IDs),
  // precomputed in its template by the snapshot builder.
  // A VXLAN group's replies (packets against their flow's first one) take
  // its internal tunnel; Geneve groups have no second template.
  const EncapTemplate& t =
      sv.encap_internal.len != 0 && ref.dir != originDir(e.origin.load(std::memory_order_relaxed))
          ? sv.encap_internal
          : sv.encap;
  bool aws = t.aws;
  size_t payload = aws ? p.l3_len : size_t(p.l3_offset) + p.l3_len;
  const bool ipv6 = !kLean && t.ipv6;
  size_t hdr = encapHeaderLen(aws, ipv6);
  if (!sv.sendable) [[unlikely]] {  // the builder's checks, one by one
    if (!sv.routable) return drop(c, m, Counter::drop_no_healthy_server);
    if (!sv.mac_known) return drop(c, m, Counter::drop_neighbour_unresolved);
    if (sv.group >= c.n_groups) return drop(c, m, Counter::drop_no_server_group);
    if (t.len != hdr) return drop(c, m, Counter::drop_no_server_group);
  }
  // A mirrored or tagged class (dataplane/mirror.cc) takes its own copy of
  // the rest, out of line: one branch here for every other packet. A
  // snapshot's slot vectors have storage only when some class has either
  // (a flag in Ctx taken once per burst instead cost 12 instructions more in
  // the debugoptimized build, where it kept other values off registers).
  if constexpr (kClasses) {
    if ((reinterpret_cast<uintptr_t>(s.slot_mirror.data()) | reinterpret_cast<uintptr_t>(s.slot_tag.data())) != 0)
        [[unlikely]] {
      const uint32_t inner_mtu = encapExtras(c, m, p, ref, e, sv, route);
      if (inner_mtu) tooBig(c, m, p, inner_mtu);
      return;
    }
  }
  size_t outer_ip_len = hdr - 14 + payload;
  if (outer_ip_len > s.underlay_mtu) [[unlikely]] {
    uint32_t inner_mtu = uint32_t(s.underlay_mtu - (hdr - 14) - (aws ? 0 : p.l3_offset));
    return tooBig(c, m, p, inner_mtu);
  }
  const bool offload = c.csum_offload;
  const uint64_t sum = offload ? 0 : payloadSumWide(frame, aws ? p.l3_offset : 0, p);
  uint16_t protocol = p.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
  // rte_pktmbuf_adj (aws), _trim and _prepend in one: one segment (stage 1) holding the
  // whole datagram (the parse), so only the headroom can fall short.
  const uint32_t start = uint32_t(m->data_off) + (aws ? p.l3_offset : 0u);
  if (start < hdr) [[unlikely]]
    return drop(c, m, Counter::drop_no_headroom);
  const uint16_t out_len = uint16_t(payload + hdr);
  m->data_len = out_len;
  m->pkt_len = out_len;  // one segment's: its data_len
  m->data_off = uint16_t(start - hdr);
  uint8_t* h = static_cast<uint8_t*>(m->buf_addr) + m->data_off;
  const uint32_t flow_hash = e.flow_hash.load(std::memory_order_relaxed);
  const uint16_t sport = geneveSourcePort(flow_hash);
  if (ipv6) [[unlikely]] {
    // The inner IP header is the payload's start (aws) or p.l3_offset into it.
    const uint32_t tcl = ipv6TrafficClassLabel(h + hdr + (aws ? 0 : p.l3_offset), p.ip_version, flow_hash);
    if (offload) {
      encapOffloadInline6(h, t, payload, sport, protocol, routeCookie(route), tcl);
      m->ol_flags = (m->ol_flags & ~RTE_MBUF_F_TX_OFFLOAD_MASK) | RTE_MBUF_F_TX_IPV6 |
                    RTE_MBUF_F_TX_UDP_CKSUM;
      m->l2_len = 14;
      m->l3_len = 40;
    } else {
      encapInline6(h, t, payload, sport, protocol, routeCookie(route), sum, tcl);
    }
  } else if (offload) {
    encapOffloadInline(h, t, payload, sport, protocol, routeCookie(route));
    m->ol_flags = (m->ol_flags & ~RTE_MBUF_F_TX_OFFLOAD_MASK) | RTE_MBUF_F_TX_IPV4 |
                  RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;
    m->l2_len = 14;
    m->l3_len = 20;
  } else {
    encapInline(h, t, payload, sport, protocol, routeCookie(route), sum);
  }
  m->port = s.underlay_port;
  c.w.countSent(server, m->pkt_len);
  c.tx_bytes += m->pkt_len;
  c.out.to_appliance[c.out.n_appliance++] = m;
}

// With traffic classes, inline too since the return path's second round
// (it had cost returned packets 50 instructions when the return path held
// more registers; inline now it saves 28 on an established packet and 9 on
// a returned one, with 1,000 classes).
// `late`: keyed by keyOrClassify, classified here (classifyByFlow, else
// classifyAndMark on copies of `pos` and `hint`, so that the common case
// keeps them in registers).
template <bool kLean>
[[gnu::always_inline]] inline void forwardClasses(Ctx& c, rte_mbuf* m, const ParsedPacket& p, FlowRef& ref,
                                                  int32_t pos, uint32_t hint, bool late) noexcept {
  FlowEntry* held = nullptr;
  if (late && !(held = classifyByFlow(c, m, p, ref, pos))) [[unlikely]] {
    int32_t at = pos;
    uint32_t h = hint;
    if (!classifyAndMark(c, m, p, ref, at, h)) return;
    pos = at;
    hint = h;
  }
  // Concurrency rule R11 (docs/architecture.md "Flow entries: concurrency rules"):
  // a packet whose class names another listener than its flow's entry
  // follows the entry (after R6, which forward() then finds done).
  if (pos < 0 && c.s.listeners.size() > 1) [[unlikely]] {
    if (c.insertedThisBurst(ref.hash)) pos = c.dp.flows->lookup(ref.key, ref.hash);
    FlowRef alt;
    if (pos < 0 && (pos = findAnyListener(c, p, alt, c.s.listeners[originListener(ref.origin)].stickiness)) >= 0)
      ref = alt;
  }
  forward<true, kLean>(c, m, p, ref, pos, hint, held);
}

inline bool isGeneveToUs(const ParsedPacket& p, uint32_t underlay_ip) noexcept {
  return p.ip_version == 4 && p.tuple.dst.v4HostOrder() == underlay_ip;
}

// The burst's three stages. kClasses: the snapshot has traffic_classes,
// decided once per burst; the copy without them has none of the
// class path in it, so a gateway without classes pays nothing per packet.
// kLean: the snapshot has no IPv6 underlay (no node.underlay_ipv6, no IPv6
// appliance) and no listener resets idle flows, decided once per burst; its
// copy has neither's checks per packet.
template <bool kClasses, bool kLean>
[[gnu::noinline]] void runBurst(Dataplane& dp, WorkerState& w, rte_mbuf** pkts, uint16_t n,
                                const Snapshot* snap, uint64_t now_ns, BurstOutput& out) noexcept {
  Ctx c{dp, w, *snap, now_ns, out};
  const bool can_forward = !snap->listeners.empty();
  constexpr bool classes = kClasses;
  if constexpr (classes) c.setClassBurst();
  const StickinessMode stickiness = can_forward ? snap->listeners[0].stickiness
                                                : StickinessMode::kFiveTuple;

  // Stage 1: parse and sort every frame; key the ones to forward and the
  // ones returning from appliances (their inner packet).
  struct Fwd {
    rte_mbuf* m;
    ParsedPacket p;  // forward: the packet; return: its inner packet
    FlowRef ref;
    bool ret;        // returning from an appliance (ri is set)
    bool late;       // with classes: keyed, classified in stage 3 (keyOrClassify)
    ReturnInfo ri;
  };
  // Raw storage: Fwd is an aggregate, so an implicit-lifetime type; each field is written before it is read.
  alignas(Fwd) unsigned char fwd_mem[sizeof(Fwd) * kMaxBurst];
  Fwd* fwd = reinterpret_cast<Fwd*>(fwd_mem);
  const FlowKey* keys[kMaxBurst];
  uint32_t hashes[kMaxBurst];
  int32_t pos[kMaxBurst];
  uint32_t hints[kMaxBurst];
  uint16_t nf = 0;
  uint64_t rx_bytes = 0;  // of every packet, dropped ones too
  // The port views once (their count is a division by the view's size).
  const PortView* const ports = snap->ports.data();
  const size_t n_ports = snap->ports.size();
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = pkts[i];
    if (i + 1 < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void*));
    rx_bytes += m->pkt_len;
    if (m->nb_segs != 1) [[unlikely]] {
      drop(c, m, Counter::drop_multi_segment);
      continue;
    }
    const uint8_t* d = rte_pktmbuf_mtod(m, const uint8_t*);
    // Only frames to the port's own MAC go on (dataplane/ingress.h); shorter
    // frames have no destination to compare and fail the parse below.
    const bool port_known = m->port < n_ports;
    // Its view's address, as an integer (no pointer past the views is formed): read only when port_known.
    const PortView* pv = reinterpret_cast<const PortView*>(reinterpret_cast<uintptr_t>(ports) + m->port * sizeof(PortView));
    if (m->data_len >= 14 && (!port_known || !isOwnMac(d, *pv))) [[unlikely]] {
      Counter why;
      if (foreignFrameWanted(d, m->data_len, *snap, port_known ? pv : nullptr, why)) punt(c, m);
      else drop(c, m, why);
      continue;
    }
    // Fwd is an aggregate (implicit-lifetime, C++20): the storage holds one
    // already. The fast parser writes every field later read; the general
    // one starts from a fresh packet.
    Fwd& f = fwd[nf];
    ParsedPacket& p = f.p;
    // With an IPv6 underlay, an IPv6 appliance's returns too (the general parse cost them
    // ~190 instructions; in the lean copy the branch cost IPv4 2-3: docs/performance.md).
    // Only the general parser drops or finds ARP: its verdicts are read in its branch.
    if (!parseCommon(d, m->data_len, p) && (kLean || !parseCommon6(d, m->data_len, p))) [[unlikely]] {
      p = ParsedPacket{};
      Counter why = Counter::kCount;
      const ParseStatus st = parseFrame(d, m->data_len, p, why);
      if (st == ParseStatus::kDrop) {
        drop(c, m, why);
        continue;
      }
      if (st == ParseStatus::kArp) {
        if (arpWanted(d, m->data_len, *snap, pv->role)) punt(c, m);
        else drop(c, m, Counter::drop_arp_not_for_us);
        continue;
      }
    }
    const PortRole role = pv->role;  // parsed: at least 14 bytes, so port_known
    // Geneve or VXLAN to node.underlay_ipv6 is a return (before node.ipv6_addresses,
    // which may list the same address so that it is answered in ND).
    const bool geneve6 = !kLean && p.ip_version == 6 && isTunnel6ToUs(p, *snap);
    if (p.ip_version == 6 && !geneve6) {
      // Neighbor discovery is link-local: punted when it asks for us, never forwarded.
      NdVerdict nd = p.tuple.proto == kProtoIcmpv6 ? ndVerdict(d, p, *snap, role) : NdVerdict::kNotNd;
      const bool to_node = !snap->node_ipv6.empty() && isNodeIpv6(*snap, p.tuple.dst.b.data());
      if (nd != NdVerdict::kNotNd) [[unlikely]] {
        // The control thread answers solicitations for us and learns IPv6
        // appliances from their advertisements; other ND to our addresses
        // is the kernel's when it has a tap (answers to its solicitations).
        if (nd == NdVerdict::kPunt) punt(c, m);
        else if (to_node && dp.exception) forUs(c, m);
        else drop(c, m, Counter::drop_nd_not_for_us);
        continue;
      }
      if (to_node) [[unlikely]] {
        forUs(c, m);
        continue;
      }
    }
    // VXLAN groups' tunnel ports (none without VXLAN groups: one bit test); asked only
    // where read (a packet to forward: when UDP over IPv4 and not Geneve's port).
    auto isVxlan = [&] { return p.tuple.proto == kProtoUdp && snap->isVxlanPort(p.tuple.dport); };
    if (geneve6 || isGeneveToUs(p, snap->underlay_ip)) {
      const bool geneve = p.ip_version == 4 && p.tuple.proto == kProtoUdp && p.tuple.dport == kGenevePort;
      const bool vxlan = !geneve && isVxlan();
      if (!geneve && !geneve6 && !vxlan) forUs(c, m);
      else if (!acceptsReturns(role)) drop(c, m, Counter::drop_geneve_on_router_port);
      else if (vxlan) [[unlikely]] {
        // Its own branch: folded into Geneve's call it cost a Geneve return 28
        // instructions (bench/instruction_budget.json, "return").
        if (prepareReturnVxlan(c, m, p, f.p, f.ref, f.ri)) {
          f.m = m;
          f.ret = true;
          keys[nf] = &f.ref.key;
          hashes[nf] = f.ref.hash;
          ++nf;
        }
      } else if (prepareReturn<kLean>(c, m, p, f.p, f.ref, f.ri)) {
        f.m = m;
        f.ret = true;
        keys[nf] = &f.ref.key;
        hashes[nf] = f.ref.hash;
        ++nf;
      }
      continue;
    }
    // A port that faces only appliances takes nothing else in.
    if (!acceptsRouterTraffic(role)) [[unlikely]] {
      drop(c, m, Counter::drop_appliance_port_not_return);
      continue;
    }
    // Never wrap Geneve again: ours coming back (from our underlay address)
    // or Geneve on its way to one of our appliances.
    if ((p.ip_version == 4 && p.tuple.proto == kProtoUdp && (p.tuple.dport == kGenevePort || isVxlan()) &&
         (p.tuple.src.v4HostOrder() == snap->underlay_ip ||
          snap->applianceByIp(p.tuple.dst.v4HostOrder()) != kNoAppliance)) ||
        (!kLean && p.ip_version == 6 && isLoopTunnel6(p, *snap))) [[unlikely]] {
      drop(c, m, Counter::drop_loop_geneve);
      continue;
    }
    if (!can_forward) [[unlikely]] {
      drop(c, m, Counter::drop_no_server_group);
      continue;
    }
    if constexpr (classes) {
      if (!keyOrClassify(c, m, p, f.ref, f.late)) continue;
    } else {
      setRef(f.ref, p, stickiness, 0);
    }
    f.m = m;
    f.ret = false;
    keys[nf] = &f.ref.key;
    hashes[nf] = f.ref.hash;
    ++nf;
  }

  // Stage 2: look every key up at once (tag lines prefetched together, then
  // the candidate slots; an IPv4 flow's key and entry share its one line, so
  // a hit leaves the entry in cache for stage 3).
  // A miss also gets the slot its insert will claim, fetched for writing,
  // and the Maglev entry that picks its appliance is fetched here.
  if (nf) {
    const uint32_t misses = dp.flows->lookupBulk(keys, hashes, nf, pos, hints);
    if (misses == 0) {
      // Every key found: no Maglev entry to fetch.
    } else if constexpr (!classes) {
      const GroupView* ng = can_forward && snap->listeners[0].active < snap->groups.size()
                                ? &snap->groups[snap->listeners[0].active]
                                : nullptr;
      if (ng && !ng->maglev.empty())
        for (uint16_t i = 0; i < nf; ++i)
          if (pos[i] < 0 && !fwd[i].ret) rte_prefetch0(&ng->maglev[ng->maglevSlot(hashes[i])]);
    } else {
      // Each new flow's Maglev entry in its own listener's active group.
      for (uint16_t i = 0; i < nf; ++i) {
        if (pos[i] >= 0 || fwd[i].ret) continue;
        const ListenerView& lv = snap->listeners[originListener(fwd[i].ref.origin)];
        const GroupView* g = lv.active < snap->groups.size() ? &snap->groups[lv.active] : nullptr;
        if (g && !g->maglev.empty()) rte_prefetch0(&g->maglev[g->maglevSlot(hashes[i])]);
      }
    }
  }

  // Stage 3: route and encapsulate, or check and unwrap a return.
  for (uint16_t i = 0; i < nf; ++i) {
    if (fwd[i].ret) finishReturn(c, fwd[i].m, fwd[i].p, fwd[i].ref, fwd[i].ri, pos[i]);
    else if constexpr (kClasses) forwardClasses<kLean>(c, fwd[i].m, fwd[i].p, fwd[i].ref, pos[i], hints[i], fwd[i].late);
    else forward<false, kLean>(c, fwd[i].m, fwd[i].p, fwd[i].ref, pos[i], hints[i]);
  }

  // Never blocks: what the ring cannot take now is sent by the control
  // thread's refresh scan later.
  if (c.n_sync) {
    unsigned q = rte_ring_enqueue_burst(dp.sync, c.sync_events, c.n_sync, nullptr);
    if (q < c.n_sync) w.counters.inc(Counter::sync_queue_full, c.n_sync - q);
  }
  w.counters.inc(Counter::rx_bytes, rx_bytes);
  // Each packet on to_appliance was encapsulated (here or encapExtras); out starts at 0.
  w.counters.inc(Counter::encapsulated, out.n_appliance);
  w.counters.inc(Counter::returned, c.returned);
  w.counters.inc(Counter::tx_bytes, c.tx_bytes);
}

}  // namespace

void processBurst(Dataplane& dp, WorkerState& w, rte_mbuf** pkts, uint16_t n, uint64_t now_ns,
                  BurstOutput& out) noexcept {
  out.n_appliance = 0;
  out.n_router = 0;
  out.n_mirror = 0;
  if (n > kMaxBurst) n = kMaxBurst;  // the caller's contract; never write past the outputs
  w.counters.inc(Counter::rx_packets, n);
  const Snapshot* snap = dp.snapshot.load(std::memory_order_acquire);
  if (!snap) {
    uint64_t rx_bytes = 0;
    for (uint16_t i = 0; i < n; ++i) rx_bytes += pkts[i]->pkt_len;
    w.counters.inc(Counter::rx_bytes, rx_bytes);
    w.counters.inc(Counter::drop_no_server_group, n);
    rte_pktmbuf_free_bulk(pkts, n);
    return;
  }
  static constexpr decltype(&runBurst<false, false>) kRun[2][2] = {
      {runBurst<false, false>, runBurst<false, true>}, {runBurst<true, false>, runBurst<true, true>}};
  kRun[!snap->classes.empty()][!snap->has_underlay_ip6 && snap->by_ip6.empty() && !snap->reset_on_idle_any](
      dp, w, pkts, n, snap, now_ns, out);
}

}  // namespace gwlb::dp
