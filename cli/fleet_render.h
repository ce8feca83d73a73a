// `gwlbctl fleet [show|join|leave]`: the `fleet` result (docs/control-api.md)
// as text. Pure code: `now` is not needed (the API gives ages). Missing or
// mistyped fields render as "-"; never throws on odd input.
#pragma once

#include <string>

#include "cli/json.h"

namespace gwlb::cli {

// The node, its announce state and why, BIRD's connection and protocols,
// then the peers (when the result has them): each with whether its config
// digest matches ours, the appliances whose health a peer judges otherwise,
// and the config sections that differ per peer.
std::string renderFleet(const Json& result);

}  // namespace gwlb::cli
