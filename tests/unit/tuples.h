// Tuple helpers the unit tests share.
#pragma once

#include <utility>

#include "common/packet_parser.h"

namespace gwlb::testing {

// The other direction of a flow: addresses and ports swapped.
inline L4Tuple reversed(const L4Tuple& t) {
  L4Tuple r = t;
  std::swap(r.src, r.dst);
  std::swap(r.sport, r.dport);
  return r;
}

}  // namespace gwlb::testing
