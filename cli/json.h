// The JSON type gwlbctl uses everywhere: nlohmann's ordered_json keeps the
// daemon's key order, so counters print in the order gwlbd declares them and
// --json output is the server's result as it was sent.
#pragma once

#include <nlohmann/json.hpp>

namespace gwlb::cli {
using Json = nlohmann::ordered_json;
}  // namespace gwlb::cli
