#include "cli/commands.h"

#include <cmath>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "cli/class_render.h"
#include "cli/client.h"
#include "cli/destination_render.h"
#include "cli/flow_sort.h"
#include "cli/fleet_render.h"
#include "cli/health_render.h"
#include "cli/memory_check.h"
#include "cli/probe_cmd.h"
#include "cli/render.h"
#include "cli/appliance_rates.h"
#include "cli/validate.h"
#include "control/config/config.h"
#include "control/health/probe_path.h"

namespace gwlb::cli {

namespace {

double wallNow() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void put(FILE* f, const std::string& s) { std::fwrite(s.data(), 1, s.size(), f); }

void putJson(FILE* f, const Json& j) { put(f, j.dump(2) + "\n"); }

// Prints a server-side error; returns its exit status.
int failed(const Invocation& inv, const Reply& r, FILE* out, FILE* err) {
  if (inv.json) putJson(out, r.error);
  put(err, "gwlbctl: " + renderError(r.error));
  return exitStatusFor(fieldText(r.error, "code", "internal"));
}

// The cursor a reply gives to go on from, or "" at the end.
std::string nextCursor(const Json& result) {
  const Json& next = result.contains("next_cursor") ? result["next_cursor"] : Json();
  return next.is_string() ? next.get<std::string>() : "";
}

int runFlows(const Invocation& inv, Request req, ControlClient& client, FILE* out, FILE* err) {
  // gwlbd walks a bounded stretch of the table per request (a page can end
  // with fewer rows than asked, or none, and a cursor): a count, and a page
  // of `limit` rows, follow the cursor over as many requests as it takes.
  auto repeated = [&](const std::string& next) {
    if (!req.params.contains("cursor") || req.params["cursor"] != next) return false;
    put(err, "gwlbctl: gwlbd returned the same cursor twice; stopping\n");
    return true;
  };
  if (req.params.contains("count")) {
    double count = 0, scanned = 0;
    for (;;) {
      Reply r = client.call(req.method, req.params);
      if (!r.ok) return failed(inv, r, out, err);
      count += fieldNumber(r.result, "count");
      scanned += fieldNumber(r.result, "scanned");
      std::string next = nextCursor(r.result);
      if (next.empty()) break;
      if (repeated(next)) return kExitError;
      req.params["cursor"] = next;
    }
    Json total{{"count", uint64_t(count)}, {"scanned", uint64_t(scanned)}};
    put(out, inv.json ? total.dump(2) + "\n" : renderFlowCount(total));
    return kExitOk;
  }
  if (!inv.has("--all") && !inv.has("--sort")) {
    const bool had_limit = req.params.contains("limit");
    const size_t limit = had_limit ? size_t(fieldNumber(req.params, "limit")) : 100;
    Json rows = Json::array();
    double scanned = 0;
    std::string next;
    for (;;) {
      req.params["limit"] = uint64_t(limit - rows.size());
      Reply r = client.call(req.method, req.params);
      if (!r.ok) return failed(inv, r, out, err);
      if (r.result.contains("flows") && r.result["flows"].is_array())
        for (auto& f : r.result["flows"]) rows.push_back(std::move(f));
      scanned += fieldNumber(r.result, "scanned");
      next = nextCursor(r.result);
      if (next.empty() || rows.size() >= limit) break;
      if (repeated(next)) return kExitError;
      req.params["cursor"] = next;
    }
    if (inv.json) {
      putJson(out, Json{{"flows", rows},
                        {"next_cursor", next.empty() ? Json() : Json(next)},
                        {"scanned", uint64_t(scanned)}});
      return kExitOk;
    }
    put(out, renderFlows(rows));
    if (!next.empty()) {
      if (had_limit) req.params["limit"] = uint64_t(limit);
      else req.params.erase("limit");
      put(out, "more: gwlbctl flows" + flowFilterArgs(req.params) + " --cursor " + next + "\n");
    }
    return kExitOk;
  }
  // --all: follow next_cursor to the end, then print everything as one listing.
  Json all = Json::array();
  double scanned = 0;
  size_t pages = 0;
  while (true) {
    Reply r = client.call(req.method, req.params);
    if (!r.ok) return failed(inv, r, out, err);
    ++pages;
    if (r.result.contains("flows") && r.result["flows"].is_array()) {
      for (auto& f : r.result["flows"]) all.push_back(std::move(f));
    }
    scanned += fieldNumber(r.result, "scanned");
    const Json next = r.result.contains("next_cursor") ? r.result["next_cursor"] : Json();
    if (!next.is_string() || next.get<std::string>().empty()) break;
    if (req.params.contains("cursor") && req.params["cursor"] == next) {
      put(err, "gwlbctl: gwlbd returned the same cursor twice; stopping\n");
      return kExitError;
    }
    req.params["cursor"] = next;
  }
  std::string sorted;
  if (inv.has("--sort")) {
    FlowSort by = parseFlowSort(inv.opt("--sort"), inv.has("--reverse"));
    sortFlows(all, by);
    sorted = ", sorted by " + by.name + (by.descending ? " (descending)" : "");
  }
  if (inv.json) {
    putJson(out, Json{{"flows", all}, {"next_cursor", nullptr}, {"scanned", uint64_t(scanned)}});
    return kExitOk;
  }
  put(out, renderFlows(all));
  put(out, std::to_string(all.size()) + " flows in " + std::to_string(pages) + " page" +
               (pages == 1 ? "" : "s") + sorted + "\n");
  return kExitOk;
}

int runStats(const Invocation& inv, const Request& req, ControlClient& client, FILE* out,
             FILE* err) {
  Reply prev = client.call(req.method, req.params);
  if (!prev.ok) return failed(inv, prev, out, err);
  if (!inv.has("--watch")) {
    put(out, inv.json ? prev.result.dump(2) + "\n"
                      : renderStats(prev.result, nullptr, 0, inv.has("--all")));
    return kExitOk;
  }
  double interval = parseSeconds("--watch", inv.opt("--watch"), 0.1, 86400.0);
  uint64_t count = inv.has("--count") ? parseUint("--count", inv.opt("--count"), 1, 1000000000) : 0;
  bool tty = !inv.json && ::isatty(::fileno(out));
  for (uint64_t i = 0; count == 0 || i < count; ++i) {
    // gwlbd drops connections idle for 10 s: reconnect for each sample.
    client.close();
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    Reply cur = client.call(req.method, req.params);
    if (!cur.ok) return failed(inv, cur, out, err);
    if (inv.json) {
      Json line = {{"interval_s", interval},
                   {"rates", statsRates(cur.result, prev.result, interval)},
                   {"stats", cur.result}};
      put(out, line.dump() + "\n");
    } else {
      if (tty) put(out, "\033[H\033[2J");
      else if (i > 0) put(out, "\n");
      put(out, renderStats(cur.result, &prev.result, interval, inv.has("--all")));
    }
    std::fflush(out);
    prev = std::move(cur);
  }
  return kExitOk;
}

// servers --watch: the table of rates, every SECONDS, from the last two
// samples (their wall-clock distance, not the nominal interval).
int runAppliancesWatch(const Invocation& inv, const Request& req, ControlClient& client, FILE* out,
                    FILE* err) {
  Reply prev = client.call(req.method, req.params);
  if (!prev.ok) return failed(inv, prev, out, err);
  double prev_at = wallNow();
  double interval = parseSeconds("--watch", inv.opt("--watch"), 0.1, 86400.0);
  uint64_t count = inv.has("--count") ? parseUint("--count", inv.opt("--count"), 1, 1000000000) : 0;
  bool tty = !inv.json && ::isatty(::fileno(out));
  for (uint64_t i = 0; count == 0 || i < count; ++i) {
    client.close();  // gwlbd drops connections idle for 10 s
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
    Reply cur = client.call(req.method, req.params);
    if (!cur.ok) return failed(inv, cur, out, err);
    const double at = wallNow(), dt = at - prev_at;
    Json rates = applianceRates(cur.result, prev.result, dt);
    if (inv.json) {
      put(out, Json{{"interval_s", dt}, {"rates", rates}, {"servers", cur.result}}.dump() + "\n");
    } else {
      if (tty) put(out, "\033[H\033[2J");
      else if (i > 0) put(out, "\n");
      put(out, renderApplianceRates(cur.result, rates, dt, at));
    }
    std::fflush(out);
    prev = std::move(cur);
    prev_at = at;
  }
  return kExitOk;
}

// The directory of the running gwlbctl ("" when /proc is not there).
std::string selfDir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string p(buf, size_t(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "" : p.substr(0, slash);
}

}  // namespace

int exitStatusFor(const std::string& code) { return code == "not_found" ? kExitNotFound : kExitError; }

int configCheck(const std::string& file, bool json, FILE* out, FILE* err) {
  ctl::Config cfg;
  std::vector<ctl::ConfigError> errors;
  // gwlbd's own checks (control/config/config.h): the file, its secret files, every
  // probed group's probe path (control/health/probe_path.h), and the lcores its
  // `eal` list gives for dataplane.workers; then gwlbd --check-config for the
  // EAL memory (cli/memory_check.h).
  bool ok = ctl::loadRunnableConfig(file, cfg, errors);
  if (ok) errors = ctl::probePathErrors(cfg);
  if (ok && errors.empty()) {
    std::string lcores = ctl::checkLcores(cfg, cfg.eal_args);
    if (!lcores.empty()) errors.push_back({"dataplane.workers", lcores});
  }
  ok = ok && errors.empty();
  std::vector<ctl::ConfigError> warnings;
  if (ok) {
    // The EAL memory (and what else only gwlbd can judge): gwlbd's own check.
    const std::string gwlbd = findGwlbd(selfDir(), std::getenv("PATH"));
    GwlbdCheck g;
    if (!gwlbd.empty()) g = runGwlbdCheck(gwlbd, file);
    else g.why = "no gwlbd beside gwlbctl or on PATH";
    if (!g.ran)
      warnings.push_back({"eal", "the EAL memory is not checked (" + g.why +
                                     "): gwlbd --check-config checks it"});
    errors = g.errors;
    ok = errors.empty();
  }
  if (ok) {
    std::vector<ctl::ConfigError> w = ctl::configWarnings(cfg);
    warnings.insert(warnings.begin(), w.begin(), w.end());
  }
  if (json) {
    Json e = Json::array(), w = Json::array();
    for (const auto& x : errors) e.push_back({{"path", x.path}, {"message", x.message}});
    for (const auto& x : warnings) w.push_back({{"path", x.path}, {"message", x.message}});
    Json j = {{"file", file}, {"valid", ok}, {"errors", e}, {"warnings", w}};
    if (ok) {
      size_t appliances = 0;
      for (const auto& g : cfg.server_groups) appliances += g.appliances.size();
      j["server_groups"] = cfg.server_groups.size();
      j["servers"] = appliances;
    }
    putJson(out, j);
    return ok ? kExitOk : kExitError;
  }
  if (ok) {
    size_t appliances = 0;
    for (const auto& g : cfg.server_groups) appliances += g.appliances.size();
    put(out, file + ": valid (" + std::to_string(cfg.server_groups.size()) + " server group" +
                 (cfg.server_groups.size() == 1 ? "" : "s") + ", " + std::to_string(appliances) +
                 " server" + (appliances == 1 ? "" : "s") + ")\n");
    for (const auto& x : warnings) put(err, file + ": warning: " + x.path + ": " + x.message + "\n");
    return kExitOk;
  }
  put(err, file + ": invalid configuration (" + std::to_string(errors.size()) + " error" +
               (errors.size() == 1 ? "" : "s") + ")\n");
  for (const auto& x : errors) {
    put(err, (x.path.empty() ? file : x.path) + ": " + x.message + "\n");
  }
  return kExitError;
}

int runInvocation(const Invocation& inv, FILE* out, FILE* err) {
  if (inv.help) {
    if (inv.command != nullptr) put(out, commandHelp(*inv.command));
    else if (!inv.group.empty()) put(out, groupHelp(inv.group));
    else put(out, topLevelHelp());
    return kExitOk;
  }
  const std::string& name = inv.command->name;
  if (name == "help") {  // not reached: parseArgs sets help
    put(out, topLevelHelp());
    return kExitOk;
  }
  if (name == "config check") return configCheck(inv.args[0], inv.json, out, err);
  if (name == "probe") return runProbeCommand(inv, out, err);

  Request req = buildRequest(inv);
  // A reload's reply comes when gwlbd has read, checked and applied the
  // file: gwlbd's own wait (timeout_s), then a margin to hear its answer.
  ControlClient client(inv.socket_path,
                       name != "reload" ? inv.timeout_s
                                        : (inv.timeout_set ? std::ceil(inv.timeout_s) : kReloadTimeoutS) + 5);
  try {
    if (name == "flows") return runFlows(inv, req, client, out, err);
    if (name == "stats") return runStats(inv, req, client, out, err);
    if (name == "servers" && inv.has("--watch")) return runAppliancesWatch(inv, req, client, out, err);
    Reply r = client.call(req.method, req.params);
    if (!r.ok) return failed(inv, r, out, err);
    if (inv.json) {
      putJson(out, r.result);
      return kExitOk;
    }
    double now = wallNow();
    if (name == "status") put(out, renderStatus(r.result, now));
    else if (name == "servers") put(out, renderAppliances(r.result, now, inv.has("--wide")));
    else if (name == "health") put(out, renderHealth(r.result, now));
    else if (name == "health-destinations") put(out, renderDestinations(r.result, now));
    else if (name == "groups") put(out, renderGroups(r.result));
    else if (name == "explain") put(out, renderExplain(r.result));
    else if (name == "classes") put(out, renderClasses(r.result));
    else if (name == "fleet show") put(out, renderFleet(r.result));
    else if (name == "config dump") {
      put(out, fieldText(r.result, "yaml", ""));
      put(err, renderRuntimeChanges(r.result));
    }
    else if (name == "capture stop") {
      uint64_t n = uint64_t(fieldNumber(r.result, "detached"));
      put(out, "detached " + std::to_string(n) + " queue callback" + (n == 1 ? "" : "s") + "\n");
    }
    else if (name == "fleet leave" || name == "fleet join") {
      put(out, std::string(name == "fleet leave" ? "left the fleet" : "joined the fleet") +
                   (r.result.contains("changed") && r.result["changed"] == Json(false)
                        ? " (already so)"
                        : "") +
                   "\n" + renderFleet(r.result));
    }
    else put(out, renderChange(req.method, req.params, r.result));
    return kExitOk;
  } catch (const ClientError& e) {
    put(err, std::string("gwlbctl: ") + e.what() + "\n");
    return kExitError;
  }
}

}  // namespace gwlb::cli
