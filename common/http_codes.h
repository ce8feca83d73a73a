// The HTTP status code grammar of health checks, shared by the config
// (server_groups[].health_check.http_codes) and the probes (gwlb-probe
// --codes): "http_2xx".."http_5xx" (a class), "200" (one code, 100..599) or
// "200-299" (a range, low end first). Pure code, header only.
#pragma once

#include <optional>
#include <string_view>

namespace gwlb {

struct HttpCodeRange {
  int lo, hi;  // inclusive
};

// What an entry may be, for error messages ("'x' " + kHttpCodeGrammar).
inline constexpr std::string_view kHttpCodeGrammar =
    "is not http_2xx, http_3xx, http_4xx, http_5xx, a code (200) or a range (200-299)";

// One entry of the grammar; nullopt when it is none of the three forms.
inline std::optional<HttpCodeRange> parseHttpCode(std::string_view t) {
  auto code = [](std::string_view d, int& v) {
    if (d.size() != 3) return false;
    for (char c : d)
      if (c < '0' || c > '9') return false;
    v = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
    return v >= 100 && v <= 599;
  };
  if (t.size() == 8 && t.substr(0, 5) == "http_" && t[5] >= '2' && t[5] <= '5' &&
      t.substr(6) == "xx") {
    int base = (t[5] - '0') * 100;
    return HttpCodeRange{base, base + 99};
  }
  int lo = 0, hi = 0;
  size_t dash = t.find('-');
  if (dash == std::string_view::npos) {
    if (!code(t, lo)) return std::nullopt;
    return HttpCodeRange{lo, lo};
  }
  if (!code(t.substr(0, dash), lo) || !code(t.substr(dash + 1), hi) || lo > hi) return std::nullopt;
  return HttpCodeRange{lo, hi};
}

}  // namespace gwlb
