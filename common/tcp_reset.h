// TCP resets for flows that cannot continue (send_tcp_reset, docs/product-rules.md
// section 2): the RST answering one received segment, built in place of it,
// and the token bucket that bounds how many a worker sends. Pure code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/packet_parser.h"

namespace gwlb {

inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSynFlag = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpAckFlag = 0x10;

// The flags byte of the TCP segment parsed into `p` (frame: the bytes `p`
// was parsed from). Only for a whole segment: tcpResettable(p) holds.
inline uint8_t tcpFlags(const uint8_t* frame, const ParsedPacket& p) noexcept {
  return frame[p.l4_offset + 13];
}

// A packet an RST can answer: a TCP segment with its header (not a fragment,
// not an ICMP error quoting one).
inline bool tcpResettable(const ParsedPacket& p) noexcept {
  return p.tuple.proto == kProtoTcp && !p.icmp_error && !p.is_fragment && p.l4_offset != 0;
}

// Rewrites the Ethernet frame parsed into `p` (frame[0..room): the frame and
// any room after it) into the RST that answers it, as RFC 9293 section
// 3.10.7.1 has a closed port answer a segment: when the segment carries ACK,
// <SEQ=SEG.ACK><CTL=RST>; otherwise <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>,
// where SEG.LEN counts the payload and one for each of SYN and FIN. Taking
// the sequence number from the segment's own ACK is what makes the sender
// accept it (it is the sender's RCV.NXT, RFC 5961's exact match), so no
// per-flow sequence state is needed.
// The RST goes back the way the segment came: MACs swapped, the same VLAN
// tag, addresses and ports swapped; IPv4 TTL / IPv6 hop limit 64, no IP
// options or IPv6 extension headers, DF set, window 0, checksums computed.
// Returns the new frame length (l3_offset + 40 for IPv4, + 60 for IPv6), or 0
// when no RST may be sent: not a resettable segment, or an RST itself (never
// an RST for an RST).
size_t buildTcpReset(uint8_t* frame, size_t room, const ParsedPacket& p) noexcept;

// Tokens for rate_per_s events a second, at most one second's worth banked;
// starts full. rate 0: never. Time is passed in (ns, any monotonic clock).
struct TokenBucket {
  double tokens = 0;
  uint64_t last_ns = 0;
  bool started = false;
  bool take(uint64_t now_ns, uint32_t rate_per_s) noexcept {
    const double rate = double(rate_per_s);
    if (started && now_ns > last_ns) {
      tokens += double(now_ns - last_ns) * rate / 1e9;
      if (tokens > rate) tokens = rate;
    } else if (!started) {
      tokens = rate;
      started = true;
    }
    if (now_ns > last_ns) last_ns = now_ns;
    if (tokens < 1.0) return false;
    tokens -= 1.0;
    return true;
  }
};

}  // namespace gwlb
