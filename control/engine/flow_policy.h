// The control core's policy over the flows in the table (issue 25: the flow
// table stores, walks and reclaims; who moves flows off an appliance and how
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
// the engine's walk in slices (Engine::flowsByServer).
void countByServer(const dp::FlowTable& flows, std::vector<uint32_t>& out);

// Control thread: moves flows (not fragment entries) whose appliance has
// left its group (phase draining/drained/gone) and sheds its flows
// (ServerView::move) — flows that sent nothing since, which the workers
// would move only on their next packet — so the appliance can be
// forgotten. One walk of the whole table (FlowTable::forEach; tools and
// tests). Returns how many this call moved.
size_t sweepMoves(dp::FlowTable& flows, const dp::Snapshot& s, uint64_t now_ns);
// The same for one key at `pos` (the engine's walk in slices calls it per
// key): true when this call moved it.
bool sweepMove(dp::FlowTable& flows, const dp::Snapshot& s, const FlowKey& k, int32_t pos,
               uint64_t now_ns);

}  // namespace gwlb::ctl
