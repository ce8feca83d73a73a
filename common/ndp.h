// IPv6 Neighbor Discovery (RFC 4861) on the underlay. For the gateway's own
// addresses (node.ipv6_addresses): the dataplane punts neighbor solicitations
// for them, the control thread answers each with a neighbor advertisement
// carrying the MAC of the port it came in on, as it answers ARP for IPv4. For
// IPv6 appliances: the control thread solicits their MACs and learns them from
// their advertisements, as ARP resolves IPv4 ones. Pure code over byte spans:
// never reads past `len`, never writes past `room`, no allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/net_types.h"

namespace gwlb {

// ICMPv6 types of neighbor discovery (RFC 4861 section 4): link-local
// messages, never forwarded.
inline constexpr uint8_t kNdRouterSolicitation = 133;
inline constexpr uint8_t kNdRouterAdvertisement = 134;
inline constexpr uint8_t kNdNeighborSolicitation = 135;
inline constexpr uint8_t kNdNeighborAdvertisement = 136;
inline constexpr uint8_t kNdRedirect = 137;
inline bool isNdType(uint8_t icmpv6_type) {
  return icmpv6_type >= kNdRouterSolicitation && icmpv6_type <= kNdRedirect;
}

using Ipv6Bytes = std::array<uint8_t, 16>;

struct NeighborSolicitation {
  MacAddr eth_src;             // who asked (the advertisement's Ethernet destination)
  bool has_vlan = false;
  uint16_t vlan_tpid = 0, vlan_tci = 0;
  size_t l2_len = 14;          // 18 with a tag
  Ipv6Bytes src{}, dst{}, target{};
  bool has_source_lladdr = false;
  MacAddr source_lladdr;       // the source link-layer address option, when present
  bool dad() const;            // from :: (duplicate address detection by another node)
};

// Parses an Ethernet frame (at most one 802.1Q/802.1ad tag) carrying a
// neighbor solicitation and applies RFC 4861 section 7.1.1's validity checks:
// IPv6 with ICMPv6 directly behind the fixed header, hop limit 255, code 0,
// ICMPv6 length >= 24, a valid checksum, a target that is not multicast,
// options of non-zero length inside the message, and from :: only to a
// solicited-node address and without a source link-layer option. False for
// anything else.
bool parseNeighborSolicitation(const uint8_t* f, size_t len, NeighborSolicitation& out) noexcept;

// Writes into f[0..room) the advertisement that answers `ns` for ns.target
// from `our_mac`: to the asker (or to all nodes, ff02::1, for a DAD probe),
// same tag, hop limit 255, Solicited (unless DAD) and Override set, Router
// clear, with a target link-layer address option. Returns its length (86, 90
// tagged), or 0 when room is too small. f may hold `ns`'s own frame.
size_t makeNeighborAdvertisement(uint8_t* f, size_t room, const NeighborSolicitation& ns,
                                 const MacAddr& our_mac) noexcept;

struct NeighborAdvertisement {
  MacAddr eth_src;
  size_t l2_len = 14;          // 18 with a tag
  Ipv6Bytes src{}, dst{}, target{};
  bool router = false, solicited = false, override_flag = false;
  bool has_target_lladdr = false;
  MacAddr target_lladdr;       // the target link-layer address option, when present
};

// Parses an Ethernet frame (at most one tag) carrying a neighbor
// advertisement and applies RFC 4861 section 7.1.2's validity checks: IPv6
// with ICMPv6 directly behind the fixed header, hop limit 255, code 0, ICMPv6
// length >= 24, a valid checksum, a target that is not multicast, options of
// non-zero length inside the message, and Solicited clear when sent to a
// multicast address. False for anything else.
bool parseNeighborAdvertisement(const uint8_t* f, size_t len, NeighborAdvertisement& out) noexcept;

// Writes into f[0..room) an untagged solicitation from our_ip/our_mac for
// `target`, with our source link-layer address option: to target's
// solicited-node multicast address (resolution) or, with `unicast_mac`, to
// target at that MAC (RFC 4861 section 7.3.3's probe of a stale entry).
// Returns its length (86), or 0 when room is too small.
size_t makeNeighborSolicitation(uint8_t* f, size_t room, const MacAddr& our_mac,
                                const Ipv6Bytes& our_ip, const Ipv6Bytes& target,
                                const MacAddr* unicast_mac) noexcept;

// ff02::1:ffXX:XXXX, the solicited-node multicast address of `a` (RFC 4291).
Ipv6Bytes solicitedNodeAddress(const Ipv6Bytes& a) noexcept;

}  // namespace gwlb
