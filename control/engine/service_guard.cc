// Guard rail for operator changes that leave a group without service. See service_guard.h.
#include "control/engine/service_guard.h"

#include <algorithm>

#include "control/config/config.h"

namespace gwlb::ctl {
namespace {

// How the snapshot builder will see one appliance of `g` in `cfg`.
struct Judged {
  bool in_service = false;
  std::string why_not;  // when not in service
};

bool hasVerdict(const ApplianceHealth& h) {
  return h.state == HealthState::kHealthy || h.state == HealthState::kUnhealthy;
}

// `fresh`: judge appliances of `after` as the health checker will start them.
Judged judge(const ApplianceGroupConfig& g, const ApplianceConfig& sc, const ApplianceLifecycle& life,
             const HealthMap& health, bool fresh) {
  const uint32_t ip = applianceKey(sc.address);
  if (sc.weight == 0) return {false, "weight 0"};
  if (const ApplianceLifecycle::Entry* le = life.find(ip))
    return {false, le->phase == dp::AppliancePhase::kDraining ? "draining" : "drained"};
  if (fresh && !g.health_check.active()) return {true, ""};
  ApplianceHealth h(HealthState::kDisabled);
  auto it = health.find(ip);
  if (!fresh) {
    if (it != health.end()) h = it->second;
  } else if (it != health.end() && (hasVerdict(it->second) ||
                                    it->second.state == HealthState::kInitializing)) {
    h = it->second;  // probed already: keeps its state
  } else {
    // Starts probing now (new, weight raised, checks enabled): initializing,
    // provisional only when its group has no verdict (HealthChecker::reconcile).
    bool starting = std::none_of(g.appliances.begin(), g.appliances.end(), [&](const ApplianceConfig& o) {
      auto oh = health.find(applianceKey(o.address));
      return oh != health.end() && hasVerdict(oh->second);
    });
    h = ApplianceHealth(HealthState::kInitializing, starting);
  }
  if (receivesNewFlows(h)) return {true, ""};
  return {false, toString(h.state)};
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

const ListenerConfig* listenerOf(const Config& cfg, const std::string& group) {
  for (const ListenerConfig& l : cfg.listeners)
    if (std::find(l.server_groups.begin(), l.server_groups.end(), group) != l.server_groups.end())
      return &l;
  return nullptr;
}

}  // namespace

std::vector<ServiceLoss> serviceLosses(const Config& before, const ApplianceLifecycle& life_before,
                                       const Config& after, const ApplianceLifecycle& life_after,
                                       const HealthMap& health) {
  std::vector<ServiceLoss> out;
  for (const ApplianceGroupConfig& ga : after.server_groups) {
    const ApplianceGroupConfig* gb = nullptr;
    for (const ApplianceGroupConfig& g : before.server_groups)
      if (g.name == ga.name) gb = &g;
    if (!gb) continue;  // a new group: nothing of it was in service
    std::vector<std::string> was;
    for (const ApplianceConfig& sc : gb->appliances)
      if (judge(*gb, sc, life_before, health, false).in_service) was.push_back(sc.address.str());
    if (was.empty()) continue;  // no service to lose (already none: not this change's doing)
    ServiceLoss loss;
    loss.group = ga.name;
    bool any = false;
    std::vector<std::string> left_names;
    for (const ApplianceConfig& sc : ga.appliances) {
      Judged j = judge(ga, sc, life_after, health, true);
      if (j.in_service) {
        any = true;
        break;
      }
      if (j.why_not != "weight 0" && j.why_not != "draining" && j.why_not != "drained") {
        loss.left.emplace_back(sc.address.str(), j.why_not);
        left_names.push_back(sc.address.str());
      }
    }
    if (any) continue;
    loss.taken = was;
    if (ga.when_all_unhealthy == WhenAllUnhealthy::kDrop)
      loss.new_flows = "new flows are dropped (when_all_unhealthy: drop; drop_no_healthy_server)";
    else if (left_names.empty())
      loss.new_flows = "new flows are dropped: no appliance left to send them to "
                       "(drop_no_healthy_server)";
    else
      loss.new_flows = "new flows go to " + joined(left_names) +
                       " anyway, although not in service (when_all_unhealthy: fail_open)";
    if (const ListenerConfig* l = listenerOf(after, ga.name); l && l->server_groups.size() > 1)
      loss.new_flows += ", unless listener '" + l->name + "' fails over to another region";
    loss.existing_flows =
        "flows on " + joined(was) +
        (ga.failover_mode == FailoverMode::kRebalance
             ? " stay there until an appliance is in service again (never moved to one that "
               "is not)"
             : " stay there (no_rebalance)");
    out.push_back(std::move(loss));
  }
  return out;
}

std::string describeLosses(const std::vector<ServiceLoss>& losses, bool done) {
  std::string s;
  for (const ServiceLoss& l : losses) {
    if (!s.empty()) s += "; ";
    s += "server group '" + l.group + (done ? "' has" : "' would have") +
         " no appliance in service (left: ";
    if (l.left.empty()) {
      s += "none";
    } else {
      for (size_t i = 0; i < l.left.size(); ++i)
        s += (i ? ", " : "") + l.left[i].first + " " + l.left[i].second;
    }
    s += std::string(done ? "): " : "), and then: ") + l.new_flows + "; " + l.existing_flows;
  }
  return s;
}

std::vector<ServiceLoss> configChangeLosses(const Config& cur, const ApplianceLifecycle& life,
                                            const HealthMap& health, const Config& next,
                                            uint64_t now_ns, const std::string& why) {
  std::vector<ConfigError> errors;
  if (!validateConfig(next, errors)) return {};
  ApplianceLifecycle after = life;
  after.applyConfig(cur, next, now_ns, why);
  return serviceLosses(cur, life, next, after, health);
}

std::vector<ServiceLoss> configChangeLosses(const Config& cur, const ApplianceLifecycle& life,
                                            const HealthMap& health, const ValidConfig& valid,
                                            uint64_t now_ns, const std::string& why) {
  const Config& next = valid.get();
  ApplianceLifecycle after = life;
  after.applyConfig(cur, next, now_ns, why);
  return serviceLosses(cur, life, next, after, health);
}

std::vector<ServiceLoss> drainLosses(const Config& cfg, const ApplianceLifecycle& life,
                                     const HealthMap& health, uint32_t ip,
                                     std::optional<uint32_t> timeout_s, uint64_t now_ns,
                                     std::string& err) {
  // The drain tried on a copy: the guard judges what it would leave.
  ApplianceLifecycle after = life;
  err = after.drain(cfg, ip, timeout_s, now_ns);
  if (!err.empty()) return {};
  return serviceLosses(cfg, life, cfg, after, health);
}

std::string refusalText(const std::string& what, const std::vector<ServiceLoss>& losses) {
  return what + " refused: " + describeLosses(losses);
}

}  // namespace gwlb::ctl
