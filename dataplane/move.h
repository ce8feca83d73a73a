// Moving an existing flow off an appliance that sheds its flows
// (ApplianceSlot::move; docs/product-rules.md section 2). Used by the workers on a flow's
// next packet (pipeline.cc) and by the control thread's sweep of flows that
// stay idle on an appliance that left (ctl::sweepMoves,
// control/engine/flow_policy.cc). Lock-free.
// Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
// one CAS on the route to a route derived only from (old route, flow hash, snapshot).
#pragma once

#include <atomic>
#include <cstdint>

#include "common/flow_cookie.h"
#include "common/snapshot.h"
#include "dataplane/flow_table.h"

namespace gwlb::dp {

// Re-picks the flow's appliance by Maglev over group `g` as it is in `s` and
// swaps the route. Keeps the route when there is nowhere better to go (no
// slot, the same appliance, or one that sheds flows itself). Returns the
// route in force afterwards; `moved` is set when this call made the move.
inline uint64_t tryMove(FlowEntry& e, const Snapshot& s, const GroupView& g, uint64_t route,
                        MoveReason why, uint64_t now, bool& moved) noexcept {
  moved = false;
  uint16_t from = routeAppliance(route);
  if (g.maglev.empty()) return route;
  // Concurrency rule R5 (docs/architecture.md "Flow entries: concurrency rules"):
  // a fragment entry's flow_hash is its flow's, so it follows the flow.
  uint32_t flow_hash = e.flow_hash.load(std::memory_order_relaxed);
  uint16_t to = g.maglev[g.maglevSlot(flow_hash)];
  if (to == kNoAppliance || to == from || to >= s.appliances.size()) return route;
  const ApplianceSlot& tv = s.appliances[to];
  if (!tv.routable || tv.move_reason != MoveReason::kNone) return route;
  // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
  // the new cookie is the flow's cookie on its new appliance (flowCookie: flow
  // hash and address only), so movers agree, and so do the gateways of a fleet.
  uint64_t want = packRoute(to, flowCookie(flow_hash, tv.ip));
  uint64_t seen = route;
  // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
  // a loser takes the winner's route; only the winner records the move.
  if (!e.route.compare_exchange_strong(seen, want, std::memory_order_acq_rel)) return seen;
  e.moved.store(packMove(uint8_t(why), from, routeCookie(route)), std::memory_order_release);
  e.moved_at.store(now);
  e.moves.fetch_add(1, std::memory_order_relaxed);
  moved = true;
  return want;
}

}  // namespace gwlb::dp
