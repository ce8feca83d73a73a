// What the stages of one burst share (dataplane/pipeline.cc and the
// traffic-class path in dataplane/classify.cc): the burst's context, the
// packet's flow reference and how it is keyed. Worker-lcore code only.
#pragma once

#include <rte_mbuf.h>

#include "common/flow_key.h"
#include "common/packet_parser.h"
#include "dataplane/pipeline.h"

namespace gwlb::dp::burst {

struct Ctx {
  // A constructor, not aggregate initialisation: the per-burst scratch
  // arrays below are written before they are read and need no zeroing.
  Ctx(Dataplane& d, WorkerState& ws, const Snapshot& snap, uint64_t t, BurstOutput& o) noexcept
      : dp(d), w(ws), s(snap), now(t), out(o),
        n_appliances(snap.appliances.size() < kMaxApplianceIds ? snap.appliances.size() : kMaxApplianceIds),
        n_groups(snap.groups.size()), csum_offload(d.underlay_csum_offload) {}
  Dataplane& dp;
  WorkerState& w;
  const Snapshot& s;
  uint64_t now;
  BurstOutput& out;
  // The snapshot's server and group counts, the bounds every packet checks,
  // taken once per burst (servers: at most kMaxApplianceIds, the per-appliance
  // counters' size), and whether the NIC finishes the outer checksums.
  const size_t n_appliances, n_groups;
  const bool csum_offload;
  // Counters every packet touches, added to the worker's once per burst.
  // (Encapsulated packets are the burst's out.n_appliance.)
  uint64_t returned = 0, tx_bytes = 0;
  // Hashes of keys inserted in this burst: at most two per packet (a flow's
  // and its first fragment's, forward()), so the array never fills.
  // Concurrency rule R6 (docs/architecture.md "Flow entries: concurrency rules"):
  // a later packet's bulk-lookup miss with one of them is looked up again.
  // A 1,024-bit filter answers most misses without the scan (a new flow's
  // packet is a miss; at 32 inserts a burst, one miss in 64 scans).
  uint32_t inserted[kMaxBurst * 2];
  uint32_t n_inserted = 0;
  uint64_t inserted_filter[16] = {};
  static uint32_t filterBit(uint32_t hash) noexcept { return hash >> 22; }
  void noteInsert(uint32_t hash) noexcept {
    inserted[n_inserted++] = hash;
    inserted_filter[filterBit(hash) >> 6] |= 1ULL << (filterBit(hash) & 63);
  }
  bool insertedThisBurst(uint32_t hash) const noexcept {
    if (!(inserted_filter[filterBit(hash) >> 6] >> (filterBit(hash) & 63) & 1)) [[likely]]
      return false;
    for (uint32_t i = 0; i < n_inserted; ++i)
      if (inserted[i] == hash) return true;
    return false;
  }
  // The L2 (NeighbourTable::pack's words) this burst interned last, and its
  // index (0: none yet).
  uint64_t l2_peer = 0, l2_self = 0;
  uint16_t l2_idx = 0;
  // Flows this burst created or moved, for the fleet sync (Dataplane::sync);
  // at most one event per packet.
  void* sync_events[kMaxBurst];
  uint16_t n_sync = 0;
  void noteSync(int32_t pos, SyncEvent e) noexcept {
    if (dp.sync && n_sync < kMaxBurst) sync_events[n_sync++] = packSyncEvent(pos, e);
  }
  // With traffic classes: the class marks of the snapshot's generation by
  // direction (IdleTimeout::classMark), set once per burst (setClassBurst)
  // so that a packet's check is one mask and one compare (R12).
  uint32_t class_mark[2];
  // With traffic classes, also once per burst (keyOrClassify): 0 under
  // Snapshot::class_by_flow, else 1 (or'ed into a packet's own flags);
  // Snapshot::class_flow_origin, and its listener as the key holds it.
  uint8_t class_not_by_flow;
  uint16_t class_flow_origin;
  ListenerWord class_flow_listener{0};
  void setClassBurst() noexcept {
    class_mark[0] = IdleTimeout::classMark(s.class_gen, 0);
    class_mark[1] = IdleTimeout::classMark(s.class_gen, 1);
    class_not_by_flow = s.class_by_flow ? 0 : 1;
    class_flow_origin = s.class_flow_origin;
    class_flow_listener = ListenerWord(originListener(s.class_flow_origin));
  }
};

inline void drop(Ctx& c, rte_mbuf* m, Counter why) noexcept {
  c.w.counters.inc(why);
  rte_pktmbuf_free(m);
}

// A returning packet's appliance (by its outer source address: IPv4 when
// `v4`, else byIp6(snapshot, address)) into `server`, and its group; null
// after counting the drop: no routable appliance there (`unknown`, each
// format its own counter), an outer fragment, or a group the snapshot lacks.
// Both return formats (dataplane/pipeline_return.h, return_vxlan.cc) start here.
template <typename ByIp6>
[[gnu::always_inline]] inline const GroupView* returnGroup(Ctx& c, rte_mbuf* m, const ParsedPacket& outer, bool v4,
                                                           ByIp6 byIp6, Counter unknown, uint16_t& server) noexcept {
  const Snapshot& s = c.s;
  server = v4 ? s.applianceByIp(outer.tuple.src.v4HostOrder()) : byIp6(s, outer.tuple.src.b.data());
  // kNoAppliance is past every id (n_appliances <= kMaxApplianceIds).
  static_assert(kMaxApplianceIds <= kNoAppliance);
  if (server >= c.n_appliances || !s.appliances[server].routable) return drop(c, m, unknown), nullptr;
  if (outer.is_fragment) return drop(c, m, Counter::drop_bad_fragment), nullptr;
  const ApplianceSlot& sv = s.appliances[server];
  if (sv.group >= c.n_groups) return drop(c, m, Counter::drop_no_server_group), nullptr;
  return &s.groups[sv.group];
}

// A flow moved to another appliance (rebalance, a SYN off a reset appliance).
inline void countMove(Ctx& c, MoveReason why) noexcept {
  c.w.counters.inc(Counter::flows_rebalanced);
  switch (why) {
    case MoveReason::kUnhealthy: c.w.counters.inc(Counter::flows_rebalanced_unhealthy); break;
    case MoveReason::kDrainTimeout: c.w.counters.inc(Counter::flows_rebalanced_drain_timeout); break;
    case MoveReason::kRegionFailover: c.w.counters.inc(Counter::flows_rebalanced_region); break;
    default: c.w.counters.inc(Counter::flows_rebalanced_removed); break;
  }
}

// TCP resets (dataplane/resets.cc, send_tcp_reset; docs/product-rules.md
// section 2), out of line: only packets of flows that may not continue call them.
// Drops the TCP segment and sends its sender the RST it accepts
// (common/tcp_reset.h), built in the segment's own mbuf and sent out the port
// it came in on; bounded by the worker's bucket. Never an RST for an RST.
void sendReset(Ctx& c, rte_mbuf* m, const ParsedPacket& p, ResetReason why) noexcept;
// A packet of an existing flow `e` (route `route`, listener `listener`) whose
// appliance resets its flows or whose listener resets idle ones: false when it
// was consumed (an RST sent, or dropped); true when it goes on, `route` updated
// (a SYN, which starts a connection, moves the flow to `ng`'s choice in service
// and is noted for the fleet sync at `pos` when >= 0).
// Appliance-requested bypass (dataplane/appliance_bypass.cc; docs/product-rules.md
// "Appliance-requested bypass"), out of line: only bypassed flows and
// returns with gwlb's bypass option call them.
// A packet of a flow whose route (`route`, updated) is bypassed: true when it
// was sent straight back; false when the bypass ended (its time, its
// listener no longer allowing it, its appliance gone) and the packet goes on
// to inspection.
bool applianceBypass(Ctx& c, rte_mbuf* m, FlowEntry& e, uint64_t& route, int32_t pos) noexcept;
// A valid return of the flow's own appliance (route `route`) that asked for a
// bypass of `seconds` (malformed: a bad option) under listener `listener`:
// grants it (one CAS on the route) or counts why not.
void grantBypass(Ctx& c, FlowEntry& e, uint64_t route, uint8_t listener, uint32_t seconds,
                 bool malformed, int32_t pos) noexcept;

bool resetOrGoOn(Ctx& c, rte_mbuf* m, const ParsedPacket& p, FlowEntry& e, uint8_t listener,
                 const GroupView* ng, int32_t pos, uint64_t& route) noexcept;

// Which table entry a packet belongs to, and in which direction it travels.
struct FlowRef {
  FlowKey key;
  uint32_t hash = 0;
  uint8_t dir = 0;
  bool fragment_key = false;
  // With traffic classes only (set by classifyForward, read by the class
  // path): the listener and class the packet goes to, as packOrigin packs
  // them (a fragment key names no listener). Left unset without classes.
  uint16_t origin;
};
static_assert(sizeof(FlowRef) == 48, "FlowRef: the key and one word");

// The key of a packet: an ICMP error belongs to the flow it quotes (travelling
// opposite to the quoted packet); a non-first fragment under 5-tuple
// stickiness belongs to its datagram's fragment entry (its ports are in the
// first fragment only).
inline constexpr uint8_t kFragmentListener = 0;

[[gnu::always_inline]] inline void setRef(FlowRef& r, const ParsedPacket& p, StickinessMode mode,
                                          uint8_t listener) noexcept {
  if (!p.icmp_error && p.is_fragment && !p.first_fragment && mode == StickinessMode::kFiveTuple) {
    // No listener (kFragmentListener): found whatever it would classify as.
    r.key = makeFragmentKey(p.tuple, p.frag_id, kFragmentListener);
    r.fragment_key = true;
    r.dir = 0;
  } else {
    r.fragment_key = false;
    const L4Tuple& t = p.icmp_error ? p.quoted : p.tuple;
    if (t.src.family == 4) [[likely]] {
      r.hash = makeFlowKeyV4(t, mode, listener, r.key, r.dir);
      r.dir ^= p.icmp_error ? 1 : 0;
      return;
    }
    KeyedPacket kp = makeFlowKey(t, mode, listener);
    r.key = kp.key;
    r.dir = uint8_t(kp.dir ^ (p.icmp_error ? 1 : 0));
  }
  r.hash = flowHash(r.key);
}
// setRef into a fresh FlowRef (callers that keep a copy).
[[gnu::always_inline]] inline FlowRef refFor(const ParsedPacket& p, StickinessMode mode, uint8_t listener) noexcept {
  FlowRef r;
  setRef(r, p, mode, listener);
  return r;
}

// The traffic classes' common case, inline: a whole packet (no fragment, no
// ICMP error) of an inspect class with its listener. Counts the class and
// keys the packet; false leaves everything else to classifyForward.
[[gnu::always_inline]] inline bool classifyInspect(Ctx& c, rte_mbuf* m, const ParsedPacket& p,
                                                   FlowRef& ref) noexcept {
  if (p.icmp_error | p.is_fragment) return false;
  const Snapshot& s = c.s;
  const uint16_t cls = s.classes.classify(m->port, uint16_t(p.vlan_tci & (p.has_vlan ? 0xFFF : 0)), p.tuple);
  if (cls == kNoClass) return false;  // else cls < kMaxClasses (routeClasses)
  const Snapshot::ClassRoute r = s.class_route[cls];
  if (!r.inspect) return false;
  c.w.countClass(r.slot, m->pkt_len);
  if (p.tuple.src.family == 4) [[likely]] {  // refFor's IPv4 case, built in place
    ref.hash = makeFlowKeyV4(p.tuple, StickinessMode(r.stickiness), r.listener, ref.key, ref.dir);
    ref.fragment_key = false;
  } else {
    ref = refFor(p, StickinessMode(r.stickiness), r.listener);
  }
  ref.origin = r.origin;
  return true;
}

// A frame's L2 as NeighbourTable packs it (its port and VLAN with it).
[[gnu::always_inline]] inline bool packL2(const rte_mbuf* m, const uint8_t* frame, const ParsedPacket& p,
                                          uint64_t& peer, uint64_t& self) noexcept {
  return p.has_vlan ? NeighbourTable::pack(frame, m->port, p.vlan_tpid, p.vlan_tci, peer, self)
                    : NeighbourTable::packUntagged(frame, m->port, peer, self);
}

// Records where this direction's packets come from: the first packet's L2,
// then any change (a router failover, a neighbour's new MAC or port), so
// returns follow the neighbour that sends now. Unchanged L2 costs one index
// load and two compares with the interned neighbour. A neighbour that cannot
// be recorded (its port holds NeighbourTable::kPortLimit, or no free slot
// near its home) leaves the direction's L2 as it was, and is counted.
// Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
// the neighbour is interned (immutable once ready), then its index stored with release.
// True when it replaced an L2 learned before.
[[gnu::always_inline]] inline bool learnDirection(Ctx& c, NeighbourTable& nt, std::atomic<uint16_t>& slot,
                           const rte_mbuf* m, const uint8_t* frame, const ParsedPacket& p) noexcept {
  uint64_t peer, self;
  if (!packL2(m, frame, p, peer, self)) return false;
  uint16_t cur = slot.load(std::memory_order_acquire);
  if (nt.holds(cur, peer, self)) [[likely]]
    return false;
  // A burst's new flows mostly come from one neighbour: the L2 this burst
  // interned last is reused while its slot is ready, without a probe.
  uint16_t idx = c.l2_idx;
  if (peer != c.l2_peer || self != c.l2_self || !nt.ready(idx)) {
    NeighbourTable::Refusal why;
    idx = nt.intern(peer, self, why);
    if (idx == 0) [[unlikely]] {
      c.w.counters.inc(why == NeighbourTable::Refusal::kPortLimit ? Counter::neighbour_port_limit
                                                                  : Counter::neighbour_table_full);
      return false;
    }
    c.l2_peer = peer;
    c.l2_self = self;
    c.l2_idx = idx;
  }
  slot.store(idx, std::memory_order_release);
  if (cur != 0) c.w.counters.inc(Counter::return_l2_changed);
  return cur != 0;
}

// Snapshot::class_by_flow, stage 1: a whole packet keyed by the five-tuple
// under the one listener inspect classes go to (`origin`: class_flow_origin),
// its class left to stage 3 (classifyByFlow).
// `listener`: originListener(origin) as a ListenerWord, taken once per burst.
[[gnu::always_inline]] inline void keyForFlowClass(FlowRef& ref, const ParsedPacket& p, uint16_t origin,
                                                   ListenerWord listener) noexcept {
  ref.origin = origin;
  if (p.tuple.src.family == 4) [[likely]] {
    ref.hash = makeFlowKeyV4(p.tuple, StickinessMode::kFiveTuple, listener, ref.key, ref.dir);
    ref.fragment_key = false;
  } else {
    ref = refFor(p, StickinessMode::kFiveTuple, originListener(origin));
    ref.origin = origin;
  }
}

// Concurrency rule R12 (docs/architecture.md "Flow entries: concurrency rules"):
// whether the packet's L2 (port and VLAN with it) is the one its direction's
// class mark was made with.
[[gnu::always_inline]] inline bool sameL2(const Ctx& c, const rte_mbuf* m, const ParsedPacket& p,
                                          const FlowEntry& e, uint8_t dir) noexcept {
  uint64_t peer, self;
  if (!packL2(m, rte_pktmbuf_mtod(m, const uint8_t*), p, peer, self)) return false;
  return c.dp.flows->neighbours().holds(e.l2[dir].load(std::memory_order_seq_cst), peer, self);
}

// classifyByFlow's packets whose entry does not give their class (a new flow,
// another generation of classes, another L2): classified as one by one
// (classifyInspect, classifyForward), `pos` and `hint` looked up again when
// that keyed it otherwise, and the entry marked when the class is its own.
// False when the packet was handled (bypassed, dropped). Out of line (classify.cc).
bool classifyAndMark(Ctx& c, rte_mbuf* m, const ParsedPacket& p, FlowRef& ref, int32_t& pos,
                     uint32_t& hint) noexcept;

// Snapshot::class_by_flow, stage 3: a packet keyed by keyForFlowClass takes
// its class from its flow's entry when the entry's class mark holds for its
// direction, the snapshot's class generation and its L2 (R12): no
// classification. Returns that entry (at `pos`), its class counted and
// `ref.origin` its own; null leaves the packet to classifyAndMark. The
// packet's L2 is then the one its direction holds: nothing for forward() to
// learn.
[[gnu::always_inline]] inline FlowEntry* classifyByFlow(Ctx& c, const rte_mbuf* m, const ParsedPacket& p, FlowRef& ref,
                                                     int32_t pos) noexcept {
  if (pos < 0) [[unlikely]]
    return nullptr;
  FlowEntry& e = c.dp.flows->entry(pos);
  if (!e.idle_timeout.classMarked(c.class_mark[ref.dir])) [[unlikely]]
    return nullptr;
  const uint32_t o = e.origin.load(std::memory_order_relaxed);
  // originClass's slot, or past kMaxClasses for none (o >> 5 == 0 wraps).
  const uint32_t slot = (o >> 5) - 1u;
  if (slot >= kMaxClasses || !sameL2(c, m, p, e, ref.dir)) [[unlikely]]
    return nullptr;
  c.w.countClass(slot, m->pkt_len);
  ref.origin = uint16_t(o & ~1u);
  return &e;
}

// The class marks a new flow's entry is created with (R12): those of its
// creating packet's direction when that whole packet was classified as the
// class the entry records, under Snapshot::class_by_flow; else none.
[[gnu::always_inline]] inline uint32_t creationClassMark(const Snapshot& s, const ParsedPacket& p,
                                                         const FlowRef& ref) noexcept {
  return s.class_by_flow && !p.is_fragment && !p.icmp_error && originClass(ref.origin) < kMaxClasses
             ? IdleTimeout::classMark(s.class_gen, ref.dir)
             : 0;
}

// Mirror groups and tags (dataplane/mirror.cc), out of line: only packets
// on a snapshot with a mirrored or tagged class (slot_mirror or slot_tag not empty) call them.
// mirrorCopy: sends a copy of `m` (parsed `p`, unchanged so far) to one
// appliance of the mirror group of the class with counter slot `slot`,
// picked by `hash` (the flow's symmetric hash); `reverse`: the mirror
// option's direction bit. A copy that cannot be sent is counted
// (mirror_drop_*), never queued; `m` is not changed.
void mirrorCopy(Ctx& c, rte_mbuf* m, const ParsedPacket& p, uint16_t slot, uint32_t hash,
                bool reverse) noexcept;
// The rest of forward() for a packet of flow entry `e` (route `route`) to
// appliance `sv` on a snapshot with a mirrored or tagged class: the copy when
// its class is mirrored (before the original is wrapped: the copy shares its
// bytes from the IP header on), then the original wrapped for `sv` with, when
// its class is tagged, gwlb's tag option after the template's options.
// Returns 0 when `m` was handled (sent or dropped), else the inner MTU of the
// too-big error the caller sends in its place.
uint32_t encapExtras(Ctx& c, rte_mbuf* m, const ParsedPacket& p, const FlowRef& ref, FlowEntry& e,
                     const ApplianceSlot& sv, uint64_t route) noexcept;
// mirrorCopy when the class is mirrored: one predicted branch when no class is.
[[gnu::always_inline]] inline void maybeMirror(Ctx& c, rte_mbuf* m, const ParsedPacket& p, uint16_t slot,
                                               uint32_t hash, bool reverse) noexcept {
  if (c.s.slot_mirror.empty()) [[likely]]
    return;
  if (slot < kMaxClasses && c.s.slot_mirror[slot].group != kNoGroup) mirrorCopy(c, m, p, slot, hash, reverse);
}

// The traffic-class path (dataplane/classify.cc), out of line: only bursts on
// a snapshot with traffic_classes call it.
// With traffic_classes: the class keys the packet (inspect) or bypasses or drops
// it, unless its flow has an entry (R11). False when the packet was handled here.
bool classifyForward(Ctx& c, rte_mbuf* m, const ParsedPacket& p, FlowRef& ref) noexcept;
// The entry of this packet's flow under any listener (R11), or -1; sets `ref`.
// Only listeners keying at least as finely as `coarsest` (a new 5-tuple flow
// is not another listener's flow because it joins the same two hosts).
int32_t findAnyListener(Ctx& c, const ParsedPacket& p, FlowRef& ref,
                        StickinessMode coarsest = StickinessMode::kTwoTuple) noexcept;

// Stage 1 with classes: a whole packet under Snapshot::class_by_flow is
// keyed (keyForFlowClass) and `late` set: its flow's entry gives its class in
// stage 3; any other packet is classified now. False when it was handled here.
[[gnu::always_inline]] inline bool keyOrClassify(Ctx& c, rte_mbuf* m, const ParsedPacket& p, FlowRef& ref,
                                                 bool& late) noexcept {
  const uint8_t other = uint8_t(p.icmp_error | p.is_fragment) | c.class_not_by_flow;
  late = other == 0;
  if (other == 0) return keyForFlowClass(ref, p, c.class_flow_origin, c.class_flow_listener), true;
  return classifyInspect(c, m, p, ref) || classifyForward(c, m, p, ref);
}

// What stage 1 keeps of a returned packet for stage 3 (the flow's check and
// the unwrap), beside its inner packet and key.
struct ReturnInfo {
  uint16_t appliance;     // the appliance it came from
  uint32_t cookie;     // aws format: the cookie it carried
  uint16_t l3_start;   // offset of the inner IP header in the frame
  bool aws;
  int8_t vx_tunnel;    // VXLAN: the tunnel it came back on (VxlanTunnel); -1: Geneve
  // gwlb's bypass option: 0 none, 1 a request of bypass_s seconds, 2 malformed.
  uint8_t bypass;
  uint32_t bypass_s;
};

// The burst's cold paths (cold_paths.cc). A returned packet without a flow:
// a forwarding-check probe goes to the control thread, anything else is
// drop_return_no_flow.
void returnWithoutFlow(Ctx& c, rte_mbuf* m, const ParsedPacket& in, const GroupView& g) noexcept;
// Return path, stage 1's last step for every format: the inner packet `in`
// (parsed with status `ps`, at `inner_off` in the frame) keyed by its
// appliance's group `g`; `ri` takes the inner IP header's offset (the caller
// sets the rest). False when it handled the packet (malformed, or a group
// without listener).
[[gnu::always_inline]] inline bool keyReturn(Ctx& c, rte_mbuf* m, ParseStatus ps, const ParsedPacket& in,
                                             const GroupView& g, size_t inner_off, FlowRef& ref,
                                             ReturnInfo& ri) noexcept {
  if (ps != ParseStatus::kOk) return drop(c, m, Counter::drop_return_inner_malformed), false;
  if (g.listener == kNoListener) [[unlikely]]
    return returnWithoutFlow(c, m, in, g), false;
  setRef(ref, in, g.stickiness, g.listener);
  ri.l3_start = uint16_t(inner_off + in.l3_offset);
  return true;
}
// To the control thread (ARP, neighbor solicitations for us).
void punt(Ctx& c, rte_mbuf* m) noexcept;
// To the kernel through the control thread and the port's tap, when the
// exception path is on; else dropped (drop_not_for_us).
void forUs(Ctx& c, rte_mbuf* m) noexcept;
// An opening SYN on an entry idle past half its timeout: a reused 5-tuple.
void reopenIfStale(Ctx& c, FlowEntry& e, int32_t pos) noexcept;
// An inner packet too big for the underlay MTU: ICMP error or drop_too_big.
void tooBig(Ctx& c, rte_mbuf* m, const ParsedPacket& p, uint32_t inner_mtu) noexcept;

// Return path, stage 1 for a Geneve header other than the one our
// encapsulation writes (return_geneve.cc): parseGeneve() and the checks in
// their order, then the inner packet by the general parsers. f[gen_off ..
// end) is the outer UDP payload; `in` may be the outer packet's storage (not
// read). Sets inner_off and ri's cookie and bypass fields; false when it
// dropped the packet. The caller keys it.
bool prepareReturnGeneral(Ctx& c, rte_mbuf* m, ParsedPacket& in, ReturnInfo& ri, const GroupView& g,
                          uint8_t* f, size_t gen_off, size_t end, size_t& inner_off) noexcept;
// Return path, stage 1 for a VXLAN group's appliance (return_vxlan.cc); false
// when it dropped the packet.
bool prepareReturnVxlan(Ctx& c, rte_mbuf* m, const ParsedPacket& outer, ParsedPacket& in, FlowRef& ref,
                        ReturnInfo& ri) noexcept;

}  // namespace gwlb::dp::burst
