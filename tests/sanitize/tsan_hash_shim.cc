// Tells ThreadSanitizer about the happens-before edges that rte_hash creates
// internally, because librte_hash is not instrumented (Debian's shared build).
//
// Linked with -Wl,--wrap=<function> (tests/sanitize/meson.build): the calls that
// dataplane/flow_table.cc makes land here first and then go on to rte_hash.
// Nothing is hidden: every access our code makes is still checked. What this
// adds is the synchronisation rte_hash really performs, modelled per key
// position (the index into FlowTable's FlowEntry array):
//
//   rte_hash_free_key_with_position(pos)  release(pos)  The position goes back to
//       rte_hash's free-slot ring / per-lcore cache (an rte_ring: its enqueue is a
//       release) ...
//   rte_hash_add_key_with_hash() -> pos   acquire(pos)  ... and the insert that
//       takes it out again dequeues it (acquire). The insert then publishes the
//       key in its bucket with a release store (RW_CONCURRENCY_LF) ...
//                                         release(pos)
//   rte_hash_lookup_with_hash() -> pos    acquire(pos)  ... which a lookup that
//       finds the key reads with an acquire load (the bulk lookup
//       rte_hash_lookup_with_hash_bulk() the same, for each key it finds).
//
// Without these edges TSan cannot see that FlowTable::reclaim()'s
// FlowEntry::reset() (control thread, after the grace period) happens before the
// worker that re-uses the position writes the new flow's fields, and reports
// every re-used position as a race (see tests/sanitize/README.md). The edges
// are per position, not per table, so they do not order unrelated flows:
// two workers that create the same flow at the same time still race visibly on
// anything they both write after the insert.
//
// GWLB_TSAN_NO_HASH_EDGES=1 in the environment turns the annotations off (to
// see what TSan reports without them).
#include <rte_hash.h>

#include <cstdint>
#include <cstdlib>

extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
void AnnotateIgnoreReadsBegin(const char* file, int line);
void AnnotateIgnoreReadsEnd(const char* file, int line);
void AnnotateIgnoreWritesBegin(const char* file, int line);
void AnnotateIgnoreWritesEnd(const char* file, int line);

int32_t __real_rte_hash_add_key_with_hash(const struct rte_hash* h, const void* key,
                                          hash_sig_t sig);
int32_t __real_rte_hash_lookup_with_hash(const struct rte_hash* h, const void* key,
                                         hash_sig_t sig);
int __real_rte_hash_lookup_with_hash_bulk(const struct rte_hash* h, const void** keys,
                                          hash_sig_t* sig, uint32_t num_keys, int32_t* positions);
int32_t __real_rte_hash_del_key(const struct rte_hash* h, const void* key);
int32_t __real_rte_hash_iterate(const struct rte_hash* h, const void** key, void** data,
                                uint32_t* next);
int __real_rte_hash_free_key_with_position(const struct rte_hash* h, const int32_t position);
}

namespace {

// One sync address per position (positions above the array alias, which only
// adds edges between positions 2^20 apart: the test's table is far smaller).
constexpr uint32_t kSlots = 1u << 20;
uint64_t g_slot_sync[kSlots];

void* slot(int32_t pos) { return &g_slot_sync[uint32_t(pos) & (kSlots - 1)]; }

bool enabled() {
  static const bool on = [] {
    const char* e = std::getenv("GWLB_TSAN_NO_HASH_EDGES");
    return !(e && e[0] == '1');
  }();
  return on;
}

// rte_hash's own memory accesses, for the length of one call into it.
struct InsideRteHash {
  InsideRteHash() {
    if (!enabled()) return;
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
  }
  ~InsideRteHash() {
    if (!enabled()) return;
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
    AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  }
};

}  // namespace

extern "C" {

int32_t __wrap_rte_hash_add_key_with_hash(const struct rte_hash* h, const void* key,
                                          hash_sig_t sig) {
  int32_t r;
  {
    InsideRteHash in;
    r = __real_rte_hash_add_key_with_hash(h, key, sig);
  }
  if (r >= 0 && enabled()) {
    __tsan_acquire(slot(r));  // took the position off the free-slot ring
    __tsan_release(slot(r));  // published the key
  }
  return r;
}

int32_t __wrap_rte_hash_lookup_with_hash(const struct rte_hash* h, const void* key,
                                         hash_sig_t sig) {
  int32_t r;
  {
    InsideRteHash in;
    r = __real_rte_hash_lookup_with_hash(h, key, sig);
  }
  if (r >= 0 && enabled()) __tsan_acquire(slot(r));  // read the published key
  return r;
}

int __wrap_rte_hash_lookup_with_hash_bulk(const struct rte_hash* h, const void** keys,
                                          hash_sig_t* sig, uint32_t num_keys, int32_t* positions) {
  int r;
  {
    InsideRteHash in;
    r = __real_rte_hash_lookup_with_hash_bulk(h, keys, sig, num_keys, positions);
  }
  if (r == 0 && enabled())
    for (uint32_t i = 0; i < num_keys; ++i)
      if (positions[i] >= 0) __tsan_acquire(slot(positions[i]));  // read the published key
  return r;
}

int32_t __wrap_rte_hash_del_key(const struct rte_hash* h, const void* key) {
  InsideRteHash in;
  return __real_rte_hash_del_key(h, key);
}

int32_t __wrap_rte_hash_iterate(const struct rte_hash* h, const void** key, void** data,
                                uint32_t* next) {
  InsideRteHash in;
  return __real_rte_hash_iterate(h, key, data, next);
}

int __wrap_rte_hash_free_key_with_position(const struct rte_hash* h, const int32_t position) {
  if (position >= 0 && enabled()) __tsan_release(slot(position));  // back on the free ring
  return __real_rte_hash_free_key_with_position(h, position);
}

}  // extern "C"
