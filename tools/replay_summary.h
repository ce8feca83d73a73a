// gwlb-replay's summary.json and the summary printed at the end (docs/replay.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
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

// One traffic class's packets and bytes (as received from the router) that
// were handled by one action, summed by name over every config the run had (a
// reload can reorder, add or drop classes, or change a class's action): a
// packet counts under the action that handled it, so a flow that started
// before a reload made its class bypass counts as inspect.
struct ClassTotal {
  std::string name, action;
  // inspect: every listener the class named while it inspected (a flow keeps
  // the listener it started on).
  std::vector<std::string> listeners;
  uint64_t packets = 0, bytes = 0;
  std::string listenerText() const;  // "la, lc"; "" for none
};

struct SummaryInput {
  const Options& o;
  const ctl::Engine& engine;  // after the run, workers stopped
  const dp::FlowTable& flows;
  const std::vector<ctl::ScriptedEvent>& events;
  const CaptureStats& cs;
  size_t n_router_in = 0, appliance_in = 0;
  uint64_t to_appliances = 0, returned = 0, reflected = 0, alloc_retries = 0;
  uint64_t to_mirrors = 0;  // copies for mirror groups (to-mirrors.pcap)
  uint64_t reflected_bypass = 0;  // reflections that asked for a bypass (--reflect-bypass-after)
  uint64_t first_ts = 0;
  WorkerCounters total;
  const nlohmann::json* lifecycle_changes = nullptr;
  const nlohmann::json* region_changes = nullptr;
  const nlohmann::json* service_changes = nullptr;  // hold-downs and slow starts
  Timeline* timeline = nullptr;  // gets a series for every appliance ever known
  // Every class any config of the run had, in order of first appearance;
  // empty: the run had no traffic_classes.
  const std::vector<ClassTotal>* classes = nullptr;
};

// Writes DIR/summary.json and prints the per-appliance table, the events and
// the totals on stdout.
void writeSummary(const SummaryInput& in);

}  // namespace gwlb::replay
