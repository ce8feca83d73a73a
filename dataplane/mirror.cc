// Copies for mirror groups (traffic_classes[].mirror), out of line: only
// packets of a mirrored class call it. The copy is a header mbuf (outer
// headers, gwlb's mirror option and, in ethernet format, the original's L2
// header) chained to an indirect mbuf that shares the original's data from
// its IP header on: the payload is never copied, and nothing of the original
// changes. What the original's own encapsulation writes later (its headroom
// and its L2 header) lies outside the shared bytes.
//
// Mirror option (class Snapshot::geneve_option_class: node.geneve_option_class, type kGwlbOptMirror,
// length 1, 4 bytes of data):
//   0                   1                   2                   3
//   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |  Flags      |R|   Reserved    |           Class id            |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  R: the packet travels opposite to its flow's first packet (flows without
//  an entry, bypassed or dropped: opposite to the key's address order).
//  Class id: the class's counter slot (`gwlbctl classes` shows it).
// Over IPv4 the UDP checksum is 0 (allowed, RFC 8926 section 3.3): a checksum
// would read the payload the copy exists to avoid touching. Over IPv6 it is
// computed (mirrorCopy says why).
#include <rte_mbuf.h>

#include <cstring>

#include "common/checksum.h"
#include "common/fast_path.h"
#include "dataplane/pipeline_ctx.h"

namespace gwlb::dp::burst {

void mirrorCopy(Ctx& c, rte_mbuf* m, const ParsedPacket& p, uint16_t slot, uint32_t hash,
                bool reverse) noexcept {
  const Snapshot& s = c.s;
  const Snapshot::MirrorView& mv = s.slot_mirror[slot];
  if (mv.sample > 1) {
    uint32_t& tick = c.w.mirror_tick[slot];
    if (++tick < mv.sample) return;
    tick = 0;
  }
  const uint16_t appliance = mv.group < c.n_groups ? s.groups[mv.group].maglevPick(hash) : kNoAppliance;
  if (appliance >= c.n_appliances) return c.w.counters.inc(Counter::mirror_drop_no_tool);
  const ApplianceSlot& sv = s.appliances[appliance];
  const EncapTemplate& t = sv.encap;
  if (!sv.routable || !sv.mac_known || t.len < kOuterL2L3L4Len + kGeneveBaseLen) [[unlikely]]
    return c.w.counters.inc(Counter::mirror_drop_no_tool);
  if (c.out.n_mirror >= kMaxBurst) [[unlikely]]
    return c.w.counters.inc(Counter::mirror_drop_no_mbuf);
  // What the copy carries: the inner L3 packet (aws) or frame (ethernet),
  // cut at `truncate` bytes (at least 64, so the L2 header always fits).
  size_t l2 = t.aws ? 0 : p.l3_offset;
  size_t l3 = p.l3_len;
  if (mv.truncate && l2 + l3 > mv.truncate) l3 = mv.truncate > l2 ? mv.truncate - l2 : 0;
  const size_t hdr = size_t(t.len) + 8 + l2;
  const size_t ip_len = hdr - 14 + l3;
  if (ip_len > s.underlay_mtu || l3 == 0) return c.w.counters.inc(Counter::mirror_drop_too_big);

  rte_mbuf* h = rte_pktmbuf_alloc(m->pool);
  if (!h) [[unlikely]]
    return c.w.counters.inc(Counter::mirror_drop_no_mbuf);
  rte_mbuf* d = rte_pktmbuf_clone(m, m->pool);
  uint8_t* o = d ? reinterpret_cast<uint8_t*>(rte_pktmbuf_append(h, uint16_t(hdr))) : nullptr;
  if (!o) [[unlikely]] {
    if (d) rte_pktmbuf_free(d);
    rte_pktmbuf_free(h);
    return c.w.counters.inc(Counter::mirror_drop_no_mbuf);
  }
  rte_pktmbuf_adj(d, p.l3_offset);
  if (d->data_len > l3) rte_pktmbuf_trim(d, uint16_t(d->data_len - l3));

  std::memcpy(o, t.bytes, t.len);
  uint8_t* ip = o + 14;
  const size_t ip_hdr = t.ipv6 ? 40 : 20;
  uint8_t* udp = ip + ip_hdr;
  uint8_t* g = udp + 8;
  const size_t udp_len = ip_len - ip_hdr;
  if (t.ipv6) {
    wr32(ip, 6u << 28 | ipv6TrafficClassLabel(rte_pktmbuf_mtod(m, const uint8_t*) + p.l3_offset,
                                             p.ip_version, hash));
    wr16(ip + 4, uint16_t(udp_len));
  } else {
    wr16(ip + 2, uint16_t(ip_len));
    wr16(ip + 10, csumFold(t.ip_sum + uint32_t(ip_len)));
  }
  wr16(udp, geneveSourcePort(hash));
  wr16(udp + 4, uint16_t(udp_len));
  wr16(udp + 6, 0);
  const size_t opt_words = (size_t(t.len) - kOuterL2L3L4Len - (t.ipv6 ? kOuterIpv6Extra : 0) -
                            kGeneveBaseLen) / 4 + 2;
  g[0] = uint8_t((g[0] & 0xC0) | (opt_words & 0x3F));
  if (t.aws) wr16(g + 2, p.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
  uint8_t* opt = o + t.len;
  wr16(opt, s.geneve_option_class);
  opt[2] = kGwlbOptMirror;
  opt[3] = 1;  // 4 bytes of data
  opt[4] = reverse ? 1 : 0;
  opt[5] = 0;
  wr16(opt + 6, mv.class_id);
  if (l2) std::memcpy(opt + 8, rte_pktmbuf_mtod(m, const uint8_t*), l2);
  if (t.ipv6) {
    // IPv6 allows a zero UDP checksum only to receivers set up for it (RFC
    // 6935/6936), and a kernel socket drops such datagrams: the copy gets a
    // real one. It reads the shared payload (up to `truncate` bytes) without
    // copying it; an untruncated packet's sum comes from its own L4 checksum.
    const uint8_t* f = rte_pktmbuf_mtod(m, const uint8_t*);
    uint32_t sum = l3 == p.l3_len ? payloadSum(f, p.l3_offset, p) : csumAdd(0, f + p.l3_offset, l3);
    sum = csumAdd(sum, udp, size_t(o + hdr - udp));  // even: the headers, options and L2 header
    uint64_t all = uint64_t(t.pseudo_sum) + udp_len + sum;
    all = (all & 0xFFFFFFFF) + (all >> 32);
    const uint16_t c = csumFold(uint32_t(all) + uint32_t(all >> 32));
    wr16(udp + 6, c == 0 ? 0xFFFF : c);
  }

  rte_pktmbuf_chain(h, d);  // two segments: never past RTE_MBUF_MAX_NB_SEGS
  h->port = s.underlay_port;
  c.w.countSent(appliance, h->pkt_len);
  c.w.counters.inc(Counter::mirrored);
  c.tx_bytes += h->pkt_len;
  c.out.to_mirror[c.out.n_mirror++] = h;
}

uint32_t encapExtras(Ctx& c, rte_mbuf* m, const ParsedPacket& p, const FlowRef& ref, FlowEntry& e,
                     const ApplianceSlot& sv, uint64_t route) noexcept {
  const Snapshot& s = c.s;
  const uint16_t slot = originClass(ref.origin);
  const uint32_t flow_hash = e.flow_hash.load(std::memory_order_relaxed);
  // The direction relative to the flow's first packet (FlowEntry::origin's low bit).
  const bool reverse = ref.dir != (e.origin.load(std::memory_order_relaxed) & 1);
  const bool tagged = !s.slot_tag.empty() && slot < kMaxClasses && s.slot_tag[slot].set;
  // The template forward() takes for this direction (a second one: the nsi
  // format's egress, a VXLAN group's internal tunnel).
  const EncapTemplate& t = reverse && sv.encap_internal.len != 0 ? sv.encap_internal : sv.encap;
  const bool aws = t.aws;
  const bool ipv6 = t.ipv6;  // the appliance's family decides the outer header's
  uint8_t* frame = rte_pktmbuf_mtod(m, uint8_t*);
  size_t payload = aws ? p.l3_len : size_t(p.l3_offset) + p.l3_len;
  const size_t hdr = encapHeaderLen(aws, ipv6);
  // Where the Geneve header starts: behind the outer IPv4 or IPv6 header.
  const size_t geneve_at = kOuterL2L3L4Len + (ipv6 ? kOuterIpv6Extra : 0);
  // The nsi format carries the tag in its own profile ID option (written in
  // place below); the others get gwlb's tag option after their options.
  const bool nsi_tag = tagged && t.nsi;
  const size_t tag_len = tagged && !nsi_tag ? kGwlbTagOptionLen : 0;
  const size_t outer_ip_len = hdr + tag_len - 14 + payload;
  if (outer_ip_len > s.underlay_mtu) [[unlikely]]
    return uint32_t(s.underlay_mtu - (hdr + tag_len - 14) - (aws ? 0 : p.l3_offset));
  maybeMirror(c, m, p, slot, flow_hash, reverse);
  // forward()'s encapsulation, with room for the tag option between the
  // template's headers and the payload: the template's writers take it as
  // payload, and the Geneve option length (the high byte of the header's
  // first word) grows by its words, summed here and written after.
  const bool offload = c.csum_offload;
  uint32_t sum = offload ? 0 : payloadSum(frame, aws ? p.l3_offset : 0, p);
  const uint16_t protocol = p.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6;
  if (aws) rte_pktmbuf_adj(m, p.l3_offset);
  if (m->data_len > payload) rte_pktmbuf_trim(m, uint16_t(m->data_len - payload));
  uint8_t* h = reinterpret_cast<uint8_t*>(rte_pktmbuf_prepend(m, uint16_t(hdr + tag_len)));
  if (!h) [[unlikely]] {
    drop(c, m, Counter::drop_no_headroom);
    return 0;
  }
  if (tag_len) {
    sum += writeTagOption(h + hdr, s.geneve_option_class, s.slot_tag[slot].value, reverse) +
           uint32_t(tag_len / 4) * 256;
    payload += tag_len;
  }
  // The profile ID's low half, summed now as payload, written after the template.
  const uint32_t profile = nsi_tag ? s.slot_tag[slot].value : 0;
  sum += (profile >> 16) + (profile & 0xFFFF);
  const uint16_t sport = geneveSourcePort(flow_hash);
  if (ipv6) {
    // As forward(): the inner IP header is at the payload's start (aws) or
    // p.l3_offset into it; the tag option sits between, in neither format's way.
    const uint32_t tcl =
        ipv6TrafficClassLabel(h + hdr + tag_len + (aws ? 0 : p.l3_offset), p.ip_version, flow_hash);
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
  if (tag_len) h[geneve_at] = uint8_t(h[geneve_at] + tag_len / 4);
  if (nsi_tag) wr32(h + geneve_at + kGeneveBaseLen + kNsiProfileAt + 4, profile);
  m->port = s.underlay_port;
  c.w.countSent(uint16_t(&sv - s.appliances.data()), m->pkt_len);
  c.tx_bytes += m->pkt_len;
  c.out.to_appliance[c.out.n_appliance++] = m;
  return 0;
}

}  // namespace gwlb::dp::burst
