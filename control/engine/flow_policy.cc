#include "control/engine/flow_policy.h"

#include "dataplane/move.h"

namespace gwlb::ctl {

void countByAppliance(const dp::FlowTable& flows, std::vector<uint32_t>& out) {
  flows.forEach([&](const FlowKey& k, int32_t, const dp::FlowEntry& e) {
    if (k.kind == KeyKind::kFragment) return;
    uint64_t r = e.route.load(std::memory_order_acquire);
    if (!(r & dp::kRouteSet)) return;
    uint16_t id = dp::routeAppliance(r);
    if (out.size() <= id) out.resize(size_t(id) + 1, 0);
    ++out[id];
  });
}

bool anyUnhealthyShedding(const dp::Snapshot& s) {
  for (const dp::ApplianceSlot& sv : s.appliances)
    if (sv.move_reason != dp::MoveReason::kNone && sv.phase == dp::AppliancePhase::kActive) return true;
  return false;
}

bool sweepMove(dp::FlowTable& flows, const dp::Snapshot& s, const FlowKey& k, int32_t pos,
               uint64_t now_ns, bool unhealthy_too) {
  // Keys carry the listener; moves go to its active group.
  if (k.kind == KeyKind::kFragment || k.listener >= s.listeners.size()) return false;
  uint8_t target = s.listeners[k.listener].active;
  if (target >= s.groups.size()) return false;
  dp::FlowEntry& e = flows.entry(pos);
  uint64_t r = e.route.load(std::memory_order_acquire);
  if (!(r & dp::kRouteSet) || dp::routeAppliance(r) >= s.appliances.size()) return false;
  const dp::ApplianceSlot& sv = s.appliances[dp::routeAppliance(r)];
  if (sv.move_reason == dp::MoveReason::kNone) return false;
  if (sv.phase == dp::AppliancePhase::kActive && !unhealthy_too) return false;
  // A TCP flow there is to be reset at its next segment (send_tcp_reset), not
  // handed to an appliance that never saw its SYN (2-tuple keys carry no protocol).
  if (sv.reset != dp::ResetReason::kNone && (k.proto == kProtoTcp || k.proto == 0)) return false;
  bool moved = false;
  // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
  // the same CAS as the workers; whoever is first moves the flow.
  dp::tryMove(e, s, s.groups[target], r, sv.move_reason, now_ns, moved);
  return moved;
}

size_t sweepMoves(dp::FlowTable& flows, const dp::Snapshot& s, uint64_t now_ns, bool unhealthy_too) {
  size_t moved_n = 0;
  flows.forEach([&](const FlowKey& k, int32_t pos, const dp::FlowEntry&) {
    moved_n += sweepMove(flows, s, k, pos, now_ns, unhealthy_too);
  });
  return moved_n;
}

}  // namespace gwlb::ctl
