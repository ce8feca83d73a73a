// Builds ICMPv4 "fragmentation needed" / ICMPv6 "packet too big" in place of a
// packet that is too large for the underlay after encapsulation. Pure code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/packet_parser.h"

namespace gwlb {

// Rewrites the Ethernet frame parsed into `pkt`, held in a buffer frame[0..len)
// (len may exceed the frame: room for a quote longer than a short packet),
// into the ICMP error answering it, addressed back to the packet's source through the
// neighbour it came from (MACs swapped, same VLAN). `mtu` is the largest inner
// IP packet that fits. `v4_src` (host order) is the IPv4 source of the error,
// 0 for none (a node without an IPv4 underlay address): then, as always for an
// IPv6 error, it comes from the packet's own destination address (the gateway
// has no inner address of its own), never from 0.0.0.0.
// Returns the new frame length (<= len), or 0 when no error may be sent
// (IPv4 without DF, an ICMP error itself, a non-first fragment).
size_t buildTooBig(uint8_t* frame, size_t len, const ParsedPacket& pkt, uint32_t mtu,
                   uint32_t v4_src) noexcept;

}  // namespace gwlb
