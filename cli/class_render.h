// gwlbctl's rendering of traffic classes: the `classes` table and
// the class lines of `explain`. Pure code, as render.h: missing or mistyped
// fields render as "-", nothing throws on odd input.
#pragma once

#include <string>

#include "cli/json.h"
#include "cli/render_fields.h"

namespace gwlb::cli {

// The control API's `classes` result: every class in order with its match,
// action, listener, packets and bytes, then the unclassified drops.
std::string renderClasses(const Json& result);
// explain's `class` object as key/value rows: the class matched (or none),
// the fields that matched, and why each earlier class did not. Nothing when
// `cls` is not an object (no traffic_classes).
void addClassLines(KV& kv, const Json& cls);

}  // namespace gwlb::cli
