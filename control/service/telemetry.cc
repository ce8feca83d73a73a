// The read-only DPDK telemetry commands of gwlbd (/gwlb/..., docs/observability.md):
// DPDK runs them on its own thread, so they read only a mutex-guarded copy of
// the figures that the control thread replaces every second (refreshTelemetry).
#include <rte_telemetry.h>

#include <cerrno>
#include <mutex>

#include "control/service/appliance_view.h"
#include "control/service/handlers.h"
#include "control/service/metrics.h"

namespace gwlb::ctl {
namespace {

struct TelemetryCopy {
  std::mutex mu;
  TelemetryFigures f;
};
TelemetryCopy g_tel;

int telStats(const char*, const char*, rte_tel_data* d) {
  std::lock_guard lock(g_tel.mu);
  rte_tel_data_start_dict(d);
  for (auto& [k, v] : g_tel.f.counters)
    if (k.rfind("drop_", 0) != 0) rte_tel_data_add_dict_u64(d, k.c_str(), v);
  rte_tel_data_add_dict_u64(d, "flows", g_tel.f.flows);
  rte_tel_data_add_dict_u64(d, "flow_capacity", g_tel.f.capacity);
  rte_tel_data_add_dict_u64(d, "snapshot_generation", g_tel.f.generation);
  return 0;
}

int telDrops(const char*, const char*, rte_tel_data* d) {
  std::lock_guard lock(g_tel.mu);
  rte_tel_data_start_dict(d);
  for (auto& [k, v] : g_tel.f.counters)
    if (k.rfind("drop_", 0) == 0) rte_tel_data_add_dict_u64(d, k.c_str() + 5, v);
  return 0;
}

// Telemetry names allow no dots, so appliances are listed by state, every
// state present (empty lists included):
// {"active": ["192.0.2.10", ...], "unhealthy": [...], "initializing": [...], ...}.
int telAppliances(const char*, const char*, rte_tel_data* d) {
  std::lock_guard lock(g_tel.mu);
  rte_tel_data_start_dict(d);
  for (const char* state : kApplianceStates) {
    rte_tel_data* list = rte_tel_data_alloc();
    if (!list) return -ENOMEM;
    rte_tel_data_start_array(list, RTE_TEL_STRING_VAL);
    for (const TelemetryServer& sv : g_tel.f.appliances)
      if (sv.state == state) rte_tel_data_add_array_string(list, sv.address.c_str());
    rte_tel_data_add_dict_container(d, state, list, 0);
  }
  return 0;
}

// /gwlb/server,ADDRESS: one appliance's state, traffic and probes.
int telAppliance(const char*, const char* params, rte_tel_data* d) {
  if (!params || !*params) return -EINVAL;
  std::lock_guard lock(g_tel.mu);
  for (const TelemetryServer& sv : g_tel.f.appliances) {
    if (sv.address != params) continue;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "address", sv.address.c_str());
    rte_tel_data_add_dict_string(d, "group", sv.group.c_str());
    rte_tel_data_add_dict_string(d, "state", sv.state.c_str());
    rte_tel_data_add_dict_u64(d, "sent_packets", sv.traffic.sent_packets);
    rte_tel_data_add_dict_u64(d, "sent_bytes", sv.traffic.sent_bytes);
    rte_tel_data_add_dict_u64(d, "returned_packets", sv.traffic.returned_packets);
    rte_tel_data_add_dict_u64(d, "returned_bytes", sv.traffic.returned_bytes);
    if (sv.probed) {
      rte_tel_data_add_dict_u64(d, "consecutive_failures", sv.consecutive_failures);
      rte_tel_data_add_dict_u64(d, "probes", sv.probes);
      rte_tel_data_add_dict_u64(d, "probe_duration_sum_us", sv.probe_sum_us);
    }
    return 0;
  }
  return -EINVAL;
}

// /gwlb/classes: the traffic class names in order (names may hold '.' and
// '-', which telemetry allows in strings but not in dict keys).
int telClasses(const char*, const char*, rte_tel_data* d) {
  std::lock_guard lock(g_tel.mu);
  rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
  for (const TelemetryClass& c : g_tel.f.classes) rte_tel_data_add_array_string(d, c.name.c_str());
  return 0;
}

// /gwlb/class,NAME: one class's position, action, listener and counts.
int telClass(const char*, const char* params, rte_tel_data* d) {
  if (!params || !*params) return -EINVAL;
  std::lock_guard lock(g_tel.mu);
  for (const TelemetryClass& c : g_tel.f.classes) {
    if (c.name != params) continue;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "name", c.name.c_str());
    rte_tel_data_add_dict_u64(d, "index", c.index);
    rte_tel_data_add_dict_string(d, "action", c.action.c_str());
    rte_tel_data_add_dict_string(d, "listener", c.listener.c_str());
    rte_tel_data_add_dict_u64(d, "packets", c.packets);
    rte_tel_data_add_dict_u64(d, "bytes", c.bytes);
    return 0;
  }
  return -EINVAL;
}

}  // namespace

void registerTelemetry(const ServiceContext& c) {
  rte_telemetry_register_cmd("/gwlb/stats", telStats,
                             "gwlbd event counters summed over workers, flows in table. No parameters.");
  rte_telemetry_register_cmd("/gwlb/drops", telDrops,
                             "gwlbd drop counters by reason, summed over workers. No parameters.");
  rte_telemetry_register_cmd("/gwlb/servers", telAppliances,
                             "gwlbd appliance addresses by state, every state. No parameters.");
  // Help texts must stay under 128 bytes (RTE_TEL_MAX_STRING_LEN), or DPDK
  // refuses the command and it answers null.
  rte_telemetry_register_cmd("/gwlb/server", telAppliance,
                             "one gwlbd appliance: state, traffic sent and returned, probes. "
                             "Parameter: its address.");
  rte_telemetry_register_cmd("/gwlb/classes", telClasses,
                             "gwlbd traffic class names, in match order. No parameters.");
  rte_telemetry_register_cmd("/gwlb/class", telClass,
                             "one gwlbd traffic class: index, action, listener, packets, bytes. "
                             "Parameter: its name.");
  refreshTelemetry(c);
}

TelemetryFigures telemetryFigures(const ServiceContext& c) {
  TelemetryFigures f;
  WorkerCounters t = c.workers.totals();
  for (size_t k = 0; k < kNumCounters; ++k) f.counters.emplace_back(kCounterInfo[k].name, t.v[k]);
  for (const ApplianceView::Row& r : c.appliances.rows()) {
    TelemetryServer ts{r.address, r.group, r.state, c.appliances.traffic(r.id)};
    if (const HealthTracker* ht = c.health.checkedTracker(r.ip)) {
      ts.probed = true;
      ts.consecutive_failures = ht->consecutiveFailures();
      ts.probes = ht->latency().count;
      ts.probe_sum_us = ht->latency().sum_us;
    }
    f.appliances.push_back(std::move(ts));
  }
  for (const ClassRow& r : classRows(c.engine, c.workers))
    f.classes.push_back({r.name, r.action, r.listener, r.index, r.count.packets, r.count.bytes});
  const dp::Snapshot* s = c.engine.current();
  f.flows = c.engine.flows().count();
  f.capacity = c.engine.flows().capacity();
  f.generation = s ? s->generation : 0;
  return f;
}

void refreshTelemetry(const ServiceContext& c) {
  TelemetryFigures f = telemetryFigures(c);
  std::lock_guard lock(g_tel.mu);
  g_tel.f = std::move(f);
}

}  // namespace gwlb::ctl
