// What the control thread keeps per appliance beside the engine: its traffic
// (the workers' counters summed, from zero for each new holder of a server
// id), its status with the reason and since when, set on every snapshot, and
// the one state the API, /metrics and telemetry show for it (state()); with
// its health, passive detection, dampening and slow start as the API shows
// them (control/service/appliance_view.h).
#include "control/service/appliance_view.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "control/service/handlers.h"

namespace gwlb::ctl {

using nlohmann::json;

void ApplianceView::idsFreed(const std::vector<uint16_t>& freed) {
  if (traffic_base_.size() < dp::kMaxApplianceIds) traffic_base_.resize(dp::kMaxApplianceIds);
  for (uint16_t id : freed) traffic_base_[id] = workers_.appliance(id);
  spdlog::debug("server ids: {} reclaimed ({} held, {} free)", freed.size(), engine_.registry().held(),
                engine_.registry().available());
}

ApplianceTraffic ApplianceView::traffic(uint16_t id) const {
  if (id >= dp::kMaxApplianceIds) return {};
  ApplianceTraffic t = workers_.appliance(id);
  if (id < traffic_base_.size()) {
    const ApplianceTraffic& b = traffic_base_[id];
    t.sent_packets -= b.sent_packets, t.sent_bytes -= b.sent_bytes;
    t.returned_packets -= b.returned_packets, t.returned_bytes -= b.returned_bytes;
    t.bypassed_packets -= b.bypassed_packets, t.bypassed_bytes -= b.bypassed_bytes;
  }
  return t;
}

void ApplianceView::update(const dp::Snapshot& s, double now) {
  std::map<uint32_t, Status> next;
  for (const auto& sv : s.appliances) {
    if (!sv.in_use) continue;
    Status st;
    const HealthTracker* ht = health_.tracker(sv.ip);
    if (sv.weight == 0) {
      st = {"idle", "weight 0: keeps its flows, receives no new ones", now};
    } else if (ht && ht->state() == HealthState::kUnhealthy && ht->ejected()) {
      std::string why;
      for (auto it = ht->history().rbegin(); it != ht->history().rend(); ++it)
        if (it->is_transition) {
          why = it->reason;
          break;
        }
      const uint64_t out_ms = ht->ejectedUntilMs() - std::min(ht->ejectedUntilMs(), ht->lastChangeMs());
      char out[64] = "";
      if (out_ms) std::snprintf(out, sizeof out, " and %.1f s have passed", double(out_ms) / 1000.0);
      st = {"unhealthy", why + " (passive detection): no new flows until it passes " +
                             std::to_string(ht->params().healthy_threshold) + " checks in a row" + out,
            now};
    } else if (ht && ht->state() == HealthState::kUnhealthy) {
      std::string last;
      for (auto it = ht->history().rbegin(); it != ht->history().rend(); ++it)
        if (!it->is_transition) {
          last = it->reason;
          break;
        }
      st = {"unhealthy", "failed health checks (last: " + last + "): no new flows" +
                             (engine_.shaping().settling.count(sv.ip)
                                  ? "; its flows stay while its group settles after every appliance failed"
                                  : ""),
            now};
    } else if (ht && ht->state() == HealthState::kInitializing) {
      st = {"initializing", ht->provisional()
                                ? "health checks started, no verdict yet: serves new flows until "
                                  "its first failed check (group starting)"
                                : "health checks started, no verdict yet: no new flows",
            now};
    } else if (engine_.shaping().held.count(sv.ip)) {
      st = {"dampened", dampenedReason(sv.ip), now};
    } else if (!sv.mac_known) {
      st = {"unresolved", "no MAC address yet: ARP or neighbor discovery pending on the underlay", now};
    } else {
      st = {"active", "in the Maglev table", now};
    }
    auto it = status_.find(sv.ip);
    if (it != status_.end() && it->second.state == st.state) st.since = it->second.since;
    else if (it != status_.end())
      spdlog::info("appliance {}: {} -> {} ({})", applianceAddress(sv).str(), it->second.state,
                   st.state, st.reason);
    next[sv.ip] = st;
  }
  status_ = std::move(next);
}

const HealthTracker* HealthView::checkedTracker(uint32_t ip) const {
  const HealthTracker* ht = tracker(ip);
  return ht && ht->state() != HealthState::kDisabled ? ht : nullptr;
}

const ApplianceView::Status* ApplianceView::status(uint32_t ip) const {
  auto it = status_.find(ip);
  return it == status_.end() ? nullptr : &it->second;
}

std::string ApplianceView::state(uint32_t ip) const {
  const ApplianceLifecycle::Entry* le = engine_.lifecycle().find(ip);
  if (le && le->phase == dp::AppliancePhase::kDraining) return "draining";
  if (le && le->phase == dp::AppliancePhase::kDrained) return le->removed ? "removed" : "drained";
  auto it = status_.find(ip);
  // Not in a published snapshot yet: it has no verdict either.
  return it == status_.end() ? "initializing" : it->second.state;
}

std::vector<ApplianceView::Row> ApplianceView::rows() const {
  std::vector<Row> rows;
  for (const auto& g : engine_.config().server_groups)
    for (const auto& sc : g.appliances) {
      uint32_t ip = applianceKey(sc.address);
      rows.push_back({g.name, sc.address.str(), state(ip), ip, engine_.registry().find(ip)});
    }
  for (const auto& [ip, le] : engine_.lifecycle().entries()) {
    if (!le.removed) continue;
    rows.push_back({le.group, le.appliance.address.str(),
                    le.phase == dp::AppliancePhase::kDraining ? "draining" : "removed", ip,
                    engine_.registry().find(ip)});
  }
  return rows;
}

namespace {

const ApplianceGroupConfig* groupOf(const Config& c, uint32_t ip) {
  for (const auto& g : c.server_groups)
    for (const auto& sc : g.appliances)
      if (applianceKey(sc.address) == ip) return &g;
  return nullptr;
}

}  // namespace

json ApplianceView::serviceJson(uint32_t ip) const {
  json out = json::object();
  const ApplianceGroupConfig* g = groupOf(engine_.config(), ip);
  if (!g) return out;
  const uint64_t now = dp::monotonicNs();
  const HealthCheckConfig& h = g->health_check;
  if (h.active() && h.passive.enabled) {
    const HealthTracker* t = health_.tracker(ip);
    const auto w = health_.passive.detector().window(ip);
    const PassiveMonitor::Status st = health_.passive.status(ip);
    out["passive"] = {{"ejected", t && t->ejected()},
                      {"capped", st.capped},
                      {"ejections", st.ejections},
                      {"ejections_in_a_row", health_.passive.detector().ejectionsInARow(ip)},
                      {"out_for_s", t && t->ejected() && t->ejectedUntilMs() > health_.checker->now()
                                        ? json(double(t->ejectedUntilMs() - health_.checker->now()) / 1000.0)
                                        : json(nullptr)},
                      {"window_sent", w ? json(w->sent) : json(nullptr)},
                      {"window_returned", w ? json(w->returned) : json(nullptr)},
                      {"window_s", w ? json(double(w->span_ms) / 1000.0) : json(nullptr)}};
  }
  if (h.forwardingActive() && health_.checker)
    if (const HealthChecker::ForwardingCounts* f = health_.checker->forwardingCounts(ip))
      out["forwarding"] = {{"sent", f->sent}, {"unsent", f->unsent}, {"returned", f->returned},
                           {"timed_out", f->timed_out}};
  if (h.active() && h.protocol != HealthProtocol::kTcp && health_.checker)
    if (const HealthChecker::ConnectionCounts* k = health_.checker->connectionCounts(ip))
      out["connections"] = {{"answered_on_kept", k->kept}, {"tls_full_handshakes", k->tls_full},
                            {"tls_resumed_handshakes", k->tls_resumed}};
  if (h.active() && h.dampening.enabled) {
    const DampeningParams p = dampeningParams(h.dampening);
    const FlapDampener::Record* r = engine_.shaper().dampener().find(ip);
    const bool held = engine_.shaping().held.count(ip) > 0;
    out["dampening"] = {
        {"held", held},
        {"penalty", engine_.shaper().dampener().penalty(ip, p, now)},
        {"changes", r ? r->changes : 0},
        {"holds", r ? r->holds : 0},
        {"held_for_s", held && r && r->held_until > now ? json(double(r->held_until - now) / 1e9)
                                                          : json(nullptr)}};
  }
  if (engine_.shaping().settling.count(ip)) {
    const auto until = engine_.shaper().settlingUntil(g->name);
    out["settling"] = {{"keeps_flows_for_s", until && *until > now ? json(double(*until - now) / 1e9) : json(0.0)}};
  }
  if (g->slow_start_s > 0) {
    auto step = engine_.shaping().ramp.find(ip);
    const auto since = engine_.shaper().rampSince(ip);
    const uint32_t n = slowStartSteps(g->slow_start_s);
    out["slow_start"] = {
        {"share", step == engine_.shaping().ramp.end() ? 1.0 : double(step->second) / n},
        {"ramping_for_s", since && now > *since ? json(double(now - *since) / 1e9) : json(nullptr)},
        {"slow_start_s", g->slow_start_s}};
  }
  return out;
}

std::string ApplianceView::dampenedReason(uint32_t ip) const {
  const FlapDampener::Record* r = engine_.shaper().dampener().find(ip);
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

json ApplianceView::healthJson(uint32_t ip) const {
  const HealthTracker* t = health_.tracker(ip);
  if (!t) {
    json d = {{"state", "disabled"}};
    d.update(serviceJson(ip));
    return d;
  }
  const HealthParams& p = t->params();
  double since = health_.checker->unixTime(t->lastChangeMs());
  std::string last;  // the last probe result's reason; "" before the first
  bool have_last = false;
  uint64_t ok_response_ms = 0;  // the last passed check's response time
  bool have_ok = false;
  for (auto it = t->history().rbegin(); it != t->history().rend(); ++it) {
    if (it->is_transition) continue;
    if (!have_last) last = it->reason, have_last = true;
    if (it->ok && !have_ok) ok_response_ms = it->response_ms, have_ok = true;
    if (have_last && have_ok) break;
  }
  // Windows count from the first failed / passed check; the success window
  // uses the last passed check's response time (0 before any).
  json out = {{"state", toString(t->state())},
          {"provisional", t->provisional()},
          {"consecutive", t->consecutive()},
          {"last_ok", t->lastOk()},
          {"last_result", last},
          {"since", since},
          {"failure_window_s", double(failureWindowMs(p)) / 1000.0},
          {"success_window_s", double(successWindowMs(p, ok_response_ms)) / 1000.0}};
  out.update(serviceJson(ip));
  return out;
}

}  // namespace gwlb::ctl
