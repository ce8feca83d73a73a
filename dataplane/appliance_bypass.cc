// Appliance-requested bypass on the worker (docs/product-rules.md
// "Appliance-requested bypass"): the grant on a returned packet and the
// bypassed flow's packets on the forward path. Out of line: flows nobody
// bypassed pay one predicted branch for it.
#include <cstring>

#include "dataplane/pipeline_ctx.h"

namespace gwlb::dp::burst {

bool applianceBypass(Ctx& c, rte_mbuf* m, FlowEntry& e, uint64_t& route, int32_t pos) noexcept {
  const Snapshot& s = c.s;
  const uint16_t origin = e.origin.load(std::memory_order_relaxed);
  const uint8_t l = originListener(origin);
  const uint16_t appliance = routeAppliance(route);
  const bool allowed = l < s.listeners.size() && s.listeners[l].bypass_allow &&
                       appliance < c.n_appliances && s.appliances[appliance].routable;
  const bool ended = bypassEnded(route, c.now);
  if (!allowed || ended) [[unlikely]] {
    // Back to inspection: one CAS clears the bits; a loser reads the route in
    // force (a renewal or a move won) and sends this packet by it.
    uint64_t seen = route;
    const uint64_t want = routeBase(route);
    if (e.route.compare_exchange_strong(seen, want, std::memory_order_acq_rel)) {
      c.w.counters.inc(ended && allowed ? Counter::bypass_ended_expired : Counter::bypass_ended_disallowed);
      route = want;
      if (pos >= 0) c.noteSync(pos, SyncEvent::kBypass);
    } else {
      route = seen;
    }
    return false;
  }
  // As a bypass class: back out of its port to its sender (MACs swapped, VLAN
  // kept, L3 unchanged).
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  uint8_t peer[6];
  std::memcpy(peer, f + 6, 6);
  std::memcpy(f + 6, f, 6);
  std::memcpy(f, peer, 6);
  c.w.counters.inc(Counter::bypassed);
  c.w.counters.inc(Counter::appliance_bypassed);
  c.w.countBypassed(appliance, m->pkt_len);
  if (const uint16_t slot = originClass(origin); slot < kMaxClasses) c.w.countClassBypassed(slot, m->pkt_len);
  c.tx_bytes += m->pkt_len;
  c.out.to_router[c.out.n_router++] = m;
  return true;
}

void grantBypass(Ctx& c, FlowEntry& e, uint64_t route, uint8_t listener, uint32_t seconds,
                 bool malformed, int32_t pos) noexcept {
  const Snapshot& s = c.s;
  if (listener >= s.listeners.size() || !s.listeners[listener].bypass_allow)
    return c.w.counters.inc(Counter::bypass_refused_not_allowed);
  if (malformed) return c.w.counters.inc(Counter::bypass_refused_bad_option);
  const uint32_t max = s.listeners[listener].bypass_max_s;
  if (max && (seconds == 0 || seconds > max)) seconds = max;
  if (seconds > kMaxBypassSeconds) seconds = kMaxBypassSeconds;
  const uint64_t want = withBypass(route, seconds != 0, c.now + uint64_t(seconds) * 1'000'000'000);
  uint64_t seen = route;
  // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
  // one CAS from the route the return was checked against; a move in between wins.
  if (!e.route.compare_exchange_strong(seen, want, std::memory_order_acq_rel)) return;
  c.w.counters.inc(Counter::bypass_granted);
  if (routeBypassed(route)) c.w.counters.inc(Counter::bypass_renewed);
  c.noteSync(pos, SyncEvent::kBypass);
}

}  // namespace gwlb::dp::burst
