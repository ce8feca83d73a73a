#include "control/engine/flap_dampener.h"

#include <algorithm>
#include <cmath>

namespace gwlb::ctl {

namespace {
double decayed(double penalty, uint64_t since, uint64_t now, uint64_t half_life) {
  if (now <= since || half_life == 0) return half_life == 0 && now > since ? 0 : penalty;
  return penalty * std::exp2(-double(now - since) / double(half_life));
}
}  // namespace

double DampeningParams::ceiling() const {
  if (half_life_ns == 0) return reuse;
  return reuse * std::exp2(double(max_hold_ns) / double(half_life_ns));
}

bool FlapDampener::change(uint32_t ip, const DampeningParams& p, uint64_t now) {
  Record& r = records_[ip];
  const bool was_held = now < r.held_until;
  r.penalty = std::min(decayed(r.penalty, r.at, now, p.half_life_ns) + p.penalty, p.ceiling());
  r.at = now;
  ++r.changes;
  if (!was_held && r.penalty <= p.suppress) return false;
  // Held until the penalty decays to `reuse`: half_life x log2(penalty / reuse),
  // rounded up so that the penalty is below reuse when the hold ends.
  double hold = r.penalty > p.reuse ? double(p.half_life_ns) * std::log2(r.penalty / p.reuse) : 0;
  uint64_t hold_ns = std::min<uint64_t>(uint64_t(std::ceil(hold)), p.max_hold_ns);
  r.held_until = std::max(r.held_until, now + hold_ns);
  if (was_held || now >= r.held_until) return false;
  ++r.holds;
  ++holds_total_;
  return true;
}

bool FlapDampener::held(uint32_t ip, uint64_t now) const {
  auto it = records_.find(ip);
  return it != records_.end() && now < it->second.held_until;
}

double FlapDampener::penalty(uint32_t ip, const DampeningParams& p, uint64_t now) const {
  auto it = records_.find(ip);
  return it == records_.end() ? 0 : decayed(it->second.penalty, it->second.at, now, p.half_life_ns);
}

const FlapDampener::Record* FlapDampener::find(uint32_t ip) const {
  auto it = records_.find(ip);
  return it == records_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> FlapDampener::nextRelease(uint64_t now) const {
  std::optional<uint64_t> t;
  for (const auto& [ip, r] : records_)
    if (r.held_until > now && (!t || r.held_until < *t)) t = r.held_until;
  return t;
}

}  // namespace gwlb::ctl
