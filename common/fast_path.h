// Pure helpers for the worker's common case, inline so the per-packet path
// stays in one function. Each has a general counterpart it must agree with
// (tests/unit/common/test_fast_path.cc checks them against each other):
//   parseCommon      <-> parseFrame   (packet_parser.h)
//   parseCommonIpv4  <-> parseL3      (packet_parser.h)
//   parseCommon6     <-> parseFrame   (packet_parser.h)
//   parseGeneveAws   <-> parseGeneve  (geneve.h)
//   parseGenevePlain <-> parseGeneve  (geneve.h)
//   payloadSum       <-> csumAdd over every byte (checksum.h)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/checksum.h"
#include "common/geneve.h"
#include "common/packet_parser.h"

namespace gwlb {

// The IPv4 datagram nearly all traffic is, in a few loads: a 20-byte header,
// not a fragment, TCP or UDP whose header fits and whose lengths agree.
// ip[0..len) is the datagram and what follows it; `base` is its offset in the
// parsed buffer. Fills `out` as parseFrame()/parseL3() would fill a
// default-constructed one, whatever `out` held before (the worker reuses its
// storage: every field a later stage reads is written, the VLAN, fragment and
// ICMP error fields with what an untagged whole datagram has; the ICMP
// error's own fields are left, they are read only with icmp_error); false:
// leaves `out` untouched, the general parser decides (on a fresh packet).
// Never reads past len.
[[gnu::always_inline]] inline bool parseCommonIpv4(const uint8_t* ip, size_t len, uint16_t base,
                            ParsedPacket& out) noexcept {
  if (len < 20 + 8 || ip[0] != 0x45) return false;
  size_t total = rd16(ip + 2);
  if ((rd16(ip + 6) & 0x3FFF) != 0 || total < 20 || total > len || base + total > 0xFFFF)
    return false;
  uint8_t proto = ip[9];
  const uint8_t* l4 = ip + 20;
  size_t l4len = total - 20;
  if (proto == kProtoTcp) {
    if (l4len < 20) return false;
    size_t doff = size_t(l4[12] >> 4) * 4;
    if (doff < 20 || doff > l4len) return false;
    out.l4_covers_payload = true;
  } else if (proto == kProtoUdp) {
    if (l4len < 8) return false;
    size_t ulen = rd16(l4 + 4);
    if (ulen < 8 || ulen > l4len) return false;
    out.l4_covers_payload = ulen == l4len;
  } else {
    return false;
  }
  out.l3_offset = base;
  out.ether_type = kEtherTypeIpv4;
  out.has_vlan = false;
  out.vlan_tci = 0;
  out.vlan_tpid = 0;
  out.ip_version = 4;
  out.l3_len = uint16_t(total);
  out.l4_offset = uint16_t(base + 20);
  out.tuple.src.setV4(ip + 12);
  out.tuple.dst.setV4(ip + 16);
  out.tuple.proto = proto;
  out.tuple.sport = rd16(l4);
  out.tuple.dport = rd16(l4 + 2);
  out.first_fragment = true;  // offset 0 (the general parser says so for whole datagrams too)
  out.frag_id = rd16(ip + 4);
  out.is_fragment = false;
  out.icmp_error = false;
  return true;
}

// parseFrame()'s common case: untagged Ethernet carrying parseCommonIpv4's
// datagram.
[[gnu::always_inline]] inline bool parseCommon(const uint8_t* f, size_t len, ParsedPacket& out) noexcept {
  if (len < 14 || rd16(f + 12) != kEtherTypeIpv4) return false;
  return parseCommonIpv4(f + 14, len - 14, 14, out);
}

// parseFrame()'s common case over an IPv6 underlay: untagged Ethernet, a
// 40-byte IPv6 header with UDP or TCP directly behind it (no extension
// header), lengths that agree; what an IPv6 appliance's returns are. Fills
// `out` as parseFrame() would fill a default-constructed one, whatever `out`
// held (parseCommonIpv4's contract); l4_covers_payload stays false, since
// payloadSum's shortcut reads an IPv4 header. False: leaves `out`
// untouched, the general parser decides (extension headers, fragments,
// ICMPv6, truncation). Never reads past len.
[[gnu::always_inline]] inline bool parseCommon6(const uint8_t* f, size_t len, ParsedPacket& out) noexcept {
  if (len < 14 + 40 + 8 || rd16(f + 12) != kEtherTypeIpv6) return false;
  const uint8_t* ip = f + 14;
  const uint8_t proto = ip[6];
  const size_t l4len = rd16(ip + 4);
  // 14 + 40 + 65,535 exceeds l3_len's 16 bits: the general parser refuses it.
  if ((ip[0] >> 4) != 6 || 14 + 40 + l4len > len || 14 + 40 + l4len > 0xFFFF) return false;
  const uint8_t* l4 = ip + 40;
  if (proto == kProtoUdp) {
    if (l4len < 8) return false;
    const size_t ulen = rd16(l4 + 4);
    if (ulen < 8 || ulen > l4len) return false;
  } else if (proto == kProtoTcp) {
    if (l4len < 20) return false;
    const size_t doff = size_t(l4[12] >> 4) * 4;
    if (doff < 20 || doff > l4len) return false;
  } else {
    return false;
  }
  out.l3_offset = 14;
  out.ether_type = kEtherTypeIpv6;
  out.has_vlan = false;
  out.vlan_tci = 0;
  out.vlan_tpid = 0;
  out.ip_version = 6;
  out.l3_len = uint16_t(40 + l4len);
  out.l4_offset = 14 + 40;
  out.l4_covers_payload = false;
  out.tuple.src.family = 6;
  std::memcpy(out.tuple.src.b.data(), ip + 8, 16);
  out.tuple.dst.family = 6;
  std::memcpy(out.tuple.dst.b.data(), ip + 24, 16);
  out.tuple.proto = proto;
  out.tuple.sport = rd16(l4);
  out.tuple.dport = rd16(l4 + 2);
  // No fragment header: the general parser's IPv6 walk leaves these unset.
  out.is_fragment = false;
  out.first_fragment = false;
  out.frag_id = 0;
  out.icmp_error = false;
  return true;
}

// parseGeneve()'s common case: exactly the header our encapsulation writes in
// aws format (version 0, no O or C bit, opt len 8: endpoint ID, attachment ID,
// cookie options in that order with their lengths, none critical). Fills
// `out` as parseGeneve() would; false: the general validator decides.
[[gnu::always_inline]] inline bool parseGeneveAws(const uint8_t* p, size_t len, GeneveInfo& out) noexcept {
  if (len < kGeneveBaseLen + kAwsOptionsLen) return false;
  if (p[0] != kAwsOptionsLen / 4 || p[1] != 0) return false;
  const uint8_t* o = p + kGeneveBaseLen;
  if (rd32(o) != (uint32_t(kAwsOptionClass) << 16 | kAwsOptEndpointId << 8 | 2) ||
      rd32(o + 12) != (uint32_t(kAwsOptionClass) << 16 | kAwsOptAttachmentId << 8 | 2) ||
      rd32(o + 24) != (uint32_t(kAwsOptionClass) << 16 | kAwsOptFlowCookie << 8 | 1))
    return false;
  out = GeneveInfo{};
  out.protocol = rd16(p + 2);
  out.vni = rd32(p + 4) >> 8;
  out.header_len = kGeneveBaseLen + kAwsOptionsLen;
  out.has_endpoint_id = out.has_attachment_id = out.has_cookie = true;
  out.endpoint_id = rd64(o + 4);
  out.attachment_id = rd64(o + 16);
  out.cookie = rd32(o + 28);
  return true;
}

// parseGeneve()'s common case for the ethernet format: exactly the header its
// encapsulation writes (version 0, no options, no O or C bit). Fills `out` as
// parseGeneve() would; false: the general validator decides (it cost an
// ethernet-format return about 85 instructions).
[[gnu::always_inline]] inline bool parseGenevePlain(const uint8_t* p, size_t len, GeneveInfo& out) noexcept {
  if (len < kGeneveBaseLen || p[0] != 0 || p[1] != 0) return false;
  out = GeneveInfo{};
  out.protocol = rd16(p + 2);
  out.vni = rd32(p + 4) >> 8;
  out.header_len = kGeneveBaseLen;
  return true;
}

// One's-complement sum of frame[start .. end of the IP datagram), the bytes an
// encapsulation carries (start: the IP header for aws format, 0 for ethernet
// format). A TCP or UDP segment whose checksum is valid sums to the complement
// of its pseudo-header's sum (RFC 1071 arithmetic; what Linux's local checksum
// offload relies on), so only the headers in front of the segment are summed,
// and of the IP header not even the addresses (the pseudo-header's). When the inner checksum is wrong, the outer one is wrong by the
// same amount and the appliance's UDP stack drops the packet, as the
// destination would have. Fragments, ICMP, other protocols, UDP without a
// checksum (0) and UDP shorter than its IP payload are summed in full, and so
// are packets whose pseudo-header destination may not be the header's: IPv4
// with options (a source route's final hop, RFC 791/1122) and IPv6 with
// extension headers (a routing header's final destination, RFC 8200 8.1).
// payloadSumWide: the same sum before its folds, below 2^63 + 2^34 (an IP
// header's first byte, 0x45 or 0x6_, keeps its first 64-bit word below 2^63),
// so that the encapsulation adds its own fields and folds once (finishUdp).
[[gnu::always_inline]] inline uint64_t payloadSumWide(const uint8_t* f, size_t start, const ParsedPacket& p) noexcept {
  size_t end = size_t(p.l3_offset) + p.l3_len;
  uint8_t proto = p.tuple.proto;
  // The fast parser's packet (l4_covers_payload: IPv4 with a 20-byte
  // header, TCP or UDP covering the whole payload): the general case below
  // with the checks it made left out.
  if (p.l4_covers_payload) [[likely]] {
    const uint8_t* l3 = f + p.l3_offset;
    if (rd16(l3 + 20 + (proto == kProtoTcp ? 16 : 6)) == 0) return csumAdd(0, f + start, end - start);
    uint64_t s = 3 * 0xFFFFu - proto - (p.l3_len - 20u);  // the L4 length: below 2^16
    // The ethernet and VXLAN formats carry the inner Ethernet header too.
    if (p.l3_offset != start)
      return uint32_t(s) + (start == 0 && p.l3_offset == 14 ? csumShort<14 + 12>(f)
                                                           : csumAdd(0, f + start, p.l3_offset - start + 12));
    return s + rd64(l3) + rd32(l3 + 8);
  }
  size_t plain_header = p.ip_version == 4 ? 20 : 40;
  if (!p.is_fragment && !p.icmp_error && p.l4_offset > start &&
      size_t(p.l4_offset) - p.l3_offset == plain_header &&
      (proto == kProtoTcp || proto == kProtoUdp)) {
    const uint8_t* l4 = f + p.l4_offset;
    uint16_t ck = rd16(l4 + (proto == kProtoTcp ? 16 : 6));
    // UDP's checksum covers its own length, which may leave a surplus area
    // of the IP payload uncovered (RFC 768): then sum everything.
    bool covers = proto == kProtoTcp || rd16(l4 + 4) == end - p.l4_offset;
    if (ck != 0 && covers) {
      // The header's addresses are the pseudo-header's, so they cancel: the
      // sum is the bytes in front of them less the pseudo-header's protocol
      // and length (adding 0xFFFF - x subtracts x, mod 0xFFFF). IPv4: bytes
      // 0..11 of its header; IPv6: bytes 0..7 (its length is 32 bits in the
      // pseudo-header). Their big-endian 64- and 32-bit words are summed
      // whole (2^16 = 1 mod 0xFFFF: a word of four is congruent to the sum
      // of its 16-bit words).
      const uint32_t l4len = uint32_t(end - p.l4_offset);
      uint64_t s = 3 * 0xFFFFu - proto - (l4len & 0xFFFF) - (l4len >> 16);
      const uint8_t* l3 = f + p.l3_offset;
      const bool v4 = p.ip_version == 4;
      if (p.l3_offset != start) {
        if (start == 0 && p.l3_offset == 14) return uint32_t(s) + (v4 ? csumShort<14 + 12>(f) : csumShort<14 + 8>(f));
        return uint32_t(s) + csumAdd(0, f + start, p.l3_offset - start + (v4 ? 12 : 8));
      }
      uint64_t w;
      std::memcpy(&w, l3, 8);
      s += __builtin_bswap64(w);
      if (v4) s += rd32(l3 + 8);
      return s;
    }
  }
  return csumAdd(0, f + start, end - start);
}

// payloadSumWide folded to 32 bits.
[[gnu::always_inline]] inline uint32_t payloadSum(const uint8_t* f, size_t start, const ParsedPacket& p) noexcept {
  uint64_t s = payloadSumWide(f, start, p);
  s = (s & 0xFFFFFFFF) + (s >> 32);
  return uint32_t((s & 0xFFFFFFFF) + (s >> 32));
}

// The UDP header and Geneve fields every encapsulation patches, at `udp`
// (IPv4's and IPv6's outer headers alike): the source port, the length, in
// aws format the protocol and cookie; then the UDP checksum from the
// template's sum (udp_len counts twice: pseudo-header and UDP header).
// payload_sum: below 2^64 - 2^24 (payloadSumWide's, or any 32-bit sum).
[[gnu::always_inline]] inline void finishUdp(uint8_t* udp, const EncapTemplate& t, uint32_t udp_len,
                                             uint16_t udp_sport, uint16_t protocol, uint32_t cookie,
                                             uint64_t payload_sum) noexcept {
  wr16(udp, udp_sport);
  wr16(udp + 4, uint16_t(udp_len));
  uint64_t sum = uint64_t(t.udp_sum) + udp_sport + 2 * udp_len + payload_sum;
  if (t.aws) {
    uint8_t* g = udp + 8;
    wr16(g + 2, protocol);
    wr32(g + kGeneveBaseLen + 28, cookie);
    sum += protocol + uint64_t(cookie);  // a 32-bit word: its 16-bit halves' sum, modulo 0xFFFF
  }
  // 32 bits with the end-around carry (2^32 = 1 modulo 0xFFFF).
  const uint32_t lo = uint32_t(sum), hi = uint32_t(sum >> 32);
  uint32_t s32 = lo + hi;
  s32 += s32 < hi;
  uint16_t c = csumFold(s32);
  wr16(udp + 6, c == 0 ? 0xFFFF : c);
}
// The same with the checksum left to the NIC: the pseudo-header's sum only.
[[gnu::always_inline]] inline void finishUdpOffload(uint8_t* udp, const EncapTemplate& t, uint32_t udp_len,
                                                    uint16_t udp_sport, uint16_t protocol,
                                                    uint32_t cookie) noexcept {
  wr16(udp, udp_sport);
  wr16(udp + 4, uint16_t(udp_len));
  if (t.aws) {
    uint8_t* g = udp + 8;
    wr16(g + 2, protocol);
    wr32(g + kGeneveBaseLen + 28, cookie);
  }
  wr16(udp + 6, uint16_t(csumFold(t.pseudo_sum + udp_len) ^ 0xFFFF));
}

// applyEncap() and applyEncapOffload() (geneve.h), inline for the worker:
// the out-of-line call cost a dozen instructions per packet.
[[gnu::always_inline]] inline void encapOffloadInline(uint8_t* f, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                       uint16_t protocol, uint32_t cookie) noexcept {
  if (t.aws) std::memcpy(f, t.bytes, encapHeaderLen(true));
  else std::memcpy(f, t.bytes, encapHeaderLen(false));
  uint32_t udp_len = uint32_t(t.len - 14 - 20 + payload_len);
  uint8_t* ip = f + 14;
  uint8_t* udp = ip + 20;
  wr16(ip + 2, uint16_t(20 + udp_len));  // the checksum stays 0 (template)
  finishUdpOffload(udp, t, udp_len, udp_sport, protocol, cookie);
}

[[gnu::always_inline]] inline void encapInline(uint8_t* f, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                uint16_t protocol, uint32_t cookie, uint64_t payload_sum) noexcept {
  // Constant sizes: a few vector stores each.
  if (t.aws) std::memcpy(f, t.bytes, encapHeaderLen(true));
  else std::memcpy(f, t.bytes, encapHeaderLen(false));
  uint32_t udp_len = uint32_t(t.len - 14 - 20 + payload_len);
  uint32_t ip_len = 20 + udp_len;
  uint8_t* ip = f + 14;
  uint8_t* udp = ip + 20;
  wr16(ip + 2, uint16_t(ip_len));
  // t.ip_sum and the length are 16-bit: one fold.
  wr16(ip + 10, csumFoldOnce(t.ip_sum + uint16_t(ip_len)));
  finishUdp(udp, t, udp_len, udp_sport, protocol, cookie, payload_sum);
}

// The same over an outer IPv6 header (t.ipv6): no header checksum; the UDP
// checksum's arithmetic is IPv4's (the pseudo-header's length and the UDP
// length each add udp_len), from the template's IPv6 pseudo-header sum.
// tc_label: ipv6TrafficClassLabel().
[[gnu::always_inline]] inline void encapInline6(uint8_t* f, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                 uint16_t protocol, uint32_t cookie, uint64_t payload_sum, uint32_t tc_label) noexcept {
  if (t.aws) std::memcpy(f, t.bytes, encapHeaderLen(true, true));
  else std::memcpy(f, t.bytes, encapHeaderLen(false, true));
  uint32_t udp_len = uint32_t(t.len - 14 - 40 + payload_len);
  uint8_t* ip = f + 14;
  uint8_t* udp = ip + 40;
  wr32(ip, 6u << 28 | tc_label);
  wr16(ip + 4, uint16_t(udp_len));
  finishUdp(udp, t, udp_len, udp_sport, protocol, cookie, payload_sum);
}

[[gnu::always_inline]] inline void encapOffloadInline6(uint8_t* f, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                        uint16_t protocol, uint32_t cookie, uint32_t tc_label) noexcept {
  if (t.aws) std::memcpy(f, t.bytes, encapHeaderLen(true, true));
  else std::memcpy(f, t.bytes, encapHeaderLen(false, true));
  uint32_t udp_len = uint32_t(t.len - 14 - 40 + payload_len);
  uint8_t* ip = f + 14;
  uint8_t* udp = ip + 40;
  wr32(ip, 6u << 28 | tc_label);
  wr16(ip + 4, uint16_t(udp_len));
  finishUdpOffload(udp, t, udp_len, udp_sport, protocol, cookie);
}

}  // namespace gwlb
