#include "control/engine/maglev_cache.h"

#include "common/net_types.h"

namespace gwlb::ctl {

std::vector<uint16_t> buildGroupMaglev(const std::vector<MaglevCache::Input>& inputs,
                                       uint32_t table_size, uint16_t none) {
  std::vector<MaglevBackend> backends;
  backends.reserve(inputs.size());
  for (const MaglevCache::Input& in : inputs)
    backends.push_back({IpAddr::v4(in.ip).str(), in.weight});
  std::vector<uint16_t> t = buildMaglevTable(backends, table_size);
  for (uint16_t& slot : t) slot = slot == kMaglevNoBackend ? none : inputs[slot].id;
  return t;
}

std::vector<uint16_t> MaglevCache::table(const std::vector<Input>& inputs, uint32_t table_size,
                                         uint16_t none) {
  std::vector<uint64_t> key;
  key.reserve(1 + 2 * inputs.size());
  key.push_back(uint64_t(table_size) << 16 | none);
  for (const Input& in : inputs) {
    key.push_back(uint64_t(in.ip) << 32 | in.weight);
    key.push_back(in.id);
  }
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key != key) continue;
    ++hits_;
    entries_.splice(entries_.begin(), entries_, it);
    return entries_.front().table;
  }
  ++misses_;
  std::vector<uint16_t> t = buildGroupMaglev(inputs, table_size, none);
  if (capacity_ == 0) return t;
  if (entries_.size() >= capacity_) entries_.pop_back();
  entries_.push_front({std::move(key), t});
  return t;
}

}  // namespace gwlb::ctl

#include <malloc.h>

namespace gwlb::ctl {
void keepSnapshotMemoryMapped() noexcept {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}
}  // namespace gwlb::ctl
