#include <algorithm>
#include <stdexcept>

#include "control/engine/api_failure.h"
#include "control/engine/engine.h"
#include "control/engine/scripted_events.h"

namespace gwlb::ctl {

std::string applyEvent(const ScriptedEvent& e, Engine& engine, uint64_t now_ns) {
  using Action = ScriptedEvent::Action;
  const Config& cfg = engine.config();
  const uint32_t ip = e.server.v4HostOrder();
  const std::string addr = e.server.str();
  const ServerGroupConfig* in_group = nullptr;
  for (auto& gc : cfg.server_groups)
    for (size_t s = 0; s < gc.servers.size(); ++s)
      if (gc.servers[s].address == e.server) in_group = &gc;
  auto notConfigured = [&]() {
    std::string list;
    for (auto& gc : cfg.server_groups)
      for (auto& s : gc.servers) list += (list.empty() ? "" : ", ") + s.address.str();
    return "server: " + addr + " is not a configured appliance at this point (configured: " + list +
           ")";
  };
  // A config change goes through the engine as gwlbd's server.add/remove/set do.
  auto change = [&](Config next, const char* key, const char* why) -> std::string {
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
        return std::string(key) + ": the config would become invalid: " + t;
      }
      return std::string(key) + ": " + t;
    }
    return "";
  };
  switch (e.action) {
    case Action::kReload: {
      // As gwlbd's reload: the file replaces the config; a bad file changes nothing.
      Config next;
      std::vector<ConfigError> errors;
      if (!loadConfigFile(e.file, next, errors)) {
        std::string t = formatErrors(errors);
        if (!t.empty() && t.back() == '\n') t.pop_back();
        return "reload: " + e.file + " is not a valid config: " + t;
      }
      // Keys that need a restart keep their running values, as gwlbd's reload does.
      holdRestartKeys(cfg, next);
      return change(std::move(next), "reload", "removed by reload");
    }
    case Action::kHealth:
      if (!in_group) return notConfigured();
      engine.setHealth(ip, e.unhealthy ? HealthState::kUnhealthy : HealthState::kHealthy);
      engine.rebuild("health " + addr, now_ns);
      return "";
    case Action::kRemove: {
      if (!in_group) return notConfigured();
      Config next = cfg;
      for (auto& gc : next.server_groups)
        gc.servers.erase(std::remove_if(gc.servers.begin(), gc.servers.end(),
                                        [&](const ServerConfig& s) { return s.address == e.server; }),
                         gc.servers.end());
      // Like gwlbd: a removed appliance is no longer checked.
      HealthMap before = engine.health();
      engine.forgetHealth(ip);
      std::string err = change(std::move(next), "remove", "removed by event");
      if (!err.empty() && before.count(ip)) engine.setHealth(ip, before[ip]);
      return err;
    }
    case Action::kAdd: {
      if (in_group)
        return "add: " + addr + " is already an appliance of group '" + in_group->name + "'";
      Config next = cfg;
      ServerGroupConfig* g = nullptr;
      std::string names;
      for (auto& gc : next.server_groups) {
        names += (names.empty() ? "'" : ", '") + gc.name + "'";
        if (gc.name == e.group) g = &gc;
      }
      if (!g) return "add: no server group '" + e.group + "' (groups: " + names + ")";
      ServerConfig sc;
      sc.address = e.server;
      if (e.weight) sc.weight = *e.weight;
      g->servers.push_back(sc);
      return change(std::move(next), "add", "removed by event");
    }
    case Action::kWeight: {
      if (!in_group) return notConfigured();
      Config next = cfg;
      for (auto& gc : next.server_groups)
        for (auto& s : gc.servers)
          if (s.address == e.server) s.weight = *e.weight;
      return change(std::move(next), "weight", "removed by event");
    }
    case Action::kDrain: {
      if (!in_group) return notConfigured();
      std::string err = engine.drain(ip, e.timeout_s, now_ns);
      return err.empty() ? "" : "drain: " + addr + ": " + err;
    }
    case Action::kUndrain: {
      if (!in_group) return notConfigured();
      std::string err = engine.undrain(ip, now_ns);
      return err.empty() ? "" : "undrain: " + addr + ": " + err;
    }
  }
  return "";
}

void checkEvents(const std::vector<ScriptedEvent>& events, Engine& scratch) {
  for (const ScriptedEvent& e : events) {
    std::string err = applyEvent(e, scratch, e.at_ns);
    if (err.empty()) continue;
    size_t colon = err.find(": ");  // "KEY: text" -> "events[i].KEY (line N): text"
    throw EventError{"events[" + std::to_string(e.index) + "]." + err.substr(0, colon) + " (line " +
                     std::to_string(e.line) + ")" + err.substr(colon)};
  }
}

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
    std::string why = applyEvent(e, engine_, at);
    if (!why.empty())  // checkEvents ran the same changes: cannot happen
      throw std::runtime_error("events[" + std::to_string(e.index) + "]." + why);
    e.applied = true;
    ++next_;
    if (after) after(e, at);
  }
  engine_.advance(t);
}

}  // namespace gwlb::ctl
