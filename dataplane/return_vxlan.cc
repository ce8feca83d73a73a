// The return path's first stage for appliances of VXLAN groups (Azure's
// format): apart from Geneve's so that a Geneve return pays nothing for it.
#include <rte_mbuf.h>

#include "common/fast_path.h"
#include "common/packet_parser.h"
#include "common/vxlan.h"
#include "dataplane/pipeline_ctx.h"

namespace gwlb::dp::burst {

namespace {
// Out of line: inlined, the IPv6 lookup cost every IPv4 return 4 more
// instructions (bench/instruction_budget.json, "return, VXLAN": 739 -> 735).
[[gnu::noinline]] uint16_t applianceByIp6Cold(const Snapshot& s, const uint8_t* a) noexcept {
  return s.applianceByIp6(a);
}
}  // namespace

// Return path, stage 1 for VXLAN (RFC 7348): the appliance, its group's
// format and tunnels, then the inner frame, as the ethernet Geneve format's.
// Over IPv4 or IPv6 outers: an IPv6 appliance is found by its full address.
// VXLAN carries no cookie: the flow is checked by appliance only (finishReturn).
bool prepareReturnVxlan(Ctx& c, rte_mbuf* m, const ParsedPacket& outer, ParsedPacket& in, FlowRef& ref,
                        ReturnInfo& ri) noexcept {
  uint16_t appliance;
  const GroupView* gv = returnGroup(c, m, outer, outer.ip_version == 4, applianceByIp6Cold,
                                    Counter::drop_vxlan_unknown_appliance, appliance);
  if (!gv) return false;
  const GroupView& g = *gv;
  if (!g.vxlan) return drop(c, m, Counter::drop_vxlan_wrong_format), false;

  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t vx_off = size_t(outer.l4_offset) + 8;
  const size_t end = size_t(outer.l3_offset) + outer.l3_len;
  uint32_t vni = 0;
  Counter why;
  if (!parseVxlan(f + vx_off, end - vx_off, vni, why)) return drop(c, m, why), false;
  const int tunnel = g.tunnels.tunnelOf(outer.tuple.dport, vni);
  if (tunnel < 0) return drop(c, m, Counter::drop_vxlan_bad_tunnel), false;

  const size_t inner_off = vx_off + kVxlanHeaderLen;
  ParseStatus ps = ParseStatus::kOk;
  if (!parseCommon(f + inner_off, end - inner_off, in)) {
    in = ParsedPacket{};
    ps = parseFrame(f + inner_off, end - inner_off, in, why);
  }
  if (!keyReturn(c, m, ps, in, g, inner_off, ref, ri)) return false;
  ri.appliance = appliance, ri.cookie = 0, ri.aws = false, ri.vx_tunnel = int8_t(tunnel);
  ri.bypass = 0, ri.bypass_s = 0;  // VXLAN carries no options: no bypass request
  return true;
}

}  // namespace gwlb::dp::burst
