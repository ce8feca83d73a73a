// Internet checksum (RFC 1071) helpers. Pure code.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gwlb {

static_assert(std::endian::native == std::endian::little, "csumAdd sums little-endian words");

// Adds bytes to a running 32-bit one's-complement sum (big-endian 16-bit words).
// The bytes are summed 8 at a time as little-endian words with end-around
// carry (RFC 1071: the sum commutes with byte swapping), folded to 16 bits and
// swapped back, so the result is congruent (mod 0xFFFF) to the plain word sum
// and never 0 for non-zero data. `p` starts a 16-bit word of the checksummed
// region; len may be odd (the last byte is the high half of a word).
inline uint32_t csumAdd(uint32_t sum, const uint8_t* p, size_t len) noexcept {
  uint64_t acc = 0;
  auto add = [&acc](uint64_t w) {
    acc += w;
    acc += acc < w;
  };
  for (; len >= 32; p += 32, len -= 32) {
    uint64_t w[4];
    std::memcpy(w, p, 32);
    add(w[0]);
    add(w[1]);
    add(w[2]);
    add(w[3]);
  }
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    add(w);
  }
  if (len >= 4) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    add(w);
    p += 4;
    len -= 4;
  }
  if (len >= 2) {
    uint16_t w;
    std::memcpy(&w, p, 2);
    add(w);
    p += 2;
    len -= 2;
  }
  if (len) add(p[0]);  // little-endian: the low byte here is the high byte of the word
  uint64_t f = (acc & 0xFFFFFFFF) + (acc >> 32);
  f = (f & 0xFFFF) + ((f >> 16) & 0xFFFF) + (f >> 32);
  f = (f & 0xFFFF) + (f >> 16);
  f = (f & 0xFFFF) + (f >> 16);
  return sum + uint32_t(((f & 0xFF) << 8) | (f >> 8));
}

// csumAdd(0, p, N) for a short even N known at compile time, inline: the few
// header bytes in front of a segment that the encapsulation sums per packet
// (payloadSum in fast_path.h: an inner Ethernet header and the IP header's
// first words), where csumAdd's call and loops cost about 80 instructions on
// 26 bytes. The result is at most 0x1FFFE (not folded to 16 bits); congruent
// to csumAdd's modulo 0xFFFF, so any csumFold of a sum holding it agrees.
template <size_t N>
[[gnu::always_inline]] inline uint32_t csumShort(const uint8_t* p) noexcept {
  static_assert(N % 2 == 0 && N <= 256, "whole 16-bit words");
  uint64_t acc = 0;
  auto add = [&acc](uint64_t w) {
    acc += w;
    acc += acc < w;
  };
#pragma GCC unroll 32
  for (size_t i = 0; i + 8 <= N; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    add(w);
  }
  if constexpr (N % 8 >= 4) {
    uint32_t w;
    std::memcpy(&w, p + N / 8 * 8, 4);
    add(w);
  }
  if constexpr (N % 4 == 2) {
    uint16_t w;
    std::memcpy(&w, p + N - 2, 2);
    add(w);
  }
  // 32 bits with the end-around carry (2^32 = 1 modulo 0xFFFF), then every
  // byte swapped: little-endian words to big-endian ones (RFC 1071's byte
  // order independence, applied to both 16-bit halves at once).
  const uint32_t lo = uint32_t(acc), hi = uint32_t(acc >> 32);
  uint32_t r = lo + hi;
  r += r < hi;
  r = __builtin_bswap32(r);
  return (r & 0xFFFF) + (r >> 16);
}

inline uint16_t csumFold(uint32_t sum) noexcept {
  // Two folds take any 32-bit sum to 16 bits (the first leaves at most 0x1FFFE).
  sum = (sum & 0xFFFF) + (sum >> 16);
  sum = (sum & 0xFFFF) + (sum >> 16);
  return uint16_t(~sum & 0xFFFF);
}

// csumFold for a sum of at most 0x1FFFE (two 16-bit words): one fold.
inline uint16_t csumFoldOnce(uint32_t sum) noexcept {
  return uint16_t(~((sum & 0xFFFF) + (sum >> 16)) & 0xFFFF);
}

inline uint16_t inetChecksum(const uint8_t* p, size_t len) noexcept {
  return csumFold(csumAdd(0, p, len));
}

}  // namespace gwlb
