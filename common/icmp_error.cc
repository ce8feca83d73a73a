#include "common/icmp_error.h"

#include <algorithm>
#include <cstring>

#include "common/checksum.h"

namespace gwlb {

size_t buildTooBig(uint8_t* f, size_t len, const ParsedPacket& pkt, uint32_t mtu,
                   uint32_t v4_src) noexcept {
  if (pkt.icmp_error || (pkt.is_fragment && !pkt.first_fragment)) return 0;
  uint8_t* l3 = f + pkt.l3_offset;
  size_t l3len = pkt.l3_len;
  if (pkt.l3_offset + l3len > len) return 0;

  uint8_t mac[6];
  std::memcpy(mac, f, 6);
  std::memcpy(f, f + 6, 6);
  std::memcpy(f + 6, mac, 6);

  if (pkt.ip_version == 4) {
    if (!(rd16(l3 + 6) & 0x4000)) return 0;  // no DF: not ours to refuse with ICMP
    uint8_t orig_src[4], orig_dst[4];
    std::memcpy(orig_src, l3 + 12, 4);
    std::memcpy(orig_dst, l3 + 16, 4);
    // Quote as much as fits in 576 bytes (RFC 1812 4.3.2.3) and in the buffer.
    if (len < size_t(pkt.l3_offset) + 28) return 0;
    size_t quote = std::min({l3len, size_t(576 - 28), len - pkt.l3_offset - 28});
    std::memmove(l3 + 28, l3, quote);
    size_t total = 28 + quote;
    uint8_t* ip = l3;
    ip[0] = 0x45;
    ip[1] = 0;
    wr16(ip + 2, uint16_t(total));
    wr16(ip + 4, 0);
    wr16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = kProtoIcmp;
    wr16(ip + 10, 0);
    if (v4_src) wr32(ip + 12, v4_src);
    else std::memcpy(ip + 12, orig_dst, 4);
    std::memcpy(ip + 16, orig_src, 4);
    wr16(ip + 10, inetChecksum(ip, 20));
    uint8_t* ic = ip + 20;
    ic[0] = 3;  // destination unreachable
    ic[1] = 4;  // fragmentation needed and DF set
    wr16(ic + 2, 0);
    wr16(ic + 4, 0);
    wr16(ic + 6, uint16_t(std::min<uint32_t>(mtu, 0xFFFF)));
    wr16(ic + 2, inetChecksum(ic, 8 + quote));
    return pkt.l3_offset + total;
  }

  uint8_t orig_src[16], orig_dst[16];
  std::memcpy(orig_src, l3 + 8, 16);
  std::memcpy(orig_dst, l3 + 24, 16);
  // The error must not exceed the IPv6 minimum MTU (RFC 4443 2.4 (c)), nor the buffer.
  if (len < size_t(pkt.l3_offset) + 48) return 0;
  size_t quote = std::min({l3len, size_t(1280 - 48), len - pkt.l3_offset - 48});
  std::memmove(l3 + 48, l3, quote);
  size_t plen = 8 + quote;
  uint8_t* ip = l3;
  wr32(ip, 0x60000000);
  wr16(ip + 4, uint16_t(plen));
  ip[6] = kProtoIcmpv6;
  ip[7] = 64;
  std::memcpy(ip + 8, orig_dst, 16);
  std::memcpy(ip + 24, orig_src, 16);
  uint8_t* ic = ip + 40;
  ic[0] = 2;  // packet too big
  ic[1] = 0;
  wr16(ic + 2, 0);
  wr32(ic + 4, mtu);
  uint32_t sum = csumAdd(0, ip + 8, 32);
  sum += uint32_t(plen);
  sum += kProtoIcmpv6;
  sum = csumAdd(sum, ic, plen);
  wr16(ic + 2, csumFold(sum));
  return pkt.l3_offset + 40 + plen;
}

}  // namespace gwlb
