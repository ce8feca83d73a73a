// The shared flow table (our own rather than rte_hash, whose bookkeeping cost
// two to four cache misses per flow): buckets of 16 slots with a line of
// 32-bit tags each, a slot of one cache line per IPv4 key (key 16 B +
// FlowEntry 48 B) and of two lines for any other key.
// docs/architecture.md "The flow table" describes the layout.
//
// Threads: workers call lookup/insert/entry at packet rate (lookups never lock;
// inserts claim a slot with one CAS on its tag, R10).
// One control thread calls expire()/reclaim()/scan(). Nothing locks an
// entry: who may write which field, and in which order, is set by the rules
// R1-R9 of docs/architecture.md "Flow entries: concurrency rules"; the
// overflow marker, R13.
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
#include "common/idle_timeout.h"
#include "common/traffic_class.h"
#include "common/net_types.h"
#include "dataplane/neighbour_table.h"

struct rte_rcu_qsbr;

// FlowTable::lookupBulk has a second copy compiled for AVX2, chosen at
// construction when the CPU has AVX2 (x86-64; not under ThreadSanitizer,
// whose build compares tags with atomic loads, dataplane/flow_table_layout.h).
#if defined(__x86_64__) && defined(__SSE2__) && !defined(__SANITIZE_THREAD__)
#define GWLB_FT_AVX2 1
#endif

namespace gwlb::dp {

// route: bit 63 = set, bits 32..47 = server id, bits 0..31 = flow cookie.
inline constexpr uint64_t kRouteSet = 1ULL << 63;
inline uint64_t packRoute(uint16_t appliance, uint32_t cookie) {
  return kRouteSet | (uint64_t(appliance) << 32) | cookie;
}
inline uint16_t routeAppliance(uint64_t r) { return uint16_t(r >> 32); }
inline uint32_t routeCookie(uint64_t r) { return uint32_t(r); }

// An appliance's bypass of its flow (docs/product-rules.md "Appliance-requested
// bypass") lives in the route's spare bits 48..62, so the entry keeps its
// size and every new route (a move, a peer's move) ends it by construction:
//   bit 62      bypassed: the flow's packets go straight back, uninspected
//   bit 61      timed: it ends at `until`; clear: for the flow's life
//   bits 48..60 until: the dataplane clock in units of 2^30 ns (1.07 s),
//               rounded up and truncated to 13 bits; read by the signed
//               13-bit difference to now, so right while within 4,398 s of
//               it (a grant is at most kMaxBypassSeconds).
// Compare routes by routeBase() where the appliance and cookie are meant.
inline constexpr uint64_t kRouteBypass = 1ULL << 62;
inline constexpr uint64_t kRouteBypassTimed = 1ULL << 61;
inline constexpr uint64_t kRouteBypassMask = 0x7FFFULL << 48;
inline constexpr int kBypassUnitShift = 30;
inline constexpr uint32_t kMaxBypassSeconds = 3600;
inline constexpr uint64_t routeBase(uint64_t r) noexcept { return r & ~kRouteBypassMask; }
inline constexpr bool routeBypassed(uint64_t r) noexcept { return r & kRouteBypass; }
inline constexpr bool routeBypassTimed(uint64_t r) noexcept { return r & kRouteBypassTimed; }
// r bypassed until until_ns (dataplane clock), or for the flow's life (timed false).
inline constexpr uint64_t withBypass(uint64_t r, bool timed, uint64_t until_ns) noexcept {
  uint64_t unit = (until_ns + (1ULL << kBypassUnitShift) - 1) >> kBypassUnitShift;
  return routeBase(r) | kRouteBypass |
         (timed ? kRouteBypassTimed | (unit & 0x1FFF) << 48 : 0);
}
// Signed units from now to a timed bypass's end (<= 0: it has ended).
inline constexpr int32_t bypassUnitsLeft(uint64_t r, uint64_t now_ns) noexcept {
  uint32_t d = uint32_t((r >> 48) - (now_ns >> kBypassUnitShift)) & 0x1FFF;
  return int32_t(d << 19) >> 19;
}
inline constexpr bool bypassEnded(uint64_t r, uint64_t now_ns) noexcept {
  return routeBypassTimed(r) && bypassUnitsLeft(r, now_ns) <= 0;
}
// When a timed bypass ends, in dataplane-clock ns (read against now).
inline constexpr uint64_t bypassUntilNs(uint64_t r, uint64_t now_ns) noexcept {
  int64_t u = int64_t(now_ns >> kBypassUnitShift) + bypassUnitsLeft(r, now_ns);
  return u > 0 ? uint64_t(u) << kBypassUnitShift : 0;
}

// moved: 0 = never moved; else bits 56..63 = reason (dp::MoveReason),
// 32..47 = the appliance it left, 0..31 = the cookie it had there.
inline uint64_t packMove(uint8_t reason, uint16_t from, uint32_t cookie) {
  return (uint64_t(reason) << 56) | (uint64_t(from) << 32) | cookie;
}
inline uint8_t moveReason(uint64_t m) { return uint8_t(m >> 56); }
inline uint16_t moveFrom(uint64_t m) { return uint16_t(m >> 32); }
inline uint32_t moveCookie(uint64_t m) { return uint32_t(m); }

// Times in an entry: 32-bit ticks of 2^20 ns (1.048576 ms) of the dataplane
// clock, truncated. They wrap every 2^32 ticks (52.1 days); every reader
// compares them with a `now` by the signed 32-bit difference, so a time is
// read right while it lies within 24.8 days of `now` (idle timeouts are at
// most 6000 s; an age or a move older than 24.8 days shows wrong).
inline constexpr int kTickShift = 20;
inline constexpr uint64_t kTickNs = 1ULL << kTickShift;
inline constexpr uint32_t toTick(uint64_t ns) noexcept { return uint32_t(ns >> kTickShift); }

struct TickTime {
  std::atomic<uint32_t> t{0};
  void store(uint64_t ns, std::memory_order o = std::memory_order_relaxed) noexcept {
    t.store(toTick(ns), o);
  }
  uint32_t tick(std::memory_order o = std::memory_order_relaxed) const noexcept { return t.load(o); }
  // The stored time rounded down to its tick, in dataplane-clock ns, read
  // against `now` (within +-24.8 days of it; 0 when before the clock's start).
  uint64_t ns(uint64_t now, std::memory_order o = std::memory_order_relaxed) const noexcept {
    int64_t at = int64_t(now >> kTickShift) + int32_t(t.load(o) - toTick(now));
    return at > 0 ? uint64_t(at) << kTickShift : 0;
  }
};

// An idle timeout in milliseconds (exact for every configured timeout, at
// most 6000 s: 23 bits) in bits 0..22; 0 while the entry is being created
// (R3). Bit 31, kOpenedBit: the flow's entry was created (or re-opened, a
// reused 5-tuple) by its connection's opening TCP SYN (SYN without ACK), so
// its appliance saw the connection start; the fleet's conflict rule prefers
// such a copy (docs/fleet.md "Flow state sync"). Kept here, in a word
// written with the creation fields, because the entry has no spare byte.
// Bits 23..30, the class marks (with traffic classes): bits 23..28 the
// class generation (Snapshot::class_gen) under which a packet of direction d
// (bit 29 + d) arriving with the L2 in l2[d] classified as the flow's origin
// class, so the next such packets take that class from the entry without
// classifying (docs/architecture.md "Flow entries: concurrency rules", R12).
// Every store() clears them; learning another L2 for a direction clears its bit.
struct IdleTimeout {
  static constexpr uint32_t kOpenedBit = 1u << 31;
  static constexpr uint32_t kMsMask = kIdleMsMax;  // common/idle_timeout.h
  static constexpr int kClassGenShift = 23;
  static constexpr uint32_t kClassGenMask = 0x3Fu << kClassGenShift;  // generations 1..63; 0: none
  static constexpr uint32_t kClassDirBit = 1u << 29;                  // << d: direction d
  static constexpr uint32_t kClassMarks = kClassGenMask | kClassDirBit | kClassDirBit << 1;
  std::atomic<uint32_t> ms{0};
  // The marks of class generation `gen` (1..63) for direction `dir`.
  static constexpr uint32_t classMark(uint8_t gen, uint8_t dir) noexcept {
    return uint32_t(gen & 0x3F) << kClassGenShift | kClassDirBit << (dir & 1);
  }
  // `opened` only with a nonzero timeout (R3: the word is 0 only while creating).
  void store(uint64_t ns, std::memory_order o = std::memory_order_relaxed, bool opened = false,
             uint32_t class_mark = 0) noexcept {
    storeMs(idleTimeoutMs(ns), o, opened, class_mark);
  }
  // The same from m = idleTimeoutMs(ns) (at most kMsMask), as a group keeps it
  // (GroupView::tcp_idle_ms).
  void storeMs(uint32_t m, std::memory_order o = std::memory_order_relaxed, bool opened = false,
               uint32_t class_mark = 0) noexcept {
    ms.store(m | uint32_t(opened) << 31 | (class_mark & kClassMarks), o);
  }
  uint64_t ns(std::memory_order o = std::memory_order_relaxed) const noexcept {
    return uint64_t(ms.load(o) & kMsMask) * 1'000'000;
  }
  bool opened(std::memory_order o = std::memory_order_relaxed) const noexcept {
    return (ms.load(o) & kOpenedBit) != 0;
  }
  // True when direction `dir`'s packets took the origin class under generation `gen` (R12).
  bool classMarked(uint8_t gen, uint8_t dir) const noexcept { return classMarked(classMark(gen, dir)); }
  // The same for `mark` = classMark(gen, dir), which a worker takes once per burst.
  bool classMarked(uint32_t mark) const noexcept {
    return (ms.load(std::memory_order_acquire) & (kClassGenMask | mark)) == mark;
  }
  // Worker (R12): marks direction `dir` under generation `gen` (a mark of
  // another generation is dropped); one CAS, not retried (a lost race
  // leaves the next packet to classify and mark again).
  void markClass(uint8_t gen, uint8_t dir) noexcept {
    uint32_t w = ms.load(std::memory_order_relaxed);
    if ((w & kMsMask) == 0) return;  // being created (R3)
    const uint32_t keep = (w & kClassGenMask) == (classMark(gen, dir) & kClassGenMask) ? w : w & ~kClassMarks;
    ms.compare_exchange_strong(w, keep | classMark(gen, dir), std::memory_order_seq_cst);
  }
  // Worker (R12): direction `dir` learned another L2: its mark no longer holds.
  void clearClassDir(uint8_t dir) noexcept {
    ms.fetch_and(~(kClassDirBit << (dir & 1)), std::memory_order_seq_cst);
  }
  // Ticks (rounded up) an entry must have been idle for, strictly more, to expire.
  uint32_t ticks(std::memory_order o = std::memory_order_relaxed) const noexcept {
    return uint32_t((ns(o) + kTickNs - 1) >> kTickShift);
  }
};

// True when an entry last seen at tick `seen`, with `idle` ticks
// (IdleTimeout::ticks), has expired at `now`: more than `idle` whole ticks
// passed, so never before its timeout and at most two ticks (2.1 ms) after.
inline bool idleExpired(uint32_t seen, uint32_t idle, uint64_t now) noexcept {
  int32_t d = int32_t(toTick(now) - seen);
  return d > 0 && uint32_t(d) > idle;
}

// The state of a flow (or fragment) entry: 48 bytes, beside its key in the
// table's slot (16 bytes for an IPv4 key: one 64-byte line per IPv4 flow).
// FlowEntry::origin, 16 bits: bit 0 the direction of the packet that created
// the flow, bits 1-4 its listener (the config allows 16), bits 5-15 its traffic class + 1 (0: none,
// kNoClass): the class's counter slot (Snapshot::class_slot), which belongs to
// its name across reloads, not its position in the rules, which a reload can change.
static_assert(kMaxClasses < 2047);
inline constexpr uint16_t packOrigin(uint8_t dir, uint8_t listener, uint16_t cls) noexcept {
  return uint16_t((dir & 1) | (listener & 15) << 1 | ((cls + 1) & 0x7FF) << 5);
}
inline constexpr uint8_t originDir(uint16_t o) noexcept { return o & 1; }
inline constexpr uint8_t originListener(uint16_t o) noexcept { return (o >> 1) & 15; }
inline constexpr uint16_t originClass(uint16_t o) noexcept {
  return o >> 5 ? uint16_t((o >> 5) - 1) : kNoClass;
}

struct FlowEntry {
  // Concurrency rules R1, R4 and R5 (docs/architecture.md "Flow entries: concurrency rules"):
  // set by a CAS from 0, then changed only by CAS (a move, a fragment entry's takeover).
  std::atomic<uint64_t> route{0};
  // The last move off an appliance (packMove); moved_at is when.
  // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
  // written by the winner of the move's route CAS, after it.
  std::atomic<uint64_t> moved{0};
  // Hash of the flow's key; a fragment entry's is its flow's, not its key's.
  // Concurrency rule R5 (docs/architecture.md "Flow entries: concurrency rules").
  std::atomic<uint32_t> flow_hash{0};
  TickTime last_seen;
  TickTime created;
  TickTime moved_at;
  IdleTimeout idle_timeout;
  std::atomic<uint16_t> moves{0};  // how many times the flow moved (wraps at 65536)
  // Per direction: where its packets last came from, an index into the
  // table's NeighbourTable (0: none learned yet). Stored with release, read
  // with acquire (the neighbour entry it names is then visible).
  std::atomic<uint16_t> l2[2]{};
  // Concurrency rules R1 and R3 (docs/architecture.md "Flow entries: concurrency rules"):
  // written by the winner of the route CAS, after it: briefly 0 for a flow
  // being created (expire() skips an idle timeout of 0).
  // Who created it (packOrigin): the direction of its first packet, the
  // listener it was created under and its traffic class. A fragment entry's
  // is its flow's (R5: the first fragment that takes the entry over rewrites it).
  std::atomic<uint16_t> origin{0};
  // Packets of both directions through the forward path (approximate under
  // concurrent writers: relaxed load + store; wraps at 2^32). Per-flow bytes
  // are not kept (they would not fit the one cache line of an IPv4 flow).
  std::atomic<uint32_t> packets{0};

  void reset() noexcept;
};
static_assert(sizeof(FlowEntry) == 48, "FlowEntry: 48 bytes, 16 left for an IPv4 key");

class FlowTable {
 public:
  // Throws std::runtime_error when the memory cannot be mapped (startup only).
  // With the EAL on hugepages the tags and IPv4 slots are hugepage memory
  // (rte_zmalloc_socket on `socket`, type `name`); else anonymous memory.
  FlowTable(const std::string& name, uint32_t capacity, rte_rcu_qsbr* qsbr, int socket);
  ~FlowTable();
  FlowTable(const FlowTable&) = delete;
  FlowTable& operator=(const FlowTable&) = delete;

  // Worker: position of the key, or -1.
  int32_t lookup(const FlowKey& k, uint32_t hash) const noexcept;
  // Worker: positions of n keys (-1 where absent): the tag lines of all keys
  // are prefetched, then their candidate slots, then keys are compared
  // (up to kLookupBulkMax keys per stage; larger n is split).
  static constexpr uint32_t kLookupBulkMax = 64;
  // With `hints`, each miss also gets the slot its insert would most likely
  // claim (kNoHint for a hit, or when there is none),
  // already fetched for writing: pass it to insert(). Returns the misses
  // (keys whose pos is negative): 0 spares the caller its miss-only work.
  static constexpr uint32_t kNoHint = UINT32_MAX;
  uint32_t lookupBulk(const FlowKey* const* keys, const uint32_t* hashes, uint32_t n, int32_t* pos,
                  uint32_t* hints = nullptr) const noexcept;
  // Worker (or the control thread): position of the key (existing or newly
  // added); kFull (-1) when the table holds capacity() keys or the key's
  // candidate buckets are full; kAbandoned (-2) when another inserter of a
  // key with the same tag stayed busy past a bound (R10; counted in
  // insertsAbandoned()): the table is not full, a later try may succeed.
  // `hint`: the slot lookupBulk() suggested for this key after it missed
  // it; the insert then claims that slot if it is still empty instead of
  // scanning for the key and for the least loaded bucket first (the twin
  // check of R10 still finds the key if another inserter added it since).
  static constexpr int32_t kFull = -1, kAbandoned = -2;
  int32_t insert(const FlowKey& k, uint32_t hash, uint32_t hint = kNoHint) noexcept;
  // Control thread (a peer's record, a warm start): insert() with a short
  // wait. A worker may be preempted between its claim and its key (R10);
  // insert() waits for it up to eight times 2^16 pauses (tenths of a second
  // with the yields), which on the control thread would hold up the
  // exception path, probes and the API. This one waits at most
  // kControlWaitPauses pauses in all (no yield: microseconds), then gives up
  // with kAbandoned (counted in insertsAbandoned()); the caller counts it, and
  // the flow comes again with the peer's next record of it.
  static constexpr uint32_t kControlWaitPauses = 512;
  int32_t insertFromControl(const FlowKey& k, uint32_t hash) noexcept;
  // Control thread (a warm start's records): pos[i] is what
  // insertFromControl(*keys[i], hashes[i]) would give (the key's position,
  // existing or added, kFull or kAbandoned), in stages of kLookupBulkMax keys:
  // one lookupBulk() per stage prefetches every key's tag lines and candidate
  // slots (the slot a missed key will most likely take, for writing), then
  // each missed key is inserted at its hint. A cold table's inserts then wait
  // for their lines together, not one after the other. Keys may repeat (the
  // later finds the earlier's position).
  void insertBulkFromControl(const FlowKey* const* keys, const uint32_t* hashes, uint32_t n,
                             int32_t* pos) noexcept;
  // Pauses insertFromControl() has spent waiting, in all (tests, diagnosis).
  uint64_t controlWaitPauses() const noexcept { return control_pauses_; }
  FlowEntry& entry(int32_t pos) noexcept { return *entryPtr(pos); }
  const FlowEntry& entry(int32_t pos) const noexcept {
    return *const_cast<FlowTable*>(this)->entryPtr(pos);
  }
  // The interned L2 neighbours that FlowEntry::l2 indexes.
  NeighbourTable& neighbours() noexcept { return neigh_; }
  const NeighbourTable& neighbours() const noexcept { return neigh_; }

  // Control thread: deletes up to `max` keys idle past their timeout at `now_ns`
  // (all when max == 0). Their positions are freed by a later reclaim().
  // When `expired_servers` is given, the server id of each expired flow
  // (fragment entries excluded) is appended to it. Walks the slots in
  // memory order.
  //
  // Exhaustion policy: when more than kEvictHighPercent of capacity() would
  // still be in use after that, the entries idle longest (oldest last
  // packet, whatever their timeout) are deleted too, down to
  // kEvictLowPercent, and counted in evicted(). Between such passes a full
  // table drops the first packet of a new flow (drop_flow_table_full);
  // established flows are never touched by the dataplane. Returns the
  // number deleted, evictions included.
  //
  // One call walks the whole table: tools and tests. gwlbd's control thread
  // runs the same pass in slices (ExpiryPass below).
  static constexpr size_t kEvictHighPercent = 90;
  static constexpr size_t kEvictLowPercent = 80;
  size_t expire(uint64_t now_ns, size_t max = 0, std::vector<uint16_t>* expired_appliances = nullptr);

  // expire()'s pass in slices (docs/architecture.md "Walks in slices"): a
  // whole-table walk of 2^27 slots takes seconds, so the control thread
  // runs it a slice per turn of its loop. expireBegin() starts a pass at
  // `now_ns` (every judgement of the pass is made at that time); each
  // expireStep() walks at most `max_slots` slots (at least one) and looks at
  // most `max_keys` live keys, deletes those idle past their timeout, and
  // returns true when the pass is over. `visit` sees each live key the
  // pass keeps, once per pass, when the walk passes it (the engine counts
  // flows per appliance and sweeps moves there). The exhaustion policy runs
  // as a second walk of the same pass, in slices too: the entries idle
  // longest go first, judged by a histogram of idle times taken by the
  // first walk (idle times within 1/256 of each other tie, and ties go in
  // memory order). Keys visited by the first walk and evicted by the second
  // were counted by `visit`. One pass at a time; the neighbour sweep runs
  // around it (its marks span the slices).
  struct ExpiryPass {
    static constexpr size_t kAgeBuckets = 6144;
    enum class Phase : uint8_t { kIdle, kExpire, kEvict };
    Phase phase = Phase::kIdle;
    uint64_t now_ns = 0;
    uint32_t cursor = 0;
    size_t max_victims = 0;  // expire(now, max): stop deleting after max (no eviction)
    size_t live = 0;         // ready keys the first walk saw (expired ones included)
    size_t expired = 0;      // deleted as idle
    size_t evicted = 0;      // deleted by the exhaustion policy
    size_t evict_want = 0;   // still to evict
    uint32_t cutoff = 0;     // age bucket: older ones go, and at_cutoff of this one
    size_t at_cutoff = 0;
    std::vector<uint32_t> ages;  // candidates by age bucket (first walk)
  };
  using Visit = std::function<void(const FlowKey&, int32_t pos, const FlowEntry&)>;
  void expireBegin(ExpiryPass& p, uint64_t now_ns);
  bool expireStep(ExpiryPass& p, size_t max_slots, size_t max_keys,
                  std::vector<uint16_t>* expired_appliances = nullptr, const Visit& visit = {});
  // The histogram bucket of an idle time in ticks (monotonic; exact below 256).
  static uint32_t ageBucket(uint32_t age) noexcept {
    if (age < 256) return age;
    uint32_t e = 31 - uint32_t(__builtin_clz(age));
    return 256 + (e - 8) * 256 + ((age >> (e - 8)) & 255);
  }
  // Entries deleted by the exhaustion policy since the table was made.
  uint64_t evicted() const noexcept { return evicted_; }
  // Control thread: frees positions whose grace period has ended, at most
  // `max` of them (the oldest first; the rest in a later call). `wait` blocks
  // until it has (only where no worker can be the caller).
  size_t reclaim(bool wait = false, size_t max = SIZE_MAX);

  // Visits every live key in one call (the walk changes nothing; a caller
  // may change an entry through entry(pos) as the rules R1-R9 allow). Tools
  // and tests: on gwlbd's control thread a big table's walk goes in slices
  // (scan(), expireStep()).
  void forEach(const std::function<void(const FlowKey&, int32_t pos, const FlowEntry&)>& fn) const;

  // Control thread: visits live keys from slot `cursor` on (0 = start) until
  // fn returns false, `max_visit` keys were seen, or `max_slots` slots (live
  // or not, at least 1) were walked; updates cursor to where the next call
  // continues, so a call walks at most max_slots slots (the cost of a call is
  // bounded however few keys the table holds: lines of 16 tags with no live
  // key are passed over with one compare). Returns false when the table's end
  // was reached. Slots in [0, slots() / 2): a full pass is that many slots.
  bool scan(uint32_t& cursor, size_t max_visit, size_t max_slots,
            const std::function<bool(const FlowKey&, int32_t pos, const FlowEntry&)>& fn) const;

  // Control thread: the key now stored at `pos` (false when none is).
  bool keyAt(int32_t pos, FlowKey& out) const noexcept;

  // Keys in the table, counting those being inserted and those deleted but
  // not yet reclaimed (exact: one counter every insert reserves from).
  uint32_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  uint32_t capacity() const noexcept { return capacity_; }
  // Positions lookup()/insert() return are in [0, slots()): [0, n) name
  // compact (IPv4) slots, [n, 2n) wide ones, n = slots() / 2.
  size_t slots() const noexcept { return 2 * size_t(nslots_); }
  size_t pendingReclaim() const noexcept { return retired_.size(); }
  // Inserts given up because a same-tag insert stayed busy (R10).
  uint64_t insertsAbandoned() const noexcept { return abandoned_.load(std::memory_order_relaxed); }
  // Bytes of slot, tag and neighbour memory reserved (virtual; pages become
  // resident as they are touched).
  size_t reservedBytes() const noexcept { return map_bytes_; }
  // The overflow marker's heap bytes (a count per bucket, a note per slot).
  size_t markerBytes() const noexcept { return size_t(nbuckets_) + nslots_; }
  // Of those, the bytes in the EAL's hugepage memory (tags and IPv4 slots when
  // the EAL has hugepages; 0 under --no-huge).
  size_t hugepageBytes() const noexcept { return huge_bytes_; }

  static constexpr uint32_t kBucketSlots = 16;  // one 64-byte line of 32-bit tags

 private:
  // Tests set up slot states by hand (tests/dp/dataplane/flow_table_test_access.h).
  friend struct FlowTableTestAccess;

  struct Retired {
    int32_t pos;  // a slot index
    uint64_t token;
    bool counted;  // a deleted key (in count()), not a lost insert's slot
  };
  struct Candidates {
    uint32_t bucket[4];
  };
  // Inline: every packet resolves its position. A compact slot is one line,
  // its entry after the 16-byte key; a wide slot two lines, its entry after
  // the 40-byte key (Slot4, Slot6 in flow_table_layout.h).
  static constexpr size_t kSlot4Bytes = 64, kSlot6Bytes = 128;
  static constexpr size_t kEntryOff4 = 16, kEntryOff6 = 40;
  FlowEntry* entryPtr(int32_t pos) noexcept {
    uint32_t p = uint32_t(pos);
    auto* at = p < nslots_ ? reinterpret_cast<unsigned char*>(narrow_) + size_t(p) * kSlot4Bytes + kEntryOff4
                           : reinterpret_cast<unsigned char*>(wide_) + size_t(p - nslots_) * kSlot6Bytes + kEntryOff6;
    return reinterpret_cast<FlowEntry*>(at);
  }
  // Two buckets by fastrange (multiply-shift: any bucket count) of the hash
  // and of an odd multiple of it, each with its neighbour: four candidates,
  // the first pair (bucket[0], bucket[1]) and the second.
  uint32_t nextBucket(uint32_t b) const noexcept { return b + 1 == nbuckets_ ? 0 : b + 1; }
  uint32_t firstBucket(uint32_t hash) const noexcept {
    return uint32_t((uint64_t(hash) * nbuckets_) >> 32);
  }
  uint32_t secondBucket(uint32_t hash) const noexcept {
    return uint32_t((uint64_t(hash * 0x9E3779B1u) * nbuckets_) >> 32);
  }
  void candidates(uint32_t hash, Candidates& c) const noexcept {
    uint32_t b1 = firstBucket(hash), b2 = secondBucket(hash);
    c.bucket[0] = b1;
    c.bucket[1] = nextBucket(b1);
    c.bucket[2] = b2;
    c.bucket[3] = nextBucket(b2);
  }
  // Which of a key's four candidate buckets (by their used slots) an insert
  // fills: the less loaded of the first pair while that one is at most half
  // full, so that lookups find most keys in the first two tag lines they
  // read (docs/architecture.md "The flow table"); else the least loaded of
  // the four, as always before, so the table still fills to capacity. 4:
  // all four are full.
  static uint32_t pickBucket(const uint32_t used[4]) noexcept {
    uint32_t best = used[1] < used[0] ? 1 : 0;
    if (used[best] <= kBucketSlots / 2) return best;
    for (uint32_t j = 2; j < 4; ++j)
      if (used[j] < used[best]) best = j;
    return used[best] < kBucketSlots ? best : 4;
  }
  // The position of a key in its second bucket pair, or -1 (lookupBulk()'s
  // keys not found in their first pair).
  int32_t lookupSecond(const FlowKey& k, uint32_t hash, uint32_t want) const noexcept;
  // lookupBulk()'s body; kAvx2: compiled into lookupBulkAvx2 (its tag
  // pairs compared 8 tags at a time).
  template <bool kAvx2>
  uint32_t lookupBulkIn(const FlowKey* const* keys, const uint32_t* hashes, uint32_t n, int32_t* pos,
                    uint32_t* hints) const noexcept;
#ifdef GWLB_FT_AVX2
  __attribute__((target("avx2"))) uint32_t lookupBulkAvx2(const FlowKey* const* keys, const uint32_t* hashes,
                                                      uint32_t n, int32_t* pos, uint32_t* hints) const noexcept;
#endif
  bool avx2_ = false;  // the CPU has AVX2: lookupBulk() runs lookupBulkAvx2()
  // The overflow marker (docs/architecture.md "The flow table"): spill_[b]
  // counts the keys whose first bucket is b that live outside their first
  // pair (saturating: at kSpillStuck it stays, a marker that never clears
  // but stays true); a bulk lookup reads a key's second pair only while its
  // first bucket's count is not 0. spill_hi_[slot]: 0, or kSpillBit | the top
  // four bits of the hash of the key that spilled there (the tag holds the
  // other 28), which reclaim() needs to find the count to lower.
  static constexpr uint8_t kSpillStuck = 255, kSpillBit = 0x10;
  std::unique_ptr<std::atomic<uint8_t>[]> spill_;
  std::unique_ptr<std::atomic<uint8_t>[]> spill_hi_;
  bool spilled(uint32_t first) const noexcept { return spill_[first].load(std::memory_order_acquire) != 0; }
  // Worker or control thread: an insert's slot `idx` outside its key's first pair, before it goes ready.
  void spillNote(uint32_t first, uint32_t idx, uint32_t hash) noexcept;
  // Its undo (the insert lost before going ready), and reclaim()'s (the slot is freed).
  void spillForget(uint32_t idx, uint32_t tag) noexcept;
  int32_t bulkMiss(const FlowKey& k, uint32_t hash, uint32_t b, uint32_t mask, uint32_t want,
                   uint32_t* hint) const noexcept;
  bool keyMatches(uint32_t idx, bool wide, const FlowKey& k) const noexcept;
  void writeKey(uint32_t idx, bool wide, const FlowKey& k) noexcept;
  bool readKey(uint32_t idx, FlowKey& out) const noexcept;
  // kControl: insertFromControl()'s wait, bounded by control_budget_ pauses.
  template <bool kControl>
  struct InsertTry;  // its steps (flow_table_insert.cc)
  template <bool kControl>
  int32_t insertOnce(const FlowKey& k, uint32_t hash, uint32_t hint, bool& retry) noexcept;
  // insertFromControl() with a hint for its first try.
  int32_t insertControlHinted(const FlowKey& k, uint32_t hash, uint32_t hint) noexcept;
  int32_t posOf(uint32_t idx, bool wide) const noexcept {
    return int32_t(wide ? idx + nslots_ : idx);
  }

  rte_rcu_qsbr* qsbr_;
  uint32_t capacity_;
  uint32_t nbuckets_ = 0;
  uint32_t nslots_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  void* huge_ = nullptr;  // tags + IPv4 slots in hugepage memory, or null
  size_t huge_bytes_ = 0;
  std::atomic<uint32_t>* tags_ = nullptr;
  struct Slot4;
  struct Slot6;
  Slot4* narrow_ = nullptr;
  Slot6* wide_ = nullptr;
  std::atomic<uint32_t> count_{0};
  std::atomic<uint64_t> abandoned_{0};
  // insertFromControl() only (the control thread): pauses left in this call, and spent in all.
  uint32_t control_budget_ = 0;
  uint64_t control_pauses_ = 0;
  NeighbourTable neigh_;
  std::deque<Retired> retired_;
  std::vector<uint32_t> victims_;  // expireStep()'s deletions, reused
  uint64_t evicted_ = 0;
  // Deletes victims_ (tags to deleted) under one grace period.
  void retireVictims(size_t dead);
  // A live key that may go (route set, idle timeout set: not being created,
  // R3); its idle time in ticks at `now_ns`.
  bool evictable(uint32_t idx, uint32_t tag, uint64_t now_ns, uint32_t& age, bool& idle) const noexcept;
};

}  // namespace gwlb::dp
