#include "tools/replay_summary.h"

#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>

#include "common/net_types.h"

namespace gwlb::replay {

nlohmann::json listenersJson(const ctl::RegionTracker& regions, uint64_t first_ts) {
  auto rel = [&](uint64_t t) { return double(t - std::min(t, first_ts)) / 1e9; };
  nlohmann::json j = nlohmann::json::object();
  for (const ctl::RegionTracker::Listener& l : regions.listeners()) {
    auto groupOf = [&](int i) -> nlohmann::json {
      if (i < 0 || size_t(i) >= l.regions.size()) return nullptr;
      return l.regions[size_t(i)].group;
    };
    nlohmann::json rj = nlohmann::json::array();
    for (const ctl::RegionTracker::Region& r : l.regions)
      rj.push_back({{"group", r.group},
                    {"healthy", r.healthy},
                    {"healthy_with_dry_run", r.healthy_with_dry_run},
                    {"healthy_since_s", r.healthy ? nlohmann::json(rel(r.healthy_since_ns))
                                                  : nlohmann::json(nullptr)}});
    j[l.name] = {{"active_group", groupOf(l.active)},
                 {"would_be_active_group", groupOf(l.would_be_active)},
                 {"healthy", l.destination_healthy},
                 {"healthy_with_dry_run", l.destination_healthy_with_dry_run},
                 {"since_s", rel(l.since_ns)},
                 {"reason", l.reason},
                 {"regions", rj}};
  }
  return j;
}

nlohmann::json compositesJson(const ctl::RegionTracker& regions, uint64_t first_ts) {
  auto rel = [&](uint64_t t) { return double(t - std::min(t, first_ts)) / 1e9; };
  nlohmann::json j = nlohmann::json::array();
  for (const ctl::RegionTracker::Composite& c : regions.composites()) {
    nlohmann::json sj = nlohmann::json::array();
    for (const ctl::RegionTracker::Source& so : c.sources)
      sj.push_back({{"name", so.name},
                    {"server_group", so.group},
                    {"policy", so.policy},
                    {"servers", so.appliances},
                    {"healthy_servers", so.healthy},
                    {"healthy", so.ok},
                    {"why", so.why}});
    j.push_back({{"name", c.name},
                 {"destination", c.destination},
                 {"dry_run", c.dry_run},
                 {"healthy", c.healthy},
                 {"since_s", rel(c.since_ns)},
                 {"changes", c.changes},
                 {"sources", sj}});
  }
  return j;
}

// An appliance's address as configured, in either family (the snapshot's
// ApplianceSlot keeps an IPv6 one in ip6, its 32-bit key in ip).
static IpAddr applianceAddress(const dp::ApplianceSlot& sv) {
  return sv.ipv6 ? IpAddr::v6(sv.ip6.data()) : IpAddr::v4(sv.ip);
}

// The time series' marks: every applied event, lifecycle change and region
// change at its capture time, in time order.

static nlohmann::json timelineMarks(const std::vector<ctl::ScriptedEvent>& events,
                             const nlohmann::json& lifecycle, const nlohmann::json& regions) {
  std::vector<nlohmann::json> marks;
  for (const ctl::ScriptedEvent& e : events) {
    if (!e.applied) continue;
    const bool health = e.action == ctl::ScriptedEvent::Action::kHealth;
    const bool reload = e.action == ctl::ScriptedEvent::Action::kReload;
    std::string label = reload ? "reload " + e.file : e.appliance.str() + " " + ctl::actionName(e);
    if (e.action == ctl::ScriptedEvent::Action::kAdd) label += " to " + e.group;
    if (e.weight) label += " " + std::to_string(*e.weight);
    uint64_t moved = 0;
    if (auto it = e.result.find("flows_moved"); it != e.result.end())
      for (const auto& [k, v] : it->items()) moved += v.get<uint64_t>();
    marks.push_back({{"at_s", double(e.at_ns) / 1e9},
                     {"kind", health ? "health" : "event"},
                     {"event", e.index},
                     {"server", reload ? nlohmann::json(nullptr) : nlohmann::json(e.appliance.str())},
                     {"action", ctl::actionName(e)},
                     {"label", label},
                     {"flows_moved", moved}});
  }
  for (const auto& l : lifecycle)
    marks.push_back({{"at_s", l["at_s"]},
                     {"kind", "lifecycle"},
                     {"server", l["server"]},
                     {"label", l["server"].get<std::string>() + " " + l["from"].get<std::string>() +
                                   " -> " + l["to"].get<std::string>() + " (" +
                                   l["why"].get<std::string>() + ")"}});
  for (const auto& r : regions)
    marks.push_back({{"at_s", r["at_s"]}, {"kind", "region"}, {"label", r["line"]}});
  std::stable_sort(marks.begin(), marks.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return a["at_s"].get<double>() < b["at_s"].get<double>();
  });
  return nlohmann::json(marks);
}

std::string ClassTotal::listenerText() const {
  std::string out;
  for (const std::string& l : listeners) out += (out.empty() ? "" : ", ") + l;
  return out;
}

// Per traffic class (docs/replay.md "Traffic classes"): summary.json's
// "traffic_classes" and a table on stdout. Nothing without classes.
static void classSummary(const SummaryInput& in, nlohmann::json& j) {
  if (!in.classes || in.classes->empty()) return;
  auto count = [&](Counter c) { return in.total.v[size_t(c)]; };
  nlohmann::json list = nlohmann::json::array();
  std::printf("%-20s %-8s %-16s %10s %12s\n", "class", "action", "listener", "packets", "bytes");
  for (const ClassTotal& c : *in.classes) {
    const std::string listener = c.listenerText();
    list.push_back({{"name", c.name},
                    {"action", c.action},
                    {"listener", listener.empty() ? nlohmann::json(nullptr) : nlohmann::json(listener)},
                    {"packets", c.packets},
                    {"bytes", c.bytes}});
    std::printf("%-20s %-8s %-16s %10llu %12llu\n", c.name.c_str(), c.action.c_str(),
                listener.empty() ? "-" : listener.c_str(), (unsigned long long)c.packets,
                (unsigned long long)c.bytes);
  }
  j["traffic_classes"] = {{"classes", list},
                          {"bypassed_packets", count(Counter::bypassed)},
                          {"dropped_unclassified", count(Counter::drop_unclassified)},
                          {"dropped_by_class", count(Counter::drop_class_drop)}};
  std::printf("bypassed %llu, dropped unclassified %llu, dropped by class %llu\n",
              (unsigned long long)count(Counter::bypassed),
              (unsigned long long)count(Counter::drop_unclassified),
              (unsigned long long)count(Counter::drop_class_drop));
}

void writeSummary(const SummaryInput& in) {
  const Options& o = in.o;
  const WorkerCounters& total = in.total;
  const ctl::Config& cfg = in.engine.config();
  const dp::Snapshot* snap = in.engine.current();
  const dp::FlowTable& flows = in.flows;
  const std::vector<ctl::ScriptedEvent>& events = in.events;
  const CaptureStats& cs = in.cs;

  std::map<uint16_t, uint64_t> flows_per_appliance;
  flows.forEach([&](const FlowKey& k, int32_t, const dp::FlowEntry& e) {
    if (k.kind == KeyKind::kFlow)
      ++flows_per_appliance[dp::routeAppliance(e.route.load(std::memory_order_relaxed))];
  });
  // Packets per appliance: count the outer destinations of what we wrote.
  // Keyed by applianceKey(), as the snapshot's servers (IPv4 or IPv6 outers).
  std::map<uint32_t, uint64_t> pkts_per_ip, bytes_per_ip;
  {
    char eb[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline((o.out_dir + "/to-appliances.pcap").c_str(), eb);
    if (p) {
      pcap_pkthdr* h;
      const u_char* d;
      IpAddr to;
      while (pcap_next_ex(p, &h, &d) == 1)
        if (outerDestination(d, h->caplen, to)) {
          ++pkts_per_ip[applianceKey(to)];
          bytes_per_ip[applianceKey(to)] += h->len;
        }
      pcap_close(p);
    }
  }
  nlohmann::json j;
  j["input_packets"] = in.n_router_in;
  j["appliance_input_packets"] = in.appliance_in;
  j["workers"] = o.workers;
  if (o.nodes) {
    j["node"] = std::to_string(o.node) + "/" + std::to_string(o.nodes);
    j["ecmp_policy"] = toString(o.ecmp_policy);
  }
  j["reflect"] = o.reflect;
  j["to_appliances_packets"] = in.to_appliances;
  j["returned_packets"] = in.returned;
  j["to_mirrors_packets"] = in.to_mirrors;
  j["reflected_packets"] = in.reflected;
  j["reflected_bypass_requests"] = in.reflected_bypass;
  {
    auto c = [&](Counter k) { return in.total.v[size_t(k)]; };
    j["appliance_bypass"] = {{"granted", c(Counter::bypass_granted)},
                             {"renewed", c(Counter::bypass_renewed)},
                             {"bypassed_packets", c(Counter::appliance_bypassed)},
                             {"ended_expired", c(Counter::bypass_ended_expired)},
                             {"ended_disallowed", c(Counter::bypass_ended_disallowed)},
                             {"refused_not_allowed", c(Counter::bypass_refused_not_allowed)},
                             {"refused_bad_option", c(Counter::bypass_refused_bad_option)},
                             {"refused_not_flow_appliance", c(Counter::bypass_refused_not_flow_appliance)}};
  }
  j["flows_in_table"] = flows.count();
  j["mbuf_alloc_retries"] = in.alloc_retries;
  j["largest_frame"] = cs.largest;
  j["frames_too_large"] = cs.too_large;
  j["frames_cut_by_capture"] = cs.cut_by_capture;
  nlohmann::json apps = nlohmann::json::array();
  std::printf("%-16s %-8s %10s %8s\n", "appliance", "group", "packets", "flows");
  // Configured appliances; with --events also removed ones that flows still use.
  for (size_t id = 0; id < snap->appliances.size(); ++id) {
    const auto& sv = snap->appliances[id];
    if (!sv.in_use && !(sv.routable && !events.empty())) continue;
    std::string addr = applianceAddress(sv).str();
    uint64_t pk = pkts_per_ip[sv.ip];
    uint64_t fl = flows_per_appliance[uint16_t(id)];
    const std::string& gname = cfg.server_groups[sv.group].name;
    nlohmann::json a = {{"address", addr}, {"group", gname},   {"packets", pk},
                        {"bytes", bytes_per_ip[sv.ip]}, {"flows", fl}};
    if (!events.empty()) {
      a["phase"] = dp::toString(sv.phase);
      a["in_config"] = sv.in_use;
    }
    apps.push_back(a);
    std::printf("%-16s %-8s %10llu %8llu%s%s\n", addr.c_str(), gname.c_str(),
                (unsigned long long)pk, (unsigned long long)fl,
                sv.phase != dp::AppliancePhase::kActive ? "  " : "",
                sv.phase != dp::AppliancePhase::kActive ? dp::toString(sv.phase) : "");
  }
  j["appliances"] = apps;
  nlohmann::json counters = nlohmann::json::object(), drops = nlohmann::json::object();
  for (size_t k = 0; k < kNumCounters; ++k) {
    if (kCounterInfo[k].is_drop) {
      if (total.v[k]) drops[kCounterInfo[k].name + 5] = total.v[k];
    } else {
      counters[kCounterInfo[k].name] = total.v[k];
    }
  }
  j["counters"] = counters;
  j["drops"] = drops;
  classSummary(in, j);

  // --events: what each event did, the lifecycle, and where every appliance
  // ever known ended up.
  nlohmann::json evj = nlohmann::json::array();
  for (const ctl::ScriptedEvent& e : events) {
    const bool reload = e.action == ctl::ScriptedEvent::Action::kReload;
    nlohmann::json x = {{"index", e.index},
                        {"at_s", double(e.at_ns) / 1e9},
                        {"server", reload ? nlohmann::json(nullptr) : nlohmann::json(e.appliance.str())},
                        {"action", ctl::actionName(e)},
                        {"applied", e.applied}};
    if (e.action == ctl::ScriptedEvent::Action::kAdd) x["group"] = e.group;
    if (reload) x["file"] = e.file;
    if (e.weight) x["weight"] = *e.weight;
    if (e.timeout_s) x["timeout_s"] = *e.timeout_s;
    if (e.force) x["force"] = true;
    if (!e.refused.empty()) x["refused"] = e.refused;
    if (!e.warnings.empty()) x["warnings"] = e.warnings;
    if (reload && e.applied) {
      // As gwlbd's reload lists them (docs/control-api.md).
      nlohmann::json rv = nlohmann::json::array();
      for (const ctl::RuntimeChange& c : e.reverted) {
        nlohmann::json r = {{"group", c.group}, {"address", c.address.str()}, {"change", c.change()}};
        if (c.file_weight >= 0) r["file_weight"] = c.file_weight;
        if (c.running_weight >= 0) r["running_weight"] = c.running_weight;
        r["after_reload"] = c.after_reload < 0 ? nlohmann::json("absent") : nlohmann::json(c.after_reload);
        rv.push_back(std::move(r));
      }
      x["reverted"] = std::move(rv);
    }
    x.update(e.result);
    evj.push_back(x);
    if (!e.refused.empty())
      std::printf("event %zu at %s: %s %s: %s\n", e.index, ctl::secondsText(e.at_ns).c_str(),
                  ctl::actionName(e), reload ? e.file.c_str() : e.appliance.str().c_str(),
                  e.refused.c_str());
    if (e.applied) {
      uint64_t moved = 0;
      for (auto& [k, v] : e.result["flows_moved"].items()) moved += v.get<uint64_t>();
      // A reload concerns every flow; the other actions one appliance's.
      const char* on = reload ? "flows at it" : "flows on it";
      const char* key = reload ? "flows_at_event" : "flows_on_server_at_event";
      std::printf("event %zu at %s: %s %s: %s %llu, moved %llu, stayed %llu\n", e.index,
                  ctl::secondsText(e.at_ns).c_str(), ctl::actionName(e),
                  reload ? e.file.c_str() : e.appliance.str().c_str(), on,
                  (unsigned long long)e.result[key].get<uint64_t>(), (unsigned long long)moved,
                  (unsigned long long)e.result["flows_stayed"].get<uint64_t>());
    }
    if (!e.applied) continue;
    for (const std::string& w : e.warnings) std::printf("  warning: %s\n", w.c_str());
    if (!e.reverted.empty()) {
      // As gwlbctl reload says it (docs/cli.md "Runtime changes and the config file").
      const size_t n = e.reverted.size();
      std::printf("  reverted %zu runtime change%s the file does not carry:\n", n, n == 1 ? "" : "s");
      for (const ctl::RuntimeChange& c : e.reverted) std::printf("    %s\n", c.text().c_str());
    }
    for (const auto& line : e.result["region_changes"]) std::printf("  regions: %s\n", line.get<std::string>().c_str());
  }
  j["events"] = evj;
  const ctl::ApplianceLifecycle::Stats& ls = in.engine.lifecycle().stats();
  j["lifecycle"] = {{"drains_started", ls.drains_started},
                    {"drains_emptied", ls.drains_emptied},
                    {"drains_timed_out", ls.drains_timed_out},
                    {"flows_drained", ls.flows_drained},
                    {"flows_drain_timed_out", ls.flows_drain_timed_out},
                    {"removals", ls.removals},
                    {"forgotten", ls.forgotten},
                    {"flows_swept", ls.flows_swept}};
  j["lifecycle_changes"] = *in.lifecycle_changes;
  j["region_changes"] = *in.region_changes;
  if (in.service_changes) j["service_changes"] = *in.service_changes;
  j["listeners"] = listenersJson(in.engine.regions(), in.first_ts);
  j["composites"] = compositesJson(in.engine.regions(), in.first_ts);
  nlohmann::json appliances = nlohmann::json::array();
  for (size_t id = 0; id < snap->appliances.size(); ++id) {
    const auto& sv = snap->appliances[id];
    nlohmann::json x = {{"address", applianceAddress(sv).str()},
                        {"phase", dp::toString(sv.phase)},
                        {"in_config", sv.in_use},
                        {"routable", sv.routable},
                        {"move", dp::toString(sv.move_reason)},
                        {"flows", flows_per_appliance[uint16_t(id)]}};
    if (const ctl::ApplianceLifecycle::Entry* le = in.engine.lifecycle().find(sv.ip)) x["why"] = le->why;
    appliances.push_back(x);
  }
  j["servers"] = appliances;
  j["snapshots_published"] = in.engine.generation();
  if (in.timeline) {
    for (const auto& sv : snap->appliances) in.timeline->known(applianceAddress(sv));
    j["timeseries"] = in.timeline->toJson(timelineMarks(events, *in.lifecycle_changes,
                                                        *in.region_changes));
  }

  std::ofstream(o.out_dir + "/summary.json") << j.dump(2) << "\n";
  uint64_t dropped = 0;
  for (auto& [k, v] : drops.items()) dropped += v.get<uint64_t>();
  std::printf("in %zu, to appliances %llu, returned %llu, dropped %llu%s\n", in.n_router_in,
              (unsigned long long)in.to_appliances, (unsigned long long)in.returned,
              (unsigned long long)dropped, dropped ? " (see summary.json)" : "");
  std::printf("outputs: %s/{to-appliances.pcap,returned.pcap,summary.json}\n",
              o.out_dir.c_str());
}

}  // namespace gwlb::replay
