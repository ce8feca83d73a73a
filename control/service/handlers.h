// The control API's handlers, one file per topic (control/service/api_*.cc),
// each on the narrow views it reads; addServiceMethods (service.cc) puts them
// in the method table. With the helpers the handler files share: the service
// guard of server changes and reloads, group lookup by name (api_status.cc),
// and the `flows` method's page (api_flows.cc). Each handler returns the
// reply's `result` or throws ApiFailure (the error reply). Control thread only.
#pragma once

#include <nlohmann/json.hpp>
#include <functional>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include "common/snapshot.h"
#include "control/api/api_params.h"
#include "control/api/http_request.h"
#include "common/flow_key.h"
#include "dataplane/flow_table.h"

#include "control/config/config.h"
#include "control/config/valid_config.h"
#include "control/engine/lifecycle.h"
#include "control/engine/service_guard.h"
#include "control/engine/snapshot_builder.h"
#include "control/api/api_failure.h"
#include "control/service/service.h"

namespace gwlb::ctl {

// An engine's refusal as the control API's error (ApiFailure, its code the
// refusal's kind, its details the losses, the config errors or the server
// ids): `what` names the request ("server.drain 10.0.0.1"), `subject` the
// appliance.
ApiFailure refusalFailure(const Refusal& r, const std::string& what, const std::string& subject);
[[noreturn]] void throwRefusal(const Refusal& r, const std::string& what, const std::string& subject);
// The error reply object of `f` ({ok: false, error: {code, message, details}}).
nlohmann::json failureReply(const ApiFailure& f);
// Logs a forced change's warnings ("control API: WHAT forced: ...").
void logForced(const std::string& what, const std::vector<std::string>& warnings);

// A runtime change as the control API shows it: {group, address, change,
// file_weight, running_weight}.
nlohmann::json changeJson(const RuntimeChange& c);

// An appliance's address as configured, in either family (ApplianceSlot keeps
// an IPv6 one in ip6, its 32-bit key in ip).
inline IpAddr applianceAddress(const dp::ApplianceSlot& sv) {
  return sv.ipv6 ? IpAddr::v6(sv.ip6.data()) : IpAddr::v4(sv.ip);
}

// Index of the named group; not_found otherwise.
int groupIndex(const Config& cfg, const std::string& name);

// The key (applianceKey()) the engine knows the appliance at address `a` by,
// in either family; not_found when `a` is IPv6 and no appliance configured,
// or removed and still known, has exactly that address (an IPv6 address that
// only folds to an appliance's key is not that appliance). An IPv4 address is
// its own key: the engine says whether it is an appliance.
uint32_t applianceKeyOf(const Engine& engine, const IpAddr& a);

// The `flows` method's request, parsed (flowsMethod).
struct FlowsQuery {
  uint16_t appliance = dp::kNoAppliance;
  bool by_appliance = false;
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

// status, stats, config (api_status.cc).
nlohmann::json statusMethod(const ServiceContext& c, const nlohmann::json& p);
nlohmann::json statsMethod(const ServiceContext& c, const nlohmann::json& p);
nlohmann::json configMethod(const Config& running, const Config& file, const nlohmann::json& p);
// Throws ApiFailure busy while a change waits for its classes
// (Engine::pending) or a reload runs: the change would undo it, or it this.
void refuseWhileCompiling(const ServiceContext& c, const std::string& what);
// A changed config through the engine's guard (Engine::applyConfig): its
// result ({snapshot_generation, warnings}); `why` names the cause for
// appliances the change removes, `what` the request. Throws the refusal
// (invalid_config, would_leave_no_service unless `force`, limit_reached):
// nothing changed then.
nlohmann::json applyChange(ServiceContext& c, Config next, const std::string& why, bool force,
                           const std::string& what);

// servers, groups, server.* (api_servers.cc).
class ApplianceView;
nlohmann::json appliancesMethod(const Engine& engine, const ApplianceView& appliances, const nlohmann::json& p);
nlohmann::json groupsMethod(const Engine& engine, const ApplianceView& appliances, const nlohmann::json& p);
nlohmann::json drainMethod(Engine& engine, uint64_t now, const nlohmann::json& p);
nlohmann::json undrainMethod(Engine& engine, uint64_t now, const nlohmann::json& p);
nlohmann::json applianceAddMethod(ServiceContext& c, const nlohmann::json& p);
nlohmann::json applianceRemoveMethod(ServiceContext& c, const nlohmann::json& p);
nlohmann::json applianceSetMethod(ServiceContext& c, const nlohmann::json& p);
// An appliance's drain as `servers` and server.drain show it.
nlohmann::json drainJson(const Engine& engine, const ApplianceLifecycle::Entry& e);
// The lifecycle's counts (`stats`).
nlohmann::json lifecycleStatsJson(const ApplianceLifecycle& life);

// flows, explain (api_flows.cc).
nlohmann::json flowsMethod(const Engine& engine, const nlohmann::json& p);
nlohmann::json explainMethod(const Engine& engine, const nlohmann::json& p);
// Name of a snapshot group index: a configured group, or the group a
// removed appliance (address ip) left ("?" when neither).
std::string groupName(const Engine& engine, int group, uint32_t ip);
// The name of a snapshot's listener index (dp::ListenerView, ClassTable::listener).
std::string snapshotListenerName(const Engine& engine, uint8_t li);

// classes (api_classes.cc): each class with what it counted since its name
// took its counter slot.
struct ClassRow {
  size_t index = 0;
  std::string name, action, listener;  // listener: inspect only ("" otherwise)
  ClassCount count;
};
std::vector<ClassRow> classRows(const Engine& engine, const WorkerStats& workers);
nlohmann::json classesMethod(const Engine& engine, const WorkerStats& workers, bool reloading,
                             const nlohmann::json& p);
// The per-class /metrics families.
void classMetrics(std::ostringstream& o, const Engine& engine, const WorkerStats& workers);
nlohmann::json classExplainJson(const Config& cfg, const L4Tuple& t, std::optional<uint16_t> port,
                                uint16_t vlan);

// Passive detection's, flap dampening's and slow start's /metrics families
// (service_metrics.cc).
void serviceMetrics(std::ostringstream& o, const Engine& engine, const HealthView& health);

// health, destinations, the health endpoint (api_health.cc).
nlohmann::json healthMethod(const Config& cfg, HealthView health, const ApplianceView& appliances,
                            const nlohmann::json& p);
nlohmann::json destinationsMethod(const RegionTracker& regions, const nlohmann::json& p);
// One destination (listener) with its regions, composites and sources.
nlohmann::json destinationJson(const RegionTracker& regions, const RegionTracker::Listener& l);
// GET /destinations and /destinations/NAME on the health endpoint.
HttpReply healthEndpoint(const RegionTracker& regions, const std::string& path);

}  // namespace gwlb::ctl
