// Human-readable rendering of control API results (docs/control-api.md) as
// aligned tables. Pure code: the clock comes in as `now` (Unix seconds).
// Missing or mistyped fields render as "-"; nothing here throws on odd input.
#pragma once

#include <string>

#include "cli/json.h"

namespace gwlb::cli {

// Field text: strings as they are, numbers and booleans printed, null/missing -> dflt.
std::string fieldText(const Json& obj, const char* key, const char* dflt = "-");
// Field number: numbers, or decimal/0x strings; otherwise dflt.
double fieldNumber(const Json& obj, const char* key, double dflt = 0);

std::string renderStatus(const Json& result, double now);
// `wide`: also REASON, MAC and the whole last health result.
std::string renderAppliances(const Json& result, double now, bool wide = false);
std::string renderGroups(const Json& result);
// Rows only (a table, or "no matching flows"); the caller adds paging hints.
std::string renderFlows(const Json& flows_array);
std::string renderFlowCount(const Json& result);
std::string renderExplain(const Json& result);
// `prev` null: counters only. Otherwise a rates column from prev to cur
// (their taken_at difference, else `interval_s`).
// Counters and drop reasons that are zero are left out (and counted in a
// last line) unless `all`.
std::string renderStats(const Json& cur, const Json* prev, double interval_s, bool all = false);
// {"totals": {name: per_s}, "drops": {name: per_s}, "ports": [{id, rx_pps, ...}], "interval_s"}.
Json statsRates(const Json& cur, const Json& prev, double interval_s);
// One line or a few for server.add/remove/set and reload.
std::string renderChange(const std::string& method, const Json& params, const Json& result);
// "message (code)" then "  path: message" for each error.details entry.
// gwlbctl config dump's notes for stderr: secrets left out, runtime changes.
std::string renderRuntimeChanges(const Json& r);
std::string renderError(const Json& error);

// 6 -> "tcp", 17 -> "udp", 132 -> "sctp", 1 -> "icmp", 58 -> "icmpv6"; strings as they are.
std::string protoName(const Json& proto);

}  // namespace gwlb::cli
