#include "control/fleet/fleet_peers.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

#include "control/config/config.h"

namespace gwlb::ctl {

namespace {

bool isWildcard(const IpAddr& a) { return a.b == std::array<uint8_t, 16>{}; }

bool isLoopback(const IpAddr& a) {
  if (a.isV4()) return a.b[0] == 127;
  std::array<uint8_t, 16> one{};
  one[15] = 1;
  return a.b == one;
}

}  // namespace

std::vector<SelfPeer> selfPeers(const std::string& listen, const std::vector<std::string>& peers,
                                const std::vector<IpAddr>& host) {
  std::vector<SelfPeer> out;
  IpAddr la;
  uint16_t lport = 0;
  if (!parseListen(listen, la, lport)) return out;
  for (size_t i = 0; i < peers.size(); ++i) {
    IpAddr pa;
    uint16_t pport = 0;
    if (!parseListen(peers[i], pa, pport) || pport != lport) continue;
    if (pa == la) {
      out.push_back({i, "it is fleet.sync_listen"});
    } else if (isWildcard(la) && (la.family == pa.family || la.isV6())) {
      // An IPv6 wildcard socket takes IPv4 too (dual stack, Linux's default).
      if (isLoopback(pa))
        out.push_back({i, "fleet.sync_listen " + listen + " takes this loopback address too"});
      else if (std::find(host.begin(), host.end(), pa) != host.end())
        out.push_back({i, pa.str() + " is an address of this host, and fleet.sync_listen " + listen +
                              " takes it"});
    }
  }
  return out;
}

std::vector<IpAddr> hostAddresses() {
  std::vector<IpAddr> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      auto* s = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
      out.push_back(IpAddr::v4(reinterpret_cast<const uint8_t*>(&s->sin_addr)));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      auto* s = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      out.push_back(IpAddr::v6(reinterpret_cast<const uint8_t*>(&s->sin6_addr)));
    }
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace gwlb::ctl
