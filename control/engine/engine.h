// The control core (docs/architecture.md "The control core"): everything gwlbd
// and gwlb-replay decide about appliances, in one place. It owns the running
// config, the server-id registry, the lifecycle (removals, drains), the
// listeners and regions, snapshot building and RCU publication, flow expiry
// and sweeps, and it is driven from outside:
//   - a clock: every call takes `now` (monotonic ns in gwlbd, capture time in
//     gwlb-replay, a fake clock in tests); the engine never reads a clock;
//   - changes: applyConfig (reload, server add/remove/set), drain, undrain,
//     rebuild (health or neighbours changed);
//   - time passing: advance(now) runs every action due by then (drain
//     deadlines, failback hold ends, the once-a-second housekeeping), each at
//     its own due time and in time order, so that a driver calling it every
//     10 ms (gwlbd) and one calling it only when nextDue() is reached
//     (gwlb-replay) make the same decisions.
// Every decision (a snapshot published, an appliance changing phase, a region
// change) is reported in order through Hooks::decided.
// Control thread only; workers read only the published snapshots.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/health.h"
#include "control/engine/class_compiler.h"
#include "control/engine/class_slots.h"
#include "control/engine/maglev_cache.h"
#include "control/config/config.h"
#include "control/config/valid_config.h"
#include "control/engine/lifecycle.h"
#include "control/engine/refusal.h"
#include "control/engine/region_failover.h"
#include "control/engine/reload_plan.h"
#include "control/engine/service_guard.h"
#include "control/engine/service_shaper.h"
#include "control/engine/snapshot_builder.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"

struct rte_rcu_qsbr;

namespace gwlb::ctl {

// One decision of the control core, in the order it was made.
struct Decision {
  enum class Kind : uint8_t {
    kSnapshot,   // a snapshot was published: text = "generation N (why): digest"
    kLifecycle,  // an appliance changed phase by itself (drain over, forgotten)
    kRegion,     // a listener, composite or destination changed (region_failover.h log line)
    kService,    // flap dampening or slow start (service_shaper.h): a hold-down, a ramp
  };
  Kind kind = Kind::kSnapshot;
  uint64_t at_ns = 0;
  std::string text;
  // kLifecycle only.
  uint32_t ip = 0;
  dp::AppliancePhase from = dp::AppliancePhase::kGone, to = dp::AppliancePhase::kGone;
  std::string why;
  uint32_t flows = 0;
};
const char* toString(Decision::Kind k);

// What a snapshot decided, as one line: each known appliance's phase, weight,
// move and MAC state, and a digest of each group's Maglev table by address.
// Two engines that route alike print the same line.
std::string snapshotDigest(const dp::Snapshot& s);

// What the engine reads from its driver.
struct EngineInputs {
  // The DPDK ports' own MACs (null: none, as in gwlb-replay).
  const PortMacs* devices = nullptr;
  // The workers' counts in a traffic class counter slot (gwlbd: summed over
  // its workers), read when a freed slot goes to a new class name. Unset: zeros.
  ClassSlots::Reader class_counts;
  // Compile changed traffic classes on a thread of their own (gwlbd): a
  // config change whose classes differ from the running ones then waits,
  // whole, until they are compiled; the running config and its classes serve
  // meanwhile. Off: compiled in applyConfig (gwlb-replay, tests).
  bool compile_classes_apart = false;
  // What the driver must be able to follow before a config change applies
  // (gwlbd: every probed appliance has a probe path): a refusal, or nothing.
  // Unset: every change can be followed.
  std::function<std::optional<Refusal>(const ValidConfig& next)> can_follow;
};
// What the engine tells its driver.
struct EngineHooks {
  std::function<void(const Decision&)> decided;              // every decision, in order
  std::function<void(const dp::Snapshot&)> built;            // before it is published
  std::function<void(const Config&)> config_changed;         // gwlbd: probes follow the config
  std::function<void(const std::vector<uint16_t>&)> ids_freed;  // server ids given back
};

class Engine {
 public:
  static constexpr uint64_t kHousekeepingNs = 1'000'000'000ULL;  // expiry, counts, sweeps

  using Inputs = EngineInputs;
  using Hooks = EngineHooks;

  // `flows` and `dp` must outlive the engine; `qsbr` is the workers'. The
  // first form validates the config (std::invalid_argument when it is not
  // valid). Nothing is published before start().
  Engine(ValidConfig cfg, dp::FlowTable& flows, dp::Dataplane& dp, rte_rcu_qsbr* qsbr,
         Inputs in = {}, Hooks hooks = {});
  Engine(Config cfg, dp::FlowTable& flows, dp::Dataplane& dp, rte_rcu_qsbr* qsbr,
         Inputs in = {}, Hooks hooks = {});
  // Frees every snapshot: call only once no worker runs (or shutdown() first).
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Publishes the first snapshot; housekeeping counts from `now`.
  void start(uint64_t now);
  // Workers have stopped: unpublishes and frees every snapshot.
  void shutdown();

  // --- changes (each publishes a new snapshot) ---
  // Each first runs what advance(now) would (a drain deadline that passed
  // since the driver's last tick ends before the change, as it would have
  // with a finer clock), so that when a driver ticks does not change what
  // is decided.
  // A changed config (a copy of config() with edits): refused when it is not
  // valid (kInvalidConfig, the first form only: the others take it as
  // validated), when it leaves a server group with no appliance in service
  // and is not forced (kWouldLeaveNoService; forced: done, with a warning),
  // when the driver cannot follow it (Inputs::can_follow), or when it needs
  // more new appliance addresses than there are free server ids
  // (kLimitReached); nothing changes then. The guard judges at `now` with
  // the health as it is, before time catches up. `why` names the cause for
  // appliances it removes. The outcome's generation is the one in force.
  // With Inputs::compile_classes_apart, a change whose traffic classes differ
  // from the running config's is judged now and applied when its classes are
  // compiled (advance() publishes it); until then it is pending(), the
  // running config serves, and the generation is the running one. A change
  // made while another is pending replaces it (the latest wins; the other is
  // never applied). `compiled`: the table of next's traffic classes,
  // compiled elsewhere: the change then applies now, whatever its classes,
  // and a pending change is dropped.
  ChangeOutcome applyConfig(Config next, const std::string& why, uint64_t now, bool force);
  ChangeOutcome applyConfig(ValidConfig next, const std::string& why, uint64_t now, bool force);
  ChangeOutcome applyConfig(std::shared_ptr<const ValidConfig> next, const std::string& why, uint64_t now,
                            bool force, std::optional<CompiledClasses> compiled = std::nullopt);
  // A reload's plan (control/engine/reload_plan.h) applied, as gwlbd's
  // SIGHUP, its API's `reload` and gwlb-replay's reload event all ask it:
  // refused when the plan has errors (kInvalidConfig) or as applyConfig
  // refuses (the runtime changes the file does not carry are reverted, so
  // the guard judges the file against the running config); done, the plan's
  // config is in force with its classes and becomes fileConfig(). The
  // outcome lists what waits for a restart, what was reverted, the
  // appliances changed and the warnings.
  ReloadOutcome applyReload(ReloadPlan plan, uint64_t now, bool force);
  // A change waits for its traffic classes to compile.
  bool pending() const { return pending_.has_value(); }
  // Operator drain / undrain of a configured appliance: "" or what is wrong
  // (nothing changes then).
  std::string drain(uint32_t ip, std::optional<uint32_t> timeout_s, uint64_t now);
  std::string undrain(uint32_t ip, uint64_t now);
  // The operator's drain as gwlbd's control API and gwlb-replay's events ask
  // it: refused when the appliance is not configured or the lifecycle says
  // no, and by the service guard when it would leave its group with no
  // appliance in service, unless `force` (then done, with a warning).
  ChangeOutcome drain(uint32_t ip, std::optional<uint32_t> timeout_s, uint64_t now, bool force);
  // Scripted health: gwlb-replay's events and tests.
  void setHealth(uint32_t ip, HealthState s);
  void forgetHealth(uint32_t ip);
  // A health checker's report (control/engine/engine_health.cc): the
  // engine keeps the health it is told, and asks nobody back. reportHealth
  // builds and publishes when the report changes service (a transition, a
  // removal, or whether it takes new flows); recordHealth only keeps it and
  // says whether it would have (a config change's reports: its own build
  // follows). Control thread; never throws but what a build throws.
  void reportHealth(const HealthReport& r, uint64_t now);
  bool recordHealth(const HealthReport& r);
  // An input changed (health, neighbours): build and publish. `why` goes in the decision.
  void rebuild(const std::string& why, uint64_t now);
  // The appliances' MACs the driver learned (gwlbd: ARP and neighbor
  // discovery), by applianceKey(): every build from now on uses them (none
  // until set). Builds nothing: the driver rebuilds when a MAC in use changed.
  void setNeighbours(ApplianceMacs macs) { neighbours_ = std::move(macs); }
  const ApplianceMacs& neighbours() const { return neighbours_; }

  // --- time ---
  // When advance() has something to do next: a drain deadline, a failback
  // hold end, a hold-down's end or slow-start step, or the next housekeeping.
  uint64_t nextDue() const;
  // Applies a pending change whose classes are compiled (at `now`); runs
  // every action due at or before `now`, each at its due time, in time
  // order; then frees snapshots whose grace period has passed. With a walk
  // budget (setWalkBudget), a walk of the flow table that does not end
  // within it goes on in the next calls (walking() is true, nextDue() is its
  // time), and actions due after it wait for its end.
  void advance(uint64_t now);
  // Frees retired snapshots every worker is done with (wait: until they are).
  void retireSnapshots(bool wait);
  // Gives back server ids no snapshot or flow names any more, with a walk
  // of the whole table in this call (housekeeping does it at the end of its
  // walk; a change short of ids calls it first, unless a walk budget is set:
  // then the ids come back at the end of the next housekeeping walk).
  void reclaimApplianceIds();

  // --- walks of the flow table (docs/architecture.md "Walks in slices") ---
  // The housekeeping walk (expiry, the exhaustion policy, the control
  // sweep, the flow counts per appliance, the server-id reclaim's count) and
  // a drain deadline's walk (sweep, counts) go over the table in slices of
  // at most kWalkSlots slots and kWalkKeys live keys. `slices`: how many one
  // advance() call runs at most (gwlbd: 1, so that no call holds the control
  // thread for long on a big table); 0 (the default): a whole walk in one
  // call, as gwlb-replay and the tests run it.
  static constexpr size_t kWalkSlots = size_t(1) << 18;
  static constexpr size_t kWalkKeys = size_t(1) << 14;
  void setWalkBudget(size_t slices) { walk_budget_ = slices; }
  bool walking() const { return walk_.kind != Walk::Kind::kNone; }
  // Slices run since start (tests, the bench).
  uint64_t walkSlices() const { return walk_slices_; }
  // Flows (fragment entries excluded) per server id, as the last complete
  // housekeeping walk counted them (each when the walk passed it), and that
  // walk's time (0: none yet). The control API's `servers` reads them.
  const std::vector<uint32_t>& flowsByAppliance() const { return flows_by_appliance_; }
  uint64_t flowsCountedAt() const { return flows_counted_at_; }

  // --- state (read-only) ---
  const Config& config() const { return cfg_->get(); }
  // The running config, shared: it is never changed in place (a change
  // replaces it), so another thread may read it while the engine goes on
  // (a reload compares the file with it off the control thread).
  std::shared_ptr<const ValidConfig> sharedConfig() const { return cfg_; }
  // The config as its file said it at start or at the last reload: the
  // running config differs from it by the runtime changes (the control
  // API's server add, remove, set; replay's events), which a reload reverts.
  const Config& fileConfig() const { return file_cfg_->get(); }
  std::shared_ptr<const ValidConfig> sharedFileConfig() const { return file_cfg_; }
  const ApplianceRegistry& registry() const { return registry_; }
  const MaglevCache& maglevCache() const { return maglev_cache_; }
  const ApplianceLifecycle& lifecycle() const { return lifecycle_; }
  const RegionTracker& regions() const { return regions_; }
  // Flap dampening and slow start, as of the last build.
  const ServiceShaper& shaper() const { return shaper_; }
  const Shaping& shaping() const { return shaping_; }
  // Each traffic class name's counter slot (Snapshot::class_slot).
  const ClassSlots& classSlots() const { return class_slots_; }
  HealthMap health() const;
  const dp::Snapshot* current() const;
  uint64_t generation() const { return generation_; }
  dp::FlowTable& flows() const { return flows_; }
  size_t retiredSnapshots() const { return retired_.size(); }

  // Off: changes do not catch up on time first, and advance() is the only
  // way time passes. For a scratch engine that checks a list of changes
  // without flows (gwlb-replay's events check), where housekeeping would
  // end every drain at once.
  void setCatchUp(bool on) { catch_up_ = on; }

 private:
  void build(const std::string& why, uint64_t now);
  void catchUp(uint64_t now) {
    if (catch_up_) advance(now);
  }
  void publish(std::unique_ptr<dp::Snapshot> s);
  // The lifecycle's tick at `t` with the flow counts of a walk (null: none).
  void lifecycleTick(uint64_t t, const std::vector<uint32_t>* counts);
  void housekeeping(uint64_t t);
  void startDeadlineWalk(uint64_t t);
  // Runs the walk's slices this call's budget allows; true when it ended
  // (its end ran), false when the budget ran out first.
  bool walkOn();
  bool walkSlice();  // one slice; true at the walk's end
  void endWalk();
  void decide(Decision d);
  void applyNow(std::shared_ptr<const ValidConfig> next, const std::string& why, uint64_t now);
  // applyConfig's work once the guard's `losses` are known.
  ChangeOutcome change(std::shared_ptr<const ValidConfig> next, const std::string& why, uint64_t now,
                       bool force, std::optional<CompiledClasses> compiled, std::vector<ServiceLoss> losses);
  std::optional<Refusal> checkApplianceIds(const Config& next);
  void applyCompiled(uint64_t now);

  std::shared_ptr<const ValidConfig> cfg_;
  std::shared_ptr<const ValidConfig> file_cfg_;  // fileConfig()
  dp::FlowTable& flows_;
  dp::Dataplane& dp_;
  rte_rcu_qsbr* qsbr_;
  Inputs in_;
  Hooks hooks_;
  ApplianceMacs neighbours_;   // setNeighbours
  HealthMap scripted_health_;  // as set (replay) or reported (gwlbd's HealthChecker)
  ApplianceRegistry registry_;
  MaglevCache maglev_cache_;  // tables reused between snapshots
  ApplianceLifecycle lifecycle_;
  RegionTracker regions_;
  ServiceShaper shaper_;
  Shaping shaping_;  // the last build's
  ClassSlots class_slots_;
  uint64_t generation_ = 0;
  uint64_t last_housekeeping_ns_ = 0;
  bool catch_up_ = true;
  // The walk in progress (one at a time), and what it has gathered so far.
  struct Walk {
    enum class Kind : uint8_t { kNone, kHousekeeping, kDeadline };
    Kind kind = Kind::kNone;
    uint64_t at = 0;                       // the time it judges at and decides at
    dp::FlowTable::ExpiryPass expiry;      // kHousekeeping
    uint32_t cursor = 0;                   // kDeadline: FlowTable::scan()'s
    bool sweep = false;                    // the lifecycle had entries at its start (or, in a
                                           // fleet, an active appliance shed its flows)
    bool sweep_active = false;             // fleet: sweep active appliances that shed flows too
    bool record_expired = false;
    uint64_t lifecycle_changes = 0;        // lifecycle_changes_ at its start
    std::vector<uint16_t> expired_on;      // servers of expired flows
    std::vector<uint32_t> by_appliance;       // flows per server id
    std::vector<uint32_t> entries_by_id;   // flows and fragment entries per server id (R8)
    bool reclaim = false;                  // ids wait for a count (bounded walks)
    uint64_t oldest = 0;                   // the oldest live generation at its start
    size_t swept = 0;
    std::optional<uint64_t> deadline;      // kDeadline: the drain deadline
    size_t entries_before = 0;
  };
  // Fleet sync configured and an active appliance sheds its flows: the walk
  // begun sweeps those too (ctl::sweepMove's unhealthy_too).
  void sweepActiveToo();
  Walk walk_;
  size_t walk_budget_ = 0;
  size_t slices_left_ = 0;  // in this advance() call
  uint64_t walk_slices_ = 0;
  uint64_t lifecycle_changes_ = 0;  // applyConfig, drain, undrain
  std::vector<uint32_t> flows_by_appliance_;
  uint64_t flows_counted_at_ = 0;
  struct Retired {
    std::unique_ptr<const dp::Snapshot> snap;
    uint64_t token;
  };
  std::deque<Retired> retired_;
  struct Pending {  // a change waiting for its classes (compile_classes_apart)
    std::shared_ptr<const ValidConfig> cfg;  // its classes shared with the compiler until compiled
    std::string why;
  };
  std::optional<Pending> pending_;
  std::unique_ptr<ClassCompiler> compiler_;  // last: its thread stops first
};

}  // namespace gwlb::ctl
