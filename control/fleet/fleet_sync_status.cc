// FleetSync's status: the API's `fleet_sync` JSON (docs/control-api.md) and
// the Prometheus lines gwlb_fleet_sync_* and gwlb_fleet_config_differs
// (docs/observability.md), read from the counters the other parts keep.
#include <algorithm>

#include "common/health.h"
#include "control/config/config_digest.h"
#include "control/fleet/fleet_sync.h"
#include "control/fleet/fleet_sync_clock.h"
#include "dataplane/worker.h"

namespace gwlb::ctl {

using fleet_clock::unixS;

nlohmann::json FleetSync::disagreements(const Peer& p, double now) const {
  nlohmann::json out = nlohmann::json::array();
  if (!opt_.health) return out;
  auto name = [](uint8_t st) {
    return st <= sync::kMaxHealthState ? toString(HealthState(st)) : "?";
  };
  // The view names an IPv6 appliance by its key (ApplianceSlot::ip): shown by its address.
  const dp::Snapshot* s = snapshot_();
  auto address = [s](uint32_t ip) {
    if (s)
      for (const dp::ApplianceSlot& sv : s->appliances)
        if (sv.ipv6 && sv.ip == ip) return IpAddr::v6(sv.ip6.data()).str();
    return IpAddr::v4(ip).str();
  };
  for (const auto& [ip, here] : opt_.health()) {
    auto it = p.health.find(ip);
    if (it == p.health.end() || now - it->second.at > kHealthViewS) continue;
    if (it->second.in_service == here.second) continue;
    out.push_back({{"appliance", address(ip)},
                   {"here", name(here.first)},
                   {"there", name(it->second.state)},
                   {"new_flows_here", here.second},
                   {"new_flows_there", it->second.in_service}});
  }
  return out;
}

// The control thread's CPU time over the warm start (read on it: the API
// runs there): user and system from its start (to its end, or now), and of
// that, checking and decoding the transfer and installing its records.
nlohmann::json FleetSync::warmCpu() const {
  fleet_clock::ThreadCpu end = warmStartDone() ? warm_.cpu_end : fleet_clock::threadCpu();
  auto s = [](uint64_t ns) { return double(ns) / 1e9; };
  return {{"user_s", s(end.user_ns - warm_.cpu_start.user_ns)},
          {"sys_s", s(end.sys_ns - warm_.cpu_start.sys_ns)},
          {"verify_s", s(warm_.verify_ns)},
          {"install_s", s(warm_.install_ns)}};
}

nlohmann::json FleetSync::scanStatus() const {
  return {{"slots", flows_.slots() / 2},
          {"position", scan_cursor_},
          {"last_tick_slots", scan_last_slots_},
          {"slots_per_tick", kScanSlotsPerTick},
          {"keys_per_tick", kScanPerTick},
          {"passes", scan_passes_},
          {"last_pass_s", double(scan_last_pass_ns_) / 1e9}};
}

nlohmann::json FleetSync::sentLogStatus() const {
  return {{"bytes_per_position", sizeof(SentLog::Entry)},
          {"positions", sent_.positions()},
          {"reserved_bytes", sent_.reservedBytes()},
          {"resident_bytes", sent_.residentBytes()},
          {"ipv6_resident_bytes", sent_.residentBytes(sent_.positions() / 2)}};
}

nlohmann::json FleetSync::viewStatus() const {
  uint64_t now = dp::monotonicNs();
  std::string why = view_.why(now);
  uint64_t until = view_.uncertainUntil();
  return {{"complete", why.empty()},
          {"why", why},
          {"records_lost_matter_for_s", until > now ? double(until - now) / 1e9 : 0.0},
          {"horizon_s", double(view_.horizon()) / 1e9}};
}

nlohmann::json FleetSync::status() const {
  using nlohmann::json;
  double now = unixS();
  json peers = json::array();
  for (const Peer& p : peers_) {
    bool reachable = !p.this_node && p.last_sync > 0 && now - p.last_sync <= kReachableS;
    peers.push_back({{"address", p.address},
                     {"this_node", p.this_node},
                     {"this_node_why", p.this_node ? json(p.this_node_why) : json()},
                     {"reachable", reachable},
                     {"last_sync_s", p.last_sync > 0 ? json(std::max(0.0, now - p.last_sync)) : json()},
                     {"flows_received", p.flows_received},
                     {"flows_sent", p.flows_sent},
                     {"auth_failures", p.auth_failures},
                     {"replayed", p.replayed},
                     {"malformed", p.malformed},
                     {"stale", p.stale},
                     {"self_replayed", p.self_replayed},
                     {"self_challenges", p.challenges},
                     {"datagrams_received", p.datagrams_received},
                     {"datagrams_sent", p.datagrams_sent},
                     {"send_errors", p.send_errors},
                     {"installed", p.installed},
                     {"moved", p.moved},
                     {"refreshed", p.refreshed},
                     {"ignored", p.ignored},
                     {"conflicts", p.conflicts},
                     {"unknown_appliance", p.unknown_appliance},
                     {"bad_records", p.bad_records},
                     {"table_full", p.table_full},
                     {"insert_abandoned", p.insert_abandoned},
                     {"warm_start_error", p.warm_error.empty() ? json() : json(p.warm_error)},
                     {"health_disagreements", disagreements(p, now)},
                     {"config", configComparison(config_digest_, p.has_digest ? &p.digest : nullptr)}});
  }
  const char* state = warm_.state == WarmState::kWaiting    ? "waiting"
                      : warm_.state == WarmState::kDone     ? "done"
                      : warm_.state == WarmState::kTimedOut ? "timed_out"
                                                            : "no_peers";
  uint64_t end = warm_.ended_ns ? warm_.ended_ns : dp::monotonicNs();
  bool asking = !warmStartDone() && warm_.asking && warm_.next_peer < peers_.size();
  json warm = {{"done", warmStartDone()},
               {"state", state},
               {"peer", warm_.peer.empty() ? json() : json(warm_.peer)},
               {"asking", asking ? json(peers_[warm_.next_peer].address) : json()},
               {"flows_received", warm_.received},
               {"flows_installed", warm_.installed},
               {"peer_total", warm_.peer_total},
               {"attempts", warm_.attempts},
               {"elapsed_s", warm_.started_ns ? double(end - warm_.started_ns) / 1e9 : 0.0},
               {"reads", warm_.reads},
               {"install_batches", warm_.batches},
               {"cpu", warmCpu()},
               {"timeout_s", opt_.warm_start_timeout_s},
               {"connect_timeout_s", opt_.warm_connect_timeout_ms / 1000.0},
               {"idle_timeout_s", opt_.warm_idle_timeout_ms / 1000.0}};
  return {{"node", opt_.node_name},
          {"listen", opt_.listen},
          {"peers", peers},
          {"warm_start", warm},
          {"sent", {{"new", new_sent_}, {"changed", changed_sent_}, {"refresh", refresh_sent_}}},
          {"events_drained", events_drained_},
          {"unknown_sender", unknown_sender_},
          {"from_self", from_self_},
          {"transfers_served", transfers_served_},
          {"config_digest", digestJson(config_digest_)},
          {"refresh_scan", scanStatus()},
          {"sent_log", sentLogStatus()},
          {"view", viewStatus()}};
}

void FleetSync::configDriftMetrics(std::string& out) const {
  out += "# HELP gwlb_fleet_config_differs 1 when the peer's digest of the config section differs "
         "from ours, 0 when it agrees, -1 while the peer's digests are unknown\n"
         "# TYPE gwlb_fleet_config_differs gauge\n";
  for (const Peer& p : peers_) {
    std::vector<std::string> diff = differingSections(config_digest_, p.digest);
    for (const sync::DigestEntry& e : config_digest_) {
      const char* name = digestSectionName(e.section);
      if (!name) continue;
      int v = !p.has_digest ? -1 : std::find(diff.begin(), diff.end(), name) != diff.end();
      out += "gwlb_fleet_config_differs{peer=\"" + p.address + "\",section=\"" + name + "\"} " +
             std::to_string(v) + "\n";
    }
  }
}

void FleetSync::metrics(std::string& out) const {
  auto family = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto perPeer = [&](const char* name, const char* type, const char* help, auto get) {
    family(name, type, help);
    for (const Peer& p : peers_)
      out += std::string(name) + "{peer=\"" + p.address + "\"} " + std::to_string(get(p)) + "\n";
  };
  double now = unixS();
  perPeer("gwlb_fleet_sync_peer_reachable", "gauge",
          "1 when an authenticated message came from the peer in the last 5 s",
          [&](const Peer& p) {
            return int(!p.this_node && p.last_sync > 0 && now - p.last_sync <= kReachableS);
          });
  perPeer("gwlb_fleet_sync_peer_is_this_node", "gauge",
          "1 when the fleet.peers entry reaches this node itself (skipped: nothing sent to it)",
          [](const Peer& p) { return int(p.this_node); });
  perPeer("gwlb_fleet_sync_flows_received_total", "counter", "flow records received from the peer",
          [](const Peer& p) { return p.flows_received; });
  perPeer("gwlb_fleet_sync_flows_sent_total", "counter", "flow records sent to the peer",
          [](const Peer& p) { return p.flows_sent; });
  perPeer("gwlb_fleet_sync_flows_installed_total", "counter",
          "peer records that created a local flow entry", [](const Peer& p) { return p.installed; });
  perPeer("gwlb_fleet_sync_flows_ignored_total", "counter",
          "peer records that changed nothing (a local route kept, or too old)",
          [](const Peer& p) { return p.ignored; });
  perPeer("gwlb_fleet_sync_table_full_total", "counter",
          "peer records dropped because the flow table had no room",
          [](const Peer& p) { return p.table_full; });
  perPeer("gwlb_fleet_sync_insert_abandoned_total", "counter",
          "peer records dropped because another inserter of a same-tag key stayed busy (the "
          "table is not full)",
          [](const Peer& p) { return p.insert_abandoned; });
  perPeer("gwlb_fleet_health_disagreements", "gauge",
          "appliances that take new flows on one of this node and the peer but not the other "
          "(their health checks disagree)",
          [&](const Peer& p) { return disagreements(p, now).size(); });
  perPeer("gwlb_fleet_sync_conflicts_total", "counter",
          "flows both nodes created with different appliances, settled here on the peer's "
          "(opened by the SYN, else older, else lower address)",
          [](const Peer& p) { return p.conflicts; });
  perPeer("gwlb_fleet_sync_unknown_appliance_total", "counter",
          "peer records naming an appliance this node does not have",
          [](const Peer& p) { return p.unknown_appliance; });
  perPeer("gwlb_fleet_sync_auth_failures_total", "counter",
          "messages from the peer whose MAC did not verify (secret mismatch or forgery)",
          [](const Peer& p) { return p.auth_failures; });
  perPeer("gwlb_fleet_sync_replayed_total", "counter",
          "messages from the peer dropped as replays (sequence window, old epoch, wrong nonce)",
          [](const Peer& p) { return p.replayed; });
  perPeer("gwlb_fleet_sync_self_replayed_total", "counter",
          "messages carrying this node's own node id and epoch from the peer's address, dropped "
          "as replays (outside the replay window, or not bound to our warm-start request); the "
          "entry stays a peer",
          [](const Peer& p) { return p.self_replayed; });
  perPeer("gwlb_fleet_sync_self_challenges_total", "counter",
          "challenges sent to the peer's address after this node's own message came from it (the "
          "entry is this node only if the challenge's nonce comes back)",
          [](const Peer& p) { return p.challenges; });
  perPeer("gwlb_fleet_sync_stale_total", "counter",
          "messages from the peer whose time was more than 30 s from ours",
          [](const Peer& p) { return p.stale; });
  perPeer("gwlb_fleet_sync_malformed_total", "counter",
          "messages from the peer with a bad length, magic, version, type or record",
          [](const Peer& p) { return p.malformed; });
  perPeer("gwlb_fleet_sync_last_sync_age_seconds", "gauge",
          "seconds since the last authenticated message from the peer (-1: never)",
          [&](const Peer& p) { return p.last_sync > 0 ? now - p.last_sync : -1.0; });
  configDriftMetrics(out);
  family("gwlb_fleet_sync_warm_start_done", "gauge",
         "1 once the warm start is over (done, timed out or no peers)");
  out += "gwlb_fleet_sync_warm_start_done " + std::to_string(int(warmStartDone())) + "\n";
  family("gwlb_fleet_sync_view_complete", "gauge",
         "1 when a TCP segment with no flow record can be picked from this node's own table; 0 "
         "while its peers' records may be missing (send_tcp_reset.on_fleet_view_incomplete "
         "resets such segments)");
  out += "gwlb_fleet_sync_view_complete " + std::to_string(int(view_.complete(dp::monotonicNs()))) + "\n";
  family("gwlb_fleet_sync_warm_start_flows", "gauge", "flow records received in the warm start");
  out += "gwlb_fleet_sync_warm_start_flows " + std::to_string(warm_.received) + "\n";
  family("gwlb_fleet_sync_unknown_sender_total", "counter",
         "datagrams and connections from addresses that are not fleet.peers");
  out += "gwlb_fleet_sync_unknown_sender_total " + std::to_string(unknown_sender_) + "\n";
  family("gwlb_fleet_sync_from_self_total", "counter",
         "messages carrying this node's own node id (its own come back through a fleet.peers "
         "entry, or another node with the same fleet.node_name), refused");
  out += "gwlb_fleet_sync_from_self_total " + std::to_string(from_self_) + "\n";
}

}  // namespace gwlb::ctl
