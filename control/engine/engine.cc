#include "control/engine/engine.h"

#include <rte_rcu_qsbr.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

#include "control/engine/flow_policy.h"

namespace gwlb::ctl {

const char* toString(Decision::Kind k) {
  switch (k) {
    case Decision::Kind::kSnapshot: return "snapshot";
    case Decision::Kind::kLifecycle: return "lifecycle";
    case Decision::Kind::kRegion: return "region";
    case Decision::Kind::kService: return "service";
  }
  return "?";
}

std::string snapshotDigest(const dp::Snapshot& s) {
  std::string out;
  for (const dp::ApplianceSlot& sv : s.appliances) {
    if (!sv.in_use && !sv.routable) continue;
    out += IpAddr::v4(sv.ip).str() + " " + dp::toString(sv.phase) + " w" +
           std::to_string(sv.weight);
    if (!sv.in_use) out += " leaving";
    if (sv.move_reason != dp::MoveReason::kNone) out += std::string(" move=") + dp::toString(sv.move_reason);
    if (sv.reset != dp::ResetReason::kNone) out += std::string(" reset=") + dp::toString(sv.reset);
    if (!sv.mac_known) out += " no-mac";
    out += "; ";
  }
  for (size_t g = 0; g < s.groups.size(); ++g) {
    // FNV-1a over the addresses the slots name: ids are local, addresses are not.
    uint64_t h = 0xcbf29ce484222325ULL;
    for (uint16_t id : s.groups[g].maglev) {
      uint32_t ip = id < s.appliances.size() ? s.appliances[id].ip : 0xFFFFFFFFu;
      for (int b = 0; b < 4; ++b) h = (h ^ ((ip >> (8 * b)) & 0xFF)) * 0x100000001b3ULL;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "g%zu:%016llx ", g, (unsigned long long)h);
    out += buf;
  }
  for (size_t l = 0; l < s.listeners.size(); ++l)
    out += "l" + std::to_string(l) + "->" + std::to_string(s.listeners[l].active) + " ";
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

namespace {

ValidConfig validOrThrow(Config c) {
  std::vector<ConfigError> errors;
  std::optional<ValidConfig> v = validConfig(std::move(c), errors);
  if (!v) throw std::invalid_argument(formatErrors(errors));
  return std::move(*v);
}

}  // namespace

Engine::Engine(Config cfg, dp::FlowTable& flows, dp::Dataplane& dp, rte_rcu_qsbr* qsbr,
               Inputs in, Hooks hooks)
    : Engine(validOrThrow(std::move(cfg)), flows, dp, qsbr, std::move(in), std::move(hooks)) {}

Engine::Engine(ValidConfig cfg, dp::FlowTable& flows, dp::Dataplane& dp, rte_rcu_qsbr* qsbr,
               Inputs in, Hooks hooks)
    : cfg_(std::make_shared<const ValidConfig>(std::move(cfg))),
      file_cfg_(cfg_),
      flows_(flows),
      dp_(dp),
      qsbr_(qsbr),
      in_(std::move(in)),
      hooks_(std::move(hooks)) {
  if (in_.compile_classes_apart) compiler_ = std::make_unique<ClassCompiler>();
}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() {
  delete dp_.snapshot.exchange(nullptr);
  retireSnapshots(true);
  retired_.clear();  // no worker runs: nothing can still read them
}

void Engine::start(uint64_t now) {
  last_housekeeping_ns_ = now;
  build("start", now);
}

HealthMap Engine::health() const { return scripted_health_; }

const dp::Snapshot* Engine::current() const {
  return dp_.snapshot.load(std::memory_order_acquire);
}

void Engine::decide(Decision d) {
  if (hooks_.decided) hooks_.decided(d);
}

void Engine::rebuild(const std::string& why, uint64_t now) {
  catchUp(now);
  build(why, now);
}

void Engine::build(const std::string& why, uint64_t now) {
  HealthMap h = health();
  std::vector<std::string> lines;
  // Each line the region tracker or the service shaper logs is a decision.
  auto decideLines = [&](Decision::Kind kind) {
    for (std::string& line : lines) {
      Decision d;
      d.kind = kind;
      d.at_ns = now;
      d.text = std::move(line);
      decide(std::move(d));
    }
    lines.clear();
  };
  regions_.update(config(), h, &lifecycle_, now, &lines);
  decideLines(Decision::Kind::kRegion);
  shaping_ = shaper_.update(config(), h, lifecycle_, now, &lines);
  decideLines(Decision::Kind::kService);
  std::unique_ptr<dp::Snapshot> s =
      buildSnapshot(*cfg_, registry_, neighbours_, ++generation_, h, &lifecycle_, &regions_,
                    in_.devices, &maglev_cache_, &shaping_);
  registry_.release(*s);
  std::vector<std::string> class_names;
  for (const TrafficClassConfig& tc : config().traffic_classes) class_names.push_back(tc.name);
  s->class_slot = class_slots_.assign(class_names, in_.class_counts);
  s->routeClasses();
  s->followClassGen(dp_.snapshot.load(std::memory_order_acquire));
  if (hooks_.built) hooks_.built(*s);
  Decision d;
  d.kind = Decision::Kind::kSnapshot;
  d.at_ns = now;
  d.text = "generation " + std::to_string(s->generation) + " (" + why + "): " + snapshotDigest(*s);
  publish(std::move(s));
  decide(std::move(d));
}

void Engine::publish(std::unique_ptr<dp::Snapshot> s) {
  const dp::Snapshot* old = dp_.snapshot.exchange(s.release(), std::memory_order_acq_rel);
  if (old) retired_.push_back({std::unique_ptr<const dp::Snapshot>(old), rte_rcu_qsbr_start(qsbr_)});
}

void Engine::retireSnapshots(bool wait) {
  while (!retired_.empty() && rte_rcu_qsbr_check(qsbr_, retired_.front().token, wait) == 1)
    retired_.pop_front();
}

void Engine::applyNow(std::shared_ptr<const ValidConfig> next, const std::string& why, uint64_t now) {
  ++lifecycle_changes_;
  lifecycle_.applyConfig(config(), next->get(), now, why);
  cfg_ = std::move(next);
  // Scripted health follows the config as gwlbd's checker does: an
  // appliance no longer configured is no longer checked.
  std::set<uint32_t> configured;
  for (const auto& g : config().server_groups)
    for (const auto& sc : g.appliances) configured.insert(applianceKey(sc.address));
  for (auto it = scripted_health_.begin(); it != scripted_health_.end();)
    it = configured.count(it->first) ? std::next(it) : scripted_health_.erase(it);
  if (hooks_.config_changed) hooks_.config_changed(config());
  build("config", now);
}

void Engine::applyCompiled(uint64_t now) {
  if (!pending_) return;
  std::optional<ClassCompiler::Result> r = compiler_->take();
  if (!r) return;
  Pending p = std::move(*pending_);
  pending_.reset();
  // Server ids may have been taken since the change was checked: checked
  // again (a refusal is thrown to the driver, which logs it).
  if (std::optional<Refusal> no = checkApplianceIds(p.cfg->get()))
    throw std::runtime_error("config change not applied: " + no->message);
  primeClassCache(std::move(r->rules), std::move(r->table));
  applyNow(std::move(p.cfg), p.why, now);
}

std::string Engine::drain(uint32_t ip, std::optional<uint32_t> timeout_s, uint64_t now) {
  catchUp(now);
  ++lifecycle_changes_;
  std::string err = lifecycle_.drain(config(), ip, timeout_s, now);
  if (err.empty()) build("drain " + IpAddr::v4(ip).str(), now);
  return err;
}

std::string Engine::undrain(uint32_t ip, uint64_t now) {
  catchUp(now);
  ++lifecycle_changes_;
  std::string err = lifecycle_.undrain(ip);
  if (err.empty()) build("undrain " + IpAddr::v4(ip).str(), now);
  return err;
}

void Engine::setHealth(uint32_t ip, HealthState s) {
  scripted_health_[ip] = ApplianceHealth(s);
}

void Engine::forgetHealth(uint32_t ip) { scripted_health_.erase(ip); }

uint64_t Engine::nextDue() const {
  uint64_t t = last_housekeeping_ns_ + kHousekeepingNs;
  if (auto d = lifecycle_.nextDeadline()) t = std::min(t, *d);
  if (auto h = regions_.nextHoldDeadline()) t = std::min(t, *h);
  if (auto sh = shaper_.nextDue()) t = std::min(t, *sh);
  if (walking()) t = std::min(t, walk_.at);  // its next slice is due
  return t;
}

void Engine::advance(uint64_t now) {
  slices_left_ = walk_budget_;
  if (pending_) applyCompiled(now);
  for (;;) {
    if (walking()) {
      if (!walkOn()) break;  // the budget ran out: the rest in the next calls
      continue;
    }
    const std::optional<uint64_t> dl = lifecycle_.nextDeadline();
    const std::optional<uint64_t> hd = regions_.nextHoldDeadline();
    const std::optional<uint64_t> sh = shaper_.nextDue();
    const uint64_t hk = last_housekeeping_ns_ + kHousekeepingNs;
    uint64_t t = hk;
    if (dl) t = std::min(t, *dl);
    if (hd) t = std::min(t, *hd);
    if (sh) t = std::min(t, *sh);
    if (t > now) break;
    if (sh && *sh == t) {
      // A hold-down ended or a slow start steps: the shares change.
      build("dampening or slow start", t);
      if (shaper_.nextDue() == sh) throw std::logic_error("service shaper deadline did not pass");
    } else if (hd && *hd == t) {
      // A failback hold ended: new flows may return to the preferred region.
      build("failback hold ended", t);
      if (regions_.nextHoldDeadline() == hd)
        throw std::logic_error("failback hold deadline did not end its hold");
    } else if (dl && *dl == t) {
      // A drain reached its deadline: judged on a fresh count (a walk);
      // tick() ends every drain due by then.
      startDeadlineWalk(t);
    } else {
      // Housekeeping runs on a 1 s grid from start(). A driver that calls
      // late (a gap in a capture, a stalled thread) gets every missed
      // second run in order while one could decide something (a leaving
      // appliance, a server id to give back); with neither, only the
      // latest second is run: expiring flows then or a second at a time
      // leaves the same table and decides nothing.
      // With a walk budget (gwlbd), the walk itself makes the next second
      // late on a big table: the latest second only, else the walks would
      // never catch up.
      uint64_t at = hk;
      if (walk_budget_ != 0 || (lifecycle_.entries().empty() && !registry_.released())) {
        at = last_housekeeping_ns_ +
             (now - last_housekeeping_ns_) / kHousekeepingNs * kHousekeepingNs;
      }
      housekeeping(at);
    }
  }
  retireSnapshots(false);
}

void Engine::housekeeping(uint64_t t) {
  last_housekeeping_ns_ = t;
  walk_ = Walk{};
  walk_.kind = Walk::Kind::kHousekeeping;
  walk_.at = t;
  walk_.sweep = !lifecycle_.entries().empty();
  walk_.record_expired = walk_.sweep;
  sweepActiveToo();
  walk_.lifecycle_changes = lifecycle_changes_;
  walk_.by_appliance.assign(registry_.size(), 0);
  // Bounded walks count entries per id for the reclaim as they go (R8: the
  // count must start once no snapshot older than the release lives);
  // a walk in one call leaves it to reclaimApplianceIds() at its end.
  if (walk_budget_ != 0 && registry_.released()) {
    retireSnapshots(false);
    const dp::Snapshot* cur = current();
    walk_.oldest = !retired_.empty() ? retired_.front().snap->generation : cur ? cur->generation : 0;
    walk_.reclaim = registry_.reclaimable(walk_.oldest);
    if (walk_.reclaim) walk_.entries_by_id.assign(registry_.size(), 0);
  }
  flows_.expireBegin(walk_.expiry, t);
}

void Engine::sweepActiveToo() {
  // A gateway of a fleet moves its copies of a failed appliance's flows
  // itself, as every other gateway does, instead of waiting for a packet
  // that another gateway may be the one to carry: the mover's record can be
  // lost on a congested or cut sync link, and a copy left behind sends the
  // flow back to the appliance it left once that recovers and ECMP moves the
  // flow here (docs/fleet.md "Flows through sync faults").
  const FleetConfig& f = config().fleet;
  if (!f.configured || f.sync_listen.empty() || f.peers.empty()) return;
  const dp::Snapshot* cur = current();
  if (!cur || !anyUnhealthyShedding(*cur)) return;
  walk_.sweep = walk_.sweep_active = true;
}

void Engine::startDeadlineWalk(uint64_t t) {
  walk_ = Walk{};
  walk_.kind = Walk::Kind::kDeadline;
  walk_.at = t;
  walk_.sweep = !lifecycle_.entries().empty();
  sweepActiveToo();
  walk_.lifecycle_changes = lifecycle_changes_;
  walk_.by_appliance.assign(registry_.size(), 0);
  walk_.deadline = lifecycle_.nextDeadline();
  walk_.entries_before = lifecycle_.entries().size();
}

bool Engine::walkOn() {
  for (;;) {
    if (walk_budget_ != 0) {
      if (slices_left_ == 0) return false;
      --slices_left_;
    }
    if (walkSlice()) {
      endWalk();
      return true;
    }
  }
}

bool Engine::walkSlice() {
  ++walk_slices_;
  const dp::Snapshot* s = walk_.sweep ? current() : nullptr;
  // Per live key the walk keeps: the control sweep (before the count, so a
  // swept flow counts on its new appliance), then the counts.
  auto visit = [&](const FlowKey& k, int32_t pos, const dp::FlowEntry& e) {
    if (s) walk_.swept += sweepMove(flows_, *s, k, pos, walk_.at, walk_.sweep_active);
    uint64_t r = e.route.load(std::memory_order_acquire);
    if (!(r & dp::kRouteSet)) return;
    uint16_t id = dp::routeAppliance(r);
    if (walk_.reclaim && id < walk_.entries_by_id.size()) ++walk_.entries_by_id[id];
    if (k.kind == KeyKind::kFragment) return;
    if (walk_.by_appliance.size() <= id) walk_.by_appliance.resize(size_t(id) + 1, 0);
    ++walk_.by_appliance[id];
  };
  if (walk_.kind == Walk::Kind::kHousekeeping) {
    bool done = flows_.expireStep(walk_.expiry, walk_budget_ ? kWalkSlots : flows_.slots(),
                                  walk_budget_ ? kWalkKeys : SIZE_MAX,
                                  walk_.record_expired ? &walk_.expired_on : nullptr, visit);
    // Positions whose grace period ended are freed as the walk goes, a
    // bounded number per slice.
    flows_.reclaim(false, walk_budget_ ? kWalkKeys : SIZE_MAX);
    return done;
  }
  return !flows_.scan(walk_.cursor, walk_budget_ ? kWalkKeys : SIZE_MAX,
                      walk_budget_ ? kWalkSlots : flows_.slots(),
                      [&](const FlowKey& k, int32_t pos, const dp::FlowEntry& e) {
                        visit(k, pos, e);
                        return true;
                      });
}

void Engine::endWalk() {
  Walk w = std::move(walk_);
  walk_ = Walk{};
  const uint64_t t = w.at;
  // A change to the lifecycle during a walk in slices (a drain, a removal)
  // may have counted its appliance's flows only in part: no judgement on
  // these counts; the next walk counts again.
  const bool counts_whole = w.lifecycle_changes == lifecycle_changes_;
  if (w.swept) lifecycle_.addSwept(w.swept);
  if (w.kind == Walk::Kind::kHousekeeping) {
    flows_by_appliance_ = w.by_appliance;
    flows_counted_at_ = t;
    if (!w.expired_on.empty()) lifecycle_.flowsExpired(w.expired_on, registry_.addresses());
    lifecycleTick(t, counts_whole ? &w.by_appliance : nullptr);
    if (walk_budget_ == 0) {
      reclaimApplianceIds();
    } else if (w.reclaim) {
      // Concurrency rule R8 (docs/architecture.md "Flow entries: concurrency rules"):
      // the count began once every snapshot older than `oldest` was freed.
      std::vector<uint16_t> freed = registry_.reclaim(w.oldest, w.entries_by_id);
      if (!freed.empty() && hooks_.ids_freed) hooks_.ids_freed(freed);
    }
    return;
  }
  size_t n = lifecycle_.entries().size();
  lifecycleTick(t, counts_whole ? &w.by_appliance : nullptr);
  if (counts_whole && lifecycle_.nextDeadline() == w.deadline && lifecycle_.entries().size() == n &&
      n == w.entries_before)
    throw std::logic_error("drain deadline did not end its drain");
}

void Engine::lifecycleTick(uint64_t t, const std::vector<uint32_t>* counts) {
  if (lifecycle_.entries().empty()) return;
  std::map<uint32_t, dp::AppliancePhase> before;
  for (auto& [ip, e] : lifecycle_.entries()) before[ip] = e.phase;
  if (!lifecycle_.tick(t, counts, registry_.addresses())) return;
  for (auto& [ip, ph] : before) {
    const ApplianceLifecycle::Entry* e = lifecycle_.find(ip);
    dp::AppliancePhase now_ph = e ? e->phase : dp::AppliancePhase::kGone;
    if (now_ph == ph) continue;
    Decision d;
    d.kind = Decision::Kind::kLifecycle;
    d.at_ns = t;
    d.ip = ip;
    d.from = ph;
    d.to = now_ph;
    d.flows = e ? e->flows : 0;
    // tick() ends a drain early only when no flow is left on it.
    d.why = !e ? (ph == dp::AppliancePhase::kDraining ? "no flow left: drain over, forgotten"
                                                   : "no flow left: forgotten")
            : e->flows == 0 ? "no flow left: drain over"
                            : "drain timeout";
    d.text = IpAddr::v4(ip).str() + " " + dp::toString(ph) + " -> " + dp::toString(now_ph) + " (" +
             d.why + ", " + std::to_string(d.flows) + " flows)";
    decide(std::move(d));
  }
  build("lifecycle", t);
}

void Engine::reclaimApplianceIds() {
  if (!registry_.released()) return;
  retireSnapshots(false);
  const dp::Snapshot* cur = current();
  uint64_t oldest = !retired_.empty() ? retired_.front().snap->generation
                    : cur             ? cur->generation
                                      : 0;
  if (!registry_.reclaimable(oldest)) return;
  // Concurrency rule R8 (docs/architecture.md "Flow entries: concurrency rules"):
  // every snapshot that could still give a worker one of these ids for a new
  // flow is freed: what the table holds now is all that will ever name them.
  std::vector<uint32_t> by_id(registry_.size(), 0);
  flows_.forEach([&](const FlowKey&, int32_t, const dp::FlowEntry& e) {
    uint64_t r = e.route.load(std::memory_order_acquire);
    if ((r & dp::kRouteSet) && dp::routeAppliance(r) < by_id.size()) ++by_id[dp::routeAppliance(r)];
  });
  std::vector<uint16_t> freed = registry_.reclaim(oldest, by_id);
  if (!freed.empty() && hooks_.ids_freed) hooks_.ids_freed(freed);
}

std::optional<Refusal> Engine::checkApplianceIds(const Config& next) {
  size_t need = registry_.missing(next);
  if (need <= registry_.available()) return std::nullopt;
  if (walk_budget_ == 0) reclaimApplianceIds();
  if (need <= registry_.available()) return std::nullopt;
  std::set<uint32_t> conf;
  for (const auto& g : config().server_groups)
    for (const auto& sc : g.appliances) conf.insert(applianceKey(sc.address));
  size_t leaving = 0;
  for (const auto& [ip, le] : lifecycle_.entries()) leaving += le.removed;
  Refusal r;
  r.kind = Refusal::Kind::kLimitReached;
  r.ids = {need, registry_.available(), dp::kMaxApplianceIds, conf.size(), leaving, registry_.released()};
  r.message = "the change needs " + std::to_string(need) + " new appliance address(es) but only " +
              std::to_string(r.ids.free) + " of " + std::to_string(r.ids.limit) +
              " server ids are free: " + std::to_string(r.ids.configured) + " configured, " +
              std::to_string(leaving) + " removed but still carrying flows, " +
              std::to_string(r.ids.releasing) +
              " gone and waiting for their last flows to end; nothing was changed (retry once "
              "flows on removed appliances have ended)";
  return r;
}

}  // namespace gwlb::ctl
