// gwlb's Geneve options and the mirror sink's pcap (tools/appliance_options.h).
#include "tools/appliance_options.h"

namespace gwlb::appliance {

bool readGwlbOptions(const uint8_t* opts, size_t len, uint16_t cls, GwlbOptions& out) {
  out = GwlbOptions{};
  size_t at = 0;
  while (at < len) {
    if (len - at < 4) return false;
    const uint16_t oc = uint16_t(opts[at] << 8 | opts[at + 1]);
    const uint8_t type = opts[at + 2] & 0x7F;  // the high bit: critical
    const size_t data = size_t(opts[at + 3] & 0x1F) * 4;
    if (len - at - 4 < data) return false;
    const uint8_t* d = opts + at + 4;
    if (oc == 0x0132 && (type == 0x01 || type == 0x03)) {  // nsi: network ID, profile ID
      if (data != (type == 0x01 ? 4u : 8u)) return false;
      if (type == 0x01) {
        out.nsi = true;
        out.nsi_egress = d[3] & 1;
      } else {
        out.nsi_profile = 0;
        for (size_t i = 0; i < 8; ++i) out.nsi_profile = out.nsi_profile << 8 | d[i];
      }
    }
    if (oc == cls && (type == 0x02 || type == 0x03)) {
      if (data != 4 && type == 0x02) return false;
      if (data != 8 && type == 0x03) return false;
      if (type == 0x02) {
        out.mirror = true;
        out.mirror_reverse = d[0] & 1;
        out.mirror_class = uint16_t(d[2] << 8 | d[3]);
      } else {
        out.tag = true;
        out.tag_reverse = d[0] & 1;
        out.tag_value = uint32_t(d[4]) << 24 | uint32_t(d[5]) << 16 | uint32_t(d[6]) << 8 | d[7];
      }
    }
    at += 4 + data;
  }
  return true;
}

std::vector<uint8_t> sinkFrame(uint16_t protocol, const uint8_t* inner, size_t len) {
  std::vector<uint8_t> f;
  if (len == 0) return f;
  if (protocol == 0x6558) return std::vector<uint8_t>(inner, inner + len);
  if (protocol != 0x0800 && protocol != 0x86DD) return f;
  f.assign(14, 0);
  f[12] = uint8_t(protocol >> 8);
  f[13] = uint8_t(protocol);
  f.insert(f.end(), inner, inner + len);
  return f;
}

namespace {
void put32(uint8_t* p, uint32_t v) {  // pcap headers are in the writer's byte order: little-endian here
  p[0] = uint8_t(v), p[1] = uint8_t(v >> 8), p[2] = uint8_t(v >> 16), p[3] = uint8_t(v >> 24);
}
}  // namespace

PcapSink::~PcapSink() {
  if (f_) std::fclose(f_);
}

bool PcapSink::open(const char* path) {
  f_ = std::fopen(path, "wb");
  if (!f_) return false;
  uint8_t h[24] = {};
  put32(h, 0xa1b2c3d4);
  h[4] = 2;  // version 2.4
  h[6] = 4;
  put32(h + 16, 65535);  // snaplen
  put32(h + 20, 1);      // LINKTYPE_ETHERNET
  return std::fwrite(h, 1, sizeof h, f_) == sizeof h && std::fflush(f_) == 0;
}

bool PcapSink::write(const std::vector<uint8_t>& frame, uint64_t ts_us) {
  if (!f_) return false;
  uint8_t r[16];
  put32(r, uint32_t(ts_us / 1000000));
  put32(r + 4, uint32_t(ts_us % 1000000));
  put32(r + 8, uint32_t(frame.size()));
  put32(r + 12, uint32_t(frame.size()));
  return std::fwrite(r, 1, sizeof r, f_) == sizeof r &&
         std::fwrite(frame.data(), 1, frame.size(), f_) == frame.size() && std::fflush(f_) == 0;
}

}  // namespace gwlb::appliance
