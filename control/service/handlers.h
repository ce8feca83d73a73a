// Helpers the control API's handler files share (control/daemon/daemon_api*.cc):
// the service guard of server changes and reloads, group lookup by name
// (control/daemon/daemon_api.cc), and the `flows` method's page
// (control/daemon/daemon_api_flows.cc). Control thread only.
#pragma once

#include <nlohmann/json.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/snapshot.h"
#include "control/api/api_params.h"
#include "dataplane/flow_table.h"

#include "control/config/config.h"
#include "control/config/valid_config.h"
#include "control/engine/lifecycle.h"
#include "control/engine/service_guard.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {

// Refuses (would_leave_no_service) a change that leaves a group with no
// appliance in service, unless forced; forced, it is logged as a warning and
// returned as `warnings` in the result.
nlohmann::json guardService(const std::vector<ServiceLoss>& losses, bool force, const std::string& what);

// The same for a config change from `cur` to `next` (set, remove).
nlohmann::json guardConfigChange(const Config& cur, const ServerLifecycle& life, const HealthMap& health,
                                 const ValidConfig& next, bool force, const std::string& what);

// A runtime change as the control API shows it: {group, address, change,
// file_weight, running_weight}.
nlohmann::json changeJson(const RuntimeChange& c);

// Index of the named group; not_found otherwise.
int groupIndex(const Config& cfg, const std::string& name);

// The `flows` method's request, parsed (Daemon::apiFlows).
struct FlowsQuery {
  uint16_t server = dp::kNoServer;
  bool by_server = false;
  int group = -1;
  std::optional<Cidr> src, dst;
  int proto = -1, port = -1;
  size_t limit = 100;
  bool count_only = false;
  uint32_t cursor = 0;
  std::vector<std::string> class_by_slot;  // class names by counter slot
};

// One page of the `flows` method from `q.cursor` on (docs/control-api.md
// "flows"): at most `q.limit` rows and at most 512, and never more than a
// bounded stretch of the table (2^18 slots, 2^14 keys), so that one request
// holds the control thread briefly whatever the table's size and the limit;
// `next_cursor` goes on from there.
// `group_name` names a flow's group (its index, or -1 and its appliance).
nlohmann::json flowsPage(const dp::FlowTable& flows, const dp::Snapshot* s, const FlowsQuery& q,
                         uint64_t now, const std::function<std::string(int group, uint32_t ip)>& group_name);

}  // namespace gwlb::ctl
