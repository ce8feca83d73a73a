// The burst's cold paths (dataplane/pipeline.cc is the hot one): packets for
// the control thread or the kernel, a returned packet without a flow, an
// opening SYN on a stale entry, the ICMP error for an inner packet too big
// for the underlay. Out of line: packets that take them are rare, and the
// ordinary forward and return paths pay nothing for them.
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "common/icmp_error.h"
#include "common/packet_parser.h"
#include "dataplane/pipeline_ctx.h"

namespace gwlb::dp {
using namespace burst;

// A returned packet without a flow: a forwarding-check probe coming back
// (health_check.forwarding: the inner addresses its group reserves) goes to
// the control thread, which matches it to its probe; anything else is
// drop_return_no_flow. Reached only on a miss, so the ordinary return path
// pays nothing for it.
[[gnu::noinline]] void burst::returnWithoutFlow(Ctx& c, rte_mbuf* m, const ParsedPacket& in,
                                         const GroupView& g) noexcept {
  const bool probe =
      g.probe_v6 ? in.ip_version == 6 && in.tuple.proto == kProtoIcmpv6 && in.tuple.src.b == g.probe_src6 &&
                       in.tuple.dst.b == g.probe_dst6
                 : g.probe_dst != 0 && in.ip_version == 4 && in.tuple.proto == kProtoIcmp &&
                       in.tuple.src.v4HostOrder() == g.probe_src && in.tuple.dst.v4HostOrder() == g.probe_dst;
  if (probe) {
    if (!c.dp.punt || rte_ring_enqueue(c.dp.punt, m) != 0) return drop(c, m, Counter::drop_punt_queue_full);
    c.w.counters.inc(Counter::punted);
    c.w.counters.inc(Counter::punted_probe);
    return;
  }
  drop(c, m, Counter::drop_return_no_flow);
}


// To the control thread (ARP, neighbor solicitations for us).
[[gnu::noinline]] void burst::punt(Ctx& c, rte_mbuf* m) noexcept {
  if (c.dp.punt && rte_ring_enqueue(c.dp.punt, m) == 0) c.w.counters.inc(Counter::punted);
  else drop(c, m, Counter::drop_punt_queue_full);
}

// To the kernel through the control thread and the port's tap, when the
// exception path is on; else the dataplane has nothing listening there.
[[gnu::noinline]] void burst::forUs(Ctx& c, rte_mbuf* m) noexcept {
  if (!c.dp.exception) return drop(c, m, Counter::drop_not_for_us);
  if (rte_ring_enqueue(c.dp.exception, m) != 0) return drop(c, m, Counter::drop_exception_queue_full);
  c.w.counters.inc(Counter::punted);
  c.w.counters.inc(Counter::punted_exception);
}


// An opening SYN for an entry idle past half its timeout is a new connection
// on a reused 5-tuple (a client's port comes round again). The entry keeps
// its appliance, which sees this SYN, and becomes the new connection's:
// created now and marked opened, and sent to the fleet as new, so a peer that
// expired the old entry and made its own copy from the SYN-ACK takes this
// one (docs/fleet.md "Flow state sync"). A SYN retransmitted within half the
// timeout changes nothing.
// Concurrency rule R3 (docs/architecture.md "Flow entries: concurrency rules"):
// the idle timeout keeps its value (never 0 again); only its opened bit is added.
void burst::reopenIfStale(Ctx& c, FlowEntry& e, int32_t pos) noexcept {
  uint32_t idle = e.idle_timeout.ticks(std::memory_order_acquire);
  if (!idleExpired(e.last_seen.tick(), idle / 2, c.now)) return;
  e.created.store(c.now);
  e.idle_timeout.store(e.idle_timeout.ns(), std::memory_order_release, true);
  c.noteSync(pos, SyncEvent::kNew);
}

// An inner packet too big for the underlay MTU: the ICMP error back to its
// sender (rate-limited), or a drop.
void burst::tooBig(Ctx& c, rte_mbuf* m, const ParsedPacket& p, uint32_t inner_mtu) noexcept {
  // Token bucket: icmp_rate_per_s errors per second, at most one second's worth banked.
  double rate = c.s.icmp_rate_per_s;
  if (c.w.icmp_last_ns) {
    c.w.icmp_tokens += double(c.now - c.w.icmp_last_ns) * rate / 1e9;
    if (c.w.icmp_tokens > rate) c.w.icmp_tokens = rate;
  } else {
    c.w.icmp_tokens = rate;
  }
  c.w.icmp_last_ns = c.now;
  if (c.w.icmp_tokens < 1.0) return drop(c, m, Counter::drop_too_big);
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  // The error can be longer than a short packet (header + full quote): let it
  // use the tailroom, then set the frame length to what was built.
  size_t room = size_t(m->data_len) + rte_pktmbuf_tailroom(m);
  size_t len = buildTooBig(f, room, p, inner_mtu, c.s.underlay_ip);
  if (len == 0) return drop(c, m, Counter::drop_too_big);
  c.w.icmp_tokens -= 1.0;
  if (len > m->data_len) rte_pktmbuf_append(m, uint16_t(len - m->data_len));
  else rte_pktmbuf_trim(m, uint16_t(m->data_len - len));
  c.w.counters.inc(Counter::icmp_sent);
  c.tx_bytes += m->pkt_len;
  c.out.to_router[c.out.n_router++] = m;
}

}  // namespace gwlb::dp
