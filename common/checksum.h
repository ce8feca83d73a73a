// Internet checksum (RFC 1071) helpers. Pure code.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gwlb {

// Adds bytes to a running 32-bit one's-complement sum (big-endian 16-bit words).
inline uint32_t csumAdd(uint32_t sum, const uint8_t* p, size_t len) noexcept {
  size_t i = 0;
  for (; i + 1 < len; i += 2) sum += uint32_t((p[i] << 8) | p[i + 1]);
  if (i < len) sum += uint32_t(p[i] << 8);
  return sum;
}

inline uint16_t csumFold(uint32_t sum) noexcept {
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum & 0xFFFF);
}

inline uint16_t inetChecksum(const uint8_t* p, size_t len) noexcept {
  return csumFold(csumAdd(0, p, len));
}

}  // namespace gwlb
