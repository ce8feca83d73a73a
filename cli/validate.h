// Client-side checks of gwlbctl arguments and the control API request they
// become. Pure code. Every parse* function throws UsageError naming the bad
// argument (`what`, e.g. "--src" or "ADDRESS") and the value.
#pragma once

#include <cstdint>
#include <string>

#include "cli/json.h"

#include "cli/args.h"

namespace gwlb::cli {

// A decimal number of seconds in [min, max] ("2", "0.5").
double parseSeconds(const std::string& what, const std::string& text, double min, double max);
// A decimal unsigned integer in [min, max].
uint64_t parseUint(const std::string& what, const std::string& text, uint64_t min, uint64_t max);
// IPv4 or IPv6 address; returns its canonical text.
std::string parseAddress(const std::string& what, const std::string& text);
// ADDRESS[/LEN], LEN <= 32 (IPv4) or 128 (IPv6); returns "canonical/LEN".
std::string parseCidr(const std::string& what, const std::string& text);
// tcp, udp, icmp, icmpv6 (any case) lower-cased, or 0-255 in decimal; always a JSON string.
Json parseProto(const std::string& what, const std::string& text);
uint16_t parsePort(const std::string& what, const std::string& text);
// 02:00:00:00:00:01 (':' or '-'); returns lower-case with ':'.
std::string parseMac(const std::string& what, const std::string& text);
// [A-Za-z0-9_.-]{1,63}, as names in the config file; `kind` names it in the
// message ("group": "... is not a group name (...)").
std::string parseName(const std::string& what, const std::string& text, const std::string& kind);
std::string parseGroupName(const std::string& what, const std::string& text);

struct Request {
  std::string method;
  Json params = Json::object();
};

// The request a daemon command sends, every argument checked. Client-only
// options (--all, --watch, stats --count, servers --wide) are checked but not sent.
// Throws UsageError. Not for `config check` or `help` (no request).
Request buildRequest(const Invocation& inv);

// "--server 192.0.2.10 --proto udp" for the `more:` hint of a paged listing:
// the filters of `params` (cursor and count left out) as command options.
std::string flowFilterArgs(const Json& params);

}  // namespace gwlb::cli
