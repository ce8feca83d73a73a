// Fuzz target: the VXLAN return parser (common/vxlan.h) as the return path
// runs it. Input: 2 bytes of UDP destination port (big-endian), then the UDP
// payload an appliance sent.
//  - parseVxlan reads only the payload's bytes (it gets a heap block of
//    exactly that length, so ASan catches any read past it); when it accepts,
//    the VNI fits 24 bits and an Ethernet header's worth follows the header,
//    and tunnelOf() names a tunnel only for its own port and VNI pair; the
//    inner frame then goes through parseFrame as the worker's does.
//  - Refusals name a drop counter of the VXLAN family.
//  - Round trip: writeEncap (EncapParams::vxlan) wraps the input as an inner
//    frame toward the input's port with a VNI taken from it; the outer
//    headers parse, the UDP destination port and checksum are right, and
//    parseVxlan returns the VNI written and the inner bytes unchanged. The
//    same over an IPv6 underlay (writeEncap6): the outer IPv6 header parses
//    with the addresses written, and the UDP checksum, over the IPv6
//    pseudo-header, is right and never 0.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/checksum.h"
#include "common/geneve.h"
#include "common/packet_parser.h"
#include "common/vxlan.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint16_t dport = uint16_t(data[0] << 8 | data[1]);
  const size_t len = size - 2;
  uint8_t* p = static_cast<uint8_t*>(std::malloc(len ? len : 1));
  if (len) std::memcpy(p, data + 2, len);

  VxlanTunnels t;  // Azure's defaults
  uint32_t vni = 0xFFFFFFFF;
  Counter why = Counter::kCount;
  if (parseVxlan(p, len, vni, why)) {
    FUZZ_CHECK(vni <= 0xFFFFFF, "VNI %u past 24 bits", vni);
    FUZZ_CHECK(len >= kVxlanHeaderLen + 14, "accepted %zu bytes", len);
    FUZZ_CHECK(p[0] & kVxlanFlagI, "accepted without the I flag");
    int tun = t.tunnelOf(dport, vni);
    if (tun >= 0) FUZZ_CHECK(t.port[tun] == dport && t.vni[tun] == vni, "tunnel %d is not (%u, %u)", tun, dport, vni);
    if ((dport == kVxlanInternalPort && vni == kVxlanInternalVni) ||
        (dport == kVxlanExternalPort && vni == kVxlanExternalVni))
      FUZZ_CHECK(tun >= 0, "Azure's own pair (%u, %u) refused", dport, vni);
    ParsedPacket in;
    Counter inner_why;
    (void)parseFrame(p + kVxlanHeaderLen, len - kVxlanHeaderLen, in, inner_why);
  } else {
    FUZZ_CHECK(why == Counter::drop_vxlan_truncated || why == Counter::drop_vxlan_no_vni,
               "refused with counter %d", int(why));
  }

  // Round trip through the writer.
  if (dport != 0 && len <= 2048) {
    std::vector<uint8_t> f(encapHeaderLen(false) + len);
    if (len) std::memcpy(f.data() + encapHeaderLen(false), p, len);
    EncapParams ep;
    ep.src_ip = 0xC0000201;
    ep.dst_ip = 0x0A00000B;
    ep.udp_sport = 49152;
    ep.vxlan = true;
    ep.udp_dport = dport;
    ep.vni = len ? uint32_t(p[0]) << 16 | uint32_t(len) : 7;
    ep.aws_options = true;  // ignored with vxlan
    writeEncap(f.data(), len, ep);
    FUZZ_CHECK(f.size() == encapHeaderLen(false) + len, "size");
    ParsedPacket outer;
    Counter ow;
    FUZZ_CHECK(parseFrame(f.data(), f.size(), outer, ow) == ParseStatus::kOk, "outer refused");
    FUZZ_CHECK(outer.tuple.proto == kProtoUdp && outer.tuple.dport == dport, "outer port %u", outer.tuple.dport);
    const uint8_t* udp = f.data() + outer.l4_offset;
    const size_t ulen = f.size() - outer.l4_offset;
    uint32_t sum = csumAdd(0, f.data() + 26, 8) + kProtoUdp + uint32_t(ulen);
    sum = csumAdd(sum, udp, ulen);
    FUZZ_CHECK(csumFold(sum) == 0 || csumFold(sum) == 0xFFFF, "UDP checksum");
    uint32_t back = 0;
    Counter bw;
    if (len >= 14) {
      FUZZ_CHECK(parseVxlan(udp + 8, ulen - 8, back, bw), "own header refused");
      FUZZ_CHECK(back == (ep.vni & 0xFFFFFF), "VNI %u written, %u read", ep.vni, back);
      FUZZ_CHECK(std::memcmp(udp + 16, p, len) == 0, "inner frame changed");
    }
  }
  // The same over IPv6 outers.
  if (dport != 0 && len <= 2048) {
    const size_t hdr = encapHeaderLen(false, true);
    std::vector<uint8_t> f(hdr + len);
    if (len) std::memcpy(f.data() + hdr, p, len);
    EncapParams ep;
    ep.ipv6 = true;
    ep.src_ip6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
    ep.dst_ip6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11};
    ep.udp_sport = uint16_t(49152 + len);
    ep.flow_label = uint32_t(len) | 1;
    ep.vxlan = true;
    ep.udp_dport = dport;
    ep.vni = len ? uint32_t(p[len - 1]) << 16 | uint32_t(len) : 9;
    writeEncap6(f.data(), len, ep);
    ParsedPacket outer;
    Counter ow;
    FUZZ_CHECK(parseFrame(f.data(), f.size(), outer, ow) == ParseStatus::kOk, "IPv6 outer refused");
    FUZZ_CHECK(outer.ip_version == 6 && outer.l4_offset == 54, "IPv6 outer: version %u, L4 at %u",
               outer.ip_version, outer.l4_offset);
    FUZZ_CHECK(std::memcmp(outer.tuple.src.b.data(), ep.src_ip6.data(), 16) == 0 &&
                   std::memcmp(outer.tuple.dst.b.data(), ep.dst_ip6.data(), 16) == 0,
               "IPv6 outer addresses");
    FUZZ_CHECK(outer.tuple.proto == kProtoUdp && outer.tuple.dport == dport, "IPv6 outer port %u", outer.tuple.dport);
    const uint8_t* udp = f.data() + 54;
    const size_t ulen = f.size() - 54;
    FUZZ_CHECK(rd16(udp + 6) != 0, "zero UDP checksum over IPv6");
    uint32_t sum = csumAdd(0, f.data() + 22, 32) + kProtoUdp + uint32_t(ulen);
    sum = csumAdd(sum, udp, ulen);
    FUZZ_CHECK(csumFold(sum) == 0 || csumFold(sum) == 0xFFFF, "UDP checksum over IPv6");
    if (len >= 14) {
      uint32_t back = 0;
      Counter bw;
      FUZZ_CHECK(parseVxlan(udp + 8, ulen - 8, back, bw), "own header refused over IPv6");
      FUZZ_CHECK(back == (ep.vni & 0xFFFFFF), "VNI %u written, %u read over IPv6", ep.vni, back);
      FUZZ_CHECK(std::memcmp(udp + 16, p, len) == 0, "inner frame changed over IPv6");
    }
  }
  std::free(p);
  return 0;
}
