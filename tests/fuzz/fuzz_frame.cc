// Fuzz target 1: the ingress parser and flow-key extraction. Any bytes are a
// frame as a router port delivers it: gwlb::parseFrame, then the keys the
// pipeline derives from the parse (makeFlowKey under every stickiness mode,
// makeFragmentKey, flowHash). Invariants checked (docs/fuzzing.md):
//  - a drop names a drop counter; an ARP frame has only its L2 fields;
//  - a kOk parse lies inside the buffer: l3_offset + l3_len <= size, the L4
//    header (TCP 20+ bytes, UDP 8) inside the datagram, l3_len is what the IP
//    header says; addresses are the header's bytes; ports the L4 header's;
//  - parsing is deterministic, ignores L2 padding after the datagram, and
//    parseL3 of the same datagram without Ethernet gives the same result;
//  - a later fragment has no ports and no L4 offset;
//  - keys are symmetric: the reversed tuple (src<->dst, sport<->dport) gives
//    the same key and hash with the other direction, the key is canonical and
//    holds exactly the two endpoints; the fragment key carries the id;
//  - the worker's shortcuts (common/fast_path.h: parseCommon for IPv4,
//    parseCommon6 for IPv6 with UDP or TCP behind the fixed header, e.g. an
//    IPv6 appliance's returns), into storage an earlier packet left dirty:
//    what one accepts, parseFrame accepts with the same fields; only an IPv4
//    parse claims payloadSum's shortcut (l4_covers_payload), and only for
//    TCP, or UDP whose length is the whole IP payload.
#include <cstring>
#include <utility>

#include "common/fast_path.h"
#include "common/flow_key.h"
#include "common/packet_parser.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;

namespace {

bool isDropCounter(Counter c) {
  return size_t(c) < kNumCounters && kCounterInfo[size_t(c)].is_drop;
}

bool sameTuple(const L4Tuple& a, const L4Tuple& b) {
  return a.src == b.src && a.dst == b.dst && a.proto == b.proto && a.sport == b.sport &&
         a.dport == b.dport;
}

bool sameParse(const ParsedPacket& a, const ParsedPacket& b, size_t l3_shift) {
  return a.ip_version == b.ip_version && a.l3_len == b.l3_len &&
         (a.l4_offset == 0 ? b.l4_offset == 0 : size_t(a.l4_offset) == b.l4_offset + l3_shift) &&
         sameTuple(a.tuple, b.tuple) && a.is_fragment == b.is_fragment &&
         a.first_fragment == b.first_fragment && a.frag_id == b.frag_id &&
         a.icmp_error == b.icmp_error && a.icmp_type == b.icmp_type &&
         a.icmp_code == b.icmp_code && sameTuple(a.quoted, b.quoted);
}

// The fields a fast parse writes (the ICMP error's own are read only with
// icmp_error, which it leaves false).
bool sameFastParse(const ParsedPacket& a, const ParsedPacket& b) {
  return a.l3_offset == b.l3_offset && a.ether_type == b.ether_type && a.has_vlan == b.has_vlan &&
         a.vlan_tci == b.vlan_tci && a.vlan_tpid == b.vlan_tpid && a.ip_version == b.ip_version &&
         a.l3_len == b.l3_len && a.l4_offset == b.l4_offset && sameTuple(a.tuple, b.tuple) &&
         a.is_fragment == b.is_fragment && a.first_fragment == b.first_fragment &&
         a.frag_id == b.frag_id && a.icmp_error == b.icmp_error;
}

void checkFast(const uint8_t* d, size_t size, ParseStatus st, const ParsedPacket& p) {
  ParsedPacket fast;
  std::memset(static_cast<void*>(&fast), 0xA5, sizeof fast);
  fast.has_vlan = fast.is_fragment = fast.icmp_error = fast.l4_covers_payload = true;
  const bool v4 = parseCommon(d, size, fast);
  if (!v4 && !parseCommon6(d, size, fast)) return;
  FUZZ_CHECK(st == ParseStatus::kOk, "%s accepted what parseFrame refuses",
             v4 ? "parseCommon" : "parseCommon6");
  FUZZ_CHECK(sameFastParse(fast, p), "%s disagrees with parseFrame", v4 ? "parseCommon" : "parseCommon6");
  FUZZ_CHECK(fast.ip_version == (v4 ? 4 : 6), "fast parse of IP version %d", fast.ip_version);
  if (fast.l4_covers_payload) {
    FUZZ_CHECK(v4, "parseCommon6 claims payloadSum's IPv4 shortcut");
    FUZZ_CHECK(fast.tuple.proto == kProtoTcp ||
                   (fast.tuple.proto == kProtoUdp && rd16(d + fast.l4_offset + 4) == fast.l3_len - 20u),
               "l4_covers_payload for a segment that does not cover the payload");
  }
}

void checkKeys(const L4Tuple& t, uint8_t listener, uint32_t frag_id) {
  L4Tuple r = t;
  std::swap(r.src, r.dst);
  std::swap(r.sport, r.dport);
  for (StickinessMode mode : {StickinessMode::kFiveTuple, StickinessMode::kThreeTuple,
                              StickinessMode::kTwoTuple}) {
    KeyedPacket a = makeFlowKey(t, mode, listener);
    KeyedPacket b = makeFlowKey(r, mode, listener);
    KeyedPacket again = makeFlowKey(t, mode, listener);
    FUZZ_CHECK(a.key == again.key && a.dir == again.dir, "makeFlowKey is not deterministic");
    FUZZ_CHECK(a.key == b.key, "key not symmetric (mode %d)", int(mode));
    FUZZ_CHECK(flowHash(a.key) == flowHash(b.key), "hash not symmetric (mode %d)", int(mode));
    bool ports = mode == StickinessMode::kFiveTuple;
    bool same_ends = t.src == t.dst && (!ports || t.sport == t.dport);
    if (same_ends)
      FUZZ_CHECK(a.dir == 0 && b.dir == 0, "identical endpoints but dir %d/%d", a.dir, b.dir);
    else
      FUZZ_CHECK(a.dir <= 1 && b.dir == 1 - a.dir, "directions %d and %d", a.dir, b.dir);
    const FlowKey& k = a.key;
    FUZZ_CHECK(k.kind == KeyKind::kFlow && k.listener == listener && k.family == t.src.family,
               "key kind/listener/family");
    FUZZ_CHECK(ports || (k.port_a == 0 && k.port_b == 0), "ports in a 3/2-tuple key");
    FUZZ_CHECK(mode != StickinessMode::kTwoTuple || k.proto == 0, "proto in a 2-tuple key");
    FUZZ_CHECK(mode == StickinessMode::kTwoTuple || k.proto == t.proto, "proto lost");
    int c = std::memcmp(k.a, k.b, 16);
    FUZZ_CHECK(c < 0 || (c == 0 && k.port_a <= k.port_b), "key not canonical");
    const IpAddr& first = a.dir == 0 ? t.src : t.dst;
    const IpAddr& second = a.dir == 0 ? t.dst : t.src;
    FUZZ_CHECK(std::memcmp(k.a, first.b.data(), 16) == 0 &&
                   std::memcmp(k.b, second.b.data(), 16) == 0,
               "key endpoints are not the packet's");
    if (ports) {
      uint16_t pa = a.dir == 0 ? t.sport : t.dport, pb = a.dir == 0 ? t.dport : t.sport;
      FUZZ_CHECK(k.port_a == pa && k.port_b == pb, "key ports are not the packet's");
    }
  }
  FlowKey f = makeFragmentKey(t, frag_id, listener);
  FUZZ_CHECK(f.kind == KeyKind::kFragment && f.listener == listener && f.family == t.src.family,
             "fragment key kind/listener/family");
  FUZZ_CHECK((uint32_t(f.port_a) << 16 | f.port_b) == frag_id, "fragment key lost the id");
  FUZZ_CHECK(f.proto == (t.src.isV6() ? 0 : t.proto), "fragment key proto");
  FUZZ_CHECK(std::memcmp(f.a, t.src.b.data(), 16) == 0 && std::memcmp(f.b, t.dst.b.data(), 16) == 0,
             "fragment key addresses");
  FUZZ_CHECK(flowHash(f) == flowHash(&f, sizeof f, 0), "flowHash overloads disagree");
}

void checkOk(const uint8_t* d, size_t size, const ParsedPacket& p) {
  const size_t l3 = p.l3_offset;
  FUZZ_CHECK(l3 == (p.has_vlan ? 18u : 14u), "l3_offset %zu with has_vlan %d", l3, p.has_vlan);
  FUZZ_CHECK(l3 + p.l3_len <= size, "datagram [%zu, +%u) past the frame (%zu)", l3,
             unsigned(p.l3_len), size);
  FUZZ_CHECK(rd16(d + l3 - 2) == p.ether_type, "ether_type");
  const uint8_t* ip = d + l3;
  if (p.ip_version == 4) {
    FUZZ_CHECK(p.ether_type == kEtherTypeIpv4, "v4 under ether_type %04x", p.ether_type);
    FUZZ_CHECK(p.l3_len >= 20 && p.l3_len == rd16(ip + 2), "v4 l3_len %u", unsigned(p.l3_len));
    FUZZ_CHECK(size_t(ip[0] & 0x0F) * 4 <= p.l3_len, "IHL past the datagram");
    FUZZ_CHECK(p.tuple.src == IpAddr::v4(ip + 12) && p.tuple.dst == IpAddr::v4(ip + 16),
               "v4 addresses");
  } else {
    FUZZ_CHECK(p.ip_version == 6 && p.ether_type == kEtherTypeIpv6, "version %d", p.ip_version);
    FUZZ_CHECK(size_t(p.l3_len) == 40 + size_t(rd16(ip + 4)),
               "v6 l3_len %u but payload length %u", unsigned(p.l3_len), unsigned(rd16(ip + 4)));
    FUZZ_CHECK(p.tuple.src == IpAddr::v6(ip + 8) && p.tuple.dst == IpAddr::v6(ip + 24),
               "v6 addresses");
  }
  const size_t end = l3 + p.l3_len;
  if (p.is_fragment && !p.first_fragment) {
    FUZZ_CHECK(p.l4_offset == 0 && p.tuple.sport == 0 && p.tuple.dport == 0 && !p.icmp_error,
               "a later fragment has L4 fields");
    return;
  }
  const size_t l4 = p.l4_offset;
  FUZZ_CHECK(l4 >= l3 + (p.ip_version == 4 ? 20u : 40u) && l4 <= end, "l4_offset %zu outside [%zu, %zu]",
             l4, l3, end);
  if (p.tuple.proto == kProtoTcp) {
    FUZZ_CHECK(l4 + 20 <= end && l4 + size_t(d[l4 + 12] >> 4) * 4 <= end, "TCP header past the datagram");
  }
  if (p.tuple.proto == kProtoUdp) FUZZ_CHECK(l4 + 8 <= end, "UDP header past the datagram");
  if (p.tuple.proto == kProtoTcp || p.tuple.proto == kProtoUdp)
    FUZZ_CHECK(p.tuple.sport == rd16(d + l4) && p.tuple.dport == rd16(d + l4 + 2), "ports");
  if (p.icmp_error) {
    FUZZ_CHECK(p.tuple.proto == (p.ip_version == 4 ? kProtoIcmp : kProtoIcmpv6),
               "ICMP error with proto %d", p.tuple.proto);
    FUZZ_CHECK(l4 + 8 < end && d[l4] == p.icmp_type && d[l4 + 1] == p.icmp_code, "ICMP type/code");
    FUZZ_CHECK(p.quoted.src.family == p.ip_version && p.quoted.dst.family == p.ip_version,
               "quoted header of another family");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParsedPacket p;
  Counter why = Counter::kCount;
  ParseStatus st = parseFrame(data, size, p, why);

  ParsedPacket p2;
  Counter why2 = Counter::kCount;
  FUZZ_CHECK(parseFrame(data, size, p2, why2) == st, "parseFrame not deterministic");

  checkFast(data, size, st, p);

  switch (st) {
    case ParseStatus::kDrop:
      FUZZ_CHECK(isDropCounter(why), "kDrop with counter %u, not a drop reason", unsigned(why));
      FUZZ_CHECK(why2 == why, "drop reason not deterministic");
      break;
    case ParseStatus::kArp:
      FUZZ_CHECK(p.ether_type == kEtherTypeArp && p.l3_offset <= size &&
                     p.l3_offset == (p.has_vlan ? 18 : 14),
                 "ARP parse fields");
      break;
    case ParseStatus::kOk: {
      FUZZ_CHECK(sameParse(p, p2, 0) && p.l3_offset == p2.l3_offset, "parse not deterministic");
      checkOk(data, size, p);
      // L2 padding after the datagram changes nothing.
      size_t exact = size_t(p.l3_offset) + p.l3_len;
      ParsedPacket pe;
      Counter we;
      FUZZ_CHECK(parseFrame(data, exact, pe, we) == ParseStatus::kOk && sameParse(p, pe, 0),
                 "trailing padding changed the parse");
      // The same datagram without Ethernet (as aws-format Geneve carries it).
      ParsedPacket q;
      Counter wq;
      ParseStatus sq = parseL3(data + p.l3_offset, size - p.l3_offset, p.ether_type, q, wq);
      FUZZ_CHECK(sq == ParseStatus::kOk && sameParse(p, q, p.l3_offset),
                 "parseL3 disagrees with parseFrame (status %d)", int(sq));
      uint8_t listener = uint8_t(size);
      checkKeys(p.tuple, listener, p.frag_id);
      if (p.icmp_error) checkKeys(p.quoted, listener, p.frag_id);
      break;
    }
  }
  // The hash over raw bytes of any length (the rte_hash entry point).
  size_t n = size < 200 ? size : 200;
  FUZZ_CHECK(flowHash(data, uint32_t(n), uint32_t(size)) == flowHash(data, uint32_t(n), uint32_t(size)),
             "flowHash not deterministic");
  return 0;
}
