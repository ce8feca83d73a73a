// The flow table of gwlb-appliance's tun mode (--tun): what a packet that the
// kernel forwarded out of the tun device needs to go back to the gateway.
//
// A Geneve packet from the gateway is decapsulated and its inner IP packet
// written to the tun device; the kernel (forwarding, nftables conntrack)
// decides whether it goes on, and what comes out of the tun is a bare IP
// packet. To wrap it again the appliance looks its flow up by the symmetric
// 5-tuple and sends it with the Geneve header (options included: the
// gateway's endpoint, attachment and flow cookie) that its direction last
// arrived with, to the gateway that sent that (in a fleet a flow's two
// directions may cross different gateways). With the ethernet format
// (0x6558) the header kept is the Geneve header and the inner Ethernet header
// (and its tag) together: the tun carries IP, and the frame is rebuilt with
// the addresses it arrived with (see TunPath). The table is bounded: a new
// flow while it is full is refused (counted), and entries idle longer than
// the idle timeout are expired. Pure code: no sockets, time passed in.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "tools/appliance_packet.h"

namespace gwlb::appliance {

// Counters of the tun path; /stats shows each under "tun" by this name.
#define GWLB_APPLIANCE_TUN_COUNTERS(X)                                                            \
  X(to_tun, "inner packets written to the tun device")                                            \
  X(to_tun_errors, "inner packets the tun device refused (queue full, device down)")              \
  X(ethernet_frames, "inner frames of the ethernet format (0x6558) written to the tun without their Ethernet header") \
  X(table_full, "decapsulated packets of a new flow while the flow table was full: dropped")      \
  X(from_tun, "packets read from the tun device")                                                 \
  X(from_tun_malformed, "packets from the tun that are not a parseable IPv4/IPv6 packet: dropped") \
  X(from_tun_unknown_flow, "packets from the tun of no flow learned on decapsulation: dropped")    \
  X(returned, "packets from the tun wrapped again and sent to their gateway")                     \
  X(send_errors, "wrapped packets the UDP socket refused")                                        \
  X(bypass_returned, "of returned: packets whose header carried gwlb's bypass option (--bypass-after-bytes)") \
  X(flows_learned, "flows entered in the table")                                                  \
  X(flows_expired, "flows removed after the idle timeout")

// gwlb's bypass option to put in a flow's kept header (gwlb-appliance
// --bypass-after-bytes past its stream depth): class and seconds (0: the
// flow's life).
struct BypassAsk {
  uint16_t option_class = 0;
  uint32_t seconds = 0;
};

struct TunCounters {
#define GWLB_X(name, help) uint64_t name = 0;
  GWLB_APPLIANCE_TUN_COUNTERS(GWLB_X)
#undef GWLB_X
};

// The gateway a flow's packets came from (the outer source address).
struct GatewayAddr {
  std::array<uint8_t, 16> addr{};
  bool v6 = false;
};

class TunFlowTable {
 public:
  static constexpr size_t kMaxGeneveHeader = 8 + 252;  // RFC 8926: at most 252 bytes of options
  static constexpr size_t kMaxInnerL2 = 18;             // inner Ethernet header with one tag

  TunFlowTable(size_t max_flows, double idle_seconds) : max_flows_(max_flows), idle_(idle_seconds) {}

  // Remembers the Geneve header (geneve[0..geneve_len)) of a decapsulated
  // packet whose inner packet is `inner`, from gateway `from`; its last
  // l2_len bytes (ethernet format: 14, or 18 with a tag) are the inner
  // Ethernet header. bypass: the header kept gets gwlb's bypass option after
  // its Geneve options (before the inner Ethernet header), so this
  // direction's returns ask the gateway for a bypass (counted in
  // bypass_returned as they go; no room for it in the option area: kept as
  // it came). Returns false (and counts table_full) when the flow is new and
  // the table is full.
  bool learn(const Inner& inner, const uint8_t* geneve, size_t geneve_len, const GatewayAddr& from,
             double now, TunCounters& c, size_t l2_len = 0, const BypassAsk* bypass = nullptr);

  // Builds in `out` the Geneve packet for the IP packet pkt[0..n) read from
  // the tun: its flow's header for this direction (or the other direction's
  // when this one was never seen, its inner Ethernet addresses swapped)
  // followed by the packet. Returns the gateway
  // to send it to (the one that sent that header), or nullptr after counting
  // why not.
  const GatewayAddr* wrap(const uint8_t* pkt, size_t n, std::vector<uint8_t>& out, double now,
                          TunCounters& c);

  // Removes flows idle for longer than the idle timeout; returns how many.
  size_t expire(double now, TunCounters& c);

  size_t size() const { return flows_.size(); }
  void clear() { flows_.clear(); }

 private:
  struct Direction {
    std::array<uint8_t, kMaxGeneveHeader + kMaxInnerL2> hdr{};
    uint16_t len = 0;  // 0: this direction not seen yet
    uint8_t l2_len = 0;  // the inner Ethernet header at hdr[len - l2_len..len)
    bool bypass = false;  // hdr carries gwlb's bypass option
    GatewayAddr gateway;
  };
  struct Entry {
    Direction dir[2];  // [0] a -> b, [1] b -> a (FlowKey order)
    double last_seen = 0;
  };
  size_t max_flows_;
  double idle_;
  std::map<FlowKey, Entry> flows_;
};

}  // namespace gwlb::appliance
