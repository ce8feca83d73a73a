// `gwlbctl flows --sort FIELD`: the sort keys of a flow listing. Pure code.
#pragma once

#include <string>

#include "cli/json.h"

namespace gwlb::cli {

struct FlowSort {
  enum class Field { kAge, kIdle, kPackets, kSrc, kDst, kAppliance };
  Field field = Field::kAge;
  bool descending = false;
  std::string name;  // "packets"
};

// "packets" or "-packets" (descending; so is `reverse`). Throws UsageError
// naming the fields for anything else.
FlowSort parseFlowSort(const std::string& text, bool reverse);

// Sorts the flow objects of a `flows` result in place (stable: equal keys keep
// the listing's order). Addresses sort numerically, IPv4 before IPv6, then by
// port; a missing value sorts last either way.
void sortFlows(Json& flows, const FlowSort& s);

}  // namespace gwlb::cli
