// Rendering of health check results (docs/control-api.md: the `health`
// object of each `servers` entry and the `health` method) for gwlbctl.
// Pure code: the clock comes in as `now` (Unix seconds); missing or mistyped
// fields render as "-"; nothing here throws on odd input.
#pragma once

#include <string>

#include "cli/json.h"

namespace gwlb::cli {

// Cells of the `servers` table, from one server's `health` object.
// "3✓" (3 successes in a row) or "2✗"; "-" before the first result.
std::string healthConsecutive(const Json& health);
// The last probe result: its reason code ("ok", "connect_timeout", "bad_status 503"),
// or with `full` the whole text ("connect_timeout: no answer to SYN within 5000 ms").
std::string healthLastResult(const Json& health, bool full);
// "fail 19s / ok 4s"; "-" when the appliance is not probed (disabled, unused).
std::string healthWindows(const Json& health);

// `gwlbctl health ADDRESS`: settings, state, windows and history (newest last).
std::string renderHealth(const Json& result, double now);
// One history entry without its age: "✗ connect_timeout (5000 ms): no answer ..."
// or "→ unhealthy: 3 consecutive failures (...)".
std::string healthEvent(const Json& event);
// "12.3s ago" below a minute, else "5m12s ago".
std::string formatAgo(double seconds);
// 200 -> "200ms", 2000 -> "2s", 1500 -> "1.5s".
std::string formatMs(double ms);

}  // namespace gwlb::cli
