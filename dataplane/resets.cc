// TCP resets for flows that cannot continue (send_tcp_reset; docs/product-rules.md
// section 2): the decision for a packet of an existing flow, and the RST that
// replaces the packet. Worker-lcore code: never allocates, locks, throws or logs.
#include <rte_mbuf.h>

#include "common/tcp_reset.h"
#include "dataplane/move.h"
#include "dataplane/pipeline_ctx.h"

namespace gwlb::dp::burst {

void sendReset(Ctx& c, rte_mbuf* m, const ParsedPacket& p, ResetReason why) noexcept {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  if (tcpFlags(f, p) & kTcpRst) return drop(c, m, Counter::drop_tcp_reset_not_answered);
  if (!c.w.rst_bucket.take(c.now, c.s.tcp_reset_rate_per_s))
    return drop(c, m, Counter::drop_tcp_reset_rate_limited);
  // The RST is never longer than the segment it answers (20 bytes of IP and
  // of TCP at least): it is built in place and the frame trimmed to it.
  size_t len = buildTcpReset(f, m->data_len, p);
  if (len == 0 || len > m->data_len) [[unlikely]]
    return drop(c, m, Counter::drop_tcp_reset_not_answered);
  rte_pktmbuf_trim(m, uint16_t(m->data_len - len));
  c.w.counters.inc(Counter::tcp_resets_sent);
  c.w.counters.inc(why == ResetReason::kUnhealthy      ? Counter::tcp_resets_unhealthy
                   : why == ResetReason::kDeregistered ? Counter::tcp_resets_deregistered
                   : why == ResetReason::kFleetUnknown ? Counter::tcp_resets_fleet_view_incomplete
                                                       : Counter::tcp_resets_idle);
  c.tx_bytes += m->pkt_len;
  c.out.to_router[c.out.n_router++] = m;
}

bool resetOrGoOn(Ctx& c, rte_mbuf* m, const ParsedPacket& p, FlowEntry& e, uint8_t listener,
                 const GroupView* ng, int32_t pos, uint64_t& route) noexcept {
  // Only a whole TCP segment can be answered; the rest follows failover_mode.
  if (!tcpResettable(p)) return true;
  const uint16_t appliance = routeAppliance(route);
  const ResetReason r = c.s.appliances[appliance].reset;
  const bool syn = tcpFlags(rte_pktmbuf_mtod(m, const uint8_t*), p) & kTcpSynFlag;
  if (!syn) {
    if (r != ResetReason::kNone) return sendReset(c, m, p, r), false;
    // on_idle_timeout: an entry past its idle timeout that the control
    // thread's sweep has not removed yet is as good as gone.
    if (listener < c.s.listeners.size() && c.s.listeners[listener].reset_on_idle &&
        idleExpired(e.last_seen.tick(), e.idle_timeout.ticks(std::memory_order_acquire), c.now))
      return sendReset(c, m, p, ResetReason::kIdle), false;
    return true;
  }
  // A SYN starts a connection, which may go on: off an appliance whose flows
  // are reset it goes to the group's choice in service, as a new flow would.
  if (r == ResetReason::kNone || !ng) return true;
  bool moved = false;
  const MoveReason why = r == ResetReason::kUnhealthy ? MoveReason::kUnhealthy : MoveReason::kDrainTimeout;
  // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
  // the same CAS as any move; movers on one snapshot reach one route.
  route = tryMove(e, c.s, *ng, route, why, c.now, moved);
  if (moved && pos >= 0) {
    countMove(c, why);
    c.noteSync(pos, SyncEvent::kMoved);
  }
  return true;
}

}  // namespace gwlb::dp::burst
