// gwlb's own Geneve options as an appliance reads them (class
// node.geneve_option_class, default 0xFF01): the mirror option on a copy for
// a passive tool, the tag option naming the service a packet belongs to
// (docs/wire-format.md). And the mirror sink's output: what a copy carried,
// as a pcap record. Pure code: no sockets, no Asio.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace gwlb::appliance {

struct GwlbOptions {
  bool mirror = false;      // a mirror option was present
  bool mirror_reverse = false;
  uint16_t mirror_class = 0;
  bool tag = false;         // a tag option was present
  bool tag_reverse = false;
  uint32_t tag_value = 0;
  // The nsi format (Google's class 0x0132): its network ID option's D bit
  // (1: egress, a packet against its flow's first one) and the profile ID,
  // the class's tag gwlbd puts there.
  bool nsi = false;         // a network ID option was present
  bool nsi_egress = false;
  uint64_t nsi_profile = 0;
};

// Walks the Geneve options at opts[0..len) (after the 8-byte base header)
// and reads gwlb's (class `cls`) and the nsi format's network and profile ID
// options. False when an option's length runs past `len` or one of these
// has a length it does not define (the packet is then malformed); other
// options are skipped. Reads only inside opts[0..len).
bool readGwlbOptions(const uint8_t* opts, size_t len, uint16_t cls, GwlbOptions& out);

// The frame a mirror sink writes for a copy: the inner frame as it is
// (ethernet format, protocol 0x6558) or the inner IP packet behind a made-up
// Ethernet header (aws format: zero MACs, the EtherType of `protocol`).
// Empty when `protocol` is none of 0x0800, 0x86DD, 0x6558 or the inner
// packet is empty.
std::vector<uint8_t> sinkFrame(uint16_t protocol, const uint8_t* inner, size_t len);

// A pcap file (Ethernet, microseconds) written one record at a time and
// flushed after each, so a reader sees every copy once it is counted.
class PcapSink {
 public:
  PcapSink() = default;
  PcapSink(const PcapSink&) = delete;
  PcapSink& operator=(const PcapSink&) = delete;
  ~PcapSink();
  bool open(const char* path);
  bool write(const std::vector<uint8_t>& frame, uint64_t ts_us);
 private:
  std::FILE* f_ = nullptr;
};

}  // namespace gwlb::appliance
