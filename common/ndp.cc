#include "common/ndp.h"

#include <cstring>

#include "common/checksum.h"
#include "common/packet_parser.h"

namespace gwlb {
namespace {

constexpr size_t kIpv6Hdr = 40;
constexpr size_t kNdMsg = 24;     // type, code, checksum, flags/reserved, target
constexpr size_t kLlaOption = 8;  // type, length 1, 6-byte MAC

// The ICMPv6 checksum's sum over the pseudo-header (RFC 8200 section 8.1)
// and the message.
uint32_t icmpv6Sum(const uint8_t* ip6, const uint8_t* msg, size_t len) {
  uint32_t s = csumAdd(0, ip6 + 8, 32);  // source and destination
  s += uint32_t(len) + kProtoIcmpv6;
  return csumAdd(s, msg, len);
}

bool isSolicitedNode(const uint8_t* a) {
  static constexpr uint8_t kPrefix[13] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff};
  return std::memcmp(a, kPrefix, sizeof kPrefix) == 0;
}

}  // namespace

bool NeighborSolicitation::dad() const { return src == Ipv6Bytes{}; }

Ipv6Bytes solicitedNodeAddress(const Ipv6Bytes& a) noexcept {
  Ipv6Bytes s{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff};
  s[13] = a[13];
  s[14] = a[14];
  s[15] = a[15];
  return s;
}

bool parseNeighborSolicitation(const uint8_t* f, size_t len, NeighborSolicitation& out) noexcept {
  out = NeighborSolicitation{};
  if (len < 14) return false;
  uint16_t et = rd16(f + 12);
  size_t l2 = 14;
  if (et == kEtherTypeVlan || et == kEtherTypeQinQ) {
    if (len < 18) return false;
    out.has_vlan = true;
    out.vlan_tpid = et;
    out.vlan_tci = rd16(f + 14);
    et = rd16(f + 16);
    l2 = 18;
  }
  if (et != kEtherTypeIpv6 || len < l2 + kIpv6Hdr + kNdMsg) return false;
  const uint8_t* ip = f + l2;
  if ((ip[0] >> 4) != 6 || ip[6] != kProtoIcmpv6 || ip[7] != 255) return false;
  size_t plen = rd16(ip + 4);
  if (plen < kNdMsg || l2 + kIpv6Hdr + plen > len) return false;
  const uint8_t* m = ip + kIpv6Hdr;
  if (m[0] != kNdNeighborSolicitation || m[1] != 0) return false;
  if (csumFold(icmpv6Sum(ip, m, plen)) != 0) return false;
  std::memcpy(out.src.data(), ip + 8, 16);
  std::memcpy(out.dst.data(), ip + 24, 16);
  std::memcpy(out.target.data(), m + 8, 16);
  if (out.target[0] == 0xff) return false;  // a multicast target
  // Options: type, length in units of 8 bytes (never 0), data.
  for (size_t off = kNdMsg; off < plen;) {
    if (plen - off < 2) return false;
    size_t olen = size_t(m[off + 1]) * 8;
    if (olen == 0 || olen > plen - off) return false;
    if (m[off] == 1 && olen == kLlaOption) {  // source link-layer address
      out.has_source_lladdr = true;
      std::memcpy(out.source_lladdr.b.data(), m + off + 2, 6);
    }
    off += olen;
  }
  if (out.dad() && (!isSolicitedNode(out.dst.data()) || out.has_source_lladdr)) return false;
  std::memcpy(out.eth_src.b.data(), f + 6, 6);
  out.l2_len = l2;
  return true;
}

size_t makeNeighborAdvertisement(uint8_t* f, size_t room, const NeighborSolicitation& ns,
                                 const MacAddr& our_mac) noexcept {
  const size_t l2 = ns.has_vlan ? 18 : 14;
  const size_t total = l2 + kIpv6Hdr + kNdMsg + kLlaOption;
  if (room < total) return 0;
  static constexpr Ipv6Bytes kAllNodes{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  const bool dad = ns.dad();
  const Ipv6Bytes& dst = dad ? kAllNodes : ns.src;
  // Everything needed from `ns` is copied before f (maybe its frame) is written.
  const Ipv6Bytes target = ns.target;
  MacAddr eth_dst = ns.eth_src;
  if (dad) eth_dst = MacAddr{{0x33, 0x33, 0, 0, 0, 1}};
  std::memcpy(f, eth_dst.b.data(), 6);
  std::memcpy(f + 6, our_mac.b.data(), 6);
  if (ns.has_vlan) {
    wr16(f + 12, ns.vlan_tpid);
    wr16(f + 14, ns.vlan_tci);
    wr16(f + 16, kEtherTypeIpv6);
  } else {
    wr16(f + 12, kEtherTypeIpv6);
  }
  uint8_t* ip = f + l2;
  wr32(ip, 0x60000000);  // version 6, traffic class 0, flow label 0
  wr16(ip + 4, uint16_t(kNdMsg + kLlaOption));
  ip[6] = kProtoIcmpv6;
  ip[7] = 255;
  std::memcpy(ip + 8, target.data(), 16);  // from the address asked about
  std::memcpy(ip + 24, dst.data(), 16);
  uint8_t* m = ip + kIpv6Hdr;
  m[0] = kNdNeighborAdvertisement;
  m[1] = 0;
  wr16(m + 2, 0);
  m[4] = uint8_t(dad ? 0x20 : 0x60);  // R=0, S (not for DAD), O=1
  m[5] = m[6] = m[7] = 0;
  std::memcpy(m + 8, target.data(), 16);
  m[24] = 2;  // target link-layer address
  m[25] = 1;
  std::memcpy(m + 26, our_mac.b.data(), 6);
  wr16(m + 2, csumFold(icmpv6Sum(ip, m, kNdMsg + kLlaOption)));
  return total;
}

}  // namespace gwlb
