// `gwlbctl health-destinations` / `regions`: the `destinations` result
// (docs/control-api.md) as text. Pure code: the clock comes in as `now`
// (Unix seconds); missing or mistyped fields render as "-"; never throws on odd input.
#pragma once

#include <string>

#include "cli/json.h"

namespace gwlb::cli {

// Per destination its health and where new flows go, its regions, its
// composites and their sources.
std::string renderDestinations(const Json& result, double now);

}  // namespace gwlb::cli
