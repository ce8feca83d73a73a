// VXLAN (RFC 7348) as Azure's Gateway Load Balancer speaks it: two tunnels
// per appliance pool, each a UDP port and a VNI, carrying the traffic's
// Ethernet frames. Pure code: the header's constants and the validator of
// what appliances send back (the writer is writeEncap(), geneve.h, with
// EncapParams::vxlan).
//
//  VXLAN header (8 bytes), then the inner Ethernet frame:
//   0                   1                   2                   3
//   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |R|R|R|R|I|R|R|R|            Reserved                           |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |                VXLAN Network Identifier (VNI) |   Reserved    |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// RFC 7348 section 5: the I flag must be set (the VNI is valid); the other
// flags and reserved fields are 0 on send and ignored on receive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/counters.h"

namespace gwlb {

inline constexpr uint8_t kVxlanFlagI = 0x08;
inline constexpr size_t kVxlanHeaderLen = 8;
// Azure's defaults for a Gateway Load Balancer pool's tunnel interfaces.
inline constexpr uint16_t kVxlanInternalPort = 10800;
inline constexpr uint32_t kVxlanInternalVni = 800;
inline constexpr uint16_t kVxlanExternalPort = 10801;
inline constexpr uint32_t kVxlanExternalVni = 801;

// A group's two tunnels. Index 0 (external) carries packets travelling the
// way their flow's first packet did (the side that opened it: Azure's
// traffic from the internet to a consumer's frontend), index 1 (internal)
// the replies.
enum VxlanTunnel : uint8_t { kVxlanExternal = 0, kVxlanInternal = 1 };
struct VxlanTunnels {
  uint16_t port[2] = {kVxlanExternalPort, kVxlanInternalPort};
  uint32_t vni[2] = {kVxlanExternalVni, kVxlanInternalVni};
  // Which tunnel a return on UDP port `dport` with `vni` came back on; -1:
  // neither (the port and the VNI must be one tunnel's pair).
  int tunnelOf(uint16_t dport, uint32_t v) const noexcept {
    for (int i = 0; i < 2; ++i)
      if (port[i] == dport && vni[i] == v) return i;
    return -1;
  }
};

// Validates the VXLAN header at p[0..len) (the UDP payload) and returns its
// VNI in `vni`. False: `drop` says why (truncated: no room for the header and
// an Ethernet header; I flag clear: no valid VNI). Never reads past len.
inline bool parseVxlan(const uint8_t* p, size_t len, uint32_t& vni, Counter& drop) noexcept {
  if (len < kVxlanHeaderLen + 14) return drop = Counter::drop_vxlan_truncated, false;
  if (!(p[0] & kVxlanFlagI)) return drop = Counter::drop_vxlan_no_vni, false;
  uint32_t w;  // VNI (24 bits) and the reserved byte: one load, not three
  std::memcpy(&w, p + 4, 4);
  vni = __builtin_bswap32(w) >> 8;
  return true;
}

}  // namespace gwlb
