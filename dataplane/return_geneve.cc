// The return path's first stage for Geneve headers other than the one our
// encapsulation writes (pipeline.cc's prepareReturn takes that one inline).
#include <rte_mbuf.h>

#include "common/fast_path.h"
#include "common/geneve.h"
#include "common/packet_parser.h"
#include "dataplane/pipeline_ctx.h"

namespace gwlb::dp::burst {

// The Geneve header through parseGeneve() and its checks in their order
// (docs/wire-format.md), then the inner packet through the general parsers:
// every header prepareReturn's exact test does not take (another format's,
// options other than ours, a bypass request, an inner IPv6 packet, anything
// malformed). Out of line, so that the common case holds fewer registers.
// The caller keys the packet: one copy of the keying in runBurst (a second
// one made the compiler call the flow key's builder out of line).
bool prepareReturnGeneral(Ctx& c, rte_mbuf* m, ParsedPacket& in, ReturnInfo& ri, const GroupView& g,
                          uint8_t* f, size_t gen_off, size_t end, size_t& inner_off) noexcept {
  const Snapshot& s = c.s;
  GeneveInfo gi;
  Counter why;
  // The header each format's encapsulation writes takes a fast parse; the
  // general validator takes the rest. An aws group is never a VXLAN one.
  auto general = [&]() {
    const GeneveStatus st = parseGeneve(f + gen_off, end - gen_off, gi, why, s.geneve_option_class);
    if (st == GeneveStatus::kControl) return drop(c, m, Counter::drop_geneve_control), false;
    if (st == GeneveStatus::kDrop) return drop(c, m, why), false;
    return true;
  };
  if (g.aws) {
    if (!parseGeneveAws(f + gen_off, end - gen_off, gi) && !general()) return false;
  } else {
    if (!parseGenevePlain(f + gen_off, end - gen_off, gi) && !general()) return false;
    if (g.vxlan) [[unlikely]]
      return drop(c, m, Counter::drop_vxlan_wrong_format), false;
  }
  if (gi.vni != g.vni) return drop(c, m, Counter::drop_geneve_bad_vni), false;
  if (g.aws) {
    if (gi.protocol != kEtherTypeIpv4 && gi.protocol != kEtherTypeIpv6)
      return drop(c, m, Counter::drop_geneve_bad_protocol), false;
    if (!gi.has_cookie) return drop(c, m, Counter::drop_geneve_missing_cookie), false;
  } else if (gi.protocol != kEtherTypeTeb) {
    return drop(c, m, Counter::drop_geneve_bad_protocol), false;
  }

  inner_off = gen_off + gi.header_len;
  // The fast parsers write every field later read, whatever `in` held; the
  // general ones start from a fresh packet (the outer one is no longer read).
  ParseStatus ps = ParseStatus::kOk;
  if (g.aws) {
    if (gi.protocol != kEtherTypeIpv4 || !parseCommonIpv4(f + inner_off, end - inner_off, 0, in)) {
      in = ParsedPacket{};
      ps = parseL3(f + inner_off, end - inner_off, gi.protocol, in, why);
    }
  } else if (!parseCommon(f + inner_off, end - inner_off, in)) {
    in = ParsedPacket{};
    ps = parseFrame(f + inner_off, end - inner_off, in, why);
  }
  if (ps != ParseStatus::kOk) return drop(c, m, Counter::drop_return_inner_malformed), false;
  ri.cookie = gi.cookie;
  ri.bypass = gi.has_bypass ? (gi.bypass_malformed ? 2 : 1) : 0, ri.bypass_s = gi.bypass_seconds;
  return true;
}

}  // namespace gwlb::dp::burst
