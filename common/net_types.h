// Plain value types for addresses, shared by control and dataplane.
// Pure code: no DPDK, no Asio, no allocation except in the string helpers.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace gwlb {

struct MacAddr {
  std::array<uint8_t, 6> b{};

  // Parses "02:00:00:00:00:01" (case-insensitive, ':' or '-'). Never throws.
  static std::optional<MacAddr> parse(std::string_view s);
  std::string str() const;
  bool isZero() const { return b == std::array<uint8_t, 6>{}; }
  bool operator==(const MacAddr&) const = default;
};

// An IPv4 or IPv6 address in network byte order. IPv4 lives in bytes 0..3,
// the rest stays zero, so two IpAddr compare equal iff family and bytes match.
struct IpAddr {
  uint8_t family = 0;  // 0 = unset, 4 or 6
  std::array<uint8_t, 16> b{};

  static IpAddr v4(const uint8_t* p) {
    IpAddr a;
    a.family = 4;
    std::memcpy(a.b.data(), p, 4);
    return a;
  }
  // In place, as `*this = v4(p)` (the fast parser's: no temporary to copy).
  void setV4(const uint8_t* p) noexcept {
    uint32_t v;
    std::memcpy(&v, p, 4);
    const uint64_t lo = v, hi = 0;
    family = 4;
    std::memcpy(b.data(), &lo, 8);
    std::memcpy(b.data() + 8, &hi, 8);
  }
  static IpAddr v6(const uint8_t* p) {
    IpAddr a;
    a.family = 6;
    std::memcpy(a.b.data(), p, 16);
    return a;
  }
  // Host-order IPv4 value, e.g. 0xC0000201 for 192.0.2.1.
  static IpAddr v4(uint32_t host_order) {
    uint8_t p[4] = {uint8_t(host_order >> 24), uint8_t(host_order >> 16),
                    uint8_t(host_order >> 8), uint8_t(host_order)};
    return v4(p);
  }
  uint32_t v4HostOrder() const {
    return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
  }
  bool isV4() const { return family == 4; }
  bool isV6() const { return family == 6; }

  // Parses dotted IPv4 or RFC 4291 IPv6 text. Never throws.
  static std::optional<IpAddr> parse(std::string_view s);
  std::string str() const;
  bool operator==(const IpAddr&) const = default;
};

// The 32-bit name an appliance is known by to control code keyed by appliance
// (the server registry, health, lifecycle, weights) and the flow cookie's
// appliance input: an IPv4 address in host order; an IPv6 appliance's four
// words folded by XOR. The config validator refuses two appliances with one
// key, so it names each appliance of a config once.
inline uint32_t applianceKey(const IpAddr& a) noexcept {
  if (!a.isV6()) return a.v4HostOrder();
  uint32_t k = 0;
  for (size_t i = 0; i < 16; i += 4)
    k ^= uint32_t(a.b[i]) << 24 | uint32_t(a.b[i + 1]) << 16 | uint32_t(a.b[i + 2]) << 8 | a.b[i + 3];
  return k;
}

// What a dataplane port faces (node.ports[].role): routers send it traffic to
// inspect (forward path), appliances send it their Geneve returns (return
// path), or both (one-arm). The bits say what the port accepts.
enum class PortRole : uint8_t {
  kRouter = 1,     // forward path only: Geneve to our underlay address is dropped here
  kAppliance = 2,  // return path only: nothing is forwarded from here
  kBoth = 3,
};
inline bool acceptsRouterTraffic(PortRole r) { return uint8_t(r) & 1; }
inline bool acceptsReturns(PortRole r) { return uint8_t(r) & 2; }
inline const char* toString(PortRole r) {
  switch (r) {
    case PortRole::kRouter: return "router";
    case PortRole::kAppliance: return "appliance";
    case PortRole::kBoth: return "both";
  }
  return "?";
}

}  // namespace gwlb
