// The control core's policy over the flows in the table (the flow table
// stores, walks and reclaims; who moves flows off an appliance and how
// many flows each appliance holds is decided here, beside the lifecycle): the
// control sweep and the per-appliance flow counts the lifecycle ticks with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/snapshot.h"
#include "dataplane/flow_table.h"

namespace gwlb::ctl {

// How many flows (fragment entries excluded) route to each server id; `out`
// is resized to cover every id seen. One walk of the whole table
// (FlowTable::forEach): tools and tests; gwlbd's control thread counts in
// the engine's walk in slices (Engine::flowsByAppliance).
void countByAppliance(const dp::FlowTable& flows, std::vector<uint32_t>& out);

// Control thread: moves flows (not fragment entries) whose appliance has
// left its group (phase draining/drained/gone) and sheds its flows
// (ApplianceSlot::move) — flows that sent nothing since, which the workers
// would move only on their next packet — so the appliance can be
// forgotten. One walk of the whole table (FlowTable::forEach; tools and
// tests). Returns how many this call moved.
// `unhealthy_too` (a gateway of a fleet with flow sync): flows of an
// appliance that failed in a `rebalance` group (or whose region failed over)
// move too, not only on their next packet. A gateway's copy of a flow then follows the failure as every
// other gateway's does, whichever of them carried the flow's packets while
// the appliance was failed: the copy stays right when the mover's record is
// lost (a congested or cut sync link) and the appliance comes back
// (docs/fleet.md "Flows through sync faults").
size_t sweepMoves(dp::FlowTable& flows, const dp::Snapshot& s, uint64_t now_ns,
                  bool unhealthy_too = false);
// The same for one key at `pos` (the engine's walk in slices calls it per
// key): true when this call moved it.
bool sweepMove(dp::FlowTable& flows, const dp::Snapshot& s, const FlowKey& k, int32_t pos,
               uint64_t now_ns, bool unhealthy_too = false);
// True when some appliance of `s` sheds its flows though still active (failed
// in a `rebalance` group, or its region failed over): the walk has something
// to sweep with unhealthy_too.
bool anyUnhealthyShedding(const dp::Snapshot& s);

}  // namespace gwlb::ctl
