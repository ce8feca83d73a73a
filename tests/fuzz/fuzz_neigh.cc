// Fuzz target 7: what reaches the gateway's neighbours code. Input: 1 byte
// of extra buffer room (x 4 bytes), then a frame as any port delivers it.
//  - The dataplane's stage-1 sorting (dataplane/ingress.cc) against a fixed
//    snapshot (an IPv4 and an IPv6 appliance, one node IPv6 address, a
//    router port and an appliance port): a frame not to the port's MAC is
//    punted only when it is broadcast ARP for our address or from the
//    appliance (appliance port), multicast NS for our address, or, on the
//    appliance port, multicast NA for the IPv6 appliance, and otherwise names
//    one of the three L2 drop counters; a punted or dropped ND frame is
//    ICMPv6 133..137, and a punted NA never comes from the router port.
//  - ARP (common/arp.cc): a parsed request answered in place parses as the
//    reply to its sender from our MAC.
//  - Neighbor solicitations (common/ndp.cc): a parse has a non-multicast
//    target and a 14/18-byte L2 header; the advertisement built into a heap
//    block of exactly `room` bytes plus a guard never writes past `room`,
//    returns 86/90 bytes (0 when room is short), is addressed to the asker
//    (all nodes for DAD) from our MAC with the same tag, hop limit 255, the
//    target as source, a valid ICMPv6 checksum, and is not itself taken for a
//    solicitation.
//  - Neighbor advertisements (common/ndp.cc): a parse has a non-multicast
//    target, a 14/18-byte L2 header, Solicited clear when sent to multicast,
//    and is deterministic; a solicitation we build for its target parses as
//    one, to the target's solicited-node address, and is never taken for an
//    advertisement.
#include <cstdlib>
#include <cstring>

#include "common/arp.h"
#include "common/checksum.h"
#include "common/ndp.h"
#include "common/packet_parser.h"
#include "dataplane/ingress.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;

namespace {

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;
const MacAddr kOurs{{0x02, 0, 0, 0, 0, 0x01}};
constexpr uint32_t kUnderlay = 0xC0000201;   // 192.0.2.1
constexpr uint32_t kAppliance = 0xC000020A;  // 192.0.2.10
constexpr uint8_t kNode6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr uint8_t kAppliance6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a};

const dp::Snapshot& snapshot() {
  static dp::Snapshot* s = [] {
    auto* x = new dp::Snapshot;
    x->underlay_ip = kUnderlay;
    x->ports = {{kOurs, PortRole::kRouter}, {kOurs, PortRole::kAppliance}};
    std::array<uint8_t, 16> a;
    std::memcpy(a.data(), kNode6, 16);
    x->node_ipv6.push_back(a);
    dp::ApplianceSlot v;
    v.ip = kAppliance;
    v.routable = true;
    x->appliances.push_back(v);
    x->by_ip.emplace_back(kAppliance, 0);
    dp::ApplianceSlot v6;
    std::memcpy(v6.ip6.data(), kAppliance6, 16);
    v6.ipv6 = true;
    v6.routable = true;
    x->appliances.push_back(v6);
    std::array<uint8_t, 16> a6;
    std::memcpy(a6.data(), kAppliance6, 16);
    x->by_ip6.emplace_back(a6, 1);
    return x;
  }();
  return *s;
}

bool isDrop(Counter c) { return size_t(c) < kNumCounters && kCounterInfo[size_t(c)].is_drop; }

void checkIngress(const uint8_t* f, size_t len) {
  if (len < 14) return;
  const dp::Snapshot& s = snapshot();
  for (uint16_t port = 0; port < 3; ++port) {
    const dp::PortView* pv = port < s.ports.size() ? &s.ports[port] : nullptr;
    bool own = pv && dp::isOwnMac(f, *pv);
    if (own) continue;  // the ordinary path: parseFrame (fuzz_frame)
    Counter why = Counter::kCount;
    bool punt = dp::foreignFrameWanted(f, len, s, pv, why);
    if (!punt) {
      FUZZ_CHECK(why == Counter::drop_not_our_mac || why == Counter::drop_l2_broadcast ||
                     why == Counter::drop_l2_multicast,
                 "foreign frame dropped with %u", unsigned(why));
      FUZZ_CHECK(isDrop(why), "not a drop counter");
      continue;
    }
    FUZZ_CHECK(pv && (f[0] & 1), "punted a unicast frame to another MAC");
    ArpPacket a;
    if (parseArp(f, len, a)) {
      FUZZ_CHECK(a.target_ip == kUnderlay || (port == 1 && a.sender_ip == kAppliance),
                 "punted ARP neither for us nor from the appliance on its port");
    } else {
      ParsedPacket p;
      Counter c;
      FUZZ_CHECK(parseFrame(f, len, p, c) == ParseStatus::kOk && p.ip_version == 6 &&
                     p.tuple.proto == kProtoIcmpv6 && p.l4_offset + 24 <= p.l3_offset + p.l3_len,
                 "punted multicast that is not ICMPv6");
      const bool ns_for_us = f[p.l4_offset] == kNdNeighborSolicitation &&
                             std::memcmp(f + p.l4_offset + 8, kNode6, 16) == 0;
      const bool na_for_appliance = port == 1 && f[p.l4_offset] == kNdNeighborAdvertisement &&
                                    std::memcmp(f + p.l4_offset + 8, kAppliance6, 16) == 0;
      FUZZ_CHECK(ns_for_us || na_for_appliance,
                 "punted multicast that is neither a solicitation for our address nor an "
                 "advertisement for the appliance on its port");
    }
  }
  // Frames to our MAC: ND is never left to the forward path.
  ParsedPacket p;
  Counter c;
  if (parseFrame(f, len, p, c) == ParseStatus::kOk) {
    dp::NdVerdict v = dp::ndVerdict(f, p, s, PortRole::kAppliance);
    if (v != dp::NdVerdict::kNotNd)
      FUZZ_CHECK(p.ip_version == 6 && p.tuple.proto == kProtoIcmpv6 && isNdType(f[p.l4_offset]),
                 "ND verdict for something else");
    if (v == dp::NdVerdict::kPunt && f[p.l4_offset] == kNdNeighborAdvertisement)
      FUZZ_CHECK(dp::ndVerdict(f, p, s, PortRole::kRouter) == dp::NdVerdict::kDrop,
                 "advertisement punted from the router port");
    if (p.ip_version == 6 && p.tuple.proto == kProtoIcmpv6 && !p.icmp_error && p.l4_offset &&
        isNdType(f[p.l4_offset]))
      FUZZ_CHECK(v != dp::NdVerdict::kNotNd, "ND message left to the forward path");
  }
}

void checkArp(const uint8_t* f, size_t len) {
  ArpPacket a;
  if (!parseArp(f, len, a)) return;
  FUZZ_CHECK(a.l2_len == 14 || a.l2_len == 18, "l2_len %zu", a.l2_len);
  FUZZ_CHECK(a.op == 1 || a.op == 2, "op %u", a.op);
  uint8_t* copy = static_cast<uint8_t*>(std::malloc(len));
  std::memcpy(copy, f, len);
  size_t n = makeArpReply(copy, a, kOurs);
  FUZZ_CHECK(n == a.l2_len + 28 && n <= len, "reply length %zu", n);
  ArpPacket r;
  FUZZ_CHECK(parseArp(copy, len, r), "reply does not parse");
  FUZZ_CHECK(r.op == 2 && r.sender_mac == kOurs && r.sender_ip == a.target_ip &&
                 r.target_mac == a.sender_mac && r.target_ip == a.sender_ip,
             "reply is not the answer");
  FUZZ_CHECK(std::memcmp(copy, a.sender_mac.b.data(), 6) == 0, "reply not to the asker");
  std::free(copy);
}

void checkNs(const uint8_t* f, size_t len, size_t extra) {
  NeighborSolicitation ns;
  if (!parseNeighborSolicitation(f, len, ns)) return;
  FUZZ_CHECK(ns.l2_len == (ns.has_vlan ? 18u : 14u), "l2_len %zu", ns.l2_len);
  FUZZ_CHECK(ns.target[0] != 0xff, "multicast target accepted");
  NeighborSolicitation again;
  FUZZ_CHECK(parseNeighborSolicitation(f, len, again) && again.target == ns.target &&
                 again.src == ns.src,
             "parse not deterministic");
  const size_t room = len + extra;
  uint8_t* buf = static_cast<uint8_t*>(std::malloc(room + kGuard));
  std::memcpy(buf, f, len);
  std::memset(buf + len, 0, extra);
  std::memset(buf + room, kGuardByte, kGuard);
  size_t n = makeNeighborAdvertisement(buf, room, ns, kOurs);
  for (size_t i = 0; i < kGuard; ++i) FUZZ_CHECK(buf[room + i] == kGuardByte, "wrote past room");
  const size_t want = ns.has_vlan ? 90 : 86;
  if (room < want) {
    FUZZ_CHECK(n == 0, "built %zu bytes in %zu of room", n, room);
  } else {
    FUZZ_CHECK(n == want, "advertisement of %zu bytes", n);
    MacAddr dst;
    std::memcpy(dst.b.data(), buf, 6);
    const MacAddr all_nodes{{0x33, 0x33, 0, 0, 0, 1}};
    const bool to_asker = ns.dad() ? dst == all_nodes : dst == ns.eth_src;
    FUZZ_CHECK(to_asker, "not addressed to the asker");
    FUZZ_CHECK(std::memcmp(buf + 6, kOurs.b.data(), 6) == 0, "not from our MAC");
    const uint8_t* ip = buf + ns.l2_len;
    FUZZ_CHECK(ip[7] == 255 && ip[6] == kProtoIcmpv6 && rd16(ip + 4) == 32, "IPv6 header");
    FUZZ_CHECK(std::memcmp(ip + 8, ns.target.data(), 16) == 0, "not from the target");
    uint32_t sum = csumAdd(0, ip + 8, 32) + 32 + kProtoIcmpv6;
    FUZZ_CHECK(csumFold(csumAdd(sum, ip + 40, 32)) == 0, "bad ICMPv6 checksum");
    NeighborSolicitation loop;
    FUZZ_CHECK(!parseNeighborSolicitation(buf, n, loop), "advertisement parses as a solicitation");
  }
  std::free(buf);
}

void checkNa(const uint8_t* f, size_t len) {
  NeighborAdvertisement na;
  if (!parseNeighborAdvertisement(f, len, na)) return;
  FUZZ_CHECK(na.l2_len == 14 || na.l2_len == 18, "l2_len %zu", na.l2_len);
  FUZZ_CHECK(na.target[0] != 0xff, "multicast target accepted");
  FUZZ_CHECK(!(na.dst[0] == 0xff && na.solicited), "solicited advertisement to multicast");
  NeighborAdvertisement again;
  FUZZ_CHECK(parseNeighborAdvertisement(f, len, again) && again.target == na.target &&
                 again.has_target_lladdr == na.has_target_lladdr &&
                 again.target_lladdr == na.target_lladdr,
             "parse not deterministic");
  // What the control thread would send to refresh this neighbour.
  uint8_t ns_frame[86 + kGuard];
  std::memset(ns_frame + 86, kGuardByte, kGuard);
  Ipv6Bytes us;
  std::memcpy(us.data(), kNode6, 16);
  const MacAddr* unicast = na.has_target_lladdr ? &na.target_lladdr : nullptr;
  FUZZ_CHECK(makeNeighborSolicitation(ns_frame, 85, kOurs, us, na.target, unicast) == 0,
             "built in too little room");
  size_t n = makeNeighborSolicitation(ns_frame, 86, kOurs, us, na.target, unicast);
  FUZZ_CHECK(n == 86, "solicitation of %zu bytes", n);
  for (size_t i = 0; i < kGuard; ++i) FUZZ_CHECK(ns_frame[86 + i] == kGuardByte, "wrote past room");
  NeighborSolicitation ns;
  FUZZ_CHECK(parseNeighborSolicitation(ns_frame, n, ns), "our solicitation does not parse");
  FUZZ_CHECK(ns.target == na.target && ns.src == us && ns.has_source_lladdr &&
                 ns.source_lladdr == kOurs,
             "our solicitation asks something else");
  FUZZ_CHECK(unicast ? ns.dst == na.target : ns.dst == solicitedNodeAddress(na.target),
             "our solicitation goes elsewhere");
  NeighborAdvertisement loop;
  FUZZ_CHECK(!parseNeighborAdvertisement(ns_frame, n, loop), "solicitation parses as an advertisement");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t extra = size_t(data[0]) * 4;
  const uint8_t* f = data + 1;
  size_t len = size - 1;
  checkIngress(f, len);
  checkArp(f, len);
  checkNs(f, len, extra);
  checkNa(f, len);
  return 0;
}
