// The `destinations` result as text (cli/destination_render.h): each
// destination's head block, its regions table and its composites table.
#include "cli/destination_render.h"

#include <string>
#include <vector>

#include "cli/render.h"
#include "cli/render_fields.h"
#include "cli/table.h"

namespace gwlb::cli {

namespace {

bool hasKey(const Json& obj, const char* key) { return obj.is_object() && obj.contains(key); }

std::string yesNo(const Json& v) {
  return v.is_boolean() ? (v.get<bool>() ? "yes" : "no") : valueText(v);
}

// HEALTHY / UNHEALTHY, as the health endpoint answers (200 / 503).
std::string healthWord(const Json& v) {
  return v.is_boolean() ? (v.get<bool>() ? "HEALTHY" : "UNHEALTHY") : valueText(v);
}

// "3/5" healthy servers of the counted ones.
std::string healthyOf(const Json& s) {
  if (field(s, "healthy_servers").is_null() && field(s, "servers").is_null()) return "-";
  return fieldText(s, "healthy_servers") + "/" + fieldText(s, "servers");
}

// "60 % and 3": the policy's percent and minimum count.
std::string needsText(const Json& s) {
  if (field(s, "min_healthy_percent").is_null() && field(s, "min_healthy_count").is_null())
    return "-";
  return fieldText(s, "min_healthy_percent") + " % and " + fieldText(s, "min_healthy_count");
}

// The judgement of a region not judged by composites: gwlbd's source-shaped
// object for it (`own_appliances`; `default_policy` in earlier versions), found
// by its shape so a renamed key still shows; null when there is none.
const Json& ownJudgement(const Json& region) {
  static const Json kNull;
  if (!region.is_object()) return kNull;
  for (const char* k : {"own_appliances", "default_policy"})
    if (field(region, k).is_object()) return field(region, k);
  for (const auto& [k, v] : region.items())
    if (v.is_object() && v.contains("healthy_servers")) return v;
  return kNull;
}

// JUDGED BY: the acting composites' names, else gwlbd's judged_by sentence
// with the region's own healthy/servers; dry-run composites are added, marked.
std::string regionJudge(const Json& r, const Json& composites) {
  auto dryRun = [&](const std::string& name) {
    if (composites.is_array())
      for (const auto& c : composites)
        if (fieldText(c, "name", "") == name) return field(c, "dry_run") == Json(true);
    return false;
  };
  std::string acting, dry;
  const Json& names = field(r, "composites");
  if (names.is_array()) {
    for (const auto& n : names) {
      std::string name = valueText(n);
      if (dryRun(name)) dry += (dry.empty() ? "" : ", ") + name + " (dry run)";
      else acting += (acting.empty() ? "" : ", ") + name;
    }
  }
  std::string judged_by = fieldText(r, "judged_by", "");
  const Json& own = ownJudgement(r);
  std::string s;
  bool by_composites =
      judged_by == "composites" || (judged_by.empty() && own.is_null() && !acting.empty());
  if (by_composites) {
    s = acting.empty() ? judged_by : acting;
  } else {
    s = judged_by;
    if (own.is_object()) s += (s.empty() ? "" : ": ") + healthyOf(own) + " healthy";
  }
  if (!dry.empty()) s += (s.empty() ? "" : by_composites ? ", " : "; ") + dry;
  return s.empty() ? "-" : s;
}

std::string renderDestination(const Json& d, double now) {
  KV kv;
  std::string head = fieldText(d, "name");
  if (field(d, "implicit") == Json(true)) head += " (implicit: no listeners configured)";
  head += ": " + healthWord(field(d, "healthy"));
  const Json& dry_healthy = field(d, "healthy_with_dry_run");
  if (dry_healthy.is_boolean() && dry_healthy != field(d, "healthy"))
    head += " (would be " + healthWord(dry_healthy) + " with dry run)";
  kv.push_back({"destination", head});

  const Json& active = field(d, "active_group");
  std::string flows = active.is_string() ? "-> " + active.get<std::string>()
                                         : std::string("dropped (no region takes them)");
  if (hasKey(d, "would_be_active_group") && field(d, "would_be_active_group") != active) {
    const Json& would = field(d, "would_be_active_group");
    flows += would.is_string() ? " (dry run would send them to " + would.get<std::string>() + ")"
                               : std::string(" (dry run would drop them)");
  }
  kv.push_back({"new flows", flows});
  kv.push_back({"since", formatAge(fieldNumber(d, "since"), now)});
  kv.push_back({"reason", fieldText(d, "reason")});
  if (!field(d, "failback_hold_s").is_null()) {
    double hold = fieldNumber(d, "failback_hold_s");
    kv.push_back({"failback", hold > 0 ? "after " + formatDuration(hold) + " healthy (failback hold)"
                                       : std::string("at once (no failback hold)")});
  }
  std::string all = fieldText(d, "when_all_unhealthy", "");
  if (!all.empty()) {
    if (all == "fail_open") all += " (new flows go to the preferred region)";
    else if (all == "drop") all += " (new flows are dropped)";
    kv.push_back({"all unhealthy", all});
  }
  std::string out = renderKeyValues(kv);

  const Json& composites = field(d, "composites");
  Table rt({{"GROUP", Align::kLeft}, {"HEALTHY", Align::kLeft}, {"SINCE", Align::kLeft},
            {"JUDGED BY", Align::kLeft}});
  const Json& regions = field(d, "regions");
  if (regions.is_array()) {
    for (const auto& r : regions) {
      std::string healthy = yesNo(field(r, "healthy"));
      const Json& rd = field(r, "healthy_with_dry_run");
      if (rd.is_boolean() && rd != field(r, "healthy")) healthy += " (dry run: " + yesNo(rd) + ")";
      rt.addRow({fieldText(r, "group"), healthy, formatAge(fieldNumber(r, "healthy_since"), now),
                 regionJudge(r, composites)});
    }
  }
  out += sectionTitle("regions, in order of preference");
  out += rt.rows() == 0 ? "none\n" : rt.render();

  Table ct({{"COMPOSITE", Align::kLeft}, {"STATE", Align::kLeft}, {"SINCE", Align::kLeft},
            {"CHANGES", Align::kRight}, {"SOURCE", Align::kLeft}, {"GROUP", Align::kLeft},
            {"POLICY", Align::kLeft}, {"HEALTHY/SERVERS", Align::kRight}, {"NEEDS", Align::kLeft},
            {"OK", Align::kLeft}, {"WHY", Align::kLeft}});
  if (composites.is_array()) {
    for (const auto& c : composites) {
      std::string name = fieldText(c, "name");
      if (field(c, "dry_run") == Json(true)) name += " (dry run)";
      const Json& h = field(c, "healthy");
      std::vector<std::string> first = {
          name, h.is_boolean() ? (h.get<bool>() ? "healthy" : "unhealthy") : valueText(h),
          formatAge(fieldNumber(c, "since"), now), countText(c, "changes")};
      const Json& sources = field(c, "sources");
      if (!sources.is_array() || sources.empty()) {
        ct.addRow(std::move(first));
        continue;
      }
      bool head_row = true;
      for (const auto& s : sources) {
        std::vector<std::string> row = head_row ? first : std::vector<std::string>(4);
        head_row = false;
        for (std::string cell : {fieldText(s, "name"), fieldText(s, "group"), fieldText(s, "policy"),
                                 healthyOf(s), needsText(s), yesNo(field(s, "healthy")),
                                 fieldText(s, "why")})
          row.push_back(std::move(cell));
        ct.addRow(std::move(row));
      }
    }
  }
  if (ct.rows() == 0) {
    out += "\ncomposite health checks: none\n";
  } else {
    out += sectionTitle("composite health checks (healthy when every source is)") + ct.render();
  }
  return out;
}

}  // namespace

std::string renderDestinations(const Json& r, double now) {
  const Json& all = field(r, "destinations");
  if (!all.is_array() || all.empty()) return "no destinations\n";
  std::string out;
  for (const auto& d : all) {
    if (!out.empty()) out += "\n";
    out += renderDestination(d, now);
  }
  return out;
}

}  // namespace gwlb::cli
