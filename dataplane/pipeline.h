// The per-burst packet pipeline that every feeder (NIC queue, pcap replay,
// tests) calls. Worker-lcore code: never allocates, locks (beyond rte_hash's
// insert), throws, blocks or logs.
//
// For each received frame (dataplane/ingress.h decides the first three):
//   not to the port's own MAC             -> punt ring when the control thread needs it
//                                            (broadcast ARP, multicast IPv6 neighbor
//                                            solicitation for us), else a drop counter
//   ARP, IPv6 ND                          -> punt ring (control thread) when for us, else drop
//   IPv4 UDP to our underlay IP port 6081 -> return path (ports facing appliances only):
//                                            validate Geneve and key the inner packet
//                                            (stage 1), look it up with the forward
//                                            keys (stage 2), check the flow and cookie,
//                                            unwrap, send back to the neighbour the
//                                            original came from (stage 3)
//   other IP to one of our own addresses  -> exception ring (kernel tap, when
//                                            node.exception_path is on), else drop_not_for_us
//   anything else IP                      -> forward path (ports facing routers only):
//                                            key, flow lookup/insert, Maglev for new
//                                            flows, Geneve to the appliance
// Every frame ends in exactly one output list or one drop counter.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/counters.h"
#include "common/snapshot.h"
#include "common/tcp_reset.h"
#include "dataplane/flow_table.h"

struct rte_mbuf;
struct rte_ring;
struct rte_rcu_qsbr;

namespace gwlb::dp {

inline constexpr uint16_t kMaxBurst = 256;
inline constexpr uint64_t kFragmentTimeoutNs = 30'000'000'000ULL;

// State shared by all workers.
struct Dataplane {
  FlowTable* flows = nullptr;
  rte_ring* punt = nullptr;                       // ARP/ND to the control thread (may be null)
  // Frames for the node's own addresses that the dataplane does not handle, to
  // the control thread, which writes them to the port's kernel tap
  // (docs/exception-path.md). Null: the exception path is off, they are dropped.
  rte_ring* exception = nullptr;
  // Flows created or moved by the workers, for the fleet sync on the control
  // thread (control/fleet/fleet_sync.h): one packSyncEvent per flow, queued once
  // per burst. Null: fleet sync is off, nothing is queued (no cost).
  rte_ring* sync = nullptr;
  std::atomic<const Snapshot*> snapshot{nullptr};
  // The fleet sync's judgement that this node's flow records may be missing
  // (control/fleet/fleet_view.h): written by the control thread, read
  // (relaxed) only for a TCP segment without SYN that found no entry.
  std::atomic<bool> fleet_view_incomplete{false};
  // The underlay port finishes the outer IPv4 and UDP checksums of the Geneve
  // packets (TX checksum offload, enabled by gwlbd when the device offers both
  // and dataplane.checksum_offload is auto): the workers write the
  // pseudo-header sum and set the mbuf's offload flags instead of summing the
  // payload. Set before the workers start; false: software checksums.
  bool underlay_csum_offload = false;
};

// A flow sync event: the flow's table position and what happened to it.
// kBypass: an appliance's bypass began or was renewed (the route's bypass bits).
enum class SyncEvent : uint8_t { kNew = 1, kMoved = 2, kBypass = 3 };
inline void* packSyncEvent(int32_t pos, SyncEvent e) noexcept {
  return reinterpret_cast<void*>(uintptr_t(uint32_t(pos)) << 2 | uintptr_t(e));
}
inline int32_t syncEventPos(const void* p) noexcept {
  return int32_t(uint32_t(reinterpret_cast<uintptr_t>(p) >> 2));
}
inline SyncEvent syncEventKind(const void* p) noexcept {
  return SyncEvent(reinterpret_cast<uintptr_t>(p) & 3);
}

// State one worker owns (single writer).
struct alignas(64) WorkerState {
  uint16_t id = 0;
  WorkerCounters counters;
  double icmp_tokens = 0;
  uint64_t icmp_last_ns = 0;
  // RSTs for flows that cannot continue: node.tcp_reset_rate_per_s a second.
  TokenBucket rst_bucket;
  // What this worker sent to each appliance and what came back from it that
  // it returned toward the router, by server id (Geneve frames on the
  // underlay, outer headers included, both ways).
  // Written by this worker only, read by the control thread: relaxed atomic
  // load and store, never a read-modify-write shared between workers.
  uint64_t appliance_packets[kMaxApplianceIds] = {};
  uint64_t appliance_bytes[kMaxApplianceIds] = {};
  uint64_t appliance_ret_packets[kMaxApplianceIds] = {};
  uint64_t appliance_ret_bytes[kMaxApplianceIds] = {};
  // Packets and bytes (as received) per traffic class, by its counter slot
  // (Snapshot::class_slot: stable per class name across reloads); same rules
  // as the per-server counters.
  uint64_t class_packets[kMaxClasses] = {};
  uint64_t class_bytes[kMaxClasses] = {};
  // Of those, the packets sent on along an existing flow entry rather than
  // by the class's action: fragments and ICMP errors that follow their flow,
  // and packets of a flow whose class a reload made bypass or drop (the flow
  // keeps its listener and appliance). They went to an appliance.
  uint64_t class_kept_packets[kMaxClasses] = {};
  uint64_t class_kept_bytes[kMaxClasses] = {};
  // Packets of each mirrored class seen by this worker, by counter slot: the
  // 1-in-N sampling of traffic_classes[].mirror.sample counts here.
  uint32_t mirror_tick[kMaxClasses] = {};
  // Packets and bytes of flows each appliance handed back (appliance_bypass),
  // sent straight back instead of to it: what its bypass saved it.
  uint64_t appliance_bypassed_packets[kMaxApplianceIds] = {};
  uint64_t appliance_bypassed_bytes[kMaxApplianceIds] = {};
  // The same by the flow's traffic class (its counter slot, FlowEntry::origin):
  // what the appliances' bypasses took out of each class's inspection.
  uint64_t class_bypassed_packets[kMaxClasses] = {};
  uint64_t class_bypassed_bytes[kMaxClasses] = {};

  static void bump(uint64_t& slot, uint64_t by) noexcept {
    std::atomic_ref<uint64_t> r(slot);
    r.store(r.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
  }
  static uint64_t read(const uint64_t& slot) noexcept {
    return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(slot)).load(std::memory_order_relaxed);
  }
  void countSent(uint16_t appliance, uint64_t bytes) noexcept {
    bump(appliance_packets[appliance], 1);
    bump(appliance_bytes[appliance], bytes);
  }
  void countReturned(uint16_t appliance, uint64_t bytes) noexcept {
    bump(appliance_ret_packets[appliance], 1);
    bump(appliance_ret_bytes[appliance], bytes);
  }
  void countBypassed(uint16_t appliance, uint64_t bytes) noexcept {
    bump(appliance_bypassed_packets[appliance], 1);
    bump(appliance_bypassed_bytes[appliance], bytes);
  }
  void countClassBypassed(uint16_t cls, uint64_t bytes) noexcept {
    bump(class_bypassed_packets[cls], 1);
    bump(class_bypassed_bytes[cls], bytes);
  }
  uint64_t classBypassedPackets(uint16_t cls) const noexcept { return read(class_bypassed_packets[cls]); }
  uint64_t classBypassedBytes(uint16_t cls) const noexcept { return read(class_bypassed_bytes[cls]); }
  uint64_t bypassedPackets(uint16_t appliance) const noexcept { return read(appliance_bypassed_packets[appliance]); }
  uint64_t bypassedBytes(uint16_t appliance) const noexcept { return read(appliance_bypassed_bytes[appliance]); }
  void countClass(uint32_t cls, uint64_t bytes) noexcept {
    bump(class_packets[cls], 1);
    bump(class_bytes[cls], bytes);
  }
  void countClassKept(uint16_t cls, uint64_t bytes) noexcept {
    bump(class_kept_packets[cls], 1);
    bump(class_kept_bytes[cls], bytes);
  }
  uint64_t classKeptPackets(uint16_t cls) const noexcept { return read(class_kept_packets[cls]); }
  uint64_t classKeptBytes(uint16_t cls) const noexcept { return read(class_kept_bytes[cls]); }
  uint64_t classPackets(uint16_t cls) const noexcept { return read(class_packets[cls]); }
  uint64_t classBytes(uint16_t cls) const noexcept { return read(class_bytes[cls]); }
  uint64_t sentPackets(uint16_t appliance) const noexcept { return read(appliance_packets[appliance]); }
  uint64_t sentBytes(uint16_t appliance) const noexcept { return read(appliance_bytes[appliance]); }
  uint64_t returnedPackets(uint16_t appliance) const noexcept { return read(appliance_ret_packets[appliance]); }
  uint64_t returnedBytes(uint16_t appliance) const noexcept { return read(appliance_ret_bytes[appliance]); }
};

struct BurstOutput {
  rte_mbuf* to_appliance[kMaxBurst];  // Geneve, out of snapshot->underlay_port
  uint16_t n_appliance = 0;
  rte_mbuf* to_router[kMaxBurst];     // returned, ICMP and RST packets; mbuf->port = egress port
  uint16_t n_router = 0;
  // Copies for mirror groups (traffic_classes[].mirror), out of
  // snapshot->underlay_port: a header mbuf chained to an indirect mbuf that
  // shares the original's data. At most one per packet received.
  rte_mbuf* to_mirror[kMaxBurst];
  uint16_t n_mirror = 0;
};

// Processes n (<= kMaxBurst) frames received at now_ns (monotonic ns, or the
// capture's timestamp in replay). mbuf->port must hold the ingress port.
// Frames that are dropped are freed here; the caller transmits the outputs.
void processBurst(Dataplane& dp, WorkerState& w, rte_mbuf** pkts, uint16_t n, uint64_t now_ns,
                  BurstOutput& out) noexcept;

}  // namespace gwlb::dp
