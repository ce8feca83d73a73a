// The engine's guarded changes (control/engine/engine.h): a config change, a
// reload's plan and an operator drain, each judged by the service guard and
// answered as a typed outcome (control/engine/refusal.h) that gwlbd's control
// API, its SIGHUP and gwlb-replay's events only render. Control thread.
#include <string>
#include <utility>

#include "control/engine/engine.h"
#include "control/engine/service_guard.h"

namespace gwlb::ctl {

const char* toString(Refusal::Kind k) {
  switch (k) {
    case Refusal::Kind::kNotFound: return "not_found";
    case Refusal::Kind::kConflict: return "conflict";
    case Refusal::Kind::kWouldLeaveNoService: return "would_leave_no_service";
    case Refusal::Kind::kInvalidConfig: return "invalid_config";
    case Refusal::Kind::kLimitReached: return "limit_reached";
    case Refusal::Kind::kInternal: return "internal";
  }
  return "?";
}

Refusal invalidConfig(std::vector<ConfigError> errors) {
  Refusal r;
  r.kind = Refusal::Kind::kInvalidConfig;
  r.message = "invalid configuration (" + std::to_string(errors.size()) + " error" +
              (errors.size() == 1 ? "" : "s") + "; see details)";
  r.errors = std::move(errors);
  return r;
}

ChangeOutcome Engine::applyConfig(Config next, const std::string& why, uint64_t now, bool force) {
  std::vector<ConfigError> errors;
  std::optional<ValidConfig> v = validConfig(std::move(next), errors);
  if (!v) return ChangeOutcome{invalidConfig(std::move(errors)), {}, generation_};
  return applyConfig(std::move(*v), why, now, force);
}

ChangeOutcome Engine::applyConfig(ValidConfig next, const std::string& why, uint64_t now, bool force) {
  return applyConfig(std::make_shared<const ValidConfig>(std::move(next)), why, now, force);
}

ChangeOutcome Engine::applyConfig(std::shared_ptr<const ValidConfig> next, const std::string& why,
                                  uint64_t now, bool force, std::optional<CompiledClasses> compiled) {
  // Judged before time catches up, with the health as it is now.
  std::vector<ServiceLoss> losses = configChangeLosses(config(), lifecycle_, health(), *next, now, why);
  return change(std::move(next), why, now, force, std::move(compiled), std::move(losses));
}

ChangeOutcome Engine::change(std::shared_ptr<const ValidConfig> shared, const std::string& why,
                             uint64_t now, bool force, std::optional<CompiledClasses> compiled,
                             std::vector<ServiceLoss> losses) {
  ChangeOutcome out;
  out.generation = generation_;
  if (!losses.empty() && !force) {
    out.refused = Refusal{Refusal::Kind::kWouldLeaveNoService, describeLosses(losses), std::move(losses), {}, {}};
    return out;
  }
  if (in_.can_follow) {
    if (std::optional<Refusal> no = in_.can_follow(*shared)) {
      out.refused = std::move(no);
      return out;
    }
  }
  catchUp(now);
  // Before anything changes: a refusal applies nothing.
  if (std::optional<Refusal> no = checkApplianceIds(shared->get())) {
    out.refused = std::move(no);
    return out;
  }
  if (!losses.empty()) out.warnings.push_back("forced: " + describeLosses(losses, true));
  if (compiled) {
    if (pending_) compiler_->cancel();
    pending_.reset();
    primeClassCache(std::move(compiled->rules), std::move(compiled->table));
  } else if (compiler_) {
    // Compared in place: a copy of a large class set costs milliseconds.
    const std::vector<TrafficClassConfig>& classes = shared->get().traffic_classes;
    if (!sameClassRules(classes, config().traffic_classes)) {
      // New classes: compiled apart, and the change waits for them. One
      // already compiling the same classes stays: this change replaces only
      // the rest of its config.
      if (!pending_ || !sameClassRules(classes, pending_->cfg->get().traffic_classes))
        compiler_->request(ClassCompiler::Classes(shared, &classes));
      pending_ = Pending{std::move(shared), why};
      out.generation = generation_;
      return out;
    }
    // The running classes: applied now, and a pending change is dropped.
    if (pending_) compiler_->cancel();
    pending_.reset();
  }
  applyNow(std::move(shared), why, now);
  out.generation = generation_;
  return out;
}

ReloadOutcome Engine::applyReload(ReloadPlan plan, uint64_t now, bool force) {
  ReloadOutcome out;
  out.generation = generation_;
  if (!plan.errors.empty()) {
    // The running config, snapshot, flows and counters stay as they are.
    out.refused = invalidConfig(std::move(plan.errors));
    return out;
  }
  const std::string why = "removed by reload";
  ReloadPreview pv = previewReload(fileConfig(), config(), lifecycle_, health(), *plan.next, now, why);
  std::shared_ptr<const ValidConfig> next = plan.next;
  ChangeOutcome c = change(std::move(plan.next), why, now, force, std::move(plan.classes), std::move(pv.losses));
  out.generation = c.generation;
  if (c.refused) {
    out.refused = std::move(c.refused);
    return out;
  }
  file_cfg_ = std::move(next);
  out.warnings = std::move(c.warnings);
  for (const ConfigError& w : plan.warnings) out.warnings.push_back(w.path + ": " + w.message);
  out.restart_needed = std::move(plan.restart_needed);
  out.reverted = std::move(pv.reverted);
  out.changes = std::move(pv.changes);
  return out;
}

ChangeOutcome Engine::drain(uint32_t ip, std::optional<uint32_t> timeout_s, uint64_t now, bool force) {
  ChangeOutcome out;
  std::string err;
  // Judged before time catches up, with the health as it is now.
  std::vector<ServiceLoss> losses = drainLosses(config(), lifecycle_, health(), ip, timeout_s, now, err);
  if (err == "not a configured appliance") {
    out.refused = Refusal{Refusal::Kind::kNotFound, err, {}, {}, {}};
  } else if (!err.empty()) {
    out.refused = Refusal{Refusal::Kind::kConflict, err, {}, {}, {}};
  } else if (!losses.empty() && !force) {
    out.refused = Refusal{Refusal::Kind::kWouldLeaveNoService, describeLosses(losses), std::move(losses), {}, {}};
  } else {
    if (!losses.empty()) out.warnings.push_back("forced: " + describeLosses(losses, true));
    err = drain(ip, timeout_s, now);
    if (!err.empty()) out = ChangeOutcome{Refusal{Refusal::Kind::kConflict, err, {}, {}, {}}, {}, 0};
  }
  out.generation = generation_;
  return out;
}

}  // namespace gwlb::ctl
