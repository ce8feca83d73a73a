#include "cli/class_render.h"

#include "cli/render.h"
#include "cli/table.h"

namespace gwlb::cli {

namespace {

std::string classRef(const Json& c) {
  return fieldText(c, "name") + " (traffic_classes[" + fieldText(c, "index") + "])";
}

std::string lines(const Json& list) {
  std::string s;
  if (!list.is_array()) return s;
  for (const auto& x : list) s += (s.empty() ? "" : "\n") + valueText(x);
  return s;
}

}  // namespace

std::string renderClasses(const Json& r) {
  const Json& cfg = field(r, "configured");
  const Json& un = field(r, "unclassified");
  if (!(cfg.is_boolean() && cfg.get<bool>()))
    return "no traffic_classes: every packet is inspected by listener '" +
           fieldText(r, "default_listener") + "'\n";
  const Json& classes = field(r, "classes");
  // HANDED BACK only once an appliance has bypassed some class's flow.
  bool handed_back = false;
  if (classes.is_array())
    for (const auto& c : classes) handed_back = handed_back || fieldNumber(c, "appliance_bypassed_packets") > 0;
  std::vector<Table::Column> cols = {{"#", Align::kRight},        {"NAME", Align::kLeft},
                                     {"MATCH", Align::kLeft},     {"ACTION", Align::kLeft},
                                     {"LISTENER", Align::kLeft},  {"PACKETS", Align::kRight},
                                     {"BYTES", Align::kRight}};
  if (handed_back) cols.push_back({"HANDED BACK", Align::kRight});
  Table t(std::move(cols));
  if (classes.is_array()) {
    for (const auto& c : classes) {
      const Json& b = field(c, "bytes");
      t.addRow({fieldText(c, "index"), fieldText(c, "name"), fieldText(c, "match_summary"),
                fieldText(c, "action"), fieldText(c, "listener"), countText(c, "packets"),
                b.is_number() ? formatBytes(b.get<uint64_t>()) : "-", countText(c, "appliance_bypassed_packets")});
    }
  }
  t.addRow({"-", "(none)", "no class matches", "drop", "-", countText(un, "packets"), "-"});
  std::string out = t.render() + "first match wins; (none): dropped as unclassified (drop_unclassified)\n";
  if (handed_back)
    out += "HANDED BACK: packets of the class's flows their appliance handed back (appliance bypass), "
           "sent straight back uninspected\n";
  // Tags and mirrors under the table: most classes have none, and the text is long.
  if (classes.is_array())
    for (const auto& c : classes) {
      if (field(c, "tag").is_string())
        out += "tag: " + fieldText(c, "name") + ": " + fieldText(c, "tag") +
               (fieldText(c, "tag") == fieldText(c, "tag_value") ? "" : " = " + fieldText(c, "tag_value")) +
               " in every packet to its appliances\n";
      if (field(c, "mirror").is_string())
        out += "mirror: " + fieldText(c, "name") + " (class id " + fieldText(c, "id") + " in the copies): " +
               fieldText(c, "mirror") + "\n";
    }
  const Json& comp = field(r, "compiled");
  const Json& bytes = field(comp, "bytes");
  if (comp.is_object() && bytes.is_number()) {
    const bool cross = fieldText(comp, "structure") == "cross_product";
    out += "compiled for the workers: " + fieldText(comp, "rules") + " rules, " +
           (cross ? "cross product (one cost per packet whatever the rules)"
                  : "bit vectors (the cross product would be too large: a packet's cost grows with the rules)") +
           (fieldText(comp, "ipv4") == "intervals" ? ", IPv4 addresses by binary search (too many for the trie)" : "") +
           ", " + formatBytes(bytes.get<uint64_t>()) + "\n";
  }
  const Json& compiling = field(r, "compiling");
  if (compiling.is_boolean() && compiling.get<bool>())
    out += "compiling: a config change waits for its traffic classes; the classes above serve until it is published\n";
  return out;
}

void addClassLines(KV& kv, const Json& cls) {
  if (!cls.is_object()) return;
  if (field(cls, "name").is_null()) {
    kv.push_back({"class", "none matches: dropped as unclassified (drop_unclassified)"});
  } else {
    std::string action = fieldText(cls, "action");
    if (action == "inspect") action += ", listener " + fieldText(cls, "listener");
    kv.push_back({"class", classRef(cls) + ": " + action});
    std::string why = lines(field(cls, "matched"));
    kv.push_back({"matched", why.empty() ? "no match fields: every packet" : why});
    if (field(cls, "mirror").is_string()) kv.push_back({"mirror", fieldText(cls, "mirror")});
    if (field(cls, "tag").is_string()) kv.push_back({"tag", fieldText(cls, "tag")});
  }
  std::string skipped;
  const Json& sk = field(cls, "skipped");
  if (sk.is_array())
    for (const auto& c : sk) skipped += (skipped.empty() ? "" : "\n") + classRef(c) + ": " + fieldText(c, "why");
  if (!skipped.empty()) kv.push_back({"not matched", skipped});
  if (field(cls, "note").is_string()) kv.push_back({"note", fieldText(cls, "note")});
}

}  // namespace gwlb::cli
