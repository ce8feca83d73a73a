// FlowTable's insert: one try's steps (InsertTry), the overflow marker's
// raise and lowering (R13), and the worker's and the control thread's
// variants. The rest of the table is in flow_table.cc, its lookups in
// flow_table_lookup.cc.
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "dataplane/flow_table.h"
#include "dataplane/flow_table_layout.h"

namespace gwlb::dp {

using namespace flow_slot;

namespace {

// A bounded wait for another thread's few stores (R10): pause, and yield the
// core now and then (the other thread may share it); false when it ran out.
constexpr uint32_t kSpinLimit = 1u << 16;
inline void spinPause(uint32_t i) noexcept {
  if ((i & 1023) == 1023) sched_yield();
  else __builtin_ia32_pause();
}

}  // namespace

[[gnu::always_inline]] inline void FlowTable::writeKey(uint32_t idx, bool wide, const FlowKey& k) noexcept {
  if (wide) std::memcpy(&wide_[idx].key, &k, sizeof k);
  else narrow_[idx].key = toKey4(k);
}

// Concurrency rule R13 (docs/architecture.md "Flow entries: concurrency rules"):
// raised by a seq_cst RMW after the claim, before the keyed store and fence
// (a twin's scan that reads 0 cannot miss the slot); lowered only when the
// insert gives the slot up or reclaim() frees it. At kSpillStuck it stays
// (only slower), and the RMW still writes (the same value).
void FlowTable::spillNote(uint32_t first, uint32_t idx, uint32_t hash) noexcept {
  spill_hi_[idx].store(uint8_t(kSpillBit | hash >> 28), std::memory_order_relaxed);
  uint8_t v = spill_[first].load(std::memory_order_relaxed);
  while (!spill_[first].compare_exchange_weak(v, v == kSpillStuck ? v : uint8_t(v + 1),
                                              std::memory_order_seq_cst)) {
  }
}

void FlowTable::spillForget(uint32_t idx, uint32_t tag) noexcept {
  const uint8_t hi = spill_hi_[idx].load(std::memory_order_relaxed);
  if (!(hi & kSpillBit)) return;
  spill_hi_[idx].store(0, std::memory_order_relaxed);
  // The hash again: its top four bits noted here, the other 28 in the tag.
  const uint32_t first = firstBucket(uint32_t(hi & 15) << 28 | tag >> 4);
  uint8_t v = spill_[first].load(std::memory_order_relaxed);
  while (v != kSpillStuck && v != 0 &&
         !spill_[first].compare_exchange_weak(v, uint8_t(v - 1), std::memory_order_seq_cst)) {
  }
}

// One try of an insert (insertOnce) in its steps, which all inline into it.
template <bool kControl>
struct FlowTable::InsertTry {
  FlowTable& t;
  const FlowKey& k;
  const uint32_t hash;
  const bool wide;
  const uint32_t sig;
  bool& retry;
  Candidates c;
  uint32_t own = UINT32_MAX;  // the claimed slot
  uint32_t oj = 4;            // which of the key's buckets holds it (4: none yet)

  [[gnu::always_inline]] InsertTry(FlowTable& table, const FlowKey& key, uint32_t h, bool& r) noexcept
      : t(table), k(key), hash(h), wide(!isCompact(key)), sig(tagSig(h, wide)), retry(r) {
    t.candidates(h, c);
  }
  const std::atomic<uint32_t>* line(uint32_t j) const noexcept { return t.tags_ + size_t(c.bucket[j]) * kBucketSlots; }

  // The slots of the four buckets whose tag may carry this signature
  // (matchSigHigh: inspect() below compares the whole tag), as one
  // mask: bits 16j..16j+15 for c.bucket[j]. Buckets may repeat (a small
  // table, or a second pair that overlaps the first): a repeated bucket's
  // slots then show twice, which both scans bear (a slot seen again
  // is judged again; the twin scan passes over its own slot by index).
  // A pair's two buckets always differ (nbuckets_ >= 2).
  [[gnu::always_inline]] uint64_t sigSlotsFirst() const noexcept {
    return uint64_t(matchSigHigh(line(0), sig)) | uint64_t(matchSigHigh(line(1), sig)) << 16;
  }
  [[gnu::always_inline]] uint64_t sigSlots() const noexcept {
    return sigSlotsFirst() | uint64_t(matchSigHigh(line(2), sig)) << 32 |
           uint64_t(matchSigHigh(line(3), sig)) << 48;
  }
  [[gnu::always_inline]] uint32_t slotOf(uint64_t m) const noexcept {
    uint32_t bit = uint32_t(__builtin_ctzll(m));
    return c.bucket[bit >> 4] * kBucketSlots + (bit & 15);
  }

  // One pause of a wait; false (no pause) when insertFromControl()'s budget is spent.
  [[gnu::always_inline]] bool pause(uint32_t i) noexcept {
    if constexpr (kControl) {
      if (t.control_budget_ == 0) return false;
      --t.control_budget_;
      ++t.control_pauses_;
    }
    spinPause(i);
    return true;
  }
  // Waits out a same-tag slot's busy state; its tag after, or kBusy when it stayed busy.
  [[gnu::always_inline]] uint32_t settled(uint32_t idx) noexcept {
    uint32_t v = t.tags_[idx].load(std::memory_order_seq_cst);
    for (uint32_t i = 0; tagState(v) == kBusy && tagKey(v) == sig && i < kSpinLimit; ++i) {
      if (!pause(i)) break;
      v = t.tags_[idx].load(std::memory_order_seq_cst);
    }
    return v;
  }

  // What a slot the signature scan found holds for this key, once a busy
  // claim there has settled: kOther (another key, or empty, deleted, dead),
  // kBusy (stayed busy: cannot tell), kSame (this key, keyed or ready; `v`
  // is its tag). Both scans (the key already there; twins) use it.
  enum class Seen { kOther, kBusy, kSame };
  [[gnu::always_inline]] Seen inspect(uint32_t idx, uint32_t& v) noexcept {
    v = t.tags_[idx].load(std::memory_order_acquire);
    if (tagKey(v) != sig) return Seen::kOther;
    uint32_t st = tagState(v);
    if (st != kBusy && st != kKeyed && st != kReady) return Seen::kOther;
    v = settled(idx);
    if (tagKey(v) != sig) return Seen::kOther;
    if (tagState(v) == kBusy) return Seen::kBusy;
    if (tagState(v) != kKeyed && tagState(v) != kReady) return Seen::kOther;
    return t.keyMatches(idx, wide, k) ? Seen::kSame : Seen::kOther;
  }

  // A hint (the caller just missed the key): it is most likely absent, so
  // the key's scan and the bucket pick are skipped when the hinted slot, in
  // one of the key's buckets, is still empty and this claims it. The twin
  // scan finds the key all the same if another inserter has added it,
  // ready or keyed, meanwhile. False: the table is full.
  [[gnu::always_inline]] bool claimHinted(uint32_t hint) noexcept {
    const uint32_t hb = hint / kBucketSlots;
    const uint32_t hj = hb == c.bucket[0] ? 0 : hb == c.bucket[1] ? 1 : hb == c.bucket[2] ? 2 : hb == c.bucket[3] ? 3 : 4;
    if (hint < t.nslots_ && !wide && hj < 4 && t.tags_[hint].load(std::memory_order_relaxed) == kEmpty) {
      if (t.count_.fetch_add(1, std::memory_order_relaxed) >= t.capacity_) {
        t.count_.fetch_sub(1, std::memory_order_relaxed);
        return false;
      }
      uint32_t e = kEmpty;
      if (t.tags_[hint].compare_exchange_strong(e, sig | kBusy, std::memory_order_acquire)) own = hint, oj = hj;
      else t.count_.fetch_sub(1, std::memory_order_relaxed);
    }
    return true;
  }

  // 1. The key may be there, or on its way in: true with `r` the outcome
  // (its position, or -1 with retry) when a slot holds it.
  [[gnu::always_inline]] bool findExisting(int32_t& r) noexcept {
    for (uint64_t m = sigSlots(); m; m &= m - 1) {
      uint32_t idx = slotOf(m);
      uint32_t v;
      Seen seen = inspect(idx, v);
      if (seen == Seen::kOther) continue;
      r = -1;
      if (seen == Seen::kBusy) {
        retry = true;
        return true;
      }
      // The same key: ready, or keyed by another inserter (wait for its outcome).
      for (uint32_t n = 0; tagState(v) == kKeyed && n < kSpinLimit; ++n) {
        if (!pause(n)) break;
        v = t.tags_[idx].load(std::memory_order_acquire);
      }
      if (v == (sig | kReady)) r = t.posOf(idx, wide);
      else retry = true;  // it lost (dead) or stayed keyed: start again
      return true;
    }
    return false;
  }

  // 2. Reserve one of capacity(), then claim an empty slot in the bucket
  // pickBucket() picks. False: the table or the key's buckets are full.
  [[gnu::always_inline]] bool claimPicked() noexcept {
    if (t.count_.fetch_add(1, std::memory_order_relaxed) >= t.capacity_) {
      t.count_.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    for (int tries = 0; tries < 16 && own == UINT32_MAX; ++tries) {
      uint32_t used[4];
      for (uint32_t j = 0; j < 4; ++j)
        used[j] = kBucketSlots - uint32_t(__builtin_popcount(matchLine(line(j), kEmpty)));
      const uint32_t pick = pickBucket(used);
      if (pick == 4) break;  // every candidate bucket is full
      const uint32_t best = c.bucket[pick];
      for (uint32_t m = matchLine(line(pick), kEmpty); m; m &= m - 1) {
        uint32_t idx = best * kBucketSlots + uint32_t(__builtin_ctz(m));
        uint32_t e = kEmpty;
        if (t.tags_[idx].compare_exchange_strong(e, sig | kBusy, std::memory_order_acquire)) {
          own = idx;
          oj = pick;
          break;
        }
      }
    }
    if (own != UINT32_MAX) return true;
    t.count_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }

  // This try gives its keyed slot up (dead) and its reservation back.
  [[gnu::always_inline]] void lose() noexcept {
    uint32_t mine = sig | kKeyed;
    t.tags_[own].compare_exchange_strong(mine, sig | kDead, std::memory_order_acq_rel);
    t.spillForget(own, sig);
    t.count_.fetch_sub(1, std::memory_order_relaxed);
  }

  // 3. The claimed slot keyed, then twins: every other slot with this tag
  // that holds the same key; last, the slot made ready. The outcome.
  [[gnu::always_inline]] int32_t publish() noexcept {
    // In the second pair: the overflow marker is raised before the keyed
    // store and its fence (R13). (oj >= 2 also where a bucket of the second
    // pair is one of the first pair's, seen less loaded by a racing read: a
    // marker raised for nothing, lowered again with the slot.)
    if (oj >= 2) [[unlikely]]
      t.spillNote(c.bucket[0], own, hash);
    t.writeKey(own, wide, k);
    // Keyed, then a sequentially consistent fence before reading any other tag:
    // of two inserters of one key, at least one sees the other's keyed (or
    // later) tag in its scan below (store; fence; load on both sides).
    t.tags_[own].store(sig | kKeyed, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // (The lines are read after the fence: a twin whose keyed store preceded
    // this fence shows here; one that follows it will see this slot keyed.)
    // All lines are compared first, this insert's own slot left out (bucket
    // oj's bit, and by index where a repeated bucket shows it again): most
    // inserts meet no other slot with their tag and are done. The second
    // pair's lines only while the key's first bucket's overflow count is
    // above 0 (R13: a twin there raised it before its keyed store and
    // fence, and this insert's own slot there raised it above).
    const uint64_t twins = t.spilled(c.bucket[0]) ? sigSlots() : sigSlotsFirst();
    for (uint64_t m = twins & ~(uint64_t(1) << (16 * oj + own % kBucketSlots)); m; m &= m - 1) {
      uint32_t idx = slotOf(m);
      if (idx == own) [[unlikely]]
        continue;
      uint32_t v;
      Seen seen = inspect(idx, v);
      if (seen == Seen::kOther) continue;
      if (seen == Seen::kBusy) {  // stayed busy: cannot tell; give this try up
        lose();
        retry = true;
        return -1;
      }
      if (tagState(v) == kReady || idx < own) {  // the twin wins
        lose();
        if (tagState(v) == kReady) return t.posOf(idx, wide);
        retry = true;  // wait for its outcome in the next try
        return -1;
      }
      // A keyed twin in a higher slot: this insert wins unless it became ready first.
      if (!t.tags_[idx].compare_exchange_strong(v, sig | kDead, std::memory_order_acq_rel) &&
          v == (sig | kReady)) {
        lose();
        return t.posOf(idx, wide);
      }
    }
    uint32_t mine = sig | kKeyed;
    if (!t.tags_[own].compare_exchange_strong(mine, sig | kReady, std::memory_order_acq_rel)) {
      // Killed by a twin in a lower slot: it will be ready, find it.
      t.spillForget(own, sig);
      t.count_.fetch_sub(1, std::memory_order_relaxed);
      retry = true;
      return -1;
    }
    return t.posOf(own, wide);
  }
};

template <bool kControl>
[[gnu::always_inline]] inline int32_t FlowTable::insertOnce(const FlowKey& k, uint32_t hash, uint32_t hint,
                                                            bool& retry) noexcept {
  InsertTry<kControl> a(*this, k, hash, retry);
  if (!a.claimHinted(hint)) return -1;
  if (a.own == UINT32_MAX) {
    int32_t r;
    if (a.findExisting(r)) return r;
    if (!a.claimPicked()) return -1;
  }
  return a.publish();
}

// Concurrency rule R10 (docs/architecture.md "Flow entries: concurrency rules"):
// claim (CAS empty -> busy), write the key, keyed + a seq_cst fence, check every slot
// with the same tag for a twin (a ready twin wins; of two keyed twins the lower
// slot wins and kills the other with a CAS keyed -> dead), then CAS keyed ->
// ready. A bounded number of restarts, then kAbandoned.
int32_t FlowTable::insert(const FlowKey& k, uint32_t hash, uint32_t hint) noexcept {
  for (int attempt = 0; attempt < 8; ++attempt) {
    bool retry = false;
    int32_t r = insertOnce<false>(k, hash, attempt == 0 ? hint : kNoHint, retry);
    if (!retry) return r;
  }
  abandoned_.fetch_add(1, std::memory_order_relaxed);
  return kAbandoned;
}

// The same steps as insert(); the waits draw on one budget of
// kControlWaitPauses pauses for the whole call, and a restart after the
// budget is spent gives up.
int32_t FlowTable::insertFromControl(const FlowKey& k, uint32_t hash) noexcept {
  return insertControlHinted(k, hash, kNoHint);
}

int32_t FlowTable::insertControlHinted(const FlowKey& k, uint32_t hash, uint32_t hint) noexcept {
  control_budget_ = kControlWaitPauses;
  for (int attempt = 0; attempt < 8; ++attempt) {
    bool retry = false;
    int32_t r = insertOnce<true>(k, hash, attempt == 0 ? hint : kNoHint, retry);
    if (!retry) return r;
    if (control_budget_ == 0) break;
  }
  abandoned_.fetch_add(1, std::memory_order_relaxed);
  return kAbandoned;
}

void FlowTable::insertBulkFromControl(const FlowKey* const* keys, const uint32_t* hashes, uint32_t n,
                                      int32_t* pos) noexcept {
  uint32_t hints[kLookupBulkMax];
  for (uint32_t at = 0; at < n; at += kLookupBulkMax) {
    const uint32_t m = std::min(n - at, kLookupBulkMax);
    if (lookupBulk(keys + at, hashes + at, m, pos + at, hints) == 0) continue;
    for (uint32_t i = 0; i < m; ++i)
      if (pos[at + i] < 0) pos[at + i] = insertControlHinted(*keys[at + i], hashes[at + i], hints[i]);
  }
}

}  // namespace gwlb::dp
