// Maglev consistent hashing (Eisenbud et al., NSDI'16) with weights.
// Pure code: no DPDK. Built on the control thread, read by workers as a plain array.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gwlb {

inline constexpr uint16_t kMaglevNoBackend = 0xFFFF;
inline constexpr uint32_t kMaglevDefaultSize = 65537;

struct MaglevBackend {
  std::string name;  // stable identity (e.g. the address text); drives the permutation
  uint32_t weight;   // 0 = takes no slots
};

// Returns a table of `table_size` entries, each an index into `backends`, or
// kMaglevNoBackend everywhere when no backend has weight > 0.
// table_size must be prime and > backends.size(); throws std::invalid_argument
// otherwise. Deterministic: the same input always gives the same table.
// Order matters: within a round, earlier backends take their turn first, so
// the same backends in another order give another table. A caller that needs
// the table to depend on the set alone (a fleet of gateways: docs/fleet.md)
// passes them in a canonical order (the snapshot builder sorts by address).
// Any thread may call it; it allocates.
std::vector<uint16_t> buildMaglevTable(const std::vector<MaglevBackend>& backends,
                                       uint32_t table_size);

bool isPrime(uint32_t n);

}  // namespace gwlb
