// The control API's `reload` (docs/control-api.md "reload"): parses the
// request, asks the Reloader (control/service/reloader.h) and renders the
// outcome as the reply it kept waiting. Control thread.
#include <string>

#include "control/api/api_params.h"
#include "control/service/handlers.h"
#include "control/service/reloader.h"

namespace gwlb::ctl {

using nlohmann::json;

namespace {

// How long the API's `reload` waits for its reload by default, and at most.
constexpr uint64_t kReloadWaitS = 60, kReloadWaitMaxS = 3600;

}  // namespace

json reloadReply(const ReloadOutcome& o, const std::string& path) {
  if (o.refused) return failureReply(refusalFailure(*o.refused, "reload of " + path, ""));
  json reverted = json::array();
  for (const RuntimeChange& c : o.reverted) {
    json e = changeJson(c);
    e["after_reload"] = c.after_reload < 0 ? json("absent") : json(c.after_reload);
    reverted.push_back(e);
  }
  json r = {{"snapshot_generation", o.generation}, {"restart_needed", o.restart_needed},
            {"reverted", reverted}};
  if (!o.warnings.empty()) r["warnings"] = o.warnings;
  return {{"ok", true}, {"result", r}};
}

ApiDeferral reloadMethod(Reloader& reloader, const Engine& engine, const json& p, ApiReply reply) {
  ApiDeferral wait;
  try {
    Params pr(p, {"force", "timeout_s"});
    const bool force = pr.has("force") && pr.boolean("force");
    const uint64_t timeout_s = pr.has("timeout_s") ? pr.num("timeout_s", 1, kReloadWaitMaxS) : kReloadWaitS;
    const std::string path = engine.config().source_path;
    if (path.empty()) badRequest("gwlbd was not started from a config file");
    wait.timeout = std::chrono::seconds(timeout_s);
    wait.on_timeout = "the reload of " + path + " did not finish within " + std::to_string(timeout_s) +
                      " s; it goes on and is applied when it ends unless it fails (the log says "
                      "which, and `gwlbctl status` shows config_loaded_at); nothing more is waited for here";
    reloader.request(force, "control API", [reply, path](const ReloadOutcome& o) { reply(reloadReply(o, path)); });
  } catch (const ApiFailure& f) {
    reply(failureReply(f));
  }
  return wait;
}

}  // namespace gwlb::ctl
