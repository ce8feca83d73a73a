// The config's key table, the parts that route traffic: health aggregation
// (policies, sources, composites), listeners, traffic classes (their item
// kinds and the rules between classes: config_classes.cc) and tags.
#include <string>
#include <vector>

#include "control/config/config_schema.h"
#include "control/config/config_schema_parts.h"

namespace gwlb::ctl::schema {

void checkListenerCount(const void* v, const std::string& path, Report& r) {
  size_t n = as<std::vector<ListenerConfig>>(v).size();
  if (n > kMaxRegionItems) r.add(path, tooMany(n, kMaxRegionItems, "listeners", false));
}

namespace {

constexpr std::string_view kAfterAction[] = {"action"};

const Key kPolicyKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&AggregationPolicyConfig::name>(),
     .doc = "Named by health sources.", .required = true, .what = "a policy name",
     .range_doc = kNameRule},
    {.name = "min_healthy_percent", .kind = Kind::kUint,
     .acc = member<&AggregationPolicyConfig::min_healthy_percent>(),
     .doc = "A source needs at least this share of its servers healthy...", .range = kPercentRange},
    {.name = "min_healthy_count", .kind = Kind::kUint,
     .acc = member<&AggregationPolicyConfig::min_healthy_count>(),
     .doc = "...and at least this many.", .range = kMinCountRange},
};
}  // namespace
const Section kPolicySection{"health_aggregation_policies[]", kPolicyKeys};
namespace {

const Key kSourceKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&HealthSourceConfig::name>(),
     .doc = "Named by composites.", .required = true, .what = "a health source name",
     .range_doc = "1..63 of `A-Z a-z 0-9 _ . -`, unique among sources and composites"},
    {.name = "server_group", .kind = Kind::kString, .acc = member<&HealthSourceConfig::server_group>(),
     .doc = "The group it judges.", .required = true, .what = "a server group name",
     .range_doc = "a server group"},
    {.name = "policy", .kind = Kind::kString, .acc = member<&HealthSourceConfig::policy>(),
     .doc = "How it judges.", .what = "a policy name", .range_doc = "a policy",
     .default_doc = "the defaults (60 % / 1)"},
};
}  // namespace
const Section kSourceSection{"health_sources[]", kSourceKeys};
namespace {

const Key kCompositeKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&CompositeHealthCheckConfig::name>(),
     .doc = "Its name in logs, metrics and `gwlbctl regions`.", .required = true,
     .what = "a composite name", .range_doc = kNameRule},
    {.name = "sources", .kind = Kind::kStrings, .acc = member<&CompositeHealthCheckConfig::sources>(),
     .doc = "Healthy only if every source is.", .range = kNamesList, .required = true,
     .what = "a list of health source names", .item_what = "a name", .items = "names",
     .range_doc = "1..16 health sources, no composite"},
    {.name = "destination", .kind = Kind::kString,
     .acc = member<&CompositeHealthCheckConfig::destination>(),
     .doc = "The listener whose health it publishes.", .required = true, .what = "a listener name",
     .range_doc = "a listener"},
    {.name = "dry_run", .kind = Kind::kBool, .acc = member<&CompositeHealthCheckConfig::dry_run>(),
     .doc = "Computed, shown, logged, exported as \"would fail over\"; never moves traffic."},
};
}  // namespace
const Section kCompositeSection{"composite_health_checks[]", kCompositeKeys};
namespace {

// AWS: the listener attribute send_tcp_reset.on_idle_timeout.enabled.
const Key kListenerResetKeys[] = {
    {.name = "on_idle_timeout", .kind = Kind::kBool,
     .acc = member<&ListenerTcpResetConfig::on_idle_timeout>(),
     .doc = "A TCP segment without SYN of a flow that expired idle, or has no flow entry, is "
            "answered with an RST."},
    {.name = "on_fleet_view_incomplete", .kind = Kind::kBool,
     .acc = member<&ListenerTcpResetConfig::on_fleet_view_incomplete>(),
     .doc = "A TCP segment without SYN and without a flow entry is answered with an RST while "
            "this fleet node may lack its peers' flow records (warm start without a table, a "
            "peer silent; [fleet.md](fleet.md#a-segment-with-no-record)); `false`: picked from "
            "this node's Maglev table."},
};
const Section kListenerResetSection{"listeners[].send_tcp_reset", kListenerResetKeys};

const Key kApplianceBypassKeys[] = {
    {.name = "allow", .kind = Kind::kBool, .acc = member<&ApplianceBypassConfig::allow>(),
     .doc = "An appliance of this listener may hand a flow back with gwlb's bypass option: "
            "its packets then go straight back to the router, uninspected."},
    {.name = "max_seconds", .kind = Kind::kSeconds, .acc = member<&ApplianceBypassConfig::max_seconds>(),
     .doc = "The longest bypass granted; longer requests (and the flow's life) are cut to it. "
            "0: as asked (a timed request is cut to 3600 s).",
     .range = kBypassSecondsRange},
};
const Section kApplianceBypassSection{"listeners[].appliance_bypass", kApplianceBypassKeys};

const Key kListenerKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&ListenerConfig::name>(),
     .doc = "Also the name on the health endpoint.", .required = true, .what = "a listener name",
     .range_doc = kNameRule},
    {.name = "server_groups", .kind = Kind::kStrings, .acc = member<&ListenerConfig::server_groups>(),
     .doc = "Regions in order of preference.", .range = kNamesList, .required = true,
     .what = "a list of server group names", .item_what = "a name", .items = "names",
     .range_doc = "1..16 groups, each in at most one listener, same stickiness"},
    {.name = "failback_hold", .kind = Kind::kSeconds, .acc = member<&ListenerConfig::failback_hold_s>(),
     .doc = "How long a preferred region must stay healthy before new flows return to it.",
     .range = kHoldRange},
    {.name = "when_all_unhealthy", .kind = Kind::kEnum,
     .acc = member<&ListenerConfig::when_all_unhealthy>(),
     .doc = "No region healthy: new flows go to the preferred group (`fail_open`) or are dropped.",
     .enm = &kWhenAllUnhealthy},
    {.name = "send_tcp_reset", .kind = Kind::kSection, .acc = member<&ListenerConfig::send_tcp_reset>(),
     .doc = "RSTs for TCP flows that expired idle ([product-rules.md](product-rules.md#2-existing-flows-when-an-appliance-leaves-rebalance-and-draining)).",
     .sub = &kListenerResetSection},
    {.name = "appliance_bypass", .kind = Kind::kSection,
     .acc = member<&ListenerConfig::appliance_bypass>(),
     .doc = "Flows its appliances may hand back ([product-rules.md](product-rules.md#appliance-requested-bypass)).",
     .sub = &kApplianceBypassSection},
};
}  // namespace
const Section kListenerSection{"listeners[]", kListenerKeys};
namespace {

// --- Traffic classes (items and rules in config_classes.cc).
// `prefixes` as written in the file: a prefix file's prefixes follow them in
// the member (TrafficClassMatch::file_prefixes) and are not written back.
constexpr Access inlinePrefixes() {
  Access a = member<&TrafficClassMatch::prefixes>();
  a.count = [](const void* o) {
    const auto& m = *static_cast<const TrafficClassMatch*>(o);
    return m.prefixes.size() - m.file_prefixes;
  };
  return a;
}
std::string prefixFileNote(const void* o) {
  const auto& m = *static_cast<const TrafficClassMatch*>(o);
  return std::to_string(m.file_prefixes) + " prefixes, sha256 " + m.prefixes_file_sha256 + " when loaded";
}
const Key kMatchKeys[] = {
    {.name = "ingress_ports", .kind = Kind::kItems, .acc = member<&TrafficClassMatch::ingress_ports>(),
     .doc = "DPDK ports the packet came in on; list both directions' ports.",
     .range = kMatchSmallList, .what = "a list of DPDK port ids", .item_what = "a port id",
     .items = "ports", .item = &kPortItem, .check = checkIngressPorts,
     .type_doc = "list of integers", .range_doc = "at most 256 of 0..65535, unique, not a port of role appliance",
     .default_doc = "empty (any)"},
    {.name = "vlans", .kind = Kind::kItems, .acc = member<&TrafficClassMatch::vlans>(),
     .doc = "VLAN id the packet came with (0: untagged); list both directions' VLANs.",
     .range = kMatchLargeList, .what = "a list of VLAN ids", .item_what = "a VLAN id",
     .items = "VLANs", .item = &kVlanItem, .check = checkVlans, .type_doc = "list of integers",
     .range_doc = "at most 1024 of 0..4094, unique", .default_doc = "empty (any)"},
    {.name = "prefixes", .kind = Kind::kItems, .acc = inlinePrefixes(),
     .doc = "IPv4 and IPv6 networks; either endpoint's address in one matches.",
     .range = kMatchLargeList, .what = "a list of CIDR prefixes", .item_what = "a CIDR prefix",
     .items = "prefixes", .item = &kPrefixItem, .check = checkPrefixes,
     .type_doc = "list of CIDR prefixes",
     .range_doc = "at most 1024 with `prefixes_file`'s, `10.9.0.0/16`, `2001:db8::/32`; host bits zero, unique",
     .default_doc = "empty (any)"},
    {.name = "prefixes_file", .kind = Kind::kString, .acc = member<&TrafficClassMatch::prefixes_file>(),
     .doc = "More prefixes, from a file: one per line, `#` comments (see Prefix files below).",
     .what = "a file path", .type_doc = "file path",
     .range_doc = "relative to the config file's directory; at most 1 MiB",
     .default_doc = "none", .note = prefixFileNote},
    {.name = "protocols", .kind = Kind::kItems, .acc = member<&TrafficClassMatch::protocols>(),
     .doc = "IP protocol of the flow (IPv6: after the extension headers).", .range = kMatchSmallList,
     .what = "a list of protocols", .item_what = "a protocol", .items = "protocols",
     .item = &kProtocolItem, .check = checkProtocols, .type_doc = "list of strings or integers",
     .range_doc = "`tcp`, `udp`, `icmp`, `icmpv6`, `sctp`, 0..255; unique", .default_doc = "empty (any)"},
    {.name = "l4_ports", .kind = Kind::kItems, .acc = member<&TrafficClassMatch::l4_ports>(),
     .doc = "Ports and ranges; either endpoint's port in one matches.", .range = kMatchLargeList,
     .what = "a list of ports and ranges", .item_what = "a port or range", .items = "ports",
     .item = &kL4PortItem, .check = checkL4Ports, .type_doc = "list of ports and ranges",
     .range_doc = "at most 1024 of `873`, `1000-2000` (0..65535, low first), unique",
     .default_doc = "empty (any)"},
};
const Section kMatchSection{"traffic_classes[].match", kMatchKeys};

constexpr Range kTruncateRange{0, 65535};
constexpr Range kU32TagRange{0, 0xFFFFFFFF};
constexpr Range kSampleRange{1, 1000000};
void checkTruncate(const void* v, const std::string& path, Report& r) {
  const uint32_t t = *static_cast<const uint32_t*>(v);
  if (t != 0 && t < 64)
    r.add(path, std::to_string(t) + " is too short: 0 (whole packets) or 64..65535 bytes, so "
                "every copy keeps its headers");
}
const Key kMirrorKeys[] = {
    {.name = "group", .kind = Kind::kString, .acc = member<&ClassMirrorConfig::group>(),
     .doc = "The server group whose appliances receive the copies (passive tools: nothing comes back); "
            "the flow's symmetric hash picks one, so both directions reach the same tool.",
     .required = true, .what = "a server group name",
     .range_doc = "a Geneve server group in no listener (and not the first group without `listeners`)"},
    {.name = "truncate", .kind = Kind::kUint, .acc = member<&ClassMirrorConfig::truncate>(),
     .doc = "Bytes of each packet copied at most (the inner IP packet in aws format, the frame in "
            "ethernet format).", .range = kTruncateRange, .check = checkTruncate,
     .range_doc = "0 (whole packets) or 64..65535", .default_doc = "0"},
    {.name = "sample", .kind = Kind::kUint, .acc = member<&ClassMirrorConfig::sample>(),
     .doc = "Copy one packet in this many (per worker).", .range = kSampleRange,
     .range_doc = "1..1000000", .default_doc = "1 (every packet)"},
};
// A mirror is its group: without one there is nothing to check or dump.
bool mirrorConfigured(const void* obj) { return !static_cast<const ClassMirrorConfig*>(obj)->group.empty(); }
const Section kMirrorSection{"traffic_classes[].mirror", kMirrorKeys, nullptr, nullptr, mirrorConfigured};

const Key kClassKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&TrafficClassConfig::name>(),
     .doc = "Its name in `gwlbctl classes`, metrics and logs.", .required = true,
     .what = "a class name", .range_doc = kNameRule},
    {.name = "match", .kind = Kind::kSection, .acc = member<&TrafficClassConfig::match>(),
     .doc = "Every field given must match; absent or empty: every packet.", .sub = &kMatchSection,
     .default_doc = "every packet"},
    {.name = "action", .kind = Kind::kEnum, .acc = member<&TrafficClassConfig::action>(),
     .doc = "`inspect`: to `listener`; `bypass`: straight back to its L2 neighbour, no Geneve; "
            "`drop`.",
     .enm = &kClassAction},
    {.name = "listener", .kind = Kind::kString, .acc = member<&TrafficClassConfig::listener>(),
     .doc = "`inspect` only: the listener the class's new flows go to.", .what = "a listener name",
     .after = kAfterAction,
     .range_doc = "a listener; without `listeners`: none or `default`",
     .default_doc = "none (required with `listeners`)"},
    {.name = "tag", .kind = Kind::kString, .acc = member<&TrafficClassConfig::tag>(),
     .doc = "Added to every packet of the class's flows in gwlb's tag option, with the direction, so "
            "an appliance serving several tenants tells them apart "
            "([wire-format.md](wire-format.md#tag-option)).",
     .what = "a tag number or name", .range_doc = "0..4294967295 (decimal or 0x hex), or a name in `tags`",
     .default_doc = "none"},
    {.name = "mirror", .kind = Kind::kSection, .acc = member<&TrafficClassConfig::mirror>(),
     .doc = "Copies of the class's packets, Geneve-wrapped, for passive tools, whatever its action "
            "([wire-format.md](wire-format.md#mirror-copies)).",
     .sub = &kMirrorSection, .default_doc = "none"},
};
}  // namespace
const Section kClassSection{"traffic_classes[]", kClassKeys};
namespace {

const Key kTagKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&TagConfig::name>(),
     .doc = "What `traffic_classes[].tag` names.", .required = true, .what = "a tag name",
     .range_doc = "1..63 of `A-Z a-z 0-9 _ . -`, not starting with a digit, unique"},
    {.name = "value", .kind = Kind::kUint, .acc = member<&TagConfig::value>(),
     .doc = "The 32-bit number the tag option carries.", .range = kU32TagRange, .required = true,
     .range_doc = "0..4294967295"},
};
}  // namespace
const Section kTagSection{"tags[]", kTagKeys};
}  // namespace gwlb::ctl::schema
