#include "control/engine/reload_plan.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gwlb::ctl {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// How long ~ReloadWorker waits for a plan under way (a file being parsed)
// before it leaves it to its thread.
constexpr std::chrono::seconds kStopWait{5};

void plan(const ReloadRequest& r, ReloadPlan& p) {
  const Config& running = r.running->get();
  auto t = Clock::now();
  std::optional<ValidConfig> file;
  FlowHashKey key;
  bool keyed = false;
  const bool loaded = r.load ? r.load(file, p.errors, key, keyed)
                            : loadRunnableConfig(r.path, file, p.errors, &key, &keyed);
  if (!loaded) {
    if (p.errors.empty()) p.errors.push_back({"", "the config file could not be loaded"});
    return;
  }
  p.load_ms = msSince(t);
  t = Clock::now();
  p.warnings = configWarnings(file->get(), r.ports);
  p.restart_needed = restartNeeded(running, file->get());
  const bool hold = !p.restart_needed.empty();
  // A new key written to the same secret file changes no path: compare the
  // keys (docs/config.md "Reloading").
  if (keyed && !(key == r.running_key)) {
    std::string name = hashKeyRestartName(running);
    if (std::find(p.restart_needed.begin(), p.restart_needed.end(), name) == p.restart_needed.end())
      p.restart_needed.push_back(name);
  }
  if (!hold) {
    p.next = std::make_shared<const ValidConfig>(std::move(*file));
  } else {
    // The keys a reload cannot apply keep their running value: what is
    // applied is that config, checked as a whole.
    Config held = std::move(*file).release();
    holdRestartKeys(running, held);
    std::optional<ValidConfig> v = validConfig(std::move(held), p.errors);
    if (!v) return;
    p.next = std::make_shared<const ValidConfig>(std::move(*v));
  }
  p.check_ms = msSince(t);
  const std::vector<TrafficClassConfig>& classes = p.next->get().traffic_classes;
  if (!sameClassRules(classes, running.traffic_classes)) {
    t = Clock::now();
    CompiledClasses c;
    c.rules = classRules(classes);
    c.table = ClassTable(c.rules);
    p.classes = std::move(c);
    p.compile_ms = msSince(t);
  }
}

}  // namespace

ReloadPlan planReload(const ReloadRequest& r) {
  ReloadPlan p;
  try {
    plan(r, p);
  } catch (const std::exception& e) {
    p = ReloadPlan{};
    p.errors.push_back({"", std::string("internal error while reloading: ") + e.what()});
  }
  if (!p.errors.empty()) {
    p.next.reset();
    p.classes.reset();
  }
  return p;
}

ReloadPreview previewReload(const Config& file, const Config& running, const ApplianceLifecycle& life,
                            const HealthMap& health, const ValidConfig& next, uint64_t now_ns,
                            const std::string& why) {
  ReloadPreview v;
  v.reverted = revertedByReload(file, running, next.get());
  v.changes = runtimeChanges(running, next.get());
  v.losses = configChangeLosses(running, life, health, next, now_ns, why);
  return v;
}

ReloadWorker::ReloadWorker() : st_(std::make_shared<State>()) {}

ReloadWorker::~ReloadWorker() {
  std::unique_lock lock(st_->mu);
  st_->stop = true;
  st_->cv.wait_for(lock, kStopWait, [&] { return !st_->running; });
}

bool ReloadWorker::start(ReloadRequest r, std::function<void(ReloadPlan)> done) {
  {
    std::lock_guard lock(st_->mu);
    if (st_->running || st_->stop) return false;
    st_->running = true;
  }
  // A thread per plan, detached: a plan that never ends (a read that
  // blocks) holds only its own thread and the shared state, never the
  // destructor (see the class comment).
  std::thread([st = st_, r = std::move(r), done = std::move(done)]() mutable {
    // It shares the control thread's CPU (threads inherit the main lcore's
    // affinity): at the lowest priority, the control thread's timers take
    // the CPU back as soon as they are due.
    ::setpriority(PRIO_PROCESS, pid_t(::syscall(SYS_gettid)), 19);
    ReloadPlan p = planReload(r);
    r = ReloadRequest{};  // the running config it held: let go before the plan is applied
    std::lock_guard lock(st->mu);
    st->running = false;
    if (!st->stop) {
      ++st->planned;
      try {
        done(std::move(p));
      } catch (...) {
        // Out of memory handing it over: the driver's own timeout says so.
      }
    }
    st->cv.notify_all();
  }).detach();
  return true;
}

bool ReloadWorker::busy() const {
  std::lock_guard lock(st_->mu);
  return st_->running;
}

uint64_t ReloadWorker::planned() const {
  std::lock_guard lock(st_->mu);
  return st_->planned;
}

}  // namespace gwlb::ctl
