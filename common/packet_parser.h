// Header parser for frames the gateway receives and for the inner packets that
// appliances return. Pure code over a byte span: no DPDK, never reads past `len`,
// never allocates, never throws. A packet that is truncated or inconsistent comes
// back as a drop reason (a Counter) instead of a parse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/counters.h"
#include "common/net_types.h"

namespace gwlb {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeQinQ = 0x88A8;
inline constexpr uint16_t kEtherTypeTeb = 0x6558;  // transparent Ethernet bridging

inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoIcmpv6 = 58;

// Longest IPv6 extension-header chain we walk before giving up.
inline constexpr int kMaxIpv6ExtHeaders = 8;

// The transport identity of one packet (or of the packet an ICMP error quotes).
struct L4Tuple {
  IpAddr src, dst;
  uint8_t proto = 0;
  uint16_t sport = 0, dport = 0;  // host order; ICMP echo: identifier in both
};

struct ParsedPacket {
  // L2 (all zero for a bare L3 parse)
  uint16_t l3_offset = 0;   // bytes of Ethernet (+ tag) before the IP header
  uint16_t ether_type = 0;  // after any tag
  bool has_vlan = false;
  uint16_t vlan_tci = 0;    // host order, valid when has_vlan
  uint16_t vlan_tpid = 0;   // 0x8100 or 0x88A8, valid when has_vlan

  // L3
  uint8_t ip_version = 0;   // 4 or 6
  uint16_t l3_len = 0;      // IP datagram length from its header (excludes L2 padding)
  uint16_t l4_offset = 0;   // from the start of the parsed buffer; 0 when no L4 header
  L4Tuple tuple;            // src/dst/proto always; ports when first fragment or unfragmented

  // Set by the fast parsers only (common/fast_path.h): a plain 20-byte IPv4
  // header, not a fragment, and a TCP segment or a UDP datagram whose own
  // length is the whole IP payload, so its checksum covers every byte behind
  // the IP header (payloadSum's shortcut). False says nothing.
  bool l4_covers_payload = false;

  // Fragments
  bool is_fragment = false;       // MF set or offset > 0
  bool first_fragment = false;    // offset 0
  uint32_t frag_id = 0;           // IPv4 identification or IPv6 fragment identification

  // ICMP / ICMPv6 errors (unreachable, time exceeded, too big, parameter problem)
  bool icmp_error = false;
  uint8_t icmp_type = 0, icmp_code = 0;
  L4Tuple quoted;                 // the header the error carries (sent by the other side)
};

enum class ParseStatus : uint8_t { kOk, kArp, kDrop };

// Parses an Ethernet frame (optionally with one 802.1Q tag). On kDrop, `drop`
// names the reason; on kArp only the L2 fields are valid.
ParseStatus parseFrame(const uint8_t* p, size_t len, ParsedPacket& out, Counter& drop) noexcept;

// Parses a bare IP packet (no Ethernet), as carried inside aws-format Geneve.
// `ether_type` (0x0800 / 0x86DD) says which version to expect.
ParseStatus parseL3(const uint8_t* p, size_t len, uint16_t ether_type, ParsedPacket& out,
                    Counter& drop) noexcept;

// Big-endian (network order) loads and stores at any alignment: one move
// and one byte swap each (the byte-at-a-time forms were not always inlined).
[[gnu::always_inline]] inline uint16_t rd16(const uint8_t* p) noexcept {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return __builtin_bswap16(v);
}
[[gnu::always_inline]] inline uint32_t rd32(const uint8_t* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return __builtin_bswap32(v);
}
[[gnu::always_inline]] inline uint64_t rd64(const uint8_t* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}
[[gnu::always_inline]] inline void wr16(uint8_t* p, uint16_t v) noexcept {
  v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
[[gnu::always_inline]] inline void wr32(uint8_t* p, uint32_t v) noexcept {
  v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}

}  // namespace gwlb
