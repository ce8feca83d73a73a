// Which fleet.peers entries are this node itself (docs/fleet.md "Warm
// start"). One peers list is often written once for every node of a fleet;
// with a wildcard fleet.sync_listen (0.0.0.0:P or [::]:P) the entry holding
// this node's own address reaches this node, which would send its records to
// itself and ask itself for its (empty) table at start. Pure code apart from
// hostAddresses(); any thread.
#pragma once

#include <string>
#include <vector>

#include "common/net_types.h"

namespace gwlb::ctl {

// One peers entry that is this node: its index in fleet.peers and why.
struct SelfPeer {
  size_t index = 0;
  std::string why;
};

// The entries of `peers` that reach this node's own sync socket, bound to
// `listen`: the same address and port, or (with a wildcard `listen`) the same
// port at one of `host` (this machine's addresses) or at a loopback address.
// Entries that do not parse are left to the config's checks.
std::vector<SelfPeer> selfPeers(const std::string& listen, const std::vector<std::string>& peers,
                                const std::vector<IpAddr>& host);

// The addresses of this machine's interfaces (getifaddrs); empty when they
// cannot be read.
std::vector<IpAddr> hostAddresses();

}  // namespace gwlb::ctl
