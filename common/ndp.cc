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

namespace {

// An ND message of `type` in an Ethernet frame (at most one tag) that passes
// RFC 4861's common checks (sections 7.1.1 and 7.1.2): IPv6 with ICMPv6
// directly behind the fixed header, hop limit 255, code 0, a message of at
// least 24 bytes inside the frame, a valid checksum, a target that is not
// multicast, options of non-zero length inside the message. Fills the
// addresses, the tag and the link-layer address option of `lla_type`.
struct NdFrame {
  bool has_vlan = false;
  uint16_t vlan_tpid = 0, vlan_tci = 0;
  size_t l2_len = 14;
  const uint8_t* msg = nullptr;
  Ipv6Bytes src{}, dst{}, target{};
  bool has_lladdr = false;
  MacAddr lladdr;
};

bool parseNdFrame(const uint8_t* f, size_t len, uint8_t type, uint8_t lla_type, NdFrame& out) noexcept {
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
  if (m[0] != type || m[1] != 0) return false;
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
    if (m[off] == lla_type && olen == kLlaOption) {
      out.has_lladdr = true;
      std::memcpy(out.lladdr.b.data(), m + off + 2, 6);
    }
    off += olen;
  }
  out.msg = m;
  out.l2_len = l2;
  return true;
}

}  // namespace

bool parseNeighborSolicitation(const uint8_t* f, size_t len, NeighborSolicitation& out) noexcept {
  out = NeighborSolicitation{};
  NdFrame nd;
  if (!parseNdFrame(f, len, kNdNeighborSolicitation, 1, nd)) return false;  // 1: source lladdr
  out.has_vlan = nd.has_vlan;
  out.vlan_tpid = nd.vlan_tpid;
  out.vlan_tci = nd.vlan_tci;
  out.src = nd.src;
  out.dst = nd.dst;
  out.target = nd.target;
  out.has_source_lladdr = nd.has_lladdr;
  out.source_lladdr = nd.lladdr;
  if (out.dad() && (!isSolicitedNode(out.dst.data()) || out.has_source_lladdr)) return false;
  std::memcpy(out.eth_src.b.data(), f + 6, 6);
  out.l2_len = nd.l2_len;
  return true;
}

bool parseNeighborAdvertisement(const uint8_t* f, size_t len, NeighborAdvertisement& out) noexcept {
  out = NeighborAdvertisement{};
  NdFrame nd;
  if (!parseNdFrame(f, len, kNdNeighborAdvertisement, 2, nd)) return false;  // 2: target lladdr
  out.router = nd.msg[4] & 0x80;
  out.solicited = nd.msg[4] & 0x40;
  out.override_flag = nd.msg[4] & 0x20;
  // RFC 4861 7.1.2: an advertisement to a multicast address answers nobody.
  if (nd.dst[0] == 0xff && out.solicited) return false;
  out.src = nd.src;
  out.dst = nd.dst;
  out.target = nd.target;
  out.has_target_lladdr = nd.has_lladdr;
  out.target_lladdr = nd.lladdr;
  std::memcpy(out.eth_src.b.data(), f + 6, 6);
  out.l2_len = nd.l2_len;
  return true;
}

size_t makeNeighborSolicitation(uint8_t* f, size_t room, const MacAddr& our_mac,
                                const Ipv6Bytes& our_ip, const Ipv6Bytes& target,
                                const MacAddr* unicast_mac) noexcept {
  const size_t total = 14 + kIpv6Hdr + kNdMsg + kLlaOption;
  if (room < total) return 0;
  const Ipv6Bytes dst = unicast_mac ? target : solicitedNodeAddress(target);
  if (unicast_mac) {
    std::memcpy(f, unicast_mac->b.data(), 6);
  } else {
    // 33:33 and the low 32 bits of the multicast address (RFC 2464 section 7).
    f[0] = f[1] = 0x33;
    std::memcpy(f + 2, dst.data() + 12, 4);
  }
  std::memcpy(f + 6, our_mac.b.data(), 6);
  wr16(f + 12, kEtherTypeIpv6);
  uint8_t* ip = f + 14;
  wr32(ip, 0x60000000);
  wr16(ip + 4, uint16_t(kNdMsg + kLlaOption));
  ip[6] = kProtoIcmpv6;
  ip[7] = 255;
  std::memcpy(ip + 8, our_ip.data(), 16);
  std::memcpy(ip + 24, dst.data(), 16);
  uint8_t* m = ip + kIpv6Hdr;
  m[0] = kNdNeighborSolicitation;
  m[1] = 0;
  wr16(m + 2, 0);
  m[4] = m[5] = m[6] = m[7] = 0;
  std::memcpy(m + 8, target.data(), 16);
  m[24] = 1;  // source link-layer address: the appliance learns ours from it
  m[25] = 1;
  std::memcpy(m + 26, our_mac.b.data(), 6);
  wr16(m + 2, csumFold(icmpv6Sum(ip, m, kNdMsg + kLlaOption)));
  return total;
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
