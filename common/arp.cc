#include "common/arp.h"

#include <cstring>

#include "common/packet_parser.h"

namespace gwlb {

bool parseArp(const uint8_t* f, size_t len, ArpPacket& out) noexcept {
  if (len < 14) return false;
  size_t l2 = 14;
  uint16_t et = rd16(f + 12);
  if (et == kEtherTypeVlan) {
    if (len < 18) return false;
    et = rd16(f + 16);
    l2 = 18;
  }
  if (et != kEtherTypeArp || len < l2 + 28) return false;
  const uint8_t* a = f + l2;
  // Ethernet hardware, IPv4 protocol, 6- and 4-byte addresses.
  if (rd16(a) != 1 || rd16(a + 2) != kEtherTypeIpv4 || a[4] != 6 || a[5] != 4) return false;
  out.op = rd16(a + 6);
  std::memcpy(out.sender_mac.b.data(), a + 8, 6);
  out.sender_ip = rd32(a + 14);
  std::memcpy(out.target_mac.b.data(), a + 18, 6);
  out.target_ip = rd32(a + 24);
  out.l2_len = l2;
  return out.op == 1 || out.op == 2;
}

size_t makeArpReply(uint8_t* f, const ArpPacket& req, const MacAddr& our_mac) noexcept {
  std::memcpy(f, req.sender_mac.b.data(), 6);
  std::memcpy(f + 6, our_mac.b.data(), 6);
  uint8_t* a = f + req.l2_len;
  wr16(a + 6, 2);
  std::memcpy(a + 8, our_mac.b.data(), 6);
  wr32(a + 14, req.target_ip);
  std::memcpy(a + 18, req.sender_mac.b.data(), 6);
  wr32(a + 24, req.sender_ip);
  return req.l2_len + 28;
}

size_t makeArpRequest(uint8_t* f, const MacAddr& our_mac, uint32_t our_ip,
                      uint32_t target_ip) noexcept {
  std::memset(f, 0xFF, 6);
  std::memcpy(f + 6, our_mac.b.data(), 6);
  wr16(f + 12, kEtherTypeArp);
  uint8_t* a = f + 14;
  wr16(a, 1);
  wr16(a + 2, kEtherTypeIpv4);
  a[4] = 6;
  a[5] = 4;
  wr16(a + 6, 1);
  std::memcpy(a + 8, our_mac.b.data(), 6);
  wr32(a + 14, our_ip);
  std::memset(a + 18, 0, 6);
  wr32(a + 24, target_ip);
  return kArpFrameLen;
}

}  // namespace gwlb
