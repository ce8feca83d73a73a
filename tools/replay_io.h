// gwlb-replay's capture files: reading frames (with what the capture held
// beyond the ordinary), writing pcap output, and the transparent appliance
// of --reflect.
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/net_types.h"

struct rte_mbuf;

namespace gwlb::replay {

struct Frame {
  uint64_t ts_ns;
  uint16_t port;
  bool appliance_in = false;  // read from --appliance-in (else --in)
  std::vector<uint8_t> bytes;
};

// What the captures held beyond the ordinary: frames the capture itself cut
// (caplen < len: its snaplen) and frames too large for one mbuf.
struct CaptureStats {
  size_t largest = 0;        // bytes of the largest frame read
  uint64_t cut_by_capture = 0;
  uint64_t too_large = 0;    // not fed: larger than max_frame
  size_t largest_skipped = 0;
};

// Appends the Ethernet frames of `path` (nanosecond timestamps) as arriving
// on `port`; frames longer than max_frame are counted, not read.
bool readPcap(const std::string& path, uint16_t port, size_t max_frame, std::vector<Frame>& out,
              std::string& err, CaptureStats& cs);

// A pcap output in time order: frames come from several workers and by
// several paths (a bypassed frame at once, an inspected one only after its
// trip through the appliance), so write() keeps a copy and flush() writes
// what it holds sorted by timestamp (equal times in the order written). The
// caller flushes when no frame still in flight can be older than those held
// (the replay: whenever every worker is idle), and close() flushes.
class PcapWriter {
 public:
  bool open(const std::string& path, std::string& err);
  void write(const rte_mbuf* m, uint64_t ts_ns);
  void flush();
  void close();
  uint64_t count() const { return count_; }

 private:
  struct Held {
    uint64_t ts_ns;
    size_t offset;  // in held_bytes_
    uint32_t len;
  };
  pcap_t* dead_ = nullptr;
  pcap_dumper_t* dump_ = nullptr;
  uint64_t count_ = 0;
  std::vector<Held> held_;
  std::vector<uint8_t> held_bytes_;
};

// The outer destination of a frame sent to an appliance (Ethernet, an
// optional 802.1Q tag, IPv4 or IPv6); false when the frame is neither.
bool outerDestination(const uint8_t* frame, size_t len, IpAddr& out);

// The transparent appliance: swap outer MACs and IPv4 or IPv6 addresses, keep
// UDP ports and the Geneve or VXLAN header (a VXLAN packet goes back on the
// tunnel it came on). Swapping addresses leaves both checksums valid.
void reflect(rte_mbuf* m);

// --reflect-bypass-after: the canonical key (5-tuple, both directions alike)
// and inner length of a Geneve packet the pipeline wrote (outer Ethernet,
// IPv4 or IPv6, UDP, Geneve), or false when its inner packet does not parse.
bool reflectedFlow(const rte_mbuf* m, std::string& key, size_t& inner_len);
// Adds gwlb's bypass option (class, seconds; 0: the flow's life) to the
// Geneve header of such a packet, as an appliance asking for a bypass
// would: 8 bytes more, outer lengths fixed; over IPv4 the header checksum
// fixed and the UDP checksum 0, over IPv6 the UDP checksum recomputed.
// False when there is no room (headroom, the 252-byte option area).
bool addBypassToReflection(rte_mbuf* m, uint16_t option_class, uint32_t seconds);

// How the router in front of a fleet hashes a packet to pick a node
// (--ecmp-policy, docs/replay.md). What matters for a fleet is which packets
// it keeps together: a datagram's fragments reach one node under kL3 and
// kL4Linux, not always under kL4FirstWithPorts.
enum class EcmpPolicy : uint8_t {
  // Linux fib_multipath_hash_policy 0: the addresses (IPv6: also the flow
  // label and next header); an ICMP error by the header it quotes.
  kL3,
  // Linux fib_multipath_hash_policy 1: addresses, protocol and ports as the
  // packet carries them, except that the kernel's flow dissector reads no
  // ports from any fragment (the first included) nor from ICMP.
  kL4Linux,
  // A router that reads the ports of a first fragment too: a datagram's
  // first fragment and its later ones (no ports) can reach different nodes.
  kL4FirstWithPorts,
};
inline constexpr EcmpPolicy kDefaultEcmpPolicy = EcmpPolicy::kL4Linux;  // the lab's router

// Reads a --ecmp-policy value (l3, l4-linux, l4-first-with-ports).
bool parseEcmpPolicy(const std::string& text, EcmpPolicy& out);
const char* toString(EcmpPolicy p);

// The node (0..n-1) that a router's ECMP hashing as `policy` says would send
// this frame to: a hash of the fields the policy reads, in packet order (not
// the canonical flow key), so the two directions of a flow usually go to
// different nodes. Frames without an IP header (ARP, ...) go to node 0.
unsigned ecmpNode(const Frame& f, unsigned n, EcmpPolicy policy = kDefaultEcmpPolicy);

}  // namespace gwlb::replay
