// The shared flow table: rte_hash in lock-free-reader mode plus a parallel
// array of FlowEntry indexed by the key's position.
//
// Threads: workers call lookup/insert/entry at packet rate (lookups never lock;
// inserting a new key takes rte_hash's writer lock for the insert only).
// One control thread calls expire()/reclaim()/forEach(). Nothing locks an
// entry: who may write which field, and in which order, is set by the rules
// R1-R9 of docs/architecture.md "Flow entries: concurrency rules".
// Concurrency rule R7 (docs/architecture.md "Flow entries: concurrency rules"):
// deleted positions are freed only after every worker has passed a quiescent
// point of `qsbr`.
#pragma once

#include <atomic>
#include <cstring>
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

namespace gwlb {
struct Snapshot;  // common/snapshot.h
}  // namespace gwlb

namespace gwlb::dp {

// Where a direction's packets last came from, decoded (DirInfo::read).
struct DirL2 {
  uint16_t port = 0;
  bool has_vlan = false;
  uint16_t vlan_tci = 0;
  uint16_t vlan_tpid = 0;
  MacAddr peer_mac;   // source MAC of the frame as it arrived
  MacAddr our_mac;    // destination MAC of the frame as it arrived
};

// How to send a returning packet back to the neighbour that sent its
// direction: the L2 of that direction's latest packet (a router failover or a
// neighbour's new MAC is followed on the next forwarded packet). 16 bytes in
// two words, written by workers under a sequence lock so the return path never
// reads half of an update.
// Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
// `self` holds the state (empty, busy, ready) and a generation.
//   peer = peer MAC (bits 0..47) | VLAN TCI (48..63)
//   self = our MAC (0..47) | ingress port (48..55) | kReady | kBusy |
//          VLAN kind (2 bits: none, 802.1Q, 802.1ad) | generation (4 bits)
struct DirInfo {
  static constexpr uint64_t kReady = 1ULL << 56;
  static constexpr uint64_t kBusy = 1ULL << 57;
  static constexpr int kVlanShift = 58;
  static constexpr int kGenShift = 60;
  static constexpr uint64_t kData = ((1ULL << 56) - 1) | (3ULL << kVlanShift);  // MAC, port, VLAN kind
  std::atomic<uint64_t> peer{0};
  std::atomic<uint64_t> self{0};

  // Packs a frame's L2 (data: the frame's first 14 bytes, or 18 with a tag).
  // vlan_tpid: 0 when untagged. False when the port or TPID does not fit.
  // The frame has at least 14 bytes (a parsed Ethernet header), so two
  // 8-byte loads cover both MACs.
  static bool pack(const uint8_t* frame, uint16_t port, uint16_t vlan_tpid, uint16_t vlan_tci,
                   uint64_t& peer_word, uint64_t& self_word) noexcept {
    constexpr uint64_t kMac = (1ULL << 48) - 1;
    uint64_t dst, src;
    std::memcpy(&dst, frame, 8);
    std::memcpy(&src, frame + 6, 8);
    uint64_t kind = vlan_tpid == 0 ? 0 : vlan_tpid == 0x8100 ? 1 : vlan_tpid == 0x88A8 ? 2 : 3;
    if (kind == 3 || port > 0xFF) [[unlikely]]
      return false;
    peer_word = (src & kMac) | uint64_t(vlan_tci) << 48;
    self_word = (dst & kMac) | uint64_t(port) << 48 | kind << kVlanShift;
    return true;
  }

  // Worker: records a packet's L2 when it differs from what is stored.
  // Returns true when it wrote a change to an entry that had L2 already.
  // Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
  // busy, or a lost CAS: the next packet of the direction tries again.
  bool follow(uint64_t peer_word, uint64_t self_word) noexcept {
    uint64_t cur = self.load(std::memory_order_acquire);
    if ((cur & (kReady | kBusy)) == kReady && (cur & kData) == self_word &&
        peer.load(std::memory_order_relaxed) == peer_word)
      return false;
    if (cur & kBusy) return false;
    if (!self.compare_exchange_strong(cur, cur | kBusy, std::memory_order_acq_rel)) return false;
    // Busy before peer changes, a new generation once both are written.
    peer.store(peer_word, std::memory_order_release);
    uint64_t gen = ((cur >> kGenShift) + 1) & 0xF;
    self.store(self_word | kReady | gen << kGenShift, std::memory_order_release);
    return (cur & kReady) != 0;
  }

  // Any thread: the latest complete L2, or false when none was recorded yet
  // (or an update kept it busy for a few retries).
  // Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
  // self, peer, self again; equal and ready, or retry.
  bool read(DirL2& out) const noexcept {
    for (int tries = 0; tries < 8; ++tries) {
      uint64_t s1 = self.load(std::memory_order_acquire);
      if (!(s1 & kReady) && !(s1 & kBusy)) return false;
      if (s1 & kBusy) continue;
      uint64_t p = peer.load(std::memory_order_acquire);
      if (self.load(std::memory_order_relaxed) != s1) continue;
      std::memcpy(out.peer_mac.b.data(), &p, 6);
      std::memcpy(out.our_mac.b.data(), &s1, 6);
      out.vlan_tci = uint16_t(p >> 48);
      out.port = uint16_t((s1 >> 48) & 0xFF);
      uint64_t kind = (s1 >> kVlanShift) & 3;
      out.has_vlan = kind != 0;
      out.vlan_tpid = kind == 1 ? 0x8100 : kind == 2 ? 0x88A8 : 0;
      return true;
    }
    return false;
  }
  bool ready() const noexcept { return self.load(std::memory_order_acquire) & kReady; }
  void clear() noexcept {
    peer.store(0, std::memory_order_relaxed);
    self.store(0, std::memory_order_relaxed);
  }
};
static_assert(sizeof(DirInfo) == 16);
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "DirInfo packs MACs little-endian");

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
  // Concurrency rules R1, R4 and R5 (docs/architecture.md "Flow entries: concurrency rules"):
  // set by a CAS from 0, then changed only by CAS (a move, a fragment entry's takeover).
  std::atomic<uint64_t> route{0};
  std::atomic<uint64_t> last_seen_ns{0};
  // Approximate under concurrent writers of one direction (relaxed load+store).
  std::atomic<uint64_t> packets[2]{};
  std::atomic<uint64_t> bytes[2]{};
  // Hash of the flow's key; a fragment entry's is its flow's, not its key's.
  // Concurrency rule R5 (docs/architecture.md "Flow entries: concurrency rules").
  std::atomic<uint32_t> flow_hash{0};
  std::atomic<uint16_t> moves{0};      // how many times the flow moved (wraps at 65536)
  // Concurrency rules R1 and R3 (docs/architecture.md "Flow entries: concurrency rules"):
  // written by the winner of the route CAS, after it: briefly 0 for a flow
  // being created (expire() skips an idle timeout of 0).
  std::atomic<uint8_t> first_dir{0};   // direction of the packet that created the flow
  std::atomic<uint64_t> idle_timeout_ns{0};
  // -- second cache line --
  std::atomic<uint64_t> created_ns{0};
  // The last move off an appliance (packMove); moved_ns is when (dataplane clock).
  // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
  // written by the winner of the move's route CAS, after it.
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

  // Control thread: the key now stored at `pos` (false when none is).
  bool keyAt(int32_t pos, FlowKey& out) const noexcept;

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
