#include "control/engine/lifecycle.h"

#include <algorithm>

namespace gwlb::ctl {
namespace {

constexpr uint64_t kNsPerS = 1'000'000'000ULL;

struct Placement {
  size_t group;
  const ApplianceConfig* appliance;
};

std::map<uint32_t, Placement> placements(const Config& c) {
  std::map<uint32_t, Placement> m;
  for (size_t gi = 0; gi < c.server_groups.size(); ++gi)
    for (const ApplianceConfig& s : c.server_groups[gi].appliances)
      m.emplace(applianceKey(s.address), Placement{gi, &s});
  return m;
}

// The listener a group serves in c: the implicit one ("default", over the
// first group) when c names none; "" when the group serves none.
std::string listenerOf(const Config& c, size_t gi) {
  if (c.listeners.empty()) return gi == 0 ? "default" : "";
  for (const ListenerConfig& l : c.listeners)
    for (const std::string& g : l.server_groups)
      if (g == c.server_groups[gi].name) return l.name;
  return "";
}

// What a leaving appliance remembers of its group (see Entry::group_config).
void rememberGroup(ApplianceLifecycle::Entry& e, const Config& c, size_t gi) {
  e.group = c.server_groups[gi].name;
  e.group_config = c.server_groups[gi];
  e.group_config.appliances.clear();
  e.listener = listenerOf(c, gi);
}

dp::MoveReason afterDrain(const ApplianceLifecycle::Entry& e) {
  return e.rebalance ? dp::MoveReason::kDrainTimeout : dp::MoveReason::kNone;
}

}  // namespace

void ApplianceLifecycle::applyConfig(const Config& prev, const Config& next, uint64_t now_ns,
                                  const std::string& why) {
  auto before = placements(prev);
  auto after = placements(next);
  for (auto& [ip, pl] : before) {
    if (after.count(ip)) continue;
    const ApplianceGroupConfig& g = prev.server_groups[pl.group];
    ++stats_.removals;
    auto it = entries_.find(ip);
    if (it != entries_.end()) {
      // An operator drain in progress (or over) becomes a removal; its timer runs on.
      it->second.removed = true;
      rememberGroup(it->second, prev, pl.group);
      it->second.why = why;
      continue;
    }
    Entry e;
    e.ip = ip;
    e.appliance = *pl.appliance;
    rememberGroup(e, prev, pl.group);
    e.removed = true;
    e.rebalance = g.failover_mode == FailoverMode::kRebalance;
    e.draining_enabled = g.connection_draining.enabled;
    e.since_ns = now_ns;
    e.why = why;
    if (e.draining_enabled) {
      e.phase = dp::AppliancePhase::kDraining;
      e.deadline_ns = now_ns + uint64_t(g.connection_draining.timeout_s) * kNsPerS;
      ++stats_.drains_started;
    } else {
      e.phase = dp::AppliancePhase::kDrained;
      e.move_reason = e.rebalance ? dp::MoveReason::kRemoved : dp::MoveReason::kNone;
    }
    entries_.emplace(ip, std::move(e));
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto a = after.find(it->first);
    if (a == after.end()) {
      ++it;
      continue;
    }
    if (it->second.removed) {
      // Configured again: active like any other appliance.
      it = entries_.erase(it);
      continue;
    }
    // An operator drain of an appliance still configured: follow its group's settings.
    const ApplianceGroupConfig& g = next.server_groups[a->second.group];
    Entry& e = it->second;
    e.appliance = *a->second.appliance;
    rememberGroup(e, next, a->second.group);
    e.rebalance = g.failover_mode == FailoverMode::kRebalance;
    if (e.phase == dp::AppliancePhase::kDrained) e.move_reason = afterDrain(e);
    ++it;
  }
}

std::string ApplianceLifecycle::drain(const Config& cfg, uint32_t ip,
                                   std::optional<uint32_t> timeout_s, uint64_t now_ns) {
  auto pl = placements(cfg);
  auto p = pl.find(ip);
  if (p == pl.end()) return "not a configured appliance";
  if (auto it = entries_.find(ip); it != entries_.end())
    return it->second.phase == dp::AppliancePhase::kDraining ? "already draining" : "already drained";
  const ApplianceGroupConfig& g = cfg.server_groups[p->second.group];
  Entry e;
  e.ip = ip;
  e.appliance = *p->second.appliance;
  rememberGroup(e, cfg, p->second.group);
  e.removed = false;
  e.rebalance = g.failover_mode == FailoverMode::kRebalance;
  e.draining_enabled = true;
  e.phase = dp::AppliancePhase::kDraining;
  e.since_ns = now_ns;
  e.deadline_ns = now_ns + uint64_t(timeout_s.value_or(g.connection_draining.timeout_s)) * kNsPerS;
  e.why = "drained by operator";
  entries_.emplace(ip, std::move(e));
  ++stats_.drains_started;
  return "";
}

std::string ApplianceLifecycle::undrain(uint32_t ip) {
  auto it = entries_.find(ip);
  if (it == entries_.end()) return "not draining or drained";
  if (it->second.removed) return "removed from the config; add it again instead";
  entries_.erase(it);
  return "";
}

void ApplianceLifecycle::flowsExpired(const std::vector<uint16_t>& ids,
                                   const std::vector<uint32_t>& id_to_ip) {
  if (entries_.empty()) return;
  for (uint16_t id : ids) {
    if (id >= id_to_ip.size()) continue;
    auto it = entries_.find(id_to_ip[id]);
    if (it != entries_.end() && it->second.phase == dp::AppliancePhase::kDraining)
      ++stats_.flows_drained;
  }
}

void ApplianceLifecycle::endDrain(Entry& e, uint64_t) {
  e.phase = dp::AppliancePhase::kDrained;
  e.move_reason = afterDrain(e);
}

bool ApplianceLifecycle::tick(uint64_t now_ns, const std::vector<uint32_t>* flows_by_id,
                           const std::vector<uint32_t>& id_to_ip) {
  if (entries_.empty()) return false;
  if (flows_by_id) {
    for (auto& [ip, e] : entries_) {
      e.flows = 0;
      e.counted = true;
    }
    for (size_t id = 0; id < id_to_ip.size() && id < flows_by_id->size(); ++id) {
      auto it = entries_.find(id_to_ip[id]);
      if (it != entries_.end()) it->second.flows = (*flows_by_id)[id];
    }
  }
  bool changed = false;
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    bool empty = e.counted && e.flows == 0;
    if (e.phase == dp::AppliancePhase::kDraining) {
      if (empty) {
        ++stats_.drains_emptied;
        endDrain(e, now_ns);
        changed = true;
      } else if (now_ns >= e.deadline_ns) {
        ++stats_.drains_timed_out;
        stats_.flows_drain_timed_out += e.flows;
        endDrain(e, now_ns);
        changed = true;
      }
    }
    if (e.removed && e.phase == dp::AppliancePhase::kDrained && empty) {
      ++stats_.forgotten;
      it = entries_.erase(it);
      changed = true;
      continue;
    }
    ++it;
  }
  return changed;
}

std::optional<uint64_t> ApplianceLifecycle::nextDeadline() const {
  std::optional<uint64_t> d;
  for (auto& [ip, e] : entries_)
    if (e.phase == dp::AppliancePhase::kDraining) d = std::min(d.value_or(e.deadline_ns), e.deadline_ns);
  return d;
}

}  // namespace gwlb::ctl
