// The shared flow table: rte_hash in lock-free-reader mode plus a parallel
// array of FlowEntry indexed by the key's position.
//
// Threads: workers call lookup/insert/entry at packet rate (lookups never lock;
// inserting a new key takes rte_hash's writer lock for the insert only).
// One control thread calls expire()/reclaim()/forEach(). Deleted positions are
// freed only after every worker has passed a quiescent point of `qsbr`, so a
// worker holding a position from its current burst never sees it reused.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "common/net_types.h"

struct rte_hash;
struct rte_rcu_qsbr;

namespace gwlb::dp {

struct Snapshot;

// How to send a returning packet back to the neighbour that sent it.
struct DirInfo {
  std::atomic<uint8_t> state{0};  // 0 empty, 1 being written, 2 ready
  bool has_vlan = false;
  uint16_t port = 0;
  uint16_t vlan_tci = 0;
  uint16_t vlan_tpid = 0;
  MacAddr peer_mac;   // source MAC of the frame as it arrived
  MacAddr our_mac;    // destination MAC of the frame as it arrived
};

// route: bit 63 = set, bits 32..47 = server id, bits 0..31 = flow cookie.
inline constexpr uint64_t kRouteSet = 1ULL << 63;
inline uint64_t packRoute(uint16_t server, uint32_t cookie) {
  return kRouteSet | (uint64_t(server) << 32) | cookie;
}
inline uint16_t routeServer(uint64_t r) { return uint16_t(r >> 32); }
inline uint32_t routeCookie(uint64_t r) { return uint32_t(r); }

// moved: 0 = never moved; else bits 56..63 = reason (dp::MoveReason),
// 32..47 = the appliance it left, 0..31 = the cookie it had there.
inline uint64_t packMove(uint8_t reason, uint16_t from, uint32_t cookie) {
  return (uint64_t(reason) << 56) | (uint64_t(from) << 32) | cookie;
}
inline uint8_t moveReason(uint64_t m) { return uint8_t(m >> 56); }
inline uint16_t moveFrom(uint64_t m) { return uint16_t(m >> 32); }
inline uint32_t moveCookie(uint64_t m) { return uint32_t(m); }

// 128 bytes (two cache lines; 192 before issue 8). The first line holds what
// every packet of an established flow reads or writes (route, last packet
// time, per-direction counters, flow hash) and what the expiry scan reads;
// the second what is written once per flow or per move, plus the learned L2
// of each direction (read by every returned packet).
struct alignas(64) FlowEntry {
  std::atomic<uint64_t> route{0};
  std::atomic<uint64_t> last_seen_ns{0};
  // Approximate under concurrent writers of one direction (relaxed load+store).
  std::atomic<uint64_t> packets[2]{};
  std::atomic<uint64_t> bytes[2]{};
  std::atomic<uint32_t> flow_hash{0};  // hash of the flow's key (fragments: their flow's)
  std::atomic<uint16_t> moves{0};      // how many times the flow moved (wraps at 65536)
  // Written by the worker whose route CAS created the flow, just after it
  // (relaxed): a reader may briefly see 0 for a flow being created, and
  // expire() skips entries whose idle timeout is still 0.
  std::atomic<uint8_t> first_dir{0};   // direction of the packet that created the flow
  std::atomic<uint64_t> idle_timeout_ns{0};
  // -- second cache line --
  std::atomic<uint64_t> created_ns{0};
  // The last move off an appliance (packMove), written once by the worker
  // whose route CAS moved it; moved_ns is when (dataplane clock).
  std::atomic<uint64_t> moved{0};
  std::atomic<uint64_t> moved_ns{0};
  DirInfo dir[2];

  void reset() noexcept;
};
static_assert(sizeof(FlowEntry) == 128, "FlowEntry: two cache lines");
static_assert(offsetof(FlowEntry, created_ns) == 64, "FlowEntry: the hot fields fill the first line");

class FlowTable {
 public:
  // Throws std::runtime_error when rte_hash cannot be created (startup only).
  FlowTable(const std::string& name, uint32_t capacity, rte_rcu_qsbr* qsbr, int socket);
  ~FlowTable();
  FlowTable(const FlowTable&) = delete;
  FlowTable& operator=(const FlowTable&) = delete;

  // Worker: position of the key, or -1.
  int32_t lookup(const FlowKey& k, uint32_t hash) const noexcept;
  // Worker: positions of n keys (-1 where absent) in one pass that prefetches
  // the buckets of all of them first (rte_hash bulk lookup, up to
  // kLookupBulkMax keys per call; larger n is split).
  static constexpr uint32_t kLookupBulkMax = 64;
  void lookupBulk(const FlowKey* const* keys, const uint32_t* hashes, uint32_t n,
                  int32_t* pos) const noexcept;
  // Worker: position of the key (existing or newly added), or -1 when full.
  int32_t insert(const FlowKey& k, uint32_t hash) noexcept;
  FlowEntry& entry(int32_t pos) noexcept { return entries_[size_t(pos)]; }
  const FlowEntry& entry(int32_t pos) const noexcept { return entries_[size_t(pos)]; }

  // Control thread: deletes up to `max` keys idle past their timeout at `now_ns`
  // (all when max == 0). Their positions are freed by a later reclaim().
  // When `expired_servers` is given, the server id of each expired flow
  // (fragment entries excluded) is appended to it.
  //
  // Exhaustion policy: when more than kEvictHighPercent of capacity() would
  // still be in use after that, the entries idle longest (oldest last
  // packet, whatever their timeout) are deleted too, down to
  // kEvictLowPercent, and counted in evicted(). Between such passes a full
  // table drops the first packet of a new flow (drop_flow_table_full);
  // established flows are never touched by the dataplane. Returns the
  // number deleted, evictions included.
  static constexpr size_t kEvictHighPercent = 90;
  static constexpr size_t kEvictLowPercent = 80;
  size_t expire(uint64_t now_ns, size_t max = 0, std::vector<uint16_t>* expired_servers = nullptr);
  // Entries deleted by the exhaustion policy since the table was made.
  uint64_t evicted() const noexcept { return evicted_; }
  // Control thread: frees positions whose grace period has ended. `wait` blocks
  // until it has (only where no worker can be the caller).
  size_t reclaim(bool wait = false);
  // Control thread: how many flows (fragment entries excluded) route to each
  // server id; `out` is resized to cover every id seen.
  void countByServer(std::vector<uint32_t>& out) const;

  // Control thread: moves flows (not fragment entries) whose appliance has
  // left its group (phase draining/drained/gone) and sheds its flows
  // (ServerView::move) — flows that sent nothing since, which the workers
  // would move only on their next packet — so the appliance can be
  // forgotten. Returns how many this call moved.
  size_t sweepMoves(const Snapshot& s, uint64_t now_ns);

  // Control thread: visits every live key (read-only).
  void forEach(const std::function<void(const FlowKey&, int32_t pos, const FlowEntry&)>& fn) const;

  // Control thread: visits live keys from `cursor` on (0 = start) until fn
  // returns false or `max_visit` keys were seen; updates cursor to where the
  // next call continues. Returns false when the table's end was reached.
  bool scan(uint32_t& cursor, size_t max_visit,
            const std::function<bool(const FlowKey&, int32_t pos, const FlowEntry&)>& fn) const;

  uint32_t count() const noexcept;
  uint32_t capacity() const noexcept { return capacity_; }
  // Positions lookup()/insert() return are in [0, slots()).
  size_t slots() const noexcept { return slots_; }
  size_t pendingReclaim() const noexcept { return retired_.size(); }

 private:
  struct Retired {
    int32_t pos;
    uint64_t token;
  };
  rte_hash* hash_ = nullptr;
  rte_rcu_qsbr* qsbr_;
  uint32_t capacity_;
  size_t slots_ = 0;
  std::unique_ptr<FlowEntry[]> entries_;
  std::deque<Retired> retired_;
  uint64_t evicted_ = 0;
};

}  // namespace gwlb::dp
