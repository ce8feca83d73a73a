// gwlb-replay's summary.json and the summary printed at the end (docs/replay.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/counters.h"
#include "control/engine/engine.h"
#include "control/engine/scripted_events.h"
#include "tools/replay_io.h"
#include "tools/replay_run.h"
#include "tools/replay_series.h"

namespace gwlb::replay {

// Each listener's state as the tracker has it now (times from first_ts).
nlohmann::json listenersJson(const ctl::RegionTracker& regions, uint64_t first_ts);
nlohmann::json compositesJson(const ctl::RegionTracker& regions, uint64_t first_ts);

struct SummaryInput {
  const Options& o;
  const ctl::Engine& engine;  // after the run, workers stopped
  const dp::FlowTable& flows;
  const std::vector<ctl::ScriptedEvent>& events;
  const CaptureStats& cs;
  size_t n_router_in = 0, appliance_in = 0;
  uint64_t to_appliances = 0, returned = 0, reflected = 0, alloc_retries = 0;
  uint64_t first_ts = 0;
  WorkerCounters total;
  const nlohmann::json* lifecycle_changes = nullptr;
  const nlohmann::json* region_changes = nullptr;
  Timeline* timeline = nullptr;  // gets a series for every appliance ever known
};

// Writes DIR/summary.json and prints the per-appliance table, the events and
// the totals on stdout.
void writeSummary(const SummaryInput& in);

}  // namespace gwlb::replay
