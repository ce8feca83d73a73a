// Loopback sockets for the fleet sync tests (test_fleet_sync.cc,
// test_warm_start.cc): a port free for TCP and UDP, and FleetSync's bind
// retried when another process took that port first.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace gwlb::dptest {

// A loopback port free for both TCP and UDP (FleetSync binds both) right now.
inline uint16_t freeSyncPort() {
  for (;;) {
    int t = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(t, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(t, reinterpret_cast<sockaddr*>(&a), &len);
    int u = ::socket(AF_INET, SOCK_DGRAM, 0);
    bool both = ::bind(u, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(u);
    ::close(t);
    if (both) return ntohs(a.sin_port);
  }
}
inline std::string freePort() { return "127.0.0.1:" + std::to_string(freeSyncPort()); }

// Another process (tests run in parallel) may take the port between
// freePort() and FleetSync's bind: retried with another port.
template <class Make>
void bindRetrying(std::string& listen, Make make) {
  for (int tries = 0;; ++tries) {
    listen = freePort();
    try {
      make();
      return;
    } catch (const std::runtime_error& e) {
      if (tries >= 20 || !std::strstr(e.what(), "in use")) throw;
    }
  }
}

}  // namespace gwlb::dptest
