// A small packet builder for the dp tests: Ethernet / 802.1Q / IPv4 (with
// options, fragments) / IPv6 (with extension headers, fragment header) / TCP /
// UDP / ICMP / ICMPv6 / Geneve, with correct lengths and checksums.
//
// Deliberately independent of common/ (its own checksum and byte writers), so
// that the pipeline's output is checked against a second implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/net_types.h"

namespace gwlb::dptest {

using Bytes = std::vector<uint8_t>;

MacAddr mac(const char* text);   // aborts the test binary on a typo
IpAddr ip(const char* text);

// Big-endian readers/writers on a byte vector.
uint16_t get16(const Bytes& b, size_t off);
uint32_t get32(const Bytes& b, size_t off);
uint64_t get64(const Bytes& b, size_t off);
void put16(Bytes& b, size_t off, uint16_t v);
void put32(Bytes& b, size_t off, uint32_t v);
void append16(Bytes& b, uint16_t v);
void append32(Bytes& b, uint32_t v);
void append64(Bytes& b, uint64_t v);
void append(Bytes& b, const Bytes& tail);
Bytes slice(const Bytes& b, size_t off, size_t len);
Bytes pattern(size_t n, uint8_t seed = 0);  // deterministic payload bytes

// RFC 1071 one's-complement sum (unfolded) and folded checksum.
uint32_t sum16(const uint8_t* p, size_t n, uint32_t acc = 0);
uint16_t fold(uint32_t acc);  // ~sum, 16 bits
// Pseudo-header sum for an upper-layer packet of `len` bytes.
uint32_t pseudoSum(const IpAddr& src, const IpAddr& dst, uint8_t proto, size_t len);
// True when the internet checksum over [p, p+n) (plus `acc`) verifies.
bool checksumOk(const uint8_t* p, size_t n, uint32_t acc = 0);

// ---- L4 (checksums need the addresses of the IP header that carries them) ----
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpAck = 0x10;

Bytes tcp(const IpAddr& src, const IpAddr& dst, uint16_t sport, uint16_t dport,
          const Bytes& payload = {}, uint8_t flags = kTcpSyn, uint32_t seq = 1000,
          uint32_t ack = 1);  // ack: written only with kTcpAck in flags
Bytes udp(const IpAddr& src, const IpAddr& dst, uint16_t sport, uint16_t dport,
          const Bytes& payload = {});
// ICMPv4: type, code, the 4 "rest of header" bytes, body; checksum over all.
Bytes icmp4(uint8_t type, uint8_t code, uint32_t rest, const Bytes& body);
Bytes icmp4Echo(bool request, uint16_t id, uint16_t seq, const Bytes& payload = {});
// ICMPv6 (pseudo-header checksum).
Bytes icmp6(const IpAddr& src, const IpAddr& dst, uint8_t type, uint8_t code, uint32_t rest,
            const Bytes& body);
Bytes icmp6Echo(const IpAddr& src, const IpAddr& dst, bool request, uint16_t id, uint16_t seq,
                const Bytes& payload = {});

// ---- IPv4 ----
struct V4 {
  uint8_t tos = 0;
  uint16_t id = 0x1234;
  bool df = true;
  bool mf = false;
  uint16_t frag_offset = 0;  // bytes, multiple of 8
  uint8_t ttl = 64;
  Bytes options;             // padded with EOL to a multiple of 4
  int ihl_words = -1;        // override the IHL field (malformed packets)
  int total_len = -1;        // override the total length field
};
Bytes ipv4(const IpAddr& src, const IpAddr& dst, uint8_t proto, const Bytes& payload,
           const V4& o = {});
// Splits a whole transport segment into two IPv4 fragments; the first carries
// `first_len` bytes (multiple of 8) of it.
std::vector<Bytes> ipv4Fragments(const IpAddr& src, const IpAddr& dst, uint8_t proto,
                                 const Bytes& segment, size_t first_len, uint16_t id);

// ---- IPv6 ----
struct Ext {
  uint8_t type;  // 0 hop-by-hop, 60 destination options, 44 fragment, 43 routing
  Bytes body;    // everything after next-header/length (already sized), see helpers
};
// Hop-by-hop / destination options with `pad` bytes of PadN option data
// (the header is 8 * units bytes long).
Ext hopByHop(size_t units = 1);
Ext destOpts(size_t units = 1);
Ext fragmentExt(uint16_t offset_bytes, bool more, uint32_t id);
struct V6 {
  uint8_t hop_limit = 64;
  uint32_t flow_label = 0;
  int payload_len = -1;  // override the payload length field
};
Bytes ipv6(const IpAddr& src, const IpAddr& dst, uint8_t proto, const Bytes& payload,
           const std::vector<Ext>& ext = {}, const V6& o = {});
// Two IPv6 fragments of a whole transport segment (fragment header directly
// after the fixed header); the first carries `first_len` bytes (multiple of 8).
std::vector<Bytes> ipv6Fragments(const IpAddr& src, const IpAddr& dst, uint8_t proto,
                                 const Bytes& segment, size_t first_len, uint32_t id);

// ---- Ethernet ----
inline constexpr uint16_t kEthIpv4 = 0x0800;
inline constexpr uint16_t kEthIpv6 = 0x86DD;
inline constexpr uint16_t kEthArp = 0x0806;
inline constexpr uint16_t kEthVlan = 0x8100;
inline constexpr uint16_t kEthQinQ = 0x88A8;
inline constexpr uint16_t kEthTeb = 0x6558;

struct L2 {
  MacAddr dst, src;
  std::optional<uint16_t> vlan;  // TCI
};
// Ethernet (+ one 802.1Q tag) around a payload, zero-padded to `min_len`.
Bytes ether(const L2& l2, uint16_t type, const Bytes& payload, size_t min_len = 0);
Bytes arpRequest(const MacAddr& src, uint32_t sender_ip, uint32_t target_ip);
// Any ARP packet (op 1 request, 2 reply) in a frame to `dst`, padded to 60 bytes.
// A gratuitous ARP: sender_ip == target_ip, to ff:ff:ff:ff:ff:ff.
Bytes arp(uint16_t op, const MacAddr& dst, const MacAddr& src, uint32_t sender_ip,
          const MacAddr& target_mac, uint32_t target_ip, std::optional<uint16_t> vlan = {});
// An IPv6 neighbor solicitation for `target` from `src` at `src_mac` with a
// source link-layer address option. `to`: the frame's destination MAC and IPv6
// address; nullopt = the solicited-node multicast address of `target` and its
// 33:33:ff MAC (address resolution), else a unicast probe to that MAC and to
// `target`.
Bytes neighborSolicitation(const MacAddr& src_mac, const IpAddr& src, const IpAddr& target,
                           std::optional<MacAddr> to = {}, std::optional<uint16_t> vlan = {});
// The solicited-node multicast address of `a` (ff02::1:ffXX:XXXX) and its MAC.
IpAddr solicitedNode(const IpAddr& a);
MacAddr multicastMac(const IpAddr& group);

// ---- Geneve ----
Bytes geneveOption(uint16_t cls, uint8_t type, const Bytes& data);
struct GeneveHdr {
  uint8_t version = 0;
  bool oam = false;
  bool critical = false;
  int opt_len_words = -1;  // override (default: options.size() / 4)
  uint16_t protocol = kEthIpv4;
  uint32_t vni = 0;
  Bytes options;
};
Bytes geneve(const GeneveHdr& g);
// The three aws options (class 0x0108 types 1, 2, 3).
Bytes awsOptions(uint64_t endpoint_id, uint64_t attachment_id, uint32_t cookie);
// Outer Ethernet / IPv4 (DF, TTL 64) / UDP (to 6081) around Geneve header + inner;
// IPv6 (hop limit 64) when the addresses are.
Bytes geneveFrame(const MacAddr& dst_mac, const MacAddr& src_mac, const IpAddr& src,
                  const IpAddr& dst, uint16_t sport, const Bytes& geneve_hdr, const Bytes& inner);

std::string hex(const Bytes& b, size_t max = 96);

}  // namespace gwlb::dptest
