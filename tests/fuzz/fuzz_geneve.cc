// Fuzz target 2: the Geneve return-path validator and decapsulator. Any bytes
// are the UDP payload of a packet an appliance sent to the gateway's port 6081:
// gwlb::parseGeneve, then the inner parse exactly as dp::prepareReturn does it
// (aws format: protocol 0x0800/0x86DD with a flow cookie, parseL3 of what
// follows the options; ethernet format: protocol 0x6558, parseFrame), then the
// unwrap: the inner datagram behind a fresh Ethernet header, as the router
// receives it. Invariants (docs/fuzzing.md):
//  - the validator agrees with a small independent model of RFC 8926 as
//    docs/wire-format.md states it (status, drop reason, the aws options found);
//  - header_len = 8 + 4 x opt len, within the buffer; protocol and VNI are the
//    header's; a drop names a drop counter;
//  - an accepted inner packet lies inside the payload, and the unwrapped frame
//    parses to the same packet (same tuple, length, fragment and ICMP fields);
//  - the nsi format's options (class 0x0132: network ID and D bit, endpoint ID
//    giving the cookie, profile ID) are found as the model finds them;
//  - gwlb's bypass option (class 0xFF01, type 1) is found as the model finds
//    it (4 bytes: a request of that many seconds; any other length: malformed,
//    the packet still accepted), and addBypassOption on an accepted packet
//    gives one that parses alike with the request added and the same inner bytes.
#include <cstring>
#include <vector>

#include "common/fast_path.h"
#include "common/geneve.h"
#include "common/packet_parser.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;

namespace {

struct Model {
  GeneveStatus st = GeneveStatus::kOk;
  Counter why = Counter::kCount;
  size_t header_len = 0;
  bool has_cookie = false, has_eid = false, has_aid = false;
  uint32_t cookie = 0;
  uint64_t eid = 0, aid = 0;
  bool has_bypass = false, bypass_malformed = false;
  uint32_t bypass_s = 0;
  bool has_net = false, egress = false, has_profile = false, has_nsi_eid = false;
  uint32_t net = 0;
  uint64_t profile = 0, nsi_eid = 0;
};

uint64_t be(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

Model model(const uint8_t* d, size_t size) {
  Model m;
  auto drop = [&](Counter c) {
    m.st = GeneveStatus::kDrop;
    m.why = c;
    return m;
  };
  if (size < 8) return drop(Counter::drop_geneve_truncated);
  if ((d[0] >> 6) != 0) return drop(Counter::drop_geneve_bad_version);
  m.header_len = 8 + size_t(d[0] & 0x3F) * 4;
  if (m.header_len > size) return drop(Counter::drop_geneve_truncated);
  if (d[1] & 0x80) {
    m.st = GeneveStatus::kControl;
    return m;
  }
  size_t pos = 8;
  while (pos < m.header_len) {
    if (m.header_len - pos < 4) return drop(Counter::drop_geneve_bad_option);
    size_t len = size_t(d[pos + 3] & 0x1F) * 4;
    if (pos + 4 + len > m.header_len) return drop(Counter::drop_geneve_bad_option);
    uint16_t cls = uint16_t(be(d + pos, 2));
    uint8_t type = d[pos + 2];
    bool known = false;
    if (cls == 0x0108) {
      uint8_t t = type & 0x7F;
      if (t == 1 && len == 8) m.has_eid = known = true, m.eid = be(d + pos + 4, 8);
      if (t == 2 && len == 8) m.has_aid = known = true, m.aid = be(d + pos + 4, 8);
      if (t == 3 && len == 4) m.has_cookie = known = true, m.cookie = uint32_t(be(d + pos + 4, 4));
    }
    if (cls == 0x0132) {  // nsi: an 8-byte endpoint ID gives the cookie (its low half)
      uint8_t t = type & 0x7F;
      if (t == 1 && len == 4)
        m.has_net = known = true, m.net = uint32_t(be(d + pos + 4, 4)) >> 4, m.egress = d[pos + 7] & 1;
      if (t == 2 && len == 8)
        m.has_nsi_eid = m.has_cookie = known = true, m.nsi_eid = be(d + pos + 4, 8),
        m.cookie = uint32_t(be(d + pos + 8, 4));
      if (t == 3 && len == 8) m.has_profile = known = true, m.profile = be(d + pos + 4, 8);
    }
    if (cls == 0xFF01 && (type & 0x7F) == 1) {
      m.has_bypass = known = true;
      m.bypass_malformed = len != 4;
      m.bypass_s = len == 4 ? uint32_t(be(d + pos + 4, 4)) : 0;
    }
    if (!known && (type & 0x80)) return drop(Counter::drop_geneve_unknown_critical_option);
    pos += 4 + len;
  }
  return m;
}

bool sameTuple(const L4Tuple& a, const L4Tuple& b) {
  return a.src == b.src && a.dst == b.dst && a.proto == b.proto && a.sport == b.sport &&
         a.dport == b.dport;
}

// The inner packet accepted at d[inner_off..size): check its bounds, then
// unwrap it as dp::finishReturn does and parse what the router would receive.
void checkInner(const uint8_t* d, size_t size, size_t inner_off, const ParsedPacket& in,
                uint16_t aws_protocol) {
  size_t l3_start = inner_off + in.l3_offset;
  FUZZ_CHECK(l3_start + in.l3_len <= size, "inner datagram [%zu, +%u) past the payload (%zu)",
             l3_start, unsigned(in.l3_len), size);
  FUZZ_CHECK(in.ip_version == 4 || in.ip_version == 6, "inner version %d", in.ip_version);
  if (aws_protocol)
    FUZZ_CHECK(in.ip_version == (aws_protocol == kEtherTypeIpv4 ? 4 : 6),
               "aws protocol %04x but inner IPv%d", aws_protocol, in.ip_version);
  std::vector<uint8_t> out(14 + size_t(in.l3_len));
  for (size_t i = 0; i < 12; ++i) out[i] = uint8_t(0x02 + i);
  wr16(out.data() + 12, in.ip_version == 4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
  std::memcpy(out.data() + 14, d + l3_start, in.l3_len);
  ParsedPacket r;
  Counter why;
  ParseStatus st = parseFrame(out.data(), out.size(), r, why);
  FUZZ_CHECK(st == ParseStatus::kOk, "the unwrapped packet does not parse (status %d)", int(st));
  FUZZ_CHECK(sameTuple(r.tuple, in.tuple) && r.l3_len == in.l3_len &&
                 r.is_fragment == in.is_fragment && r.first_fragment == in.first_fragment &&
                 r.frag_id == in.frag_id && r.icmp_error == in.icmp_error &&
                 sameTuple(r.quoted, in.quoted),
             "the unwrapped packet parses differently");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t size) {
  GeneveInfo gi;
  Counter why = Counter::kCount;
  GeneveStatus st = parseGeneve(d, size, gi, why);
  // The worker's shortcut for the ethernet format's header: what it takes,
  // the validator takes alike.
  GeneveInfo plain;
  if (parseGenevePlain(d, size, plain))
    FUZZ_CHECK(st == GeneveStatus::kOk && plain.protocol == gi.protocol && plain.vni == gi.vni &&
                   plain.header_len == gi.header_len && !gi.oam && !gi.critical && !gi.has_cookie &&
                   !gi.has_bypass && !gi.has_endpoint_id && !gi.has_network_id,
               "parseGenevePlain took what parseGeneve parses otherwise");
  // The return path's exact-header tests, asked for the header's own VNI:
  // what they take, the validator takes with that protocol, VNI and cookie.
  if (size >= 8) {
    const uint32_t vni = rd32(d + 4) >> 8;
    uint32_t cookie = 0;
    if (isOwnGeneveAwsIpv4(d, size, vni, cookie))
      FUZZ_CHECK(st == GeneveStatus::kOk && gi.protocol == kEtherTypeIpv4 && gi.vni == vni && gi.has_cookie &&
                     gi.cookie == cookie && gi.header_len == kGeneveBaseLen + kAwsOptionsLen && !gi.oam &&
                     !gi.critical && !gi.has_bypass,
                 "isOwnGeneveAwsIpv4 took what parseGeneve parses otherwise");
    if (isOwnGenevePlain(d, size, vni))
      FUZZ_CHECK(st == GeneveStatus::kOk && gi.protocol == kEtherTypeTeb && gi.vni == vni &&
                     gi.header_len == kGeneveBaseLen && !gi.oam && !gi.critical && !gi.has_cookie &&
                     !gi.has_bypass,
                 "isOwnGenevePlain took what parseGeneve parses otherwise");
  }
  Model m = model(d, size);
  FUZZ_CHECK(st == m.st, "parseGeneve status %d, model %d", int(st), int(m.st));
  if (st == GeneveStatus::kDrop) {
    FUZZ_CHECK(why == m.why, "drop reason %u, model %u", unsigned(why), unsigned(m.why));
    FUZZ_CHECK(kCounterInfo[size_t(why)].is_drop, "not a drop counter");
    return 0;
  }
  FUZZ_CHECK(gi.header_len == m.header_len && gi.header_len <= size && gi.header_len % 4 == 0,
             "header_len %zu (model %zu, size %zu)", gi.header_len, m.header_len, size);
  FUZZ_CHECK(gi.version == 0 && gi.protocol == rd16(d + 2) && gi.vni == (rd32(d + 4) >> 8) &&
                 gi.oam == bool(d[1] & 0x80) && gi.critical == bool(d[1] & 0x40),
             "header fields");
  if (st == GeneveStatus::kControl) {
    FUZZ_CHECK(gi.oam, "kControl without the O bit");
    return 0;
  }
  FUZZ_CHECK(gi.has_cookie == m.has_cookie && gi.has_endpoint_id == m.has_eid &&
                 gi.has_attachment_id == m.has_aid,
             "options found differ from the model");
  FUZZ_CHECK((!m.has_cookie || gi.cookie == m.cookie) && (!m.has_eid || gi.endpoint_id == m.eid) &&
                 (!m.has_aid || gi.attachment_id == m.aid),
             "option values differ from the model");
  FUZZ_CHECK(gi.has_network_id == m.has_net && gi.has_profile_id == m.has_profile &&
                 gi.has_nsi_endpoint == m.has_nsi_eid && (!m.has_net || (gi.network_id == m.net &&
                 gi.nsi_egress == m.egress)) && (!m.has_profile || gi.profile_id == m.profile) &&
                 (!m.has_nsi_eid || gi.nsi_endpoint == m.nsi_eid),
             "nsi options differ from the model");
  FUZZ_CHECK(gi.has_bypass == m.has_bypass && gi.bypass_malformed == m.bypass_malformed &&
                 gi.bypass_seconds == m.bypass_s,
             "bypass option differs from the model");
  // An appliance's request added to what it returns: parses alike, with it.
  std::vector<uint8_t> with(size + 8);
  const uint32_t secs = uint32_t(size * 7);
  size_t n2 = addBypassOption(d, size, with.data(), with.size(), kGwlbOptionClassDefault, secs);
  FUZZ_CHECK(n2 == 0 || n2 == size + 8, "addBypassOption length %zu of %zu", n2, size);
  FUZZ_CHECK(n2 != 0 || gi.header_len - 8 + 8 > kMaxGeneveOptionsLen, "addBypassOption refused room");
  if (n2) {
    GeneveInfo g2;
    Counter w2 = Counter::kCount;
    FUZZ_CHECK(parseGeneve(with.data(), n2, g2, w2) == GeneveStatus::kOk, "with the option: not ok");
    FUZZ_CHECK(g2.has_bypass && !g2.bypass_malformed && g2.bypass_seconds == secs &&
                   g2.header_len == gi.header_len + 8 && g2.cookie == gi.cookie &&
                   g2.has_cookie == gi.has_cookie && g2.protocol == gi.protocol && g2.vni == gi.vni,
               "with the option: parses differently");
    FUZZ_CHECK(std::memcmp(with.data() + g2.header_len, d + gi.header_len, size - gi.header_len) == 0,
               "with the option: inner bytes differ");
  }

  // prepareReturn: the group's format decides; try both as two groups would.
  const size_t inner_off = gi.header_len;
  ParsedPacket in;
  Counter w;
  if ((gi.protocol == kEtherTypeIpv4 || gi.protocol == kEtherTypeIpv6) && gi.has_cookie) {
    if (parseL3(d + inner_off, size - inner_off, gi.protocol, in, w) == ParseStatus::kOk)
      checkInner(d, size, inner_off, in, gi.protocol);
    else
      FUZZ_CHECK(kCounterInfo[size_t(w)].is_drop, "inner drop without a drop counter");
  }
  if (gi.protocol == kEtherTypeTeb) {
    ParseStatus ps = parseFrame(d + inner_off, size - inner_off, in, w);
    if (ps == ParseStatus::kOk) checkInner(d, size, inner_off, in, 0);
    else if (ps == ParseStatus::kDrop)
      FUZZ_CHECK(kCounterInfo[size_t(w)].is_drop, "inner drop without a drop counter");
  }
  return 0;
}
