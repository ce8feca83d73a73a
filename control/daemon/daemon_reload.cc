// gwlbd's ends of a reload (docs/architecture.md "Reloads"): SIGHUP asks the
// Reloader (control/service/reloader.h), which plans apart and has the
// engine decide (Engine::applyReload); a refusal the Reloader has not logged
// is logged here. And the engine's can_follow input: a config change whose
// probed appliances would have no probe path is refused (daemon_probes.cc).
// Control thread.
#include <spdlog/spdlog.h>

#include "control/daemon/daemon.h"
#include "control/service/handlers.h"

namespace gwlb::ctl {

void Daemon::sighupReload() {
  // SIGHUP never forces: a file that leaves a group without service is
  // refused here too (the log says so).
  reloader_->request(false, "SIGHUP", [this](const ReloadOutcome& o) {
    // The Reloader logged the outcome (one line, and what changed) and an
    // invalid file's errors; the probe paths' check logged its own.
    if (o.refused && o.refused->kind != Refusal::Kind::kInvalidConfig) {
      const std::string path = cfg().source_path;
      spdlog::error("reload of {} refused; keeping the running config: {}", path,
                    refusalFailure(*o.refused, "reload of " + path, "").what());
    }
  });
}

std::optional<Refusal> Daemon::probePathsRefusal(const ValidConfig& next) {
  try {
    checkProbePaths(next);
  } catch (const ApiFailure& f) {
    Refusal r;
    r.kind = Refusal::Kind::kInvalidConfig;
    r.message = f.what();
    if (f.details.is_array())
      for (const auto& d : f.details) r.errors.push_back({d.value("path", ""), d.value("message", "")});
    return r;
  }
  return std::nullopt;
}

}  // namespace gwlb::ctl
