#include "control/health/passive_detector.h"

#include <algorithm>
#include <cstdio>

namespace gwlb::ctl {

PassiveDetector::Window PassiveDetector::observe(uint32_t ip, const PassiveCheckConfig& p,
                                                 const Sample& now) {
  Watch& w = samples_[ip];
  // Counters never go back for one holder of an id; if they do (the id was
  // given to another appliance), the window starts again.
  if (!w.samples.empty() && (now.sent < w.samples.back().sent || now.returned < w.samples.back().returned))
    w.samples.clear();
  w.samples.push_back(now);
  // Keep the newest sample at least a window old (the window's start) and
  // every one after it.
  const uint64_t start = now.at_ms >= p.window_ms ? now.at_ms - p.window_ms : 0;
  while (w.samples.size() >= 2 && w.samples[1].at_ms <= start) w.samples.pop_front();
  const Sample& base = w.samples.front();
  Window out;
  out.sent = now.sent - base.sent;
  out.returned = now.returned - base.returned;
  out.span_ms = now.at_ms - base.at_ms;
  out.black_hole = out.span_ms >= p.window_ms && out.sent >= p.min_packets && out.returned == 0;
  w.last = out;
  return out;
}

std::optional<PassiveDetector::Window> PassiveDetector::window(uint32_t ip) const {
  auto it = samples_.find(ip);
  if (it == samples_.end()) return std::nullopt;
  return it->second.last;
}

uint64_t PassiveDetector::ejectionTimeMs(uint32_t ip, const PassiveCheckConfig& p, uint64_t now_ms) {
  Ejections& e = ejections_[ip];
  const uint64_t base = p.base_ejection_time_ms;
  if (base > 0 && e.in_a_row > 0 && now_ms > e.out_until_ms) {
    const uint64_t decay = (now_ms - e.out_until_ms) / base;
    e.in_a_row = decay >= e.in_a_row ? 0 : uint32_t(e.in_a_row - decay);
  }
  if (e.in_a_row < UINT32_MAX) ++e.in_a_row;
  const uint64_t cap = std::max<uint64_t>(p.max_ejection_time_ms, base);
  const uint64_t out = base == 0 ? 0 : std::min<uint64_t>(cap, base * e.in_a_row);
  e.out_until_ms = now_ms + out;
  return out;
}

uint32_t PassiveDetector::maxEjected(size_t n, uint32_t percent) {
  if (percent == 0 || n == 0) return 0;
  return std::max<uint32_t>(1, uint32_t(n * percent / 100));
}

std::string noReturnsReason(const PassiveDetector::Window& w) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "no returns: %llu packets sent, none returned in %.1f s",
                (unsigned long long)w.sent, double(w.span_ms) / 1000.0);
  return buf;
}

}  // namespace gwlb::ctl
