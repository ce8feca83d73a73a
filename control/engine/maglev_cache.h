// Maglev tables kept between snapshots, so that a publication which leaves a
// group's appliances as they were does not build its table again.
//
// A group's table depends only on its table size and its appliances'
// (address, weight in force, server id) in address order: the snapshot
// builder asks this cache first and builds (buildMaglevTable, ~0.5 ms for
// 65,537 slots; far more with hundreds of appliances) only what it has not
// seen among the last `capacity` inputs. Health flaps alternate between a few
// states, so a flapping appliance costs a copy of the table, not a build.
// Control thread only (not thread-safe); allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <vector>

#include "common/maglev.h"

namespace gwlb::ctl {

class MaglevCache {
 public:
  // One appliance of a group, in the order the table is built in.
  struct Input {
    uint32_t ip;      // host order; its text is the Maglev name
    uint32_t weight;  // in force for new flows (0: takes no slots)
    uint16_t id;      // the server id the table's slots hold
  };
  explicit MaglevCache(size_t capacity = 16) : capacity_(capacity) {}

  // The table (slot -> server id, `none` where no backend has weight) for
  // `inputs` of `table_size` slots: a copy of a cached one, or built and
  // cached (the least recently used of `capacity` tables goes).
  std::vector<uint16_t> table(const std::vector<Input>& inputs, uint32_t table_size,
                              uint16_t none);

  uint64_t hits() const noexcept { return hits_; }
  uint64_t misses() const noexcept { return misses_; }
  size_t size() const noexcept { return entries_.size(); }

 private:
  struct Entry {
    std::vector<uint64_t> key;  // table size and `none`, then (ip, weight), id per input
    std::vector<uint16_t> table;
  };
  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  uint64_t hits_ = 0, misses_ = 0;
};

// The table as the builder makes it without a cache (the cache's misses).
std::vector<uint16_t> buildGroupMaglev(const std::vector<MaglevCache::Input>& inputs,
                                       uint32_t table_size, uint16_t none);

}  // namespace gwlb::ctl

namespace gwlb::ctl {
// Snapshots are rebuilt up to a thousand times a second, and their largest
// parts (a 65,537-slot Maglev table is 128 KiB; 1,000 appliances' views are
// ~150 KiB) sit above glibc's mmap threshold: each build would map fresh
// pages and fault them in, each retirement unmap them. Called once at start
// by gwlbd (and the snapshot benchmark, as gwlbd runs): such blocks come
// from the heap and are reused, and the heap's top is not trimmed for less
// than 64 MiB.
void keepSnapshotMemoryMapped() noexcept;
}  // namespace gwlb::ctl
