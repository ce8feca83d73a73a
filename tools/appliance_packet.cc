// The inner packet parser of gwlb-appliance (tools/appliance_packet.h).
#include "tools/appliance_packet.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <utility>

namespace gwlb::appliance {

std::string Endpoint::str() const {
  char a[INET6_ADDRSTRLEN] = "";
  char buf[80];
  if (v6) {
    inet_ntop(AF_INET6, addr.data(), a, sizeof a);
    std::snprintf(buf, sizeof buf, "[%s]:%u", a, port);
  } else {
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u:%u", addr[0], addr[1], addr[2], addr[3], port);
  }
  return buf;
}

bool parseIp(const uint8_t* p, size_t n, Inner& out) {
  if (n < 1) return false;
  unsigned ver = p[0] >> 4;
  size_t l4 = 0;
  bool first_fragment = true;
  if (ver == 4) {
    if (n < 20) return false;
    size_t ihl = (p[0] & 0x0f) * 4u;
    size_t tot = (size_t(p[2]) << 8) | p[3];
    if (ihl < 20 || tot < ihl || tot > n) return false;
    out.proto = p[9];
    std::memcpy(out.src.addr.data(), p + 12, 4);
    std::memcpy(out.dst.addr.data(), p + 16, 4);
    unsigned frag_off = ((unsigned(p[6]) << 8) | p[7]) & 0x1fff;
    first_fragment = frag_off == 0;
    l4 = ihl;
    n = tot;
  } else if (ver == 6) {
    if (n < 40) return false;
    size_t plen = (size_t(p[4]) << 8) | p[5];
    if (40 + plen > n) return false;
    n = 40 + plen;
    out.src.v6 = out.dst.v6 = true;
    std::memcpy(out.src.addr.data(), p + 8, 16);
    std::memcpy(out.dst.addr.data(), p + 24, 16);
    uint8_t nh = p[6];
    l4 = 40;
    // Skip the usual extension headers (hop-by-hop, routing, fragment, dest options).
    for (int i = 0; i < 8; ++i) {
      if (nh == 0 || nh == 43 || nh == 60) {
        if (l4 + 8 > n) return false;
        uint8_t next = p[l4];
        l4 += (size_t(p[l4 + 1]) + 1) * 8;
        nh = next;
      } else if (nh == 44) {
        if (l4 + 8 > n) return false;
        uint8_t next = p[l4];
        unsigned off = ((unsigned(p[l4 + 2]) << 8) | p[l4 + 3]) >> 3;
        first_fragment = off == 0;
        l4 += 8;
        nh = next;
      } else {
        break;
      }
    }
    if (l4 > n) return false;
    out.proto = nh;
  } else {
    return false;
  }
  if ((out.proto == 6 || out.proto == 17 || out.proto == 132) && first_fragment) {
    if (l4 + 4 > n) return false;
    out.src.port = uint16_t((p[l4] << 8) | p[l4 + 1]);
    out.dst.port = uint16_t((p[l4 + 2] << 8) | p[l4 + 3]);
    out.has_ports = true;
  }
  return true;
}

FlowKey flowKeyOf(const Inner& in, bool* forward) {
  FlowKey key{in.proto, in.src, in.dst};
  bool fwd = true;
  if (in.dst < in.src) {
    std::swap(key.a, key.b);
    fwd = false;
  }
  if (forward) *forward = fwd;
  return key;
}

}  // namespace gwlb::appliance
