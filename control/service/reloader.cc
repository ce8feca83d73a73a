// One reload at a time, its plan made apart and applied on the control
// thread (control/service/reloader.h). The decisions are the engine's
// (Engine::applyReload); what is here is the order of requests and the log.
#include "control/service/reloader.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <memory>

#include "common/flow_key.h"
#include "control/runtime/control_loop.h"
#include "control/service/handlers.h"

namespace gwlb::ctl {

Reloader::Reloader(boost::asio::io_context& io, Engine& engine, ProcessFacts& facts, unsigned ports,
                   Hooks hooks)
    : io_(io), engine_(engine), facts_(facts), ports_(ports), hooks_(std::move(hooks)) {}

void Reloader::request(bool force, const char* origin, Waiter waiter) {
  if (run_) {
    // Asked while another reload runs: the file may have changed since that
    // one read it, so this one runs after it. Requests with the same force
    // share the one run waiting.
    for (Run& q : queue_)
      if (q.force == force) {
        q.waiters.push_back(std::move(waiter));
        return;
      }
    queue_.push_back(Run{force, origin, {}});
    queue_.back().waiters.push_back(std::move(waiter));
    return;
  }
  run_ = Run{force, origin, {}};
  run_->waiters.push_back(std::move(waiter));
  start();
}

void Reloader::start() {
  if (hooks_.started) hooks_.started();
  ReloadRequest r;
  r.path = engine_.config().source_path;
  r.running = engine_.sharedConfig();
  r.running_key = flowHashKey();
  r.ports = ports_;
  bool started = worker_.start(std::move(r), [this](ReloadPlan plan) {
    // On the worker's thread: hand the plan to the control thread.
    auto p = std::make_shared<ReloadPlan>(std::move(plan));
    boost::asio::post(io_, [this, p] { guarded("reload", [&] { finish(std::move(*p)); }); });
  });
  if (!started) {
    // The worker still runs a plan whose requesters stopped waiting: this
    // one is refused, not queued behind it for good.
    ReloadPlan busy;
    busy.errors.push_back({"", "the previous reload of " + engine_.config().source_path +
                                   " has not finished reading the file; nothing changed"});
    boost::asio::post(io_, [this, busy = std::move(busy)]() mutable {
      guarded("reload", [&] { finish(std::move(busy)); });
    });
  }
}

void Reloader::finish(ReloadPlan plan) {
  if (!run_) return;
  Run run = std::move(*run_);
  run_.reset();
  ReloadPlan facts;  // what the log line says of the plan once it is applied
  facts.errors = plan.errors;
  facts.warnings = plan.warnings;
  facts.load_ms = plan.load_ms;
  facts.check_ms = plan.check_ms;
  facts.compile_ms = plan.compile_ms;
  ReloadOutcome out;
  try {
    const uint64_t now = hooks_.clock ? hooks_.clock() : dp::monotonicNs();
    out = engine_.applyReload(std::move(plan), now, run.force);
  } catch (const std::exception& e) {
    // A bug: told to every requester, and the next reload still runs.
    out = ReloadOutcome{};
    out.refused = Refusal{Refusal::Kind::kInternal, std::string("reload: ") + e.what(), {}, {}, {}};
    spdlog::error("reload of {}: {}", engine_.config().source_path, e.what());
  }
  if (!out.refused) facts_.config_loaded_at = unixNow();
  log(run, facts, out);
  if (hooks_.ended) hooks_.ended(out);
  for (Waiter& w : run.waiters) guarded("reload reply", [&] { w(out); });
  if (!queue_.empty()) {
    run_ = std::move(queue_.front());
    queue_.pop_front();
    start();
  }
}

void Reloader::log(const Run& run, const ReloadPlan& plan, const ReloadOutcome& out) const {
  const std::string path = engine_.config().source_path;
  if (!plan.errors.empty()) {
    // One line with every error; then each again at debug.
    std::string all;
    for (const ConfigError& e : plan.errors)
      all += (all.empty() ? "" : "; ") + (e.path.empty() ? "" : e.path + ": ") + e.message;
    spdlog::error("reload of {} rejected; keeping the running config: {} error{}: {}", path,
                  plan.errors.size(), plan.errors.size() == 1 ? "" : "s", all);
    for (const ConfigError& e : plan.errors) spdlog::debug("reload error: {}: {}", e.path, e.message);
    return;
  }
  if (out.refused) return;  // the requester says why (SIGHUP logs it, the API replies)
  logForced("reload of " + path, out.warnings);
  for (const ConfigError& w : plan.warnings) spdlog::warn("reload of {}: {}: {}", path, w.path, w.message);
  if (!out.reverted.empty()) {
    std::string list;
    for (const RuntimeChange& c : out.reverted)
      list += (list.empty() ? "" : ", ") + c.address.str() + " (" + c.change() + " at runtime)";
    spdlog::warn("reload of {} reverts {} runtime change(s) the file does not carry: {}", path,
                 out.reverted.size(), list);
  }
  std::string changed;
  for (const RuntimeChange& c : out.changes) {
    const std::string ch = c.change();
    changed += (changed.empty() ? "" : ", ") + c.address.str() +
               (ch == "added" ? " added to " : ch == "removed" ? " removed from " : " re-weighted in ") +
               c.group;
    if (ch == "weight")
      changed += " (" + std::to_string(c.file_weight) + " -> " + std::to_string(c.running_weight) + ")";
  }
  std::string later;
  for (const std::string& k : out.restart_needed) later += (later.empty() ? "" : ", ") + k;
  spdlog::info("{}: reloaded {}: {}{}", run.origin, path, changed.empty() ? "no appliance changed" : changed,
               later.empty() ? "" : "; at the next restart: " + later + " (changed, not applied)");
  spdlog::debug("reload of {}: read and checked in {:.0f} ms, classes compiled in {:.0f} ms, apart from "
                "the control thread",
                path, plan.load_ms + plan.check_ms, plan.compile_ms);
}

}  // namespace gwlb::ctl
