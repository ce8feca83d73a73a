// Passive detection, flap dampening and slow start as gwlbd shows them: the
// passive monitor's turn (its counters are the workers' per-appliance ones),
// each appliance's `passive`, `dampening` and `slow_start` in the API's
// health objects, and their /metrics families. Control thread.
#include <spdlog/spdlog.h>

#include <cstdio>

#include "control/daemon/daemon.h"

namespace gwlb::ctl {

using nlohmann::json;

namespace {
const ServerGroupConfig* groupOf(const Config& c, uint32_t ip) {
  for (const auto& g : c.server_groups)
    for (const auto& sc : g.servers)
      if (applianceKey(sc.address) == ip) return &g;
  return nullptr;
}
void family(std::ostringstream& o, const char* name, const char* type, const char* help) {
  o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}
}  // namespace

void Daemon::passiveTick() {
  if (!health_) return;
  passive_.tick(cfg(), *health_, dp::monotonicNs() / 1'000'000, [this](uint32_t ip) {
    const ServerTraffic t = trafficOf(registry().find(ip));
    return PassiveDetector::Sample{0, t.sent_packets, t.returned_packets};
  });
}

json Daemon::serviceJson(uint32_t ip) const {
  json out = json::object();
  const ServerGroupConfig* g = groupOf(cfg(), ip);
  if (!g) return out;
  const uint64_t now = dp::monotonicNs();
  const HealthCheckConfig& h = g->health_check;
  if (h.active() && h.passive.enabled) {
    const HealthTracker* t = health_ ? health_->tracker(ip) : nullptr;
    const auto w = passive_.detector().window(ip);
    const PassiveMonitor::Status st = passive_.status(ip);
    out["passive"] = {{"ejected", t && t->ejected()},
                      {"capped", st.capped},
                      {"ejections", st.ejections},
                      {"ejections_in_a_row", passive_.detector().ejectionsInARow(ip)},
                      {"out_for_s", t && t->ejected() && t->ejectedUntilMs() > health_->now()
                                        ? json(double(t->ejectedUntilMs() - health_->now()) / 1000.0)
                                        : json(nullptr)},
                      {"window_sent", w ? json(w->sent) : json(nullptr)},
                      {"window_returned", w ? json(w->returned) : json(nullptr)},
                      {"window_s", w ? json(double(w->span_ms) / 1000.0) : json(nullptr)}};
  }
  if (h.forwardingActive() && health_)
    if (const HealthChecker::ForwardingCounts* f = health_->forwardingCounts(ip))
      out["forwarding"] = {{"sent", f->sent}, {"unsent", f->unsent}, {"returned", f->returned},
                           {"timed_out", f->timed_out}};
  if (h.active() && h.dampening.enabled) {
    const DampeningParams p = dampeningParams(h.dampening);
    const FlapDampener::Record* r = engine_->shaper().dampener().find(ip);
    const bool held = engine_->shaping().held.count(ip) > 0;
    out["dampening"] = {
        {"held", held},
        {"penalty", engine_->shaper().dampener().penalty(ip, p, now)},
        {"changes", r ? r->changes : 0},
        {"holds", r ? r->holds : 0},
        {"held_for_s", held && r && r->held_until > now ? json(double(r->held_until - now) / 1e9)
                                                          : json(nullptr)}};
  }
  if (g->slow_start_s > 0) {
    auto step = engine_->shaping().ramp.find(ip);
    const auto since = engine_->shaper().rampSince(ip);
    const uint32_t n = slowStartSteps(g->slow_start_s);
    out["slow_start"] = {
        {"share", step == engine_->shaping().ramp.end() ? 1.0 : double(step->second) / n},
        {"ramping_for_s", since && now > *since ? json(double(now - *since) / 1e9) : json(nullptr)},
        {"slow_start_s", g->slow_start_s}};
  }
  return out;
}

std::string Daemon::dampenedReason(uint32_t ip) const {
  const FlapDampener::Record* r = engine_->shaper().dampener().find(ip);
  const uint64_t now = dp::monotonicNs();
  if (!r) return "held down (flap dampening): no new flows";
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "held down (flap dampening): %llu state changes, penalty %.0f; back in %.0f s unless "
                "it changes again; no new flows, its flows stay",
                (unsigned long long)r->changes, r->penalty,
                r->held_until > now ? double(r->held_until - now) / 1e9 : 0.0);
  return buf;
}

void Daemon::serviceMetrics(std::ostringstream& o) const {
  struct Row {
    std::string labels;
    uint32_t ip;
    const ServerGroupConfig* g;
  };
  std::vector<Row> rows;
  for (const auto& g : cfg().server_groups)
    for (const auto& sc : g.servers) {
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
    if (passive(r)) o << "gwlb_server_no_returns_ejections_total{" << r.labels << "} " << passive_.status(r.ip).ejections << '\n';
  family(o, "gwlb_server_no_returns_capped", "gauge",
         "1 while the appliance returns nothing but stays in service: its group has "
         "max_ejection_percent of its appliances ejected already");
  for (const Row& r : rows)
    if (passive(r)) o << "gwlb_server_no_returns_capped{" << r.labels << "} " << (passive_.status(r.ip).capped ? 1 : 0) << '\n';
  family(o, "gwlb_server_forwarding_probes_total", "counter",
         "forwarding-check probes sent to the appliance by what became of them: sent, unsent, "
         "returned, timed_out (groups with health_check.forwarding)");
  for (const Row& r : rows)
    if (r.g->health_check.forwardingActive() && health_)
      if (const HealthChecker::ForwardingCounts* f = health_->forwardingCounts(r.ip))
        for (auto [k, v] : {std::pair<const char*, uint64_t>{"sent", f->sent}, {"unsent", f->unsent},
                            {"returned", f->returned}, {"timed_out", f->timed_out}})
          o << "gwlb_server_forwarding_probes_total{" << r.labels << ",result=\"" << k << "\"} " << v << '\n';
  family(o, "gwlb_server_flap_penalty", "gauge",
         "flap dampening penalty of the appliance now (groups with health_check.dampening)");
  for (const Row& r : rows)
    if (damp(r))
      o << "gwlb_server_flap_penalty{" << r.labels << "} "
        << engine_->shaper().dampener().penalty(r.ip, dampeningParams(r.g->health_check.dampening), now) << '\n';
  family(o, "gwlb_server_dampenings_total", "counter",
         "hold-downs of the appliance by flap dampening (state dampened while held)");
  for (const Row& r : rows)
    if (damp(r)) {
      const FlapDampener::Record* rec = engine_->shaper().dampener().find(r.ip);
      o << "gwlb_server_dampenings_total{" << r.labels << "} " << (rec ? rec->holds : 0) << '\n';
    }
  family(o, "gwlb_server_slow_start_share", "gauge",
         "part of its weight the appliance has in the Maglev table: below 1 during slow start");
  for (const Row& r : rows)
    if (r.g->slow_start_s > 0) {
      auto it = engine_->shaping().ramp.find(r.ip);
      o << "gwlb_server_slow_start_share{" << r.labels << "} "
        << (it == engine_->shaping().ramp.end() ? 1.0 : double(it->second) / slowStartSteps(r.g->slow_start_s))
        << '\n';
    }
}

}  // namespace gwlb::ctl
