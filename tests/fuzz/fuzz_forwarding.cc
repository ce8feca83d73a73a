// Fuzz target 15: the forwarding check's packets (control/health/forwarding_probe.h):
// what the control thread parses of a frame the workers handed over as a
// returned probe, and the probe it builds. Input: a mode byte, then
//  - mode even: any bytes as a received frame: parseForwardingReturn must
//    not read past them, and what it accepts must agree with the frame's own
//    bytes (the token in the ICMP identifier and sequence number);
//  - mode odd: a probe built for a one-appliance snapshot (format, token and
//    inner addresses from the next 13 bytes; bit 2 of the first: IPv6
//    addresses 2001:2::<4 bytes>, an ICMPv6 probe; bit 3: an appliance on
//    an IPv6 underlay, outer IPv6), then the rest as edits
//    (offset, value) to it: unedited it must parse back to exactly what was
//    built; edited, anything accepted must still be self-consistent.
#include <array>
#include <cstring>
#include <vector>

#include "common/flow_cookie.h"
#include "common/packet_parser.h"
#include "control/health/forwarding_probe.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;

namespace {

void checkAccepted(const uint8_t* f, size_t len, const ctl::ForwardingReturn& r) {
  // The token is in the frame twice more: search for "gwlb-fwd" + sent_to + token.
  uint8_t tail[16] = {'g', 'w', 'l', 'b', '-', 'f', 'w', 'd'};
  wr32(tail + 8, r.sent_to);
  wr32(tail + 12, r.token);
  bool found = false;
  for (size_t i = 0; i + 16 <= len && !found; ++i) found = std::memcmp(f + i, tail, 16) == 0;
  FUZZ_CHECK(found, "accepted a probe whose payload does not hold token %08x", unsigned(r.token));
  FUZZ_CHECK(r.src != 0 || r.dst != 0 || len > 0, "empty");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data, --size;
  ctl::ForwardingReturn r;
  if (!(mode & 1)) {
    std::vector<uint8_t> f(data, data + size);  // exactly sized: ASan sees any overread
    if (ctl::parseForwardingReturn(f.data(), f.size(), r)) checkAccepted(f.data(), f.size(), r);
    return 0;
  }
  if (size < 13) return 0;
  Snapshot s;
  s.underlay_ip = 0xC0000201;
  s.underlay_mac = MacAddr{{2, 0, 0, 0, 0, 1}};
  GroupView g;
  g.aws = data[0] & 1;
  g.vni = 0x123456;
  g.stickiness = StickinessMode(data[0] >> 1 & 1 ? 1 : 0);
  g.listener = 0;
  const bool v6 = data[0] >> 2 & 1;
  if (v6) {
    g.probe_v6 = true;
    g.probe_src6 = {0x20, 0x01, 0, 2};
    g.probe_dst6 = {0x20, 0x01, 0, 2};
    std::memcpy(g.probe_src6.data() + 12, data + 5, 4);
    std::memcpy(g.probe_dst6.data() + 12, data + 9, 4);
  } else {
    g.probe_src = rd32(data + 5);
    g.probe_dst = rd32(data + 9);
  }
  s.groups.push_back(g);
  const bool outer6 = data[0] >> 3 & 1;
  const IpAddr us6 = IpAddr::v6(std::array<uint8_t, 16>{0x20, 0x01, 0x0d, 0xb8, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}.data());
  const IpAddr app6 = IpAddr::v6(std::array<uint8_t, 16>{0x20, 0x01, 0x0d, 0xb8, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11}.data());
  ApplianceSlot sv;
  sv.ip = outer6 ? applianceKey(app6) : 0x0A00000B;
  sv.ipv6 = outer6;
  sv.ip6 = app6.b;
  sv.mac = MacAddr{{2, 0, 0, 0, 0, 0x11}};
  sv.mac_known = sv.routable = sv.in_use = true;
  EncapParams ep;
  ep.src_mac = s.underlay_mac;
  ep.dst_mac = sv.mac;
  ep.src_ip = s.underlay_ip;
  ep.dst_ip = sv.ip;
  ep.ipv6 = outer6;
  ep.src_ip6 = us6.b;
  ep.dst_ip6 = app6.b;
  ep.vni = g.vni;
  ep.protocol = g.aws ? kEtherTypeIpv4 : kEtherTypeTeb;
  ep.aws_options = g.aws;
  buildEncapTemplate(sv.encap, ep);
  s.appliances.push_back(sv);
  const uint32_t token = rd32(data + 1);
  uint8_t frame[ctl::kForwardingProbeMaxLen];
  const size_t len = ctl::buildForwardingProbe(s, 0, token, frame, sizeof frame);
  if (g.probe_dst == 0 && !v6) {
    FUZZ_CHECK(len == 0, "built a probe for a group without probe addresses");
    return 0;
  }
  FUZZ_CHECK(len > 0 && len <= sizeof frame, "no probe built (%zu)", len);
  FUZZ_CHECK(ctl::buildForwardingProbe(s, 0, token, frame, len - 1) == 0, "wrote past a short buffer");
  std::vector<uint8_t> f(frame, frame + len);
  const uint8_t* e = data + 13;
  const size_t edits = (size - 13) / 2;
  for (size_t i = 0; i < edits; ++i) f[e[2 * i] % len] = e[2 * i + 1];
  if (edits == 0) {
    FUZZ_CHECK(ctl::parseForwardingReturn(f.data(), f.size(), r), "the probe as built does not parse");
    // Its outer source reads as the appliance that sent it (here: this node).
    const uint32_t from = outer6 ? applianceKey(us6) : s.underlay_ip;
    FUZZ_CHECK(r.token == token && r.sent_to == sv.ip && r.appliance == from && r.v6 == v6 &&
                   (v6 ? r.src6 == g.probe_src6 && r.dst6 == g.probe_dst6
                       : r.src == g.probe_src && r.dst == g.probe_dst),
               "parsed token %08x sent_to %08x src %08x dst %08x", unsigned(r.token), unsigned(r.sent_to),
               unsigned(r.src), unsigned(r.dst));
    // The outer headers are the template's and the cookie is the flow's.
    FUZZ_CHECK(std::memcmp(f.data(), sv.encap.bytes, 14) == 0, "outer Ethernet is not the template's");
  } else if (ctl::parseForwardingReturn(f.data(), f.size(), r)) {
    checkAccepted(f.data(), f.size(), r);
  }
  return 0;
}
