// Which traffic class a packet would match, and why: what
// `gwlbctl explain` and the control API's `explain` and `classes` show. The
// same first-match rules as the workers' ClassTable (common/traffic_class.h),
// read from the config so that each field's verdict can be named; a unit test
// holds the two to the same answers. Pure code; control thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/packet_parser.h"
#include "control/config/config.h"

namespace gwlb::ctl {

// The packet to classify: its ingress port (unknown: classes that list
// ingress_ports are skipped, and said to be), its VLAN (0 untagged) and its
// 5-tuple (ports 0 for a protocol without them).
struct ClassQuery {
  std::optional<uint16_t> port;
  uint16_t vlan = 0;
  L4Tuple tuple;
};

// One match field of one class, as checked against the query.
struct FieldVerdict {
  std::string field;  // "ingress_ports", "vlans", "prefixes", "protocols", "l4_ports"
  bool matched = false;
  bool unknown = false;  // ingress_ports without a port in the query
  std::string text;      // "vlan 100 is in 100, 200", "dst 10.9.1.1 is in 10.9.0.0/16", ...
};

struct ClassVerdictText {
  size_t index = 0;
  std::string name;
  bool matched = false;
  std::vector<FieldVerdict> fields;  // the class's match fields, in config order
};

struct ClassExplanation {
  int matched = -1;                        // index of the class matched; -1: none (unclassified)
  std::vector<ClassVerdictText> classes;  // every class up to and including the match
  bool port_unknown = false;               // a class was skipped for want of the ingress port
};

ClassExplanation explainClasses(const std::vector<TrafficClassConfig>& classes, const ClassQuery& q);

// A class's match fields as a short line: "vlans 100,200; protocols tcp;
// l4_ports 443,8000-8080", or "every packet" when it has none.
std::string matchSummary(const TrafficClassMatch& m);
// The same fields as JSON, each a list of strings as the config spells them
// (only the fields given).
nlohmann::json matchJson(const TrafficClassMatch& m);
// "tcp", "udp", "icmp", "sctp", else the number.
std::string protocolName(uint8_t p);

// The explanation as the control API's `class` object of `explain`:
// "copies to server group 'tools', first 128 bytes, 1 packet in 10": a
// class's mirror as `gwlbctl classes` and `explain` show it ("" when none).
std::string mirrorText(const ClassMirrorConfig& m);
// {"name", "index", "action", "listener", "matched": [texts], "skipped":
// [{"name", "index", "why"}], "reason"} or, with no class matching,
// {"name": null, "action": "drop", "reason": "no class matches: dropped as unclassified", ...}.
nlohmann::json explanationJson(const std::vector<TrafficClassConfig>& classes, const ClassExplanation& e);

}  // namespace gwlb::ctl
