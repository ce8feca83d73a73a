// What the parts of the config's key table share (internal to the config
// library): the ranges, the reader of a key's value, and each part's top
// sections, which the root's keys (config_schema.cc) name. The parts, one a
// config section:
//   config_schema.cc            the top-level keys, the enum grammars, names
//   config_schema_groups.cc     server_groups[] and everything under it
//   config_schema_node.cc       node, dataplane, control, metrics,
//                               health_endpoint, fleet
//   config_schema_listeners.cc  health aggregation, listeners, traffic
//                               classes, tags
#pragma once

#include <limits>
#include <string>
#include <string_view>

#include "control/config/config_schema.h"

namespace gwlb::ctl::schema {

// Ranges and limits (per key; the list sizes at the end).

inline constexpr Range kWeightRange{0, 10000};
inline constexpr Range kVniRange{0, 0xFFFFFF, true};
inline constexpr Range kU64Range{0, std::numeric_limits<uint64_t>::max(), true};
inline constexpr Range kIdleRange{60, 6000};
inline constexpr Range kDrainRange{1, 3600};
inline constexpr Range kHoldRange{0, 3600};
inline constexpr Range kBypassSecondsRange{0, 3600};
inline constexpr Range kOptionClassRange{0, 0xFFFF, true};
inline constexpr Range kPacketsRange{1, 1000000000};
inline constexpr Range kPassiveWindowRange{100, 300000};
inline constexpr Range kBaseEjectionRange{0, 3600000};
inline constexpr Range kMaxEjectionRange{0, 86400000};
inline constexpr Range kPenaltyRange{1, 100000};
inline constexpr Range kHalfLifeRange{1, 3600};
inline constexpr Range kMaxHoldRange{1, 86400};
inline constexpr Range kPercentRange{0, 100};
inline constexpr Range kMinCountRange{0, 4096};
inline constexpr Range kPortRange{0, 65535};
inline constexpr Range kVxlanPortRange{1, 65535};
inline constexpr Range kMtuRange{576, 9216};
inline constexpr Range kIcmpRateRange{0, 100000};
inline constexpr Range kResetRateRange{0, 1000000};
inline constexpr Range kWorkersRange{1, 64};
inline constexpr Range kBurstRange{1, 256};
inline constexpr Range kFlowTableRange{1024, 1u << 27};
inline constexpr Range kNewFlowsRange{0, 100000000};
inline constexpr Range kMbufsRange{1024, 1u << 24};
inline constexpr Range kQueueRange{64, 16384};
inline constexpr Range kHealthPortRange{1, 65535};
// Health check interval and timeout: the union of what the products we match
// allow (seeds: interval 1-50 s; AWS GWLB: interval 5-300 s, timeout 2-120 s;
// Alibaba: timeout 1-300 s), down to 10 ms for labs and tests.
inline constexpr Range kIntervalMsRange{10, 300000};
inline constexpr Range kTimeoutMsRange{10, 300000};
inline constexpr Range kThresholdRange{2, 10};
// Largest lists the parser walks; longer ones are one error (a YAML alias can
// repeat a large node many times, so the text's size alone bounds nothing).
inline constexpr Range kMaxEalArgs{0, 256};
inline constexpr Range kMaxHttpCodes{0, 32};
inline constexpr Range kMaxPolicies{0, 256};
inline constexpr Range kMaxHealthSources{0, 1024};
inline constexpr Range kMaxComposites{0, 256};
inline constexpr Range kGroupsList{1, kMaxGroups};
inline constexpr Range kAppliancesList{1, kMaxAppliances};
inline constexpr Range kPortsList{0, kMaxPortEntries};
inline constexpr Range kIpv6List{0, kMaxIpv6Addresses};
inline constexpr Range kNamesList{0, kMaxRegionItems};
inline constexpr Range kSyncPeersList{0, 64};
inline constexpr Range kWarmStartRange{1, 600};
inline constexpr Range kWarmConnectMsRange{100, 60000};
inline constexpr Range kWarmIdleMsRange{100, 600000};
inline constexpr Range kIdleSleepRange{0, 10000};
inline constexpr Range kGraceRange{0, 3600};
inline constexpr Range kBirdProtocolsList{1, 16};
inline constexpr Range kClassesList{0, kMaxClasses};
inline constexpr Range kTagsList{0, kMaxClasses};
inline constexpr Range kMatchSmallList{0, 256};   // ingress_ports, protocols
inline constexpr Range kMatchLargeList{0, 1024};  // vlans, prefixes, l4_ports

inline constexpr std::string_view kNameRule = "1..63 of `A-Z a-z 0-9 _ . -`, unique";

// A key's value (Key::check's `v`) as its member's type.
template <class T>
const T& as(const void* v) {
  return *static_cast<const T*>(v);
}

// config_schema_groups.cc
extern const Section kGroupSection;
void checkGroupCount(const void* v, const std::string& path, Report& r);
// config_schema_node.cc
extern const Section kNodeSection, kDataplaneSection, kControlSection, kMetricsSection,
    kHealthEndpointSection, kFleetSection;
// config_schema_listeners.cc
extern const Section kPolicySection, kSourceSection, kCompositeSection, kListenerSection,
    kClassSection, kTagSection;
void checkListenerCount(const void* v, const std::string& path, Report& r);

}  // namespace gwlb::ctl::schema
