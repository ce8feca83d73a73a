// What stage 1 of the pipeline (dataplane/pipeline.cc) takes in, and from
// where: a frame must be addressed to its port's own MAC; the broadcast and
// multicast the control thread needs (ARP for us or from the appliances, IPv6
// neighbor solicitations for our addresses) are punted, never forwarded; the
// rest is dropped by reason. Each port's role then says which path its
// traffic may take. Worker code: noexcept, no allocation, no logging.
//
// The common case costs one 6-byte compare (isOwnMac); everything else here
// runs only for frames that are not ordinary traffic to us.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/counters.h"
#include "common/packet_parser.h"
#include "common/snapshot.h"

namespace gwlb::dp {

inline bool isOwnMac(const uint8_t* frame, const PortView& pv) noexcept {
  return std::memcmp(frame, pv.mac.b.data(), 6) == 0;
}

// ARP the control thread needs: for our underlay address, or, on a port
// facing the appliances, from an appliance (its replies, requests and
// gratuitous announcements keep the neighbour cache fresh).
bool arpWanted(const uint8_t* f, size_t len, const Snapshot& s, PortRole role) noexcept;

enum class NdVerdict : uint8_t { kNotNd, kPunt, kDrop };

// For a frame parsed as `p` that came in on a port of `role`: kNotNd unless
// it is ICMPv6 neighbor discovery (types 133-137); then kPunt for a neighbor
// solicitation whose target is one of node_ipv6, or, on a port facing the
// appliances, a neighbor advertisement whose target is an IPv6 appliance (the
// control thread learns its MAC: only configured appliances, so a flood of
// advertisements for other addresses never reaches it); kDrop for anything
// else (link-local, never forwarded).
NdVerdict ndVerdict(const uint8_t* f, const ParsedPacket& p, const Snapshot& s,
                    PortRole role) noexcept;

// True when `a` (16 bytes) is one of the node's IPv6 addresses.
bool isNodeIpv6(const Snapshot& s, const uint8_t* a) noexcept;

// UDP to 6081 (Geneve) or to a VXLAN group's tunnel port: the ports
// appliances return on.
inline bool isTunnelPort(const ParsedPacket& p, const Snapshot& s) noexcept {
  return p.tuple.proto == kProtoUdp &&
         (p.tuple.dport == kGenevePort || s.isVxlanPort(p.tuple.dport));
}

// Geneve, or VXLAN on a group's tunnel port, over IPv6 (not an ICMP error) to
// node.underlay_ipv6: a return from an IPv6 appliance.
inline bool isTunnel6ToUs(const ParsedPacket& p, const Snapshot& s) noexcept {
  return s.has_underlay_ip6 && isTunnelPort(p, s) && !p.icmp_error &&
         std::memcmp(p.tuple.dst.b.data(), s.underlay_ip6.data(), 16) == 0;
}

// Geneve or VXLAN over IPv6 from node.underlay_ipv6 (ours coming back) or to
// one of our IPv6 appliances, arriving from a router: never wrapped again.
inline bool isLoopTunnel6(const ParsedPacket& p, const Snapshot& s) noexcept {
  if (!isTunnelPort(p, s)) return false;
  if (s.has_underlay_ip6 && std::memcmp(p.tuple.src.b.data(), s.underlay_ip6.data(), 16) == 0) return true;
  return !s.by_ip6.empty() && s.applianceByIp6(p.tuple.dst.b.data()) != kNoAppliance;
}

// A frame of at least 14 bytes whose destination is not its port's MAC
// (`pv` null: a port the snapshot does not know). True: punt it to the control
// thread. False: drop it with `why` (drop_not_our_mac, drop_l2_broadcast or
// drop_l2_multicast).
bool foreignFrameWanted(const uint8_t* f, size_t len, const Snapshot& s, const PortView* pv,
                        Counter& why) noexcept;

}  // namespace gwlb::dp
