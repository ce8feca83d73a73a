#include "dataplane/flow_table.h"

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_rcu_qsbr.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "dataplane/move.h"

namespace gwlb::dp {

// Concurrency rule R7 (docs/architecture.md "Flow entries: concurrency rules"):
// only from reclaim(), once no worker can hold the position.
void FlowEntry::reset() noexcept {
  route.store(0, std::memory_order_relaxed);
  last_seen_ns.store(0, std::memory_order_relaxed);
  flow_hash.store(0, std::memory_order_relaxed);
  created_ns.store(0, std::memory_order_relaxed);
  idle_timeout_ns.store(0, std::memory_order_relaxed);
  first_dir.store(0, std::memory_order_relaxed);
  moved.store(0, std::memory_order_relaxed);
  moved_ns.store(0, std::memory_order_relaxed);
  moves.store(0, std::memory_order_relaxed);
  for (auto& d : dir) d.clear();
  for (int i = 0; i < 2; ++i) {
    packets[i].store(0, std::memory_order_relaxed);
    bytes[i].store(0, std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
}

FlowTable::FlowTable(const std::string& name, uint32_t capacity, rte_rcu_qsbr* qsbr, int socket)
    : qsbr_(qsbr), capacity_(capacity) {
  rte_hash_parameters p{};
  p.name = name.c_str();
  p.entries = capacity;
  p.key_len = sizeof(FlowKey);
  p.hash_func = &gwlb::flowHash;
  p.hash_func_init_val = 0;
  p.socket_id = socket;
  // Readers never lock; several workers may insert. Deleted positions are
  // freed by us after an RCU grace period (LF mode implies no-free-on-delete).
  p.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF | RTE_HASH_EXTRA_FLAGS_MULTI_WRITER_ADD |
                 RTE_HASH_EXTRA_FLAGS_EXT_TABLE;
  hash_ = rte_hash_create(&p);
  if (!hash_)
    throw std::runtime_error("flow table: rte_hash_create(" + std::to_string(capacity) +
                             ") failed: " + rte_strerror(rte_errno));
  // With MULTI_WRITER_ADD, rte_hash keeps per-lcore caches of free key slots
  // and so hands out positions up to rte_hash_max_key_id() - 1, well past
  // `capacity` (and the table holds more than `capacity` keys through its
  // extendable buckets): size the entries for every position it can return.
  int32_t max_id = rte_hash_max_key_id(hash_);
  slots_ = size_t(std::max<int32_t>(max_id, int32_t(capacity))) + 1;
  entries_ = std::make_unique<FlowEntry[]>(slots_);
}

FlowTable::~FlowTable() {
  if (hash_) rte_hash_free(hash_);
}

int32_t FlowTable::lookup(const FlowKey& k, uint32_t hash) const noexcept {
  int32_t r = rte_hash_lookup_with_hash(hash_, &k, hash);
  return r >= 0 ? r : -1;
}

void FlowTable::lookupBulk(const FlowKey* const* keys, const uint32_t* hashes, uint32_t n,
                           int32_t* pos) const noexcept {
  for (uint32_t at = 0; at < n; at += kLookupBulkMax) {
    uint32_t k = std::min(kLookupBulkMax, n - at);
    // rte_hash takes non-const signature and key-pointer arrays; it reads them only.
    rte_hash_lookup_with_hash_bulk(hash_, reinterpret_cast<const void**>(const_cast<const FlowKey**>(keys + at)),
                                   const_cast<hash_sig_t*>(hashes + at), k, pos + at);
    for (uint32_t i = 0; i < k; ++i)
      if (pos[at + i] < 0) pos[at + i] = -1;
  }
}

int32_t FlowTable::insert(const FlowKey& k, uint32_t hash) noexcept {
  int32_t r = rte_hash_add_key_with_hash(hash_, &k, hash);
  return r >= 0 ? r : -1;
}

size_t FlowTable::expire(uint64_t now_ns, size_t max, std::vector<uint16_t>* expired_servers) {
  std::vector<std::pair<FlowKey, int32_t>> victims;
  const void* key;
  void* data;
  uint32_t next = 0;
  int32_t pos;
  size_t live = 0;
  while ((pos = rte_hash_iterate(hash_, &key, &data, &next)) >= 0) {
    ++live;
    const FlowEntry& e = entries_[size_t(pos)];
    // Concurrency rule R3 (docs/architecture.md "Flow entries: concurrency rules"):
    // no route yet, or an idle timeout of 0: a worker is still creating it.
    if (!(e.route.load(std::memory_order_acquire) & kRouteSet)) continue;
    uint64_t seen = e.last_seen_ns.load(std::memory_order_relaxed);
    uint64_t idle = e.idle_timeout_ns.load(std::memory_order_relaxed);
    if (idle == 0) continue;
    if (seen + idle <= now_ns) {
      victims.emplace_back(*static_cast<const FlowKey*>(key), pos);
      if (expired_servers && static_cast<const FlowKey*>(key)->kind != KeyKind::kFragment)
        expired_servers->push_back(routeServer(e.route.load(std::memory_order_relaxed)));
      if (max && victims.size() >= max) break;
    }
  }
  // Exhaustion: evict the entries idle longest, down to the low-water mark.
  // (Counted by the scan above: rte_hash_count() also counts positions
  // parked in per-lcore caches. With `max`, the scan stopped early: no eviction.)
  size_t left = live > victims.size() ? live - victims.size() : 0;
  if (max == 0 && left > size_t(capacity_) * kEvictHighPercent / 100) {
    size_t want = left - size_t(capacity_) * kEvictLowPercent / 100;
    // Concurrency rule R3 (docs/architecture.md "Flow entries: concurrency rules"):
    // entries being created are never candidates.
    auto candidate = [&](const FlowEntry& e, uint64_t& seen) {
      if (!(e.route.load(std::memory_order_acquire) & kRouteSet)) return false;
      uint64_t idle = e.idle_timeout_ns.load(std::memory_order_relaxed);
      seen = e.last_seen_ns.load(std::memory_order_relaxed);
      return idle != 0 && seen + idle > now_ns;  // not already expired above
    };
    std::vector<uint64_t> seen_all;
    seen_all.reserve(left);
    next = 0;
    while ((pos = rte_hash_iterate(hash_, &key, &data, &next)) >= 0) {
      uint64_t seen;
      if (candidate(entries_[size_t(pos)], seen)) seen_all.push_back(seen);
    }
    want = std::min(want, seen_all.size());
    if (want > 0) {
      std::nth_element(seen_all.begin(), seen_all.begin() + long(want - 1), seen_all.end());
      uint64_t cutoff = seen_all[want - 1];
      // Strictly older than the cutoff first, then as many at the cutoff as needed.
      size_t older = size_t(std::count_if(seen_all.begin(), seen_all.end(),
                                          [cutoff](uint64_t v) { return v < cutoff; }));
      size_t at_cutoff = want - older;
      next = 0;
      size_t taken = 0;
      while (taken < want && (pos = rte_hash_iterate(hash_, &key, &data, &next)) >= 0) {
        const FlowEntry& e = entries_[size_t(pos)];
        uint64_t seen;
        if (!candidate(e, seen) || seen > cutoff) continue;
        if (seen == cutoff) {
          if (at_cutoff == 0) continue;
          --at_cutoff;
        }
        victims.emplace_back(*static_cast<const FlowKey*>(key), pos);
        if (expired_servers && static_cast<const FlowKey*>(key)->kind != KeyKind::kFragment)
          expired_servers->push_back(routeServer(e.route.load(std::memory_order_relaxed)));
        ++taken;
      }
      evicted_ += taken;
    }
  }
  if (victims.empty()) return 0;
  for (auto& [k, p] : victims) {
    int32_t r = rte_hash_del_key(hash_, &k);
    if (r >= 0) retired_.push_back({r, 0});
  }
  // One grace period covers every key deleted above.
  // Concurrency rule R7 (docs/architecture.md "Flow entries: concurrency rules"):
  // their positions are freed (and their entries reset) by reclaim() after it.
  uint64_t token = rte_rcu_qsbr_start(qsbr_);
  for (auto it = retired_.rbegin(); it != retired_.rend() && it->token == 0; ++it) it->token = token;
  return victims.size();
}

// Concurrency rule R7 (docs/architecture.md "Flow entries: concurrency rules"):
// a position is reset and given back only once its grace period has ended.
size_t FlowTable::reclaim(bool wait) {
  size_t n = 0;
  while (!retired_.empty()) {
    Retired r = retired_.front();
    if (rte_rcu_qsbr_check(qsbr_, r.token, wait) != 1) break;
    entries_[size_t(r.pos)].reset();
    rte_hash_free_key_with_position(hash_, r.pos);
    retired_.pop_front();
    ++n;
  }
  return n;
}

void FlowTable::forEach(
    const std::function<void(const FlowKey&, int32_t, const FlowEntry&)>& fn) const {
  const void* key;
  void* data;
  uint32_t next = 0;
  int32_t pos;
  while ((pos = rte_hash_iterate(hash_, &key, &data, &next)) >= 0)
    fn(*static_cast<const FlowKey*>(key), pos, entries_[size_t(pos)]);
}

bool FlowTable::scan(
    uint32_t& cursor, size_t max_visit,
    const std::function<bool(const FlowKey&, int32_t, const FlowEntry&)>& fn) const {
  const void* key;
  void* data;
  size_t visited = 0;
  int32_t pos;
  while (visited < max_visit && (pos = rte_hash_iterate(hash_, &key, &data, &cursor)) >= 0) {
    ++visited;
    if (!fn(*static_cast<const FlowKey*>(key), pos, entries_[size_t(pos)])) return true;
  }
  return visited >= max_visit;
}

void FlowTable::countByServer(std::vector<uint32_t>& out) const {
  const void* key;
  void* data;
  uint32_t next = 0;
  int32_t pos;
  while ((pos = rte_hash_iterate(hash_, &key, &data, &next)) >= 0) {
    if (static_cast<const FlowKey*>(key)->kind == KeyKind::kFragment) continue;
    uint64_t r = entries_[size_t(pos)].route.load(std::memory_order_acquire);
    if (!(r & kRouteSet)) continue;
    uint16_t id = routeServer(r);
    if (out.size() <= id) out.resize(size_t(id) + 1, 0);
    ++out[id];
  }
}

size_t FlowTable::sweepMoves(const Snapshot& s, uint64_t now_ns) {
  const void* key;
  void* data;
  uint32_t next = 0;
  int32_t pos;
  size_t moved_n = 0;
  while ((pos = rte_hash_iterate(hash_, &key, &data, &next)) >= 0) {
    const FlowKey& k = *static_cast<const FlowKey*>(key);
    // Keys carry the listener; moves go to its active group.
    if (k.kind == KeyKind::kFragment || k.listener >= s.listeners.size()) continue;
    uint8_t target = s.listeners[k.listener].active;
    if (target >= s.groups.size()) continue;
    FlowEntry& e = entries_[size_t(pos)];
    uint64_t r = e.route.load(std::memory_order_acquire);
    if (!(r & kRouteSet) || routeServer(r) >= s.servers.size()) continue;
    const ServerView& sv = s.servers[routeServer(r)];
    if (sv.move == MoveReason::kNone || sv.phase == ServerPhase::kActive) continue;
    bool moved = false;
    // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
    // the same CAS as the workers; whoever is first moves the flow.
    tryMove(e, s, s.groups[target], r, sv.move, now_ns, moved);
    moved_n += moved;
  }
  return moved_n;
}

bool FlowTable::keyAt(int32_t pos, FlowKey& out) const noexcept {
  if (pos < 0 || size_t(pos) >= slots_) return false;
  void* k = nullptr;
  // rte_hash checks that the key there is live (a lookup of it finds pos).
  if (rte_hash_get_key_with_position(hash_, pos, &k) != 0 || !k) return false;
  std::memcpy(&out, k, sizeof out);
  return true;
}

uint32_t FlowTable::count() const noexcept {
  int32_t c = rte_hash_count(hash_);
  return c > 0 ? uint32_t(c) : 0;
}

}  // namespace gwlb::dp
