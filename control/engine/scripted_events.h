// Scripted control events: appliance changes at given times, as gwlb-replay's
// --events file gives them (docs/replay.md) and as tests script them. Each
// event goes through the control core (control/engine/engine.h) the way gwlbd's
// control API and health checker drive it: server add/remove/weight as config
// changes, drain/undrain through the lifecycle, health as the health input,
// and a reload with another config file as gwlbd's SIGHUP (e.g. new traffic
// classes mid-capture: established flows keep their listener, docs/replay.md).
//
// EventSchedule is gwlb-replay's driver of the engine: before a packet at time
// t it runs, in time order, every event and every engine action (drain
// deadline, failback hold end, housekeeping) due by t.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/net_types.h"
#include "control/config/config.h"

namespace gwlb::ctl {

class Engine;

constexpr uint64_t kNsPerS = 1'000'000'000ULL;

struct ScriptedEvent {
  enum class Action : uint8_t { kHealth, kRemove, kAdd, kWeight, kDrain, kUndrain, kReload };
  size_t index = 0;
  int line = 0;                        // in the events file (1-based)
  uint64_t at_ns = 0;                  // after the origin (the capture's first timestamp)
  IpAddr appliance;                       // every action but kReload
  Action action = Action::kHealth;
  bool unhealthy = false;              // kHealth
  std::string group;                   // kAdd
  std::optional<uint32_t> weight;      // kAdd (optional), kWeight
  std::optional<uint32_t> timeout_s;   // kDrain (optional)
  // kDrain, kRemove, kWeight, kReload: do it even when it leaves a server
  // group with no appliance in service (gwlbctl --force); else it is refused.
  bool force = false;
  // kReload: the config file read and applied at `at` (a relative path
  // counts from the events file's directory).
  std::string file;
  // Filled in by the run: applied, or refused as gwlbd would refuse it
  // (`refused` says why; nothing changed).
  bool applied = false;
  std::string refused;
  std::vector<std::string> warnings;   // forced: what it left without service
  std::vector<RuntimeChange> reverted;  // kReload: the runtime changes it reverted
  std::vector<std::string> restart_needed;  // kReload: changed, applied at gwlbd's next restart
  nlohmann::json result = nlohmann::json::object();
};

const char* actionName(const ScriptedEvent& e);
// "1.5 s": ns as seconds, for messages.
std::string secondsText(uint64_t ns);
// "2.5s", "1500ms", "2" or "0.25" (seconds) into ns: digits, an optional
// fraction (down to 1 ns), an optional unit. False when malformed or past 10^7 s.
bool parseDurationNs(std::string t, uint64_t& ns);

// Every problem in an events file: the text names the event, its key and line.
struct EventError {
  std::string text;
};

// Parses an events file (a YAML list). Throws EventError.
std::vector<ScriptedEvent> parseEventsFile(const std::string& path);
// Same, from text (`name` stands for the file in messages).
std::vector<ScriptedEvent> parseEvents(const std::string& yaml_text, const std::string& name);

// What one event did.
struct EventOutcome {
  // "KEY: what is wrong": the event cannot apply at its point (the events
  // file is wrong); nothing changed.
  std::string error;
  // gwlbd would refuse the change (it leaves a server group with no appliance
  // in service and is not forced): its refusal, as gwlbd words it; nothing
  // changed.
  std::string refused;
  // A forced change that leaves a group without service: "forced: ...".
  std::vector<std::string> warnings;
  // A reload: the runtime changes (earlier remove, add and weight events)
  // that the reloaded file does not carry and the reload therefore reverted,
  // as gwlbd's reload reverts and lists them, and the settings it changes
  // that wait for a restart (kept at their running value).
  std::vector<RuntimeChange> reverted;
  std::vector<std::string> restart_needed;
};

// Applies one event at now_ns through the engine's guarded changes, as
// gwlbd's control API and SIGHUP ask them (Engine::applyConfig, drain,
// undrain; a reload as Engine::applyReload of planReload's plan, which
// reverts what the events changed since the last file, Engine::fileConfig).
EventOutcome applyEvent(const ScriptedEvent& e, Engine& engine, uint64_t now_ns);

// Throws EventError "events[i].KEY (line N): ..." for the first event that
// would fail when the events run against `engine` (a scratch engine: this
// applies them all). A refused event is no error: the run reports it.
void checkEvents(const std::vector<ScriptedEvent>& events, Engine& scratch);

// Drives an engine through scripted events on an external clock.
class EventSchedule {
 public:
  // Event times count from origin_ns.
  EventSchedule(Engine& engine, std::vector<ScriptedEvent>& events, uint64_t origin_ns);
  // Earliest time something is due: the next event or the engine's nextDue().
  uint64_t nextDue() const;
  // Runs, in time order, every engine action and event due at or before t.
  // An engine action due at the same time as an event goes first. `before`
  // and `after` are called around each event (with its time), a refused
  // one included. Each event's `applied`, `refused` and `result` (warnings,
  // reverted) are filled in.
  void runUntil(uint64_t t, const std::function<void(ScriptedEvent&, uint64_t)>& before = {},
                const std::function<void(ScriptedEvent&, uint64_t)>& after = {});
  size_t applied() const { return next_; }
  uint64_t timeOf(const ScriptedEvent& e) const { return origin_ + e.at_ns; }

 private:
  Engine& engine_;
  std::vector<ScriptedEvent>& events_;
  uint64_t origin_;
  size_t next_ = 0;
};

}  // namespace gwlb::ctl
