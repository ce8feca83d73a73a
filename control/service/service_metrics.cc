// Passive detection, flap dampening and slow start as /metrics shows them
// (docs/observability.md): each appliance's ejections, forwarding probes,
// penalty, hold-downs and slow-start share. Control thread.
#include <sstream>
#include <string>
#include <vector>

#include "control/service/handlers.h"

namespace gwlb::ctl {

namespace {
void family(std::ostringstream& o, const char* name, const char* type, const char* help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}
}  // namespace

void serviceMetrics(std::ostringstream& o, const Engine& engine, const HealthView& health) {
  struct Row {
    std::string labels;
    uint32_t ip;
    const ApplianceGroupConfig* g;
  };
  std::vector<Row> rows;
  for (const auto& g : engine.config().server_groups)
    for (const auto& sc : g.appliances) {
      std::string group;
      for (char c : g.name) group += (c == '\\' || c == '"') ? std::string("\\") + c : std::string(1, c);
      rows.push_back({"group=\"" + group + "\",address=\"" + sc.address.str() + "\"",
                      applianceKey(sc.address), &g});
    }
  const uint64_t now = dp::monotonicNs();
  auto passive = [](const Row& r) { return r.g->health_check.active() && r.g->health_check.passive.enabled; };
  auto damp = [](const Row& r) { return r.g->health_check.active() && r.g->health_check.dampening.enabled; };
  family(o, "gwlb_server_no_returns_ejections_total", "counter",
         "times passive detection ejected the appliance: packets sent, none returned over the window "
         "(groups with health_check.passive)");
  for (const Row& r : rows)
    if (passive(r)) o << "gwlb_server_no_returns_ejections_total{" << r.labels << "} " << health.passive.status(r.ip).ejections << '\n';
  family(o, "gwlb_server_no_returns_capped", "gauge",
         "1 while the appliance returns nothing but stays in service: its group has "
         "max_ejection_percent of its appliances ejected already");
  for (const Row& r : rows)
    if (passive(r)) o << "gwlb_server_no_returns_capped{" << r.labels << "} " << (health.passive.status(r.ip).capped ? 1 : 0) << '\n';
  family(o, "gwlb_server_forwarding_probes_total", "counter",
         "forwarding-check probes sent to the appliance by what became of them: sent, unsent, "
         "returned, timed_out (groups with health_check.forwarding)");
  for (const Row& r : rows)
    if (r.g->health_check.forwardingActive() && health.checker)
      if (const HealthChecker::ForwardingCounts* f = health.checker->forwardingCounts(r.ip))
        for (auto [k, v] : {std::pair<const char*, uint64_t>{"sent", f->sent}, {"unsent", f->unsent},
                            {"returned", f->returned}, {"timed_out", f->timed_out}})
          o << "gwlb_server_forwarding_probes_total{" << r.labels << ",result=\"" << k << "\"} " << v << '\n';
  family(o, "gwlb_server_flap_penalty", "gauge",
         "flap dampening penalty of the appliance now (groups with health_check.dampening)");
  for (const Row& r : rows)
    if (damp(r))
      o << "gwlb_server_flap_penalty{" << r.labels << "} "
        << engine.shaper().dampener().penalty(r.ip, dampeningParams(r.g->health_check.dampening), now) << '\n';
  family(o, "gwlb_server_dampenings_total", "counter",
         "hold-downs of the appliance by flap dampening (state dampened while held)");
  for (const Row& r : rows)
    if (damp(r)) {
      const FlapDampener::Record* rec = engine.shaper().dampener().find(r.ip);
      o << "gwlb_server_dampenings_total{" << r.labels << "} " << (rec ? rec->holds : 0) << '\n';
    }
  family(o, "gwlb_server_slow_start_share", "gauge",
         "part of its weight the appliance has in the Maglev table: below 1 during slow start");
  for (const Row& r : rows)
    if (r.g->slow_start_s > 0) {
      auto it = engine.shaping().ramp.find(r.ip);
      o << "gwlb_server_slow_start_share{" << r.labels << "} "
        << (it == engine.shaping().ramp.end() ? 1.0 : double(it->second) / slowStartSteps(r.g->slow_start_s))
        << '\n';
    }
}

}  // namespace gwlb::ctl
