// Traffic classes on the forward path, out of line: processBurst
// calls these only for bursts on a snapshot with traffic_classes, so a gateway
// without classes pays one predicted branch per burst for them.
#include <cstring>

#include "dataplane/pipeline_ctx.h"

namespace gwlb::dp::burst {

namespace {

// The listener and class a found entry was created under (FlowEntry::origin);
// false while its creator has not written them yet (R1) or when the listener
// is gone from the snapshot.
bool originOf(const FlowEntry& e, const Snapshot& s, FlowRef& r) noexcept {
  uint16_t o = e.origin.load(std::memory_order_relaxed);
  if (originClass(o) == kNoClass || originListener(o) >= s.listeners.size()) return false;
  r.origin = o;
  return true;
}

// A non-first fragment has no ports, so its class can differ from its flow's:
// it follows its datagram's fragment entry (left by the first fragment, which
// was classified with its ports), under the listener and class of its flow.
bool followFragment(Ctx& c, const ParsedPacket& p, FlowRef& ref) noexcept {
  FlowRef r;
  r.key = makeFragmentKey(p.tuple, p.frag_id, kFragmentListener);
  r.fragment_key = true;
  r.hash = flowHash(r.key);
  FlowTable& ft = *c.dp.flows;
  int32_t pos = ft.lookup(r.key, r.hash);
  if (pos < 0) return false;
  const FlowEntry& e = ft.entry(pos);
  if (!(e.route.load(std::memory_order_acquire) & kRouteSet) || !originOf(e, c.s, r)) return false;
  ref = r;
  return true;
}

// Bypass: back out of its port to its sender (MACs swapped, VLAN kept, L3 unchanged).
void bypass(Ctx& c, rte_mbuf* m) noexcept {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  uint8_t peer[6];
  std::memcpy(peer, f + 6, 6);
  std::memcpy(f + 6, f, 6);
  std::memcpy(f, peer, 6);
  c.w.counters.inc(Counter::bypassed);
  c.tx_bytes += m->pkt_len;
  c.out.to_router[c.out.n_router++] = m;
}

}  // namespace

// Concurrency rule R11 (docs/architecture.md "Flow entries: concurrency rules"):
// a flow's packet follows its entry under whichever listener holds it.
int32_t findAnyListener(Ctx& c, const ParsedPacket& p, FlowRef& ref,
                        StickinessMode coarsest) noexcept {
  const Snapshot& s = c.s;
  FlowTable& ft = *c.dp.flows;
  // The most specific key first: a listener keying by addresses only may hold
  // another flow between the same hosts.
  for (StickinessMode mode : {StickinessMode::kFiveTuple, StickinessMode::kThreeTuple,
                              StickinessMode::kTwoTuple}) {
    if (uint8_t(mode) > uint8_t(coarsest)) break;
    for (size_t l = 0; l < s.listeners.size(); ++l) {
      if (s.listeners[l].stickiness != mode) continue;
      FlowRef r = refFor(p, mode, uint8_t(l));
      int32_t pos = ft.lookup(r.key, r.hash);
      if (pos < 0 || !(ft.entry(pos).route.load(std::memory_order_acquire) & kRouteSet)) continue;
      // The entry's own listener and class; a fragment key names no listener.
      if (!originOf(ft.entry(pos), s, r)) {
        if (r.fragment_key) continue;
        r.origin = packOrigin(0, uint8_t(l), kNoClass);
      }
      ref = r;
      return pos;
    }
  }
  return -1;
}

bool classifyForward(Ctx& c, rte_mbuf* m, const ParsedPacket& p, FlowRef& ref) noexcept {
  const Snapshot& s = c.s;
  // An ICMP error follows the flow it quotes; a non-first fragment has no ports.
  const L4Tuple& t = p.icmp_error ? p.quoted : p.tuple;
  const bool ports = p.icmp_error || !p.is_fragment || p.first_fragment;
  // A non-first fragment follows its datagram's fragment entry, an ICMP error
  // the flow it quotes under whichever listener holds it: what they would
  // classify as alone (no ports; where the error arrived) may be another class.
  const bool follows = !ports ? followFragment(c, p, ref)
                              : p.icmp_error && findAnyListener(c, p, ref) >= 0;
  const uint16_t vlan = p.has_vlan ? uint16_t(p.vlan_tci & 0xFFF) : 0;
  if (follows) {  // the entry holds its class's counter slot (FlowEntry::origin)
    const uint16_t slot = originClass(ref.origin);
    if (slot < kMaxClasses) {
      c.w.countClass(slot, m->pkt_len);
      c.w.countClassKept(slot, m->pkt_len);  // sent on along the entry, whatever the class says now
    }
    return true;
  }
  const uint16_t cls = s.classes.classify(m->port, vlan, t, ports);
  if (cls != kNoClass) c.w.countClass(s.class_slot[cls], m->pkt_len);
  if (cls != kNoClass && s.classes.action(cls) == ClassVerdict::kInspect &&
      s.classes.listener(cls) < s.listeners.size()) {
    uint8_t l = s.classes.listener(cls);
    ref = refFor(p, s.listeners[l].stickiness, l);
    ref.origin = packOrigin(0, l, s.class_slot[cls]);
    return true;
  }
  if (findAnyListener(c, p, ref) >= 0) {
    // Rule R11: the flow's entry wins over a class that now bypasses or drops.
    if (cls != kNoClass) c.w.countClassKept(s.class_slot[cls], m->pkt_len);
    return true;
  }
  if (cls == kNoClass) {
    drop(c, m, ports ? Counter::drop_unclassified : Counter::drop_fragment_unknown_flow);
    return false;
  }
  if (!s.slot_mirror.empty() && s.classes.action(cls) != ClassVerdict::kInspect) [[unlikely]] {
    // No flow entry: the five-tuple key's hash (symmetric) picks the tool.
    const FlowRef r = refFor(p, StickinessMode::kFiveTuple, 0);
    maybeMirror(c, m, p, s.class_slot[cls], r.hash, r.dir != 0);
  }
  switch (s.classes.action(cls)) {
    case ClassVerdict::kBypass: bypass(c, m); break;
    case ClassVerdict::kDrop: drop(c, m, Counter::drop_class_drop); break;
    default: drop(c, m, Counter::drop_no_server_group); break;
  }
  return false;
}

bool classifyAndMark(Ctx& c, rte_mbuf* m, const ParsedPacket& p, FlowRef& ref, int32_t& pos,
                     uint32_t& hint) noexcept {
  const FlowKey key = ref.key;
  const bool inspect = classifyInspect(c, m, p, ref);
  if (!inspect && !classifyForward(c, m, p, ref)) return false;
  FlowTable& ft = *c.dp.flows;
  if (!(ref.key == key)) {  // another listener's entry (R11)
    pos = ft.lookup(ref.key, ref.hash);
    hint = FlowTable::kNoHint;
    return true;
  }
  if (!inspect || pos < 0) return true;
  // Concurrency rule R12 (docs/architecture.md "Flow entries: concurrency rules"):
  // marked only for the class the entry holds and the L2 its direction holds,
  // and unmarked again when that L2 changed while marking.
  FlowEntry& e = ft.entry(pos);
  if (!(e.route.load(std::memory_order_acquire) & kRouteSet) ||
      originClass(e.origin.load(std::memory_order_relaxed)) != originClass(ref.origin))
    return true;
  const uint16_t l2 = e.l2[ref.dir].load(std::memory_order_seq_cst);
  if (!sameL2(c, m, p, e, ref.dir)) return true;
  e.idle_timeout.markClass(c.s.class_gen, ref.dir);
  if (e.l2[ref.dir].load(std::memory_order_seq_cst) != l2) e.idle_timeout.clearClassDir(ref.dir);
  return true;
}

}  // namespace gwlb::dp::burst
