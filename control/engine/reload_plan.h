// A reload of the config file (SIGHUP, the control API's `reload`) in two
// parts, so that the control thread only does the cheap one:
//  - planReload(): everything that costs — reading and parsing the file (and
//    whatever else the loader reads), its checks, which changed settings
//    wait for a restart, its warnings, and compiling its traffic classes when
//    they differ from the running ones. Pure; gwlbd runs it on ReloadWorker's
//    thread while the control thread goes on serving;
//  - on the control thread, with the plan: Engine::applyReload (control/
//    engine/engine.h): previewReload() (the runtime changes it reverts, the
//    appliances it changes, the service guard's losses), the guard, and the
//    plan's config and classes in force. gwlbd's SIGHUP and its API's
//    `reload` (control/service/reloader.h) and gwlb-replay's reload event
//    (control/engine/scripted_events_apply.cc) all take these two steps.
// The plan's config is validated once, here; nothing after checks it again.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "control/config/config.h"
#include "control/config/valid_config.h"
#include "control/engine/lifecycle.h"
#include "control/engine/service_guard.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {

// What a reload's plan needs, taken on the control thread when it is asked.
struct ReloadRequest {
  // The config file: read with loadRunnableConfig (its secret files too,
  // as at start-up: a reload must not accept a file the next restart would
  // refuse).
  std::string path;
  // Reads the file instead (tests): the config as the file says, its flow
  // hash key, or the errors.
  using Load = std::function<bool(std::optional<ValidConfig>& out, std::vector<ConfigError>& errors,
                                  FlowHashKey& key, bool& keyed)>;
  Load load;
  // The engine's config when asked (Engine::sharedConfig: never changed in
  // place, so read here while the control thread goes on).
  std::shared_ptr<const ValidConfig> running;
  FlowHashKey running_key;  // the flow hash key in force
  unsigned ports = 0;       // DPDK ports, for configWarnings (0: not known)
};

struct ReloadPlan {
  // Not empty: the file is refused (invalid_config); nothing below is set.
  std::vector<ConfigError> errors;
  // The file with every setting that needs a restart kept at its running
  // value: what the reload applies.
  std::shared_ptr<const ValidConfig> next;
  std::vector<std::string> restart_needed;  // changed, not applied (restartNeeded, the hash key)
  std::vector<ConfigError> warnings;        // configWarnings of the file
  // next's traffic classes compiled, when they differ from `running`'s
  // (else the running table serves on).
  std::optional<CompiledClasses> classes;
  // Where the time went (the log line, the bench): reading and checking the
  // file, the rest of the plan (restart keys, warnings), compiling classes.
  double load_ms = 0, check_ms = 0, compile_ms = 0;
};

// The plan of `r`. Any thread; never throws (an unexpected failure, even
// std::bad_alloc, is an error of the plan).
ReloadPlan planReload(const ReloadRequest& r);

// What applying `next` changes, from the running config `running` whose
// file said `file` (control thread: cheap, in the number of appliances).
struct ReloadPreview {
  std::vector<RuntimeChange> reverted;  // runtime changes the file does not carry (revertedByReload)
  std::vector<RuntimeChange> changes;   // appliances added, removed or re-weighted (running -> next)
  std::vector<ServiceLoss> losses;      // groups it leaves with no appliance in service
};
ReloadPreview previewReload(const Config& file, const Config& running, const ApplianceLifecycle& life,
                            const HealthMap& health, const ValidConfig& next, uint64_t now_ns,
                            const std::string& why);

// Runs planReload() on a thread apart, one plan at a time, and hands each
// plan to its `done` on that thread (gwlbd posts it to the control thread).
// The destructor waits a few seconds for a plan under way; one that does not
// end (a read that blocks for good) is left to its thread, and its `done` is
// never called. Any thread.
class ReloadWorker {
 public:
  ReloadWorker();
  ~ReloadWorker();
  ReloadWorker(const ReloadWorker&) = delete;
  ReloadWorker& operator=(const ReloadWorker&) = delete;

  // Starts planning `r`; false (nothing started) while another plan runs.
  bool start(ReloadRequest r, std::function<void(ReloadPlan)> done);
  bool busy() const;
  // Plans handed to their `done` since start.
  uint64_t planned() const;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool running = false;
    bool stop = false;
    uint64_t planned = 0;
  };
  std::shared_ptr<State> st_;
};

}  // namespace gwlb::ctl
