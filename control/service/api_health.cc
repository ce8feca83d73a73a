// The control API's health views (docs/control-api.md): `health` (each
// appliance's checks and history), `destinations` and the health endpoint's
// GET /destinations[/NAME] (listeners, regions, composites). Control thread.
#include <spdlog/spdlog.h>

#include "control/api/api_params.h"
#include "control/api/health_endpoint.h"
#include "control/health/probe_path.h"
#include "control/service/appliance_view.h"
#include "control/service/handlers.h"

namespace gwlb::ctl {

using nlohmann::json;

namespace {

// Unix time of a monotonic-clock instant.
double unixOfMono(uint64_t mono_ns) {
  uint64_t now = dp::monotonicNs();
  return unixNow() - (now > mono_ns ? double(now - mono_ns) / 1e9 : 0.0);
}

json sourceJson(const RegionTracker::Source& s) {
  return {{"name", s.name},
          {"group", s.group},
          {"policy", s.policy.empty() ? json("(default)") : json(s.policy)},
          {"min_healthy_percent", s.min_percent},
          {"min_healthy_count", s.min_count},
          {"servers", s.appliances},
          {"healthy_servers", s.healthy},
          {"healthy", s.ok},
          {"why", s.why}};
}

}  // namespace

json destinationJson(const RegionTracker& regions, const RegionTracker::Listener& l) {
  auto groupAt = [&](int i) { return i < 0 ? json(nullptr) : json(l.regions[size_t(i)].group); };
  json region_list = json::array();
  for (const auto& r : l.regions) {
    json j = {{"group", r.group},
              {"healthy", r.healthy},
              {"healthy_with_dry_run", r.healthy_with_dry_run},
              {"healthy_since", r.healthy ? json(unixOfMono(r.healthy_since_ns)) : json(nullptr)},
              {"composites", r.composites}};
    bool acting = false;
    for (const auto& c : regions.composites())
      for (const auto& n : r.composites)
        if (c.name == n && !c.dry_run) acting = true;
    const char* by = acting                  ? "composites"
                     : l.implicit             ? "always (the only group)"
                     : !r.composites.empty()  ? "dry-run composites only: never fails over"
                                              : "any healthy appliance (no composite)";
    j["judged_by"] = by;
    if (!acting) j["own_appliances"] = sourceJson(r.implicit);
    region_list.push_back(std::move(j));
  }
  json comps = json::array();
  for (const auto& c : regions.composites()) {
    if (c.destination != l.name) continue;
    json src = json::array();
    for (const auto& s : c.sources) src.push_back(sourceJson(s));
    comps.push_back({{"name", c.name},
                     {"dry_run", c.dry_run},
                     {"healthy", c.healthy},
                     {"since", unixOfMono(c.since_ns)},
                     {"changes", c.changes},
                     {"sources", src}});
  }
  return {{"name", l.name},
          {"implicit", l.implicit},
          {"healthy", l.destination_healthy},
          {"healthy_with_dry_run", l.destination_healthy_with_dry_run},
          {"active_group", groupAt(l.active)},
          {"would_be_active_group", groupAt(l.would_be_active)},
          {"since", unixOfMono(l.since_ns)},
          {"reason", l.reason},
          {"failback_hold_s", l.failback_hold_s},
          {"when_all_unhealthy", toString(l.when_all_unhealthy)},
          {"regions", region_list},
          {"composites", comps}};
}

json destinationsMethod(const RegionTracker& regions, const json& p) {
  Params pr(p, {"name"});
  json out = json::array();
  bool found = false;
  for (const auto& l : regions.listeners()) {
    if (pr.has("name") && l.name != pr.str("name")) continue;
    found = true;
    out.push_back(destinationJson(regions, l));
  }
  if (pr.has("name") && !found) notFound("no destination (listener) '" + pr.str("name") + "'");
  return {{"destinations", out}};
}

HttpReply healthEndpoint(const RegionTracker& regions, const std::string& path) {
  return destinationsReply(path, regions.listeners(),
                           [&regions](const RegionTracker::Listener& l) { return destinationJson(regions, l); });
}

json healthMethod(const Config& cfg, HealthView health, const ApplianceView& appliances, const json& p) {
  Params pr(p, {"address"});
  if (!pr.has("address")) badRequest("health needs address");
  IpAddr a = pr.ip("address");
  const ApplianceGroupConfig* group = nullptr;
  for (const auto& g : cfg.server_groups)
    for (const auto& sc : g.appliances)
      if (sc.address == a) group = &g;
  if (!group) notFound("no appliance " + a.str());
  const uint32_t ip = applianceKey(a);
  json out = appliances.healthJson(ip);
  out["address"] = a.str();
  out["group"] = group->name;
  const HealthCheckConfig& h = group->health_check;
  const ProbePath pp = probePathOf(cfg, h);
  out["check"] = {{"configured", h.configured},
                  {"enabled", h.enabled},
                  {"protocol", toString(h.protocol)},
                  {"port", h.port},
                  {"path", h.path},
                  {"domain", h.domain},
                  {"http_codes", h.http_codes},
                  {"interval_ms", h.interval_ms},
                  {"timeout_ms", h.timeout_ms},
                  {"healthy_threshold", h.healthy_threshold},
                  {"unhealthy_threshold", h.unhealthy_threshold},
                  {"probe_path", toString(pp.kind)},
                  {"interface", pp.device.empty() ? json(nullptr) : json(pp.device)},
                  {"source", pp.sourceFor(a) ? json(pp.sourceFor(a)->str()) : json(nullptr)},
                  {"verify", h.verify},
                  {"ca_file", h.ca_file},
                  {"jitter", h.jitter}};
  out["history"] = health.checker ? health.checker->historyJson(ip) : json::array();
  return out;
}

}  // namespace gwlb::ctl
