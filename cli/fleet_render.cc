#include "cli/fleet_render.h"

#include "cli/render.h"
#include "cli/table.h"

namespace gwlb::cli {

namespace {

const Json& at(const Json& obj, const char* key) {
  static const Json kNull;
  return obj.is_object() && obj.contains(key) ? obj[key] : kNull;
}

std::string yesNo(const Json& v) {
  if (!v.is_boolean()) return "-";
  return v.get<bool>() ? "yes" : "no";
}

}  // namespace

std::string renderFleet(const Json& r) {
  const Json& a = at(r, "announce");
  std::vector<std::pair<std::string, std::string>> kv;
  kv.push_back({"node", fieldText(r, "node_name", "(no fleet section)")});
  std::string routes = fieldText(a, "state");
  if (at(a, "since_s").is_number()) routes += " for " + formatDuration(fieldNumber(a, "since_s"));
  kv.push_back({"routes", routes});
  kv.push_back({"why", fieldText(a, "reason")});
  const Json& w = at(r, "warm_start");
  if (w.is_object()) {
    std::string ws = fieldText(w, "state");
    if (fieldText(w, "state") == "done")
      ws += ": " + fieldText(w, "flows_installed", "0") + " flows from " + fieldText(w, "peer", "?");
    else if (fieldText(w, "state") == "waiting" && at(w, "asking").is_string())
      ws += ": asking " + fieldText(w, "asking");
    kv.push_back({"warm start", ws});
  }
  // Whether a TCP segment with no record is picked here or reset
  // (docs/fleet.md "A segment with no record").
  const Json& v = at(r, "view");
  if (v.is_object() && at(v, "complete").is_boolean())
    kv.push_back({"flow records", at(v, "complete") == Json(true)
                                      ? std::string("complete")
                                      : "may be missing: " + fieldText(v, "why") +
                                            " (a mid-connection TCP segment with no record is reset)"});
  const Json& b = at(a, "bird");
  std::string out;
  if (b.is_object()) {
    kv.push_back({"grace period", formatDuration(fieldNumber(a, "grace_period_s")) +
                                      " (on SIGTERM: withdraw, keep forwarding, then exit)"});
    std::string conn = fieldText(b, "socket") + (at(b, "connected") == Json(true) ? ", connected"
                                                                                   : ", not connected");
    if (!fieldText(b, "error", "").empty()) conn += " (" + fieldText(b, "error") + ")";
    kv.push_back({"BIRD", conn});
    kv.push_back({"asks BIRD", fieldText(b, "wanted") + " protocols; " +
                                   fieldText(b, "commands_sent", "0") + " enable/disable sent"});
    out = renderKeyValues(kv);
    Table t({{"PROTOCOL"}, {"STATE IN BIRD"}});
    if (at(b, "protocols").is_array())
      for (const Json& p : at(b, "protocols")) t.addRow({fieldText(p, "name"), fieldText(p, "state")});
    out += "\n" + t.render();
  } else {
    out = renderKeyValues(kv);
  }
  const Json& peers = at(r, "peers");
  if (peers.is_array()) {
    Table t({{"PEER"},
             {"REACHABLE"},
             {"LAST SYNC", Align::kRight},
             {"FLOWS IN", Align::kRight},
             {"FLOWS OUT", Align::kRight},
             {"AUTH FAILURES", Align::kRight},
             {"REPLAYED", Align::kRight},
             {"MALFORMED", Align::kRight},
             {"CONFIG"}});
    std::string self;
    for (const Json& p : peers) {
      const Json& ls = at(p, "last_sync_s");
      bool is_self = at(p, "this_node") == Json(true);
      if (is_self) self += "  " + fieldText(p, "address") + ": " + fieldText(p, "this_node_why") + "\n";
      t.addRow({fieldText(p, "address"), is_self ? "this node" : yesNo(at(p, "reachable")),
                ls.is_number() ? formatDuration(ls.get<double>()) + " ago" : "never",
                fieldText(p, "flows_received"), fieldText(p, "flows_sent"),
                fieldText(p, "auth_failures"), fieldText(p, "replayed"), fieldText(p, "malformed"),
                fieldText(at(p, "config"), "state")});
    }
    out += "\n";
    out += peers.empty() ? "no peers\n" : t.render();
    if (!self.empty())
      out += "\npeers that are this node (skipped: nothing sent to them, not asked for a warm "
             "start):\n" + self;
    // Someone replaying this node's own datagrams from a peer's address (a
    // recorded message sent back): counted apart from `replayed`, worth a look.
    std::string echoes;
    for (const Json& p : peers) {
      const Json& n = at(p, "self_replayed");
      if (n.is_number() && n.get<double>() > 0)
        echoes += "  " + fieldText(p, "address") + ": " + fieldText(p, "self_replayed") + "\n";
    }
    if (!echoes.empty())
      out += "\nthis node's own datagrams replayed from a peer's address (dropped):\n" + echoes;
    // Appliances whose health this node and a peer judge differently.
    Table d({{"APPLIANCE"}, {"HERE"}, {"PEER"}, {"THERE"}});
    size_t n = 0;
    for (const Json& p : peers)
      if (at(p, "health_disagreements").is_array())
        for (const Json& x : at(p, "health_disagreements")) {
          d.addRow({fieldText(x, "appliance"), fieldText(x, "here"), fieldText(p, "address"),
                    fieldText(x, "there")});
          ++n;
        }
    if (n) out += "\nhealth disagreements (new flows go to different appliances by node):\n" + d.render();
    // Peers whose config differs from this node's, by section (docs/fleet.md "Config drift").
    Table c({{"PEER"}, {"SECTIONS THAT DIFFER"}});
    size_t drift = 0;
    for (const Json& p : peers) {
      const Json& sec = at(at(p, "config"), "differing_sections");
      if (!sec.is_array() || sec.empty()) continue;
      std::string names;
      for (const Json& x : sec) names += (names.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : "?");
      c.addRow({fieldText(p, "address"), names});
      ++drift;
    }
    if (drift) out += "\nconfig drift (these peers run other settings than this node):\n" + c.render();
  }
  return out;
}

}  // namespace gwlb::cli
