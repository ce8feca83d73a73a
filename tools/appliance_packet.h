// The inner packet as gwlb-appliance sees it: the flow's two endpoints, the
// canonical (symmetric) flow key, and the IPv4/IPv6 parser both its Geneve
// path and its tun path use. Pure code: no sockets, no Asio.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>

namespace gwlb::appliance {

// One side of a flow: address bytes (IPv4 in the first 4 of 16) and port.
struct Endpoint {
  std::array<uint8_t, 16> addr{};
  bool v6 = false;
  uint16_t port = 0;
  auto tie() const { return std::tie(addr, v6, port); }
  bool operator<(const Endpoint& o) const { return tie() < o.tie(); }
  bool operator==(const Endpoint& o) const { return tie() == o.tie(); }
  std::string str() const;  // "10.0.0.1:80" or "[2001:db8::1]:80"
};

struct FlowKey {  // canonical: a < b, so both directions of a flow have one key
  uint8_t proto;
  Endpoint a, b;
  bool operator<(const FlowKey& o) const {
    return std::tie(proto, a, b) < std::tie(o.proto, o.a, o.b);
  }
  bool operator==(const FlowKey& o) const {
    return std::tie(proto, a, b) == std::tie(o.proto, o.a, o.b);
  }
};

struct Inner {
  uint8_t proto = 0;
  Endpoint src, dst;
  bool has_ports = false;
};

// Parses an inner IPv4/IPv6 packet. Returns false when it is not parseable.
// Never throws; reads only inside p[0..n).
bool parseIp(const uint8_t* p, size_t n, Inner& out);

// The canonical key of a parsed packet; *forward tells whether src is key.a.
FlowKey flowKeyOf(const Inner& in, bool* forward);

}  // namespace gwlb::appliance
