// `gwlbctl servers --watch`: each appliance's traffic rates from two samples
// of the `servers` result. Pure code.
#pragma once

#include <string>

#include "cli/json.h"

namespace gwlb::cli {

// [{address, packets_per_s, bytes_per_s, returned_packets_per_s,
// returned_bytes_per_s}] for every appliance of `cur`, over dt seconds. An
// appliance missing from `prev` (new) or whose counters went down (gwlbd
// restarted, or its server id was reused) has no rate yet: null.
Json applianceRates(const Json& cur, const Json& prev, double dt);

// ADDRESS, GROUP, STATE, HEALTH, FLOWS and the four rates, under a line
// saying when and over how long.
std::string renderApplianceRates(const Json& cur, const Json& rates, double dt, double now);

}  // namespace gwlb::cli
