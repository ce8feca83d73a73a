#include "tools/replay_series.h"

#include <algorithm>

#include "common/net_types.h"
#include "common/packet_parser.h"
#include "tools/replay_io.h"

namespace gwlb::replay {

uint64_t autoInterval(uint64_t span_ns) {
  if (span_ns == 0) return 1'000'000'000ULL;
  for (uint64_t p = 1'000'000;; p *= 10)
    for (uint64_t m : {1, 2, 5})
      if (span_ns / (m * p) < 100) return m * p;
}

Timeline::Timeline(uint64_t start_ns, uint64_t end_ns, uint64_t interval_ns)
    : start_(start_ns),
      interval_(interval_ns ? interval_ns : 1),
      n_(size_t((std::max(end_ns, start_ns) - start_ns) / interval_) + 1),
      in_(fresh()),
      ret_(fresh()) {}

size_t Timeline::bucket(uint64_t ts_ns) const {
  if (ts_ns <= start_) return 0;
  return std::min<size_t>(n_ - 1, size_t((ts_ns - start_) / interval_));
}

Timeline::Series& Timeline::series(const std::string& address) {
  auto it = apps_.find(address);
  if (it == apps_.end()) it = apps_.emplace(address, fresh()).first;
  return it->second;
}

void Timeline::toAppliance(const uint8_t* f, uint32_t len, uint64_t ts_ns) {
  IpAddr to;
  if (outerDestination(f, len, to)) series(to.str()).add(bucket(ts_ns), len);
}

nlohmann::json Timeline::toJson(nlohmann::json marks) const {
  nlohmann::json t = nlohmann::json::array();
  for (size_t i = 0; i < n_; ++i) t.push_back(double(i * interval_) / 1e9);
  nlohmann::json apps = nlohmann::json::object();
  for (const auto& [address, s] : apps_) apps[address] = s.toJson();
  return {{"interval_s", double(interval_) / 1e9},
          {"points", n_},
          {"t_s", t},
          {"input", in_.toJson()},
          {"returned", ret_.toJson()},
          {"appliances", apps},
          {"marks", std::move(marks)}};
}

}  // namespace gwlb::replay
