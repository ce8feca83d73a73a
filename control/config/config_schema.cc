// The config's key table, its root: the top-level keys (each section's keys
// are in its part: config_schema_parts.h lists them), the enum grammars and
// the name rules the parts share. config_schema.h says what a Key holds.
#include "control/config/config_schema.h"

#include <algorithm>

#include "control/config/config_schema_parts.h"

namespace gwlb::ctl::schema {
namespace {

// Enums: each grammar once (when_all_unhealthy serves groups and listeners).

constexpr EnumName kStickinessNames[] = {{"5-tuple", uint64_t(Stickiness::kFiveTuple)},
                                         {"3-tuple", uint64_t(Stickiness::kThreeTuple)},
                                         {"2-tuple", uint64_t(Stickiness::kTwoTuple)}};
constexpr EnumName kFormatNames[] = {{"aws", uint64_t(GeneveFormat::kAws)},
                                     {"ethernet", uint64_t(GeneveFormat::kEthernet)},
                                     {"nsi", uint64_t(GeneveFormat::kNsi)}};
constexpr EnumName kEncapNames[] = {{"geneve", uint64_t(Encapsulation::kGeneve)},
                                    {"vxlan", uint64_t(Encapsulation::kVxlan)}};
constexpr EnumName kProtocolNames[] = {{"tcp", uint64_t(HealthProtocol::kTcp)},
                                       {"http", uint64_t(HealthProtocol::kHttp)},
                                       {"https", uint64_t(HealthProtocol::kHttps)}};
constexpr EnumName kRoleNames[] = {{"router", uint64_t(PortRole::kRouter)},
                                   {"appliance", uint64_t(PortRole::kAppliance)},
                                   {"both", uint64_t(PortRole::kBoth)}};
constexpr EnumName kWhenAllNames[] = {{"fail_open", uint64_t(WhenAllUnhealthy::kFailOpen)},
                                      {"drop", uint64_t(WhenAllUnhealthy::kDrop)}};
constexpr EnumName kFailoverNames[] = {{"no_rebalance", uint64_t(FailoverMode::kNoRebalance)},
                                       {"rebalance", uint64_t(FailoverMode::kRebalance)}};
constexpr EnumName kClassActionNames[] = {{"inspect", uint64_t(ClassAction::kInspect)},
                                          {"bypass", uint64_t(ClassAction::kBypass)},
                                          {"drop", uint64_t(ClassAction::kDrop)}};
constexpr EnumName kLogLevelNames[] = {{"trace", 0}, {"debug", 1},    {"info", 2}, {"warn", 3},
                                       {"error", 4}, {"critical", 5}, {"off", 6}};

}  // namespace

const EnumDesc kStickiness{kStickinessNames, "one of 5-tuple, 3-tuple, 2-tuple",
                           " is not a stickiness; allowed: 5-tuple, 3-tuple, 2-tuple"};
const EnumDesc kGeneveFormat{kFormatNames, "one of aws, ethernet, nsi",
                             " is not a Geneve format; allowed: aws, ethernet, nsi"};
const EnumDesc kEncapsulation{kEncapNames, "geneve or vxlan",
                               " is not an encapsulation; allowed: geneve, vxlan"};
const EnumDesc kHealthProtocol{kProtocolNames, "tcp, http or https",
                               " is not a health check protocol; allowed: tcp, http, https"};
const EnumDesc kPortRole{kRoleNames, "router, appliance or both",
                         " is not a port role; use router, appliance or both"};
const EnumDesc kWhenAllUnhealthy{kWhenAllNames, "fail_open or drop",
                                 " is not allowed; use fail_open or drop"};
const EnumDesc kFailoverMode{kFailoverNames, "no_rebalance or rebalance",
                             " is not allowed; use no_rebalance or rebalance"};
const EnumDesc kClassAction{kClassActionNames, "inspect, bypass or drop",
                             " is not a class action; use inspect, bypass or drop"};
const EnumDesc kLogLevel{kLogLevelNames, "a log level", ""};

bool validName(const std::string& n) {
  if (n.empty() || n.size() > kMaxNameLen) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
  });
}

// A Unix group: a name as useradd allows it, or a number below 2^32 - 1.
bool validGroupRef(const std::string& g) {
  if (g.empty() || g.size() > 32) return false;
  if (g.find_first_not_of("0123456789") == std::string::npos)
    return g.size() <= 10 && std::stoull(g) < 0xFFFFFFFFull;
  if (g[0] == '-') return false;
  return validName(g);
}

namespace {

void checkLogLevel(const void* v, const std::string& path, Report& r) {
  const std::string& l = as<std::string>(v);
  if (kLogLevel.parse(l)) return;
  std::string list;
  for (const EnumName& n : kLogLevel.names) list += (list.empty() ? "" : ", ") + std::string(n.name);
  r.add(path, quote(l) + " is not a log level; allowed: " + list);
}

// The top level.
const Key kRootKeys[] = {
    {.name = "node", .kind = Kind::kSection, .acc = member<&Config::node>(),
     .doc = "This node's underlay settings.", .required = true, .sub = &kNodeSection},
    {.name = "server_groups", .kind = Kind::kList, .acc = member<&Config::server_groups>(),
     .doc = "Groups of appliances.", .range = kGroupsList, .required = true,
     .what = "a list of server groups", .items = "groups", .needs_one = true,
     .sub = &kGroupSection, .check = checkGroupCount, .range_doc = "1..64"},
    {.name = "dataplane", .kind = Kind::kSection, .acc = member<&Config::dataplane>(),
     .doc = "Worker and memory sizing.", .sub = &kDataplaneSection},
    {.name = "eal", .kind = Kind::kStrings, .acc = member<&Config::eal_args>(),
     .doc = "Extra arguments of DPDK's `rte_eal_init`.", .range = kMaxEalArgs,
     .reload = Reload::kRestart, .what = "a list of strings", .item_what = "a string",
     .items = "arguments"},
    {.name = "log_level", .kind = Kind::kString, .acc = member<&Config::log_level>(),
     .doc = "Least severity that is logged.", .reload = Reload::kRestart, .what = "a log level",
     .check = checkLogLevel,
     .range_doc = "`trace`, `debug`, `info`, `warn`, `error`, `critical`, `off`"},
    {.name = "control", .kind = Kind::kSection, .acc = member<&Config::control>(),
     .doc = "The local control API socket (`gwlbctl`).", .sub = &kControlSection},
    {.name = "metrics", .kind = Kind::kSection, .acc = member<&Config::metrics>(),
     .doc = "Prometheus text exposition over HTTP.", .sub = &kMetricsSection},
    {.name = "health_aggregation_policies", .kind = Kind::kList,
     .acc = member<&Config::health_aggregation_policies>(),
     .doc = "How a health source judges its group.", .range = kMaxPolicies,
     .what = "a list of policies", .sub = &kPolicySection},
    {.name = "health_sources", .kind = Kind::kList, .acc = member<&Config::health_sources>(),
     .doc = "One server group judged by one policy.", .range = kMaxHealthSources,
     .what = "a list of health sources", .sub = &kSourceSection},
    {.name = "composite_health_checks", .kind = Kind::kList,
     .acc = member<&Config::composite_health_checks>(),
     .doc = "Health sources combined (AND) into a listener's health.", .range = kMaxComposites,
     .what = "a list of composite health checks", .sub = &kCompositeSection},
    {.name = "listeners", .kind = Kind::kList, .acc = member<&Config::listeners>(),
     .doc = "Services: server groups as regions in order of preference.", .range = kNamesList,
     .what = "a list of listeners", .items = "listeners", .sub = &kListenerSection,
     .check = checkListenerCount, .range_doc = "at most 16",
     .default_doc = "one over the first group"},
    {.name = "tags", .kind = Kind::kList, .acc = member<&Config::tags>(),
     .doc = "Names for the values of `traffic_classes[].tag`.", .range = kTagsList,
     .what = "a list of tags", .items = "tags", .sub = &kTagSection, .range_doc = "at most 1024"},
    {.name = "traffic_classes", .kind = Kind::kList, .acc = member<&Config::traffic_classes>(),
     .doc = "Which new flows go to which listener, are bypassed or dropped: first match wins; "
            "no match: dropped.",
     .range = kClassesList, .what = "a list of traffic classes", .items = "classes",
     .sub = &kClassSection, .check = checkClassCount, .range_doc = "at most 1000",
     .default_doc = "none: everything to the first listener"},
    {.name = "health_endpoint", .kind = Kind::kSection, .acc = member<&Config::health_endpoint>(),
     .doc = "HTTP health of the listeners, for consumers.", .sub = &kHealthEndpointSection},
    {.name = "fleet", .kind = Kind::kSection, .acc = member<&Config::fleet>(),
     .doc = "This gateway as one of a fleet (docs/fleet.md); absent: a single gateway.",
     .sub = &kFleetSection},
};
const Section kRoot{"", kRootKeys};

}  // namespace

const Section& rootSection() { return kRoot; }

}  // namespace gwlb::ctl::schema
