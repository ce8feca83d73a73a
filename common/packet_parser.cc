#include "common/packet_parser.h"

namespace gwlb {
namespace {

// Types that quote the packet they answer: unreachable, source quench,
// redirect, time exceeded, parameter problem.
bool isIcmpv4Error(uint8_t type) {
  return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
}
bool isIcmpv6Error(uint8_t type) { return type >= 1 && type <= 4; }
bool isIcmpv4Echo(uint8_t type) { return type == 0 || type == 8; }
bool isIcmpv6Echo(uint8_t type) { return type == 128 || type == 129; }

bool isIpv6ExtHeader(uint8_t nh) {
  return nh == 0 || nh == 43 || nh == 44 || nh == 51 || nh == 60;
}

// Result of walking one IP header (v4 or v6 with extension headers).
struct IpWalk {
  uint8_t proto = 0;
  size_t l4 = 0;         // offset of the transport header
  size_t end = 0;        // offset one past the datagram (from its length field)
  bool fragment = false;
  bool first = false;
  uint32_t frag_id = 0;
};

// Walks the IP header at p[0..len). `strict_len`: the datagram must fit in len
// (true for packets we forward; false for a header quoted in an ICMP error,
// which is cut short on purpose).
bool walkIp(const uint8_t* p, size_t len, uint8_t version, L4Tuple& t, IpWalk& w,
            bool strict_len, Counter& drop) {
  if (version == 4) {
    if (len < 20) return drop = Counter::drop_truncated_l3, false;
    if ((p[0] >> 4) != 4) return drop = Counter::drop_bad_ip_version, false;
    size_t ihl = size_t(p[0] & 0x0F) * 4;
    if (ihl < 20 || ihl > len) return drop = Counter::drop_bad_ihl, false;
    size_t total = rd16(p + 2);
    if (total < ihl) return drop = Counter::drop_bad_ip_length, false;
    if (strict_len && total > len) return drop = Counter::drop_bad_ip_length, false;
    uint16_t frag = rd16(p + 6);
    size_t offset = size_t(frag & 0x1FFF) * 8;
    bool mf = frag & 0x2000;
    w.fragment = mf || offset != 0;
    w.first = offset == 0;
    w.frag_id = rd16(p + 4);
    if (w.fragment && offset + (total - ihl) > 65535) return drop = Counter::drop_bad_fragment, false;
    w.proto = p[9];
    w.l4 = ihl;
    w.end = total;
    t.src = IpAddr::v4(p + 12);
    t.dst = IpAddr::v4(p + 16);
    t.proto = w.proto;
    return true;
  }
  if (len < 40) return drop = Counter::drop_truncated_l3, false;
  if ((p[0] >> 4) != 6) return drop = Counter::drop_bad_ip_version, false;
  size_t total = 40 + size_t(rd16(p + 4));
  if (strict_len && total > len) return drop = Counter::drop_bad_ip_length, false;
  t.src = IpAddr::v6(p + 8);
  t.dst = IpAddr::v6(p + 24);
  size_t limit = strict_len ? total : len;
  uint8_t nh = p[6];
  size_t off = 40;
  int n = 0;
  while (isIpv6ExtHeader(nh)) {
    if (++n > kMaxIpv6ExtHeaders || off + 8 > limit)
      return drop = Counter::drop_ipv6_ext_header_chain, false;
    const uint8_t* h = p + off;
    size_t hlen;
    if (nh == 44) {  // fragment header: fixed 8 bytes
      uint16_t fo = rd16(h + 2);
      size_t offset = size_t(fo >> 3) * 8;
      w.fragment = true;
      w.first = offset == 0;
      w.frag_id = rd32(h + 4);
      size_t frag_payload = total > off + 8 ? total - off - 8 : 0;
      if (offset + frag_payload > 65535) return drop = Counter::drop_bad_fragment, false;
      hlen = 8;
    } else if (nh == 51) {  // AH: length in 4-byte words, minus 2
      hlen = (size_t(h[1]) + 2) * 4;
    } else {
      hlen = (size_t(h[1]) + 1) * 8;
    }
    if (off + hlen > limit) return drop = Counter::drop_ipv6_ext_header_chain, false;
    nh = h[0];
    off += hlen;
    if (w.fragment && !w.first) break;  // the rest belongs to the first fragment
  }
  w.proto = nh;
  w.l4 = off;
  w.end = total;
  t.proto = nh;
  return true;
}

// Reads the ports (or ICMP echo identifier) at p[0..len). Returns false when
// the header needed for the key is cut short.
bool readPorts(const uint8_t* p, size_t len, uint8_t proto, uint8_t version, L4Tuple& t) {
  switch (proto) {
    case kProtoTcp:
    case kProtoUdp:
    case 132:  // SCTP
    case 136:  // UDP-Lite
      if (len < 4) return false;
      t.sport = rd16(p);
      t.dport = rd16(p + 2);
      return true;
    case kProtoIcmp:
    case kProtoIcmpv6: {
      if (len < 8) return false;
      bool echo = (proto == kProtoIcmp && version == 4) ? isIcmpv4Echo(p[0]) : isIcmpv6Echo(p[0]);
      if (echo) t.sport = t.dport = rd16(p + 4);
      return true;
    }
    default:
      return true;  // no ports: keyed on addresses and protocol
  }
}

ParseStatus parseIp(const uint8_t* p, size_t len, uint8_t version, size_t base,
                    ParsedPacket& out, Counter& drop) {
  IpWalk w;
  if (!walkIp(p, len, version, out.tuple, w, true, drop)) return ParseStatus::kDrop;
  // l3_len and l4_offset are 16-bit: an IPv6 datagram of 65575 bytes (payload
  // length 65535 after 40 bytes of header) in a buffer that holds it would
  // wrap them (caught by the frame fuzz target: tests/fuzz/regressions/frame/).
  if (base + w.end > 0xFFFF) return drop = Counter::drop_bad_ip_length, ParseStatus::kDrop;
  out.ip_version = version;
  out.l3_len = uint16_t(w.end);
  out.is_fragment = w.fragment;
  out.first_fragment = w.first;
  out.frag_id = w.frag_id;
  if (w.fragment && !w.first) return ParseStatus::kOk;  // no transport header here

  const uint8_t* l4 = p + w.l4;
  size_t l4len = w.end - w.l4;
  out.l4_offset = uint16_t(base + w.l4);
  switch (w.proto) {
    case kProtoTcp:
      if (l4len < 20 || (size_t(l4[12] >> 4) * 4) < 20 || size_t(l4[12] >> 4) * 4 > l4len)
        return drop = Counter::drop_truncated_l4, ParseStatus::kDrop;
      break;
    case kProtoUdp: {
      if (l4len < 8) return drop = Counter::drop_truncated_l4, ParseStatus::kDrop;
      // The UDP length may leave bytes of the IP payload unused (RFC 768
      // surplus area), never claim more than it or less than the header. A
      // first fragment's length covers the whole datagram: not checked.
      size_t ulen = rd16(l4 + 4);
      if (!w.fragment && (ulen < 8 || ulen > l4len))
        return drop = Counter::drop_bad_udp_length, ParseStatus::kDrop;
      break;
    }
    default:
      break;
  }
  if (!readPorts(l4, l4len, w.proto, version, out.tuple))
    return drop = Counter::drop_truncated_l4, ParseStatus::kDrop;

  bool icmp_err = (w.proto == kProtoIcmp && version == 4 && isIcmpv4Error(l4[0])) ||
                  (w.proto == kProtoIcmpv6 && version == 6 && isIcmpv6Error(l4[0]));
  if (!icmp_err) return ParseStatus::kOk;

  // The quoted header: IP header plus at least the first 8 bytes of transport.
  out.icmp_error = true;
  out.icmp_type = l4[0];
  out.icmp_code = l4[1];
  const uint8_t* q = l4 + 8;
  size_t qlen = l4len - 8;
  if (qlen < 1) return drop = Counter::drop_icmp_error_truncated, ParseStatus::kDrop;
  uint8_t qver = q[0] >> 4;
  if (qver != version) return drop = Counter::drop_icmp_error_truncated, ParseStatus::kDrop;
  IpWalk qw;
  Counter ignored;
  if (!walkIp(q, qlen, qver, out.quoted, qw, false, ignored))
    return drop = Counter::drop_icmp_error_truncated, ParseStatus::kDrop;
  if (qw.fragment && !qw.first) return ParseStatus::kOk;  // quoted a later fragment: no ports
  if (qw.l4 > qlen || !readPorts(q + qw.l4, qlen - qw.l4, qw.proto, qver, out.quoted))
    return drop = Counter::drop_icmp_error_truncated, ParseStatus::kDrop;
  return ParseStatus::kOk;
}

}  // namespace

ParseStatus parseFrame(const uint8_t* p, size_t len, ParsedPacket& out, Counter& drop) noexcept {
  out = ParsedPacket{};
  if (len < 14) return drop = Counter::drop_truncated_l2, ParseStatus::kDrop;
  uint16_t et = rd16(p + 12);
  size_t off = 14;
  if (et == kEtherTypeVlan || et == kEtherTypeQinQ) {
    if (len < 18) return drop = Counter::drop_truncated_l2, ParseStatus::kDrop;
    out.has_vlan = true;
    out.vlan_tpid = et;
    out.vlan_tci = rd16(p + 14);
    et = rd16(p + 16);
    off = 18;
    if (et == kEtherTypeVlan || et == kEtherTypeQinQ)
      return drop = Counter::drop_nested_vlan, ParseStatus::kDrop;
  }
  out.ether_type = et;
  out.l3_offset = uint16_t(off);
  if (et == kEtherTypeArp) return ParseStatus::kArp;
  uint8_t version;
  if (et == kEtherTypeIpv4) version = 4;
  else if (et == kEtherTypeIpv6) version = 6;
  else return drop = Counter::drop_unsupported_ethertype, ParseStatus::kDrop;
  return parseIp(p + off, len - off, version, off, out, drop);
}

ParseStatus parseL3(const uint8_t* p, size_t len, uint16_t ether_type, ParsedPacket& out,
                    Counter& drop) noexcept {
  out = ParsedPacket{};
  out.ether_type = ether_type;
  uint8_t version;
  if (ether_type == kEtherTypeIpv4) version = 4;
  else if (ether_type == kEtherTypeIpv6) version = 6;
  else return drop = Counter::drop_unsupported_ethertype, ParseStatus::kDrop;
  return parseIp(p, len, version, 0, out, drop);
}

}  // namespace gwlb
