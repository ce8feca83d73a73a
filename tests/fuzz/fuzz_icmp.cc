// Fuzz target 3: ICMP errors, both ways. Input: 2 bytes of MTU (big-endian),
// 1 byte of extra buffer room (x 4 bytes), then an Ethernet frame.
//  - Parsing: an ICMP/ICMPv6 error that parseFrame accepts has its quoted
//    header's addresses from the quote's bytes, of the packet's own family.
//  - Building: gwlb::buildTooBig rewrites the parsed frame, in a heap block of
//    exactly `room` bytes (frame + extra) followed by a guard, into the
//    "fragmentation needed" / "packet too big" error, as the pipeline does for
//    an oversize packet. It must never write past `room` (guard intact; under
//    ASan any such write is a heap overflow anyway), must refuse (0) an ICMP
//    error, a later fragment and IPv4 without DF, and what it builds must be
//    a valid error: our parser accepts it as an ICMP error of the right type
//    and family, addressed back to the sender through swapped MACs and the same
//    VLAN, checksums verify, within 576 (IPv4) / 1280 (IPv6) bytes of IP, the
//    quote is the original datagram's first bytes and, when long enough, the
//    quoted tuple is the original packet's.
//  - Answering with an RST: gwlb::buildTcpReset (send_tcp_reset) rewrites the
//    parsed frame in a block of exactly its length: never past it, never for
//    an RST or what is not a whole TCP segment, and what it builds parses as
//    a TCP RST from the segment's destination to its source, ports swapped,
//    SEQ = the segment's ACK when it had one.
#include <cstdlib>
#include <cstring>

#include "common/checksum.h"
#include "common/icmp_error.h"
#include "common/packet_parser.h"
#include "common/tcp_reset.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;

namespace {

constexpr uint32_t kV4Src = 0xC0000201;  // 192.0.2.1
constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

bool sameTuple(const L4Tuple& a, const L4Tuple& b) {
  return a.src == b.src && a.dst == b.dst && a.proto == b.proto && a.sport == b.sport &&
         a.dport == b.dport;
}

void checkQuotedParse(const uint8_t* d, const ParsedPacket& p) {
  const uint8_t* q = d + p.l4_offset + 8;
  if (p.ip_version == 4) {
    FUZZ_CHECK(p.quoted.src == IpAddr::v4(q + 12) && p.quoted.dst == IpAddr::v4(q + 16),
               "quoted v4 addresses are not the quote's");
  } else {
    FUZZ_CHECK(p.quoted.src == IpAddr::v6(q + 8) && p.quoted.dst == IpAddr::v6(q + 24),
               "quoted v6 addresses are not the quote's");
  }
}

void checkReply(const uint8_t* orig, const ParsedPacket& p, const uint8_t* f, size_t len) {
  ParsedPacket r;
  Counter why = Counter::kCount;
  ParseStatus st = parseFrame(f, len, r, why);
  const size_t l3 = p.l3_offset;
  const size_t hdr = p.ip_version == 4 ? 28 : 48;
  FUZZ_CHECK(len >= l3 + hdr, "reply of %zu bytes", len);
  const size_t quote = len - l3 - hdr;
  FUZZ_CHECK(quote <= p.l3_len, "quote %zu longer than the datagram %u", quote, unsigned(p.l3_len));
  FUZZ_CHECK(std::memcmp(f + l3 + hdr, orig + l3, quote) == 0, "quote is not the original's bytes");
  FUZZ_CHECK(std::memcmp(f, orig + 6, 6) == 0 && std::memcmp(f + 6, orig, 6) == 0, "MACs not swapped");
  FUZZ_CHECK(std::memcmp(f + 12, orig + 12, l3 - 12) == 0, "L2 tag/type changed");
  const uint8_t* ip = f + l3;
  const uint8_t* ic = ip + hdr - 8;
  if (p.ip_version == 4) {
    FUZZ_CHECK(len - l3 <= 576, "IPv4 error of %zu bytes", len - l3);
    FUZZ_CHECK(inetChecksum(ip, 20) == 0, "bad IPv4 header checksum");
    FUZZ_CHECK(inetChecksum(ic, 8 + quote) == 0, "bad ICMP checksum");
    FUZZ_CHECK(ic[0] == 3 && ic[1] == 4, "ICMP type %d code %d", ic[0], ic[1]);
  } else {
    FUZZ_CHECK(len - l3 <= 1280, "IPv6 error of %zu bytes", len - l3);
    uint32_t sum = csumAdd(0, ip + 8, 32) + uint32_t(8 + quote) + kProtoIcmpv6;
    FUZZ_CHECK(csumFold(csumAdd(sum, ic, 8 + quote)) == 0, "bad ICMPv6 checksum");
    FUZZ_CHECK(ic[0] == 2 && ic[1] == 0, "ICMPv6 type %d code %d", ic[0], ic[1]);
  }
  // Quote long enough for the original's transport header: our parser must
  // accept the error and find the original packet in it.
  size_t need = size_t(p.l4_offset) - l3 + 8;
  if (quote < need) return;
  FUZZ_CHECK(st == ParseStatus::kOk, "built error does not parse (drop %u)", unsigned(why));
  FUZZ_CHECK(r.icmp_error && r.ip_version == p.ip_version && r.has_vlan == p.has_vlan &&
                 r.vlan_tci == p.vlan_tci && r.l3_offset == p.l3_offset,
             "built error parses as something else");
  FUZZ_CHECK(sameTuple(r.quoted, p.tuple), "the error quotes another packet");
  FUZZ_CHECK(r.tuple.dst == p.tuple.src, "the error is not addressed to the sender");
  if (p.ip_version == 4)
    FUZZ_CHECK(r.tuple.src == IpAddr::v4(kV4Src), "IPv4 error source");
  else
    FUZZ_CHECK(r.tuple.src == p.tuple.dst, "IPv6 error source");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint32_t mtu = rd16(data);
  const size_t extra = size_t(data[2]) * 4;
  const uint8_t* frame = data + 3;
  const size_t flen = size - 3;

  ParsedPacket p;
  Counter why;
  if (parseFrame(frame, flen, p, why) != ParseStatus::kOk) return 0;
  if (p.icmp_error) checkQuotedParse(frame, p);

  const size_t room = flen + extra;
  uint8_t* buf = static_cast<uint8_t*>(std::malloc(room + kGuard));
  if (!buf) std::abort();
  std::memcpy(buf, frame, flen);
  std::memset(buf + flen, 0xCC, extra);
  std::memset(buf + room, kGuardByte, kGuard);
  size_t len = buildTooBig(buf, room, p, mtu, kV4Src);
  for (size_t i = 0; i < kGuard; ++i)
    FUZZ_CHECK(buf[room + i] == kGuardByte, "buildTooBig wrote past room (%zu) at +%zu", room, i);
  FUZZ_CHECK(len <= room, "buildTooBig returned %zu > room %zu", len, room);
  bool refuse = p.icmp_error || (p.is_fragment && !p.first_fragment) ||
                (p.ip_version == 4 && !(rd16(frame + p.l3_offset + 6) & 0x4000));
  if (refuse) FUZZ_CHECK(len == 0, "buildTooBig answered a packet it must not answer");
  if (len > 0) checkReply(frame, p, buf, len);
  std::free(buf);

  uint8_t* rst = static_cast<uint8_t*>(std::malloc(flen + kGuard));
  if (!rst) std::abort();
  std::memcpy(rst, frame, flen);
  std::memset(rst + flen, kGuardByte, kGuard);
  const size_t rlen = buildTcpReset(rst, flen, p);
  for (size_t i = 0; i < kGuard; ++i)
    FUZZ_CHECK(rst[flen + i] == kGuardByte, "buildTcpReset wrote past the frame at +%zu", i);
  if (!tcpResettable(p) || (tcpFlags(frame, p) & kTcpRst))
    FUZZ_CHECK(rlen == 0, "buildTcpReset answered what it must not");
  if (rlen > 0) {
    ParsedPacket r;
    FUZZ_CHECK(parseFrame(rst, rlen, r, why) == ParseStatus::kOk, "the RST does not parse");
    FUZZ_CHECK(r.tuple.proto == kProtoTcp && (tcpFlags(rst, r) & kTcpRst), "not an RST");
    FUZZ_CHECK(r.tuple.src == p.tuple.dst && r.tuple.dst == p.tuple.src &&
                   r.tuple.sport == p.tuple.dport && r.tuple.dport == p.tuple.sport,
               "the RST is not addressed back to the sender");
    if (tcpFlags(frame, p) & kTcpAckFlag)
      FUZZ_CHECK(rd32(rst + r.l4_offset + 4) == rd32(frame + p.l4_offset + 8), "SEQ is not SEG.ACK");
  }
  std::free(rst);
  return 0;
}
