// gwlbd configuration: YAML loader and validator. See docs/config.md.
//
// parseConfig() walks the YAML tree and reports shape and type errors (unknown
// keys, wrong node kinds, values that do not parse or do not fit), then calls
// validateConfig() for range and cross-field rules. Paths whose value failed to
// parse are remembered so that validateConfig() does not report them a second
// time (for example "required" on an address that was present but malformed).

#include "control/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <span>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "common/maglev.h"

namespace gwlb::ctl {

const char* toString(Stickiness s) {
  switch (s) {
    case Stickiness::kFiveTuple: return "5-tuple";
    case Stickiness::kThreeTuple: return "3-tuple";
    case Stickiness::kTwoTuple: return "2-tuple";
  }
  return "?";
}

const char* toString(GeneveFormat f) {
  switch (f) {
    case GeneveFormat::kAws: return "aws";
    case GeneveFormat::kEthernet: return "ethernet";
  }
  return "?";
}

namespace {

// ---------------------------------------------------------------------------
// Rules shared by the parser and the validator.

struct Range {
  uint64_t lo;
  uint64_t hi;
  bool hex = false;  // print bounds in hex
};

constexpr Range kWeightRange{0, 10000};
constexpr Range kVniRange{0, 0xFFFFFF, true};
constexpr Range kU64Range{0, std::numeric_limits<uint64_t>::max(), true};
constexpr Range kMaglevRange{251, 1000003};
constexpr Range kIdleRange{60, 6000};
constexpr Range kDrainRange{1, 3600};
constexpr Range kHoldRange{0, 3600};
constexpr Range kPercentRange{0, 100};
constexpr Range kMinCountRange{0, 4096};
constexpr size_t kMaxRegionItems = 16;  // listeners, sources per composite, groups per listener
constexpr Range kPortRange{0, 65535};
constexpr Range kMtuRange{576, 9216};
constexpr Range kIcmpRateRange{0, 100000};
constexpr Range kWorkersRange{1, 64};
constexpr Range kBurstRange{1, 256};
constexpr Range kFlowTableRange{1024, 1u << 27};
constexpr Range kMbufsRange{1024, 1u << 24};
constexpr Range kQueueRange{64, 16384};
constexpr Range kHealthPortRange{1, 65535};
// Health check interval and timeout: the union of what the products we match
// allow (seeds: interval 1-50 s; AWS GWLB: interval 5-300 s, timeout 2-120 s;
// Alibaba: timeout 1-300 s), down to 10 ms for labs and tests.
constexpr Range kIntervalMsRange{10, 300000};
constexpr Range kTimeoutMsRange{10, 300000};
constexpr Range kThresholdRange{2, 10};
constexpr size_t kMaxGroups = 64;
constexpr size_t kMaxServers = 4096;
constexpr size_t kMaxNameLen = 63;

// Every key the loader accepts, by section. The parser takes its allowed keys
// from here and configKeyPaths() lists them (the unit tests demand a bad-value
// case for each), so a key cannot be added without both.
using KeyList = std::span<const std::string_view>;
constexpr std::string_view kRootKeys[] = {
    "node",          "server_groups",  "dataplane",
    "eal",           "log_level",      "control",
    "metrics",       "health_aggregation_policies", "health_sources",
    "composite_health_checks", "listeners", "health_endpoint"};
constexpr std::string_view kNodeKeys[] = {"underlay_ip",   "underlay_mac", "gateway_mac",
                                          "underlay_port", "underlay_mtu", "icmp_rate_per_s",
                                          "flow_hash_secret", "ports", "ipv6_addresses"};
constexpr std::string_view kPortKeys[] = {"id", "role", "mac"};
constexpr std::string_view kGroupKeys[] = {
    "name",    "stickiness",   "geneve",             "maglev_table_size",
    "tcp_idle_timeout", "other_idle_timeout", "servers", "health_check",
    "when_all_unhealthy", "failover_mode", "connection_draining"};
constexpr std::string_view kGeneveKeys[] = {"format", "vni", "endpoint_id", "attachment_id"};
constexpr std::string_view kServerKeys[] = {"address", "weight", "mac"};
constexpr std::string_view kHealthCheckKeys[] = {
    "enabled",  "protocol", "port",    "path",    "domain",
    "http_codes", "interval", "timeout", "healthy_threshold", "unhealthy_threshold",
    "source",   "verify",   "ca_file", "jitter"};
constexpr std::string_view kDrainingKeys[] = {"enabled", "timeout"};
constexpr std::string_view kDataplaneKeys[] = {"workers", "burst",         "flow_table_size",
                                               "mbufs",   "rx_queue_size", "tx_queue_size"};
constexpr std::string_view kControlKeys[] = {"socket", "socket_mode", "socket_group"};
constexpr std::string_view kListenKeys[] = {"listen"};
constexpr std::string_view kPolicyKeys[] = {"name", "min_healthy_percent", "min_healthy_count"};
constexpr std::string_view kSourceKeys[] = {"name", "server_group", "policy"};
constexpr std::string_view kCompositeKeys[] = {"name", "sources", "destination", "dry_run"};
constexpr std::string_view kListenerKeys[] = {"name", "server_groups", "failback_hold",
                                              "when_all_unhealthy"};

struct Section {
  std::string_view path;  // "[]" stands for any list index
  KeyList keys;
};
constexpr Section kSections[] = {
    {"", kRootKeys},
    {"node", kNodeKeys},
    {"node.ports[]", kPortKeys},
    {"server_groups[]", kGroupKeys},
    {"server_groups[].geneve", kGeneveKeys},
    {"server_groups[].servers[]", kServerKeys},
    {"server_groups[].health_check", kHealthCheckKeys},
    {"server_groups[].connection_draining", kDrainingKeys},
    {"dataplane", kDataplaneKeys},
    {"control", kControlKeys},
    {"metrics", kListenKeys},
    {"health_aggregation_policies[]", kPolicyKeys},
    {"health_sources[]", kSourceKeys},
    {"composite_health_checks[]", kCompositeKeys},
    {"listeners[]", kListenerKeys},
    {"health_endpoint", kListenKeys},
};

// Largest lists the parser walks; longer ones are one error (a YAML alias can
// repeat a large node many times, so the text's size alone bounds nothing).
constexpr size_t kMaxEalArgs = 256;
constexpr size_t kMaxHttpCodes = 32;
constexpr size_t kMaxPolicies = 256;
constexpr size_t kMaxHealthSources = 1024;
constexpr size_t kMaxComposites = 256;
constexpr size_t kMaxPortEntries = 64;
constexpr size_t kMaxIpv6Addresses = 16;
// Errors reported at most; the rest are counted in one more line.
constexpr size_t kMaxErrors = 100;
// Largest config file read.
constexpr size_t kMaxConfigBytes = 8u << 20;

constexpr std::array<const char*, 7> kLogLevels = {"trace", "debug", "info",    "warn",
                                                   "error", "critical", "off"};

std::string hexStr(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string numStr(uint64_t v, bool hex) { return hex ? hexStr(v) : std::to_string(v); }

std::string rangeText(const Range& r) { return numStr(r.lo, r.hex) + ".." + numStr(r.hi, r.hex); }

// Length of the valid UTF-8 sequence at s[i], or 0 if there is none
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
size_t utf8Len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8Len(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

// Quotes a user-supplied value for a message, shortening very long ones. The
// result is always valid UTF-8: control characters and bytes that are not
// UTF-8 are escaped, and a character is never cut in half.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out = "'";
  size_t i = 0;
  while (i < s.size() && i < kMax) {
    const char c = s[i];
    const size_t n = utf8Len(s, i);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (n == 1 && static_cast<unsigned char>(c) < 0x20) out += '?';
    else if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  if (i < s.size()) out += "...";
  out += "'";
  return out;
}

std::string outOfRange(const std::string& quoted, const Range& r, const char* unit = "") {
  return quoted + " is out of range; allowed " + rangeText(r) + unit;
}

// Host name labels (RFC 1123): 1..63 characters, no leading or trailing '-',
// separated by single dots; one trailing dot (a fully qualified name) is
// allowed. Characters are checked by the caller.
bool domainLabelsOk(std::string_view d) {
  if (!d.empty() && d.back() == '.') d.remove_suffix(1);
  if (d.empty()) return false;
  size_t start = 0;
  while (start <= d.size()) {
    size_t end = d.find('.', start);
    if (end == std::string_view::npos) end = d.size();
    std::string_view label = d.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
      return false;
    start = end + 1;
  }
  return true;
}

bool validGroupName(const std::string& n) {
  if (n.empty() || n.size() > kMaxNameLen) return false;
  for (char c : n) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// A Unix group: a name as useradd allows it, or a number below 2^32 - 1.
bool validGroupRef(const std::string& g) {
  if (g.empty() || g.size() > 32) return false;
  if (g.find_first_not_of("0123456789") == std::string::npos)
    return g.size() <= 10 && std::stoull(g) < 0xFFFFFFFFull;
  if (g[0] == '-') return false;
  return std::all_of(g.begin(), g.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
  });
}

// Two listening addresses on one port collide: the same address, or a
// wildcard of the other's family, or the IPv6 wildcard (dual stack).
bool listenersOverlap(const IpAddr& a, const IpAddr& b) {
  auto wildcard = [](const IpAddr& x) { return x.b == std::array<uint8_t, 16>{}; };
  if (a == b) return true;
  if ((a.isV6() && wildcard(a)) || (b.isV6() && wildcard(b))) return true;
  return a.family == b.family && (wildcard(a) || wildcard(b));
}

// True for text shaped like a MAC address (six hex bytes with : or -).
bool looksLikeMac(const std::string& s) { return MacAddr::parse(s).has_value(); }

bool validLogLevel(const std::string& s) {
  return std::any_of(kLogLevels.begin(), kLogLevels.end(), [&](const char* l) { return s == l; });
}

std::string logLevelList() {
  std::string out;
  for (const char* l : kLogLevels) {
    if (!out.empty()) out += ", ";
    out += l;
  }
  return out;
}

// Smallest prime >= n, or 0 if there is none up to the allowed maximum.
uint32_t nextPrime(uint32_t n) {
  for (uint64_t p = n; p <= kMaglevRange.hi; ++p) {
    if (isPrime(static_cast<uint32_t>(p))) return static_cast<uint32_t>(p);
  }
  return 0;
}

using AddrKey = std::pair<uint8_t, std::array<uint8_t, 16>>;

// ---------------------------------------------------------------------------
// Validator.

// Kinds of named things whose names are not all known because part of them
// failed to parse: references to them are not checked (the parse error says
// what is wrong; "no such group" as well would only mislead).
struct UnknownNames {
  bool groups = false, policies = false, sources = false, listeners = false;
};

class Validator {
 public:
  explicit Validator(std::vector<ConfigError>& e, UnknownNames u = {}) : errs_(e), unknown_(u) {}

  void run(const Config& c) {
    node(c.node);
    groups(c);
    dataplane(c.dataplane);
    controlAndMetrics(c);
    regions(c);
    if (!validLogLevel(c.log_level)) {
      add("log_level", quote(c.log_level) + " is not a log level; allowed: " + logLevelList());
    }
  }

 private:
  void add(std::string path, std::string msg) {
    errs_.push_back({std::move(path), std::move(msg)});
  }

  void range(const std::string& path, uint64_t v, const Range& r, const char* unit = "") {
    if (v < r.lo || v > r.hi) add(path, outOfRange(quote(numStr(v, r.hex)), r, unit));
  }

  void unicastMac(const std::string& path, const MacAddr& m, bool required) {
    if (m.isZero()) {
      add(path, std::string(required ? "is required: " : "") +
                    "'00:00:00:00:00:00' is not usable; set a non-zero unicast MAC address");
    } else if (m.b[0] & 1) {
      add(path, quote(m.str()) + " is a multicast/broadcast MAC address; it must be unicast");
    }
  }

  // Checks an address that must be a usable IPv4 unicast address. Returns
  // false when it is unset or not IPv4 (already reported).
  bool ipv4Unicast(const std::string& path, const IpAddr& a, const char* what) {
    if (a.family == 0) {
      add(path, std::string("is required: set ") + what);
      return false;
    }
    if (a.isV6()) {
      add(path, quote(a.str()) + " is IPv6; IPv6 underlay is not supported yet, use an IPv4 address");
      return false;
    }
    if (!a.isV4()) {
      add(path, "has an invalid address family " + std::to_string(a.family));
      return false;
    }
    uint32_t v = a.v4HostOrder();
    if (v == 0) {
      add(path, "'0.0.0.0' is not a usable address; use a unicast IPv4 address");
    } else if (v == 0xFFFFFFFFu) {
      add(path, "'255.255.255.255' is the broadcast address; use a unicast IPv4 address");
    } else if ((v >> 28) == 0xE) {
      add(path, quote(a.str()) + " is a multicast address; use a unicast IPv4 address");
    }
    return true;
  }

  void node(const NodeConfig& n) {
    ipv4Unicast("node.underlay_ip", n.underlay_ip, "this node's IPv4 address on the underlay");
    unicastMac("node.underlay_mac", n.underlay_mac, true);
    if (n.gateway_mac) unicastMac("node.gateway_mac", *n.gateway_mac, false);
    range("node.underlay_mtu", n.underlay_mtu, kMtuRange);
    range("node.icmp_rate_per_s", n.icmp_rate_per_s, kIcmpRateRange);
    const std::string& k = n.flow_hash_secret;
    if (!k.empty() && k[0] != '/') {
      // Never echo the value: it is a secret.
      bool hex = k.size() == 32 && std::all_of(k.begin(), k.end(), [](char ch) {
        return std::isxdigit(static_cast<unsigned char>(ch));
      });
      if (!hex)
        add("node.flow_hash_secret",
            "must be 32 hexadecimal digits (128 bits) or the absolute path of a file holding "
            "them; got " + std::to_string(k.size()) + " characters (value not shown)");
    } else if (k.size() > 4096) {
      add("node.flow_hash_secret", "path longer than 4096 bytes");
    }
    ports(n);
    ipv6Addresses(n);
  }

  void ports(const NodeConfig& n) {
    if (n.ports.size() > kMaxPortEntries)
      add("node.ports", "has " + std::to_string(n.ports.size()) + " ports; allowed at most " +
                            std::to_string(kMaxPortEntries));
    std::map<uint16_t, size_t> seen;
    for (size_t i = 0; i < n.ports.size(); ++i) {
      const PortConfig& pc = n.ports[i];
      const std::string p = "node.ports[" + std::to_string(i) + "]";
      auto [it, inserted] = seen.emplace(pc.id, i);
      if (!inserted) {
        add(p + ".id", quote(std::to_string(pc.id)) + " is already node.ports[" +
                           std::to_string(it->second) + "]; list each port once");
        continue;
      }
      const bool underlay = pc.id == n.underlay_port;
      if (underlay && pc.role == PortRole::kRouter)
        add(p + ".role", "port " + std::to_string(pc.id) +
                             " is node.underlay_port: the appliances' Geneve comes back there, so "
                             "its role must be appliance or both");
      if (pc.mac) {
        unicastMac(p + ".mac", *pc.mac, false);
        bool underlay_mac_ok = !n.underlay_mac.isZero() && !(n.underlay_mac.b[0] & 1);
        if (underlay && underlay_mac_ok && !(*pc.mac == n.underlay_mac))
          add(p + ".mac", quote(pc.mac->str()) + ": port " + std::to_string(pc.id) +
                              " is node.underlay_port, whose MAC is node.underlay_mac (" +
                              n.underlay_mac.str() + "); leave mac out");
      }
    }
  }

  void ipv6Addresses(const NodeConfig& n) {
    if (n.ipv6_addresses.size() > kMaxIpv6Addresses)
      add("node.ipv6_addresses", "has " + std::to_string(n.ipv6_addresses.size()) +
                                     " addresses; allowed at most " +
                                     std::to_string(kMaxIpv6Addresses));
    for (size_t i = 0; i < n.ipv6_addresses.size(); ++i) {
      const IpAddr& a = n.ipv6_addresses[i];
      const std::string p = "node.ipv6_addresses[" + std::to_string(i) + "]";
      if (!a.isV6()) {
        add(p, quote(a.str()) + " is not IPv6; list this node's IPv6 addresses (IPv4: node.underlay_ip)");
      } else if (a.b[0] == 0xff) {
        add(p, quote(a.str()) + " is a multicast address; use a unicast IPv6 address");
      } else if (a.b == std::array<uint8_t, 16>{}) {
        add(p, "'::' is not a usable address; use a unicast IPv6 address");
      } else {
        for (size_t j = 0; j < i; ++j)
          if (n.ipv6_addresses[j] == a) {
            add(p, quote(a.str()) + " is already node.ipv6_addresses[" + std::to_string(j) +
                       "]; list each address once");
            break;
          }
      }
    }
  }

  void groups(const Config& c) {
    if (c.server_groups.empty()) {
      add("server_groups", "at least one server group is required");
    } else if (c.server_groups.size() > kMaxGroups) {
      add("server_groups", "has " + std::to_string(c.server_groups.size()) +
                               " groups; allowed 1.." + std::to_string(kMaxGroups));
    }

    std::map<std::string, size_t> names;
    // address -> (group index, server index)
    std::map<AddrKey, std::pair<size_t, size_t>> addrs;

    for (size_t gi = 0; gi < c.server_groups.size(); ++gi) {
      const ServerGroupConfig& g = c.server_groups[gi];
      const std::string gp = "server_groups[" + std::to_string(gi) + "]";

      if (g.name.empty()) {
        add(gp + ".name", "is required: a name of 1..63 characters from A-Z a-z 0-9 _ . -");
      } else if (!validGroupName(g.name)) {
        add(gp + ".name", quote(g.name) +
                              " is not a valid group name; use 1..63 characters from A-Z a-z "
                              "0-9 _ . -");
      } else {
        auto [it, inserted] = names.emplace(g.name, gi);
        if (!inserted) {
          add(gp + ".name", quote(g.name) + " is already the name of server_groups[" +
                                std::to_string(it->second) + "]; group names must be unique");
        }
      }

      range(gp + ".geneve.vni", g.geneve.vni, kVniRange);
      health(gp, g.health_check);
      range(gp + ".tcp_idle_timeout", g.tcp_idle_timeout_s, kIdleRange, " seconds");
      range(gp + ".other_idle_timeout", g.other_idle_timeout_s, kIdleRange, " seconds");
      range(gp + ".connection_draining.timeout", g.connection_draining.timeout_s, kDrainRange,
            " seconds");

      const std::string mp = gp + ".maglev_table_size";
      const uint32_t ts = g.maglev_table_size;
      if (ts < kMaglevRange.lo || ts > kMaglevRange.hi) {
        add(mp, quote(std::to_string(ts)) + " is out of range; allowed a prime in " +
                    rangeText(kMaglevRange));
      } else if (!isPrime(ts)) {
        std::string msg = quote(std::to_string(ts)) + " is not prime; the table size must be a prime in " +
                          rangeText(kMaglevRange);
        if (uint32_t p = nextPrime(ts)) msg += " (next prime: " + std::to_string(p) + ")";
        add(mp, msg);
      } else if (ts <= g.servers.size()) {
        add(mp, quote(std::to_string(ts)) + " must be greater than the number of servers (" +
                    std::to_string(g.servers.size()) + "); at least 100 times as many is advised");
      }

      const std::string sp = gp + ".servers";
      if (g.servers.empty()) {
        add(sp, "has no servers; allowed 1.." + std::to_string(kMaxServers));
      } else if (g.servers.size() > kMaxServers) {
        add(sp, "has " + std::to_string(g.servers.size()) + " servers; allowed 1.." +
                    std::to_string(kMaxServers));
      }

      bool any_weight = false;
      for (size_t si = 0; si < g.servers.size(); ++si) {
        const ServerConfig& s = g.servers[si];
        const std::string p = sp + "[" + std::to_string(si) + "]";
        if (s.weight > 0) any_weight = true;
        range(p + ".weight", s.weight, kWeightRange);
        if (s.mac) unicastMac(p + ".mac", *s.mac, false);

        const std::string ap = p + ".address";
        if (!ipv4Unicast(ap, s.address, "the appliance's IPv4 address")) continue;
        if (s.address == c.node.underlay_ip) {
          add(ap, quote(s.address.str()) +
                      " is node.underlay_ip; a server cannot have this node's own address");
          continue;
        }
        auto [it, inserted] = addrs.emplace(AddrKey{s.address.family, s.address.b},
                                            std::make_pair(gi, si));
        if (inserted) continue;
        const auto [ogi, osi] = it->second;
        const std::string other =
            "server_groups[" + std::to_string(ogi) + "].servers[" + std::to_string(osi) + "]";
        if (ogi == gi) {
          add(ap, quote(s.address.str()) + " is listed twice in this group (also " + other +
                      "); server addresses must be unique");
        } else {
          add(ap, quote(s.address.str()) + " is already in server group " +
                      quote(c.server_groups[ogi].name) + " (" + other +
                      "); an appliance address can be in at most one server group");
        }
      }
      if (!g.servers.empty() && !any_weight) {
        add(sp, "every server has weight 0; at least one server needs weight > 0");
      }
    }
  }

  void controlAndMetrics(const Config& c) {
    const std::string& s = c.control.socket;
    if (s.empty() || s[0] != '/' || s.size() > 107 || s.back() == '/')
      add("control.socket", quote(s) + " is not an absolute socket path of at most 107 bytes");
    if (c.control.socket_mode > 0777)
      add("control.socket_mode", std::to_string(c.control.socket_mode) + " is not a file mode (0..0777)");
    if (!c.control.socket_group.empty() && !validGroupRef(c.control.socket_group))
      add("control.socket_group", quote(c.control.socket_group) + " is not a group name or number");
    IpAddr a, ha;
    uint16_t port = 0, hport = 0;
    if (!c.metrics.listen.empty() && !parseListen(c.metrics.listen, a, port))
      add("metrics.listen", quote(c.metrics.listen) +
                                " is not address:port; use e.g. 127.0.0.1:9100 or [::1]:9100");
    else if (!c.metrics.listen.empty() && !c.health_endpoint.listen.empty() &&
             parseListen(c.health_endpoint.listen, ha, hport) && hport == port &&
             listenersOverlap(a, ha))
      add("health_endpoint.listen", quote(c.health_endpoint.listen) + " overlaps metrics.listen " +
                                        quote(c.metrics.listen) +
                                        "; the two HTTP listeners need different ports");
    size_t total = 0;
    for (const auto& g : c.server_groups) total += g.servers.size();
    if (total > kMaxServersTotal)
      add("server_groups", std::to_string(total) + " servers in all groups; allowed at most " +
                               std::to_string(kMaxServersTotal));
  }

  // Names of one kind: valid and unique. Returns name -> index.
  template <typename T>
  std::map<std::string, size_t> names(const std::vector<T>& v, const std::string& key,
                                      const char* what) {
    std::map<std::string, size_t> m;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string np = key + "[" + std::to_string(i) + "].name";
      if (v[i].name.empty()) {
        add(np, std::string("is required: a ") + what + " name of 1..63 characters from A-Z a-z 0-9 _ . -");
      } else if (!validGroupName(v[i].name)) {
        add(np, quote(v[i].name) + " is not a valid name; use 1..63 characters from A-Z a-z 0-9 _ . -");
      } else if (!m.emplace(v[i].name, i).second) {
        add(np, quote(v[i].name) + " is already the name of " + key + "[" +
                    std::to_string(m[v[i].name]) + "]; names must be unique");
      }
    }
    return m;
  }

  // Aggregated health and listeners (DOMAIN.md section 4): every reference
  // resolves in this config; a composite is never a source of another.
  void regions(const Config& c) {
    std::map<std::string, size_t> groups;
    for (size_t i = 0; i < c.server_groups.size(); ++i) groups.emplace(c.server_groups[i].name, i);
    auto policies = names(c.health_aggregation_policies, "health_aggregation_policies", "policy");
    auto sources = names(c.health_sources, "health_sources", "health source");
    auto composites = names(c.composite_health_checks, "composite_health_checks", "composite health check");
    auto listeners = names(c.listeners, "listeners", "listener");
    for (size_t i = 0; i < c.health_aggregation_policies.size(); ++i) {
      const auto& p = c.health_aggregation_policies[i];
      const std::string pp = "health_aggregation_policies[" + std::to_string(i) + "]";
      range(pp + ".min_healthy_percent", p.min_healthy_percent, kPercentRange, " %");
      range(pp + ".min_healthy_count", p.min_healthy_count, kMinCountRange);
    }
    for (size_t i = 0; i < c.health_sources.size(); ++i) {
      const auto& hs = c.health_sources[i];
      const std::string sp = "health_sources[" + std::to_string(i) + "]";
      if (composites.count(hs.name))
        add(sp + ".name", quote(hs.name) + " is also the name of a composite health check; "
                                        "sources and composites need distinct names");
      if (hs.server_group.empty())
        add(sp + ".server_group", "is required: the name of a server group");
      else if (!groups.count(hs.server_group) && !unknown_.groups)
        add(sp + ".server_group", quote(hs.server_group) + " is not a server group in this config");
      if (!hs.policy.empty() && !policies.count(hs.policy) && !unknown_.policies)
        add(sp + ".policy", quote(hs.policy) + " is not a policy in health_aggregation_policies");
    }
    for (size_t i = 0; i < c.composite_health_checks.size(); ++i) {
      const auto& ch = c.composite_health_checks[i];
      const std::string cp = "composite_health_checks[" + std::to_string(i) + "]";
      if (ch.sources.empty() || ch.sources.size() > kMaxRegionItems)
        add(cp + ".sources", "needs 1.." + std::to_string(kMaxRegionItems) + " health source names");
      std::set<std::string> seen;
      for (size_t j = 0; j < ch.sources.size(); ++j) {
        const std::string& n = ch.sources[j];
        const std::string jp = cp + ".sources[" + std::to_string(j) + "]";
        if (composites.count(n))
          add(jp, quote(n) + " is a composite health check; a composite's result cannot be a "
                             "source of another composite");
        else if (!sources.count(n)) {
          if (!unknown_.sources) add(jp, quote(n) + " is not a health source in health_sources");
        } else if (!seen.insert(n).second) {
          add(jp, quote(n) + " is listed twice");
        }
      }
      if (ch.destination.empty())
        add(cp + ".destination", "is required: the name of a listener");
      else if (!listeners.count(ch.destination) && !unknown_.listeners)
        add(cp + ".destination", quote(ch.destination) + " is not a listener in listeners");
    }
    if (c.listeners.size() > kMaxRegionItems)
      add("listeners", "has " + std::to_string(c.listeners.size()) + " listeners; allowed at most " +
                           std::to_string(kMaxRegionItems));
    std::map<std::string, std::string> owner;  // group -> listener
    for (size_t i = 0; i < c.listeners.size(); ++i) {
      const auto& l = c.listeners[i];
      const std::string lp = "listeners[" + std::to_string(i) + "]";
      range(lp + ".failback_hold", l.failback_hold_s, kHoldRange, " seconds");
      if (l.server_groups.empty() || l.server_groups.size() > kMaxRegionItems)
        add(lp + ".server_groups", "needs 1.." + std::to_string(kMaxRegionItems) +
                                       " server group names, in order of preference");
      const ServerGroupConfig* first = nullptr;
      for (size_t j = 0; j < l.server_groups.size(); ++j) {
        const std::string& g = l.server_groups[j];
        const std::string jp = lp + ".server_groups[" + std::to_string(j) + "]";
        auto gi = groups.find(g);
        if (gi == groups.end()) {
          if (!unknown_.groups) add(jp, quote(g) + " is not a server group in this config");
          continue;
        }
        auto [it, fresh] = owner.emplace(g, l.name);
        if (!fresh) {
          add(jp, quote(g) + (it->second == l.name ? " is listed twice"
                                                   : " already belongs to listener " + quote(it->second)) +
                      "; a server group serves at most one listener");
          continue;
        }
        const ServerGroupConfig& gc = c.server_groups[gi->second];
        if (!first) {
          first = &gc;
        } else if (gc.stickiness != first->stickiness) {
          add(jp, quote(g) + " has stickiness " + toString(gc.stickiness) + " but " +
                      quote(first->name) + " has " + toString(first->stickiness) +
                      "; the groups of one listener must share their stickiness (a flow keeps "
                      "its key when it fails over)");
        }
      }
    }
    IpAddr a;
    uint16_t port;
    if (!c.health_endpoint.listen.empty() && !parseListen(c.health_endpoint.listen, a, port))
      add("health_endpoint.listen", quote(c.health_endpoint.listen) +
                                        " is not address:port; use e.g. 127.0.0.1:8081 or [::1]:8081");
  }

  void health(const std::string& gp, const HealthCheckConfig& h) {
    const std::string hp = gp + ".health_check";
    if (!h.configured) return;
    range(hp + ".port", h.port, kHealthPortRange);
    range(hp + ".healthy_threshold", h.healthy_threshold, kThresholdRange);
    range(hp + ".unhealthy_threshold", h.unhealthy_threshold, kThresholdRange);
    auto msRange = [&](const char* key, uint32_t v, const Range& r) {
      if (v < r.lo || v > r.hi)
        add(hp + key, std::to_string(v) + " ms is out of range; allowed " + std::to_string(r.lo) +
                          " ms to " + std::to_string(r.hi / 1000) + " s");
    };
    msRange(".interval", h.interval_ms, kIntervalMsRange);
    msRange(".timeout", h.timeout_ms, kTimeoutMsRange);
    // verify and ca_file only mean something to an https check: elsewhere
    // they would be silently ignored.
    if (h.protocol != HealthProtocol::kHttps) {
      const char* proto = h.protocol == HealthProtocol::kTcp ? "tcp" : "http";
      if (h.verify)
        add(hp + ".verify", std::string("applies to https health checks only; protocol is ") + proto);
      else if (!h.ca_file.empty())
        add(hp + ".ca_file", std::string("applies to https health checks only; protocol is ") + proto);
    } else if (!h.verify && !h.ca_file.empty()) {
      add(hp + ".ca_file", "is only used to verify the certificate, but verify is false: set "
                           "verify: true (or leave verify out: a ca_file implies it), or remove "
                           "ca_file");
    }
    if (h.protocol != HealthProtocol::kTcp) {
      static const std::string kPathChars =
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-/.%?#&_;~!()*[]@$^:',+";
      if (h.path.empty() || h.path.size() > 80 || h.path[0] != '/' ||
          h.path.find_first_not_of(kPathChars) != std::string::npos)
        add(hp + ".path", quote(h.path) +
                              " is not a health check path: 1..80 characters, starting with '/', "
                              "from letters, digits and - / . % ? # & _ ; ~ ! ( ) * [ ] @ $ ^ : ' , +");
      if (!h.domain.empty() &&
          (h.domain.size() > 80 ||
           h.domain.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") !=
               std::string::npos))
        add(hp + ".domain", quote(h.domain) + " is not a domain: 1..80 characters from A-Z a-z 0-9 . -");
      else if (!h.domain.empty() && !domainLabelsOk(h.domain))
        add(hp + ".domain", quote(h.domain) +
                                " is not a domain: labels of 1..63 characters separated by single "
                                "dots (one trailing dot allowed), not starting or ending with '-'");
      if (h.http_codes.empty()) add(hp + ".http_codes", "needs at least one code class or range");
      for (size_t i = 0; i < h.http_codes.size(); ++i) {
        const std::string& c = h.http_codes[i];
        bool cls = c.size() == 8 && c.rfind("http_", 0) == 0 && c[5] >= '2' && c[5] <= '5' &&
                   c.compare(6, 2, "xx") == 0;
        bool num = false;
        size_t dash = c.find('-');
        auto code = [](const std::string& t) {
          return t.size() == 3 && t.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoi(t) >= 100 && std::stoi(t) <= 599;
        };
        if (dash == std::string::npos) num = code(c);
        else num = code(c.substr(0, dash)) && code(c.substr(dash + 1)) &&
                   std::stoi(c.substr(0, dash)) <= std::stoi(c.substr(dash + 1));
        if (!cls && !num)
          add(hp + ".http_codes[" + std::to_string(i) + "]",
              quote(c) + " is not http_2xx, http_3xx, http_4xx, http_5xx, a code (200) or a range (200-299)");
      }
      if (h.protocol == HealthProtocol::kHttps && h.verify && h.ca_file.empty())
        add(hp + ".ca_file", "is required when verify is true");
    }
    // Appliances are IPv4: a probe from an IPv6 source could never reach one.
    if (h.source) ipv4Unicast(hp + ".source", *h.source, "an IPv4 address of this host");
  }

  void dataplane(const DataplaneConfig& d) {
    range("dataplane.workers", d.workers, kWorkersRange);
    range("dataplane.burst", d.burst, kBurstRange);
    range("dataplane.flow_table_size", d.flow_table_size, kFlowTableRange);
    range("dataplane.mbufs", d.mbufs, kMbufsRange);
    range("dataplane.rx_queue_size", d.rx_queue_size, kQueueRange);
    range("dataplane.tx_queue_size", d.tx_queue_size, kQueueRange);
  }

  std::vector<ConfigError>& errs_;
  UnknownNames unknown_;
};

// ---------------------------------------------------------------------------
// Parser: YAML tree -> Config, reporting shape and type errors.

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

const char* kindOf(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "no value";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

std::string join(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

using Keys = std::initializer_list<std::string_view>;

// How to write the list limit into an error.
std::string tooMany(size_t n, size_t max, const std::string& what, bool needs_one) {
  return "has " + std::to_string(n) + " " + what + "; allowed " +
         (needs_one ? "1.." : "at most ") + std::to_string(max);
}

class Parser {
 public:
  explicit Parser(std::vector<ConfigError>& e) : errs_(e) {}

  void root(const YAML::Node& n, Config& c) {
    if (!n.IsMap()) {
      fail("", std::string("the top level must be a map with keys node, server_groups, ...; got ") +
                   kindOf(n));
      return;
    }
    walkMap(n, "", kRootKeys, {"node", "server_groups"},
            [&](std::string_view k, const YAML::Node& v, const std::string& p) {
              if (k == "node") node(v, p, c.node);
              else if (k == "server_groups") groups(v, p, c.server_groups);
              else if (k == "dataplane") dataplane(v, p, c.dataplane);
              else if (k == "eal") eal(v, p, c.eal_args);
              else if (k == "log_level") str(v, p, "a log level", c.log_level);
              else if (k == "control") control(v, p, c.control);
              else if (k == "metrics") metrics(v, p, c.metrics);
              else if (k == "health_aggregation_policies") policies(v, p, c.health_aggregation_policies);
              else if (k == "health_sources") healthSources(v, p, c.health_sources);
              else if (k == "composite_health_checks") composites(v, p, c.composite_health_checks);
              else if (k == "listeners") listeners(v, p, c.listeners);
              else if (k == "health_endpoint")
                walkMap(v, p, kListenKeys, {},
                        [&](std::string_view hk, const YAML::Node& hv, const std::string& hp) {
                          if (hk == "listen")
                            str(hv, hp, "an address:port like 127.0.0.1:8081", c.health_endpoint.listen);
                        });
            });
  }

  // A list whose every item is a map parsed by `item`.
  template <typename T, typename F>
  void items(const YAML::Node& n, const std::string& path, const std::string& what, size_t max,
             std::vector<T>& out, F item) {
    if (!list(n, path, what, max)) return;
    if (n.IsNull()) return;
    for (size_t i = 0; i < n.size(); ++i) {
      out.emplace_back();
      noteLine(index(path, i), n[i]);
      item(n[i], index(path, i), out.back());
    }
  }

  void names(const YAML::Node& n, const std::string& path, const std::string& what,
             std::vector<std::string>& out) {
    if (!list(n, path, what, kMaxRegionItems, "names")) return;
    if (n.IsNull()) return;
    for (size_t i = 0; i < n.size(); ++i) {
      out.emplace_back();
      str(n[i], index(path, i), "a name", out.back());
    }
  }

  void policies(const YAML::Node& n, const std::string& path,
                std::vector<AggregationPolicyConfig>& out) {
    items(n, path, "a list of policies", kMaxPolicies, out,
          [&](const YAML::Node& m, const std::string& ip, AggregationPolicyConfig& pc) {
            walkMap(m, ip, kPolicyKeys, {"name"},
                    [&](std::string_view k, const YAML::Node& v, const std::string& p) {
                      if (k == "name") str(v, p, "a policy name", pc.name);
                      else if (k == "min_healthy_percent")
                        integer(v, p, kPercentRange, pc.min_healthy_percent);
                      else if (k == "min_healthy_count")
                        integer(v, p, kMinCountRange, pc.min_healthy_count);
                    });
          });
  }

  void healthSources(const YAML::Node& n, const std::string& path,
                     std::vector<HealthSourceConfig>& out) {
    items(n, path, "a list of health sources", kMaxHealthSources, out,
          [&](const YAML::Node& m, const std::string& ip, HealthSourceConfig& hs) {
            walkMap(m, ip, kSourceKeys, {"name", "server_group"},
                    [&](std::string_view k, const YAML::Node& v, const std::string& p) {
                      if (k == "name") str(v, p, "a health source name", hs.name);
                      else if (k == "server_group") str(v, p, "a server group name", hs.server_group);
                      else if (k == "policy") str(v, p, "a policy name", hs.policy);
                    });
          });
  }

  void composites(const YAML::Node& n, const std::string& path,
                  std::vector<CompositeHealthCheckConfig>& out) {
    items(n, path, "a list of composite health checks", kMaxComposites, out,
          [&](const YAML::Node& m, const std::string& ip, CompositeHealthCheckConfig& ch) {
            walkMap(m, ip, kCompositeKeys, {"name", "sources", "destination"},
                    [&](std::string_view k, const YAML::Node& v, const std::string& p) {
                      if (k == "name") str(v, p, "a composite name", ch.name);
                      else if (k == "sources") names(v, p, "a list of health source names", ch.sources);
                      else if (k == "destination") str(v, p, "a listener name", ch.destination);
                      else if (k == "dry_run") boolean(v, p, ch.dry_run);
                    });
          });
  }

  void listeners(const YAML::Node& n, const std::string& path, std::vector<ListenerConfig>& out) {
    items(n, path, "a list of listeners", kMaxRegionItems, out,
          [&](const YAML::Node& m, const std::string& ip, ListenerConfig& l) {
            walkMap(m, ip, kListenerKeys, {"name", "server_groups"},
                    [&](std::string_view k, const YAML::Node& v, const std::string& p) {
                      if (k == "name") str(v, p, "a listener name", l.name);
                      else if (k == "server_groups")
                        names(v, p, "a list of server group names", l.server_groups);
                      else if (k == "failback_hold") duration(v, p, l.failback_hold_s, kHoldRange);
                      else if (k == "when_all_unhealthy") {
                        std::string w;
                        size_t before = errs_.size();
                        str(v, p, "fail_open or drop", w);
                        if (errs_.size() != before) return;
                        if (w == "fail_open") l.when_all_unhealthy = WhenAllUnhealthy::kFailOpen;
                        else if (w == "drop") l.when_all_unhealthy = WhenAllUnhealthy::kDrop;
                        else fail(p, quote(w) + " is not allowed; use fail_open or drop");
                      }
                    });
          });
  }

  void control(const YAML::Node& n, const std::string& path, ControlConfig& cc) {
    walkMap(n, path, kControlKeys, {},
            [&](std::string_view k, const YAML::Node& v, const std::string& p) {
              if (k == "socket") {
                str(v, p, "an absolute socket path", cc.socket);
              } else if (k == "socket_mode") {
                std::string m;
                size_t before = errs_.size();
                str(v, p, "an octal file mode like 0660", m);
                if (errs_.size() != before) return;
                bool octal = !m.empty() && m.size() <= 4 &&
                             std::all_of(m.begin(), m.end(), [](char ch) { return ch >= '0' && ch <= '7'; });
                if (!octal) {
                  fail(p, quote(m) + " is not an octal file mode; use e.g. 0660 (0..0777)");
                  return;
                }
                cc.socket_mode = uint32_t(std::stoul(m, nullptr, 8));
              } else if (k == "socket_group") {
                std::string g;
                size_t before = errs_.size();
                str(v, p, "a group name or number", g);
                if (errs_.size() != before) return;
                if (!validGroupRef(g))
                  fail(p, quote(g) + " is not a group name (1..32 characters from A-Z a-z 0-9 _ . -, "
                                     "not starting with -) or a group number");
                else
                  cc.socket_group = g;
              }
            });
  }

  void metrics(const YAML::Node& n, const std::string& path, MetricsConfig& mc) {
    walkMap(n, path, kListenKeys, {},
            [&](std::string_view k, const YAML::Node& v, const std::string& p) {
              if (k == "listen") str(v, p, "an address:port like 127.0.0.1:9100", mc.listen);
            });
  }

  // Position of `path` in the document, or of its nearest ancestor that has
  // one; (-1, -1) for the document itself.
  std::pair<int, int> positionOf(std::string path) const {
    while (!path.empty()) {
      auto it = lines_.find(path);
      if (it != lines_.end()) return it->second;
      size_t cut = path.find_last_of(".[");
      path.resize(cut == std::string::npos ? 0 : cut);
    }
    return {-1, -1};
  }

  // Sorts errors[from..] into document order (stable for equal lines).
  void sortByLine(std::vector<ConfigError>& errors, size_t from) const {
    std::vector<std::pair<std::pair<int, int>, ConfigError>> keyed;
    keyed.reserve(errors.size() - from);
    for (size_t i = from; i < errors.size(); ++i) {
      keyed.emplace_back(positionOf(errors[i].path), std::move(errors[i]));
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < keyed.size(); ++i) errors[from + i] = std::move(keyed[i].second);
  }

  // Which kinds of names are incomplete: their list, an item or an item's
  // name failed to parse.
  UnknownNames unknownNames() const {
    auto failed = [&](const std::string& kind) {
      for (const std::string& s : suppressed_) {
        if (s.empty() || s == kind) return true;
        if (s.rfind(kind + "[", 0) != 0) continue;
        std::string rest = s.substr(s.find(']') + 1);
        if (rest.empty() || rest == ".name") return true;
      }
      return false;
    };
    return {failed("server_groups"), failed("health_aggregation_policies"),
            failed("health_sources"), failed("listeners")};
  }

  // True if `path` is, or is inside, a value that already failed to parse.
  bool suppressed(const std::string& path) const {
    for (const std::string& s : suppressed_) {
      if (s.empty()) return true;
      if (path.size() < s.size() || path.compare(0, s.size(), s) != 0) continue;
      if (path.size() == s.size() || path[s.size()] == '.' || path[s.size()] == '[') return true;
    }
    return false;
  }

 private:
  using Handler =
      std::function<void(std::string_view key, const YAML::Node& value, const std::string& path)>;

  void error(std::string path, std::string msg) {
    errs_.push_back({std::move(path), std::move(msg)});
  }
  void fail(const std::string& path, std::string msg) {
    error(path, std::move(msg));
    suppressed_.push_back(path);
  }

  // Walks a map section: rejects non-map values, non-string, duplicate and
  // unknown keys; reports missing required keys. A null value is an empty map.
  void walkMap(const YAML::Node& n, const std::string& path, KeyList allowed, Keys required,
               const Handler& h) {
    if (!n.IsNull() && !n.IsMap()) {
      std::string keys;
      for (std::string_view k : allowed) keys += (keys.empty() ? "" : ", ") + std::string(k);
      fail(path, std::string("expected a map with keys ") + keys + "; got " + kindOf(n) +
                     (n.IsScalar() ? " " + quote(n.Scalar()) : std::string()));
      return;
    }
    std::set<std::string, std::less<>> seen;
    if (n.IsMap()) {
      for (const auto& kv : n) {
        const YAML::Node& key = kv.first;
        if (!key.IsScalar()) {
          error(path, std::string("map keys must be plain strings; got ") + kindOf(key));
          continue;
        }
        const std::string& k = key.Scalar();
        if (!validUtf8(k)) {  // never part of a key path
          error(path, "key " + quote(k) + " is not valid UTF-8");
          continue;
        }
        const std::string kp = join(path, k);
        if (!seen.insert(k).second) {
          fail(kp, "duplicate key " + quote(k));
          continue;
        }
        noteLine(kp, key);
        if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
          error(kp, unknownKey(k, allowed));
          continue;
        }
        h(k, kv.second, kp);
      }
    }
    for (std::string_view r : required) {
      if (seen.find(r) == seen.end()) {
        fail(join(path, r), "required key is missing");
      }
    }
  }

  static std::string unknownKey(const std::string& k, KeyList allowed) {
    std::string msg = "unknown key " + quote(k);
    std::string_view best;
    size_t best_d = 3;  // suggest only close matches
    for (std::string_view a : allowed) {
      size_t d = editDistance(k, a);
      if (d < best_d) {
        best_d = d;
        best = a;
      }
    }
    if (!best.empty()) return msg + "; did you mean '" + std::string(best) + "'?";
    msg += "; allowed keys: ";
    bool first = true;
    for (std::string_view a : allowed) {
      if (!first) msg += ", ";
      msg += a;
      first = false;
    }
    return msg;
  }

  // Returns the scalar text, or nullptr after reporting a wrong node kind.
  const std::string* scalar(const YAML::Node& n, const std::string& path, const std::string& what) {
    if (n.IsScalar()) {
      if (validUtf8(n.Scalar())) return &n.Scalar();
      fail(path, quote(n.Scalar()) + " is not valid UTF-8 text; expected " + what);
      return nullptr;
    }
    if (n.IsNull()) {
      fail(path, "has no value; expected " + what);
    } else {
      fail(path, "expected " + what + ", got " + kindOf(n));
    }
    return nullptr;
  }

  // Parses decimal or 0x-hex text. Returns false with `msg` set on error.
  static bool parseUnsigned(const std::string& s, const Range& r, uint64_t& v, std::string& msg) {
    const std::string expect = "expected an integer in " + rangeText(r) + " (decimal or 0x hex)";
    std::string_view t = s;
    if (!t.empty() && t[0] == '-') {
      bool digits = t.size() > 1 && std::all_of(t.begin() + 1, t.end(), [](char c) {
                      return c >= '0' && c <= '9';
                    });
      msg = quote(s) + (digits ? " is negative; allowed " + rangeText(r)
                               : " is not a number; " + expect);
      return false;
    }
    unsigned base = 10;
    if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
      base = 16;
      t.remove_prefix(2);
    }
    if (t.empty()) {
      msg = quote(s) + " is not a number; " + expect;
      return false;
    }
    uint64_t acc = 0;
    bool overflow = false;
    for (char c : t) {
      unsigned d;
      if (c >= '0' && c <= '9') d = unsigned(c - '0');
      else if (base == 16 && c >= 'a' && c <= 'f') d = unsigned(c - 'a' + 10);
      else if (base == 16 && c >= 'A' && c <= 'F') d = unsigned(c - 'A' + 10);
      else {
        msg = quote(s) + " is not " + (base == 16 ? "a hex number; " : "a number; ") + expect;
        return false;
      }
      if (acc > (std::numeric_limits<uint64_t>::max() - d) / base) overflow = true;
      else acc = acc * base + d;
    }
    if (overflow || acc < r.lo || acc > r.hi) {
      msg = outOfRange(quote(s), r);
      return false;
    }
    v = acc;
    return true;
  }

  template <typename T>
  void integer(const YAML::Node& n, const std::string& path, const Range& r, T& out) {
    static_assert(std::is_unsigned_v<T>);
    const std::string* s = scalar(n, path, "an integer in " + rangeText(r));
    if (!s) return;
    uint64_t v = 0;
    std::string msg;
    if (!parseUnsigned(*s, r, v, msg)) {
      fail(path, msg);
      return;
    }
    if (v > std::numeric_limits<T>::max()) {  // a Range wider than T: a bug here
      fail(path, outOfRange(quote(*s), r));
      return;
    }
    out = static_cast<T>(v);
  }

  // Integer seconds, or a number followed by s, m or h.
  void duration(const YAML::Node& n, const std::string& path, uint32_t& out,
                const Range& r = kIdleRange) {
    const std::string range_text = rangeText(r) + " seconds";
    const std::string* s = scalar(n, path, "a duration in " + range_text);
    if (!s) return;
    std::string_view t = *s;
    uint64_t mult = 1;
    if (!t.empty()) {
      switch (t.back()) {
        case 's': mult = 1; t.remove_suffix(1); break;
        case 'm': mult = 60; t.remove_suffix(1); break;
        case 'h': mult = 3600; t.remove_suffix(1); break;
        default: break;
      }
    }
    bool digits = !t.empty() &&
                  std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) {
      bool neg = !t.empty() && t[0] == '-';
      fail(path, quote(*s) + (neg ? " is negative" : " is not a duration") +
                     "; use seconds (350) or a number with unit s, m or h (350s, 6m, 1h) in " +
                     range_text);
      return;
    }
    uint64_t v = uint64_t(r.hi) + 1;  // anything over 9 digits is out of range
    if (t.size() <= 9) {
      v = 0;
      for (char c : t) v = v * 10 + uint64_t(c - '0');
      v *= mult;
    }
    if (v < r.lo || v > r.hi) {
      std::string q = quote(*s);
      if (mult != 1 || s->back() == 's') q += " (" + std::to_string(v) + " s)";
      fail(path, outOfRange(q, r, " seconds"));
      return;
    }
    out = static_cast<uint32_t>(v);
  }

  void str(const YAML::Node& n, const std::string& path, const std::string& what,
           std::string& out) {
    if (const std::string* s = scalar(n, path, what)) out = *s;
  }

  void ip(const YAML::Node& n, const std::string& path, IpAddr& out) {
    const std::string* s = scalar(n, path, "an IPv4 address");
    if (!s) return;
    if (auto a = IpAddr::parse(*s)) {
      out = *a;
    } else if (looksLikeMac(*s)) {
      fail(path, quote(*s) + " is a MAC address; expected an IPv4 address like 192.0.2.10");
    } else {
      fail(path, quote(*s) + " is not an IP address; expected IPv4 like 192.0.2.10");
    }
  }

  void mac(const YAML::Node& n, const std::string& path, MacAddr& out) {
    const std::string* s = scalar(n, path, "a MAC address");
    if (!s) return;
    if (auto m = MacAddr::parse(*s)) {
      out = *m;
    } else if (IpAddr::parse(*s)) {
      fail(path, quote(*s) + " is an IP address; expected a MAC address like 02:00:00:00:00:01");
    } else {
      fail(path, quote(*s) + " is not a MAC address; expected six hex bytes like 02:00:00:00:00:01");
    }
  }

  void optMac(const YAML::Node& n, const std::string& path, std::optional<MacAddr>& out) {
    MacAddr m;
    size_t before = errs_.size();
    mac(n, path, m);
    if (errs_.size() == before) out = m;
  }

  void node(const YAML::Node& n, const std::string& path, NodeConfig& c) {
    walkMap(n, path, kNodeKeys, {"underlay_ip", "underlay_mac"},
            [&](std::string_view k, const YAML::Node& v, const std::string& p) {
              if (k == "underlay_ip") ip(v, p, c.underlay_ip);
              else if (k == "underlay_mac") mac(v, p, c.underlay_mac);
              else if (k == "gateway_mac") optMac(v, p, c.gateway_mac);
              else if (k == "underlay_port") integer(v, p, kPortRange, c.underlay_port);
              else if (k == "underlay_mtu") integer(v, p, kMtuRange, c.underlay_mtu);
              else if (k == "icmp_rate_per_s") integer(v, p, kIcmpRateRange, c.icmp_rate_per_s);
              else if (k == "flow_hash_secret")
                str(v, p, "32 hex digits or a file path", c.flow_hash_secret);
              else if (k == "ports") ports(v, p, c.ports);
              else if (k == "ipv6_addresses") ipv6List(v, p, c.ipv6_addresses);
            });
  }

  void ports(const YAML::Node& n, const std::string& path, std::vector<PortConfig>& out) {
    items(n, path, "a list of ports like { id: 0, role: router }", kMaxPortEntries, out,
          [&](const YAML::Node& m, const std::string& ip, PortConfig& pc) {
            walkMap(m, ip, kPortKeys, {"id"},
                    [&](std::string_view k, const YAML::Node& v, const std::string& p) {
                      if (k == "id") integer(v, p, kPortRange, pc.id);
                      else if (k == "mac") optMac(v, p, pc.mac);
                      else if (k == "role") {
                        std::string r;
                        size_t before = errs_.size();
                        str(v, p, "router, appliance or both", r);
                        if (errs_.size() != before) return;
                        if (r == "router") pc.role = PortRole::kRouter;
                        else if (r == "appliance") pc.role = PortRole::kAppliance;
                        else if (r == "both") pc.role = PortRole::kBoth;
                        else fail(p, quote(r) + " is not a port role; use router, appliance or both");
                      }
                    });
          });
  }

  void ipv6List(const YAML::Node& n, const std::string& path, std::vector<IpAddr>& out) {
    if (!list(n, path, "a list of IPv6 addresses", kMaxIpv6Addresses, "addresses")) return;
    if (n.IsNull()) return;
    for (size_t i = 0; i < n.size(); ++i) {
      const std::string p = index(path, i);
      const std::string* s = scalar(n[i], p, "an IPv6 address");
      if (!s) continue;
      if (auto a = IpAddr::parse(*s)) out.push_back(*a);
      else fail(p, quote(*s) + " is not an IP address; expected IPv6 like 2001:db8::1");
    }
  }

  // Accepts a list or null (an empty list) of at most `max` items; reports
  // anything else.
  bool list(const YAML::Node& n, const std::string& path, const std::string& what, size_t max,
            const char* items = "items", bool needs_one = false) {
    if (n.IsSequence() && n.size() > max) {
      fail(path, tooMany(n.size(), max, items, needs_one));
      return false;
    }
    if (n.IsNull() || n.IsSequence()) return true;
    fail(path, "expected " + what + ", got " + kindOf(n) +
                   (n.IsScalar() ? " " + quote(n.Scalar()) : std::string()));
    return false;
  }

  void groups(const YAML::Node& n, const std::string& path, std::vector<ServerGroupConfig>& out) {
    if (!list(n, path, "a list of server groups", kMaxGroups, "groups", true)) return;
    if (n.IsNull()) return;
    for (size_t i = 0; i < n.size(); ++i) {
      out.emplace_back();
      noteLine(index(path, i), n[i]);
      group(n[i], index(path, i), out.back());
    }
  }

  void group(const YAML::Node& n, const std::string& path, ServerGroupConfig& g) {
    walkMap(n, path, kGroupKeys, {"name", "servers"},
            [&](std::string_view k, const YAML::Node& v, const std::string& p) {
              if (k == "name") str(v, p, "a group name", g.name);
              else if (k == "stickiness") stickiness(v, p, g.stickiness);
              else if (k == "geneve") geneve(v, p, g.geneve);
              else if (k == "maglev_table_size") integer(v, p, kMaglevRange, g.maglev_table_size);
              else if (k == "tcp_idle_timeout") duration(v, p, g.tcp_idle_timeout_s);
              else if (k == "other_idle_timeout") duration(v, p, g.other_idle_timeout_s);
              else if (k == "servers") servers(v, p, g.servers);
              else if (k == "health_check") healthCheck(v, p, g.health_check);
              else if (k == "when_all_unhealthy") {
                std::string w;
                size_t before = errs_.size();
                str(v, p, "fail_open or drop", w);
                if (errs_.size() != before) return;
                if (w == "fail_open") g.when_all_unhealthy = WhenAllUnhealthy::kFailOpen;
                else if (w == "drop") g.when_all_unhealthy = WhenAllUnhealthy::kDrop;
                else fail(p, quote(w) + " is not allowed; use fail_open or drop");
              } else if (k == "failover_mode") {
                std::string w;
                size_t before = errs_.size();
                str(v, p, "no_rebalance or rebalance", w);
                if (errs_.size() != before) return;
                if (w == "no_rebalance") g.failover_mode = FailoverMode::kNoRebalance;
                else if (w == "rebalance") g.failover_mode = FailoverMode::kRebalance;
                else fail(p, quote(w) + " is not allowed; use no_rebalance or rebalance");
              } else if (k == "connection_draining") {
                walkMap(v, p, kDrainingKeys, {},
                        [&](std::string_view dk, const YAML::Node& dv, const std::string& dp) {
                          if (dk == "enabled") boolean(dv, dp, g.connection_draining.enabled);
                          else if (dk == "timeout")
                            duration(dv, dp, g.connection_draining.timeout_s, kDrainRange);
                        });
              }
            });
  }

  // "2s", "200ms", "1m" or a bare number of seconds, into milliseconds.
  void millis(const YAML::Node& n, const std::string& path, const Range& r, uint32_t& out) {
    const std::string what = "a duration from " + std::to_string(r.lo) + " ms to " +
                             std::to_string(r.hi / 1000) + " s (e.g. 2s, 200ms)";
    const std::string* s = scalar(n, path, what);
    if (!s) return;
    std::string t = *s;
    uint64_t mult = 1000;
    if (t.size() > 2 && t.compare(t.size() - 2, 2, "ms") == 0) mult = 1, t.resize(t.size() - 2);
    else if (!t.empty() && t.back() == 's') t.pop_back();
    else if (!t.empty() && t.back() == 'm') mult = 60000, t.pop_back();
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) {
      fail(path, quote(*s) + (!t.empty() && t[0] == '-' ? " is negative; expected " : " is not ") +
                     what);
      return;
    }
    uint64_t v = t.size() > 9 ? uint64_t(r.hi) + 1 : std::stoull(t) * mult;  // > 9 digits: too big
    if (v < r.lo || v > r.hi) {
      fail(path, quote(*s) + " is out of range; allowed " + std::to_string(r.lo) + " ms to " +
                     std::to_string(r.hi / 1000) + " s");
      return;
    }
    out = uint32_t(v);
  }

  void boolean(const YAML::Node& n, const std::string& path, bool& out) {
    const std::string* s = scalar(n, path, "true or false");
    if (!s) return;
    if (*s == "true") out = true;
    else if (*s == "false") out = false;
    else fail(path, quote(*s) + " is not true or false");
  }

  void healthCheck(const YAML::Node& n, const std::string& path, HealthCheckConfig& h) {
    h.configured = true;
    bool verify_given = false;
    walkMap(n, path, kHealthCheckKeys, {},
            [&](std::string_view k, const YAML::Node& v, const std::string& p) {
              if (k == "enabled") boolean(v, p, h.enabled);
              else if (k == "protocol") {
                std::string s;
                size_t before = errs_.size();
                str(v, p, "tcp, http or https", s);
                if (errs_.size() != before) return;
                if (s == "tcp") h.protocol = HealthProtocol::kTcp;
                else if (s == "http") h.protocol = HealthProtocol::kHttp;
                else if (s == "https") h.protocol = HealthProtocol::kHttps;
                else fail(p, quote(s) + " is not a health check protocol; allowed: tcp, http, https");
              } else if (k == "port") integer(v, p, kHealthPortRange, h.port);
              else if (k == "path") str(v, p, "a path starting with /", h.path);
              else if (k == "domain") str(v, p, "a domain name", h.domain);
              else if (k == "http_codes") {
                h.http_codes.clear();
                if (!list(v, p, "a list of http_2xx.. or codes", kMaxHttpCodes, "entries")) return;
                if (v.IsNull()) return;
                for (size_t i = 0; i < v.size(); ++i) {
                  std::string c;
                  str(v[i], index(p, i), "a status code class or range", c);
                  h.http_codes.push_back(c);
                }
              } else if (k == "interval") millis(v, p, kIntervalMsRange, h.interval_ms);
              else if (k == "timeout") millis(v, p, kTimeoutMsRange, h.timeout_ms);
              else if (k == "healthy_threshold") integer(v, p, kThresholdRange, h.healthy_threshold);
              else if (k == "unhealthy_threshold") integer(v, p, kThresholdRange, h.unhealthy_threshold);
              else if (k == "source") {
                IpAddr a;
                size_t before = errs_.size();
                ip(v, p, a);
                if (errs_.size() == before) h.source = a;
              } else if (k == "verify") {
                verify_given = true;
                boolean(v, p, h.verify);
              }
              else if (k == "ca_file") str(v, p, "a file path", h.ca_file);
              else if (k == "jitter") boolean(v, p, h.jitter);
            });
    // A CA file is there to verify against: it implies verify unless verify
    // is given (verify: false with a ca_file is then an error, not ignored).
    if (!verify_given && !h.ca_file.empty()) h.verify = true;
    // The validator's checks of verify and ca_file against protocol and each
    // other would only restate a protocol or verify that failed to parse.
    if (suppressed(path + ".protocol")) {
      suppressed_.push_back(path + ".verify");
      suppressed_.push_back(path + ".ca_file");
    }
    if (suppressed(path + ".verify")) suppressed_.push_back(path + ".ca_file");
  }

  void stickiness(const YAML::Node& n, const std::string& path, Stickiness& out) {
    const std::string* s = scalar(n, path, "one of 5-tuple, 3-tuple, 2-tuple");
    if (!s) return;
    for (Stickiness v : {Stickiness::kFiveTuple, Stickiness::kThreeTuple, Stickiness::kTwoTuple}) {
      if (*s == toString(v)) {
        out = v;
        return;
      }
    }
    fail(path, quote(*s) + " is not a stickiness; allowed: 5-tuple, 3-tuple, 2-tuple");
  }

  void geneveFormat(const YAML::Node& n, const std::string& path, GeneveFormat& out) {
    const std::string* s = scalar(n, path, "one of aws, ethernet");
    if (!s) return;
    for (GeneveFormat v : {GeneveFormat::kAws, GeneveFormat::kEthernet}) {
      if (*s == toString(v)) {
        out = v;
        return;
      }
    }
    fail(path, quote(*s) + " is not a Geneve format; allowed: aws, ethernet");
  }

  void geneve(const YAML::Node& n, const std::string& path, GeneveConfig& g) {
    walkMap(n, path, kGeneveKeys, {},
            [&](std::string_view k, const YAML::Node& v, const std::string& p) {
              if (k == "format") geneveFormat(v, p, g.format);
              else if (k == "vni") integer(v, p, kVniRange, g.vni);
              else if (k == "endpoint_id") integer(v, p, kU64Range, g.endpoint_id);
              else if (k == "attachment_id") integer(v, p, kU64Range, g.attachment_id);
            });
  }

  void servers(const YAML::Node& n, const std::string& path, std::vector<ServerConfig>& out) {
    if (!list(n, path, "a list of servers", kMaxServers, "servers", true)) return;
    if (n.IsNull()) return;
    for (size_t i = 0; i < n.size(); ++i) {
      out.emplace_back();
      ServerConfig& s = out.back();
      noteLine(index(path, i), n[i]);
      walkMap(n[i], index(path, i), kServerKeys, {"address"},
              [&](std::string_view k, const YAML::Node& v, const std::string& p) {
                if (k == "address") ip(v, p, s.address);
                else if (k == "weight") integer(v, p, kWeightRange, s.weight);
                else if (k == "mac") optMac(v, p, s.mac);
              });
    }
  }

  void dataplane(const YAML::Node& n, const std::string& path, DataplaneConfig& d) {
    walkMap(n, path, kDataplaneKeys, {},
            [&](std::string_view k, const YAML::Node& v, const std::string& p) {
              if (k == "workers") integer(v, p, kWorkersRange, d.workers);
              else if (k == "burst") integer(v, p, kBurstRange, d.burst);
              else if (k == "flow_table_size") integer(v, p, kFlowTableRange, d.flow_table_size);
              else if (k == "mbufs") integer(v, p, kMbufsRange, d.mbufs);
              else if (k == "rx_queue_size") integer(v, p, kQueueRange, d.rx_queue_size);
              else if (k == "tx_queue_size") integer(v, p, kQueueRange, d.tx_queue_size);
            });
  }

  void eal(const YAML::Node& n, const std::string& path, std::vector<std::string>& out) {
    if (!list(n, path, "a list of strings", kMaxEalArgs, "arguments")) return;
    if (n.IsNull()) return;
    for (size_t i = 0; i < n.size(); ++i) {
      std::string s;
      const std::string p = index(path, i);
      size_t before = errs_.size();
      str(n[i], p, "a string", s);
      if (errs_.size() == before) out.push_back(std::move(s));
    }
  }

  void noteLine(const std::string& path, const YAML::Node& n) {
    const YAML::Mark m = n.Mark();
    if (!m.is_null()) lines_.emplace(path, std::make_pair(m.line, m.column));
  }

  std::vector<ConfigError>& errs_;
  std::vector<std::string> suppressed_;
  std::map<std::string, std::pair<int, int>> lines_;  // key path -> (line, column)
};

}  // namespace

bool validateConfig(const Config& c, std::vector<ConfigError>& errors) {
  Validator(errors).run(c);
  return errors.empty();
}

namespace {

// yaml-cpp 0.7 (Debian 12) never returns from LoadAll when the next token
// cannot start a node, e.g. a stray ',' at the top level: each round yields
// another empty document without consuming the token, allocating until the
// process dies (yaml-cpp issue 1040, fixed upstream after 0.7). Found by
// fuzzing (tests/fuzz/regressions/config/). Walks the documents first with a
// handler that only notes where each starts, and throws a ParserException
// when one starts where the previous one did (no progress), so LoadAll is only
// called on streams it finishes.
void checkDocumentsAdvance(const std::string& text) {
  struct Starts : YAML::EventHandler {
    YAML::Mark start;
    void OnDocumentStart(const YAML::Mark& m) override { start = m; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  } h;
  std::istringstream in(text);
  YAML::Parser parser(in);
  bool first = true;
  YAML::Mark prev;
  while (parser.HandleNextDocument(h)) {
    if (!first && h.start.pos == prev.pos)
      throw YAML::ParserException(h.start, "unexpected character here (a ',' outside [ ] or { }?)");
    first = false;
    prev = h.start;
  }
}

}  // namespace

bool parseConfig(const std::string& yaml_text, Config& out, std::vector<ConfigError>& errors) {
  const size_t before = errors.size();
  try {
    out = Config{};
    std::vector<YAML::Node> docs;
    try {
      checkDocumentsAdvance(yaml_text);
      docs = YAML::LoadAll(yaml_text);
    } catch (const YAML::DeepRecursion& e) {
      errors.push_back({"", "YAML nests deeper than the parser allows (line " +
                                std::to_string(e.mark.line + 1) + "); a configuration is a few "
                                "levels deep"});
      return false;
    } catch (const YAML::Exception& e) {
      std::string msg = "YAML syntax error";
      if (!e.mark.is_null()) {
        msg += " at line " + std::to_string(e.mark.line + 1) + ", column " +
               std::to_string(e.mark.column + 1);
      }
      errors.push_back({"", msg + ": " + e.msg});
      return false;
    }
    if (docs.empty() || (docs.size() == 1 && docs[0].IsNull())) {
      errors.push_back({"", "the configuration is empty; expected a map with at least the keys "
                            "node and server_groups"});
      return false;
    }
    if (docs.size() > 1) {
      errors.push_back({"", "found " + std::to_string(docs.size()) +
                                " YAML documents (separated by '---'); a configuration is exactly "
                                "one document"});
      return false;
    }
    Parser parser(errors);
    parser.root(docs[0], out);
    std::vector<ConfigError> semantic;
    Validator(semantic, parser.unknownNames()).run(out);
    for (ConfigError& e : semantic) {
      if (!parser.suppressed(e.path)) errors.push_back(std::move(e));
    }
    parser.sortByLine(errors, before);
    if (errors.size() - before > kMaxErrors) {
      const size_t more = errors.size() - before - kMaxErrors;
      errors.resize(before + kMaxErrors);
      errors.push_back({"", "... and " + std::to_string(more) + " more error" +
                                (more == 1 ? "" : "s") + " (the first " +
                                std::to_string(kMaxErrors) + " are shown)"});
    }
  } catch (const std::exception& e) {
    errors.push_back({"", std::string("internal error while reading the configuration: ") + e.what()});
  } catch (...) {
    errors.push_back({"", "internal error while reading the configuration"});
  }
  return errors.size() == before;
}

bool loadConfigFile(const std::string& path, Config& out, std::vector<ConfigError>& errors) {
  std::string text;
  try {
    const std::string where = "config file " + quote(path);
    auto sysError = [&](const char* what, int e) {
      errors.push_back({"", std::string("cannot ") + what + " " + where + ": " +
                                std::error_code(e, std::generic_category()).message()});
      return false;
    };
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return sysError("open", errno);
    struct FdCloser {
      int fd;
      ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat st{};
    if (::fstat(fd, &st) != 0) return sysError("read", errno);
    if (S_ISDIR(st.st_mode)) {
      errors.push_back({"", "cannot read " + where + ": it is a directory"});
      return false;
    }
    // Whatever it is (a file, a pipe, /dev/zero), read at most the limit.
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return sysError("read", errno);
      if (n == 0) break;
      if (text.size() + size_t(n) > kMaxConfigBytes) {
        errors.push_back({"", where + " is larger than " + std::to_string(kMaxConfigBytes >> 20) +
                                  " MiB; a configuration is at most that long"});
        return false;
      }
      text.append(buf, size_t(n));
    }
  } catch (const std::exception& e) {
    errors.push_back({"", "cannot read config file " + quote(path) + ": " + e.what()});
    return false;
  }
  bool ok = parseConfig(text, out, errors);
  try {
    out.source_path = path;
  } catch (...) {
    // Out of memory copying a path: leave source_path empty.
  }
  return ok;
}

std::vector<std::string> configKeyPaths() {
  std::vector<std::string> out;
  for (const Section& sec : kSections)
    for (std::string_view k : sec.keys)
      out.push_back(sec.path.empty() ? std::string(k) : std::string(sec.path) + "." + std::string(k));
  return out;
}

std::string formatErrors(const std::vector<ConfigError>& errors) {
  std::string out;
  for (const ConfigError& e : errors) {
    if (!e.path.empty()) out += e.path + ": ";
    out += e.message;
    out += '\n';
  }
  return out;
}

const char* toString(HealthProtocol p) {
  switch (p) {
    case HealthProtocol::kTcp: return "tcp";
    case HealthProtocol::kHttp: return "http";
    case HealthProtocol::kHttps: return "https";
  }
  return "?";
}

const char* toString(WhenAllUnhealthy w) {
  return w == WhenAllUnhealthy::kDrop ? "drop" : "fail_open";
}

const char* toString(FailoverMode m) {
  return m == FailoverMode::kRebalance ? "rebalance" : "no_rebalance";
}

bool parseListen(const std::string& s, IpAddr& addr, uint16_t& port) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon + 1 >= s.size()) return false;
  std::string host = s.substr(0, colon), p = s.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    auto a = IpAddr::parse(host);
    if (!a || !a->isV6()) return false;
    addr = *a;
  } else {
    auto a = IpAddr::parse(host);
    if (!a || !a->isV4()) return false;
    addr = *a;
  }
  if (p.empty() || p.size() > 5 || !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  unsigned long v = std::stoul(p);
  if (v == 0 || v > 65535) return false;
  port = uint16_t(v);
  return true;
}

namespace {

bool parseHexKey(const std::string& digits, FlowHashKey& key) {
  if (digits.size() != 32) return false;
  uint64_t w[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    char ch = digits[i];
    int v = ch >= '0' && ch <= '9' ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
            : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
    if (v < 0) return false;
    w[i / 16] = w[i / 16] << 4 | uint64_t(v);
  }
  key.k0 = w[0];
  key.k1 = w[1];
  return true;
}

}  // namespace

bool loadFlowHashKey(const NodeConfig& n, FlowHashKey& key, bool& configured, std::string& error) {
  const std::string& v = n.flow_hash_secret;
  configured = !v.empty();
  key = FlowHashKey{};
  if (v.empty()) return true;
  if (v[0] != '/') {
    if (parseHexKey(v, key)) return true;
    error = "node.flow_hash_secret: must be 32 hexadecimal digits (value not shown)";
    return false;
  }
  int fd = ::open(v.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = "node.flow_hash_secret: cannot open '" + v + "': " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "node.flow_hash_secret: '" + v + "' is not a regular file";
  } else if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    error = "node.flow_hash_secret: '" + v + "' has mode " + mode +
            "; a secret file must not be readable or writable by group or others (chmod 600)";
  } else {
    char buf[256];
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0) error = "node.flow_hash_secret: cannot read '" + v + "': " + std::strerror(errno);
    else text.assign(buf, size_t(r));
  }
  ::close(fd);
  if (!error.empty()) return false;
  size_t b = text.find_first_not_of(" \t\r\n"), e = text.find_last_not_of(" \t\r\n");
  std::string digits = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  if (!parseHexKey(digits, key)) {
    error = "node.flow_hash_secret: '" + v + "' must hold 32 hexadecimal digits (128 bits)";
    return false;
  }
  return true;
}

}  // namespace gwlb::ctl
