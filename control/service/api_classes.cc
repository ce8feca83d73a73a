// Traffic classes as gwlbd shows them: the control API's `classes`
// (every class in order with its match, action, listener and what it
// counted), the per-class families of /metrics, and the class part of
// `explain`. A class counts in the counter slot its name holds
// (control/engine/class_slots.h), so its figures survive reloads that move it.
// Control thread.
#include <sstream>

#include "control/api/api_params.h"
#include "control/engine/class_explain.h"
#include "control/service/handlers.h"

namespace gwlb::ctl {

using nlohmann::json;

namespace {

std::string escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '\\' || c == '"') r += '\\';
    r += c;
  }
  return r;
}

}  // namespace

std::vector<ClassRow> classRows(const Engine& engine, const WorkerStats& workers) {
  std::vector<ClassRow> rows;
  const auto& classes = engine.config().traffic_classes;
  for (size_t i = 0; i < classes.size(); ++i) {
    const TrafficClassConfig& tc = classes[i];
    ClassRow r;
    r.index = i;
    r.name = tc.name;
    r.action = toString(tc.action);
    if (tc.action == ClassAction::kInspect) r.listener = tc.listener.empty() ? "default" : tc.listener;
    const uint16_t slot = engine.classSlots().slotOf(tc.name);
    if (slot != kNoClass) r.count = engine.classSlots().since(slot, workers.classSlot(slot));
    rows.push_back(std::move(r));
  }
  return rows;
}

json classesMethod(const Engine& engine, const WorkerStats& workers, bool reloading, const json& p) {
  Params(p, {});
  const auto& classes = engine.config().traffic_classes;
  json list = json::array();
  for (const ClassRow& r : classRows(engine, workers)) {
    const TrafficClassMatch& m = classes[r.index].match;
    list.push_back({{"index", r.index},
                    {"name", r.name},
                    {"match", matchJson(m)},
                    {"match_summary", matchSummary(m)},
                    {"action", r.action},
                    {"listener", r.listener.empty() ? json(nullptr) : json(r.listener)},
                    {"mirror", classes[r.index].mirror.group.empty() ? json(nullptr)
                                                                      : json(mirrorText(classes[r.index].mirror))},
                    {"tag", classes[r.index].tag.empty() ? json(nullptr) : json(classes[r.index].tag)},
                    {"tag_value", classTagValue(engine.config().tags, classes[r.index].tag) ? json(*classTagValue(engine.config().tags, classes[r.index].tag)) : json(nullptr)},
                    // The class id mirror copies carry (its counter slot: stable across reloads).
                    {"id", engine.classSlots().slotOf(r.name)},
                    {"packets", r.count.packets},
                    {"bytes", r.count.bytes},
                    {"appliance_bypassed_packets", r.count.appliance_bypassed_packets},
                    {"appliance_bypassed_bytes", r.count.appliance_bypassed_bytes}});
  }
  const WorkerCounters t = workers.totals();
  json out = {{"configured", !classes.empty()},
              {"classes", list},
              {"unclassified", {{"packets", t.get(Counter::drop_unclassified)}}}};
  // How the workers' snapshot holds them (common/traffic_class.h): the cross
  // product costs the same per packet whatever the rules; the bit vectors,
  // for rule sets whose product is too large, grow with the rule count.
  // IPv4 addresses: a trie, or past its budget a binary search.
  if (const dp::Snapshot* s = engine.current(); s && !s->classes.empty())
    out["compiled"] = {{"rules", s->classes.size()},
                       {"structure", s->classes.crossProduct() ? "cross_product" : "bit_vectors"},
                       {"ipv4", s->classes.ipv4Trie() ? "trie" : "intervals"},
                       {"bytes", s->classes.memoryBytes()}};
  // A change waiting for its classes to compile, or a reload reading,
  // checking and compiling its file (the running ones serve meanwhile).
  out["compiling"] = engine.pending() || reloading;
  if (classes.empty())
    out["default_listener"] = engine.regions().listeners().empty() ? "default" : engine.regions().listeners()[0].name;
  return out;
}

// Families always declared (the dashboard's queries name them), samples
// only with traffic_classes.
void classMetrics(std::ostringstream& o, const Engine& engine, const WorkerStats& workers) {
  const std::vector<ClassRow> rows = classRows(engine, workers);
  const std::pair<const char*, const char*> families[] = {
      {"gwlb_class_packets_total",
       "packets each traffic class matched (as received), by class, action and listener; "
       "packets no class matches are gwlb_dropped_packets_total{reason=\"unclassified\"}"},
      {"gwlb_class_bytes_total", "bytes of those packets (frames as received)"},
      {"gwlb_class_appliance_bypassed_packets_total",
       "of those, packets of flows their appliance handed back (listeners[].appliance_bypass), sent "
       "straight back toward the router uninspected, by class, action and listener"},
      {"gwlb_class_appliance_bypassed_bytes_total", "bytes of those packets (frames as received)"},
  };
  for (const auto& [name, help] : families) {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " counter\n";
    const std::string n = name;
    for (const ClassRow& r : rows) {
      const ClassCount& c = r.count;
      const uint64_t v = n == "gwlb_class_packets_total"   ? c.packets
                         : n == "gwlb_class_bytes_total" ? c.bytes
                         : n == "gwlb_class_appliance_bypassed_packets_total" ? c.appliance_bypassed_packets
                                                                              : c.appliance_bypassed_bytes;
      o << name << "{class=\"" << escape(r.name) << "\",action=\"" << r.action << "\",listener=\""
        << escape(r.listener) << "\"} " << v << '\n';
    }
  }
}

json classExplainJson(const Config& cfg, const L4Tuple& t, std::optional<uint16_t> port, uint16_t vlan) {
  ClassQuery q;
  q.port = port;
  q.vlan = vlan;
  q.tuple = t;
  return explanationJson(cfg.traffic_classes, explainClasses(cfg.traffic_classes, q));
}

}  // namespace gwlb::ctl
