#include "common/geneve.h"

#include <cstring>

#include "common/checksum.h"
#include "common/fast_path.h"
#include "common/packet_parser.h"
#include "common/vxlan.h"

namespace gwlb {
namespace {

void wr64(uint8_t* p, uint64_t v) {
  wr32(p, uint32_t(v >> 32));
  wr32(p + 4, uint32_t(v));
}

uint8_t* writeOption(uint8_t* p, uint8_t type, size_t data_len, uint16_t cls = kAwsOptionClass) {
  wr16(p, cls);
  p[2] = type;              // not critical: appliances that skip it stay correct
  p[3] = uint8_t(data_len / 4);
  return p + 4;
}

// The 32 bytes of options of the aws format, or of the nsi format (its
// flow cookie at the same place: the last 4 bytes).
void writeOptions(uint8_t* o, const EncapParams& p) {
  if (p.nsi) {
    o = writeOption(o, kNsiOptNetworkId, 4, kNsiOptionClass);
    wr32(o, (p.vni & kNsiMaxNetworkId) << 4 | (p.nsi_egress ? 1 : 0));
    o = writeOption(o + 4, kNsiOptProfileId, 8, kNsiOptionClass);
    wr64(o, p.profile_id);
    o = writeOption(o + 8, kNsiOptEndpointId, 8, kNsiOptionClass);
    wr32(o, uint32_t(p.endpoint_id));
    wr32(o + 4, p.cookie);
    return;
  }
  o = writeOption(o, kAwsOptEndpointId, 8);
  wr64(o, p.endpoint_id);
  o = writeOption(o + 8, kAwsOptAttachmentId, 8);
  wr64(o, p.attachment_id);
  o = writeOption(o + 8, kAwsOptFlowCookie, 4);
  wr32(o, p.cookie);
}

// The Geneve header and (aws, nsi) options writeEncap() writes behind its UDP
// header, or with p.vxlan the VXLAN header (RFC 7348: flags with only I set,
// 24 reserved bits, VNI, 8 reserved bits); returns the header's length.
size_t writeGeneveHeader(uint8_t* g, const EncapParams& p) {
  if (p.vxlan) {
    wr32(g, uint32_t(kVxlanFlagI) << 24);
    wr32(g + 4, (p.vni & 0xFFFFFF) << 8);
    return kVxlanHeaderLen;
  }
  size_t geneve_len = kGeneveBaseLen + (p.aws_options ? kAwsOptionsLen : 0);
  g[0] = uint8_t((geneve_len - kGeneveBaseLen) / 4);
  g[1] = 0;
  wr16(g + 2, p.protocol);
  wr32(g + 4, (p.vni & 0xFFFFFF) << 8);
  if (p.aws_options) writeOptions(g + kGeneveBaseLen, p);
  return geneve_len;
}

// The IPv6 pseudo-header's addresses and next header (RFC 8200 section 8.1),
// without the upper-layer length.
uint32_t ipv6PseudoSum(const uint8_t* ip6) {
  return csumAdd(0, ip6 + 8, 32) + kProtoUdp;
}

}  // namespace

// With p.vxlan: the VXLAN header to p.udp_dport, as writeEncap() writes it.
void writeEncap6(uint8_t* f, size_t payload_len, const EncapParams& p) noexcept {
  const bool aws = p.aws_options && !p.vxlan;
  size_t geneve_len = kGeneveBaseLen + (aws ? kAwsOptionsLen : 0);
  size_t udp_len = 8 + geneve_len + payload_len;

  std::memcpy(f, p.dst_mac.b.data(), 6);
  std::memcpy(f + 6, p.src_mac.b.data(), 6);
  wr16(f + 12, kEtherTypeIpv6);

  // IPv6: no fragment header; the underlay never fragments (IPv6 routers
  // never do), oversize inner packets get a "too big" from us instead.
  uint8_t* ip = f + 14;
  wr32(ip, 6u << 28 | uint32_t(p.traffic_class) << 20 | (p.flow_label & 0xFFFFF));
  wr16(ip + 4, uint16_t(udp_len));
  ip[6] = kProtoUdp;
  ip[7] = 64;
  std::memcpy(ip + 8, p.src_ip6.data(), 16);
  std::memcpy(ip + 24, p.dst_ip6.data(), 16);

  uint8_t* udp = ip + 40;
  wr16(udp, p.udp_sport);
  wr16(udp + 2, p.vxlan ? p.udp_dport : kGenevePort);
  wr16(udp + 4, uint16_t(udp_len));
  wr16(udp + 6, 0);
  writeGeneveHeader(udp + 8, p);

  // The pseudo-header's length is 32 bits; udp_len is below 2^16.
  uint32_t sum = ipv6PseudoSum(ip) + uint32_t(udp_len);
  sum = csumAdd(sum, udp, udp_len);
  uint16_t c = csumFold(sum);
  wr16(udp + 6, c == 0 ? 0xFFFF : c);
}

void writeEncap(uint8_t* f, size_t payload_len, const EncapParams& p) noexcept {
  const bool aws = p.aws_options && !p.vxlan;
  size_t geneve_len = kGeneveBaseLen + (aws ? kAwsOptionsLen : 0);
  size_t udp_len = 8 + geneve_len + payload_len;
  size_t ip_len = 20 + udp_len;

  // Ethernet
  std::memcpy(f, p.dst_mac.b.data(), 6);
  std::memcpy(f + 6, p.src_mac.b.data(), 6);
  wr16(f + 12, kEtherTypeIpv4);

  // IPv4: DF set so the underlay never fragments; id 0 is allowed with DF (RFC 6864).
  uint8_t* ip = f + 14;
  ip[0] = 0x45;
  ip[1] = 0;
  wr16(ip + 2, uint16_t(ip_len));
  wr16(ip + 4, 0);
  wr16(ip + 6, 0x4000);
  ip[8] = 64;
  ip[9] = kProtoUdp;
  wr16(ip + 10, 0);
  wr32(ip + 12, p.src_ip);
  wr32(ip + 16, p.dst_ip);
  wr16(ip + 10, inetChecksum(ip, 20));

  // UDP
  uint8_t* udp = ip + 20;
  wr16(udp, p.udp_sport);
  wr16(udp + 2, p.vxlan ? p.udp_dport : kGenevePort);
  wr16(udp + 4, uint16_t(udp_len));
  wr16(udp + 6, 0);

  writeGeneveHeader(udp + 8, p);

  // UDP checksum over the pseudo-header, UDP header and everything after it.
  uint32_t sum = csumAdd(0, ip + 12, 8);
  sum += kProtoUdp;
  sum += uint32_t(udp_len);
  sum = csumAdd(sum, udp, udp_len);
  uint16_t c = csumFold(sum);
  wr16(udp + 6, c == 0 ? 0xFFFF : c);
}

void buildEncapTemplate(EncapTemplate& t, const EncapParams& p) noexcept {
  t = EncapTemplate{};
  if (p.ipv6) {
    EncapParams q = p;
    q.udp_sport = 0;
    q.cookie = 0;
    q.traffic_class = 0;
    q.flow_label = 0;
    if (p.aws_options) q.protocol = 0;
    if (p.vxlan) q.aws_options = false;
    t.aws = q.aws_options;
    t.nsi = q.aws_options && p.nsi;
    t.ipv6 = true;
    t.len = uint8_t(encapHeaderLen(q.aws_options, true));
    writeEncap6(t.bytes, 0, q);
    uint8_t* ip = t.bytes + 14;
    uint8_t* udp = ip + 40;
    wr16(ip + 4, 0);
    wr16(udp + 4, 0);
    wr16(udp + 6, 0);
    t.pseudo_sum = ipv6PseudoSum(ip);
    t.udp_sum = csumAdd(t.pseudo_sum, udp, t.len - 14 - 40);
    return;
  }
  EncapParams q = p;
  q.udp_sport = 0;
  q.cookie = 0;
  if (p.aws_options) q.protocol = 0;
  if (p.vxlan) q.aws_options = false;
  t.aws = q.aws_options;
  t.nsi = q.aws_options && q.nsi;
  t.len = uint8_t(encapHeaderLen(q.aws_options));
  writeEncap(t.bytes, 0, q);
  // writeEncap filled in lengths and checksums for an empty payload: take
  // them out again, keep the sums of everything else.
  uint8_t* ip = t.bytes + 14;
  uint8_t* udp = ip + 20;
  wr16(ip + 2, 0);
  wr16(ip + 10, 0);
  wr16(udp + 4, 0);
  wr16(udp + 6, 0);
  t.ip_sum = csumAdd(0, ip, 20);
  uint32_t sum = csumAdd(0, ip + 12, 8);
  sum += kProtoUdp;
  t.pseudo_sum = sum;
  t.udp_sum = csumAdd(sum, udp, t.len - 14 - 20);
}

void applyEncapOffload(uint8_t* f, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                       uint16_t protocol, uint32_t cookie) noexcept {
  encapOffloadInline(f, t, payload_len, udp_sport, protocol, cookie);
}

void applyEncap(uint8_t* f, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                uint16_t protocol, uint32_t cookie, uint32_t payload_sum) noexcept {
  encapInline(f, t, payload_len, udp_sport, protocol, cookie, payload_sum);
}

void applyEncap6(uint8_t* f, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                 uint16_t protocol, uint32_t cookie, uint32_t payload_sum, uint32_t tc_label) noexcept {
  encapInline6(f, t, payload_len, udp_sport, protocol, cookie, payload_sum, tc_label);
}

void applyEncapOffload6(uint8_t* f, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                        uint16_t protocol, uint32_t cookie, uint32_t tc_label) noexcept {
  encapOffloadInline6(f, t, payload_len, udp_sport, protocol, cookie, tc_label);
}

GeneveStatus parseGeneve(const uint8_t* p, size_t len, GeneveInfo& out, Counter& drop,
                         uint16_t gwlb_class) noexcept {
  out = GeneveInfo{};
  if (len < kGeneveBaseLen) return drop = Counter::drop_geneve_truncated, GeneveStatus::kDrop;
  out.version = p[0] >> 6;
  if (out.version != 0) return drop = Counter::drop_geneve_bad_version, GeneveStatus::kDrop;
  size_t opt_len = size_t(p[0] & 0x3F) * 4;
  out.oam = p[1] & 0x80;
  out.critical = p[1] & 0x40;
  out.protocol = rd16(p + 2);
  out.vni = rd32(p + 4) >> 8;
  out.header_len = kGeneveBaseLen + opt_len;
  if (out.header_len > len) return drop = Counter::drop_geneve_truncated, GeneveStatus::kDrop;
  if (out.oam) return GeneveStatus::kControl;

  // Walk every option: each must fit in the option area; unknown critical ones
  // make the packet undeliverable (RFC 8926 section 3.5).
  const uint8_t* o = p + kGeneveBaseLen;
  const uint8_t* end = o + opt_len;
  while (o < end) {
    if (end - o < 4) return drop = Counter::drop_geneve_bad_option, GeneveStatus::kDrop;
    uint16_t cls = rd16(o);
    uint8_t type = o[2];
    size_t dlen = size_t(o[3] & 0x1F) * 4;
    const uint8_t* d = o + 4;
    if (dlen > size_t(end - d)) return drop = Counter::drop_geneve_bad_option, GeneveStatus::kDrop;
    bool known = false;
    if (cls == kAwsOptionClass) {
      uint8_t t = type & 0x7F;
      if (t == kAwsOptEndpointId && dlen == 8) {
        out.has_endpoint_id = true, out.endpoint_id = rd64(d), known = true;
      } else if (t == kAwsOptAttachmentId && dlen == 8) {
        out.has_attachment_id = true, out.attachment_id = rd64(d), known = true;
      } else if (t == kAwsOptFlowCookie && dlen == 4) {
        out.has_cookie = true, out.cookie = rd32(d), known = true;
      }
    } else if (cls == kNsiOptionClass) {
      uint8_t t = type & 0x7F;
      if (t == kNsiOptNetworkId && dlen == 4) {
        out.has_network_id = true, out.network_id = rd32(d) >> 4, out.nsi_egress = d[3] & 1, known = true;
      } else if (t == kNsiOptEndpointId && dlen == 8) {
        out.has_nsi_endpoint = true, out.nsi_endpoint = rd64(d), known = true;
        out.has_cookie = true, out.cookie = rd32(d + 4);
      } else if (t == kNsiOptProfileId && dlen == 8) {
        out.has_profile_id = true, out.profile_id = rd64(d), known = true;
      }
    } else if (cls == gwlb_class && (type & 0x7F) == kGwlbOptBypass) {
      // Known whatever its length (critical or not): a malformed request is
      // refused and counted by the return path, the packet still delivered.
      known = true;
      out.has_bypass = true;
      out.bypass_malformed = dlen != 4;
      out.bypass_seconds = dlen == 4 ? rd32(d) : 0;
    }
    if (!known && (type & 0x80))
      return drop = Counter::drop_geneve_unknown_critical_option, GeneveStatus::kDrop;
    o = d + dlen;
  }
  return GeneveStatus::kOk;
}

size_t addBypassOption(const uint8_t* g, size_t len, uint8_t* out, size_t cap, uint16_t gwlb_class,
                       uint32_t seconds) noexcept {
  if (len < kGeneveBaseLen) return 0;
  const size_t opt_len = size_t(g[0] & 0x3F) * 4;
  if (kGeneveBaseLen + opt_len > len || opt_len + 8 > kMaxGeneveOptionsLen || len + 8 > cap) return 0;
  const size_t at = kGeneveBaseLen + opt_len;
  std::memcpy(out, g, at);
  out[0] = uint8_t((g[0] & 0xC0) | ((opt_len + 8) / 4));
  wr16(out + at, gwlb_class);
  out[at + 2] = kGwlbOptBypass;
  out[at + 3] = 1;  // one 4-byte word of data
  wr32(out + at + 4, seconds);
  std::memcpy(out + at + 8, g + at, len - at);
  return len + 8;
}

}  // namespace gwlb
