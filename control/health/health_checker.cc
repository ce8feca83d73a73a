#include "control/health/health_checker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <random>

namespace gwlb::ctl {

struct HealthChecker::Target {
  IpAddr address;
  std::string group;
  HealthTracker tracker;
  probe::ProbeSpec spec;
  std::shared_ptr<const probe::PreparedProbe> prepared;  // spec, made ready for its probes
  uint32_t ip = 0;          // its key in targets_
  uint32_t slot = 0;        // its index in slots_, and its key on the wheel
  uint64_t due_seq = 0;     // its latest schedule on the wheel: older entries are stale
  uint64_t epoch = 0;       // bumps on reconfigure: stale results are ignored
  bool in_flight = false;
  bool jitter = true;
  // Forwarding check: this round's probe, and the two halves of the round
  // until both are known (the configured check's result, the probe's verdict).
  bool forwarding = false;
  boost::asio::steady_timer fwd_timer;
  uint32_t fwd_token = 0;
  std::chrono::steady_clock::time_point fwd_sent;
  std::chrono::microseconds fwd_elapsed{0};
  std::optional<bool> fwd_ok;
  std::optional<probe::ProbeResult> check_result;
  std::function<void(const probe::ProbeResult&)> deliver;
  ForwardingCounts fwd_counts;  // this appliance's share of the checker's
  ConnectionCounts conn_counts;
  Target(const IpAddr& a, std::string g, HealthTracker t, probe::ProbeSpec s,
         boost::asio::io_context& io)
      : address(a), group(std::move(g)), tracker(std::move(t)), spec(std::move(s)),
        prepared(probe::prepareProbe(spec)), fwd_timer(io) {}
};

namespace {

// An appliance that turns unhealthy is a warning (it loses its new flows);
// every other health change is information (docs/observability.md "Logs").
spdlog::level::level_enum transitionLevel(HealthState to) {
  return to == HealthState::kUnhealthy ? spdlog::level::warn : spdlog::level::info;
}

ApplianceHealth healthOf(const HealthTracker& t) { return ApplianceHealth(t.state(), t.provisional()); }

bool operator!=(const ApplianceHealth& a, const ApplianceHealth& b) {
  return a.state != b.state || a.provisional != b.provisional;
}

HealthParams paramsOf(const HealthCheckConfig& h) {
  HealthParams p;
  p.interval_ms = h.interval_ms;
  p.timeout_ms = h.timeout_ms;
  p.healthy_threshold = h.healthy_threshold;
  p.unhealthy_threshold = h.unhealthy_threshold;
  return p;
}

bool sameSpec(const probe::ProbeSpec& a, const probe::ProbeSpec& b) {
  return a.protocol == b.protocol && a.port == b.port && a.path == b.path &&
         a.domain == b.domain && a.timeout == b.timeout && a.source == b.source && a.device == b.device &&
         a.verify_tls == b.verify_tls && a.ca_file == b.ca_file && a.keep_alive == b.keep_alive &&
         a.codes.size() == b.codes.size() &&
         std::equal(a.codes.begin(), a.codes.end(), b.codes.begin(),
                    [](auto& x, auto& y) { return x.lo == y.lo && x.hi == y.hi; });
}

}  // namespace

HealthChecker::HealthChecker(boost::asio::io_context& io, Reporter report)
    : io_(io),
      report_(std::move(report)),
      tls_(boost::asio::ssl::context::tls_client),
      epoch_(std::chrono::steady_clock::now()),
      epoch_unix_(std::chrono::duration<double>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()),
      wheel_timer_(io),
      // Tokens start anywhere: a probe an earlier gwlbd sent, back late,
      // should not match one of ours.
      next_token_(uint32_t(std::random_device{}())) {}

HealthChecker::~HealthChecker() {
  // A round waiting for its forwarding half holds, in `deliver`, a handler
  // that owns its Target: drop it, or the two keep each other alive.
  // A probe still in flight calls back later: its epoch no longer matches.
  wheel_timer_.cancel();
  kept_->clear();  // their sockets close while io_ is still there
  for (auto& [ip, t] : targets_) ++t->epoch, t->fwd_timer.cancel(), t->deliver = nullptr;
}

uint64_t HealthChecker::nowMs() const {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - epoch_)
                      .count());
}

probe::ProbeSpec HealthChecker::specFor(const HealthCheckConfig& h, const IpAddr& address,
                                        const ProbePath& path) {
  probe::ProbeSpec s;
  s.protocol = h.protocol == HealthProtocol::kTcp    ? probe::Protocol::kTcp
               : h.protocol == HealthProtocol::kHttp ? probe::Protocol::kHttp
                                                     : probe::Protocol::kHttps;
  s.address = address;
  s.port = h.port;
  s.path = h.path;
  s.domain = h.domain;
  std::string err;
  std::vector<probe::CodeRange> codes;
  if (probe::parseHttpCodes(h.http_codes, codes, err)) s.codes = codes;
  s.timeout = std::chrono::milliseconds(h.timeout_ms);
  s.source = path.sourceFor(address);  // of the appliance's family
  s.device = path.device;
  s.verify_tls = h.verify;
  s.ca_file = h.ca_file;
  s.keep_alive = h.keep_alive;
  return s;
}

std::vector<HealthReport> HealthChecker::reconcile(const Config& cfg) {
  uint64_t now = nowMs();
  std::map<uint32_t, bool> seen;
  std::vector<HealthReport> reports;
  for (const auto& g : cfg.server_groups) {
    const HealthCheckConfig& h = g.health_check;
    const ProbePath path = probePathOf(cfg, h);
    // A group none of whose appliances has a verdict yet is starting: its
    // initializing appliances serve provisionally (ApplianceHealth).
    const bool starting = std::none_of(g.appliances.begin(), g.appliances.end(), [&](const ApplianceConfig& sc) {
      auto it = targets_.find(applianceKey(sc.address));
      return it != targets_.end() && it->second->tracker.hasVerdict();
    });
    for (const auto& sc : g.appliances) {
      uint32_t ip = applianceKey(sc.address);
      seen[ip] = true;
      HealthParams p = paramsOf(h);
      probe::ProbeSpec spec = specFor(h, sc.address, path);
      auto it = targets_.find(ip);
      if (it == targets_.end()) {
        auto t = std::make_shared<Target>(sc.address, g.name,
                                          HealthTracker(p, h.active(), sc.weight, now), spec, io_);
        t->jitter = h.jitter;
        t->forwarding = h.forwardingActive();
        t->tracker.setProvisional(starting);
        t->ip = ip;
        if (free_slots_.empty()) {
          t->slot = uint32_t(slots_.size());
          slots_.push_back(t);
        } else {
          t->slot = free_slots_.back();
          free_slots_.pop_back();
          slots_[t->slot] = t;
        }
        targets_[ip] = t;
        reports.push_back({ip, healthOf(t->tracker), std::nullopt, false});
        if (t->tracker.probed()) schedule(*t, firstProbeDelayMs(p, ip, h.jitter));
        continue;
      }
      Target& t = *it->second;
      const ApplianceHealth before = healthOf(t.tracker);
      bool was_probed = t.tracker.probed();
      bool spec_changed = !sameSpec(t.spec, spec) || t.forwarding != h.forwardingActive();
      t.forwarding = h.forwardingActive();
      if (spec_changed || !(t.spec.address == spec.address)) {
        kept_->drop(*t.prepared);  // a kept connection of the old settings
        t.prepared = probe::prepareProbe(spec);
      }
      t.spec = spec;
      t.group = g.name;
      auto tr = t.tracker.reconfigure(p, h.active(), sc.weight, now);
      if (tr && tr->to == HealthState::kInitializing) t.tracker.setProvisional(starting);
      if (tr)
        spdlog::log(transitionLevel(tr->to), "health: appliance {} ({}): {} -> {} ({})", sc.address.str(),
                    g.name, toString(tr->from), toString(tr->to), tr->reason);
      if (tr || healthOf(t.tracker) != before) reports.push_back({ip, healthOf(t.tracker), tr, false});
      if (spec_changed || (!was_probed && t.tracker.probed())) {
        ++t.epoch;  // a probe in flight with the old settings no longer counts
        unschedule(t);
        t.in_flight = false;
        if (t.tracker.probed()) schedule(t, firstProbeDelayMs(p, ip, h.jitter));
      } else if (!t.tracker.probed()) {
        ++t.epoch;
        unschedule(t);
        kept_->drop(*t.prepared);
        // A probe still in flight keeps its connection only while the
        // checker holds the spec it runs with: a new one lets go of that.
        if (was_probed) t.prepared = probe::prepareProbe(spec);
      }
    }
  }
  for (auto it = targets_.begin(); it != targets_.end();) {
    if (!seen.count(it->first)) {
      unschedule(*it->second);
      slots_[it->second->slot].reset();
      free_slots_.push_back(it->second->slot);
      it->second->fwd_timer.cancel();
      it->second->deliver = nullptr;  // its handler owns the Target (see ~HealthChecker)
      ++it->second->epoch;
      kept_->drop(*it->second->prepared);
      reports.push_back({it->first, healthOf(it->second->tracker), std::nullopt, true});
      it = targets_.erase(it);
    } else {
      ++it;
    }
  }
  return reports;
}

void HealthChecker::schedule(Target& t, uint64_t delay_ms) {
  t.due_seq = ++next_seq_;
  const uint64_t due = nowMs() + delay_ms;
  wheel_.add(due, t.slot, t.due_seq);
  // The timer already waits for something due no later: it stays, and its
  // wake-up (onWheel) arms for what comes next. Only an earlier due moves it
  // (no search of the wheel for each probe scheduled).
  if (!wheel_armed_ || due < *wheel_armed_) armAt(due);
}

// Its entry on the wheel stays, and is skipped when it comes due.
void HealthChecker::unschedule(Target& t) { t.due_seq = ++next_seq_; }

// One timer for every appliance: set for the wheel's next slot with
// anything in it, unless it already waits for an earlier time.
void HealthChecker::armWheel() {
  const std::optional<uint64_t> next = wheel_.nextDue();
  if (!next || (wheel_armed_ && *wheel_armed_ <= *next)) return;
  armAt(*next);
}

void HealthChecker::armAt(uint64_t due_ms) {
  wheel_armed_ = due_ms;
  // Re-arming cancels the earlier wait: its handler sees operation_aborted
  // and touches nothing (the checker may be gone by then).
  wheel_timer_.expires_at(epoch_ + std::chrono::milliseconds(due_ms));
  wheel_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) onWheel();
  });
}

// Starts every probe that is due. One that throws does not keep the others
// from starting: the first exception goes to the loop after all have run.
void HealthChecker::onWheel() {
  wheel_armed_.reset();
  due_.clear();
  wheel_.expire(nowMs(), due_);
  std::exception_ptr first;
  for (const ProbeWheel::Entry& e : due_) {
    // Removed (its slot empty or another's) or rescheduled: seqs are unique.
    if (e.key >= slots_.size() || !slots_[e.key] || slots_[e.key]->due_seq != e.seq) continue;
    try {
      const std::shared_ptr<Target> t = slots_[e.key];  // held whatever the start does to slots_
      startProbe(t);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  armWheel();
  if (first) std::rethrow_exception(first);
}

void HealthChecker::startProbe(const std::shared_ptr<Target>& t) {
  if (t->in_flight || !t->tracker.probed()) return;
  t->in_flight = true;
  const uint64_t epoch = t->epoch;
  const uint32_t ip = t->ip;
  try {
    if (t->forwarding) startForwarding(t, ip, epoch);
    probe::startProbe(
      io_, t->prepared,
      joinForwarding(t, epoch, [this, t, ip, epoch](const probe::ProbeResult& r) {
        if (t->epoch != epoch) return;  // reconfigured or removed meanwhile
        judge(t, ip, r);
      }),
      &tls_, kept_);
  } catch (...) {
    // A probe that could not even start: try again an interval later, then
    // let the control loop log and count the exception.
    t->in_flight = false;
    schedule(*t, t->tracker.params().interval_ms);
    throw;
  }
}

// A probe's result into the appliance's tracker; a change of its health is
// logged and reported.
void HealthChecker::judge(const std::shared_ptr<Target>& t, uint32_t ip, const probe::ProbeResult& r) {
  t->in_flight = false;
  if (r.handshake) {
    ++(r.resumed ? tls_counts_.resumed : tls_counts_.full);
    ++(r.resumed ? t->conn_counts.tls_resumed : t->conn_counts.tls_full);
  }
  if (r.reused) ++t->conn_counts.kept;
  // The next check is armed first: whatever throws below (a log line, the
  // report's snapshot build) is the control loop's to count, and this
  // appliance's checks go on.
  schedule(*t, t->tracker.params().interval_ms);
  ProbeOutcome o;
  o.ok = r.ok;
  o.reason = r.ok ? "ok" : (r.detail.empty() ? r.reason : r.reason + ": " + r.detail);
  o.response_ms = uint64_t(r.elapsed.count() / 1000);
  o.response_us = uint64_t(r.elapsed.count());
  const ApplianceHealth before = healthOf(t->tracker);
  auto tr = t->tracker.onResult(o, nowMs());
  if (tr) {
    std::string window = transitionWindowText(t->tracker.params(), tr->to, o.response_ms);
    spdlog::log(transitionLevel(tr->to), "health: appliance {} ({}): {} -> {} ({}{}{})",
                t->address.str(), t->group, toString(tr->from), toString(tr->to), tr->reason,
                window.empty() ? "" : "; ", window);
  } else if (receivesNewFlows(before) && !t->tracker.receivesNewFlows()) {
    spdlog::warn("health: appliance {} ({}): initializing, first check failed ({}): no new "
                 "flows until it passes {} checks in a row",
                 t->address.str(), t->group, o.reason, t->tracker.params().healthy_threshold);
  }
  if ((tr || healthOf(t->tracker) != before) && report_)
    report_(HealthReport{ip, healthOf(t->tracker), std::move(tr), false});
}

// The probe of this round: sent now, judged at the return or the timeout.
void HealthChecker::startForwarding(const std::shared_ptr<Target>& t, uint32_t ip, uint64_t epoch) {
  t->fwd_ok.reset();
  t->check_result.reset();
  t->deliver = nullptr;
  // A round cut short (a reconfigure) leaves its token: re-arming the timer
  // below cancels the wait that would have dropped it.
  if (t->fwd_token) fwd_outstanding_.erase(t->fwd_token);
  uint32_t token = next_token_++;
  if (token == 0) token = next_token_++;
  t->fwd_token = token;
  t->fwd_sent = std::chrono::steady_clock::now();
  fwd_outstanding_[token] = ip;
  if (send_forwarding_ && send_forwarding_(ip, token)) ++fwd_counts_.sent, ++t->fwd_counts.sent;
  else ++fwd_counts_.unsent, ++t->fwd_counts.unsent;
  const auto timeout = std::chrono::milliseconds(t->tracker.params().timeout_ms);
  t->fwd_timer.expires_after(timeout);
  t->fwd_timer.async_wait([this, t, epoch, token, timeout](const boost::system::error_code& ec) {
    if (ec) return;  // returned in time (or the checker is going)
    fwd_outstanding_.erase(token);
    // (A return handled just after the timer fired has decided already.)
    if (t->epoch != epoch || t->fwd_token != token || t->fwd_ok) return;
    ++fwd_counts_.timed_out;
    ++t->fwd_counts.timed_out;
    t->fwd_ok = false;
    t->fwd_elapsed = timeout;
    deliverRound(t);
  });
}

// With forwarding on, the configured check's result waits for the probe's
// verdict; the round's result is the two together.
HealthChecker::ResultHandler HealthChecker::joinForwarding(const std::shared_ptr<Target>& t, uint64_t epoch,
                                                           ResultHandler done) {
  if (!t->forwarding) return done;
  t->deliver = std::move(done);
  return [this, t, epoch](const probe::ProbeResult& r) {
    if (t->epoch != epoch) return;
    t->check_result = r;
    deliverRound(t);
  };
}

// Once both halves are in: the configured check's failure comes first (its
// reason says more), then the forwarding verdict.
void HealthChecker::deliverRound(const std::shared_ptr<Target>& t) {
  if (!t->check_result || !t->fwd_ok || !t->deliver) return;
  probe::ProbeResult r = std::move(*t->check_result);
  if (r.ok && !*t->fwd_ok) {
    r.ok = false;
    r.reason = "forwarding_timeout";
    r.detail.clear();
  }
  r.elapsed = std::max(r.elapsed, t->fwd_elapsed);
  ResultHandler d = std::move(t->deliver);
  t->deliver = nullptr;
  t->check_result.reset();
  t->fwd_ok.reset();
  d(r);
}

void HealthChecker::forwardingReturned(uint32_t appliance, uint32_t token) {
  auto it = fwd_outstanding_.find(token);
  if (it == fwd_outstanding_.end()) {
    ++fwd_counts_.late;  // its check timed out already (or it is no probe of ours)
    return;
  }
  if (it->second != appliance) {
    ++fwd_counts_.wrong_appliance;  // not the appliance it was sent to: proves nothing
    return;
  }
  fwd_outstanding_.erase(it);
  auto tt = targets_.find(appliance);
  if (tt == targets_.end() || tt->second->fwd_token != token || tt->second->fwd_ok) {
    ++fwd_counts_.late;
    return;
  }
  std::shared_ptr<Target> t = tt->second;
  ++fwd_counts_.returned;
  ++t->fwd_counts.returned;
  t->fwd_timer.cancel();
  t->fwd_ok = true;
  t->fwd_elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - t->fwd_sent);
  deliverRound(t);
}

bool HealthChecker::eject(uint32_t ip, const std::string& reason, uint64_t out_ms) {
  auto it = targets_.find(ip);
  if (it == targets_.end()) return false;
  Target& t = *it->second;
  auto tr = t.tracker.eject(reason, nowMs(), out_ms);
  if (!tr) return false;
  spdlog::warn("health: appliance {} ({}): {} -> {} ({}); back after {:.1f} s and {} passed checks",
               t.address.str(), t.group, toString(tr->from), toString(tr->to), tr->reason,
               double(out_ms) / 1000.0, t.tracker.params().healthy_threshold);
  if (report_) report_(HealthReport{ip, healthOf(t.tracker), std::move(tr), false});
  return true;
}

HealthMap HealthChecker::states() const {
  // The builder applies receivesNewFlows(ApplianceHealth): healthy, disabled,
  // or initializing in provisional service (a starting group).
  HealthMap out;
  for (auto& [ip, t] : targets_) out[ip] = ApplianceHealth(t->tracker.state(), t->tracker.provisional());
  return out;
}

const HealthChecker::ForwardingCounts* HealthChecker::forwardingCounts(uint32_t ip) const {
  auto it = targets_.find(ip);
  return it == targets_.end() ? nullptr : &it->second->fwd_counts;
}

const HealthChecker::ConnectionCounts* HealthChecker::connectionCounts(uint32_t ip) const {
  auto it = targets_.find(ip);
  return it == targets_.end() ? nullptr : &it->second->conn_counts;
}

const HealthTracker* HealthChecker::tracker(uint32_t ip) const {
  auto it = targets_.find(ip);
  return it == targets_.end() ? nullptr : &it->second->tracker;
}

nlohmann::json HealthChecker::historyJson(uint32_t ip) const {
  nlohmann::json a = nlohmann::json::array();
  const HealthTracker* t = tracker(ip);
  if (!t) return a;
  uint64_t now = nowMs();
  for (const HealthEvent& e : t->history()) {
    double ago = double(now - std::min(now, e.at_ms)) / 1000.0;
    if (e.is_transition)
      a.push_back({{"ago_s", ago}, {"transition", {{"from", toString(e.from)}, {"to", toString(e.to)}}},
                   {"reason", e.reason}});
    else
      a.push_back({{"ago_s", ago}, {"ok", e.ok}, {"reason", e.reason}, {"response_ms", e.response_ms}});
  }
  return a;
}

}  // namespace gwlb::ctl
