#include "common/net_types.h"

#include <arpa/inet.h>

#include <cstdio>

namespace gwlb {

std::optional<MacAddr> MacAddr::parse(std::string_view s) {
  if (s.size() != 17) return std::nullopt;
  MacAddr m;
  for (int i = 0; i < 6; ++i) {
    int v = 0;
    for (int j = 0; j < 2; ++j) {
      char c = s[size_t(i * 3 + j)];
      int d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else return std::nullopt;
      v = v * 16 + d;
    }
    if (i < 5 && s[size_t(i * 3 + 2)] != ':' && s[size_t(i * 3 + 2)] != '-') return std::nullopt;
    m.b[size_t(i)] = uint8_t(v);
  }
  return m;
}

std::string MacAddr::str() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
                b[5]);
  return buf;
}

std::optional<IpAddr> IpAddr::parse(std::string_view s) {
  if (s.empty() || s.size() > 45) return std::nullopt;
  char buf[46];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  IpAddr a;
  if (inet_pton(AF_INET, buf, a.b.data()) == 1) {
    a.family = 4;
    return a;
  }
  if (inet_pton(AF_INET6, buf, a.b.data()) == 1) {
    a.family = 6;
    return a;
  }
  return std::nullopt;
}

std::string IpAddr::str() const {
  char buf[INET6_ADDRSTRLEN];
  if (family == 4) return inet_ntop(AF_INET, b.data(), buf, sizeof buf);
  if (family == 6) return inet_ntop(AF_INET6, b.data(), buf, sizeof buf);
  return "unset";
}

}  // namespace gwlb
