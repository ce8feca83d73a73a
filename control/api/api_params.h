// Typed parameters of control API requests (docs/control-api.md): the pure
// part of request validation, shared by gwlbd's method handlers
// (control/service/api_*.cc) and the control API fuzz target (tests/fuzz/).
// Control thread; everything here throws ApiFailure on a bad parameter and
// nothing else (except std::bad_alloc).
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>

#include "common/net_types.h"
#include "common/packet_parser.h"
#include "control/api/api_failure.h"

namespace gwlb::ctl {

[[noreturn]] inline void badRequest(const std::string& m) { throw ApiFailure("bad_request", m); }
[[noreturn]] inline void notFound(const std::string& m) { throw ApiFailure("not_found", m); }

// Typed access to `params` that rejects unknown keys and wrong types.
class Params {
 public:
  Params(const nlohmann::json& p, std::initializer_list<const char*> allowed) : p_(p) {
    std::set<std::string> ok(allowed.begin(), allowed.end());
    for (auto& [k, v] : p.items())
      if (!ok.count(k)) {
        std::string list;
        for (auto& a : ok) list += (list.empty() ? "" : ", ") + a;
        badRequest("unknown parameter '" + k + "'" + (list.empty() ? "" : " (allowed: " + list + ")"));
      }
  }
  bool has(const char* k) const { return p_.contains(k) && !p_[k].is_null(); }
  std::string str(const char* k) const {
    if (!p_[k].is_string()) badRequest(std::string("parameter '") + k + "' must be a string");
    return p_[k].get<std::string>();
  }
  uint64_t num(const char* k, uint64_t lo, uint64_t hi) const {
    const nlohmann::json& v = p_[k];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      badRequest(std::string("parameter '") + k + "' must be a non-negative integer");
    uint64_t n = v.get<uint64_t>();
    if (n < lo || n > hi)
      badRequest(std::string("parameter '") + k + "' = " + std::to_string(n) + " is outside " +
                 std::to_string(lo) + ".." + std::to_string(hi));
    return n;
  }
  bool boolean(const char* k) const {
    if (!p_[k].is_boolean()) badRequest(std::string("parameter '") + k + "' must be true or false");
    return p_[k].get<bool>();
  }
  IpAddr ip(const char* k) const {
    std::string s = str(k);
    auto a = IpAddr::parse(s);
    if (!a) badRequest(std::string("parameter '") + k + "': '" + s + "' is not an IP address");
    return *a;
  }

 private:
  const nlohmann::json& p_;
};

struct Cidr {
  IpAddr net;
  unsigned bits = 0;
  bool contains(const uint8_t* addr, uint8_t family) const {
    if (family != net.family) return false;
    unsigned full = bits / 8, rest = bits % 8;
    if (std::memcmp(addr, net.b.data(), full) != 0) return false;
    if (!rest) return true;
    uint8_t mask = uint8_t(0xFF << (8 - rest));
    return (addr[full] & mask) == (net.b[full] & mask);
  }
};

inline Cidr parseCidr(const std::string& what, const std::string& s) {
  Cidr c;
  size_t slash = s.find('/');
  auto a = IpAddr::parse(s.substr(0, slash));
  if (!a) badRequest(what + ": '" + s + "' is not an address or CIDR");
  c.net = *a;
  unsigned max = a->isV4() ? 32 : 128;
  c.bits = max;
  if (slash != std::string::npos) {
    std::string b = s.substr(slash + 1);
    if (b.empty() || b.size() > 3 || b.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(b) > max)
      badRequest(what + ": '" + s + "' has a bad prefix length (0.." + std::to_string(max) + ")");
    c.bits = unsigned(std::stoul(b));
  }
  return c;
}

// Protocols the dataplane reads ports of, besides TCP and UDP
// (common/packet_parser.cc, readPorts).
inline constexpr uint8_t kProtoSctp = 132;
inline constexpr uint8_t kProtoUdpLite = 136;

inline int parseProto(const std::string& s) {
  if (s == "tcp") return kProtoTcp;
  if (s == "udp") return kProtoUdp;
  if (s == "icmp") return kProtoIcmp;
  if (s == "icmpv6") return kProtoIcmpv6;
  if (s == "sctp") return kProtoSctp;
  if (!s.empty() && s.size() <= 3 && s.find_first_not_of("0123456789") == std::string::npos &&
      std::stoul(s) <= 255)
    return int(std::stoul(s));
  badRequest("proto: '" + s + "' is not tcp, udp, sctp, icmp, icmpv6 or a number 0..255");
}

// The parameters of `explain`: a 5-tuple, and the ingress port and VLAN the
// traffic classes look at (port unknown when not given; VLAN 0 = untagged).
struct ExplainQuery {
  L4Tuple tuple;
  std::optional<uint16_t> port;
  uint16_t vlan = 0;
};
inline ExplainQuery parseExplain(const nlohmann::json& p) {
  Params pr(p, {"src", "dst", "proto", "sport", "dport", "port", "vlan"});
  if (!pr.has("src") || !pr.has("dst") || !pr.has("proto"))
    badRequest("explain needs src, dst and proto");
  ExplainQuery q;
  L4Tuple& t = q.tuple;
  t.src = pr.ip("src");
  t.dst = pr.ip("dst");
  if (t.src.family != t.dst.family) badRequest("src and dst must be of one address family");
  t.proto = uint8_t(parseProto(pr.str("proto")));
  // The dataplane keys TCP, UDP, SCTP and UDP-Lite on their ports and ICMP
  // echo on its identifier (common/packet_parser.cc readPorts); every other
  // protocol on addresses only, so ports given with one would explain a key
  // no packet has.
  const bool ported = t.proto == kProtoTcp || t.proto == kProtoUdp || t.proto == kProtoSctp ||
                      t.proto == kProtoUdpLite || t.proto == kProtoIcmp || t.proto == kProtoIcmpv6;
  if (!ported && (pr.has("sport") || pr.has("dport")))
    badRequest("proto " + std::to_string(t.proto) +
               " has no ports: the dataplane keys it on addresses and protocol");
  if (pr.has("sport")) t.sport = uint16_t(pr.num("sport", 0, 65535));
  if (pr.has("dport")) t.dport = uint16_t(pr.num("dport", 0, 65535));
  if (pr.has("port")) q.port = uint16_t(pr.num("port", 0, 65535));
  if (pr.has("vlan")) q.vlan = uint16_t(pr.num("vlan", 0, 4095));
  return q;
}

// A flows cursor (decimal, as a previous reply gave it).
inline uint32_t parseCursor(const std::string& c) {
  if (c.empty() || c.size() > 10 || c.find_first_not_of("0123456789") != std::string::npos ||
      std::stoull(c) > UINT32_MAX)
    badRequest("cursor: '" + c + "' is not a cursor from a previous reply");
  return uint32_t(std::stoull(c));
}

}  // namespace gwlb::ctl
