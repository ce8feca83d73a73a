#include <algorithm>
#include <stdexcept>

#include "control/engine/engine.h"
#include "control/engine/scripted_events.h"
#include "control/engine/reload_plan.h"
#include "control/engine/service_guard.h"
#include "common/flow_key.h"

namespace gwlb::ctl {

namespace {

// gwlbd's guard, in replay's words: a change that leaves a group with no
// appliance in service is refused unless forced (then done, with a warning).
std::string refusedText(const std::string& what, const std::vector<ServiceLoss>& losses) {
  return refusalText(what, losses) +
         ". Nothing changed (gwlbd refuses it too; add force: true to the event to do it "
         "anyway, as gwlbctl --force)";
}

std::string errorsText(const std::vector<ConfigError>& errors) {
  std::string t = formatErrors(errors);
  if (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

// A refusal as the event's outcome: the guard's is gwlbd's refusal (the run
// reports it); any other means the events file is wrong at this point.
void render(const Refusal& r, const std::string& key, const std::string& what, EventOutcome& out) {
  out.warnings.clear();
  if (r.kind == Refusal::Kind::kWouldLeaveNoService) out.refused = refusedText(what, r.losses);
  else if (r.kind == Refusal::Kind::kInvalidConfig) out.error = key + ": the config would become invalid: " + errorsText(r.errors);
  else out.error = key + ": " + r.message;
}

}  // namespace

EventOutcome applyEvent(const ScriptedEvent& e, Engine& engine, uint64_t now_ns) {
  using Action = ScriptedEvent::Action;
  EventOutcome out;
  const Config& cfg = engine.config();
  const uint32_t ip = applianceKey(e.appliance);
  const std::string addr = e.appliance.str();
  const ApplianceGroupConfig* in_group = nullptr;
  for (auto& gc : cfg.server_groups)
    for (size_t s = 0; s < gc.appliances.size(); ++s)
      if (gc.appliances[s].address == e.appliance) in_group = &gc;
  auto notConfigured = [&]() {
    std::string list;
    for (auto& gc : cfg.server_groups)
      for (auto& s : gc.appliances) list += (list.empty() ? "" : ", ") + s.address.str();
    out.error = "server: " + addr + " is not a configured appliance at this point (configured: " +
                list + ")";
    return out;
  };
  // A config change through the engine's guard, as gwlbd's control API asks it.
  auto change = [&](Config next, const char* key, const std::string& what, bool force) {
    ChangeOutcome o = engine.applyConfig(std::move(next), "removed by event", now_ns, force);
    if (o.refused) render(*o.refused, key, what, out);
    else out.warnings = std::move(o.warnings);
    return out;
  };
  switch (e.action) {
    case Action::kReload: {
      // As gwlbd's reload: the same plan (read, checked, restart keys held,
      // classes compiled), applied by the same engine call.
      ReloadRequest r;
      r.path = e.file;
      r.running = engine.sharedConfig();
      r.running_key = flowHashKey();
      ReloadPlan plan = planReload(r);
      if (!plan.errors.empty()) {
        out.error = "reload: " + e.file + " is not a valid config: " + errorsText(plan.errors);
        return out;
      }
      ReloadOutcome o = engine.applyReload(std::move(plan), now_ns, e.force);
      if (o.refused) {
        render(*o.refused, "reload", "reload of " + e.file, out);
        return out;
      }
      out.warnings = std::move(o.warnings);
      out.reverted = std::move(o.reverted);
      out.restart_needed = std::move(o.restart_needed);
      return out;
    }
    case Action::kHealth:
      if (!in_group) return notConfigured();
      engine.setHealth(ip, e.unhealthy ? HealthState::kUnhealthy : HealthState::kHealthy);
      engine.rebuild("health " + addr, now_ns);
      return out;
    case Action::kRemove: {
      if (!in_group) return notConfigured();
      Config next = cfg;
      for (auto& gc : next.server_groups)
        gc.appliances.erase(std::remove_if(gc.appliances.begin(), gc.appliances.end(),
                                        [&](const ApplianceConfig& s) { return s.address == e.appliance; }),
                         gc.appliances.end());
      // Judged with the health before the change; the engine then forgets
      // the removed appliance's health, as gwlbd's checker does.
      return change(std::move(next), "remove", "server.remove " + addr, e.force);
    }
    case Action::kAdd: {
      if (in_group) {
        out.error = "add: " + addr + " is already an appliance of group '" + in_group->name + "'";
        return out;
      }
      Config next = cfg;
      ApplianceGroupConfig* g = nullptr;
      std::string names;
      for (auto& gc : next.server_groups) {
        names += (names.empty() ? "'" : ", '") + gc.name + "'";
        if (gc.name == e.group) g = &gc;
      }
      if (!g) {
        out.error = "add: no server group '" + e.group + "' (groups: " + names + ")";
        return out;
      }
      ApplianceConfig sc;
      sc.address = e.appliance;
      if (e.weight) sc.weight = *e.weight;
      g->appliances.push_back(sc);
      return change(std::move(next), "add", "server.add " + addr, true);  // gwlbd's server.add is not guarded
    }
    case Action::kWeight: {
      if (!in_group) return notConfigured();
      Config next = cfg;
      for (auto& gc : next.server_groups)
        for (auto& s : gc.appliances)
          if (s.address == e.appliance) s.weight = *e.weight;
      return change(std::move(next), "weight", "server.set " + addr + " weight " + std::to_string(*e.weight),
                    e.force);
    }
    case Action::kDrain: {
      if (!in_group) return notConfigured();
      // The engine's guarded drain, as gwlbd's server.drain asks it.
      ChangeOutcome o = engine.drain(ip, e.timeout_s, now_ns, e.force);
      if (o.refused && o.refused->kind == Refusal::Kind::kWouldLeaveNoService)
        out.refused = refusedText("server.drain " + addr, o.refused->losses);
      else if (o.refused)
        out.error = "drain: " + addr + ": " + o.refused->message;
      else
        out.warnings = std::move(o.warnings);
      return out;
    }
    case Action::kUndrain: {
      if (!in_group) return notConfigured();
      std::string err = engine.undrain(ip, now_ns);
      if (!err.empty()) out.error = "undrain: " + addr + ": " + err;
      return out;
    }
  }
  return out;
}

void checkEvents(const std::vector<ScriptedEvent>& events, Engine& scratch) {
  for (const ScriptedEvent& e : events) {
    std::string err = applyEvent(e, scratch, e.at_ns).error;
    if (err.empty()) continue;  // applied, or refused (the run reports it)
    size_t colon = err.find(": ");  // "KEY: text" -> "events[i].KEY (line N): text"
    throw EventError{"events[" + std::to_string(e.index) + "]." + err.substr(0, colon) + " (line " +
                     std::to_string(e.line) + ")" + err.substr(colon)};
  }
}

EventSchedule::EventSchedule(Engine& engine, std::vector<ScriptedEvent>& events, uint64_t origin_ns)
    : engine_(engine), events_(events), origin_(origin_ns) {}

uint64_t EventSchedule::nextDue() const {
  uint64_t t = engine_.nextDue();
  if (next_ < events_.size()) t = std::min(t, timeOf(events_[next_]));
  return t;
}

void EventSchedule::runUntil(uint64_t t, const std::function<void(ScriptedEvent&, uint64_t)>& before,
                             const std::function<void(ScriptedEvent&, uint64_t)>& after) {
  while (next_ < events_.size() && timeOf(events_[next_]) <= t) {
    ScriptedEvent& e = events_[next_];
    const uint64_t at = timeOf(e);
    engine_.advance(at);
    if (before) before(e, at);
    EventOutcome done = applyEvent(e, engine_, at);
    if (!done.error.empty())  // checkEvents ran the same changes: cannot happen
      throw std::runtime_error("events[" + std::to_string(e.index) + "]." + done.error);
    e.applied = done.refused.empty();
    e.refused = done.refused;
    e.warnings = std::move(done.warnings);
    e.reverted = std::move(done.reverted);
    e.restart_needed = std::move(done.restart_needed);
    ++next_;
    if (after) after(e, at);
  }
  engine_.advance(t);
}

}  // namespace gwlb::ctl
