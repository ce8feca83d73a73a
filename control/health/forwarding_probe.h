// The packet of a forwarding check (health_check.forwarding,
// docs/product-rules.md "Forwarding checks"): an ICMP echo request between
// the two addresses the group reserves, wrapped in Geneve for one appliance
// exactly as the data path wraps a packet of that appliance's group (its
// encapsulation template, format, options, flow cookie and UDP source port),
// and the parser of what comes back. Pure code over the published snapshot:
// no DPDK, no Asio. Control thread (and the fuzz target).
//
// The echo request carries a token in its identifier and sequence number
// and again in its payload, after a magic and the address of the appliance
// it was sent to:
//   ICMP: type 8, code 0, id = token >> 16, seq = token & 0xFFFF
//   payload: "gwlb-fwd" (8 bytes), appliance IPv4 (4, big-endian; an IPv6
//   appliance's key), token (4)
// An IPv6 appliance's probe has an outer IPv6 header, as its data packets do.
// When the group reserves IPv6 addresses the probe is the same echo in
// ICMPv6 (type 128, RFC 4443) inside an IPv6 header (hop limit 64).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "common/snapshot.h"

namespace gwlb::ctl {

inline constexpr size_t kForwardingInnerLen = 20 + 8 + 16;   // IPv4 + ICMP echo + payload
inline constexpr size_t kForwardingInnerLen6 = 40 + 8 + 16;  // IPv6 + ICMPv6 echo + payload
// The longest frame buildForwardingProbe writes (ethernet format: an inner
// Ethernet header as well).
inline constexpr size_t kForwardingProbeMaxLen = kMaxEncapLen + 14 + kForwardingInnerLen6;

// Writes the probe with `token` for server id `server` of `s` into out[0..room)
// and returns its length; 0 when the appliance cannot be sent to now (no
// template: MAC unknown, not routable) or the group reserves no addresses.
size_t buildForwardingProbe(const Snapshot& s, uint16_t server, uint32_t token, uint8_t* out,
                            size_t room) noexcept;

// The server id of the appliance a health checker knows by `appliance`: an
// IPv4 address, or an IPv6 appliance's key (ApplianceSlot::ip); kNoAppliance when
// the snapshot has none.
uint16_t forwardingServer(const Snapshot& s, uint32_t appliance) noexcept;

// What a returned probe says.
struct ForwardingReturn {
  // Outer source: the appliance that sent it back (host order; an IPv6
  // appliance by its key, applianceKey()).
  uint32_t appliance = 0;
  uint32_t sent_to = 0;    // the appliance the payload names: the one it was sent to
  uint32_t token = 0;
  uint32_t src = 0, dst = 0;  // the inner addresses (host order; IPv4)
  bool v6 = false;            // an ICMPv6 echo: the inner addresses are these
  std::array<uint8_t, 16> src6{}, dst6{};
};

// Parses a frame the workers handed over as a returned probe: Ethernet (one
// optional tag), IPv4 or IPv6, UDP to 6081, Geneve (either format), an inner IPv4
// ICMP (or IPv6 ICMPv6) echo request whose identifier, sequence number and
// payload agree.
// False for anything else. Never reads past f[0..len).
bool parseForwardingReturn(const uint8_t* f, size_t len, ForwardingReturn& out) noexcept;

}  // namespace gwlb::ctl
