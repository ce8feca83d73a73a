#include "common/tcp_reset.h"

#include <cstring>

#include "common/checksum.h"

namespace gwlb {

size_t buildTcpReset(uint8_t* f, size_t room, const ParsedPacket& p) noexcept {
  if (!tcpResettable(p)) return 0;
  const size_t l3 = p.l3_offset, l4 = p.l4_offset;
  const size_t end = l3 + p.l3_len;
  if (end > room || l4 + 20 > end) return 0;
  const uint8_t* t = f + l4;
  const uint8_t flags = t[13];
  if (flags & kTcpRst) return 0;
  const size_t doff = size_t(t[12] >> 4) * 4;
  if (doff < 20 || l4 + doff > end) return 0;
  const uint16_t sport = rd16(t), dport = rd16(t + 2);
  const uint32_t seg_seq = rd32(t + 4), seg_ack = rd32(t + 8);
  const uint32_t seg_len = uint32_t(end - l4 - doff) + ((flags & kTcpSynFlag) ? 1 : 0) +
                           ((flags & kTcpFin) ? 1 : 0);
  const bool v4 = p.ip_version == 4;
  const size_t ip_len = v4 ? 20 : 40;
  if (l3 + ip_len + 20 > room) return 0;

  // Back to the neighbour it came from: swap the MACs, keep any tag.
  uint8_t mac[6];
  std::memcpy(mac, f, 6);
  std::memcpy(f, f + 6, 6);
  std::memcpy(f + 6, mac, 6);

  uint8_t src[16], dst[16];
  const size_t alen = v4 ? 4 : 16;
  std::memcpy(src, f + l3 + (v4 ? 12 : 8), alen);
  std::memcpy(dst, f + l3 + (v4 ? 16 : 24), alen);
  uint8_t* ip = f + l3;
  if (v4) {
    ip[0] = 0x45;
    ip[1] = 0;
    wr16(ip + 2, 40);
    wr16(ip + 4, 0);
    wr16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = kProtoTcp;
    wr16(ip + 10, 0);
    std::memcpy(ip + 12, dst, 4);
    std::memcpy(ip + 16, src, 4);
    wr16(ip + 10, inetChecksum(ip, 20));
  } else {
    wr32(ip, 0x60000000);
    wr16(ip + 4, 20);
    ip[6] = kProtoTcp;
    ip[7] = 64;
    std::memcpy(ip + 8, dst, 16);
    std::memcpy(ip + 24, src, 16);
  }
  uint8_t* r = ip + ip_len;
  wr16(r, dport);
  wr16(r + 2, sport);
  if (flags & kTcpAckFlag) {
    wr32(r + 4, seg_ack);
    wr32(r + 8, 0);
    r[13] = kTcpRst;
  } else {
    wr32(r + 4, 0);
    wr32(r + 8, seg_seq + seg_len);
    r[13] = kTcpRst | kTcpAckFlag;
  }
  r[12] = 5 << 4;
  wr16(r + 14, 0);  // window
  wr16(r + 16, 0);  // checksum, below
  wr16(r + 18, 0);  // urgent pointer
  // Pseudo-header: the RST's own addresses, protocol and length 20.
  uint32_t sum = csumAdd(0, ip + (v4 ? 12 : 8), 2 * alen);
  sum += kProtoTcp + 20;
  sum = csumAdd(sum, r, 20);
  wr16(r + 16, csumFold(sum));
  return l3 + ip_len + 20;
}

}  // namespace gwlb
