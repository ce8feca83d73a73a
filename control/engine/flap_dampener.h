// Flap dampening of appliances (docs/product-rules.md "Flap dampening"), as
// BGP route-flap dampening (RFC 2439) and GLB Director's dampener do it: each
// state change adds a penalty that decays exponentially with a half-life; a
// penalty above `suppress` holds the appliance down (no new flows) until it
// has decayed below `reuse`. The penalty is capped so that no hold lasts
// longer than `max_hold` after the last change. Pure: time is passed in (ns),
// no clock is read. Control thread only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace gwlb::ctl {

struct DampeningParams {
  double penalty = 1000;          // added per state change
  double suppress = 3000;         // held down when the penalty goes above this
  double reuse = 750;             // released when it has decayed below this
  uint64_t half_life_ns = 60'000'000'000ULL;
  uint64_t max_hold_ns = 600'000'000'000ULL;
  // The highest penalty kept: reuse x 2^(max_hold / half_life), so that it
  // decays to `reuse` within max_hold.
  double ceiling() const;
};

class FlapDampener {
 public:
  struct Record {
    double penalty = 0;       // as of `at`
    uint64_t at = 0;          // ns of the last change
    uint64_t held_until = 0;  // ns; held while now < held_until
    uint64_t changes = 0;     // state changes counted since it was first seen
    uint64_t holds = 0;       // hold-downs started
  };

  // A state change of `ip` at `now`. Returns true when it starts a hold-down
  // (a change while held extends the hold instead).
  bool change(uint32_t ip, const DampeningParams& p, uint64_t now);
  bool held(uint32_t ip, uint64_t now) const;
  // The penalty of `ip` at `now` (decayed), 0 when unknown.
  double penalty(uint32_t ip, const DampeningParams& p, uint64_t now) const;
  const Record* find(uint32_t ip) const;
  // The earliest hold that ends after `now`, if any.
  std::optional<uint64_t> nextRelease(uint64_t now) const;
  void forget(uint32_t ip) { records_.erase(ip); }
  // Hold-downs started since start, over every appliance.
  uint64_t holdsTotal() const { return holds_total_; }

 private:
  std::map<uint32_t, Record> records_;
  uint64_t holds_total_ = 0;
};

}  // namespace gwlb::ctl
