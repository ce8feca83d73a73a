// ARP (RFC 826) for the underlay: answering for our own address and resolving
// appliances. Pure code over byte spans. Handled on the control thread only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/net_types.h"

namespace gwlb {

inline constexpr size_t kArpFrameLen = 42;  // Ethernet 14 + ARP 28 (untagged)

struct ArpPacket {
  uint16_t op = 0;            // 1 request, 2 reply
  MacAddr sender_mac, target_mac;
  uint32_t sender_ip = 0, target_ip = 0;  // host order
  size_t l2_len = 14;         // 18 with an 802.1Q tag
};

// Parses an Ethernet/IPv4 ARP frame. False for anything else or truncated.
bool parseArp(const uint8_t* f, size_t len, ArpPacket& out) noexcept;

// Turns the request in f (parsed as `req`) into our reply, in place: the frame
// keeps its length and tag. Returns the frame length.
size_t makeArpReply(uint8_t* f, const ArpPacket& req, const MacAddr& our_mac) noexcept;

// Writes a broadcast who-has request for target_ip into f (>= kArpFrameLen bytes).
size_t makeArpRequest(uint8_t* f, const MacAddr& our_mac, uint32_t our_ip,
                      uint32_t target_ip) noexcept;

}  // namespace gwlb
