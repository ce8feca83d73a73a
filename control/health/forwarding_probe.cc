#include "control/health/forwarding_probe.h"

#include <cstring>

#include "common/checksum.h"
#include "common/flow_cookie.h"
#include "common/flow_key.h"
#include "common/geneve.h"
#include "common/packet_parser.h"

namespace gwlb::ctl {
namespace {

constexpr uint8_t kMagic[8] = {'g', 'w', 'l', 'b', '-', 'f', 'w', 'd'};

// The inner IPv4 echo request at p[0..kForwardingInnerLen).
void writeInner(uint8_t* p, uint32_t src, uint32_t dst, uint32_t appliance, uint32_t token) {
  std::memset(p, 0, kForwardingInnerLen);
  p[0] = 0x45;
  wr16(p + 2, uint16_t(kForwardingInnerLen));
  wr16(p + 4, uint16_t(token));  // IP ID: any value; the sequence number's
  p[8] = 64;                     // TTL
  p[9] = kProtoIcmp;
  wr32(p + 12, src);
  wr32(p + 16, dst);
  wr16(p + 10, inetChecksum(p, 20));
  uint8_t* ic = p + 20;
  ic[0] = 8;  // echo request
  wr16(ic + 4, uint16_t(token >> 16));
  wr16(ic + 6, uint16_t(token));
  std::memcpy(ic + 8, kMagic, sizeof kMagic);
  wr32(ic + 16, appliance);
  wr32(ic + 20, token);
  wr16(ic + 2, inetChecksum(ic, 24));
}

// The inner IPv6 echo request at p[0..kForwardingInnerLen6): the same echo
// and payload in ICMPv6, whose checksum covers the pseudo-header (RFC 8200
// section 8.1).
void writeInner6(uint8_t* p, const std::array<uint8_t, 16>& src, const std::array<uint8_t, 16>& dst,
                 uint32_t appliance, uint32_t token) {
  std::memset(p, 0, kForwardingInnerLen6);
  p[0] = 0x60;
  wr16(p + 4, uint16_t(kForwardingInnerLen6 - 40));
  p[6] = kProtoIcmpv6;
  p[7] = 64;  // hop limit
  std::memcpy(p + 8, src.data(), 16);
  std::memcpy(p + 24, dst.data(), 16);
  uint8_t* ic = p + 40;
  ic[0] = 128;  // echo request
  wr16(ic + 4, uint16_t(token >> 16));
  wr16(ic + 6, uint16_t(token));
  std::memcpy(ic + 8, kMagic, sizeof kMagic);
  wr32(ic + 16, appliance);
  wr32(ic + 20, token);
  uint8_t pseudo[8] = {0, 0, 0, uint8_t(kForwardingInnerLen6 - 40), 0, 0, 0, kProtoIcmpv6};
  uint32_t sum = csumAdd(0, p + 8, 32);
  sum = csumAdd(sum, pseudo, sizeof pseudo);
  wr16(ic + 2, csumFold(csumAdd(sum, ic, 24)));
}

}  // namespace

size_t buildForwardingProbe(const Snapshot& s, uint16_t server, uint32_t token, uint8_t* out,
                            size_t room) noexcept {
  if (server >= s.appliances.size()) return 0;
  const ApplianceSlot& sv = s.appliances[server];
  if (!sv.routable || !sv.mac_known || sv.group >= s.groups.size()) return 0;
  const GroupView& g = s.groups[sv.group];
  const EncapTemplate& t = sv.encap;
  if ((g.probe_dst == 0 && !g.probe_v6) || t.len != encapHeaderLen(t.aws, t.ipv6)) return 0;
  const bool v6 = g.probe_v6;
  const uint16_t ether_type = v6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  const size_t inner_l2 = t.aws ? 0 : 14;
  const size_t payload = inner_l2 + (v6 ? kForwardingInnerLen6 : kForwardingInnerLen);
  if (room < t.len + payload) return 0;
  uint8_t* in = out + t.len;
  if (inner_l2) {
    // An inner frame to and from the gateway's own MAC: an appliance that
    // forwards Ethernet sends it back as it came.
    std::memcpy(in, s.underlay_mac.b.data(), 6);
    std::memcpy(in + 6, s.underlay_mac.b.data(), 6);
    wr16(in + 12, ether_type);
  }
  if (v6) writeInner6(in + inner_l2, g.probe_src6, g.probe_dst6, sv.ip, token);
  else writeInner(in + inner_l2, g.probe_src, g.probe_dst, sv.ip, token);
  // Keyed as the data path keys a packet of this group's listener, so its
  // cookie and UDP source port are what a data packet between the two
  // addresses would carry.
  L4Tuple tu;
  tu.src = v6 ? IpAddr::v6(g.probe_src6.data()) : IpAddr::v4(g.probe_src);
  tu.dst = v6 ? IpAddr::v6(g.probe_dst6.data()) : IpAddr::v4(g.probe_dst);
  tu.proto = v6 ? kProtoIcmpv6 : kProtoIcmp;
  tu.sport = tu.dport = uint16_t(token >> 16);
  const uint32_t hash = flowHash(makeFlowKey(tu, g.stickiness, g.listener).key);
  // An IPv6 appliance's probe leaves in outer IPv6, traffic class and flow
  // label as its group's data packets get them.
  if (t.ipv6)
    applyEncap6(out, t, payload, geneveSourcePort(hash), ether_type, flowCookie(hash, sv.ip),
                csumAdd(0, in, payload), ipv6TrafficClassLabel(in + inner_l2, v6 ? 6 : 4, hash));
  else
    applyEncap(out, t, payload, geneveSourcePort(hash), ether_type, flowCookie(hash, sv.ip),
               csumAdd(0, in, payload));
  return t.len + payload;
}

bool parseForwardingReturn(const uint8_t* f, size_t len, ForwardingReturn& out) noexcept {
  ParsedPacket o;
  Counter why = Counter::kCount;
  if (parseFrame(f, len, o, why) != ParseStatus::kOk) return false;
  if (o.is_fragment || o.tuple.proto != kProtoUdp || o.tuple.dport != kGenevePort || o.l4_offset == 0)
    return false;
  const size_t end = size_t(o.l3_offset) + o.l3_len;  // parseFrame: within len
  const size_t gen = size_t(o.l4_offset) + 8;
  if (gen > end) return false;
  GeneveInfo gi;
  if (parseGeneve(f + gen, end - gen, gi, why) != GeneveStatus::kOk) return false;
  const size_t inner = gen + gi.header_len;
  if (inner > end) return false;
  ParsedPacket in;
  ParseStatus st;
  if (gi.protocol == kEtherTypeIpv4 || gi.protocol == kEtherTypeIpv6)
    st = parseL3(f + inner, end - inner, gi.protocol, in, why);
  else if (gi.protocol == kEtherTypeTeb) st = parseFrame(f + inner, end - inner, in, why);
  else return false;
  if (st != ParseStatus::kOk || in.is_fragment) return false;
  const bool v6 = in.ip_version == 6;
  if (v6 ? in.tuple.proto != kProtoIcmpv6 : in.tuple.proto != kProtoIcmp) return false;
  // IPv6: only a probe's plain header, echo right behind it (no extensions).
  if (v6 && f[inner + in.l3_offset + 6] != kProtoIcmpv6) return false;
  const size_t ic = inner + in.l3_offset + (v6 ? 40 : size_t(f[inner + in.l3_offset] & 0x0F) * 4);
  const size_t ip_end = inner + in.l3_offset + in.l3_len;
  if (ip_end > end || ic + 24 > ip_end) return false;
  const uint8_t* p = f + ic;
  if (p[0] != (v6 ? 128 : 8) || p[1] != 0 || std::memcmp(p + 8, kMagic, sizeof kMagic) != 0) return false;
  const uint32_t token = rd32(p + 20);
  if (rd16(p + 4) != uint16_t(token >> 16) || rd16(p + 6) != uint16_t(token)) return false;
  // An IPv6 appliance by its key, as the probe's payload names it.
  out.appliance = o.ip_version == 4 ? o.tuple.src.v4HostOrder() : applianceKey(o.tuple.src);
  out.sent_to = rd32(p + 16);
  out.token = token;
  out.v6 = v6;
  if (v6) {
    out.src6 = in.tuple.src.b;
    out.dst6 = in.tuple.dst.b;
  } else {
    out.src = in.tuple.src.v4HostOrder();
    out.dst = in.tuple.dst.v4HostOrder();
  }
  return true;
}

uint16_t forwardingServer(const Snapshot& s, uint32_t appliance) noexcept {
  const uint16_t id = s.applianceByIp(appliance);
  if (id != kNoAppliance) return id;
  for (size_t i = 0; i < s.appliances.size(); ++i)
    if (s.appliances[i].ipv6 && s.appliances[i].in_use && s.appliances[i].ip == appliance) return uint16_t(i);
  return kNoAppliance;
}

}  // namespace gwlb::ctl
