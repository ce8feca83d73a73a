#include "cli/render.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "cli/class_render.h"
#include "cli/health_render.h"
#include "cli/render_fields.h"
#include "cli/table.h"

namespace gwlb::cli {

namespace {

uint64_t fieldCount(const Json& obj, const char* key) {
  double v = fieldNumber(obj, key, 0);
  return v > 0 ? uint64_t(v) : 0;
}

double valueNumber(const Json& v, double dflt) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    double d = s.rfind("0x", 0) == 0 ? double(std::strtoull(s.c_str(), &end, 16))
                                     : std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return d;
  }
  return dflt;
}

std::string bytesText(const Json& obj, const char* key) {
  return field(obj, key).is_null() ? "-" : formatBytes(fieldCount(obj, key));
}

std::string endpoint(const Json& addr, const Json& port) {
  std::string a = valueText(addr);
  if (port.is_null()) return a;
  if (a.find(':') != std::string::npos) a = "[" + a + "]";
  return a + ":" + valueText(port);
}

// Rate from two samples of one counter: never negative (a restart resets counters).
double rate(const Json& cur, const Json& prev, const char* key, double dt) {
  double d = fieldNumber(cur, key) - fieldNumber(prev, key);
  return dt > 0 && d > 0 ? d / dt : 0.0;
}

const Json* findById(const Json& arr, const Json& id) {
  if (!arr.is_array()) return nullptr;
  for (const auto& e : arr) {
    if (field(e, "id") == id) return &e;
  }
  return nullptr;
}

std::string renderPorts(const Json& ports, const Json* prev_ports, double dt) {
  std::vector<Table::Column> cols = {{"PORT", Align::kRight}, {"NAME", Align::kLeft},
                                     {"LINK", Align::kLeft},  {"SPEED", Align::kRight},
                                     {"RXQ", Align::kRight},  {"TXQ", Align::kRight},
                                     {"RX PKTS", Align::kRight}, {"TX PKTS", Align::kRight},
                                     {"RX BYTES", Align::kRight}, {"TX BYTES", Align::kRight}};
  if (prev_ports) {
    for (const char* h : {"RX PPS", "TX PPS", "RX B/S", "TX B/S"}) cols.push_back({h, Align::kRight});
  }
  for (const char* h : {"MISSED", "RX ERR", "TX ERR"}) cols.push_back({h, Align::kRight});
  Table t(cols);
  if (!ports.is_array()) return "no ports\n";
  for (const auto& p : ports) {
    const Json& link = field(p, "link_up");
    double speed = fieldNumber(p, "speed_mbps", -1);
    std::vector<std::string> row = {
        fieldText(p, "id"), fieldText(p, "name"),
        link.is_boolean() ? (link.get<bool>() ? "up" : "down") : valueText(link),
        speed < 0 ? "-" : speed >= 1000 ? formatCount(uint64_t(speed / 1000)) + "G"
                                        : formatCount(uint64_t(speed)) + "M",
        fieldText(p, "rx_queues"), fieldText(p, "tx_queues"),
        countText(p, "rx_packets"), countText(p, "tx_packets"),
        bytesText(p, "rx_bytes"), bytesText(p, "tx_bytes")};
    if (prev_ports) {
      const Json* q = findById(*prev_ports, field(p, "id"));
      static const Json kEmpty = Json::object();
      const Json& pp = q ? *q : kEmpty;
      row.push_back(formatRate(rate(p, pp, "rx_packets", dt)));
      row.push_back(formatRate(rate(p, pp, "tx_packets", dt)));
      row.push_back(formatBytes(uint64_t(rate(p, pp, "rx_bytes", dt))) + "/s");
      row.push_back(formatBytes(uint64_t(rate(p, pp, "tx_bytes", dt))) + "/s");
    }
    row.push_back(countText(p, "rx_missed"));
    row.push_back(countText(p, "rx_errors"));
    row.push_back(countText(p, "tx_errors"));
    t.addRow(std::move(row));
  }
  return t.render();
}

}  // namespace

const Json& field(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string valueText(const Json& v, const char* dflt) {
  if (v.is_null()) return dflt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return v.dump();
}

std::string countText(const Json& obj, const char* key) {
  return field(obj, key).is_null() ? "-" : formatCount(fieldCount(obj, key));
}

std::string sectionTitle(const std::string& t) { return "\n" + t + ":\n"; }

std::string fieldText(const Json& obj, const char* key, const char* dflt) {
  return valueText(field(obj, key), dflt);
}

double fieldNumber(const Json& obj, const char* key, double dflt) {
  return valueNumber(field(obj, key), dflt);
}

std::string protoName(const Json& proto) {
  if (proto.is_number_integer()) {
    switch (proto.get<int>()) {
      case 1: return "icmp";
      case 6: return "tcp";
      case 17: return "udp";
      case 58: return "icmpv6";
      case 132: return "sctp";
      default: return proto.dump();
    }
  }
  return valueText(proto);
}

std::string renderStatus(const Json& r, double now) {
  KV kv;
  kv.push_back({"version", fieldText(r, "version")});
  double started = fieldNumber(r, "started_at");
  kv.push_back({"uptime", formatDuration(fieldNumber(r, "uptime_s")) + " (started " +
                              formatTime(started) + ")"});
  kv.push_back({"config", fieldText(r, "config_file") + " (loaded " +
                              formatAge(fieldNumber(r, "config_loaded_at"), now) + ")"});
  kv.push_back({"snapshot", "generation " + fieldText(r, "snapshot_generation")});
  // The node's underlay addresses (a gwlbd before them has no such field).
  if (const Json& u = field(r, "underlay"); u.is_object()) {
    const Json &v4 = field(u, "ipv4"), &v6 = field(u, "ipv6");
    std::string t;
    if (v4.is_string()) t = "IPv4 " + v4.get<std::string>();
    if (v6.is_string()) t += (t.empty() ? "IPv6 " : ", IPv6 ") + v6.get<std::string>();
    if (!v4.is_string() && v6.is_string()) t += " (no IPv4 address)";
    kv.push_back({"underlay", t});
  }
  double flows = fieldNumber(r, "flows"), cap = fieldNumber(r, "flow_capacity");
  char pct[32] = "-";
  if (cap > 0) std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * flows / cap);
  kv.push_back({"flows", fieldText(r, "flows") + " of " + fieldText(r, "flow_capacity") + " (" +
                             pct + ")"});
  kv.push_back({"rx", formatRate(fieldNumber(r, "rx_pps")) + " pps"});
  kv.push_back({"tx", formatRate(fieldNumber(r, "tx_pps")) + " pps"});
  // Packet capture (dpdk-dumpcap): a gwlbd before it has no such field.
  const Json& capture = field(r, "capture");
  if (capture.is_object()) {
    std::string c;
    if (field(capture, "available").is_boolean() && field(capture, "available").get<bool>()) {
      const Json& ss = field(capture, "sessions");
      size_t n = ss.is_array() ? ss.size() : 0;
      c = n == 0 ? "none attached (dpdk-dumpcap can attach)"
                 : std::to_string(n) + " queue(s) being captured";
    } else {
      c = "off: " + fieldText(capture, "why_not");
    }
    kv.push_back({"capture", c});
  }
  std::string out = renderKeyValues(kv);

  Table w({{"WORKER", Align::kRight}, {"LCORE", Align::kRight}, {"RX QUEUES (port/queue)", Align::kLeft},
           {"LOOPS", Align::kRight}, {"MAX GAP (recent)", Align::kRight}});
  const Json& workers = field(r, "workers");
  if (workers.is_array()) {
    for (const auto& wk : workers) {
      std::string queues;
      const Json& q = field(wk, "rx_queues");
      if (q.is_array()) {
        for (const auto& e : q) queues += (queues.empty() ? "" : " ") + valueText(e);
      } else {
        queues = valueText(q);
      }
      // Loop fields came with the watchdog: an older gwlbd has none ("-").
      auto gap = [&](const char* k) {
        return field(wk, k).is_number() ? formatNs(fieldNumber(wk, k)) : std::string("-");
      };
      std::string gaps = gap("max_loop_gap_ns");
      if (gaps != "-" || field(wk, "recent_max_loop_gap_ns").is_number())
        gaps += " (" + gap("recent_max_loop_gap_ns") + ")";
      w.addRow({fieldText(wk, "id"), fieldText(wk, "lcore"), queues.empty() ? "-" : queues,
                countText(wk, "loops"), gaps});
    }
  }
  out += sectionTitle("workers") + w.render();
  out += sectionTitle("ports") + renderPorts(field(r, "ports"), nullptr, 0);
  return out;
}

std::string renderAppliances(const Json& r, double now, bool wide) {
  std::vector<Table::Column> cols = {{"ADDRESS", Align::kLeft}, {"GROUP", Align::kLeft},
                                     {"WEIGHT", Align::kRight}, {"STATE", Align::kLeft},
                                     {"SINCE", Align::kLeft}};
  if (wide) cols.push_back({"REASON", Align::kLeft});
  for (Table::Column c : std::vector<Table::Column>{
           {"HEALTH", Align::kLeft}, {"CONSEC", Align::kRight}, {"LAST RESULT", Align::kLeft},
           {"WINDOWS", Align::kLeft}, {"FLOWS", Align::kRight}, {"PACKETS", Align::kRight},
           {"BYTES", Align::kRight}})
    cols.push_back(std::move(c));
  const Json& appliances = field(r, "servers");
  // BYPASSED only once some appliance has handed a flow back (appliance bypass).
  bool bypassed = false;
  if (appliances.is_array())
    for (const auto& s : appliances) bypassed = bypassed || fieldNumber(s, "bypassed_packets") > 0;
  if (bypassed) cols.push_back({"BYPASSED", Align::kRight});
  if (wide) cols.push_back({"MAC", Align::kLeft});
  Table t(std::move(cols));
  if (appliances.is_array()) {
    for (const auto& s : appliances) {
      const Json& h = field(s, "health");
      std::string state = fieldText(s, "state");
      const Json& d = field(s, "drain");
      if (d.is_object() && !field(d, "time_left_s").is_null())
        state += " (" + formatDuration(fieldNumber(d, "time_left_s")) + " left)";
      // Passive detection: ejected, or a black hole its group's cap keeps in service.
      const Json& pv = field(h, "passive");
      if (field(pv, "ejected").is_boolean() && field(pv, "ejected").get<bool>() && state == "unhealthy")
        state += " (no returns)";
      else if (field(pv, "capped").is_boolean() && field(pv, "capped").get<bool>())
        state += " (no returns, at max_ejection_percent)";
      double since = fieldNumber(s, "since");
      if (d.is_object() && !field(d, "for_s").is_null()) since = now - fieldNumber(d, "for_s");
      std::vector<std::string> row = {fieldText(s, "address"), fieldText(s, "group"),
                                      fieldText(s, "weight"), state, formatAge(since, now)};
      if (wide) row.push_back(fieldText(s, "reason"));
      for (std::string c : {fieldText(h, "state"), healthConsecutive(h), healthLastResult(h, wide),
                            healthWindows(h), countText(s, "active_flows"), countText(s, "packets"),
                            bytesText(s, "bytes")})
        row.push_back(std::move(c));
      if (bypassed) row.push_back(countText(s, "bypassed_packets"));
      if (wide) row.push_back(fieldText(s, "mac"));
      t.addRow(std::move(row));
    }
  }
  if (t.rows() == 0) return "no servers\n";
  return t.render();
}

// "2 active, 1 unhealthy": the group's appliances by state, the states
// with none left out ("-" when there is none at all).
std::string applianceStates(const Json& srv) {
  std::string out;
  for (const char* st : {"active", "idle", "unresolved", "unhealthy", "dampened", "initializing",
                         "draining", "drained", "removed"}) {
    const Json& n = field(srv, st);
    if (!n.is_number() || fieldNumber(srv, st) <= 0) continue;
    out += (out.empty() ? "" : ", ") + valueText(n) + " " + st;
  }
  return out.empty() ? "-" : out;
}

std::string renderGroups(const Json& r) {
  Table t({{"NAME", Align::kLeft}, {"STICKINESS", Align::kLeft}, {"FORMAT", Align::kLeft},
           {"VNI", Align::kRight}, {"ENDPOINT ID", Align::kRight}, {"ATTACHMENT ID", Align::kRight},
           {"MAGLEV", Align::kRight}, {"TCP IDLE", Align::kRight}, {"OTHER IDLE", Align::kRight},
           {"SERVERS", Align::kRight}, {"STATES", Align::kLeft}});
  const Json& groups = field(r, "groups");
  if (groups.is_array()) {
    for (const auto& g : groups) {
      const Json& gen = field(g, "geneve");
      const Json& srv = field(g, "servers");
      auto idle = [&](const char* k) {
        return field(g, k).is_null() ? "-" : formatDuration(fieldNumber(g, k));
      };
      // A VXLAN group: its format is vxlan, its VNIs the external and internal
      // tunnels' (ports in the JSON); it has no Geneve IDs.
      const Json& vx = field(g, "vxlan");
      if (fieldText(g, "encapsulation") == "vxlan" && vx.is_object()) {
        t.addRow({fieldText(g, "name"), fieldText(g, "stickiness"), "vxlan",
                  fieldText(field(vx, "external"), "vni") + "/" + fieldText(field(vx, "internal"), "vni"), "-", "-",
                  fieldText(g, "maglev_table_size"), idle("tcp_idle_timeout_s"),
                  idle("other_idle_timeout_s"), fieldText(srv, "total"), applianceStates(srv)});
        continue;
      }
      t.addRow({fieldText(g, "name"), fieldText(g, "stickiness"), fieldText(gen, "format"),
                fieldText(gen, "vni"), fieldText(gen, "endpoint_id"), fieldText(gen, "attachment_id"),
                fieldText(g, "maglev_table_size"), idle("tcp_idle_timeout_s"),
                idle("other_idle_timeout_s"), fieldText(srv, "total"), applianceStates(srv)});
    }
  }
  if (t.rows() == 0) return "no server groups\n";
  return t.render();
}

// "10.0.0.12 (unhealthy, 3.2s ago)" for a flow that moved, "-" otherwise.
std::string movedText(const Json& m) {
  if (!m.is_object()) return "-";
  std::string ago = field(m, "ago_s").is_null() ? "" : ", " + formatDuration(fieldNumber(m, "ago_s")) + " ago";
  return fieldText(m, "from") + " (" + fieldText(m, "reason") + ago + ")";
}

// "BYPASSED BY 10.0.0.5, until +42s" (or "for the flow's life"), "-" when none.
std::string bypassText(const Json& b) {
  if (!b.is_object()) return "-";
  const Json& u = field(b, "until_s");
  return "BYPASSED BY " + fieldText(b, "by") +
         (u.is_null() ? std::string(", for the flow's life") : ", until +" + formatDuration(fieldNumber(b, "until_s")));
}

std::string renderFlows(const Json& flows) {
  // CLASS: the traffic class a flow was created under, when gwlbd has classes.
  bool classes = false;
  if (flows.is_array())
    for (const auto& f : flows) classes = classes || !field(f, "class").is_null();
  std::vector<Table::Column> cols = {
      {"SRC", Align::kLeft}, {"DST", Align::kLeft}, {"PROTO", Align::kLeft},
      {"GROUP", Align::kLeft}, {"APPLIANCE", Align::kLeft}, {"COOKIE", Align::kLeft},
      {"KIND", Align::kLeft}, {"AGE", Align::kRight}, {"IDLE", Align::kRight},
      {"PACKETS", Align::kRight}, {"MOVED FROM", Align::kLeft}};
  if (classes) cols.insert(cols.begin() + 3, {"CLASS", Align::kLeft});
  // BYPASS: when an appliance handed some flow back (appliance_bypass).
  bool bypass = false;
  if (flows.is_array())
    for (const auto& f : flows) bypass = bypass || field(f, "bypass").is_object();
  if (bypass) cols.push_back({"BYPASS", Align::kLeft});
  Table t(std::move(cols));
  if (flows.is_array()) {
    for (const auto& f : flows) {
      auto dur = [&](const char* k) {
        return field(f, k).is_null() ? "-" : formatDuration(fieldNumber(f, k));
      };
      // Fragment entries are keyed without ports (gwlbd reports 0): show addresses only.
      bool fragment = field(f, "kind") == "fragment";
      static const Json kNoPort;
      std::vector<std::string> row = {
          endpoint(field(f, "src"), fragment ? kNoPort : field(f, "sport")),
          endpoint(field(f, "dst"), fragment ? kNoPort : field(f, "dport")),
          protoName(field(f, "proto")),
          fieldText(f, "group"), fieldText(f, "appliance"), fieldText(f, "cookie"),
          fieldText(f, "kind"), dur("age_s"), dur("idle_s"),
          countText(f, "packets"), movedText(field(f, "moved"))};
      if (classes) row.insert(row.begin() + 3, field(f, "class").is_null() ? "-" : fieldText(f, "class"));
      if (bypass) row.push_back(bypassText(field(f, "bypass")));
      t.addRow(std::move(row));
    }
  }
  if (t.rows() == 0) return "no matching flows\n";
  return t.render();
}

std::string renderFlowCount(const Json& r) {
  return fieldText(r, "count") + " matching flows (" + fieldText(r, "scanned") +
         " entries scanned)\n";
}

std::string renderExplain(const Json& r) {
  KV kv;
  addClassLines(kv, field(r, "class"));
  kv.push_back({"key", fieldText(r, "key")});
  kv.push_back({"hash", fieldText(r, "hash")});
  kv.push_back({"group", fieldText(r, "group") + " (stickiness " + fieldText(r, "stickiness") + ")"});
  const Json& existing = field(r, "existing");
  bool exists = existing.is_boolean() && existing.get<bool>();
  if (exists) {
    std::string age = field(r, "age_s").is_null() ? "-" : formatDuration(fieldNumber(r, "age_s"));
    kv.push_back({"flow", "exists (age " + age + ", cookie " + fieldText(r, "cookie") + ")"});
  } else {
    kv.push_back({"flow", "not in the table"});
  }
  kv.push_back({"appliance", fieldText(r, "appliance")});
  const Json& moved = field(r, "moved");
  if (moved.is_object())
    kv.push_back({"moved from", movedText(moved) + ", old cookie " + fieldText(moved, "old_cookie")});
  if (field(r, "bypass").is_object()) kv.push_back({"bypass", bypassText(field(r, "bypass"))});
  kv.push_back({"reason", fieldText(r, "reason")});
  const Json& m = field(r, "maglev");
  if (m.is_object()) {
    kv.push_back({"maglev", "slot " + fieldText(m, "slot") + " of " + fieldText(m, "table_size") +
                                " -> " + fieldText(m, "appliance") + " (a new flow now)"});
  }
  return renderKeyValues(kv);
}

Json statsRates(const Json& cur, const Json& prev, double interval_s) {
  double dt = fieldNumber(cur, "taken_at") - fieldNumber(prev, "taken_at");
  if (!(dt > 0)) dt = interval_s;
  Json out = Json::object();
  out["interval_s"] = dt;
  Json totals = Json::object();
  const Json& ct = field(cur, "totals");
  if (ct.is_object()) {
    for (const auto& [k, v] : ct.items()) totals[k] = rate(ct, field(prev, "totals"), k.c_str(), dt);
  }
  out["totals"] = totals;
  Json drops = Json::object();
  const Json& cd = field(cur, "drops");
  if (cd.is_array()) {
    for (const auto& d : cd) {
      std::string name = fieldText(d, "name", "");
      const Json* p = nullptr;
      for (const auto& e : field(prev, "drops")) {
        if (field(e, "name") == field(d, "name")) p = &e;
      }
      drops[name] = p ? rate(d, *p, "count", dt) : 0.0;
    }
  }
  out["drops"] = drops;
  Json ports = Json::array();
  const Json& cp = field(cur, "ports");
  if (cp.is_array()) {
    for (const auto& p : cp) {
      const Json* q = findById(field(prev, "ports"), field(p, "id"));
      static const Json kEmpty = Json::object();
      const Json& pp = q ? *q : kEmpty;
      ports.push_back({{"id", field(p, "id")},
                       {"rx_pps", rate(p, pp, "rx_packets", dt)},
                       {"tx_pps", rate(p, pp, "tx_packets", dt)},
                       {"rx_bytes_per_s", rate(p, pp, "rx_bytes", dt)},
                       {"tx_bytes_per_s", rate(p, pp, "tx_bytes", dt)}});
    }
  }
  out["ports"] = ports;
  return out;
}

std::string renderStats(const Json& cur, const Json* prev, double interval_s, bool all) {
  size_t hidden = 0, hidden_drops = 0;
  auto isZero = [](const Json& obj, const char* key) {
    const Json& v = field(obj, key);
    return v.is_number() && v.get<double>() == 0;
  };
  Json rates;
  if (prev) rates = statsRates(cur, *prev, interval_s);
  std::string out;
  if (prev) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", fieldNumber(rates, "interval_s"));
    out += "taken at " + formatTime(fieldNumber(cur, "taken_at")) + ", rates over the last " +
           buf + " s\n";
  } else {
    out += "taken at " + formatTime(fieldNumber(cur, "taken_at")) + "\n";
  }

  // Drop reasons get their own table (with help text); keep them out of this one.
  std::set<std::string> drop_names;
  const Json& drops = field(cur, "drops");
  if (drops.is_array()) {
    for (const auto& d : drops) {
      std::string n = fieldText(d, "name", "");
      drop_names.insert(n);
      drop_names.insert("drop_" + n);
    }
  }
  std::vector<Table::Column> cols = {{"COUNTER", Align::kLeft}, {"TOTAL", Align::kRight}};
  if (prev) cols.push_back({"PER SEC", Align::kRight});
  const Json& workers = field(cur, "workers");
  std::vector<const Json*> wcounters;
  if (workers.is_array()) {
    for (const auto& w : workers) {
      cols.push_back({"WORKER " + fieldText(w, "id"), Align::kRight});
      wcounters.push_back(&field(w, "counters"));
    }
  }
  Table t(cols);
  const Json& totals = field(cur, "totals");
  if (totals.is_object()) {
    for (const auto& [name, v] : totals.items()) {
      if (drop_names.count(name)) continue;
      if (!all && isZero(totals, name.c_str())) {
        ++hidden;
        continue;
      }
      // Byte counters in IEC units, event counters in SI.
      bool bytes = name.size() >= 5 && name.compare(name.size() - 5, 5, "bytes") == 0;
      auto amount = [&](const Json& obj) {
        return bytes ? bytesText(obj, name.c_str()) : countText(obj, name.c_str());
      };
      std::vector<std::string> row = {name, amount(totals)};
      if (prev) {
        double r = fieldNumber(field(rates, "totals"), name.c_str());
        row.push_back(bytes ? formatBytes(uint64_t(r)) + "/s" : formatRate(r));
      }
      for (const Json* wc : wcounters) row.push_back(amount(*wc));
      t.addRow(std::move(row));
    }
  }
  out += sectionTitle("counters") + t.render();

  std::vector<Table::Column> dcols = {{"DROP", Align::kLeft}, {"COUNT", Align::kRight}};
  if (prev) dcols.push_back({"PER SEC", Align::kRight});
  dcols.push_back({"MEANING", Align::kLeft});
  Table d(dcols);
  if (drops.is_array()) {
    for (const auto& e : drops) {
      if (!all && isZero(e, "count")) {
        ++hidden_drops;
        continue;
      }
      std::vector<std::string> row = {fieldText(e, "name"), countText(e, "count")};
      if (prev) {
        std::string n = fieldText(e, "name", "");
        row.push_back(formatRate(fieldNumber(field(rates, "drops"), n.c_str())));
      }
      row.push_back(fieldText(e, "help"));
      d.addRow(std::move(row));
    }
  }
  out += sectionTitle("drops") + (d.rows() == 0 ? std::string("no drops\n") : d.render());
  const Json* prev_ports = prev ? &field(*prev, "ports") : nullptr;
  out += sectionTitle("ports") +
         renderPorts(field(cur, "ports"), prev_ports, fieldNumber(rates, "interval_s"));
  if (hidden || hidden_drops)
    out += "\nnot shown, at zero: " + std::to_string(hidden) + " counter" +
           (hidden == 1 ? "" : "s") + ", " + std::to_string(hidden_drops) + " drop reason" +
           (hidden_drops == 1 ? "" : "s") + " (--all shows them)\n";
  return out;
}

// Why a runtime change differs from the file, one phrase.
static std::string changeText(const Json& c) {
  std::string ch = fieldText(c, "change", "?");
  std::string a = fieldText(c, "address", "?") + " (group " + fieldText(c, "group", "?") + ")";
  if (ch == "added") return a + ": added at runtime, not in the file";
  if (ch == "removed") return a + ": removed at runtime, still in the file";
  return a + ": weight " + fieldText(c, "running_weight", "?") + " at runtime, " +
         fieldText(c, "file_weight", "?") + " in the file";
}

std::string renderChange(const std::string& method, const Json& params, const Json& r) {
  std::string out;
  if (method == "server.add") {
    out = "added " + fieldText(params, "address") + " to group " + fieldText(params, "group");
    if (params.contains("weight")) out += " (weight " + fieldText(params, "weight") + ")";
  } else if (method == "server.remove") {
    out = "removed " + fieldText(params, "address");
  } else if (method == "server.set") {
    out = "set " + fieldText(params, "address") + " weight " + fieldText(params, "weight");
  } else if (method == "server.drain") {
    const Json& d = field(r, "drain");
    out = "draining " + fieldText(params, "address");
    if (!field(d, "timeout_s").is_null())
      out += " for " + formatDuration(fieldNumber(d, "timeout_s"));
    out += "; existing flows " + fieldText(d, "existing_flows", "?");
  } else if (method == "server.undrain") {
    out = fieldText(params, "address") + " takes new flows again";
  } else if (method == "reload") {
    out = "reloaded";
  } else {
    out = method + ": ok";
  }
  if (!field(r, "snapshot_generation").is_null())
    out += "; snapshot generation " + fieldText(r, "snapshot_generation");
  out += "\n";
  const Json& warnings = field(r, "warnings");
  if (warnings.is_array())
    for (const auto& w : warnings) out += "warning: " + valueText(w) + "\n";
  const Json& restart = field(r, "restart_needed");
  if (restart.is_array() && !restart.empty()) {
    std::string list;
    for (const auto& e : restart) list += (list.empty() ? "" : ", ") + valueText(e);
    out += "changed settings that take effect at the next restart: " + list + "\n";
  }
  const Json& reverted = field(r, "reverted");
  if (reverted.is_array() && !reverted.empty()) {
    out += "reverted " + std::to_string(reverted.size()) + " runtime change" +
           (reverted.size() == 1 ? "" : "s") + " the file does not carry:\n";
    for (const auto& c : reverted) out += "  " + changeText(c) + "\n";
  }
  return out;
}

std::string renderRuntimeChanges(const Json& r) {
  std::string out;
  const Json& hidden = field(r, "hidden");
  if (hidden.is_array() && !hidden.empty()) {
    std::string list;
    for (const auto& h : hidden) list += (list.empty() ? "" : ", ") + valueText(h);
    out += "gwlbctl: left out (secrets): " + list + "; --secrets includes them\n";
  }
  const Json& ch = field(r, "runtime_changes");
  if (ch.is_array() && !ch.empty()) {
    out += "gwlbctl: " + std::to_string(ch.size()) + " runtime change" + (ch.size() == 1 ? "" : "s") +
           " not in " + fieldText(r, "config_file", "the config file") +
           " (a reload or restart reverts them):\n";
    for (const auto& c : ch) out += "  " + changeText(c) + "\n";
  }
  return out;
}

std::string renderError(const Json& e) {
  std::string out = fieldText(e, "message", "error") + " (" + fieldText(e, "code", "internal") + ")\n";
  const Json& details = field(e, "details");
  if (details.is_array()) {
    for (const auto& d : details) {
      // {path, message} (invalid_config); other details (would_leave_no_service)
      // repeat the message in parts and stay in --json.
      std::string path = fieldText(d, "path", ""), msg = fieldText(d, "message", "");
      if (path.empty() && msg.empty()) continue;
      out += "  " + (path.empty() ? std::string() : path + ": ") + msg + "\n";
    }
  }
  return out;
}

}  // namespace gwlb::cli
