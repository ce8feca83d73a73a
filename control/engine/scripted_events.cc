#include "control/engine/scripted_events.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

namespace gwlb::ctl {


const char* actionName(const ScriptedEvent& e) {
  switch (e.action) {
    case ScriptedEvent::Action::kHealth: return e.unhealthy ? "unhealthy" : "healthy";
    case ScriptedEvent::Action::kRemove: return "remove";
    case ScriptedEvent::Action::kAdd: return "add";
    case ScriptedEvent::Action::kWeight: return "weight";
    case ScriptedEvent::Action::kDrain: return "drain";
    case ScriptedEvent::Action::kUndrain: return "undrain";
    case ScriptedEvent::Action::kReload: return "reload";
  }
  return "?";
}

std::string secondsText(uint64_t ns) {
  char b[48];
  std::snprintf(b, sizeof b, "%.9g s", double(ns) / 1e9);
  return b;
}

// "2.5s", "1500ms", "2" or "0.25" (seconds) into ns: digits, an optional
// fraction (down to 1 ns), an optional unit. False when malformed or past 10^7 s.
bool parseDurationNs(std::string t, uint64_t& ns) {
  uint64_t unit = kNsPerS;
  size_t max_frac = 9;
  if (t.size() > 2 && t.compare(t.size() - 2, 2, "ms") == 0) {
    unit = 1'000'000ULL;
    max_frac = 6;
    t.resize(t.size() - 2);
  } else if (!t.empty() && t.back() == 's') {
    t.pop_back();
  }
  size_t dot = t.find('.');
  std::string ip = t.substr(0, dot), fp = dot == std::string::npos ? "" : t.substr(dot + 1);
  auto digits = [](const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(ip) || ip.size() > 10) return false;
  if (dot != std::string::npos && (!digits(fp) || fp.size() > max_frac)) return false;
  uint64_t whole = std::stoull(ip);
  if (whole > 10'000'000'000'000'000ULL / unit) return false;  // past 10^7 s
  uint64_t frac = 0, scale = 1;
  for (char c : fp) {
    frac = frac * 10 + uint64_t(c - '0');
    scale *= 10;
  }
  ns = whole * unit + frac * (unit / scale);
  return true;
}

namespace {

[[noreturn]] void eventFail(const std::string& text) { throw EventError{text}; }

bool isTrue(const std::string& s) { return s == "true"; }  // as the config loader reads booleans

constexpr const char* kEventKeys[] = {"at",    "server", "health",  "remove", "add",  "weight",
                                      "drain", "timeout", "undrain", "reload", "force"};

// An event's keys and their values; each key known, given once, a scalar.
std::map<std::string, std::string> eventKeys(const YAML::Node& n, const std::string& p,
                                             const std::string& where) {
  std::map<std::string, std::string> v;
  for (const auto& kv : n) {
    std::string k = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
    if (std::find(std::begin(kEventKeys), std::end(kEventKeys), k) == std::end(kEventKeys)) {
      std::string allowed;
      for (const char* a : kEventKeys) allowed += std::string(allowed.empty() ? "" : ", ") + a;
      eventFail(p + where + ": unknown key '" + k + "'; allowed keys: " + allowed);
    }
    if (!kv.second.IsScalar())
      eventFail(p + "." + k + where + ": must be a single value");
    if (!v.emplace(k, kv.second.Scalar()).second)
      eventFail(p + "." + k + where + ": given twice");
  }
  return v;
}

// Event e's action `a` and its arguments, from the event's keys v.
void readAction(ScriptedEvent& e, const std::string& a, std::map<std::string, std::string>& v,
                const std::string& p, const std::string& where, const std::filesystem::path& dir) {
  const std::string& val = v[a];
  auto mustBeTrue = [&]() {
    if (!isTrue(val))
      eventFail(p + "." + a + where + ": '" + val + "' must be true (leave the event out instead)");
  };
  auto weight = [&]() -> uint32_t {
    const std::string& w = v["weight"];
    if (w.empty() || w.size() > 5 || w.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(w) > 10000)
      eventFail(p + ".weight" + where + ": '" + w + "' is not a weight from 0 to 10000");
    return uint32_t(std::stoul(w));
  };
  if (a == "health") {
    e.action = ScriptedEvent::Action::kHealth;
    if (val == "unhealthy") e.unhealthy = true;
    else if (val != "healthy")
      eventFail(p + ".health" + where + ": '" + val + "' is not healthy or unhealthy");
  } else if (a == "remove") {
    e.action = ScriptedEvent::Action::kRemove;
    mustBeTrue();
  } else if (a == "add") {
    e.action = ScriptedEvent::Action::kAdd;
    e.group = val;
    if (val.empty()) eventFail(p + ".add" + where + ": needs a server group name");
    if (v.count("weight")) e.weight = weight();
  } else if (a == "weight") {
    e.action = ScriptedEvent::Action::kWeight;
    e.weight = weight();
  } else if (a == "drain") {
    e.action = ScriptedEvent::Action::kDrain;
    mustBeTrue();
    if (v.count("timeout")) {
      uint64_t ns = 0;
      if (!parseDurationNs(v["timeout"], ns) || ns % kNsPerS || ns < kNsPerS ||
          ns > 3600 * kNsPerS)
        eventFail(p + ".timeout" + where + ": '" + v["timeout"] +
                  "' is not a whole number of seconds from 1 s to 3600 s (e.g. 30s)");
      e.timeout_s = uint32_t(ns / kNsPerS);
    }
  } else if (a == "reload") {
    e.action = ScriptedEvent::Action::kReload;
    if (val.empty()) eventFail(p + ".reload" + where + ": needs a config file path");
    std::filesystem::path f(val);
    e.file = (f.is_absolute() ? f : dir / f).lexically_normal().string();
  } else {
    e.action = ScriptedEvent::Action::kUndrain;
    mustBeTrue();
  }
}

// `dir`: where a reload's relative config path counts from.
std::vector<ScriptedEvent> parseRoot(const YAML::Node& root, const std::string& path,
                                     const std::filesystem::path& dir) {
  if (root.IsNull()) return {};
  if (!root.IsSequence())
    eventFail(path + ": must be a YAML list of events, e.g.\n"
              "  - { at: 2s, server: 192.0.2.10, health: unhealthy }");
  static const char* kActions[] = {"health", "remove", "add", "weight", "drain", "undrain", "reload"};
  std::vector<ScriptedEvent> out;
  for (size_t i = 0; i < root.size(); ++i) {
    const YAML::Node n = root[i];
    std::string p = "events[" + std::to_string(i) + "]";
    std::string where = " (line " + std::to_string(n.Mark().line + 1) + ")";
    if (!n.IsMap())
      eventFail(p + where + ": must be a mapping such as {at: 2s, server: 192.0.2.10, remove: true}");
    std::map<std::string, std::string> v = eventKeys(n, p, where);
    ScriptedEvent e;
    e.index = i;
    e.line = n.Mark().line + 1;
    if (!v.count("at")) eventFail(p + where + ": missing key 'at' (e.g. at: 2.5s)");
    if (!parseDurationNs(v["at"], e.at_ns))
      eventFail(p + ".at" + where + ": '" + v["at"] +
                "' is not a time after the first packet (e.g. 2.5s, 1500ms, 3 for seconds)");
    std::vector<std::string> acts;
    for (const char* a : kActions)
      if (v.count(a) && !(std::string(a) == "weight" && v.count("add"))) acts.push_back(a);
    if (v.count("reload")) {
      // A whole config, as gwlbd's reload: no appliance of its own.
      if (v.count("server"))
        eventFail(p + ".server" + where + ": a reload takes no server (the config file says everything)");
    } else {
      if (!v.count("server")) eventFail(p + where + ": missing key 'server' (an appliance address)");
      auto ip = IpAddr::parse(v["server"]);
      if (!ip || !ip->isV4())
        eventFail(p + ".server" + where + ": '" + v["server"] + "' is not an IPv4 address");
      e.appliance = *ip;
    }
    if (acts.empty())
      eventFail(p + where + ": no action; give one of health, remove, add, weight, drain, undrain, reload");
    if (acts.size() > 1)
      eventFail(p + where + ": two actions in one event (" + acts[0] + " and " + acts[1] +
                "); give one action per event");
    if (v.count("timeout") && acts[0] != "drain")
      eventFail(p + ".timeout" + where + ": only allowed with drain");
    const std::string& a = acts[0];
    if (v.count("force")) {
      // What gwlbd takes --force for: the changes its service guard judges.
      if (a != "drain" && a != "remove" && a != "reload" && a != "weight")
        eventFail(p + ".force" + where + ": only allowed with drain, remove, weight or reload");
      if (v["force"] != "true" && v["force"] != "false")
        eventFail(p + ".force" + where + ": '" + v["force"] + "' is not true or false");
      e.force = isTrue(v["force"]);
    }
    readAction(e, a, v, p, where, dir);
    if (!out.empty() && e.at_ns < out.back().at_ns)
      eventFail(p + ".at" + where + ": " + secondsText(e.at_ns) + " is before events[" +
                std::to_string(i - 1) + "].at (" + secondsText(out.back().at_ns) +
                "); events must be in time order");
    out.push_back(std::move(e));
  }
  return out;
}


}  // namespace

std::vector<ScriptedEvent> parseEventsFile(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    eventFail(path + ": cannot read the file");
  } catch (const YAML::Exception& e) {
    eventFail(path + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  return parseRoot(root, path, std::filesystem::path(path).parent_path());
}

std::vector<ScriptedEvent> parseEvents(const std::string& yaml_text, const std::string& name) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    eventFail(name + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
              std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  return parseRoot(root, name, std::filesystem::path());
}

}  // namespace gwlb::ctl
