// GET /destinations and /destinations/NAME on the health endpoint
// (health_endpoint.listen, docs/control-api.md#destinations): the routing and
// the JSON text. Pure: gwlbd passes its listeners and how it renders one;
// tests/fuzz/fuzz_http_request.cc passes its own. Control thread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/api/http_request.h"
#include "control/engine/region_failover.h"

namespace gwlb::ctl {

// 200 with every destination for /destinations; for /destinations/NAME 200
// (healthy) or 503 with that one, 404 when there is none. Any bytes in the
// path are fine: text that is not valid UTF-8 is shown with U+FFFD, never a
// reason to throw (a raw 0xFF in the name used to stop gwlbd).
HttpReply destinationsReply(
    const std::string& path, const std::vector<RegionTracker::Listener>& listeners,
    const std::function<nlohmann::json(const RegionTracker::Listener&)>& render);

// JSON text for a reply: strings that are not valid UTF-8 are replaced, not thrown at.
std::string jsonText(const nlohmann::json& j, int indent = -1);

}  // namespace gwlb::ctl
