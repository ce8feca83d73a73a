#include "control/engine/class_explain.h"

#include <cstring>

namespace gwlb::ctl {

using nlohmann::json;

namespace {

std::string prefixText(const PrefixConfig& p) { return p.addr.str() + "/" + std::to_string(p.len); }
std::string rangeText(const PortRange& r) {
  return r.lo == r.hi ? std::to_string(r.lo) : std::to_string(r.lo) + "-" + std::to_string(r.hi);
}

template <class T, class F>
std::string joined(const std::vector<T>& v, F text, const char* sep = ", ") {
  std::string s;
  for (const T& x : v) s += (s.empty() ? "" : sep) + text(x);
  return s;
}
std::string num(uint16_t v) { return std::to_string(v); }
std::string protoText(uint8_t p) { return protocolName(p); }

bool inPrefix(const IpAddr& a, const PrefixConfig& p) {
  if (a.family != p.addr.family) return false;
  unsigned full = p.len / 8u, rest = p.len % 8u;
  if (std::memcmp(a.b.data(), p.addr.b.data(), full) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = uint8_t(0xFF << (8 - rest));
  return (a.b[full] & mask) == (p.addr.b[full] & mask);
}

bool inRanges(uint16_t v, const std::vector<PortRange>& rs) {
  for (const PortRange& r : rs)
    if (r.lo <= v && v <= r.hi) return true;
  return false;
}

template <class T>
bool listed(const std::vector<T>& v, T x) {
  for (const T& y : v)
    if (y == x) return true;
  return false;
}

std::vector<FieldVerdict> checkFields(const TrafficClassMatch& m, const ClassQuery& q) {
  std::vector<FieldVerdict> out;
  const L4Tuple& t = q.tuple;
  if (!m.ingress_ports.empty()) {
    FieldVerdict f{"ingress_ports"};
    const std::string list = joined(m.ingress_ports, num);
    if (!q.port) {
      f.unknown = true;
      f.text = "ingress port not given (the class needs " + list + ")";
    } else {
      f.matched = listed(m.ingress_ports, *q.port);
      f.text = "port " + num(*q.port) + (f.matched ? " is in " : " is not in ") + list;
    }
    out.push_back(std::move(f));
  }
  if (!m.vlans.empty()) {
    FieldVerdict f{"vlans"};
    f.matched = listed(m.vlans, q.vlan);
    f.text = (q.vlan == 0 ? std::string("untagged (vlan 0)") : "vlan " + num(q.vlan)) +
             (f.matched ? " is in " : " is not in ") + joined(m.vlans, num);
    out.push_back(std::move(f));
  }
  if (!m.prefixes.empty()) {
    FieldVerdict f{"prefixes"};
    const std::string list = joined(m.prefixes, prefixText);
    for (const auto& [end, a] : {std::pair<const char*, const IpAddr*>{"src", &t.src}, {"dst", &t.dst}})
      for (const PrefixConfig& p : m.prefixes)
        if (!f.matched && inPrefix(*a, p)) {
          f.matched = true;
          f.text = std::string(end) + " " + a->str() + " is in " + prefixText(p);
        }
    if (!f.matched) f.text = "neither " + t.src.str() + " nor " + t.dst.str() + " is in " + list;
    out.push_back(std::move(f));
  }
  if (!m.protocols.empty()) {
    FieldVerdict f{"protocols"};
    f.matched = listed(m.protocols, t.proto);
    f.text = protocolName(t.proto) + (f.matched ? " is in " : " is not in ") + joined(m.protocols, protoText);
    out.push_back(std::move(f));
  }
  if (!m.l4_ports.empty()) {
    FieldVerdict f{"l4_ports"};
    const std::string list = joined(m.l4_ports, rangeText);
    if (inRanges(t.sport, m.l4_ports)) {
      f.matched = true;
      f.text = "sport " + num(t.sport) + " is in " + list;
    } else if (inRanges(t.dport, m.l4_ports)) {
      f.matched = true;
      f.text = "dport " + num(t.dport) + " is in " + list;
    } else {
      f.text = "neither port " + num(t.sport) + " nor " + num(t.dport) + " is in " + list;
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string classRef(const std::vector<TrafficClassConfig>& c, size_t i) {
  return "class '" + c[i].name + "' (traffic_classes[" + std::to_string(i) + "])";
}

}  // namespace

std::string protocolName(uint8_t p) {
  switch (p) {
    case kProtoTcp: return "tcp";
    case kProtoUdp: return "udp";
    case kProtoIcmp: return "icmp";
    case 132: return "sctp";
    default: return std::to_string(p);
  }
}

ClassExplanation explainClasses(const std::vector<TrafficClassConfig>& classes, const ClassQuery& q) {
  ClassExplanation e;
  for (size_t i = 0; i < classes.size(); ++i) {
    ClassVerdictText v;
    v.index = i;
    v.name = classes[i].name;
    v.fields = checkFields(classes[i].match, q);
    v.matched = true;
    for (const FieldVerdict& f : v.fields) {
      v.matched = v.matched && f.matched;
      e.port_unknown = e.port_unknown || f.unknown;
    }
    e.classes.push_back(std::move(v));
    if (e.classes.back().matched) {
      e.matched = int(i);
      break;
    }
  }
  return e;
}

std::string matchSummary(const TrafficClassMatch& m) {
  std::string s;
  auto add = [&](const char* name, const std::string& v) {
    s += (s.empty() ? "" : "; ") + std::string(name) + " " + v;
  };
  if (!m.ingress_ports.empty()) add("ingress_ports", joined(m.ingress_ports, num, ","));
  if (!m.vlans.empty()) add("vlans", joined(m.vlans, num, ","));
  if (!m.prefixes.empty()) add("prefixes", joined(m.prefixes, prefixText, ","));
  if (!m.protocols.empty()) add("protocols", joined(m.protocols, protoText, ","));
  if (!m.l4_ports.empty()) add("l4_ports", joined(m.l4_ports, rangeText, ","));
  return s.empty() ? "every packet" : s;
}

json matchJson(const TrafficClassMatch& m) {
  json j = json::object();
  auto put = [&](const char* k, const auto& v, auto text) {
    if (v.empty()) return;
    json a = json::array();
    for (const auto& x : v) a.push_back(text(x));
    j[k] = a;
  };
  put("ingress_ports", m.ingress_ports, num);
  put("vlans", m.vlans, num);
  put("prefixes", m.prefixes, prefixText);
  put("protocols", m.protocols, protoText);
  put("l4_ports", m.l4_ports, rangeText);
  return j;
}

std::string mirrorText(const ClassMirrorConfig& m) {
  if (m.group.empty()) return "";
  return "copies to server group '" + m.group + "'" +
         (m.truncate ? ", first " + std::to_string(m.truncate) + " bytes" : std::string()) +
         (m.sample > 1 ? ", 1 packet in " + std::to_string(m.sample) : std::string());
}

json explanationJson(const std::vector<TrafficClassConfig>& classes, const ClassExplanation& e) {
  json skipped = json::array();
  for (const ClassVerdictText& v : e.classes) {
    if (v.matched) continue;
    std::string why;
    for (const FieldVerdict& f : v.fields)
      if (!f.matched) why += (why.empty() ? "" : "; ") + f.field + ": " + f.text;
    skipped.push_back({{"index", v.index}, {"name", v.name}, {"why", why}});
  }
  json out = {{"skipped", skipped}};
  if (e.port_unknown)
    out["note"] = "classes that list ingress_ports were taken as not matching: give the ingress port (--port)";
  if (e.matched < 0) {
    out["index"] = nullptr;
    out["name"] = nullptr;
    out["action"] = "drop";
    out["listener"] = nullptr;
    out["matched"] = json::array();
    out["reason"] = "no class matches: dropped as unclassified (drop_unclassified)";
    return out;
  }
  const size_t i = size_t(e.matched);
  const TrafficClassConfig& tc = classes[i];
  const ClassVerdictText& v = e.classes.back();
  json matched = json::array();
  std::string fields;
  for (const FieldVerdict& f : v.fields) {
    matched.push_back(f.field + ": " + f.text);
    fields += (fields.empty() ? "" : "; ") + f.field + ": " + f.text;
  }
  if (v.fields.empty()) fields = "it has no match fields (every packet)";
  out["index"] = i;
  out["name"] = tc.name;
  out["action"] = toString(tc.action);
  const std::string listener = tc.listener.empty() ? "default" : tc.listener;
  out["listener"] = tc.action == ClassAction::kInspect ? json(listener) : json(nullptr);
  out["matched"] = matched;
  if (!tc.mirror.group.empty()) out["mirror"] = mirrorText(tc.mirror);
  if (!tc.tag.empty()) out["tag"] = tc.tag;
  std::string what = tc.action == ClassAction::kInspect
                         ? "inspected by listener '" + listener + "'"
                     : tc.action == ClassAction::kBypass
                         ? "bypassed: sent back to the router it came from, not inspected"
                         : "dropped (drop_class_drop)";
  out["reason"] = classRef(classes, i) + " matches (" + fields + "): " + what;
  return out;
}

}  // namespace gwlb::ctl
