#include "dataplane/ingress.h"

#include "common/arp.h"
#include "common/ndp.h"

namespace gwlb::dp {

bool arpWanted(const uint8_t* f, size_t len, const Snapshot& s, PortRole role) noexcept {
  ArpPacket a;
  if (!parseArp(f, len, a)) return false;
  if (a.target_ip == s.underlay_ip) return true;
  return acceptsReturns(role) && s.applianceByIp(a.sender_ip) != kNoAppliance;
}

bool isNodeIpv6(const Snapshot& s, const uint8_t* a) noexcept {
  for (const auto& mine : s.node_ipv6)
    if (std::memcmp(mine.data(), a, 16) == 0) return true;
  return false;
}

NdVerdict ndVerdict(const uint8_t* f, const ParsedPacket& p, const Snapshot& s,
                    PortRole role) noexcept {
  if (p.ip_version != 6 || p.tuple.proto != kProtoIcmpv6 || p.icmp_error || p.l4_offset == 0)
    return NdVerdict::kNotNd;
  // The parser saw at least 8 bytes of ICMPv6 here.
  const uint8_t* m = f + p.l4_offset;
  if (!isNdType(m[0])) return NdVerdict::kNotNd;
  size_t end = size_t(p.l3_offset) + p.l3_len;
  if (m[0] == kNdNeighborSolicitation && size_t(p.l4_offset) + 24 <= end && isNodeIpv6(s, m + 8))
    return NdVerdict::kPunt;
  if (m[0] == kNdNeighborAdvertisement && size_t(p.l4_offset) + 24 <= end && acceptsReturns(role) &&
      !s.by_ip6.empty() && s.applianceByIp6(m + 8) != kNoAppliance)
    return NdVerdict::kPunt;
  return NdVerdict::kDrop;
}

bool foreignFrameWanted(const uint8_t* f, size_t len, const Snapshot& s, const PortView* pv,
                        Counter& why) noexcept {
  why = Counter::drop_not_our_mac;
  if (!pv || !(f[0] & 1)) return false;  // unicast to another host
  static constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  const bool broadcast = std::memcmp(f, kBroadcast, 6) == 0;
  ParsedPacket p;
  Counter ignored;
  ParseStatus st = parseFrame(f, len, p, ignored);
  if (broadcast) {
    why = Counter::drop_l2_broadcast;
    return st == ParseStatus::kArp && arpWanted(f, len, s, pv->role);
  }
  why = Counter::drop_l2_multicast;
  return st == ParseStatus::kOk && ndVerdict(f, p, s, pv->role) == NdVerdict::kPunt;
}

}  // namespace gwlb::dp
