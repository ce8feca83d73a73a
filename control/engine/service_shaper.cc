#include "control/engine/service_shaper.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gwlb::ctl {

namespace {
constexpr uint64_t kNs = 1'000'000'000ULL;

// In service by health alone: nullopt where health says neither (weight 0,
// draining), so that such a phase neither counts as a change nor hides one.
std::optional<bool> upByHealth(const HealthMap& health, uint32_t ip) {
  auto it = health.find(ip);
  if (it == health.end()) return true;  // unchecked
  if (it->second.state == HealthState::kUnused || it->second.state == HealthState::kDraining)
    return std::nullopt;
  return receivesNewFlows(it->second);
}

std::string fixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
}  // namespace

uint32_t slowStartSteps(uint32_t s) { return std::clamp<uint32_t>(s, 1, 10); }

std::optional<uint32_t> slowStartStep(uint64_t elapsed_ns, uint32_t s) {
  const uint64_t total = uint64_t(s) * kNs;
  if (elapsed_ns >= total) return std::nullopt;
  const uint32_t n = slowStartSteps(s);
  // elapsed < total (at most 3600 s), so k < n and the product fits.
  const uint32_t k = uint32_t(elapsed_ns * n / total);
  return std::max<uint32_t>(k, 1);
}

uint64_t settleNs(const HealthCheckConfig& hc) {
  return (2 * uint64_t(hc.interval_ms) + uint64_t(hc.timeout_ms)) * 1'000'000ULL;
}

DampeningParams dampeningParams(const DampeningConfig& c) {
  DampeningParams p;
  p.penalty = c.penalty;
  p.suppress = c.suppress;
  p.reuse = c.reuse;
  p.half_life_ns = uint64_t(c.half_life_s) * kNs;
  p.max_hold_ns = uint64_t(c.max_hold_s) * kNs;
  return p;
}

Shaping ServiceShaper::update(const Config& cfg, const HealthMap& health,
                              const ApplianceLifecycle& life, uint64_t now,
                              std::vector<std::string>* lines) {
  Shaping out;
  std::map<uint32_t, Seen> next;
  std::map<std::string, SettleSeen> next_groups;
  std::map<std::string, GroupCount> counts;                  // by group name, for the listeners
  std::map<std::string, std::vector<uint32_t>> group_failing;
  next_due_.reset();
  auto due = [&](uint64_t t) {
    if (t > now && (!next_due_ || t < *next_due_)) next_due_ = t;
  };
  auto say = [&](std::string s) {
    if (lines) lines->push_back(std::move(s));
  };
  for (const ApplianceGroupConfig& g : cfg.server_groups) {
    const bool damp = g.health_check.active() && g.health_check.dampening.enabled;
    const DampeningParams dp = dampeningParams(g.health_check.dampening);
    // The group's appliances that count for a whole-group outage (weight
    // above 0, not leaving, with a verdict): how many, and those failing.
    size_t counted = 0;
    std::vector<uint32_t> failing;
    for (const ApplianceConfig& sc : g.appliances) {
      const uint32_t ip = applianceKey(sc.address);
      const std::string name = sc.address.str();
      auto it = seen_.find(ip);
      const bool known = it != seen_.end();
      Seen s = known ? it->second : Seen{};
      const std::optional<bool> up = upByHealth(health, ip);
      if (up && sc.weight > 0 && life.find(ip) == nullptr) {
        ++counted;
        if (!*up) failing.push_back(ip);
      }
      // Flap dampening: each change into or out of service by health.
      if (!damp) {
        dampener_.forget(ip);
      } else if (up && s.up && *up != *s.up) {
        const bool was_held = dampener_.held(ip, now);
        if (dampener_.change(ip, dp, now)) {
          const FlapDampener::Record* r = dampener_.find(ip);
          say(name + " dampened: " + std::to_string(r->changes) + " state changes, penalty " +
              fixed(r->penalty, 0) + " above " + fixed(dp.suppress, 0) + "; held down for " +
              fixed(double(r->held_until - now) / double(kNs), 1) + " s");
        } else if (was_held) {
          const FlapDampener::Record* r = dampener_.find(ip);
          say(name + " dampened: changed again while held (penalty " + fixed(r->penalty, 0) +
              "); held down for " + fixed(double(r->held_until - now) / double(kNs), 1) + " s");
        }
      }
      s.up = up;
      const bool held = damp && dampener_.held(ip, now);
      if (s.held && !held)
        say(name + " hold-down over: penalty decayed to reuse " + fixed(dp.reuse, 0));
      s.held = held;
      if (held) {
        out.held.insert(ip);
        due(dampener_.find(ip)->held_until);
      }
      // Slow start: from the build that finds it in service after one that did not.
      const bool in_service =
          sc.weight > 0 && up.value_or(false) && !held && life.find(ip) == nullptr;
      if (!in_service || g.slow_start_s == 0) {
        s.ramp_since.reset();
      } else if (!s.in_service && started_ && !s.ramp_since) {
        s.ramp_since = now;
        say(name + " slow start: 1/" + std::to_string(slowStartSteps(g.slow_start_s)) +
            " of its share of new flows, full after " + std::to_string(g.slow_start_s) + " s");
      }
      if (s.ramp_since) {
        const uint64_t since = *s.ramp_since;
        if (auto k = slowStartStep(now - since, g.slow_start_s)) {
          out.ramp[ip] = *k;
          // The next step's start: the first elapsed time whose step is k + 1
          // (or the end of the ramp).
          const uint32_t n = slowStartSteps(g.slow_start_s);
          const uint64_t total = uint64_t(g.slow_start_s) * kNs;
          const uint64_t at = *k + 1 >= n ? total : ((*k + 1) * total + n - 1) / n;
          due(since + at);
        } else {
          s.ramp_since.reset();
        }
      }
      s.in_service = in_service;
      next[ip] = s;
    }
    // Settling after a whole-group outage: rebalance moves and resets on
    // unhealthy are what it holds.
    const bool sheds = g.health_check.active() &&
                       (g.failover_mode == FailoverMode::kRebalance || g.send_tcp_reset.on_unhealthy);
    SettleSeen& gs = next_groups[g.name];
    if (auto it = groups_.find(g.name); it != groups_.end()) gs = it->second;
    if (settleStep("group", g.name, sheds, counted, failing.size(), settleNs(g.health_check), now, gs, due, say)) {
      out.settling.insert(failing.begin(), failing.end());
      out.settling_groups.insert(g.name);
    }
    group_failing[g.name] = std::move(failing);
    counts[g.name] = {counted, nullptr, settleNs(g.health_check), sheds};
  }
  for (auto& [name, c] : counts) c.failing = &group_failing[name];
  group_listener_.clear();
  settleListeners(cfg, counts, now, out, due, say);
  for (const auto& [ip, s] : seen_)
    if (!next.count(ip)) dampener_.forget(ip);
  seen_ = std::move(next);
  groups_ = std::move(next_groups);
  started_ = true;
  return out;
}

// Settling after a whole-group outage (the header says why), for one group
// or one listener's groups together (`kind` "group" or "listener"): from the
// build that finds one of their counted appliances passing again after one
// that found all failing, for `settle_ns`; it ends early when none is
// failing any more, and starts over if all fail again. True while settling.
template <class Due, class Say>
bool ServiceShaper::settleStep(const char* kind, const std::string& name, bool sheds, size_t counted,
                               size_t failing, uint64_t settle_ns, uint64_t now, SettleSeen& gs,
                               Due& due, Say& say) {
  const bool all_down = sheds && counted > 0 && failing == counted;
  const std::string back = std::to_string(counted - failing) + " of " + std::to_string(counted);
  const std::string who = std::string(kind) + " " + name;
  if (!sheds || all_down || failing == 0) {
    gs.settle_until.reset();
  } else if (gs.all_down) {
    gs.settle_until = now + settle_ns;
    say(who + ": " + back + " appliances pass again after all failed; the " + std::to_string(failing) +
        " still failing keep their flows for " + fixed(double(settle_ns) / double(kNs), 1) + " s while the " +
        kind + " settles");
  } else if (gs.settle_until && now >= *gs.settle_until) {
    gs.settle_until.reset();
    say(who + " settled: " + back + " appliances in service; the " + std::to_string(failing) +
        " still failing shed their flows now");
  }
  gs.all_down = all_down;
  if (gs.settle_until) due(*gs.settle_until);
  return gs.settle_until.has_value();
}

// Listeners of two or more groups (regions): a fault on the gateway's side
// fails every region at once, and the first region back would take the
// others' flows by region failover (rebalance groups) as the first
// appliance back would take its group's. While the listener settles, its
// groups' failing appliances keep their flows and its groups shed none by
// region (Shaping::settling_groups).
template <class Due, class Say>
void ServiceShaper::settleListeners(const Config& cfg, const std::map<std::string, GroupCount>& counts,
                                    uint64_t now, Shaping& out, Due& due, Say& say) {
  std::map<std::string, SettleSeen> next;
  for (const ListenerConfig& l : cfg.listeners) {
    if (l.server_groups.size() < 2) continue;  // its group's own settling covers it
    SettleSeen ls;
    if (auto it = listeners_.find(l.name); it != listeners_.end()) ls = it->second;
    size_t counted = 0, failing = 0;
    uint64_t settle_ns = 0;
    bool sheds = false;
    for (const std::string& gname : l.server_groups) {
      auto c = counts.find(gname);
      if (c == counts.end()) continue;
      counted += c->second.counted;
      failing += c->second.failing->size();
      settle_ns = std::max(settle_ns, c->second.settle_ns);
      sheds = sheds || c->second.sheds;
    }
    if (settleStep("listener", l.name, sheds, counted, failing, settle_ns, now, ls, due, say))
      for (const std::string& gname : l.server_groups) {
        out.settling_groups.insert(gname);
        auto c = counts.find(gname);
        if (c != counts.end()) out.settling.insert(c->second.failing->begin(), c->second.failing->end());
        group_listener_[gname] = l.name;
      }
    next[l.name] = ls;
  }
  listeners_ = std::move(next);
}

std::optional<uint64_t> ServiceShaper::settlingUntil(const std::string& group) const {
  std::optional<uint64_t> until;
  if (auto it = groups_.find(group); it != groups_.end()) until = it->second.settle_until;
  if (auto l = group_listener_.find(group); l != group_listener_.end())
    if (auto it = listeners_.find(l->second); it != listeners_.end() && it->second.settle_until)
      until = std::max(until.value_or(0), *it->second.settle_until);
  return until;
}

std::optional<uint64_t> ServiceShaper::nextDue() const { return next_due_; }

std::optional<uint64_t> ServiceShaper::rampSince(uint32_t ip) const {
  auto it = seen_.find(ip);
  return it == seen_.end() ? std::nullopt : it->second.ramp_since;
}

}  // namespace gwlb::ctl
