// What a change to the control core comes back with: refused (nothing
// changed, and why, as facts rather than words for one audience), or done,
// with its warnings. Engine-neutral: the control API renders a refusal as its
// error reply (control/service/handlers.h throwRefusal), gwlb-replay as the
// event's outcome, each with its own words for what was asked. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/config/config.h"
#include "control/engine/service_guard.h"

namespace gwlb::ctl {

// A change the engine refused: nothing changed.
struct Refusal {
  enum class Kind : uint8_t {
    kNotFound,             // no such appliance in the config
    kConflict,             // the lifecycle says no (already draining, removed, ...): `message`
    kWouldLeaveNoService,  // the service guard: `losses` (not forced)
    kInvalidConfig,        // the config (a file, an edit) or what it needs (a probe path): `errors`
    kLimitReached,         // more new appliance addresses than free server ids: `ids`
    kInternal,             // a bug: `message`
  };
  Kind kind = Kind::kConflict;
  std::string message;
  std::vector<ServiceLoss> losses;
  std::vector<ConfigError> errors;
  // kLimitReached: what the server ids are taken by.
  struct ApplianceIds {
    size_t needed = 0, free = 0, limit = 0, configured = 0, removed_with_flows = 0, releasing = 0;
  } ids;
};
// "not_found", "conflict", "would_leave_no_service", "invalid_config",
// "limit_reached", "internal": the control API's error codes.
const char* toString(Refusal::Kind k);
// kInvalidConfig with `errors`: "invalid configuration (N errors; see details)".
Refusal invalidConfig(std::vector<ConfigError> errors);

// What a guarded change did: refused (nothing changed), or done, with the
// warnings a forced change carries ("forced: ..." naming the groups left
// without service) and the snapshot generation in force after it.
struct ChangeOutcome {
  std::optional<Refusal> refused;
  std::vector<std::string> warnings;
  uint64_t generation = 0;
};

// What a reload did (Engine::applyReload): refused (the running config kept),
// or the file's config in force.
struct ReloadOutcome {
  std::optional<Refusal> refused;
  uint64_t generation = 0;
  std::vector<std::string> restart_needed;  // changed in the file, applied at the next restart
  std::vector<RuntimeChange> reverted;      // runtime changes the file does not carry: undone
  std::vector<RuntimeChange> changes;       // appliances added, removed or re-weighted
  std::vector<std::string> warnings;        // forced losses, then the file's ("path: message")
};

}  // namespace gwlb::ctl
