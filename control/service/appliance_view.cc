// What the control thread keeps per appliance beside the engine: its traffic
// (the workers' counters summed, from zero for each new holder of a server
// id), its status with the reason and since when, set on every snapshot, and
// the one state the API, /metrics and telemetry show for it (serverState).
#include <spdlog/spdlog.h>

#include "control/daemon/daemon.h"

namespace gwlb::ctl {

void Daemon::idsFreed(const std::vector<uint16_t>& freed) {
  if (traffic_base_.size() < dp::kMaxServerIds) traffic_base_.resize(dp::kMaxServerIds);
  for (uint16_t id : freed) {
    traffic_base_[id] = {};
    ServerTraffic& b = traffic_base_[id];
    for (const auto& st : states_) {
      b.sent_packets += st->sentPackets(id);
      b.sent_bytes += st->sentBytes(id);
      b.returned_packets += st->returnedPackets(id);
      b.returned_bytes += st->returnedBytes(id);
    }
  }
  spdlog::debug("server ids: {} reclaimed ({} held, {} free)", freed.size(), registry().held(),
                registry().available());
}

ServerTraffic Daemon::trafficOf(uint16_t id) const {
  ServerTraffic t;
  if (id >= dp::kMaxServerIds) return t;
  for (const auto& st : states_) {
    t.sent_packets += st->sentPackets(id);
    t.sent_bytes += st->sentBytes(id);
    t.returned_packets += st->returnedPackets(id);
    t.returned_bytes += st->returnedBytes(id);
  }
  if (id < traffic_base_.size()) {
    const ServerTraffic& b = traffic_base_[id];
    t.sent_packets -= b.sent_packets, t.sent_bytes -= b.sent_bytes;
    t.returned_packets -= b.returned_packets, t.returned_bytes -= b.returned_bytes;
  }
  return t;
}

void Daemon::sentTo(uint16_t id, uint64_t& packets, uint64_t& bytes) const {
  ServerTraffic t = trafficOf(id);
  packets = t.sent_packets;
  bytes = t.sent_bytes;
}

void Daemon::updateServerStatus(const dp::Snapshot& s) {
  double now = unixNow();
  std::map<uint32_t, ServerStatus> next;
  for (const auto& sv : s.servers) {
    if (!sv.in_use) continue;
    ServerStatus st;
    const HealthTracker* ht = health_ ? health_->tracker(sv.ip) : nullptr;
    if (sv.weight == 0) {
      st = {"idle", "weight 0: keeps its flows, receives no new ones", now};
    } else if (ht && ht->state() == HealthState::kUnhealthy && ht->ejected()) {
      std::string why;
      for (auto it = ht->history().rbegin(); it != ht->history().rend(); ++it)
        if (it->is_transition) {
          why = it->reason;
          break;
        }
      st = {"unhealthy", why + " (passive detection): no new flows until it passes " +
                             std::to_string(ht->params().healthy_threshold) + " checks in a row", now};
    } else if (ht && ht->state() == HealthState::kUnhealthy) {
      std::string last;
      for (auto it = ht->history().rbegin(); it != ht->history().rend(); ++it)
        if (!it->is_transition) {
          last = it->reason;
          break;
        }
      st = {"unhealthy", "failed health checks (last: " + last + "): no new flows", now};
    } else if (ht && ht->state() == HealthState::kInitializing) {
      st = {"initializing", ht->provisional()
                                ? "health checks started, no verdict yet: serves new flows until "
                                  "its first failed check (group starting)"
                                : "health checks started, no verdict yet: no new flows",
            now};
    } else if (engine_->shaping().held.count(sv.ip)) {
      st = {"dampened", dampenedReason(sv.ip), now};
    } else if (!sv.mac_known) {
      st = {"unresolved", "no MAC address yet: ARP pending on the underlay", now};
    } else {
      st = {"active", "in the Maglev table", now};
    }
    auto it = server_status_.find(sv.ip);
    if (it != server_status_.end() && it->second.state == st.state) st.since = it->second.since;
    else if (it != server_status_.end())
      spdlog::info("appliance {}: {} -> {} ({})", IpAddr::v4(sv.ip).str(), it->second.state,
                   st.state, st.reason);
    next[sv.ip] = st;
  }
  server_status_ = std::move(next);
}

const HealthTracker* Daemon::checkedTracker(uint32_t ip) const {
  const HealthTracker* ht = health_ ? health_->tracker(ip) : nullptr;
  return ht && ht->state() != HealthState::kDisabled ? ht : nullptr;
}

std::string Daemon::serverState(uint32_t ip) const {
  const ServerLifecycle::Entry* le = lifecycle().find(ip);
  if (le && le->phase == dp::ServerPhase::kDraining) return "draining";
  if (le && le->phase == dp::ServerPhase::kDrained) return le->removed ? "removed" : "drained";
  auto it = server_status_.find(ip);
  // Not in a published snapshot yet: it has no verdict either.
  return it == server_status_.end() ? "initializing" : it->second.state;
}

std::vector<Daemon::ServerRow> Daemon::serverRows() const {
  std::vector<ServerRow> rows;
  for (const auto& g : cfg().server_groups)
    for (const auto& sc : g.servers) {
      uint32_t ip = sc.address.v4HostOrder();
      rows.push_back({g.name, sc.address.str(), serverState(ip), ip, registry().find(ip)});
    }
  for (const auto& [ip, le] : lifecycle().entries()) {
    if (!le.removed) continue;
    rows.push_back({le.group, le.server.address.str(),
                    le.phase == dp::ServerPhase::kDraining ? "draining" : "removed", ip,
                    registry().find(ip)});
  }
  return rows;
}

}  // namespace gwlb::ctl
