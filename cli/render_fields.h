// Field access and section titles shared by gwlbctl's render files
// (render.cc, destination_render.cc); internal to cli/. Missing or mistyped
// fields give null or "-", as everywhere in render.h.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/json.h"

namespace gwlb::cli {

// Key/value rows for renderKeyValues (cli/table.h).
using KV = std::vector<std::pair<std::string, std::string>>;

// obj[key]; null when obj is not an object or has no such key.
const Json& field(const Json& obj, const char* key);
// Strings as they are, booleans "yes"/"no", numbers printed; null -> dflt.
std::string valueText(const Json& v, const char* dflt = "-");
// A count field in SI units ("12.3k"); "-" when missing.
std::string countText(const Json& obj, const char* key);
// "\ntitle:\n", the line above a section's table.
std::string sectionTitle(const std::string& t);

}  // namespace gwlb::cli
