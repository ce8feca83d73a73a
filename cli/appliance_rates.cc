#include "cli/appliance_rates.h"

#include <cstdio>

#include "cli/render.h"
#include "cli/table.h"

namespace gwlb::cli {

namespace {

const Json kNull;

const Json& member(const Json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) ? obj[key] : kNull;
}

const Json* findAppliance(const Json& result, const Json& address) {
  const Json& list = member(result, "servers");
  if (!list.is_array()) return nullptr;
  for (const auto& s : list)
    if (member(s, "address") == address) return &s;
  return nullptr;
}

// Per second from prev to cur; null when either is missing or it went down.
Json perSecond(const Json& cur, const Json* prev, const char* key, double dt) {
  const Json& c = member(cur, key);
  const Json& p = prev ? member(*prev, key) : kNull;
  if (!c.is_number() || !p.is_number() || !(dt > 0)) return nullptr;
  double d = c.get<double>() - p.get<double>();
  if (d < 0) return nullptr;
  return d / dt;
}

std::string rateText(const Json& v, bool bytes) {
  if (!v.is_number()) return "-";
  double r = v.get<double>();
  return bytes ? formatBytes(uint64_t(r + 0.5)) + "/s" : formatRate(r);
}

}  // namespace

Json applianceRates(const Json& cur, const Json& prev, double dt) {
  Json out = Json::array();
  const Json& list = member(cur, "servers");
  if (!list.is_array()) return out;
  for (const auto& s : list) {
    const Json* p = findAppliance(prev, member(s, "address"));
    out.push_back({{"address", member(s, "address")},
                   {"packets_per_s", perSecond(s, p, "packets", dt)},
                   {"bytes_per_s", perSecond(s, p, "bytes", dt)},
                   {"returned_packets_per_s", perSecond(s, p, "returned_packets", dt)},
                   {"returned_bytes_per_s", perSecond(s, p, "returned_bytes", dt)}});
  }
  return out;
}

std::string renderApplianceRates(const Json& cur, const Json& rates, double dt, double now) {
  Table t({{"ADDRESS", Align::kLeft}, {"GROUP", Align::kLeft}, {"STATE", Align::kLeft},
           {"HEALTH", Align::kLeft}, {"FLOWS", Align::kRight}, {"SENT/S", Align::kRight},
           {"SENT B/S", Align::kRight}, {"RETURNED/S", Align::kRight},
           {"RETURNED B/S", Align::kRight}});
  const Json& list = member(cur, "servers");
  if (list.is_array()) {
    for (size_t i = 0; i < list.size(); ++i) {
      const Json& s = list[i];
      const Json& r = rates.is_array() && i < rates.size() ? rates[i] : kNull;
      t.addRow({fieldText(s, "address"), fieldText(s, "group"), fieldText(s, "state"),
                fieldText(member(s, "health"), "state"), fieldText(s, "active_flows"),
                rateText(member(r, "packets_per_s"), false), rateText(member(r, "bytes_per_s"), true),
                rateText(member(r, "returned_packets_per_s"), false),
                rateText(member(r, "returned_bytes_per_s"), true)});
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", dt);
  std::string head = "taken at " + formatTime(now) + ", rates over the last " + buf + " s\n";
  return head + (t.rows() == 0 ? std::string("no servers\n") : t.render());
}

}  // namespace gwlb::cli
