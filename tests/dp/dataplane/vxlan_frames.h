// What the VXLAN dp tests (test_vxlan.cc over IPv4, test_vxlan_ipv6.cc over
// IPv6) share: Azure's two tunnels as the lab config names them, and the
// VXLAN header (flags, 24 reserved bits, VNI, 8 reserved bits) built by the
// tests themselves, not by common/, so a mistake there cannot hide one here.
#pragma once

#include <cstdint>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest::vxlan {

constexpr uint16_t kExtPort = 10801, kIntPort = 10800;
constexpr uint32_t kExtVni = 801, kIntVni = 800;

// The UDP payload of a VXLAN packet: its 8-byte header, then the inner frame.
inline Bytes payload(uint8_t flags, uint32_t vni, const Bytes& inner) {
  Bytes vx = {flags, 0, 0, 0};
  append32(vx, vni << 8);
  append(vx, inner);
  return vx;
}

}  // namespace gwlb::dptest::vxlan
