// Reloads of the config file as gwlbd runs them (docs/architecture.md
// "Reloads"): SIGHUP and the control API's `reload` ask here; the file is
// read, checked and its classes compiled on ReloadWorker's thread
// (control/engine/reload_plan.h: planReload); the plan comes back to the
// control thread through the io_context, where Engine::applyReload decides
// and applies it, and every requester is told the typed outcome (the API
// renders it as JSON, SIGHUP logs it). One reload at a time: one asked while
// another runs waits and is run after it (requests asked meanwhile with the
// same `force` share that one run: it reads the file after each was asked).
// Control thread only (the plan's own thread excepted).
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio/io_context.hpp>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "control/api/api_server.h"
#include "control/engine/engine.h"
#include "control/engine/reload_plan.h"
#include "control/service/service.h"

namespace gwlb::ctl {

class Reloader {
 public:
  using Waiter = std::function<void(const ReloadOutcome&)>;
  struct Hooks {
    std::function<void()> started;                    // gwlbd: systemd's RELOADING=1
    std::function<void(const ReloadOutcome&)> ended;  // gwlbd: systemd's READY=1 and status
    // The monotonic clock a plan is applied at (unset: dp::monotonicNs;
    // tests: a fixed one, as gwlb-replay's capture time).
    std::function<uint64_t()> clock;
  };
  // `ports`: DPDK ports, for the config's warnings. `facts`' config_loaded_at
  // is set when a reload applies.
  Reloader(boost::asio::io_context& io, Engine& engine, ProcessFacts& facts, unsigned ports, Hooks hooks);
  Reloader(const Reloader&) = delete;
  Reloader& operator=(const Reloader&) = delete;

  // Reloads the file the engine's config came from; `origin` ("SIGHUP",
  // "control API") goes in the log line. `waiter` gets the outcome on the
  // control thread. Never throws but bad_alloc.
  void request(bool force, const char* origin, Waiter waiter);
  // A reload reads, checks or applies its file, or waits to.
  bool running() const { return run_.has_value(); }

 private:
  struct Run {
    bool force = false;
    const char* origin = "control API";  // the first requester's
    std::vector<Waiter> waiters;
  };
  void start();
  void finish(ReloadPlan plan);
  void log(const Run& run, const ReloadPlan& plan, const ReloadOutcome& out) const;

  boost::asio::io_context& io_;
  Engine& engine_;
  ProcessFacts& facts_;
  unsigned ports_;
  Hooks hooks_;
  std::optional<Run> run_;  // planned or being applied
  std::deque<Run> queue_;   // asked since: at most one per value of `force`
  ReloadWorker worker_;     // last: its destructor waits for a plan under way
};

// The control API's `reload` (ApiDeferredMethod: answered when the reload
// ends, or `timeout` after the request's timeout_s).
ApiDeferral reloadMethod(Reloader& reloader, const Engine& engine, const nlohmann::json& p, ApiReply reply);
// A reload's outcome as the API's reply: {ok, result: {snapshot_generation,
// restart_needed, reverted, warnings}} or the refusal's error.
nlohmann::json reloadReply(const ReloadOutcome& o, const std::string& path);

}  // namespace gwlb::ctl
