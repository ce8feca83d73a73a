#include "dataplane/flow_table.h"

#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "dataplane/flow_table_layout.h"

namespace gwlb::dp {

// The tag and compact-key layout, and the tag-line compares (dataplane/flow_table_layout.h).
using namespace flow_slot;

static_assert(FlowTable::kBucketSlots == kLineTags);

// The insert (its steps, the overflow marker's raise and lowering, the
// control thread's variants) is in dataplane/flow_table_insert.cc.

// Concurrency rule R7 (docs/architecture.md "Flow entries: concurrency rules"):
// only from reclaim(), once no worker can hold the position.
void FlowEntry::reset() noexcept {
  route.store(0, std::memory_order_relaxed);
  moved.store(0, std::memory_order_relaxed);
  flow_hash.store(0, std::memory_order_relaxed);
  last_seen.t.store(0, std::memory_order_relaxed);
  created.t.store(0, std::memory_order_relaxed);
  moved_at.t.store(0, std::memory_order_relaxed);
  idle_timeout.ms.store(0, std::memory_order_relaxed);
  moves.store(0, std::memory_order_relaxed);
  l2[0].store(0, std::memory_order_relaxed);
  l2[1].store(0, std::memory_order_relaxed);
  origin.store(0, std::memory_order_relaxed);
  packets.store(0, std::memory_order_relaxed);
  // reclaim() then stores the slot's tag empty with release: an inserter's
  // CAS that claims it (acquire) sees this reset.
}

FlowTable::FlowTable(const std::string& name, uint32_t capacity, rte_rcu_qsbr* qsbr, int socket)
    : qsbr_(qsbr), capacity_(capacity) {
  static_assert(sizeof(Slot4) == 64, "an IPv4 flow: one cache line");
  static_assert(sizeof(Slot6) == 128, "any other key: two cache lines");
  static_assert(sizeof(Slot4) == kSlot4Bytes && offsetof(Slot4, e) == kEntryOff4 &&
                sizeof(Slot6) == kSlot6Bytes && offsetof(Slot6, e) == kEntryOff6,
                "entryPtr() (flow_table.h) knows the slot layout");
  // 10 % more slots than keys: a key may go to the least loaded of four
  // buckets, which fills the table to capacity without a refusal (measured:
  // 10 M keys; with 6 % the first refusal came at 97 %).
  uint64_t want = uint64_t(capacity) + capacity / 10 + 2 * kBucketSlots;
  nbuckets_ = uint32_t((want + kBucketSlots - 1) / kBucketSlots);
  nslots_ = nbuckets_ * kBucketSlots;
  if (uint64_t(nslots_) * 2 > uint64_t(INT32_MAX))
    throw std::runtime_error("flow table: capacity " + std::to_string(capacity) + " too large");
  // The overflow marker's counts and slot notes: 1 B per bucket and per slot, heap memory.
  spill_.reset(new std::atomic<uint8_t>[nbuckets_]());
  spill_hi_.reset(new std::atomic<uint8_t>[nslots_]());
  auto page = [](size_t b) { return (b + 4095) & ~size_t(4095); };
  size_t tag_bytes = page(size_t(nslots_) * 4);
  size_t narrow_bytes = page(size_t(nslots_) * sizeof(Slot4));
  size_t wide_bytes = page(size_t(nslots_) * sizeof(Slot6));
  map_bytes_ = tag_bytes + narrow_bytes + wide_bytes;
  const size_t hot = tag_bytes + narrow_bytes;  // what every lookup touches
  // When the EAL runs on hugepages (as gwlbd does in production), the tags and
  // the IPv4 slots come from its hugepage heap: a lookup then costs no 4 KiB
  // TLB miss. rte_lcore_count() is 0 until the EAL is up (tools and unit tests
  // build tables without one). Without hugepages (--no-huge), or when the heap
  // cannot hold them, anonymous memory as below (hugepageBytes() says which).
#ifdef GWLB_FT_AVX2
  // GWLB_FLOW_TABLE_SIMD=sse2 keeps the SSE2 copy on any CPU: the
  // instruction budget (bench/instruction_budget.py) counts that one, the
  // same on every x86-64 host.
  const char* simd = std::getenv("GWLB_FLOW_TABLE_SIMD");
  avx2_ = __builtin_cpu_supports("avx2") && !(simd && std::strcmp(simd, "sse2") == 0);
#endif
  if (rte_lcore_count() > 0 && rte_eal_has_hugepages())
    huge_ = rte_zmalloc_socket(name.c_str(), hot, 4096, socket);
  if (huge_) {
    huge_bytes_ = hot;
    // The wide array stays lazy anonymous memory: an IPv4-only gateway never
    // touches it.
    map_ = mmap(nullptr, wide_bytes, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map_ == MAP_FAILED) {
      rte_free(huge_);
      throw std::runtime_error("flow table: mmap(" + std::to_string(wide_bytes) +
                               ") failed: " + std::strerror(errno));
    }
    tags_ = reinterpret_cast<std::atomic<uint32_t>*>(huge_);
    narrow_ = reinterpret_cast<Slot4*>(static_cast<uint8_t*>(huge_) + tag_bytes);
    wide_ = reinterpret_cast<Slot6*>(map_);
    return;
  }
  // Anonymous zero pages: untouched slots (the wide array of an IPv4-only
  // table, most of an empty one) cost address space only.
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
              -1, 0);
  if (map_ == MAP_FAILED)
    throw std::runtime_error("flow table: mmap(" + std::to_string(map_bytes_) +
                             ") failed: " + std::strerror(errno));
  if (hot >= (size_t(4) << 20)) madvise(map_, hot, MADV_HUGEPAGE);  // fewer TLB misses; advisory
  // The tags and the IPv4 slots are faulted in now, at startup, not by the
  // first packet of each flow inside a worker's burst (a page fault there
  // costs thousands of cycles); the memory is resident from the start, as
  // hugepage memory would be. The wide array stays lazy: an IPv4-only
  // gateway never touches it. Kernels before 5.14 lack the advice: touch.
  if (madvise(map_, hot, MADV_POPULATE_WRITE) != 0) {
    auto* p = static_cast<volatile uint8_t*>(map_);
    for (size_t off = 0; off < hot; off += 4096) p[off] = 0;
  }
  auto* base = static_cast<uint8_t*>(map_);
  tags_ = reinterpret_cast<std::atomic<uint32_t>*>(base);
  narrow_ = reinterpret_cast<Slot4*>(base + tag_bytes);
  wide_ = reinterpret_cast<Slot6*>(base + tag_bytes + narrow_bytes);
}

FlowTable::~FlowTable() {
  size_t mapped = huge_ ? map_bytes_ - huge_bytes_ : map_bytes_;
  if (map_ && map_ != MAP_FAILED) munmap(map_, mapped);
  rte_free(huge_);
}

bool FlowTable::readKey(uint32_t idx, FlowKey& out) const noexcept {
  uint32_t tag = tags_[idx].load(std::memory_order_acquire);
  if (tagState(tag) != kReady) return false;
  if (tag & kWideBit) std::memcpy(&out, &wide_[idx].key, sizeof out);
  else out = fromKey4(narrow_[idx].key);
  return true;
}


size_t FlowTable::expire(uint64_t now_ns, size_t max, std::vector<uint16_t>* expired_appliances) {
  ExpiryPass p;
  expireBegin(p, now_ns);
  p.max_victims = max;
  while (!expireStep(p, nslots_, SIZE_MAX, expired_appliances)) {
  }
  return p.expired + p.evicted;
}

void FlowTable::expireBegin(ExpiryPass& p, uint64_t now_ns) {
  p.phase = ExpiryPass::Phase::kExpire;
  p.now_ns = now_ns;
  p.cursor = 0;
  p.max_victims = 0;
  p.live = p.expired = p.evicted = p.evict_want = p.at_cutoff = 0;
  p.cutoff = 0;
  p.ages.assign(ExpiryPass::kAgeBuckets, 0);
  // Every used slot's neighbours are marked by the first walk: those no
  // entry holds are freed when it ends (the marks span its slices).
  neigh_.sweepBegin(qsbr_);
}

// Concurrency rule R3 (docs/architecture.md "Flow entries: concurrency rules"):
// no route yet, or an idle timeout of 0: a worker is still creating it.
bool FlowTable::evictable(uint32_t idx, uint32_t tag, uint64_t now_ns, uint32_t& age,
                          bool& idle) const noexcept {
  if (tagState(tag) != kReady) return false;
  const FlowEntry& e = *const_cast<FlowTable*>(this)->entryPtr(posOf(idx, tag & kWideBit));
  if (!(e.route.load(std::memory_order_acquire) & kRouteSet)) return false;
  uint32_t ticks = e.idle_timeout.ticks(std::memory_order_acquire);
  if (e.idle_timeout.ms.load(std::memory_order_relaxed) == 0) return false;
  uint32_t seen = e.last_seen.tick();
  idle = idleExpired(seen, ticks, now_ns);
  int32_t d = int32_t(toTick(now_ns) - seen);
  age = d > 0 ? uint32_t(d) : 0;
  return true;
}

bool FlowTable::expireStep(ExpiryPass& p, size_t max_slots, size_t max_keys,
                           std::vector<uint16_t>* expired_appliances, const Visit& visit) {
  using Phase = ExpiryPass::Phase;
  if (p.phase == Phase::kIdle) return true;
  const uint32_t end =
      uint32_t(std::min<uint64_t>(nslots_, uint64_t(p.cursor) + std::max<size_t>(max_slots, 1)));
  max_keys = std::max<size_t>(max_keys, 1);
  victims_.clear();
  size_t dead = 0, keys = 0;
  auto take = [&](uint32_t idx, uint32_t tag) {
    victims_.push_back(idx);
    KeyKind kind = tag & kWideBit ? wide_[idx].key.kind : narrow_[idx].key.kind;
    if (expired_appliances && kind != KeyKind::kFragment)
      expired_appliances->push_back(
          routeAppliance(entryPtr(posOf(idx, tag & kWideBit))->route.load(std::memory_order_relaxed)));
  };
  // The next slot from the cursor on whose tag is in `want` (a mask of
  // lines' bits) below `end`, or `end`: lines of 16 tags with none are
  // passed over with one compare.
  auto next = [&](auto&& lineMask) {
    while (p.cursor < end) {
      uint32_t line = p.cursor / kBucketSlots;
      uint32_t line_end = std::min(end, (line + 1) * kBucketSlots);
      uint32_t m = lineMask(tags_ + size_t(line) * kBucketSlots) & (0xFFFFu << (p.cursor % kBucketSlots));
      uint32_t idx = m ? line * kBucketSlots + uint32_t(__builtin_ctz(m)) : line_end;
      if (idx < line_end) return idx;
      p.cursor = line_end;
    }
    return end;
  };
  if (p.phase == Phase::kExpire) {
    FlowKey k;
    while (keys < max_keys) {
      uint32_t idx = next([](const std::atomic<uint32_t>* l) { return ~matchLine(l, kEmpty) & 0xFFFFu; });
      if (idx >= end) break;
      p.cursor = idx + 1;
      uint32_t tag = tags_[idx].load(std::memory_order_acquire);
      if (tag == kEmpty) continue;  // reclaimed since the line was read
      const FlowEntry& ne = *entryPtr(posOf(idx, tag & kWideBit));
      neigh_.mark(ne.l2[0].load(std::memory_order_relaxed));
      neigh_.mark(ne.l2[1].load(std::memory_order_relaxed));
      uint32_t st = tagState(tag);
      if (st == kDead) {  // a lost insert's slot, retired on the way
        tags_[idx].store(tagKey(tag) | kDeleted, std::memory_order_relaxed);
        retired_.push_back({int32_t(idx), 0, false});
        ++dead;
        continue;
      }
      if (st != kReady) continue;
      ++keys;
      ++p.live;
      uint32_t age = 0;
      bool idle = false;
      bool judged = !(p.max_victims && p.expired + victims_.size() >= p.max_victims) &&
                    evictable(idx, tag, p.now_ns, age, idle);
      if (judged && idle) {
        take(idx, tag);
        continue;
      }
      if (judged) ++p.ages[ageBucket(age)];
      if (visit && readKey(idx, k)) {
        int32_t pos = posOf(idx, tag & kWideBit);
        visit(k, pos, entry(pos));
      }
    }
    p.expired += victims_.size();
    if (p.cursor >= nslots_) {
      neigh_.sweepEnd(qsbr_);
      p.phase = Phase::kIdle;
      // Exhaustion: evict the entries idle longest, down to the low-water
      // mark (with max_victims, the walk may have left expired keys: no eviction).
      size_t left = p.live > p.expired ? p.live - p.expired : 0;
      if (p.max_victims == 0 && left > size_t(capacity_) * kEvictHighPercent / 100) {
        size_t want = left - size_t(capacity_) * kEvictLowPercent / 100;
        size_t older = 0;
        for (uint32_t b = ExpiryPass::kAgeBuckets; b-- > 0;) {
          if (older + p.ages[b] >= want) {
            p.cutoff = b;
            p.at_cutoff = want - older;  // older ones all go, then these at the cutoff
            p.evict_want = want;
            p.phase = Phase::kEvict;
            p.cursor = 0;
            break;
          }
          older += p.ages[b];
        }
        if (p.phase == Phase::kIdle && older > 0) {  // fewer candidates than wanted: all go
          p.cutoff = 0;
          p.at_cutoff = p.ages[0];
          p.evict_want = older;
          p.phase = Phase::kEvict;
          p.cursor = 0;
        }
      }
    }
  } else {
    while (keys < max_keys && p.evict_want > 0) {
      uint32_t idx = next([](const std::atomic<uint32_t>* l) { return matchState(l, kReady); });
      if (idx >= end) break;
      p.cursor = idx + 1;
      ++keys;
      uint32_t tag = tags_[idx].load(std::memory_order_acquire);
      uint32_t age = 0;
      bool idle = false;
      // An expired one was taken by the first walk; one refreshed since is younger.
      if (!evictable(idx, tag, p.now_ns, age, idle) || idle) continue;
      uint32_t b = ageBucket(age);
      if (b < p.cutoff) continue;
      if (b == p.cutoff) {
        if (p.at_cutoff == 0) continue;
        --p.at_cutoff;
      }
      take(idx, tag);
      --p.evict_want;
    }
    p.evicted += victims_.size();
    evicted_ += victims_.size();
    if (p.cursor >= nslots_ || p.evict_want == 0) p.phase = Phase::kIdle;
  }
  retireVictims(dead);
  return p.phase == Phase::kIdle;
}

void FlowTable::retireVictims(size_t dead) {
  if (victims_.empty() && dead == 0) return;
  for (uint32_t idx : victims_) {
    // Only the control thread changes a ready tag.
    uint32_t t = tags_[idx].load(std::memory_order_relaxed);
    tags_[idx].store(tagKey(t) | kDeleted, std::memory_order_release);
    retired_.push_back({int32_t(idx), 0, true});
  }
  // One grace period covers every key deleted above.
  // Concurrency rule R7 (docs/architecture.md "Flow entries: concurrency rules"):
  // their positions are freed (and their entries reset) by reclaim() after it.
  uint64_t token = rte_rcu_qsbr_start(qsbr_);
  for (auto it = retired_.rbegin(); it != retired_.rend() && it->token == 0; ++it) it->token = token;
}

// Concurrency rule R7 (docs/architecture.md "Flow entries: concurrency rules"):
// a position is reset and given back only once its grace period has ended.
size_t FlowTable::reclaim(bool wait, size_t max) {
  size_t n = 0;
  for (size_t done = 0; !retired_.empty() && done < max; ++done) {
    Retired r = retired_.front();
    if (rte_rcu_qsbr_check(qsbr_, r.token, wait) != 1) break;
    uint32_t idx = uint32_t(r.pos);
    uint32_t tag = tags_[idx].load(std::memory_order_relaxed);
    entryPtr(posOf(idx, tag & kWideBit))->reset();
    spillForget(idx, tag);
    tags_[idx].store(kEmpty, std::memory_order_release);
    if (r.counted) count_.fetch_sub(1, std::memory_order_relaxed);
    retired_.pop_front();
    n += r.counted;
  }
  return n;
}

void FlowTable::forEach(
    const std::function<void(const FlowKey&, int32_t, const FlowEntry&)>& fn) const {
  FlowKey k;
  for (uint32_t idx = 0; idx < nslots_; ++idx) {
    if (!readKey(idx, k)) continue;
    bool wide = tags_[idx].load(std::memory_order_relaxed) & kWideBit;
    int32_t pos = posOf(idx, wide);
    fn(k, pos, entry(pos));
  }
}

bool FlowTable::scan(
    uint32_t& cursor, size_t max_visit, size_t max_slots,
    const std::function<bool(const FlowKey&, int32_t, const FlowEntry&)>& fn) const {
  size_t visited = 0;
  const uint32_t end = uint32_t(std::min<uint64_t>(nslots_, uint64_t(cursor) + max_slots));
  FlowKey k;
  while (visited < max_visit && cursor < end) {
    // The live slots of cursor's line from cursor on (lines are kBucketSlots
    // aligned: nslots_ is whole buckets).
    uint32_t line = cursor / kBucketSlots;
    uint32_t m = matchState(tags_ + size_t(line) * kBucketSlots, kReady) >> (cursor % kBucketSlots);
    if (!m) {
      cursor = std::min(end, (line + 1) * kBucketSlots);
      continue;
    }
    uint32_t idx = cursor + uint32_t(__builtin_ctz(m));
    if (idx >= end) {
      cursor = end;
      break;
    }
    cursor = idx + 1;
    if (!readKey(idx, k)) continue;  // deleted since
    ++visited;
    bool wide = tags_[idx].load(std::memory_order_relaxed) & kWideBit;
    int32_t pos = posOf(idx, wide);
    if (!fn(k, pos, entry(pos))) return true;
  }
  return cursor < nslots_;
}

bool FlowTable::keyAt(int32_t pos, FlowKey& out) const noexcept {
  if (pos < 0 || size_t(pos) >= slots()) return false;
  bool wide = uint32_t(pos) >= nslots_;
  uint32_t idx = wide ? uint32_t(pos) - nslots_ : uint32_t(pos);
  uint32_t tag = tags_[idx].load(std::memory_order_acquire);
  if (tagState(tag) != kReady || bool(tag & kWideBit) != wide) return false;
  return readKey(idx, out);
}

}  // namespace gwlb::dp
