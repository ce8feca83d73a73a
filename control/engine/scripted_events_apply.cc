#include <algorithm>
#include <stdexcept>

#include "control/engine/api_failure.h"
#include "control/engine/engine.h"
#include "control/engine/scripted_events.h"
#include "control/engine/service_guard.h"

namespace gwlb::ctl {

namespace {

// gwlbd's guard: a change that leaves a group with no appliance in service is
// refused unless forced (then it is done, with a warning).
bool guarded(const std::vector<ServiceLoss>& losses, bool force, const std::string& what,
             EventOutcome& out) {
  if (losses.empty()) return true;
  if (!force) {
    out.refused = refusalText(what, losses) +
                  ". Nothing changed (gwlbd refuses it too; add force: true to the event to do it "
                  "anyway, as gwlbctl --force)";
    return false;
  }
  out.warnings.push_back("forced: " + describeLosses(losses, true));
  return true;
}

}  // namespace

EventOutcome applyEvent(const ScriptedEvent& e, Engine& engine, Config& file, uint64_t now_ns) {
  using Action = ScriptedEvent::Action;
  EventOutcome out;
  const Config& cfg = engine.config();
  const uint32_t ip = applianceKey(e.server);
  const std::string addr = e.server.str();
  const ServerGroupConfig* in_group = nullptr;
  for (auto& gc : cfg.server_groups)
    for (size_t s = 0; s < gc.servers.size(); ++s)
      if (gc.servers[s].address == e.server) in_group = &gc;
  auto notConfigured = [&]() {
    std::string list;
    for (auto& gc : cfg.server_groups)
      for (auto& s : gc.servers) list += (list.empty() ? "" : ", ") + s.address.str();
    out.error = "server: " + addr + " is not a configured appliance at this point (configured: " +
                list + ")";
    return out;
  };
  // gwlbd's guard on a config change (server.remove, server.set, reload).
  auto judge = [&](const Config& next, const std::string& what, const char* why) {
    return guarded(configChangeLosses(cfg, engine.lifecycle(), engine.health(), next, now_ns, why),
                   e.force, what, out);
  };
  // A config change goes through the engine as gwlbd's control API's do;
  // false (out.error set) when it did not apply.
  auto apply = [&](Config next, const char* key, const char* why) {
    try {
      engine.applyConfig(std::move(next), why, now_ns);
    } catch (const ApiFailure& f) {
      std::string t = f.what();
      if (f.code == "invalid_config") {
        std::vector<ConfigError> errors;
        for (const auto& d : f.details)
          errors.push_back({d["path"].get<std::string>(), d["message"].get<std::string>()});
        t = formatErrors(errors);
        if (!t.empty() && t.back() == '\n') t.pop_back();
        out.error = std::string(key) + ": the config would become invalid: " + t;
      } else {
        out.error = std::string(key) + ": " + t;
      }
      out.warnings.clear();
      return false;
    }
    return true;
  };
  switch (e.action) {
    case Action::kReload: {
      // As gwlbd's reload: the file replaces the config; a bad file changes nothing.
      Config next;
      std::vector<ConfigError> errors;
      if (!loadConfigFile(e.file, next, errors)) {
        std::string t = formatErrors(errors);
        if (!t.empty() && t.back() == '\n') t.pop_back();
        out.error = "reload: " + e.file + " is not a valid config: " + t;
        return out;
      }
      // The file is the source of truth: what the events changed at runtime
      // and the file does not carry is reverted (and listed).
      std::vector<RuntimeChange> reverted = revertedByReload(file, cfg, next);
      Config as_file = next;
      // Keys that need a restart keep their running values, as gwlbd's reload does.
      holdRestartKeys(cfg, next);
      if (!judge(next, "reload of " + e.file, "removed by reload")) return out;
      if (apply(std::move(next), "reload", "removed by reload")) {
        file = std::move(as_file);
        out.reverted = std::move(reverted);
      }
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
        gc.servers.erase(std::remove_if(gc.servers.begin(), gc.servers.end(),
                                        [&](const ServerConfig& s) { return s.address == e.server; }),
                         gc.servers.end());
      // Judged with the health before the change, as gwlbd does.
      if (!judge(next, "server.remove " + addr, "removed by event")) return out;
      // Like gwlbd: a removed appliance is no longer checked.
      HealthMap before = engine.health();
      engine.forgetHealth(ip);
      if (!apply(std::move(next), "remove", "removed by event") && before.count(ip))
        engine.setHealth(ip, before[ip]);
      return out;
    }
    case Action::kAdd: {
      if (in_group) {
        out.error = "add: " + addr + " is already an appliance of group '" + in_group->name + "'";
        return out;
      }
      Config next = cfg;
      ServerGroupConfig* g = nullptr;
      std::string names;
      for (auto& gc : next.server_groups) {
        names += (names.empty() ? "'" : ", '") + gc.name + "'";
        if (gc.name == e.group) g = &gc;
      }
      if (!g) {
        out.error = "add: no server group '" + e.group + "' (groups: " + names + ")";
        return out;
      }
      ServerConfig sc;
      sc.address = e.server;
      if (e.weight) sc.weight = *e.weight;
      g->servers.push_back(sc);
      apply(std::move(next), "add", "removed by event");  // gwlbd's server.add is not guarded
      return out;
    }
    case Action::kWeight: {
      if (!in_group) return notConfigured();
      Config next = cfg;
      for (auto& gc : next.server_groups)
        for (auto& s : gc.servers)
          if (s.address == e.server) s.weight = *e.weight;
      if (!judge(next, "server.set " + addr + " weight " + std::to_string(*e.weight), "removed by event"))
        return out;
      apply(std::move(next), "weight", "removed by event");
      return out;
    }
    case Action::kDrain: {
      if (!in_group) return notConfigured();
      // The engine's guarded drain, as gwlbd's server.drain asks it.
      ChangeOutcome o = engine.drain(ip, e.timeout_s, now_ns, e.force);
      if (o.refused && o.refused->kind == Refusal::Kind::kWouldLeaveNoService)
        guarded(o.refused->losses, false, "server.drain " + addr, out);
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
  Config file = scratch.config();
  for (const ScriptedEvent& e : events) {
    std::string err = applyEvent(e, scratch, file, e.at_ns).error;
    if (err.empty()) continue;  // applied, or refused (the run reports it)
    size_t colon = err.find(": ");  // "KEY: text" -> "events[i].KEY (line N): text"
    throw EventError{"events[" + std::to_string(e.index) + "]." + err.substr(0, colon) + " (line " +
                     std::to_string(e.line) + ")" + err.substr(colon)};
  }
}

EventSchedule::EventSchedule(Engine& engine, std::vector<ScriptedEvent>& events, uint64_t origin_ns)
    : engine_(engine), events_(events), origin_(origin_ns), file_(engine.config()) {}

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
    EventOutcome done = applyEvent(e, engine_, file_, at);
    if (!done.error.empty())  // checkEvents ran the same changes: cannot happen
      throw std::runtime_error("events[" + std::to_string(e.index) + "]." + done.error);
    e.applied = done.refused.empty();
    e.refused = done.refused;
    e.warnings = std::move(done.warnings);
    e.reverted = std::move(done.reverted);
    ++next_;
    if (after) after(e, at);
  }
  engine_.advance(t);
}

}  // namespace gwlb::ctl
