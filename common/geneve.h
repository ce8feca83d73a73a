// Geneve (RFC 8926) as a gateway load balancer speaks it. Pure code: the
// encapsulation writer and the validator of what appliances send back.
//
//  Geneve header (8 bytes + options):
//   0                   1                   2                   3
//   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |Ver|  Opt Len  |O|C|    Rsvd.  |          Protocol Type        |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |        Virtual Network Identifier (VNI)       |    Reserved   |
//  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//  |                    Variable-Length Options                    |
//
//  Option: | Option Class (16) | Type (8) |R|R|R| Length (5) | data (Length x 4 B) |
//  Type's high bit = critical.
//
// aws format: protocol 0x0800/0x86DD (inner L3), three class-0x0108 options:
// type 1 endpoint ID (8 B), type 2 attachment ID (8 B), type 3 flow cookie (4 B).
// ethernet format: protocol 0x6558, inner Ethernet frame, no options.
// nsi format (Google Cloud's Network Security Integration): protocol
// 0x0800/0x86DD (inner L3), three class-0x0132 options, 32 bytes as aws's
// are, so that one template and one per-packet writer serve both:
//   type 1 network ID, 4 B:
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |                 Network ID (28 bits)                  |R|R|R|D|
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//     D: 0 ingress, 1 egress; gwlb writes 1 on packets travelling against
//     their flow's first packet. The group's VNI is the network ID.
//   type 3 profile ID, 8 B: the traffic class's tag (0: none).
//   type 2 endpoint ID, 8 B: the group's endpoint_id (32 bits) in the high
//     half, the flow cookie in the low half (the last 4 bytes of the options,
//     where aws has its cookie).
// Readers must walk the options by TLV: the order is ours, not Google's.
//
// gwlb's own options (class node.geneve_option_class, default 0xFF01 from the
// experimental range of RFC 8926 section 7), in either format:
//   type 0x01 bypass (appliance -> gwlb, on a returned packet), 4 bytes: the
//   seconds the appliance asks not to see the flow (0: for the flow's life).
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/counters.h"
#include "common/net_types.h"
#include "common/packet_parser.h"

namespace gwlb {

inline constexpr uint16_t kGenevePort = 6081;
inline constexpr uint16_t kAwsOptionClass = 0x0108;
inline constexpr uint8_t kAwsOptEndpointId = 1;
inline constexpr uint8_t kAwsOptAttachmentId = 2;
inline constexpr uint8_t kAwsOptFlowCookie = 3;
inline constexpr uint16_t kNsiOptionClass = 0x0132;
inline constexpr uint8_t kNsiOptNetworkId = 1;
inline constexpr uint8_t kNsiOptEndpointId = 2;
inline constexpr uint8_t kNsiOptProfileId = 3;
inline constexpr size_t kNsiProfileAt = 8 + 4;  // the profile ID's data, from the first option
inline constexpr uint32_t kNsiMaxNetworkId = 0x0FFFFFFF;
inline constexpr uint16_t kGwlbOptionClassDefault = 0xFF01;
inline constexpr uint8_t kGwlbOptBypass = 0x01;  // appliance -> gwlb
inline constexpr uint8_t kGwlbOptMirror = 0x02;  // gwlb -> mirror tool
inline constexpr uint8_t kGwlbOptTag = 0x03;     // gwlb -> appliance
inline constexpr size_t kGeneveBaseLen = 8;
inline constexpr size_t kAwsOptionsLen = 32;  // (4+8) + (4+8) + (4+4)
inline constexpr size_t kOuterL2L3L4Len = 14 + 20 + 8;
inline constexpr size_t kMaxGeneveOptionsLen = 252;

// Bytes the writer puts in front of the payload.
inline constexpr size_t encapHeaderLen(bool aws_options) noexcept {
  return kOuterL2L3L4Len + kGeneveBaseLen + (aws_options ? kAwsOptionsLen : 0);
}

// An IPv6 underlay: the outer IPv6 header is 40 bytes, 20 more than IPv4's,
// and so is every encapsulated packet (the inner MTU is 20 bytes smaller).
inline constexpr size_t kOuterIpv6Extra = 20;
inline constexpr size_t encapHeaderLen(bool aws_options, bool ipv6) noexcept {
  return encapHeaderLen(aws_options) + (ipv6 ? kOuterIpv6Extra : 0);
}

struct EncapParams {
  MacAddr src_mac, dst_mac;
  uint32_t src_ip = 0, dst_ip = 0;  // host order
  uint16_t udp_sport = 0;
  uint32_t vni = 0;
  uint16_t protocol = 0;            // 0x0800, 0x86DD or 0x6558
  bool aws_options = false;
  uint64_t endpoint_id = 0, attachment_id = 0;
  uint32_t cookie = 0;
  // With aws_options: the nsi format's options instead of aws's (same
  // length). vni is the network ID, endpoint_id's low 32 bits the endpoint
  // ID's high half; nsi_egress sets the network ID's D bit.
  bool nsi = false;
  bool nsi_egress = false;
  uint64_t profile_id = 0;
  // Outer IPv6 instead of IPv4 (src_ip6/dst_ip6; src_ip/dst_ip unused).
  // traffic_class and flow_label are per packet (writeEncap6, encapInline6).
  bool ipv6 = false;
  std::array<uint8_t, 16> src_ip6{}, dst_ip6{};
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;
  // VXLAN (RFC 7348) instead of Geneve: the same 8-byte header length, an
  // inner Ethernet frame, to udp_dport (the tunnel's port; Azure's tunnels
  // use their own ports, not 4789). protocol and aws_options are then unused.
  bool vxlan = false;
  uint16_t udp_dport = kGenevePort;
};

// Writes outer Ethernet / IPv4 (DF, TTL 64, checksum) / UDP (to 6081, checksum)
// / Geneve (+ aws options), or with p.vxlan the VXLAN header to p.udp_dport, into frame[0 .. encapHeaderLen()), in front of the
// payload_len bytes that already follow it. Never fails: sizes are the caller's.
void writeEncap(uint8_t* frame, size_t payload_len, const EncapParams& p) noexcept;

// The same with an outer IPv6 header (p.ipv6): version 6, p.traffic_class,
// p.flow_label, hop limit 64, no extension headers, and a UDP checksum
// always computed (RFC 8200 section 8.1: zero is not allowed over IPv6; the
// RFC 6935/6936 exception for tunnels needs every receiver configured to
// accept it, which appliance images are not). Writes encapHeaderLen(aws, true)
// bytes.
void writeEncap6(uint8_t* frame, size_t payload_len, const EncapParams& p) noexcept;

// The outer headers of one appliance, built once per snapshot (control
// thread) so the fast path writes them with one copy and patches only what
// changes per packet: IPv4 total length and checksum, UDP source port, length
// and checksum, the Geneve protocol type (aws: 0x0800 / 0x86DD) and the flow
// cookie. Both checksums are finished incrementally from sums taken here.
inline constexpr size_t kMaxEncapLen =
    kOuterL2L3L4Len + kOuterIpv6Extra + kGeneveBaseLen + kAwsOptionsLen;
struct EncapTemplate {
  alignas(16) uint8_t bytes[112] = {};  // encapHeaderLen(aws, ipv6) bytes are used
  uint8_t len = 0;                     // 0: not built
  bool aws = false;
  bool nsi = false;  // aws's layout with the nsi format's options
  // Outer IPv6 (encapInline6): ip_sum is unused (IPv6 has no header
  // checksum); udp_sum and pseudo_sum hold the IPv6 pseudo-header's
  // addresses and next header instead of IPv4's.
  bool ipv6 = false;
  uint32_t ip_sum = 0;   // one's-complement sum of the IPv4 header, length 0, checksum 0 (folded: at most 0xFFFF)
  uint32_t udp_sum = 0;  // pseudo-header addresses + proto, UDP dport, Geneve header
                         // (protocol 0, cookie 0): everything but per-packet fields
  uint32_t pseudo_sum = 0;  // pseudo-header addresses + proto only (checksum offload)
};
static_assert(kMaxEncapLen <= sizeof(EncapTemplate::bytes));

// Fills `t` from p (p.udp_sport, p.cookie and, for aws, p.protocol are ignored:
// they are per packet).
void buildEncapTemplate(EncapTemplate& t, const EncapParams& p) noexcept;

// Writes t's headers into frame[0 .. t.len) in front of payload_len bytes and
// finishes them: the same bytes writeEncap() writes for the same parameters.
// payload_sum is the one's-complement sum (csumAdd) of the payload's bytes,
// in any unfolded form.
void applyEncap(uint8_t* frame, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                uint16_t protocol, uint32_t cookie, uint32_t payload_sum) noexcept;

// The same headers for a NIC that finishes the checksums (IPv4 and UDP TX
// checksum offload): the IPv4 checksum is left 0 and the UDP checksum holds
// the pseudo-header's folded sum (not complemented), as the NIC expects; the
// caller sets the mbuf's offload flags and header lengths. No payload sum is
// needed: that is the work the NIC takes over.
void applyEncapOffload(uint8_t* frame, const EncapTemplate& t, size_t payload_len,
                       uint16_t udp_sport, uint16_t protocol, uint32_t cookie) noexcept;

// gwlb's tag option (type kGwlbOptTag, 8 bytes of data):
//  | Option Class | 0x03 | 2 | Flags |R| Reserved (24) | Tag (32) |
// R: the packet travels opposite to its flow's first packet. Written after the
// template's options (aws: after AWS's three, which stay first and unchanged).
inline constexpr size_t kGwlbTagOptionLen = 12;
// Writes it at p[0..12) and returns the one's-complement sum of those bytes
// (big-endian 16-bit words, as csumAdd), for the UDP checksum.
inline uint32_t writeTagOption(uint8_t* p, uint16_t option_class, uint32_t tag, bool reverse) noexcept {
  const uint8_t b[kGwlbTagOptionLen] = {uint8_t(option_class >> 8), uint8_t(option_class), kGwlbOptTag, 2,
                                        uint8_t(reverse ? 1 : 0), 0, 0, 0,
                                        uint8_t(tag >> 24), uint8_t(tag >> 16), uint8_t(tag >> 8), uint8_t(tag)};
  uint32_t sum = 0;
  for (size_t i = 0; i < kGwlbTagOptionLen; i += 2) {
    p[i] = b[i];
    p[i + 1] = b[i + 1];
    sum += uint32_t(b[i]) << 8 | b[i + 1];
  }
  return sum;
}
// applyEncap() and applyEncapOffload() for a template with an outer IPv6
// header (t.ipv6). tc_label is the first word's low 28 bits: the traffic
// class << 20 | the flow label (ipv6TrafficClassLabel()); neither is in the
// UDP checksum's pseudo-header, so they cost no checksum work. The offload
// form leaves the NIC the UDP checksum (no IPv6 header checksum exists).
void applyEncap6(uint8_t* frame, const EncapTemplate& t, size_t payload_len, uint16_t udp_sport,
                 uint16_t protocol, uint32_t cookie, uint32_t payload_sum,
                 uint32_t tc_label) noexcept;
void applyEncapOffload6(uint8_t* frame, const EncapTemplate& t, size_t payload_len,
                        uint16_t udp_sport, uint16_t protocol, uint32_t cookie,
                        uint32_t tc_label) noexcept;

// UDP source port for a flow: constant per flow, spread over 49152..65535.
inline uint16_t geneveSourcePort(uint32_t flow_hash) noexcept {
  return uint16_t(49152u + (flow_hash % 16384u));
}

// The outer IPv6 flow label of a flow (RFC 6438: a tunnel's label is taken
// from the inner flow, so ECMP and LAG hashing on the label alone keep a
// flow's packets on one path): 20 bits of the flow hash other than the ones
// the source port uses, never 0 (RFC 6437: 0 means "no label").
inline uint32_t geneveFlowLabel(uint32_t flow_hash) noexcept {
  const uint32_t l = (flow_hash >> 12) & 0xFFFFF;
  return l ? l : 1;
}

// The outer IPv6 header's first word below the version: the traffic class
// << 20 | the flow label. The inner packet's DSCP is copied (RFC 2983's
// uniform model, so the underlay's queues treat the flow as its sender
// asked); the ECN field is Not-ECT (RFC 6040 section 4.1's compatibility
// mode): a CE mark the underlay put on the outer header would be lost, since
// neither an appliance nor our own return path is known to copy it inward,
// and a lost mark is worse than a drop. inner_l3 is the inner IP header
// (version 4 or 6).
inline uint32_t ipv6TrafficClassLabel(const uint8_t* inner_l3, uint8_t ip_version,
                                      uint32_t flow_hash) noexcept {
  const uint32_t tos = ip_version == 4 ? inner_l3[1] : uint32_t(inner_l3[0] << 4 | inner_l3[1] >> 4);
  return (tos & 0xFC) << 20 | geneveFlowLabel(flow_hash);
}

struct GeneveInfo {
  uint8_t version = 0;
  bool oam = false;
  bool critical = false;
  uint16_t protocol = 0;
  uint32_t vni = 0;
  size_t header_len = 0;  // 8 + options
  bool has_cookie = false, has_endpoint_id = false, has_attachment_id = false;
  uint32_t cookie = 0;
  uint64_t endpoint_id = 0, attachment_id = 0;
  // The nsi format's options (class 0x0132): an endpoint ID of 8 bytes gives
  // the flow cookie (its low half: has_cookie) as well.
  bool has_network_id = false, nsi_egress = false, has_profile_id = false, has_nsi_endpoint = false;
  uint32_t network_id = 0;
  uint64_t profile_id = 0, nsi_endpoint = 0;
  // gwlb's bypass option (class `gwlb_class` of parseGeneve): present with 4
  // bytes of data (bypass_seconds), or present with another length (malformed:
  // the packet is still delivered, the request refused).
  bool has_bypass = false, bypass_malformed = false;
  uint32_t bypass_seconds = 0;
};

enum class GeneveStatus : uint8_t { kOk, kControl, kDrop };

// Validates the Geneve header at p[0..len) (the UDP payload). kControl: an
// O-bit packet (counted, not forwarded). kDrop: `drop` says why (version,
// truncation, option lengths, unknown critical option). gwlb_class: the class
// of gwlb's own options (node.geneve_option_class).
GeneveStatus parseGeneve(const uint8_t* p, size_t len, GeneveInfo& out, Counter& drop,
                         uint16_t gwlb_class = kGwlbOptionClassDefault) noexcept;

// The return path's acceptance tests: true only for exactly the header gwlb's
// own encapsulation writes for a group of VNI `vni` (an appliance that
// echoes it back unchanged), which parseGeneve() accepts with that VNI,
// that protocol, no O or C bit, no bypass option. They decide nothing else:
// false sends the packet through parseGeneve() and the checks in their
// order (docs/wire-format.md), so every drop counts what it always did. The
// header's words are compared as they lie in memory, against constants byte-
// swapped at compile time, and the fields the return path does not read
// (endpoint and attachment IDs) are not loaded; a GeneveInfo is not filled.
namespace geneve_detail {
static_assert(std::endian::native == std::endian::little, "the words below are byte-swapped for a little-endian load");
// v in network order, as a 32-bit load of those bytes reads it.
constexpr uint32_t wire32(uint32_t v) noexcept { return __builtin_bswap32(v); }
inline uint32_t load32(const uint8_t* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// The second word: the VNI and a reserved byte, which RFC 8926 says receivers ignore.
inline bool vniIs(const uint8_t* p, uint32_t vni) noexcept {
  return (load32(p + 4) & wire32(0xFFFFFF00u)) == wire32(vni << 8);
}
}  // namespace geneve_detail

// aws format, inner IPv4: Opt Len 8, no flags, protocol 0x0800, the group's
// VNI, then the endpoint ID, attachment ID and cookie options (class 0x0108,
// types 1/2/3, lengths 2/2/1, none critical) in the order our encapsulation
// writes them. `cookie`: the cookie option's value.
inline bool isOwnGeneveAwsIpv4(const uint8_t* p, size_t len, uint32_t vni, uint32_t& cookie) noexcept {
  using namespace geneve_detail;
  if (len < kGeneveBaseLen + kAwsOptionsLen) return false;
  const uint8_t* o = p + kGeneveBaseLen;
  if (load32(p) != wire32(uint32_t(kAwsOptionsLen / 4) << 24 | kEtherTypeIpv4) || !vniIs(p, vni) ||
      load32(o) != wire32(uint32_t(kAwsOptionClass) << 16 | kAwsOptEndpointId << 8 | 2) ||
      load32(o + 12) != wire32(uint32_t(kAwsOptionClass) << 16 | kAwsOptAttachmentId << 8 | 2) ||
      load32(o + 24) != wire32(uint32_t(kAwsOptionClass) << 16 | kAwsOptFlowCookie << 8 | 1))
    return false;
  cookie = __builtin_bswap32(load32(o + 28));
  return true;
}

// ethernet format: no options, no flags, protocol 0x6558, the group's VNI.
inline bool isOwnGenevePlain(const uint8_t* p, size_t len, uint32_t vni) noexcept {
  using namespace geneve_detail;
  return len >= kGeneveBaseLen && load32(p) == wire32(kEtherTypeTeb) && vniIs(p, vni);
}

// An appliance's side (gwlb-appliance, gwlb-replay's reflection): copies the
// Geneve packet g[0..len) (UDP payload) to out[0..cap) with gwlb's bypass
// option (class gwlb_class, `seconds`, 0: the flow's life) appended to its
// options. Returns the new length, or 0 when it does not fit (cap, or the
// 252-byte option area) or g is not a Geneve header.
size_t addBypassOption(const uint8_t* g, size_t len, uint8_t* out, size_t cap, uint16_t gwlb_class,
                       uint32_t seconds) noexcept;

}  // namespace gwlb
