#include "cli/health_render.h"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "cli/render.h"
#include "cli/table.h"

namespace gwlb::cli {

namespace {

const Json& field(const Json& obj, const char* key) {
  static const Json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

bool isTrue(const Json& v) { return v.is_boolean() && v.get<bool>(); }

// Whether an appliance in this health state is probed (and so has windows).
bool probedState(const std::string& s) {
  return s == "initializing" || s == "healthy" || s == "unhealthy" || s == "draining";
}

std::string stateMeaning(const std::string& s) {
  if (s == "initializing") return "checks started, no verdict yet";
  if (s == "healthy") return "passes its checks: in service";
  if (s == "unhealthy") return "failed its checks: no new flows";
  if (s == "unused") return "weight 0: not probed";
  if (s == "disabled") return "health checks off: treated as healthy";
  if (s == "draining") return "removed: keeps its existing flows only";
  return "";
}

// "connect_timeout: no answer ..." -> {"connect_timeout", "no answer ..."}.
std::pair<std::string, std::string> splitReason(const std::string& reason) {
  size_t colon = reason.find(": ");
  if (colon == std::string::npos) return {reason, ""};
  return {reason.substr(0, colon), reason.substr(colon + 2)};
}

std::string joinList(const Json& v, const char* sep) {
  if (!v.is_array()) return v.is_string() ? v.get<std::string>() : v.is_null() ? "-" : v.dump();
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "" : sep) + (e.is_string() ? e.get<std::string>() : e.dump());
  return s;
}

std::string checkText(const Json& c) {
  if (!c.is_object()) return "-";
  if (field(c, "configured").is_boolean() && !isTrue(field(c, "configured")))
    return "none configured: every appliance of the group is treated as healthy";
  std::string proto = fieldText(c, "protocol");
  std::string s;
  if (field(c, "enabled").is_boolean() && !isTrue(field(c, "enabled")))
    s = "disabled (enabled: false): not probed, treated as healthy\n";
  s += proto + " port " + fieldText(c, "port");
  if (proto == "http" || proto == "https") {
    s += ", GET " + fieldText(c, "path");
    std::string domain = fieldText(c, "domain", "");
    if (!domain.empty()) s += ", Host " + domain;
    s += ", codes " + joinList(field(c, "http_codes"), ",");
  }
  const Json& src = field(c, "source");
  if (src.is_string() && !src.get<std::string>().empty()) s += ", from " + src.get<std::string>();
  if (isTrue(field(c, "verify"))) s += ", verify (CA " + fieldText(c, "ca_file") + ")";
  auto ms = [&](const char* k) {
    return field(c, k).is_number() ? formatMs(fieldNumber(c, k)) : std::string("-");
  };
  s += "\nevery " + ms("interval_ms") + ", timeout " + ms("timeout_ms") + "; healthy after " +
       fieldText(c, "healthy_threshold") + " successes, unhealthy after " +
       fieldText(c, "unhealthy_threshold") + " failures";
  return s;
}

}  // namespace

std::string formatMs(double ms) {
  if (!std::isfinite(ms) || ms < 0) return "-";
  char buf[32];
  if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%.0fms", ms);
    return buf;
  }
  double s = ms / 1000.0;
  if (s < 60 && s != std::floor(s)) {
    std::snprintf(buf, sizeof buf, "%.1fs", std::floor(s * 10.0) / 10.0);
    return buf;
  }
  return formatDuration(s);
}

std::string formatAgo(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  if (seconds < 60) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs ago", seconds);
    return buf;
  }
  return formatDuration(seconds) + " ago";
}

std::string healthConsecutive(const Json& h) {
  double n = fieldNumber(h, "consecutive", 0);
  if (!(n >= 1) || !field(h, "last_ok").is_boolean()) return "-";
  return std::to_string(uint64_t(n)) + (isTrue(field(h, "last_ok")) ? "✓" : "✗");
}

std::string healthLastResult(const Json& h, bool full) {
  // No result since probing (re)started: gwlbd may then report a transition's
  // reason ("weight 0") as last_result.
  std::string r = fieldText(h, "last_result", "");
  if (r.empty() || !(fieldNumber(h, "consecutive", 0) >= 1)) return "-";
  if (full) return r;
  auto [code, detail] = splitReason(r);
  // bad_status: "HTTP 503 (expected 200-399)" -> "bad_status 503"
  if (detail.rfind("HTTP ", 0) == 0) {
    size_t end = detail.find(' ', 5);
    code += " " + detail.substr(5, end == std::string::npos ? std::string::npos : end - 5);
  }
  return code;
}

std::string healthWindows(const Json& h) {
  if (!probedState(fieldText(h, "state", "")) || !field(h, "failure_window_s").is_number() ||
      !field(h, "success_window_s").is_number())
    return "-";
  return "fail " + formatMs(fieldNumber(h, "failure_window_s") * 1000.0) + " / ok " +
         formatMs(fieldNumber(h, "success_window_s") * 1000.0);
}

std::string healthEvent(const Json& e) {
  const Json& tr = field(e, "transition");
  std::string reason = fieldText(e, "reason", "");
  if (tr.is_object()) {
    return "→ " + fieldText(tr, "to") + (reason.empty() ? "" : ": " + reason);
  }
  auto [code, detail] = splitReason(reason);
  std::string s = isTrue(field(e, "ok")) ? "✓ " : "✗ ";
  s += code.empty() ? "-" : code;
  if (field(e, "response_ms").is_number())
    s += " (" + std::to_string(uint64_t(std::max(0.0, fieldNumber(e, "response_ms")))) + " ms)";
  if (!detail.empty()) s += ": " + detail;
  return s;
}

std::string renderHealth(const Json& r, double now) {
  std::vector<std::pair<std::string, std::string>> kv;
  kv.push_back({"appliance", fieldText(r, "address") + " (group " + fieldText(r, "group") + ")"});
  std::string state = fieldText(r, "state");
  std::string st = state;
  if (field(r, "since").is_number()) st += " since " + formatAge(fieldNumber(r, "since"), now);
  if (std::string m = stateMeaning(state); !m.empty()) {
    if (state == "initializing")
      m += isTrue(field(r, "provisional"))
               ? ": serves new flows until its first failed check (its group is starting)"
               : ": no new flows until it passes its checks";
    st += " (" + m + ")";
  }
  kv.push_back({"state", st});
  if (probedState(state)) {
    std::string cons = healthConsecutive(r);
    if (cons == "-") {
      kv.push_back({"last result", "none yet"});
    } else {
      bool ok = isTrue(field(r, "last_ok"));
      const bool one = fieldNumber(r, "consecutive") == 1;
      kv.push_back({"last result", std::string(ok ? "✓ " : "✗ ") + healthLastResult(r, true) +
                                       " (" + fieldText(r, "consecutive") + " " +
                                       (ok ? (one ? "success" : "successes")
                                           : (one ? "failure" : "failures")) +
                                       " in a row)"});
    }
    kv.push_back({"windows", healthWindows(r) +
                                 " (unhealthy / healthy this long after the first failed / "
                                 "passed check)"});
  }
  kv.push_back({"check", checkText(field(r, "check"))});
  if (const Json& f = field(r, "forwarding"); f.is_object())
    kv.push_back({"forwarding probes", fieldText(f, "sent") + " sent, " + fieldText(f, "returned") +
                                           " returned, " + fieldText(f, "timed_out") + " timed out, " +
                                           fieldText(f, "unsent") + " unsent"});
  if (const Json& k = field(r, "connections"); k.is_object())
    kv.push_back({"connections", fieldText(k, "answered_on_kept") + " answered on a kept connection; TLS handshakes " +
                                     fieldText(k, "tls_full_handshakes") + " full, " +
                                     fieldText(k, "tls_resumed_handshakes") + " resumed"});
  if (const Json& st = field(r, "settling"); st.is_object() && field(st, "keeps_flows_for_s").is_number())
    kv.push_back({"settling", "keeps its flows " + formatMs(fieldNumber(st, "keeps_flows_for_s") * 1000.0) +
                                  " more: its group settles after every appliance failed"});
  if (const Json& pv = field(r, "passive"); pv.is_object() && field(pv, "out_for_s").is_number())
    kv.push_back({"ejection time", formatMs(fieldNumber(pv, "out_for_s") * 1000.0) + " left (ejection " +
                                       fieldText(pv, "ejections_in_a_row") + " in a row)"});
  std::string out = renderKeyValues(kv);

  const Json& hist = field(r, "history");
  if (!hist.is_array() || hist.empty()) {
    if (probedState(state)) out += "\nhistory: none yet\n";
    return out;
  }
  out += "\nhistory (newest last):\n";
  std::vector<std::pair<std::string, std::string>> lines;
  size_t w = 0;
  for (const auto& e : hist) {
    std::string ago = field(e, "ago_s").is_number() ? formatAgo(fieldNumber(e, "ago_s")) : "-";
    w = std::max(w, displayWidth(ago));
    lines.push_back({ago, healthEvent(e)});
  }
  for (const auto& [ago, text] : lines)
    out += "  " + std::string(w - displayWidth(ago), ' ') + ago + "  " + text + "\n";
  return out;
}

}  // namespace gwlb::cli
