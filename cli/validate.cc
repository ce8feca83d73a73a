#include "cli/validate.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "cli/flow_sort.h"
#include "common/net_types.h"

namespace gwlb::cli {

namespace {

[[noreturn]] void bad(const std::string& what, const std::string& text, const std::string& want) {
  throw UsageError(what + ": '" + text + "' is not " + want);
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

double parseSeconds(const std::string& what, const std::string& text, double min, double max) {
  char buf[32];
  auto within = [&] {
    std::snprintf(buf, sizeof buf, "%g-%g", min, max);
    return std::string("a number of seconds in ") + buf;
  };
  if (text.empty() || text.size() > 20) bad(what, text, within());
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') bad(what, text, within());
  }
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < min || v > max)
    bad(what, text, within());
  return v;
}

uint64_t parseUint(const std::string& what, const std::string& text, uint64_t min, uint64_t max) {
  auto want = "an integer in " + std::to_string(min) + "-" + std::to_string(max);
  uint64_t v = 0;
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) bad(what, text, want);
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < min || v > max)
    bad(what, text, want);
  return v;
}

std::string parseAddress(const std::string& what, const std::string& text) {
  auto a = IpAddr::parse(text);
  if (!a) bad(what, text, "an IPv4 or IPv6 address");
  return a->str();
}

std::string parseCidr(const std::string& what, const std::string& text) {
  const std::string want = "an address or prefix (e.g. 198.51.100.0/24, 2001:db8::/32)";
  auto slash = text.find('/');
  auto a = IpAddr::parse(text.substr(0, slash));
  if (!a) bad(what, text, want);
  unsigned max_len = a->isV4() ? 32 : 128;
  unsigned len = max_len;
  if (slash != std::string::npos) {
    std::string l = text.substr(slash + 1);
    unsigned v = 0;
    auto [p, ec] = std::from_chars(l.data(), l.data() + l.size(), v);
    if (l.empty() || ec != std::errc() || p != l.data() + l.size() || v > max_len)
      bad(what, text, want + ": prefix length 0-" + std::to_string(max_len));
    len = v;
  }
  return a->str() + "/" + std::to_string(len);
}

Json parseProto(const std::string& what, const std::string& text) {
  std::string l = lower(text);
  if (l == "tcp" || l == "udp" || l == "sctp" || l == "icmp" || l == "icmpv6") return l;
  if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0]))) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    // As a string: gwlbd's `proto` parameter is text ("tcp" or "47").
    if (ec == std::errc() && p == text.data() + text.size() && v <= 255) return std::to_string(v);
  }
  bad(what, text, "a protocol (tcp, udp, sctp, icmp, icmpv6 or 0-255)");
}

uint16_t parsePort(const std::string& what, const std::string& text) {
  const std::string want = "a port number 0-65535";
  unsigned v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || ec != std::errc() ||
      p != text.data() + text.size() || v > 65535)
    bad(what, text, want);
  return uint16_t(v);
}

std::string parseMac(const std::string& what, const std::string& text) {
  auto m = MacAddr::parse(text);
  if (!m) bad(what, text, "a MAC address (e.g. 02:00:00:00:00:10)");
  return m->str();
}

std::string parseName(const std::string& what, const std::string& text, const std::string& kind) {
  bool ok = !text.empty() && text.size() <= 63;
  for (char c : text) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-');
  }
  if (!ok) bad(what, text, "a " + kind + " name ([A-Za-z0-9_.-], 1-63 characters)");
  return text;
}

std::string parseGroupName(const std::string& what, const std::string& text) {
  return parseName(what, text, "group");
}

namespace {

void refuseTogether(const Invocation& inv, const std::string& a, const std::string& b) {
  if (inv.has(a) && inv.has(b))
    throw UsageError(a + " cannot be combined with " + b, inv.command->name);
}

Request flowsRequest(const Invocation& inv) {
  Request r{"flows"};
  auto& p = r.params;
  if (inv.has("--server")) p["server"] = parseAddress("--server", inv.opt("--server"));
  if (inv.has("--group")) p["group"] = parseGroupName("--group", inv.opt("--group"));
  if (inv.has("--src")) p["src"] = parseCidr("--src", inv.opt("--src"));
  if (inv.has("--dst")) p["dst"] = parseCidr("--dst", inv.opt("--dst"));
  if (inv.has("--proto")) p["proto"] = parseProto("--proto", inv.opt("--proto"));
  if (inv.has("--port")) p["port"] = parsePort("--port", inv.opt("--port"));
  if (inv.has("--limit")) p["limit"] = parseUint("--limit", inv.opt("--limit"), 1, 10000);
  if (inv.has("--cursor")) {
    if (inv.opt("--cursor").empty()) throw UsageError("--cursor: empty cursor", "flows");
    p["cursor"] = inv.opt("--cursor");
  }
  refuseTogether(inv, "--count", "--all");
  refuseTogether(inv, "--count", "--limit");
  refuseTogether(inv, "--count", "--cursor");
  if (inv.has("--count")) p["count"] = true;
  refuseTogether(inv, "--sort", "--count");
  refuseTogether(inv, "--sort", "--cursor");
  if (inv.has("--sort")) parseFlowSort(inv.opt("--sort"), inv.has("--reverse"));
  if (inv.has("--reverse") && !inv.has("--sort")) throw UsageError("--reverse needs --sort", "flows");
  return r;
}

// The protocols the dataplane keys with ports (common/packet_parser.cc
// readPorts): TCP, UDP, SCTP, UDP-Lite, and ICMP echo (its identifier).
bool hasPorts(const std::string& proto) {
  static const char* const kWithPorts[] = {"tcp", "udp", "sctp", "icmp", "icmpv6",
                                           "6",   "17",  "132",  "136",  "1",    "58"};
  for (const char* p : kWithPorts)
    if (proto == p) return true;
  return false;
}

void checkWatch(const Invocation& inv) {
  if (inv.has("--watch")) parseSeconds("--watch", inv.opt("--watch"), 0.1, 86400.0);
  if (inv.has("--count")) {
    if (!inv.has("--watch")) throw UsageError("--count needs --watch", inv.command->name);
    parseUint("--count", inv.opt("--count"), 1, 1000000000);
  }
}

Request explainRequest(const Invocation& inv) {
  Request r{"explain"};
  const auto& a = inv.args;
  auto src = IpAddr::parse(a[0]);
  auto dst = IpAddr::parse(a[1]);
  r.params["src"] = parseAddress("SRC", a[0]);
  r.params["dst"] = parseAddress("DST", a[1]);
  if (src->family != dst->family)
    throw UsageError("SRC " + a[0] + " and DST " + a[1] + " are not of the same address family",
                     "explain");
  r.params["proto"] = parseProto("PROTO", a[2]);
  if (a.size() == 4) throw UsageError("missing DPORT (give both SPORT and DPORT, or neither)", "explain");
  if (a.size() == 5) {
    const std::string proto = r.params["proto"].get<std::string>();
    if (!hasPorts(proto))
      throw UsageError("PROTO " + a[2] + " has no ports: gwlbd keys it on addresses and protocol "
                       "(ports count for tcp, udp, sctp, 136 (UDP-Lite) and ICMP echo); leave "
                       "out SPORT and DPORT", "explain");
    r.params["sport"] = parsePort("SPORT", a[3]);
    r.params["dport"] = parsePort("DPORT", a[4]);
  }
  if (inv.has("--port")) r.params["port"] = parseUint("--port", inv.opt("--port"), 0, 65535);
  if (inv.has("--vlan")) r.params["vlan"] = parseUint("--vlan", inv.opt("--vlan"), 0, 4095);
  return r;
}

}  // namespace

Request buildRequest(const Invocation& inv) {
  const CommandSpec& c = *inv.command;
  const std::string& n = c.name;
  if (c.method.empty()) throw UsageError("'" + n + "' does not ask the daemon", n);
  Request r{c.method};
  if (n == "servers") {
    if (inv.has("--group")) r.params["group"] = parseGroupName("--group", inv.opt("--group"));
    checkWatch(inv);
  } else if (n == "flows") {
    r = flowsRequest(inv);
  } else if (n == "explain") {
    r = explainRequest(inv);
  } else if (n == "stats") {
    checkWatch(inv);
  } else if (n == "server add") {
    r.params["group"] = parseGroupName("GROUP", inv.args[0]);
    // Either family: gwlbd checks it against the node's underlay addresses
    // as it checks the file (an IPv6-only node takes only IPv6 appliances).
    r.params["address"] = parseAddress("ADDRESS", inv.args[1]);
    if (inv.has("--weight")) r.params["weight"] = parseUint("--weight", inv.opt("--weight"), 0, 10000);
    if (inv.has("--mac")) r.params["mac"] = parseMac("--mac", inv.opt("--mac"));
  } else if (n == "health") {
    r.params["address"] = parseAddress("ADDRESS", inv.args[0]);
  } else if (n == "health-destinations") {
    if (!inv.args.empty()) r.params["name"] = parseName("NAME", inv.args[0], "listener");
  } else if (n == "server remove") {
    r.params["address"] = parseAddress("ADDRESS", inv.args[0]);
    if (inv.has("--force")) r.params["force"] = true;
  } else if (n == "server drain") {
    r.params["address"] = parseAddress("ADDRESS", inv.args[0]);
    if (inv.has("--timeout"))
      r.params["timeout_s"] = parseUint("--timeout", inv.opt("--timeout"), 1, 3600);
    if (inv.has("--force")) r.params["force"] = true;
  } else if (n == "server undrain") {
    r.params["address"] = parseAddress("ADDRESS", inv.args[0]);
  } else if (n == "server set") {
    r.params["address"] = parseAddress("ADDRESS", inv.args[0]);
    if (!inv.has("--weight")) throw UsageError("missing --weight N", n);
    r.params["weight"] = parseUint("--weight", inv.opt("--weight"), 0, 10000);
    if (inv.has("--force")) r.params["force"] = true;
  } else if (n == "reload") {
    if (inv.has("--force")) r.params["force"] = true;
    // gwlbd answers `timeout` once this has passed, so the client hears why.
    if (inv.timeout_set) r.params["timeout_s"] = std::max<uint64_t>(1, uint64_t(std::ceil(inv.timeout_s)));
  } else if (n == "capture stop") {
    if (!inv.args.empty()) {
      // A DPDK device name: printable, no spaces, under 64 bytes (a PCI
      // address has ':' in it).
      const std::string& d = inv.args[0];
      bool ok = !d.empty() && d.size() < 64;
      for (char c : d) ok = ok && c > ' ' && c < 0x7f;
      if (!ok) bad("DEVICE", d, "a port's device name (1-63 printable characters, no spaces)");
      r.params["device"] = d;
    }
    if (inv.has("--queue")) r.params["queue"] = parseUint("--queue", inv.opt("--queue"), 0, 65534);
  } else if (n == "config dump") {
    if (inv.has("--secrets")) r.params["secrets"] = true;
  }
  return r;
}

std::string flowFilterArgs(const Json& params) {
  static const char* const kKeys[] = {"server", "group", "src", "dst", "proto", "port", "limit"};
  std::string s;
  for (const char* k : kKeys) {
    if (!params.contains(k)) continue;
    const auto& v = params[k];
    s += std::string(" --") + k + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return s;
}

}  // namespace gwlb::cli
