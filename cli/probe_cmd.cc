#include "cli/probe_cmd.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/render.h"
#include "cli/validate.h"
#include "probes/probe_cli.h"

namespace gwlb::cli {

namespace {

void put(FILE* f, const std::string& s) { std::fwrite(s.data(), 1, s.size(), f); }

std::string elapsedText(std::chrono::microseconds us) {
  double ms = double(us.count()) / 1000.0;
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 1 ? "%.2f ms" : ms < 100 ? "%.1f ms" : "%.0f ms", ms);
  return buf;
}

}  // namespace

uint64_t parseProbeTimeoutMs(const std::string& text) {
  auto bad = [&]() -> uint64_t {
    throw UsageError("--timeout: '" + text +
                         "' is not a probe timeout (milliseconds 1-600000, or with a unit: "
                         "200ms, 2s)",
                     "probe");
  };
  std::string num = text;
  double scale = 1.0;
  if (num.size() > 2 && num.compare(num.size() - 2, 2, "ms") == 0) {
    num.resize(num.size() - 2);
  } else if (num.size() > 1 && num.back() == 's') {
    num.pop_back();
    scale = 1000.0;
  } else if (num.find('.') != std::string::npos) {
    return bad();  // bare numbers are whole milliseconds
  }
  if (num.empty() || num.size() > 12 || num.front() == '.' || num.back() == '.') return bad();
  for (char c : num) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return bad();
  }
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end) * scale;
  if (end != num.c_str() + num.size() || !std::isfinite(v)) return bad();
  double ms = std::round(v);
  if (ms < 1 || ms > 600000 || std::fabs(ms - v) > 1e-6) return bad();  // whole milliseconds
  return uint64_t(ms);
}

std::vector<std::string> probeArgsFromCheck(const Json& check, const std::string& address) {
  std::vector<std::string> a = {"--address=" + address};
  auto text = [&](const char* k) -> std::string {
    if (!check.is_object() || !check.contains(k)) return "";
    const Json& v = check[k];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    if (v.is_number()) return std::to_string(uint64_t(std::llround(v.get<double>())));
    return "";
  };
  for (auto [key, opt] : {std::pair{"protocol", "--protocol"}, {"port", "--port"},
                          {"path", "--path"}, {"domain", "--domain"}, {"timeout_ms", "--timeout"},
                          {"source", "--source"}, {"interface", "--interface"},
                          {"ca_file", "--ca-file"}}) {
    std::string v = text(key);
    if (!v.empty()) a.push_back(std::string(opt) + "=" + v);
  }
  if (check.is_object() && check.contains("http_codes") && check["http_codes"].is_array() &&
      !check["http_codes"].empty()) {
    std::string codes;
    for (const auto& c : check["http_codes"])
      codes += (codes.empty() ? "" : ",") + (c.is_string() ? c.get<std::string>() : c.dump());
    a.push_back("--codes=" + codes);
  }
  if (check.is_object() && check.contains("verify") && check["verify"] == true)
    a.push_back("--verify");
  return a;
}

probe::ProbeSpec buildProbeSpec(const Invocation& inv, const Json* health_result) {
  std::vector<std::string> args;
  if (!inv.args.empty()) {
    std::string addr = parseAddress("ADDRESS", inv.args[0]);
    if (inv.has("--address"))
      throw UsageError("give an appliance ADDRESS or --address, not both", "probe");
    static const Json kNone;
    const Json& check = health_result && health_result->is_object() && health_result->contains("check")
                            ? (*health_result)["check"]
                            : kNone;
    args = probeArgsFromCheck(check, addr);
  } else if (!inv.has("--protocol") || !inv.has("--address")) {
    throw UsageError(
        "missing --protocol and --address (or give an appliance ADDRESS to run its configured "
        "check)",
        "probe");
  }
  for (const auto& [name, value] : inv.options) {
    if (name == "--timeout") args.push_back("--timeout=" + std::to_string(parseProbeTimeoutMs(value)));
    else if (name == "--verify") args.push_back(name);
    else args.push_back(name + "=" + value);
  }
  probe::ProbeSpec spec;
  bool help = false;
  std::string err;
  if (!probe::parseProbeArgs(args, spec, help, err)) throw UsageError(err, "probe");
  if (spec.verify_tls && spec.ca_file.empty())
    throw UsageError("--verify needs --ca-file FILE", "probe");
  return spec;
}

std::string renderProbeResult(const probe::ProbeResult& r) {
  if (r.ok) return "ok: " + (r.detail.empty() ? r.reason : r.detail) + " in " + elapsedText(r.elapsed);
  return "failed: " + r.reason + " after " + elapsedText(r.elapsed) +
         (r.detail.empty() ? "" : ": " + r.detail);
}

std::string describeProbe(const probe::ProbeSpec& s) {
  std::string a = s.address.str();
  if (a.find(':') != std::string::npos) a = "[" + a + "]";
  std::string d = std::string(probe::toString(s.protocol)) + " " + a + ":" + std::to_string(s.port);
  if (s.protocol != probe::Protocol::kTcp) {
    d += " GET " + s.path;
    if (!s.domain.empty()) d += ", Host " + s.domain;
    d += ", codes " + probe::codesToString(s.codes);
    if (s.verify_tls) d += ", verify (CA " + s.ca_file + ")";
  }
  if (s.source) d += ", from " + s.source->str();
  if (!s.device.empty()) d += ", via " + s.device;
  d += ", timeout " + std::to_string(s.timeout.count()) + " ms";
  return d;
}

int runProbeCommand(const Invocation& inv, FILE* out, FILE* err) {
  Json health;
  if (!inv.args.empty()) {
    std::string addr = parseAddress("ADDRESS", inv.args[0]);
    if (inv.has("--address"))
      throw UsageError("give an appliance ADDRESS or --address, not both", "probe");
    if (inv.has("--timeout")) parseProbeTimeoutMs(inv.opt("--timeout"));  // before asking gwlbd
    ControlClient client(inv.socket_path, inv.timeout_s);
    Reply r;
    try {
      r = client.call("health", Json{{"address", addr}});
    } catch (const ClientError& e) {
      put(err, std::string("gwlbctl: ") + e.what() + "\n");
      return kExitError;
    }
    if (!r.ok) {
      if (inv.json) put(out, r.error.dump(2) + "\n");
      put(err, "gwlbctl: " + renderError(r.error));
      return exitStatusFor(fieldText(r.error, "code", "internal"));
    }
    health = std::move(r.result);
  }
  probe::ProbeSpec spec = buildProbeSpec(inv, inv.args.empty() ? nullptr : &health);
  if (!inv.args.empty()) {
    const Json check = health.is_object() && health.contains("check") ? health["check"] : Json();
    std::string group = fieldText(health, "group");
    auto isFalse = [&](const char* k) {
      return check.is_object() && check.contains(k) && check[k] == false;
    };
    if (isFalse("configured"))
      put(err, "gwlbctl: note: group " + group + " has no health_check; probing with the defaults\n");
    else if (isFalse("enabled"))
      put(err, "gwlbctl: note: the health check of group " + group + " is disabled\n");
    if (!inv.json) put(out, "probe " + describeProbe(spec) + " (check of group " + group + ")\n");
  }
  boost::asio::io_context io;
  probe::ProbeResult result;
  result.reason = "internal";
  result.detail = "the probe never reported";
  probe::startProbe(io, spec, [&](const probe::ProbeResult& r) { result = r; });
  io.run();
  put(out, (inv.json ? probe::resultJson(spec, result) : renderProbeResult(result)) + "\n");
  return result.ok ? kExitOk : kExitNotFound;
}

}  // namespace gwlb::cli
