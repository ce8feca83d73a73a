// The return path's per-packet stages (dataplane/pipeline.cc's runBurst
// calls them for Geneve from an appliance): stage 1 checks the outer packet
// and keys the inner one, stage 3 checks the flow and unwraps. Inline into
// the burst loop, as the forward path's stages are. Worker-lcore code only;
// included by dataplane/pipeline.cc alone.
#pragma once

#include <rte_mbuf.h>

#include <cstring>

#include "common/fast_path.h"
#include "common/packet_parser.h"
#include "dataplane/flow_table.h"
#include "dataplane/move.h"
#include "dataplane/pipeline_ctx.h"

namespace gwlb::dp::burst {

// Return path, stage 1: checks the outer packet and its Geneve header and
// parses the inner packet into `in`, keyed by `ref`. False when it dropped it.
// `in` may be the storage of `outer`: what is needed of the outer packet is
// read before the inner one is parsed. kLean: the outer packet is IPv4.
template <bool kLean>
[[gnu::always_inline]] inline bool prepareReturn(Ctx& c, rte_mbuf* m, const ParsedPacket& outer, ParsedPacket& in, FlowRef& ref,
                   ReturnInfo& ri) noexcept {
  uint16_t server;
  const GroupView* gv = returnGroup(
      c, m, outer, kLean || outer.ip_version == 4,
      [](const Snapshot& s, const uint8_t* a) { return s.applianceByIp6(a); },
      Counter::drop_geneve_unknown_appliance, server);
  if (!gv) return false;
  const GroupView& g = *gv;

  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t gen_off = size_t(outer.l4_offset) + 8;
  const size_t end = size_t(outer.l3_offset) + outer.l3_len;
  // The header our encapsulation writes, echoed back with the group's VNI, and
  // the inner packet the fast parser takes: every check of the general way
  // passes (the exact header leaves none of its drops possible), so none is
  // made again; anything else goes the general way, where each check counts
  // its own drop.
  constexpr size_t kAwsInner = kGeneveBaseLen + kAwsOptionsLen, kPlainInner = kGeneveBaseLen;
  size_t inner_off;
  if (g.aws && isOwnGeneveAwsIpv4(f + gen_off, end - gen_off, g.vni, ri.cookie) &&
      parseCommonIpv4(f + gen_off + kAwsInner, end - gen_off - kAwsInner, 0, in)) [[likely]] {
    inner_off = gen_off + kAwsInner;
    ri.bypass = 0;  // none in the exact header (bypass_s is read only with one)
  } else if (!g.aws && !g.vxlan && isOwnGenevePlain(f + gen_off, end - gen_off, g.vni) &&
             parseCommon(f + gen_off + kPlainInner, end - gen_off - kPlainInner, in)) {
    inner_off = gen_off + kPlainInner;
    ri.bypass = 0;
  } else if (!prepareReturnGeneral(c, m, in, ri, g, f, gen_off, end, inner_off)) {
    return false;
  }
  if (!keyReturn(c, m, ParseStatus::kOk, in, g, inner_off, ref, ri)) return false;
  ri.appliance = server, ri.aws = g.aws, ri.vx_tunnel = -1;
  return true;
}

// Return path, stage 3: the flow looked up in the burst's bulk lookup (`pos`),
// checked against the appliance and cookie, unwrapped and sent back to the
// neighbour its direction came from.
[[gnu::always_inline]] inline void finishReturn(Ctx& c, rte_mbuf* m, const ParsedPacket& in, const FlowRef& ref,
                  const ReturnInfo& ri, int32_t pos) noexcept {
  const uint32_t geneve_len = m->pkt_len;  // as the appliance sent it, for its returned bytes
  FlowTable& ft = *c.dp.flows;
  // Concurrency rule R6 (docs/architecture.md "Flow entries: concurrency rules"):
  // the bulk lookup came before this burst's inserts.
  if (pos < 0 && c.insertedThisBurst(ref.hash)) pos = ft.lookup(ref.key, ref.hash);
  if (pos < 0) [[unlikely]] {
    if (ri.bypass) c.w.counters.inc(Counter::bypass_refused_not_flow_appliance);
    return returnWithoutFlow(c, m, in, c.s.groups[c.s.appliances[ri.appliance].group]);
  }
  FlowEntry& e = ft.entry(pos);
  const uint16_t server = ri.appliance;
  // Concurrency rule R1 (docs/architecture.md "Flow entries: concurrency rules"):
  // no route yet: the flow is still being created.
  uint64_t route = e.route.load(std::memory_order_acquire);
  if (!(route & kRouteSet)) {
    if (ri.bypass) c.w.counters.inc(Counter::bypass_refused_not_flow_appliance);
    return drop(c, m, Counter::drop_return_no_flow);
  }
  if (routeAppliance(route) != server || (ri.aws && routeCookie(route) != ri.cookie)) {
    if (ri.bypass) c.w.counters.inc(Counter::bypass_refused_not_flow_appliance);
    // The appliance the flow moved away from, still returning its packets.
    // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
    // `moved` is stored after the route, so for an instant this is wrong_appliance.
    uint64_t mv = e.moved.load(std::memory_order_acquire);
    if (mv && moveFrom(mv) == server && (!ri.aws || moveCookie(mv) == ri.cookie))
      return drop(c, m, Counter::drop_return_after_move);
    return drop(c, m, routeAppliance(route) != server ? Counter::drop_return_wrong_appliance
                                                   : Counter::drop_return_cookie_mismatch);
  }
  // Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
  // no neighbour learned for this direction: no L2 to return by.
  uint64_t peer, self;
  if (!c.dp.flows->neighbours().words(e.l2[ref.dir].load(std::memory_order_acquire), peer, self))
    return drop(c, m, Counter::drop_return_no_l2);
  // The flow's own appliance (address, cookie in aws format, and the
  // listener its group serves, which keyed the lookup) asks for a bypass.
  if (ri.bypass && !ref.fragment_key) [[unlikely]]
    grantBypass(c, e, route, c.s.groups[c.s.appliances[server].group].listener, ri.bypass_s,
                ri.bypass == 2, pos);

  // Strip everything up to the inner IP header and after the inner datagram,
  // then give it the L2 header of the neighbour it came from: byte-identical
  // at L3. One mbuf (stage 1 took no other), so the new start and length are
  // set directly. The L2 header takes the place of the last bytes of the outer
  // headers, never of headroom: the inner IP header is at least 50 bytes in
  // (outer Ethernet 14, IP 20, UDP 8, Geneve or VXLAN 8), past the 18 of a
  // tagged L2 header, so unlike an encapsulation this cannot run out of room
  // (docs/wire-format.md, the return's checks).
  const uint64_t vlan_kind = (self >> NeighbourTable::kVlanShift) & 3;  // none, 802.1Q, 802.1ad
  const uint16_t l2_len = vlan_kind ? 18 : 14;
  static_assert(14 + 20 + 8 + 8 >= 18);
  m->data_off = uint16_t(m->data_off + ri.l3_start - l2_len);
  m->data_len = uint16_t(in.l3_len + l2_len);
  m->pkt_len = m->data_len;
  uint8_t* h = rte_pktmbuf_mtod(m, uint8_t*);
  // The MACs are the words' low six bytes, in frame order (pack()): two
  // overlapping 8-byte stores, whose top two bytes each the next store
  // overwrites (our MAC, then the TPID or EtherType).
  std::memcpy(h, &peer, 8);
  std::memcpy(h + 6, &self, 8);
  const uint16_t et = in.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
  if (vlan_kind) {
    wr16(h + 12, vlan_kind == 1 ? 0x8100 : 0x88A8);
    wr16(h + 14, uint16_t(peer >> 48));  // the VLAN ID; priority 0
    wr16(h + 16, et);
  } else {
    wr16(h + 12, et);
  }
  e.last_seen.store(c.now);
  // Sent on external when travelling the flow's first packet's way (forward()).
  if (ri.vx_tunnel >= 0 &&
      (ri.vx_tunnel == kVxlanExternal) == (ref.dir == originDir(e.origin.load(std::memory_order_relaxed))))
      [[unlikely]]
    c.w.counters.inc(Counter::returned_vxlan_same_tunnel);
  m->port = uint16_t((self >> 48) & 0xFF);
  c.w.countReturned(server, geneve_len);
  ++c.returned;
  c.tx_bytes += m->pkt_len;
  c.out.to_router[c.out.n_router++] = m;
}

}  // namespace gwlb::dp::burst
