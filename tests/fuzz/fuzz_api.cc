// Fuzz target 5: the control API request parser. Any bytes are what a client
// writes to the control socket: split into lines as the session does
// (control/api/api_server.cc: LF-terminated, trailing CRs dropped, empty lines
// skipped, longer than kApiMaxLine refused), each line through
// gwlb::ctl::dispatchLine (depth limit, JSON parse, envelope checks, id echo)
// with a handler that validates `params` exactly as gwlbd's methods do, with
// the same helpers (control/api/api_params.h: Params, parseCidr, parseProto,
// parseCursor; per-method allowed keys and types as in control/service/api_*.cc).
// Invariants (docs/fuzzing.md):
//  - nothing throws out of dispatchLine; the reply is an object with a boolean
//    "ok", and a failure has an error code and a message;
//  - the code is never "internal": only a bug (an unchecked conversion, a
//    json type error) gets there from these handlers;
//  - the reply serialises (valid UTF-8) to a single line, as the
//    newline-delimited protocol needs; an id in the reply is the request's;
//  - JSON nested deeper than kApiMaxDepth is refused before parsing.
#include <string>

#include "control/api/api_params.h"
#include "control/api/api_server.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;
using namespace gwlb::ctl;
using nlohmann::json;

namespace {

// The parameter handling of the control API's handlers (control/service/), without
// the daemon: same allowed keys, same typed reads in the same order.
json handle(const std::string& method, const json& p) {
  try {
    json r = json::object();
    if (method == "status" || method == "groups" || method == "stats" || method == "fleet_sync" ||
        method == "classes" ||
        method == "fleet" ||
        method == "fleet.leave" || method == "fleet.join") {
      Params(p, {});
    } else if (method == "reload") {
      Params pr(p, {"force"});
      if (pr.has("force")) r["force"] = pr.boolean("force");
    } else if (method == "servers") {
      Params pr(p, {"group"});
      if (pr.has("group")) r["group"] = pr.str("group");
    } else if (method == "flows") {
      Params pr(p, {"server", "group", "src", "dst", "proto", "port", "limit", "cursor", "count"});
      if (pr.has("server")) r["server"] = pr.ip("server").str();
      if (pr.has("group")) r["group"] = pr.str("group");
      if (pr.has("src")) {
        Cidr c = parseCidr("src", pr.str("src"));
        FUZZ_CHECK(c.bits <= (c.net.isV4() ? 32u : 128u), "CIDR /%u", c.bits);
        r["src_match_self"] = c.contains(c.net.b.data(), c.net.family);
      }
      if (pr.has("dst")) r["dst_bits"] = parseCidr("dst", pr.str("dst")).bits;
      if (pr.has("proto")) {
        int proto = parseProto(pr.str("proto"));
        FUZZ_CHECK(proto >= 0 && proto <= 255, "proto %d", proto);
        r["proto"] = proto;
      }
      if (pr.has("port")) r["port"] = pr.num("port", 0, 65535);
      if (pr.has("limit")) r["limit"] = pr.num("limit", 1, 10000);
      if (pr.has("count")) r["count"] = pr.boolean("count");
      if (pr.has("cursor")) r["cursor"] = parseCursor(pr.str("cursor"));
    } else if (method == "explain") {
      // The same function as gwlbd's explain (control/api/api_params.h).
      ExplainQuery q = parseExplain(p);
      FUZZ_CHECK(q.tuple.src.family == q.tuple.dst.family, "families %d/%d", q.tuple.src.family,
                 q.tuple.dst.family);
      FUZZ_CHECK(q.vlan <= 4095, "vlan %u", unsigned(q.vlan));
      r["proto"] = q.tuple.proto;
      r["sport"] = q.tuple.sport;
      r["dport"] = q.tuple.dport;
      if (q.port) r["port"] = *q.port;
      r["vlan"] = q.vlan;
      r["src"] = q.tuple.src.str();
      r["dst"] = q.tuple.dst.str();
    } else if (method == "server.add") {
      Params pr(p, {"group", "address", "weight", "mac"});
      if (!pr.has("group") || !pr.has("address")) badRequest("server.add needs group and address");
      r["group"] = pr.str("group");
      r["address"] = pr.ip("address").str();
      if (pr.has("weight")) r["weight"] = pr.num("weight", 0, 10000);
      if (pr.has("mac")) {
        auto m = MacAddr::parse(pr.str("mac"));
        if (!m) badRequest("mac: '" + pr.str("mac") + "' is not a MAC address");
        r["mac"] = m->str();
      }
    } else if (method == "server.undrain" || method == "health") {
      Params pr(p, {"address"});
      if (!pr.has("address")) badRequest(method + " needs address");
      r["address"] = pr.ip("address").str();
    } else if (method == "server.remove") {
      Params pr(p, {"address", "force"});
      if (!pr.has("address")) badRequest(method + " needs address");
      r["address"] = pr.ip("address").str();
      if (pr.has("force")) r["force"] = pr.boolean("force");
    } else if (method == "server.set") {
      Params pr(p, {"address", "weight", "force"});
      if (!pr.has("address") || !pr.has("weight")) badRequest("server.set needs address and weight");
      r["address"] = pr.ip("address").str();
      r["weight"] = pr.num("weight", 0, 10000);
      if (pr.has("force")) r["force"] = pr.boolean("force");
    } else if (method == "server.drain") {
      Params pr(p, {"address", "timeout_s", "force"});
      if (!pr.has("address")) badRequest("server.drain needs address");
      r["address"] = pr.ip("address").str();
      if (pr.has("timeout_s")) r["timeout_s"] = pr.num("timeout_s", 1, 3600);
      if (pr.has("force")) r["force"] = pr.boolean("force");
    } else if (method == "destinations") {
      Params pr(p, {"name"});
      if (pr.has("name")) notFound("no destination (listener) '" + pr.str("name") + "'");
    } else {
      badRequest("unknown method '" + method + "'");
    }
    return {{"ok", true}, {"result", std::move(r)}};
  } catch (const ApiFailure& f) {
    return apiError(nullptr, f.code, f.what());
  }
}

void checkLine(const std::string& line) {
  json reply = dispatchLine(line, [](const std::string& m, const json& p, const json&) {
    return handle(m, p);
  });
  FUZZ_CHECK(reply.is_object() && reply.contains("ok") && reply["ok"].is_boolean(),
             "reply without a boolean ok");
  if (!reply["ok"].get<bool>()) {
    json e = reply.value("error", json());
    FUZZ_CHECK(e.is_object() && e.value("code", json()).is_string() &&
                   e.value("message", json()).is_string() &&
                   !e["message"].get<std::string>().empty(),
               "error reply without code and message");
    std::string code = e["code"].get<std::string>();
    FUZZ_CHECK(code == "bad_request" || code == "not_found", "error code '%s': %s", code.c_str(),
               e["message"].get<std::string>().c_str());
  }
  if (jsonDepth(line, kApiMaxDepth) > kApiMaxDepth)
    FUZZ_CHECK(!reply["ok"].get<bool>(), "a request nested past the limit was accepted");
  std::string out;
  try {
    out = reply.dump();
  } catch (const std::exception& ex) {
    FUZZ_CHECK(false, "reply does not serialise: %s", ex.what());
  }
  FUZZ_CHECK(out.find('\n') == std::string::npos, "reply is more than one line");
  if (reply.contains("id")) {
    json req = json::parse(line, nullptr, false);
    FUZZ_CHECK(!req.is_discarded() && req.is_object() && req.contains("id") && req["id"] == reply["id"],
               "reply id is not the request's");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  while (pos < in.size()) {
    size_t nl = in.find('\n', pos);
    size_t end = nl == std::string::npos ? in.size() : nl;  // last line: as if LF followed
    if (end - pos + 1 > kApiMaxLine + 1) break;              // the session answers too_large
    std::string line = in.substr(pos, end - pos);
    while (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) checkLine(line);
    pos = end + 1;
  }
  return 0;
}
