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
//
// gwlb's own options (class node.geneve_option_class, default 0xFF01 from the
// experimental range of RFC 8926 section 7), in either format:
//   type 0x01 bypass (appliance -> gwlb, on a returned packet), 4 bytes: the
//   seconds the appliance asks not to see the flow (0: for the flow's life).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/counters.h"
#include "common/net_types.h"

namespace gwlb {

inline constexpr uint16_t kGenevePort = 6081;
inline constexpr uint16_t kAwsOptionClass = 0x0108;
inline constexpr uint8_t kAwsOptEndpointId = 1;
inline constexpr uint8_t kAwsOptAttachmentId = 2;
inline constexpr uint8_t kAwsOptFlowCookie = 3;
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

struct EncapParams {
  MacAddr src_mac, dst_mac;
  uint32_t src_ip = 0, dst_ip = 0;  // host order
  uint16_t udp_sport = 0;
  uint32_t vni = 0;
  uint16_t protocol = 0;            // 0x0800, 0x86DD or 0x6558
  bool aws_options = false;
  uint64_t endpoint_id = 0, attachment_id = 0;
  uint32_t cookie = 0;
};

// Writes outer Ethernet / IPv4 (DF, TTL 64, checksum) / UDP (to 6081, checksum)
// / Geneve (+ aws options) into frame[0 .. encapHeaderLen()), in front of the
// payload_len bytes that already follow it. Never fails: sizes are the caller's.
void writeEncap(uint8_t* frame, size_t payload_len, const EncapParams& p) noexcept;

// The outer headers of one appliance, built once per snapshot (control
// thread) so the fast path writes them with one copy and patches only what
// changes per packet: IPv4 total length and checksum, UDP source port, length
// and checksum, the Geneve protocol type (aws: 0x0800 / 0x86DD) and the flow
// cookie. Both checksums are finished incrementally from sums taken here.
inline constexpr size_t kMaxEncapLen = kOuterL2L3L4Len + kGeneveBaseLen + kAwsOptionsLen;
struct EncapTemplate {
  alignas(16) uint8_t bytes[96] = {};  // encapHeaderLen(aws) bytes are used
  uint8_t len = 0;                     // 0: not built
  bool aws = false;
  uint32_t ip_sum = 0;   // one's-complement sum of the IPv4 header, length 0, checksum 0
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

// UDP source port for a flow: constant per flow, spread over 49152..65535.
inline uint16_t geneveSourcePort(uint32_t flow_hash) noexcept {
  return uint16_t(49152u + (flow_hash % 16384u));
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

// An appliance's side (gwlb-appliance, gwlb-replay's reflection): copies the
// Geneve packet g[0..len) (UDP payload) to out[0..cap) with gwlb's bypass
// option (class gwlb_class, `seconds`, 0: the flow's life) appended to its
// options. Returns the new length, or 0 when it does not fit (cap, or the
// 252-byte option area) or g is not a Geneve header.
size_t addBypassOption(const uint8_t* g, size_t len, uint8_t* out, size_t cap, uint16_t gwlb_class,
                       uint32_t seconds) noexcept;

}  // namespace gwlb
