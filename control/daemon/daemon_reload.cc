// Reloads of the config file: SIGHUP and the control API's `reload` (docs/
// control-api.md "reload", docs/architecture.md "Reloads"). What costs runs
// on the reload worker's thread (control/engine/reload_plan.h: read, parse,
// check, compile the classes); the control thread only starts a reload,
// and applies its plan when it comes back: the service guard, the probe
// paths, the engine, the log line, and the outcome to every requester —
// rendered as JSON for the API, logged and told to systemd for SIGHUP.
#include <spdlog/spdlog.h>

#include "control/api/api_params.h"
#include "control/daemon/daemon.h"
#include "control/service/handlers.h"
#include "control/engine/service_guard.h"

namespace gwlb::ctl {

using nlohmann::json;

namespace {

// How long the API's `reload` waits for its reload by default, and at most.
constexpr uint64_t kReloadWaitS = 60, kReloadWaitMaxS = 3600;

}  // namespace

void Daemon::requestReload(bool force, const char* origin, ReloadWaiter waiter) {
  if (reload_run_) {
    // Asked while another reload runs: the file may have changed since that
    // one read it, so this one runs after it. Requests with the same force
    // share the one run waiting.
    for (ReloadRun& q : reload_queue_)
      if (q.force == force) {
        q.waiters.push_back(std::move(waiter));
        return;
      }
    reload_queue_.push_back(ReloadRun{force, origin, {}});
    reload_queue_.back().waiters.push_back(std::move(waiter));
    return;
  }
  reload_run_ = ReloadRun{force, origin, {}};
  reload_run_->waiters.push_back(std::move(waiter));
  startReload();
}

void Daemon::startReload() {
  sd_.notify("RELOADING=1\nSTATUS=reloading " + cfg().source_path + "\n");
  ReloadRequest r;
  const std::string path = cfg().source_path;
  r.load = [path](std::optional<ValidConfig>& out, std::vector<ConfigError>& errors, FlowHashKey& key,
                  bool& keyed) {
    // The secret files too, as at start-up: a reload must not accept a file
    // the next restart would refuse.
    return loadRunnableConfig(path, out, errors, &key, &keyed);
  };
  r.running = engine_->sharedConfig();
  r.running_key = flowHashKey();
  r.ports = n_ports_;
  bool started = reload_worker_.start(std::move(r), [this](ReloadPlan plan) {
    // On the worker's thread: hand the plan to the control thread.
    auto p = std::make_shared<ReloadPlan>(std::move(plan));
    boost::asio::post(io_, [this, p] { guarded("reload", [&] { finishReload(std::move(*p)); }); });
  });
  if (!started) {
    // The worker still runs a plan whose requesters stopped waiting: this
    // one is refused, not queued behind it for good.
    ReloadPlan busy;
    busy.errors.push_back({"", "the previous reload of " + path +
                                   " has not finished reading the file; nothing changed"});
    boost::asio::post(io_, [this, busy = std::move(busy)]() mutable {
      guarded("reload", [&] { finishReload(std::move(busy)); });
    });
  }
}

void Daemon::finishReload(ReloadPlan plan) {
  if (!reload_run_) return;
  ReloadRun run = std::move(*reload_run_);
  reload_run_.reset();
  ReloadOutcome out;
  try {
    out = applyReload(std::move(plan), run.force, run.origin);
  } catch (const ApiFailure& f) {
    out = ReloadOutcome{};
    out.refused = f;
  } catch (const std::exception& e) {
    // A bug: told to every requester, and the next reload still runs.
    out = ReloadOutcome{};
    out.refused = ApiFailure("internal", std::string("reload: ") + e.what());
    spdlog::error("reload of {}: {}", cfg().source_path, e.what());
  }
  sd_.notify("READY=1\nSTATUS=" + statusLine() +
             (out.refused ? " (last reload failed: running config kept)" : "") + "\n");
  for (ReloadWaiter& w : run.waiters) guarded("reload reply", [&] { w(out); });
  if (!reload_queue_.empty()) {
    reload_run_ = std::move(reload_queue_.front());
    reload_queue_.pop_front();
    startReload();
  }
}

Daemon::ReloadOutcome Daemon::applyReload(ReloadPlan plan, bool force, const char* origin) {
  const std::string path = cfg().source_path;
  if (!plan.errors.empty()) {
    // The running config, snapshot, flows and counters stay as they are.
    // One line with every error; then each again at debug.
    const std::vector<ConfigError>& errors = plan.errors;
    std::string all;
    for (const ConfigError& e : errors) all += (all.empty() ? "" : "; ") + (e.path.empty() ? "" : e.path + ": ") + e.message;
    spdlog::error("reload of {} rejected; keeping the running config: {} error{}: {}", path,
                  errors.size(), errors.size() == 1 ? "" : "s", all);
    for (const ConfigError& e : errors) spdlog::debug("reload error: {}: {}", e.path, e.message);
    json d = json::array();
    for (auto& e : errors) d.push_back({{"path", e.path}, {"message", e.message}});
    throw ApiFailure("invalid_config",
                     "invalid configuration (" + std::to_string(errors.size()) + " error" +
                         (errors.size() == 1 ? "" : "s") + "; see details)",
                     d);
  }
  const uint64_t now = dp::monotonicNs();
  const std::string what = "reload of " + path;
  ReloadPreview pv = previewReload(facts_.file_cfg->get(), cfg(), lifecycle(),
                                   health_ ? health_->states() : HealthMap{}, *plan.next, now,
                                   "removed by reload");
  ReloadOutcome out;
  for (const json& w : guardService(pv.losses, force, what)) out.warnings.push_back(w.get<std::string>());
  // Throws ApiFailure invalid_config / limit_reached; nothing changes then.
  checkProbePaths(*plan.next);
  out.generation = engine_->applyConfig(plan.next, "removed by reload", now, std::move(plan.classes));
  applyProbePaths();
  facts_.file_cfg = std::move(plan.next);
  facts_.config_loaded_at = unixNow();
  for (const ConfigError& w : plan.warnings) {
    spdlog::warn("reload of {}: {}: {}", path, w.path, w.message);
    out.warnings.push_back(w.path + ": " + w.message);
  }
  out.restart_needed = std::move(plan.restart_needed);
  out.reverted = std::move(pv.reverted);
  if (!out.reverted.empty()) {
    std::string list;
    for (const RuntimeChange& c : out.reverted)
      list += (list.empty() ? "" : ", ") + c.address.str() + " (" + c.change() + " at runtime)";
    spdlog::warn("reload of {} reverts {} runtime change(s) the file does not carry: {}", path,
                 out.reverted.size(), list);
  }
  std::string changed;
  for (const RuntimeChange& c : pv.changes) {
    const std::string ch = c.change();
    changed += (changed.empty() ? "" : ", ") + c.address.str() +
               (ch == "added" ? " added to " : ch == "removed" ? " removed from " : " re-weighted in ") +
               c.group;
    if (ch == "weight")
      changed += " (" + std::to_string(c.file_weight) + " -> " + std::to_string(c.running_weight) + ")";
  }
  std::string later;
  for (const std::string& k : out.restart_needed) later += (later.empty() ? "" : ", ") + k;
  spdlog::info("{}: reloaded {}: {}{}", origin, path, changed.empty() ? "no appliance changed" : changed,
               later.empty() ? "" : "; at the next restart: " + later + " (changed, not applied)");
  spdlog::debug("reload of {}: read and checked in {:.0f} ms, classes compiled in {:.0f} ms, apart from "
                "the control thread",
                path, plan.load_ms + plan.check_ms, plan.compile_ms);
  return out;
}

void Daemon::sighupReload() {
  // SIGHUP never forces: a file that leaves a group without service is
  // refused here too (the log says so).
  requestReload(false, "SIGHUP", [this](const ReloadOutcome& o) {
    // applyReload() logged the outcome (one line, and what changed) and an
    // invalid file's errors.
    if (o.refused && o.refused->code != "invalid_config")
      spdlog::error("reload of {} refused; keeping the running config: {}", cfg().source_path,
                    o.refused->what());
  });
}

json Daemon::reloadJson(const ReloadOutcome& o) const {
  if (o.refused) {
    json r = apiError(nullptr, o.refused->code, o.refused->what());
    if (!o.refused->details.is_null()) r["error"]["details"] = o.refused->details;
    return r;
  }
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

ApiDeferral Daemon::apiReload(const json& p, ApiReply reply) {
  ApiDeferral wait;
  try {
    Params pr(p, {"force", "timeout_s"});
    const bool force = pr.has("force") && pr.boolean("force");
    const uint64_t timeout_s = pr.has("timeout_s") ? pr.num("timeout_s", 1, kReloadWaitMaxS) : kReloadWaitS;
    if (cfg().source_path.empty()) badRequest("gwlbd was not started from a config file");
    wait.timeout = std::chrono::seconds(timeout_s);
    wait.on_timeout = "the reload of " + cfg().source_path + " did not finish within " +
                      std::to_string(timeout_s) +
                      " s; it goes on and is applied when it ends unless it fails (the log says "
                      "which, and `gwlbctl status` shows config_loaded_at); nothing more is waited for here";
    requestReload(force, "control API", [this, reply](const ReloadOutcome& o) { reply(reloadJson(o)); });
  } catch (const ApiFailure& f) {
    reply(apiError(nullptr, f.code, f.what()));
  }
  return wait;
}

}  // namespace gwlb::ctl
