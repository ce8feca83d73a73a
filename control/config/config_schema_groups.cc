// The key table: one Key per config key (see config_schema.h), with the rules
// that concern one key's value alone. Sections are listed innermost first.
// A declarative table, kept in one file on purpose although it runs over the
// 700-line limit (the rooms check allows a declarative table): one place lists every
// config key with its type, range, reload rule, doc line and check (docs/config.md's
// key table is generated from it), so a new key is one edit here, next to its check.
#include "control/config/config_schema.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "common/http_codes.h"
#include "common/maglev.h"

namespace gwlb::ctl::schema {
namespace {

// A key's digits written in the config itself, not a file's path.
bool isInlineKey(const std::string& v) { return !v.empty() && v[0] != '/'; }

// ---------------------------------------------------------------------------
// Ranges and limits.

constexpr Range kWeightRange{0, 10000};
constexpr Range kVniRange{0, 0xFFFFFF, true};
constexpr Range kU64Range{0, std::numeric_limits<uint64_t>::max(), true};
constexpr Range kIdleRange{60, 6000};
constexpr Range kDrainRange{1, 3600};
constexpr Range kHoldRange{0, 3600};
constexpr Range kBypassSecondsRange{0, 3600};
constexpr Range kOptionClassRange{0, 0xFFFF, true};
constexpr Range kPacketsRange{1, 1000000000};
constexpr Range kPassiveWindowRange{100, 300000};
constexpr Range kBaseEjectionRange{0, 3600000};
constexpr Range kMaxEjectionRange{0, 86400000};
constexpr Range kPenaltyRange{1, 100000};
constexpr Range kHalfLifeRange{1, 3600};
constexpr Range kMaxHoldRange{1, 86400};
constexpr Range kPercentRange{0, 100};
constexpr Range kMinCountRange{0, 4096};
constexpr Range kPortRange{0, 65535};
constexpr Range kVxlanPortRange{1, 65535};
constexpr Range kMtuRange{576, 9216};
constexpr Range kIcmpRateRange{0, 100000};
constexpr Range kResetRateRange{0, 1000000};
constexpr Range kWorkersRange{1, 64};
constexpr Range kBurstRange{1, 256};
constexpr Range kFlowTableRange{1024, 1u << 27};
constexpr Range kNewFlowsRange{0, 100000000};
constexpr Range kMbufsRange{1024, 1u << 24};
constexpr Range kQueueRange{64, 16384};
constexpr Range kHealthPortRange{1, 65535};
// Health check interval and timeout: the union of what the products we match
// allow (seeds: interval 1-50 s; AWS GWLB: interval 5-300 s, timeout 2-120 s;
// Alibaba: timeout 1-300 s), down to 10 ms for labs and tests.
constexpr Range kIntervalMsRange{10, 300000};
constexpr Range kTimeoutMsRange{10, 300000};
constexpr Range kThresholdRange{2, 10};
// Largest lists the parser walks; longer ones are one error (a YAML alias can
// repeat a large node many times, so the text's size alone bounds nothing).
constexpr Range kMaxEalArgs{0, 256};
constexpr Range kMaxHttpCodes{0, 32};
constexpr Range kMaxPolicies{0, 256};
constexpr Range kMaxHealthSources{0, 1024};
constexpr Range kMaxComposites{0, 256};
constexpr Range kGroupsList{1, kMaxGroups};
constexpr Range kServersList{1, kMaxServers};
constexpr Range kPortsList{0, kMaxPortEntries};
constexpr Range kIpv6List{0, kMaxIpv6Addresses};
constexpr Range kNamesList{0, kMaxRegionItems};
constexpr Range kSyncPeersList{0, 64};
constexpr Range kWarmStartRange{1, 600};
constexpr Range kWarmConnectMsRange{100, 60000};
constexpr Range kWarmIdleMsRange{100, 600000};
constexpr Range kIdleSleepRange{0, 10000};
constexpr Range kGraceRange{0, 3600};
constexpr Range kBirdProtocolsList{1, 16};
constexpr Range kClassesList{0, kMaxClasses};
constexpr Range kMatchSmallList{0, 256};   // ingress_ports, protocols
constexpr Range kMatchLargeList{0, 1024};  // vlans, prefixes, l4_ports

// ---------------------------------------------------------------------------
// Enums: each grammar once (when_all_unhealthy serves groups and listeners).

constexpr EnumName kStickinessNames[] = {{"5-tuple", uint64_t(Stickiness::kFiveTuple)},
                                         {"3-tuple", uint64_t(Stickiness::kThreeTuple)},
                                         {"2-tuple", uint64_t(Stickiness::kTwoTuple)}};
constexpr EnumName kFormatNames[] = {{"aws", uint64_t(GeneveFormat::kAws)},
                                     {"ethernet", uint64_t(GeneveFormat::kEthernet)},
                                     {"nsi", uint64_t(GeneveFormat::kNsi)}};
constexpr EnumName kEncapNames[] = {{"geneve", uint64_t(Encapsulation::kGeneve)},
                                    {"vxlan", uint64_t(Encapsulation::kVxlan)}};
constexpr EnumName kProtocolNames[] = {{"tcp", uint64_t(HealthProtocol::kTcp)},
                                       {"http", uint64_t(HealthProtocol::kHttp)},
                                       {"https", uint64_t(HealthProtocol::kHttps)}};
constexpr EnumName kRoleNames[] = {{"router", uint64_t(PortRole::kRouter)},
                                   {"appliance", uint64_t(PortRole::kAppliance)},
                                   {"both", uint64_t(PortRole::kBoth)}};
constexpr EnumName kWhenAllNames[] = {{"fail_open", uint64_t(WhenAllUnhealthy::kFailOpen)},
                                      {"drop", uint64_t(WhenAllUnhealthy::kDrop)}};
constexpr EnumName kFailoverNames[] = {{"no_rebalance", uint64_t(FailoverMode::kNoRebalance)},
                                       {"rebalance", uint64_t(FailoverMode::kRebalance)}};
constexpr EnumName kClassActionNames[] = {{"inspect", uint64_t(ClassAction::kInspect)},
                                          {"bypass", uint64_t(ClassAction::kBypass)},
                                          {"drop", uint64_t(ClassAction::kDrop)}};
constexpr EnumName kLogLevelNames[] = {{"trace", 0}, {"debug", 1},    {"info", 2}, {"warn", 3},
                                       {"error", 4}, {"critical", 5}, {"off", 6}};

}  // namespace

const EnumDesc kStickiness{kStickinessNames, "one of 5-tuple, 3-tuple, 2-tuple",
                           " is not a stickiness; allowed: 5-tuple, 3-tuple, 2-tuple"};
const EnumDesc kGeneveFormat{kFormatNames, "one of aws, ethernet, nsi",
                             " is not a Geneve format; allowed: aws, ethernet, nsi"};
const EnumDesc kEncapsulation{kEncapNames, "geneve or vxlan",
                               " is not an encapsulation; allowed: geneve, vxlan"};
const EnumDesc kHealthProtocol{kProtocolNames, "tcp, http or https",
                               " is not a health check protocol; allowed: tcp, http, https"};
const EnumDesc kPortRole{kRoleNames, "router, appliance or both",
                         " is not a port role; use router, appliance or both"};
const EnumDesc kWhenAllUnhealthy{kWhenAllNames, "fail_open or drop",
                                 " is not allowed; use fail_open or drop"};
const EnumDesc kFailoverMode{kFailoverNames, "no_rebalance or rebalance",
                             " is not allowed; use no_rebalance or rebalance"};
const EnumDesc kClassAction{kClassActionNames, "inspect, bypass or drop",
                             " is not a class action; use inspect, bypass or drop"};
const EnumDesc kLogLevel{kLogLevelNames, "a log level", ""};

bool validName(const std::string& n) {
  if (n.empty() || n.size() > kMaxNameLen) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
  });
}

// A Unix group: a name as useradd allows it, or a number below 2^32 - 1.
bool validGroupRef(const std::string& g) {
  if (g.empty() || g.size() > 32) return false;
  if (g.find_first_not_of("0123456789") == std::string::npos)
    return g.size() <= 10 && std::stoull(g) < 0xFFFFFFFFull;
  if (g[0] == '-') return false;
  return validName(g);
}

namespace {

// ---------------------------------------------------------------------------
// Rules on one key's value (Key::check).

template <class T>
const T& as(const void* v) {
  return *static_cast<const T*>(v);
}

void checkFlowHashSecret(const void* v, const std::string& path, Report& r) {
  const std::string& k = as<std::string>(v);
  if (!k.empty() && k[0] != '/') {
    // Never echo the value: it is a secret.
    bool hex = k.size() == 32 && std::all_of(k.begin(), k.end(), [](char ch) {
                 return std::isxdigit(static_cast<unsigned char>(ch));
               });
    if (!hex)
      r.add(path, "must be 32 hexadecimal digits (128 bits) or the absolute path of a file holding "
                  "them; got " + std::to_string(k.size()) + " characters (value not shown)");
  } else if (k.size() > 4096) {
    r.add(path, "path longer than 4096 bytes");
  }
}

void checkFleetSecret(const void* v, const std::string& path, Report& r) {
  const std::string& k = as<std::string>(v);
  if (k.empty()) return;
  bool hex = k.size() == 32 && std::all_of(k.begin(), k.end(), [](char ch) {
               return std::isxdigit(static_cast<unsigned char>(ch));
             });
  if (!hex)  // never echo the value: it is a secret
    r.add(path, "must be 32 hexadecimal digits (128 bits); got " + std::to_string(k.size()) +
                    " characters (value not shown); for a file use fleet.secret_file");
}

void checkSecretFile(const void* v, const std::string& path, Report& r) {
  const std::string& f = as<std::string>(v);
  if (f.empty()) return;
  if (f[0] != '/') r.add(path, quote(f) + " is not an absolute path");
  else if (f.size() > 4096) r.add(path, "path longer than 4096 bytes");
}

void checkNodeName(const void* v, const std::string& path, Report& r) {
  const std::string& n = as<std::string>(v);
  if (!validName(n))
    r.add(path, quote(n) + " is not a valid node name; use 1..63 characters from A-Z a-z 0-9 _ . -");
}

void checkListen(const std::string& s, const std::string& path, const char* example, Report& r);

// fleet.sync_listen and every fleet.peers entry: ip:port, port not 0.
void checkSyncListen(const void* v, const std::string& path, Report& r) {
  checkListen(as<std::string>(v), path, "10.0.0.1:7946 or [2001:db8::1]:7946", r);
}
void checkSyncPeers(const void* v, const std::string& path, Report& r) {
  const auto& peers = as<std::vector<std::string>>(v);
  for (size_t i = 0; i < peers.size(); ++i) {
    std::string at = path + "[" + std::to_string(i) + "]";
    if (peers[i].empty()) r.add(at, "is empty; use address:port, e.g. 10.0.0.2:7946");
    else checkListen(peers[i], at, "10.0.0.2:7946 or [2001:db8::2]:7946", r);
    for (size_t j = 0; j < i; ++j)
      if (peers[j] == peers[i]) r.add(at, quote(peers[i]) + " is listed twice");
  }
}

void birdBegin(void* obj) { static_cast<BirdConfig*>(obj)->configured = true; }
bool birdConfigured(const void* obj) { return static_cast<const BirdConfig*>(obj)->configured; }

void checkBirdSocket(const void* v, const std::string& path, Report& r) {
  const std::string& s = as<std::string>(v);
  if (s.empty() || s[0] != '/' || s.size() > 107 || s.back() == '/')
    r.add(path, quote(s) + " is not an absolute socket path of at most 107 bytes (BIRD's -s "
                           "socket, e.g. /run/bird/bird.ctl)");
}

// A BIRD symbol as gwlbd sends it in `enable NAME`: a letter or _, then
// letters, digits and _ (at most 64); each named once.
void checkBirdProtocols(const void* v, const std::string& path, Report& r) {
  const auto& list = as<std::vector<std::string>>(v);
  if (list.empty()) r.add(path, "names no protocol; list 1..16 BIRD protocols");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string& n = list[i];
    bool ok = !n.empty() && n.size() <= 64 && (std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_') &&
              std::all_of(n.begin(), n.end(), [](char ch) {
                return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
              });
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (!ok) {
      r.add(p, quote(n) + " is not a BIRD protocol name: 1..64 of A-Z a-z 0-9 _, not starting "
                          "with a digit");
      continue;
    }
    for (size_t j = 0; j < i; ++j)
      if (list[j] == n) {
        r.add(p, quote(n) + " is already " + path + "[" + std::to_string(j) + "]; list each once");
        break;
      }
  }
}

void fleetBegin(void* obj) { static_cast<FleetConfig*>(obj)->configured = true; }
bool fleetConfigured(const void* obj) { return static_cast<const FleetConfig*>(obj)->configured; }

void checkUnderlayIpv6(const void* v, const std::string& path, Report& r) {
  const auto& a = as<std::optional<IpAddr>>(v);
  if (a && a->isV4())
    r.add(path, quote(a->str()) + " is IPv4; set the IPv4 underlay address in node.underlay_ip");
}

void checkIpv6Addresses(const void* v, const std::string& path, Report& r) {
  const auto& list = as<std::vector<IpAddr>>(v);
  if (list.size() > kMaxIpv6Addresses)
    r.add(path, "has " + std::to_string(list.size()) + " addresses; allowed at most " +
                    std::to_string(kMaxIpv6Addresses));
  for (size_t i = 0; i < list.size(); ++i) {
    const IpAddr& a = list[i];
    const std::string p = path + "[" + std::to_string(i) + "]";
    if (!a.isV6()) {
      r.add(p, quote(a.str()) + " is not IPv6; list this node's IPv6 addresses (IPv4: node.underlay_ip)");
    } else if (a.b[0] == 0xff) {
      r.add(p, quote(a.str()) + " is a multicast address; use a unicast IPv6 address");
    } else if (a.b == std::array<uint8_t, 16>{}) {
      r.add(p, "'::' is not a usable address; use a unicast IPv6 address");
    } else {
      for (size_t j = 0; j < i; ++j)
        if (list[j] == a) {
          r.add(p, quote(a.str()) + " is already " + path + "[" + std::to_string(j) +
                       "]; list each address once");
          break;
        }
    }
  }
}

void checkTapPrefix(const void* v, const std::string& path, Report& r) {
  const std::string& s = as<std::string>(v);
  // A Linux interface name has at most 15 bytes; the port id (up to 5 digits) follows.
  bool ok = !s.empty() && s.size() <= 10 && s[0] != '-' && s[0] != '.' &&
            std::all_of(s.begin(), s.end(), [](char ch) {
              return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' ||
                     ch == '.';
            });
  if (!ok)
    r.add(path, quote(s) + " is not an interface name prefix (1..10 of A-Z a-z 0-9 _ . -, "
                           "not starting with - or .)");
}

// A Linux interface name (dev_valid_name): 1..15 bytes, no '/', ':' or
// white space, not "." or ".."; "" is none (health_check.interface: the data path).
void checkInterfaceName(const void* v, const std::string& path, Report& r) {
  const std::string& s = as<std::string>(v);
  if (s.empty()) return;
  bool ok = s.size() <= 15 && s != "." && s != ".." &&
            std::none_of(s.begin(), s.end(), [](char ch) {
              return ch == '/' || ch == ':' || std::isspace(static_cast<unsigned char>(ch)) ||
                     static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
            });
  if (!ok)
    r.add(path, quote(s) + " is not an interface name (1..15 bytes, no / : or space, not . or ..)");
}

void checkPortCount(const void* v, const std::string& path, Report& r) {
  size_t n = as<std::vector<PortConfig>>(v).size();
  if (n > kMaxPortEntries) r.add(path, tooMany(n, kMaxPortEntries, "ports", false));
}

void checkGroupCount(const void* v, const std::string& path, Report& r) {
  size_t n = as<std::vector<ServerGroupConfig>>(v).size();
  if (n == 0) r.add(path, "at least one server group is required");
  else if (n > kMaxGroups) r.add(path, tooMany(n, kMaxGroups, "groups", true));
}

void checkServers(const void* v, const std::string& path, Report& r) {
  const auto& s = as<std::vector<ServerConfig>>(v);
  if (s.empty()) r.add(path, "has no servers; allowed 1.." + std::to_string(kMaxServers));
  else if (s.size() > kMaxServers) r.add(path, tooMany(s.size(), kMaxServers, "servers", true));
  bool any_weight = std::any_of(s.begin(), s.end(), [](const ServerConfig& x) { return x.weight > 0; });
  if (!s.empty() && !any_weight)
    r.add(path, "every server has weight 0; at least one server needs weight > 0");
}

void checkListenerCount(const void* v, const std::string& path, Report& r) {
  size_t n = as<std::vector<ListenerConfig>>(v).size();
  if (n > kMaxRegionItems) r.add(path, tooMany(n, kMaxRegionItems, "listeners", false));
}

// Smallest prime >= n, or 0 if there is none up to the allowed maximum.
uint32_t nextPrime(uint32_t n) {
  for (uint64_t p = n; p <= kMaglevRange.hi; ++p)
    if (isPrime(static_cast<uint32_t>(p))) return static_cast<uint32_t>(p);
  return 0;
}

// AWS's class would make gwlb read AWS's own options as its requests.
void checkOptionClass(const void* v, const std::string& path, Report& r) {
  if (as<uint16_t>(v) == 0x0108)
    r.add(path, "0x0108 is AWS's option class; pick another (default 0xFF01, experimental range)");
}

void checkMaglevPrime(const void* v, const std::string& path, Report& r) {
  const uint32_t ts = as<uint32_t>(v);
  if (isPrime(ts)) return;
  std::string msg = quote(std::to_string(ts)) + " is not prime; the table size must be a prime in " +
                    rangeText(kMaglevRange);
  if (uint32_t p = nextPrime(ts)) msg += " (next prime: " + std::to_string(p) + ")";
  r.add(path, msg);
}

bool httpCheck(const void* owner) {
  return static_cast<const HealthCheckConfig*>(owner)->protocol != HealthProtocol::kTcp;
}
bool healthConfigured(const void* obj) {
  return static_cast<const HealthCheckConfig*>(obj)->configured;
}

void checkHealthPath(const void* v, const std::string& path, Report& r) {
  static const std::string kPathChars =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-/.%?#&_;~!()*[]@$^:',+";
  const std::string& p = as<std::string>(v);
  if (p.empty() || p.size() > 80 || p[0] != '/' || p.find_first_not_of(kPathChars) != std::string::npos)
    r.add(path, quote(p) +
                    " is not a health check path: 1..80 characters, starting with '/', "
                    "from letters, digits and - / . % ? # & _ ; ~ ! ( ) * [ ] @ $ ^ : ' , +");
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

void checkHealthDomain(const void* v, const std::string& path, Report& r) {
  const std::string& d = as<std::string>(v);
  if (d.empty()) return;
  if (d.size() > 80 ||
      d.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") !=
          std::string::npos)
    r.add(path, quote(d) + " is not a domain: 1..80 characters from A-Z a-z 0-9 . -");
  else if (!domainLabelsOk(d))
    r.add(path, quote(d) +
                    " is not a domain: labels of 1..63 characters separated by single "
                    "dots (one trailing dot allowed), not starting or ending with '-'");
}

void checkHttpCodes(const void* v, const std::string& path, Report& r) {
  const auto& codes = as<std::vector<std::string>>(v);
  if (codes.empty()) r.add(path, "needs at least one code class or range");
  for (size_t i = 0; i < codes.size(); ++i)
    if (!parseHttpCode(codes[i]))
      r.add(path + "[" + std::to_string(i) + "]", quote(codes[i]) + " " + std::string(kHttpCodeGrammar));
}

void checkSocket(const void* v, const std::string& path, Report& r) {
  const std::string& s = as<std::string>(v);
  if (s.empty() || s[0] != '/' || s.size() > 107 || s.back() == '/')
    r.add(path, quote(s) + " is not an absolute socket path of at most 107 bytes");
}

void checkSocketGroup(const void* v, const std::string& path, Report& r) {
  const std::string& g = as<std::string>(v);
  // Unset is gwlbd's own group; written as '' in the file, it is a mistake.
  if ((!g.empty() || r.written(path)) && !validGroupRef(g))
    r.add(path, quote(g) + " is not a group name (1..32 characters from A-Z a-z 0-9 _ . -, "
                           "not starting with -) or a group number");
}

void checkListen(const std::string& s, const std::string& path, const char* example, Report& r) {
  IpAddr a;
  uint16_t port = 0;
  if (!s.empty() && !parseListen(s, a, port))
    r.add(path, quote(s) + " is not address:port; use e.g. " + example);
}
void checkMetricsListen(const void* v, const std::string& path, Report& r) {
  checkListen(as<std::string>(v), path, "127.0.0.1:9100 or [::1]:9100", r);
}
void checkHealthListen(const void* v, const std::string& path, Report& r) {
  checkListen(as<std::string>(v), path, "127.0.0.1:8081 or [::1]:8081", r);
}

void checkLogLevel(const void* v, const std::string& path, Report& r) {
  const std::string& l = as<std::string>(v);
  if (kLogLevel.parse(l)) return;
  std::string list;
  for (const EnumName& n : kLogLevel.names) list += (list.empty() ? "" : ", ") + std::string(n.name);
  r.add(path, quote(l) + " is not a log level; allowed: " + list);
}

// ---------------------------------------------------------------------------
// The sections, innermost first. Fields not given keep Key's defaults:
// reloadable, optional, no range, no extra check.

constexpr std::string_view kAfterProtocol[] = {"protocol"};
constexpr std::string_view kAfterProtocolVerify[] = {"protocol", "verify"};
constexpr std::string_view kAfterAction[] = {"action"};
constexpr std::string_view kNameRule = "1..63 of `A-Z a-z 0-9 _ . -`, unique";

const Key kServerKeys[] = {
    {.name = "address", .kind = Kind::kIp, .acc = member<&ServerConfig::address>(),
     .doc = "The appliance's underlay address; unique in the file, not this node's. IPv6: "
            "Geneve over IPv6 from `node.underlay_ipv6`.",
     .required = true, .what = "the appliance's IPv4 or IPv6 address"},
    {.name = "weight", .kind = Kind::kUint, .acc = member<&ServerConfig::weight>(),
     .doc = "Share of new flows, relative to the group's other servers; 0: none.",
     .range = kWeightRange},
    {.name = "mac", .kind = Kind::kMac, .acc = member<&ServerConfig::mac>(),
     .doc = "Fixed MAC of this appliance (else `node.gateway_mac`, else ARP; IPv6: neighbor discovery)."},
};
const Section kServerSection{"server_groups[].servers[]", kServerKeys};

const Key kGeneveKeys[] = {
    {.name = "format", .kind = Kind::kEnum, .acc = member<&GeneveConfig::format>(),
     .doc = "Packet format sent to the appliances: `aws` (inner IP packet, AWS's three options), "
            "`ethernet` (inner Ethernet frame, no options) or `nsi` (inner IP packet, Google Cloud "
            "Network Security Integration's network, endpoint and profile ID options).",
     .enm = &kGeneveFormat},
    {.name = "vni", .kind = Kind::kUint, .acc = member<&GeneveConfig::vni>(),
     .doc = "Geneve virtual network identifier; `nsi` format: the network ID option's too.", .range = kVniRange},
    {.name = "endpoint_id", .kind = Kind::kUint, .acc = member<&GeneveConfig::endpoint_id>(),
     .doc = "`aws` format: value of the endpoint id option; `nsi` format: the endpoint ID option's "
            "high 32 bits (its low 32 carry the flow cookie), at most 4294967295.", .range = kU64Range},
    {.name = "attachment_id", .kind = Kind::kUint, .acc = member<&GeneveConfig::attachment_id>(),
     .doc = "`aws` format: value of the attachment id option.", .range = kU64Range},
};
const Section kGeneveSection{"server_groups[].geneve", kGeneveKeys};

const Key kVxlanTunnelKeys[] = {
    {.name = "port", .kind = Kind::kUint, .acc = member<&VxlanTunnelConfig::port>(),
     .doc = "UDP port of the tunnel: gwlbd sends to it and takes the appliance's returns on it.",
     .range = kVxlanPortRange},
    {.name = "vni", .kind = Kind::kUint, .acc = member<&VxlanTunnelConfig::vni>(),
     .doc = "VXLAN network identifier of the tunnel.", .range = kVniRange},
};
const Section kVxlanInternalSection{"server_groups[].vxlan.internal", kVxlanTunnelKeys};
const Section kVxlanExternalSection{"server_groups[].vxlan.external", kVxlanTunnelKeys};
const Key kVxlanKeys[] = {
    {.name = "internal", .kind = Kind::kSection, .acc = member<&VxlanConfig::internal>(),
     .doc = "The tunnel for the replies of a flow (packets against its first packet's way).",
     .sub = &kVxlanInternalSection, .default_doc = "port 10800, vni 800 (Azure's)"},
    {.name = "external", .kind = Kind::kSection, .acc = member<&VxlanConfig::external>(),
     .doc = "The tunnel for packets travelling the way their flow's first packet did.",
     .sub = &kVxlanExternalSection, .default_doc = "port 10801, vni 801 (Azure's)"},
};
const Section kVxlanSection{"server_groups[].vxlan", kVxlanKeys};

const Key kForwardingProbeKeys[] = {
    {.name = "src", .kind = Kind::kIp, .acc = member<&HealthCheckConfig::ForwardingProbe::src>(),
     .doc = "Source of the probe's inner packet; reserved: no data may use it. IPv6: an ICMPv6 echo.",
     .what = "an IPv4 or IPv6 address", .default_doc = "`198.18.0.1`"},
    {.name = "dst", .kind = Kind::kIp, .acc = member<&HealthCheckConfig::ForwardingProbe::dst>(),
     .doc = "Destination of the probe's inner packet; reserved like `src`, of its family.",
     .what = "an IPv4 or IPv6 address", .default_doc = "`198.18.0.2`"},
};
const Section kForwardingProbeSection{"server_groups[].health_check.forwarding_probe", kForwardingProbeKeys};
const Key kPassiveKeys[] = {
    {.name = "enabled", .kind = Kind::kBool, .acc = member<&PassiveCheckConfig::enabled>(),
     .doc = "Eject an appliance that returns nothing of what it is sent: `unhealthy (no returns)`."},
    {.name = "min_packets", .kind = Kind::kUint, .acc = member<&PassiveCheckConfig::min_packets>(),
     .doc = "Packets sent to it within `window`, none returned, that eject it.", .range = kPacketsRange},
    {.name = "window", .kind = Kind::kMillis, .acc = member<&PassiveCheckConfig::window_ms>(),
     .doc = "The sliding window over which sent and returned packets are counted.",
     .range = kPassiveWindowRange},
    {.name = "max_ejection_percent", .kind = Kind::kUint,
     .acc = member<&PassiveCheckConfig::max_ejection_percent>(),
     .doc = "Most of a group ejected at once (at least one); more stay in service.",
     .range = kPercentRange},
    {.name = "base_ejection_time", .kind = Kind::kMillis,
     .acc = member<&PassiveCheckConfig::base_ejection_time_ms>(),
     .doc = "Least time out after an ejection, times its ejections in a row; `0s`: its checks alone.",
     .range = kBaseEjectionRange},
    {.name = "max_ejection_time", .kind = Kind::kMillis,
     .acc = member<&PassiveCheckConfig::max_ejection_time_ms>(),
     .doc = "Cap on that time (never below `base_ejection_time`).", .range = kMaxEjectionRange},
};
const Section kPassiveSection{"server_groups[].health_check.passive", kPassiveKeys};

const Key kDampeningKeys[] = {
    {.name = "enabled", .kind = Kind::kBool, .acc = member<&DampeningConfig::enabled>(),
     .doc = "Hold down (`dampened`) an appliance whose state keeps changing."},
    {.name = "penalty", .kind = Kind::kUint, .acc = member<&DampeningConfig::penalty>(),
     .doc = "Added at each change into or out of service.", .range = kPenaltyRange},
    {.name = "suppress", .kind = Kind::kUint, .acc = member<&DampeningConfig::suppress>(),
     .doc = "Held down when the penalty goes above this.", .range = kPenaltyRange},
    {.name = "reuse", .kind = Kind::kUint, .acc = member<&DampeningConfig::reuse>(),
     .doc = "Released when the penalty has decayed below this (below `suppress`).",
     .range = kPenaltyRange},
    {.name = "half_life", .kind = Kind::kSeconds, .acc = member<&DampeningConfig::half_life_s>(),
     .doc = "The penalty halves in this time.", .range = kHalfLifeRange},
    {.name = "max_hold", .kind = Kind::kSeconds, .acc = member<&DampeningConfig::max_hold_s>(),
     .doc = "Longest hold-down after the last change.", .range = kMaxHoldRange},
};
const Section kDampeningSection{"server_groups[].health_check.dampening", kDampeningKeys};

const Key kHealthKeys[] = {
    {.name = "enabled", .kind = Kind::kBool, .acc = member<&HealthCheckConfig::enabled>(),
     .doc = "`false`: state `disabled`, treated as healthy, not probed."},
    {.name = "protocol", .kind = Kind::kEnum, .acc = member<&HealthCheckConfig::protocol>(),
     .doc = "`tcp`: connect, then RST; `http(s)`: `GET path`, status compared with `http_codes`.",
     .enm = &kHealthProtocol},
    {.name = "port", .kind = Kind::kUint, .acc = member<&HealthCheckConfig::port>(),
     .doc = "Port probed on each appliance's address.", .range = kHealthPortRange},
    {.name = "path", .kind = Kind::kString, .acc = member<&HealthCheckConfig::path>(),
     .doc = "HTTP(S) request path.", .what = "a path starting with /", .check = checkHealthPath,
     .applies = httpCheck,
     .range_doc = "1..80 chars, starts with `/`; letters, digits, ``- / . % ? # & _ ; ~ ! ( ) * [ ] @ $ ^ : ' , +``"},
    {.name = "domain", .kind = Kind::kString, .acc = member<&HealthCheckConfig::domain>(),
     .doc = "`Host` header (as written) and TLS SNI; empty: `Host: address:port`, no SNI.",
     .what = "a domain name", .check = checkHealthDomain, .applies = httpCheck,
     .range_doc = "1..80 chars `A-Z a-z 0-9 . -`; labels of 1..63 chars, no `-` at either end; one trailing dot"},
    {.name = "http_codes", .kind = Kind::kStrings, .acc = member<&HealthCheckConfig::http_codes>(),
     .doc = "Status codes that count as success.", .range = kMaxHttpCodes,
     .what = "a list of http_2xx.. or codes", .item_what = "a status code class or range",
     .items = "entries", .check = checkHttpCodes, .applies = httpCheck,
     .range_doc = "1..32 of `http_2xx`..`http_5xx`, `200`, `200-299`"},
    {.name = "interval", .kind = Kind::kMillis, .acc = member<&HealthCheckConfig::interval_ms>(),
     .doc = "Wait after a result before the next probe.", .range = kIntervalMsRange},
    {.name = "timeout", .kind = Kind::kMillis, .acc = member<&HealthCheckConfig::timeout_ms>(),
     .doc = "Longest wait for a result (connect + TLS + status line).", .range = kTimeoutMsRange},
    {.name = "healthy_threshold", .kind = Kind::kUint,
     .acc = member<&HealthCheckConfig::healthy_threshold>(),
     .doc = "Consecutive successes to become healthy.", .range = kThresholdRange},
    {.name = "unhealthy_threshold", .kind = Kind::kUint,
     .acc = member<&HealthCheckConfig::unhealthy_threshold>(),
     .doc = "Consecutive failures to become unhealthy.", .range = kThresholdRange},
    {.name = "interface", .kind = Kind::kString, .acc = member<&HealthCheckConfig::interface>(),
     .doc = "Management path: probes leave by this kernel interface (or VRF device) only; "
            "absent: the data path ([deploy.md](deploy.md#where-probes-travel)).",
     .what = "an interface name", .check = checkInterfaceName,
     .range_doc = "1..15 bytes, no `/`, space or `:`, not `.` or `..`; empty: none",
     .default_doc = "none: the data path"},
    {.name = "source", .kind = Kind::kIpv4, .acc = member<&HealthCheckConfig::source>(),
     .doc = "Management path: probes come from this local address (needs `interface`); "
            "probes to IPv6 appliances take the kernel's choice.",
     .what = "an IPv4 address of this host",
     .default_doc = "data path: `node.underlay_ip` (IPv6 appliances: `node.underlay_ipv6`)"},
    {.name = "verify", .kind = Kind::kBool, .acc = member<&HealthCheckConfig::verify>(),
     .doc = "`https` only: verify the certificate against `ca_file` (and its name).",
     .after = kAfterProtocol, .default_doc = "`false` (`true` with `ca_file`)"},
    {.name = "ca_file", .kind = Kind::kString, .acc = member<&HealthCheckConfig::ca_file>(),
     .doc = "`https` only: CA bundle; required with `verify: true`, implies it when alone.",
     .what = "a file path", .after = kAfterProtocolVerify, .type_doc = "path"},
    {.name = "jitter", .kind = Kind::kBool, .acc = member<&HealthCheckConfig::jitter>(),
     .doc = "Spread the first probes of many appliances over one interval."},
    {.name = "forwarding", .kind = Kind::kBool, .acc = member<&HealthCheckConfig::forwarding>(),
     .doc = "Also send a probe through the appliance as data travels; no return in `timeout` "
            "fails the check (`forwarding_timeout`) ([product-rules.md](product-rules.md#1-health-checks))."},
    {.name = "forwarding_probe", .kind = Kind::kSection,
     .acc = member<&HealthCheckConfig::forwarding_probe>(),
     .doc = "The inner addresses of the forwarding probe (an ICMP echo request `src` -> `dst`).",
     .sub = &kForwardingProbeSection},
    {.name = "passive", .kind = Kind::kSection, .acc = member<&HealthCheckConfig::passive>(),
     .doc = "Passive detection from the packets sent and returned.", .sub = &kPassiveSection},
    {.name = "dampening", .kind = Kind::kSection, .acc = member<&HealthCheckConfig::dampening>(),
     .doc = "Flap dampening.", .sub = &kDampeningSection},
};

void healthBegin(void* obj) { static_cast<HealthCheckConfig*>(obj)->configured = true; }
// A CA file is there to verify against: it implies verify unless verify is
// given (verify: false with a ca_file is then an error, not ignored).
void healthFinish(void* obj, bool (*given)(const void*, std::string_view), const void* ctx) {
  auto* h = static_cast<HealthCheckConfig*>(obj);
  if (!given(ctx, "verify") && !h->ca_file.empty()) h->verify = true;
}
const Section kHealthSection{"server_groups[].health_check", kHealthKeys, healthBegin, healthFinish,
                             healthConfigured};

const Key kDrainingKeys[] = {
    {.name = "enabled", .kind = Kind::kBool, .acc = member<&DrainingConfig::enabled>(),
     .doc = "Keep the flows of a removed or drained appliance on it for up to `timeout`."},
    {.name = "timeout", .kind = Kind::kSeconds, .acc = member<&DrainingConfig::timeout_s>(),
     .doc = "Longest time a removed or drained appliance keeps its flows.", .range = kDrainRange},
};
const Section kDrainingSection{"server_groups[].connection_draining", kDrainingKeys};

// AWS: target group attributes (TCP resets on target failure and deregistration).
const Key kGroupResetKeys[] = {
    {.name = "on_unhealthy", .kind = Kind::kBool, .acc = member<&GroupTcpResetConfig::on_unhealthy>(),
     .doc = "A TCP flow whose appliance failed its health checks is reset at its next segment "
            "(while the group has an appliance in service)."},
    {.name = "on_deregistration", .kind = Kind::kBool,
     .acc = member<&GroupTcpResetConfig::on_deregistration>(),
     .doc = "A TCP flow whose appliance was removed or drained is reset at its next segment "
            "once the drain is over."},
};
const Section kGroupResetSection{"server_groups[].send_tcp_reset", kGroupResetKeys};

const Key kGroupKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&ServerGroupConfig::name>(),
     .doc = "Used in logs, counters and references.", .required = true, .what = "a group name",
     .range_doc = kNameRule},
    {.name = "stickiness", .kind = Kind::kEnum, .acc = member<&ServerGroupConfig::stickiness>(),
     .doc = "Which fields of a flow pick its appliance.", .enm = &kStickiness},
    {.name = "geneve", .kind = Kind::kSection, .acc = member<&ServerGroupConfig::geneve>(),
     .doc = "How packets are encapsulated for this group.", .sub = &kGeneveSection},
    {.name = "encapsulation", .kind = Kind::kEnum, .acc = member<&ServerGroupConfig::encapsulation>(),
     .doc = "Tunnel to the appliances: Geneve (the `geneve` map) or VXLAN as Azure's Gateway Load "
            "Balancer sends it (the `vxlan` map).",
     .enm = &kEncapsulation},
    {.name = "vxlan", .kind = Kind::kSection, .acc = member<&ServerGroupConfig::vxlan>(),
     .doc = "`encapsulation: vxlan`: the group's two tunnels.", .sub = &kVxlanSection},
    {.name = "maglev_table_size", .kind = Kind::kUint,
     .acc = member<&ServerGroupConfig::maglev_table_size>(),
     .doc = "Size of the consistent-hashing table; over 100 x the servers is advised.",
     .range = kMaglevRange, .check = checkMaglevPrime,
     .range_doc = "a prime in 251..1000003, > the servers"},
    {.name = "tcp_idle_timeout", .kind = Kind::kSeconds,
     .acc = member<&ServerGroupConfig::tcp_idle_timeout_s>(),
     .doc = "A TCP flow with no packets for this long is forgotten.", .range = kIdleRange},
    {.name = "other_idle_timeout", .kind = Kind::kSeconds,
     .acc = member<&ServerGroupConfig::other_idle_timeout_s>(),
     .doc = "The same for UDP and every other protocol.", .range = kIdleRange},
    {.name = "servers", .kind = Kind::kList, .acc = member<&ServerGroupConfig::servers>(),
     .doc = "The appliances of this group.", .range = kServersList, .required = true,
     .what = "a list of servers", .items = "servers", .needs_one = true, .sub = &kServerSection,
     .check = checkServers, .range_doc = "1..4096, one with weight > 0"},
    {.name = "health_check", .kind = Kind::kSection,
     .acc = member<&ServerGroupConfig::health_check>(),
     .doc = "Health checks of the appliances; off when absent.", .sub = &kHealthSection,
     .default_doc = "off"},
    {.name = "when_all_unhealthy", .kind = Kind::kEnum,
     .acc = member<&ServerGroupConfig::when_all_unhealthy>(),
     .doc = "No appliance in service: new flows spread over all (`fail_open`) or are dropped.",
     .enm = &kWhenAllUnhealthy},
    {.name = "failover_mode", .kind = Kind::kEnum, .acc = member<&ServerGroupConfig::failover_mode>(),
     .doc = "Where existing flows of an appliance that failed or left go.", .enm = &kFailoverMode},
    {.name = "connection_draining", .kind = Kind::kSection,
     .acc = member<&ServerGroupConfig::connection_draining>(),
     .doc = "Draining of removed or drained appliances.", .sub = &kDrainingSection},
    {.name = "send_tcp_reset", .kind = Kind::kSection,
     .acc = member<&ServerGroupConfig::send_tcp_reset>(),
     .doc = "RSTs for TCP flows whose appliance failed or left ([product-rules.md](product-rules.md#2-existing-flows-when-an-appliance-leaves-rebalance-and-draining)).",
     .sub = &kGroupResetSection},
    {.name = "slow_start", .kind = Kind::kSeconds, .acc = member<&ServerGroupConfig::slow_start_s>(),
     .doc = "An appliance coming into service ramps up to its share of new flows over this time.",
     .range = kHoldRange},
};
const Section kGroupSection{"server_groups[]", kGroupKeys};

const Key kPortKeys[] = {
    {.name = "id", .kind = Kind::kUint, .acc = member<&PortConfig::id>(),
     .doc = "DPDK port id; gwlbd refuses to start when it has no such port.", .range = kPortRange,
     .required = true},
    {.name = "role", .kind = Kind::kEnum, .acc = member<&PortConfig::role>(),
     .doc = "`router`: traffic to inspect comes in; `appliance`: Geneve returns; `both`.",
     .enm = &kPortRole, .default_doc = "see below"},
    {.name = "mac", .kind = Kind::kMac, .acc = member<&PortConfig::mac>(),
     .doc = "The port's own MAC, when it should not be the default.", .default_doc = "see below"},
};
const Section kPortSection{"node.ports[]", kPortKeys};

const Key kExceptionPathKeys[] = {
    {.name = "enabled", .kind = Kind::kBool, .acc = member<&ExceptionPathConfig::enabled>(),
     .doc = "Give every DPDK port a tap interface to the kernel for traffic to this node's own "
            "addresses ([exception-path.md](exception-path.md)).",
     .reload = Reload::kRestart},
    {.name = "name_prefix", .kind = Kind::kString,
     .acc = member<&ExceptionPathConfig::name_prefix>(),
     .doc = "The taps are named this prefix and the port id (`gwlb0`, `gwlb1`, ...).",
     .reload = Reload::kRestart, .what = "an interface name prefix", .check = checkTapPrefix,
     .range_doc = "1..10 of `A-Z a-z 0-9 _ . -`, not starting with `-` or `.`"},
};
const Section kExceptionPathSection{"node.exception_path", kExceptionPathKeys};

const Key kNodeKeys[] = {
    {.name = "underlay_ip", .kind = Kind::kIpv4, .acc = member<&NodeConfig::underlay_ip>(),
     .doc = "This node's underlay address, the source of the Geneve packets it sends.",
     .required = true, .what = "this node's IPv4 address on the underlay"},
    {.name = "underlay_ipv6", .kind = Kind::kIp, .acc = member<&NodeConfig::underlay_ipv6>(),
     .doc = "This node's IPv6 underlay address: the source of Geneve, neighbor solicitations "
            "and data-path probes to IPv6 appliances, answered in neighbor discovery.",
     .what = "this node's IPv6 address on the underlay", .check = checkUnderlayIpv6,
     .range_doc = "unicast IPv6"},
    {.name = "underlay_mac", .kind = Kind::kMac, .acc = member<&NodeConfig::underlay_mac>(),
     .doc = "MAC address of the underlay port.", .required = true},
    {.name = "gateway_mac", .kind = Kind::kMac, .acc = member<&NodeConfig::gateway_mac>(),
     .doc = "Next-hop MAC for every appliance without a `mac` of its own."},
    {.name = "underlay_port", .kind = Kind::kUint, .acc = member<&NodeConfig::underlay_port>(),
     .doc = "DPDK port id that faces the appliances.", .range = kPortRange,
     .reload = Reload::kRestart},
    {.name = "underlay_mtu", .kind = Kind::kUint, .acc = member<&NodeConfig::underlay_mtu>(),
     .doc = "Largest outer IPv4 or IPv6 packet the underlay carries.", .range = kMtuRange},
    {.name = "icmp_rate_per_s", .kind = Kind::kUint, .acc = member<&NodeConfig::icmp_rate_per_s>(),
     .doc = "Most \"packet too big\" replies each worker sends per second; 0 sends none.",
     .range = kIcmpRateRange},
    {.name = "tcp_reset_rate_per_s", .kind = Kind::kUint,
     .acc = member<&NodeConfig::tcp_reset_rate_per_s>(),
     .doc = "Most RSTs (`send_tcp_reset`) each worker sends per second; 0 sends none.",
     .range = kResetRateRange},
    {.name = "flow_hash_secret", .kind = Kind::kString,
     .acc = member<&NodeConfig::flow_hash_secret>(),
     .doc = "The 128-bit key of the flow hash: its digits, or a file (mode 600) holding them.",
     .reload = Reload::kRestart, .what = "32 hex digits or a file path",
     .check = checkFlowHashSecret, .range_doc = "32 hex digits, or an absolute file path",
     .default_doc = "none (gwlbd's own key, /var/lib/gwlb/flow_hash.key)", .secret = isInlineKey},
    {.name = "ports", .kind = Kind::kList, .acc = member<&NodeConfig::ports>(),
     .doc = "Role and MAC of DPDK ports; ports not listed get the defaults.", .range = kPortsList,
     .what = "a list of ports like { id: 0, role: router }", .items = "ports", .sub = &kPortSection,
     .check = checkPortCount, .range_doc = "at most 64, unique `id`"},
    {.name = "ipv6_addresses", .kind = Kind::kIpv6List, .acc = member<&NodeConfig::ipv6_addresses>(),
     .doc = "The gateway's IPv6 addresses: neighbor solicitations for them are answered.",
     .range = kIpv6List, .what = "a list of IPv6 addresses", .item_what = "an IPv6 address",
     .items = "addresses", .check = checkIpv6Addresses, .range_doc = "at most 16, unicast, unique"},
    {.name = "exception_path", .kind = Kind::kSection, .acc = member<&NodeConfig::exception_path>(),
     .doc = "Tap interfaces to the kernel for BGP, BFD, ping and SSH to this node.",
     .sub = &kExceptionPathSection},
    {.name = "idle_sleep_us", .kind = Kind::kUint, .acc = member<&NodeConfig::idle_sleep_us>(),
     .doc = "A worker sleeps this long after a poll round that found nothing (0: busy polling). "
            "For labs and VMs short of cores: a packet may wait this long more.",
     .range = kIdleSleepRange, .reload = Reload::kRestart},
    {.name = "geneve_option_class", .kind = Kind::kUint,
     .acc = member<&NodeConfig::geneve_option_class>(),
     .doc = "Geneve option class of gwlb's own options (an appliance's bypass request); "
            "every appliance must use the same. 0x0108 (AWS's) is refused.",
     .range = kOptionClassRange, .check = checkOptionClass,
     .range_doc = "0x0000..0xFFFF, not 0x0108", .default_doc = "0xFF01 (experimental range)"},
};
const Section kNodeSection{"node", kNodeKeys};

const Key kDataplaneKeys[] = {
    {.name = "workers", .kind = Kind::kUint, .acc = member<&DataplaneConfig::workers>(),
     .doc = "Number of worker lcores.", .range = kWorkersRange, .reload = Reload::kRestart},
    {.name = "burst", .kind = Kind::kUint, .acc = member<&DataplaneConfig::burst>(),
     .doc = "Most packets handled in one receive or transmit call.", .range = kBurstRange,
     .reload = Reload::kRestart},
    {.name = "flow_table_size", .kind = Kind::kUint, .acc = member<&DataplaneConfig::flow_table_size>(),
     .doc = "Flow table entries (eviction: below).", .range = kFlowTableRange,
     .reload = Reload::kRestart},
    {.name = "new_flows_per_s", .kind = Kind::kUint, .acc = member<&DataplaneConfig::new_flows_per_s>(),
     .doc = "New flows a second the gateway is planned for (0: not said); a flow_table_size "
            "that cannot hold them for the longest idle timeout gets a warning (below).",
     .range = kNewFlowsRange, .reload = Reload::kRestart},
    {.name = "mbufs", .kind = Kind::kUint, .acc = member<&DataplaneConfig::mbufs>(),
     .doc = "Packet buffers in the mempool.", .range = kMbufsRange, .reload = Reload::kRestart},
    {.name = "rx_queue_size", .kind = Kind::kUint, .acc = member<&DataplaneConfig::rx_queue_size>(),
     .doc = "Descriptors per receive queue.", .range = kQueueRange, .reload = Reload::kRestart},
    {.name = "tx_queue_size", .kind = Kind::kUint, .acc = member<&DataplaneConfig::tx_queue_size>(),
     .doc = "Descriptors per transmit queue.", .range = kQueueRange, .reload = Reload::kRestart},
    {.name = "checksum_offload", .kind = Kind::kBool, .acc = member<&DataplaneConfig::checksum_offload>(),
     .doc = "Let the underlay port's NIC finish the outer IPv4 and UDP checksums of the Geneve "
            "packets when it offers both TX offloads (gwlbd logs which); false: always in software.",
     .reload = Reload::kRestart},
};
const Section kDataplaneSection{"dataplane", kDataplaneKeys};

const Key kControlKeys[] = {
    {.name = "socket", .kind = Kind::kString, .acc = member<&ControlConfig::socket>(),
     .doc = "Unix socket of the control API ([control-api.md](control-api.md)).",
     .reload = Reload::kRestart, .what = "an absolute socket path", .check = checkSocket,
     .range_doc = "absolute path, at most 107 bytes"},
    {.name = "socket_mode", .kind = Kind::kOctalMode, .acc = member<&ControlConfig::socket_mode>(),
     .doc = "File mode of the socket (quote it in YAML).", .range = {0, 0777},
     .reload = Reload::kRestart},
    {.name = "socket_group", .kind = Kind::kString, .acc = member<&ControlConfig::socket_group>(),
     .doc = "Group of the socket: its members may use the API.", .reload = Reload::kRestart,
     .what = "a group name or number", .check = checkSocketGroup,
     .range_doc = "a group name (1..32 of `A-Z a-z 0-9 _ . -`, not starting with `-`) or number",
     .default_doc = "empty (gwlbd's group)"},
};
const Section kControlSection{"control", kControlKeys};

const Key kMetricsKeys[] = {
    {.name = "listen", .kind = Kind::kString, .acc = member<&MetricsConfig::listen>(),
     .doc = "Serve Prometheus metrics on `GET /metrics` at this address.",
     .reload = Reload::kRestart, .what = "an address:port like 127.0.0.1:9100",
     .check = checkMetricsListen, .range_doc = "`127.0.0.1:9100`, `[::1]:9100`",
     .default_doc = "empty (off)"},
};
const Section kMetricsSection{"metrics", kMetricsKeys};

const Key kPolicyKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&AggregationPolicyConfig::name>(),
     .doc = "Named by health sources.", .required = true, .what = "a policy name",
     .range_doc = kNameRule},
    {.name = "min_healthy_percent", .kind = Kind::kUint,
     .acc = member<&AggregationPolicyConfig::min_healthy_percent>(),
     .doc = "A source needs at least this share of its servers healthy...", .range = kPercentRange},
    {.name = "min_healthy_count", .kind = Kind::kUint,
     .acc = member<&AggregationPolicyConfig::min_healthy_count>(),
     .doc = "...and at least this many.", .range = kMinCountRange},
};
const Section kPolicySection{"health_aggregation_policies[]", kPolicyKeys};

const Key kSourceKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&HealthSourceConfig::name>(),
     .doc = "Named by composites.", .required = true, .what = "a health source name",
     .range_doc = "1..63 of `A-Z a-z 0-9 _ . -`, unique among sources and composites"},
    {.name = "server_group", .kind = Kind::kString, .acc = member<&HealthSourceConfig::server_group>(),
     .doc = "The group it judges.", .required = true, .what = "a server group name",
     .range_doc = "a server group"},
    {.name = "policy", .kind = Kind::kString, .acc = member<&HealthSourceConfig::policy>(),
     .doc = "How it judges.", .what = "a policy name", .range_doc = "a policy",
     .default_doc = "the defaults (60 % / 1)"},
};
const Section kSourceSection{"health_sources[]", kSourceKeys};

const Key kCompositeKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&CompositeHealthCheckConfig::name>(),
     .doc = "Its name in logs, metrics and `gwlbctl regions`.", .required = true,
     .what = "a composite name", .range_doc = kNameRule},
    {.name = "sources", .kind = Kind::kStrings, .acc = member<&CompositeHealthCheckConfig::sources>(),
     .doc = "Healthy only if every source is.", .range = kNamesList, .required = true,
     .what = "a list of health source names", .item_what = "a name", .items = "names",
     .range_doc = "1..16 health sources, no composite"},
    {.name = "destination", .kind = Kind::kString,
     .acc = member<&CompositeHealthCheckConfig::destination>(),
     .doc = "The listener whose health it publishes.", .required = true, .what = "a listener name",
     .range_doc = "a listener"},
    {.name = "dry_run", .kind = Kind::kBool, .acc = member<&CompositeHealthCheckConfig::dry_run>(),
     .doc = "Computed, shown, logged, exported as \"would fail over\"; never moves traffic."},
};
const Section kCompositeSection{"composite_health_checks[]", kCompositeKeys};

// AWS: the listener attribute send_tcp_reset.on_idle_timeout.enabled.
const Key kListenerResetKeys[] = {
    {.name = "on_idle_timeout", .kind = Kind::kBool,
     .acc = member<&ListenerTcpResetConfig::on_idle_timeout>(),
     .doc = "A TCP segment without SYN of a flow that expired idle, or has no flow entry, is "
            "answered with an RST."},
    {.name = "on_fleet_view_incomplete", .kind = Kind::kBool,
     .acc = member<&ListenerTcpResetConfig::on_fleet_view_incomplete>(),
     .doc = "A TCP segment without SYN and without a flow entry is answered with an RST while "
            "this fleet node may lack its peers' flow records (warm start without a table, a "
            "peer silent; [fleet.md](fleet.md#a-segment-with-no-record)); `false`: picked from "
            "this node's Maglev table."},
};
const Section kListenerResetSection{"listeners[].send_tcp_reset", kListenerResetKeys};

const Key kApplianceBypassKeys[] = {
    {.name = "allow", .kind = Kind::kBool, .acc = member<&ApplianceBypassConfig::allow>(),
     .doc = "An appliance of this listener may hand a flow back with gwlb's bypass option: "
            "its packets then go straight back to the router, uninspected."},
    {.name = "max_seconds", .kind = Kind::kSeconds, .acc = member<&ApplianceBypassConfig::max_seconds>(),
     .doc = "The longest bypass granted; longer requests (and the flow's life) are cut to it. "
            "0: as asked (a timed request is cut to 3600 s).",
     .range = kBypassSecondsRange},
};
const Section kApplianceBypassSection{"listeners[].appliance_bypass", kApplianceBypassKeys};

const Key kListenerKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&ListenerConfig::name>(),
     .doc = "Also the name on the health endpoint.", .required = true, .what = "a listener name",
     .range_doc = kNameRule},
    {.name = "server_groups", .kind = Kind::kStrings, .acc = member<&ListenerConfig::server_groups>(),
     .doc = "Regions in order of preference.", .range = kNamesList, .required = true,
     .what = "a list of server group names", .item_what = "a name", .items = "names",
     .range_doc = "1..16 groups, each in at most one listener, same stickiness"},
    {.name = "failback_hold", .kind = Kind::kSeconds, .acc = member<&ListenerConfig::failback_hold_s>(),
     .doc = "How long a preferred region must stay healthy before new flows return to it.",
     .range = kHoldRange},
    {.name = "when_all_unhealthy", .kind = Kind::kEnum,
     .acc = member<&ListenerConfig::when_all_unhealthy>(),
     .doc = "No region healthy: new flows go to the preferred group (`fail_open`) or are dropped.",
     .enm = &kWhenAllUnhealthy},
    {.name = "send_tcp_reset", .kind = Kind::kSection, .acc = member<&ListenerConfig::send_tcp_reset>(),
     .doc = "RSTs for TCP flows that expired idle ([product-rules.md](product-rules.md#2-existing-flows-when-an-appliance-leaves-rebalance-and-draining)).",
     .sub = &kListenerResetSection},
    {.name = "appliance_bypass", .kind = Kind::kSection,
     .acc = member<&ListenerConfig::appliance_bypass>(),
     .doc = "Flows its appliances may hand back ([product-rules.md](product-rules.md#appliance-requested-bypass)).",
     .sub = &kApplianceBypassSection},
};
const Section kListenerSection{"listeners[]", kListenerKeys};

// --- Traffic classes (items and rules in config_classes.cc).
// `prefixes` as written in the file: a prefix file's prefixes follow them in
// the member (TrafficClassMatch::file_prefixes) and are not written back.
constexpr Access inlinePrefixes() {
  Access a = member<&TrafficClassMatch::prefixes>();
  a.count = [](const void* o) {
    const auto& m = *static_cast<const TrafficClassMatch*>(o);
    return m.prefixes.size() - m.file_prefixes;
  };
  return a;
}
std::string prefixFileNote(const void* o) {
  const auto& m = *static_cast<const TrafficClassMatch*>(o);
  return std::to_string(m.file_prefixes) + " prefixes, sha256 " + m.prefixes_file_sha256 + " when loaded";
}
const Key kMatchKeys[] = {
    {.name = "ingress_ports", .kind = Kind::kItems, .acc = member<&TrafficClassMatch::ingress_ports>(),
     .doc = "DPDK ports the packet came in on; list both directions' ports.",
     .range = kMatchSmallList, .what = "a list of DPDK port ids", .item_what = "a port id",
     .items = "ports", .item = &kPortItem, .check = checkIngressPorts,
     .type_doc = "list of integers", .range_doc = "at most 256 of 0..65535, unique, not a port of role appliance",
     .default_doc = "empty (any)"},
    {.name = "vlans", .kind = Kind::kItems, .acc = member<&TrafficClassMatch::vlans>(),
     .doc = "VLAN id the packet came with (0: untagged); list both directions' VLANs.",
     .range = kMatchLargeList, .what = "a list of VLAN ids", .item_what = "a VLAN id",
     .items = "VLANs", .item = &kVlanItem, .check = checkVlans, .type_doc = "list of integers",
     .range_doc = "at most 1024 of 0..4094, unique", .default_doc = "empty (any)"},
    {.name = "prefixes", .kind = Kind::kItems, .acc = inlinePrefixes(),
     .doc = "IPv4 and IPv6 networks; either endpoint's address in one matches.",
     .range = kMatchLargeList, .what = "a list of CIDR prefixes", .item_what = "a CIDR prefix",
     .items = "prefixes", .item = &kPrefixItem, .check = checkPrefixes,
     .type_doc = "list of CIDR prefixes",
     .range_doc = "at most 1024 with `prefixes_file`'s, `10.9.0.0/16`, `2001:db8::/32`; host bits zero, unique",
     .default_doc = "empty (any)"},
    {.name = "prefixes_file", .kind = Kind::kString, .acc = member<&TrafficClassMatch::prefixes_file>(),
     .doc = "More prefixes, from a file: one per line, `#` comments (see Prefix files below).",
     .what = "a file path", .type_doc = "file path",
     .range_doc = "relative to the config file's directory; at most 1 MiB",
     .default_doc = "none", .note = prefixFileNote},
    {.name = "protocols", .kind = Kind::kItems, .acc = member<&TrafficClassMatch::protocols>(),
     .doc = "IP protocol of the flow (IPv6: after the extension headers).", .range = kMatchSmallList,
     .what = "a list of protocols", .item_what = "a protocol", .items = "protocols",
     .item = &kProtocolItem, .check = checkProtocols, .type_doc = "list of strings or integers",
     .range_doc = "`tcp`, `udp`, `icmp`, `icmpv6`, `sctp`, 0..255; unique", .default_doc = "empty (any)"},
    {.name = "l4_ports", .kind = Kind::kItems, .acc = member<&TrafficClassMatch::l4_ports>(),
     .doc = "Ports and ranges; either endpoint's port in one matches.", .range = kMatchLargeList,
     .what = "a list of ports and ranges", .item_what = "a port or range", .items = "ports",
     .item = &kL4PortItem, .check = checkL4Ports, .type_doc = "list of ports and ranges",
     .range_doc = "at most 1024 of `873`, `1000-2000` (0..65535, low first), unique",
     .default_doc = "empty (any)"},
};
const Section kMatchSection{"traffic_classes[].match", kMatchKeys};

constexpr Range kTruncateRange{0, 65535};
constexpr Range kU32TagRange{0, 0xFFFFFFFF};
constexpr Range kTagsList{0, kMaxClasses};
constexpr Range kSampleRange{1, 1000000};
void checkTruncate(const void* v, const std::string& path, Report& r) {
  const uint32_t t = *static_cast<const uint32_t*>(v);
  if (t != 0 && t < 64)
    r.add(path, std::to_string(t) + " is too short: 0 (whole packets) or 64..65535 bytes, so "
                "every copy keeps its headers");
}
const Key kMirrorKeys[] = {
    {.name = "group", .kind = Kind::kString, .acc = member<&ClassMirrorConfig::group>(),
     .doc = "The server group whose appliances receive the copies (passive tools: nothing comes back); "
            "the flow's symmetric hash picks one, so both directions reach the same tool.",
     .required = true, .what = "a server group name",
     .range_doc = "a server group in no listener (and not the first group without `listeners`)"},
    {.name = "truncate", .kind = Kind::kUint, .acc = member<&ClassMirrorConfig::truncate>(),
     .doc = "Bytes of each packet copied at most (the inner IP packet in aws format, the frame in "
            "ethernet format).", .range = kTruncateRange, .check = checkTruncate,
     .range_doc = "0 (whole packets) or 64..65535", .default_doc = "0"},
    {.name = "sample", .kind = Kind::kUint, .acc = member<&ClassMirrorConfig::sample>(),
     .doc = "Copy one packet in this many (per worker).", .range = kSampleRange,
     .range_doc = "1..1000000", .default_doc = "1 (every packet)"},
};
// A mirror is its group: without one there is nothing to check or dump.
bool mirrorConfigured(const void* obj) { return !static_cast<const ClassMirrorConfig*>(obj)->group.empty(); }
const Section kMirrorSection{"traffic_classes[].mirror", kMirrorKeys, nullptr, nullptr, mirrorConfigured};

const Key kClassKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&TrafficClassConfig::name>(),
     .doc = "Its name in `gwlbctl classes`, metrics and logs.", .required = true,
     .what = "a class name", .range_doc = kNameRule},
    {.name = "match", .kind = Kind::kSection, .acc = member<&TrafficClassConfig::match>(),
     .doc = "Every field given must match; absent or empty: every packet.", .sub = &kMatchSection,
     .default_doc = "every packet"},
    {.name = "action", .kind = Kind::kEnum, .acc = member<&TrafficClassConfig::action>(),
     .doc = "`inspect`: to `listener`; `bypass`: straight back to its L2 neighbour, no Geneve; "
            "`drop`.",
     .enm = &kClassAction},
    {.name = "listener", .kind = Kind::kString, .acc = member<&TrafficClassConfig::listener>(),
     .doc = "`inspect` only: the listener the class's new flows go to.", .what = "a listener name",
     .after = kAfterAction,
     .range_doc = "a listener; without `listeners`: none or `default`",
     .default_doc = "none (required with `listeners`)"},
    {.name = "tag", .kind = Kind::kString, .acc = member<&TrafficClassConfig::tag>(),
     .doc = "Added to every packet of the class's flows in gwlb's tag option, with the direction, so "
            "an appliance serving several tenants tells them apart "
            "([wire-format.md](wire-format.md#tag-option)).",
     .what = "a tag number or name", .range_doc = "0..4294967295 (decimal or 0x hex), or a name in `tags`",
     .default_doc = "none"},
    {.name = "mirror", .kind = Kind::kSection, .acc = member<&TrafficClassConfig::mirror>(),
     .doc = "Copies of the class's packets, Geneve-wrapped, for passive tools, whatever its action "
            "([wire-format.md](wire-format.md#mirror-copies)).",
     .sub = &kMirrorSection, .default_doc = "none"},
};
const Section kClassSection{"traffic_classes[]", kClassKeys};

const Key kHealthEndpointKeys[] = {
    {.name = "listen", .kind = Kind::kString, .acc = member<&HealthEndpointConfig::listen>(),
     .doc = "HTTP: `GET /destinations/NAME` answers 200 (healthy) or 503; `GET /destinations` all.",
     .reload = Reload::kRestart, .what = "an address:port like 127.0.0.1:8081",
     .check = checkHealthListen, .range_doc = "`127.0.0.1:8081`, `[::1]:8081`",
     .default_doc = "empty (off)"},
};
const Section kHealthEndpointSection{"health_endpoint", kHealthEndpointKeys};

// --- Route announcement through BIRD (fleet.bird, fleet.grace_period).
const Key kBirdKeys[] = {
    {.name = "socket", .kind = Kind::kString, .acc = member<&BirdConfig::socket>(),
     .doc = "BIRD's control socket (`bird -s`); gwlbd connects to it as `birdc` does.",
     .reload = Reload::kRestart, .required = true, .what = "an absolute socket path",
     .check = checkBirdSocket, .range_doc = "absolute path, at most 107 bytes"},
    {.name = "protocols", .kind = Kind::kStrings, .acc = member<&BirdConfig::protocols>(),
     .doc = "BIRD protocols gwlbd enables to announce the node's routes and disables to "
            "withdraw them (e.g. a `disabled` static protocol exported over BGP).",
     .range = kBirdProtocolsList, .reload = Reload::kRestart, .required = true,
     .what = "a list of BIRD protocol names", .item_what = "a protocol name", .items = "protocols",
     .needs_one = true, .check = checkBirdProtocols,
     .range_doc = "1..16 of `A-Z a-z 0-9 _`, unique"},
};
const Section kBirdSection{"fleet.bird", kBirdKeys, birdBegin, nullptr, birdConfigured};

const Key kFleetKeys[] = {
    {.name = "node_name", .kind = Kind::kString, .acc = member<&FleetConfig::node_name>(),
     .doc = "This gateway's name in the fleet.", .reload = Reload::kRestart, .required = true,
     .what = "a node name", .check = checkNodeName, .range_doc = "1..63 of A-Z a-z 0-9 _ . -"},
    {.name = "secret", .kind = Kind::kString, .acc = member<&FleetConfig::secret>(),
     .doc = "The fleet secret (keys the flow hash and the cookies): 32 hex digits.",
     .reload = Reload::kRestart, .what = "32 hex digits", .check = checkFleetSecret,
     .range_doc = "32 hex digits", .default_doc = "see below", .secret = isInlineKey},
    {.name = "secret_file", .kind = Kind::kString, .acc = member<&FleetConfig::secret_file>(),
     .doc = "A file (mode 600) holding the fleet secret, instead of `secret`.",
     .reload = Reload::kRestart, .what = "an absolute file path", .check = checkSecretFile,
     .range_doc = "an absolute file path", .default_doc = "see below"},
    // Flow state sync (docs/fleet.md "Flow state sync").
    {.name = "sync_listen", .kind = Kind::kString, .acc = member<&FleetConfig::sync_listen>(),
     .doc = "This node's flow sync address: UDP for flow records, TCP for warm start (same port).",
     .reload = Reload::kRestart, .what = "an address:port like 10.0.0.1:7946",
     .check = checkSyncListen, .range_doc = "`10.0.0.1:7946`, `[2001:db8::1]:7946`",
     .default_doc = "empty (no sync)"},
    {.name = "peers", .kind = Kind::kStrings, .acc = member<&FleetConfig::peers>(),
     .doc = "The other nodes' `sync_listen` addresses: flow records go to each; a starting node "
            "asks them for their table (warm start).",
     .range = kSyncPeersList, .reload = Reload::kRestart, .what = "a list of address:port",
     .item_what = "an address:port", .items = "peers", .check = checkSyncPeers,
     .range_doc = "0..64 `ip:port`, unique; needs `sync_listen`", .default_doc = "none"},
    {.name = "warm_start_timeout", .kind = Kind::kSeconds,
     .acc = member<&FleetConfig::warm_start_timeout_s>(),
     .doc = "How long a starting node goes without any peer's table arriving (none answers, or "
            "each breaks off) before it goes on without one; a transfer that keeps arriving "
            "is never cut.",
     .range = kWarmStartRange, .reload = Reload::kRestart},
    {.name = "warm_start_connect_timeout", .kind = Kind::kMillis,
     .acc = member<&FleetConfig::warm_start_connect_timeout_ms>(),
     .doc = "Warm start: how long the TCP connect to one peer may take before the next peer "
            "is asked.",
     .range = kWarmConnectMsRange, .reload = Reload::kRestart},
    {.name = "warm_start_idle_timeout", .kind = Kind::kMillis,
     .acc = member<&FleetConfig::warm_start_idle_timeout_ms>(),
     .doc = "Warm start: how long one peer may send nothing (before its first message, or "
            "mid-transfer) before the next peer is asked.",
     .range = kWarmIdleMsRange, .reload = Reload::kRestart},
    // --- Route announcement through BIRD.
    {.name = "bird", .kind = Kind::kSection, .acc = member<&FleetConfig::bird>(),
     .doc = "Announce this node's routes through BIRD ([fleet.md](fleet.md)); absent: none.",
     .sub = &kBirdSection, .default_doc = "off"},
    {.name = "grace_period", .kind = Kind::kSeconds, .acc = member<&FleetConfig::grace_period_s>(),
     .doc = "With `bird`, on SIGTERM: routes withdrawn, forwarding goes on this long, then exit.",
     .range = kGraceRange, .reload = Reload::kRestart},
};
const Section kFleetSection{"fleet", kFleetKeys, fleetBegin, nullptr, fleetConfigured};

const Key kTagKeys[] = {
    {.name = "name", .kind = Kind::kString, .acc = member<&TagConfig::name>(),
     .doc = "What `traffic_classes[].tag` names.", .required = true, .what = "a tag name",
     .range_doc = "1..63 of `A-Z a-z 0-9 _ . -`, not starting with a digit, unique"},
    {.name = "value", .kind = Kind::kUint, .acc = member<&TagConfig::value>(),
     .doc = "The 32-bit number the tag option carries.", .range = kU32TagRange, .required = true,
     .range_doc = "0..4294967295"},
};
const Section kTagSection{"tags[]", kTagKeys};

const Key kRootKeys[] = {
    {.name = "node", .kind = Kind::kSection, .acc = member<&Config::node>(),
     .doc = "This node's underlay settings.", .required = true, .sub = &kNodeSection},
    {.name = "server_groups", .kind = Kind::kList, .acc = member<&Config::server_groups>(),
     .doc = "Groups of appliances.", .range = kGroupsList, .required = true,
     .what = "a list of server groups", .items = "groups", .needs_one = true,
     .sub = &kGroupSection, .check = checkGroupCount, .range_doc = "1..64"},
    {.name = "dataplane", .kind = Kind::kSection, .acc = member<&Config::dataplane>(),
     .doc = "Worker and memory sizing.", .sub = &kDataplaneSection},
    {.name = "eal", .kind = Kind::kStrings, .acc = member<&Config::eal_args>(),
     .doc = "Extra arguments of DPDK's `rte_eal_init`.", .range = kMaxEalArgs,
     .reload = Reload::kRestart, .what = "a list of strings", .item_what = "a string",
     .items = "arguments"},
    {.name = "log_level", .kind = Kind::kString, .acc = member<&Config::log_level>(),
     .doc = "Least severity that is logged.", .reload = Reload::kRestart, .what = "a log level",
     .check = checkLogLevel,
     .range_doc = "`trace`, `debug`, `info`, `warn`, `error`, `critical`, `off`"},
    {.name = "control", .kind = Kind::kSection, .acc = member<&Config::control>(),
     .doc = "The local control API socket (`gwlbctl`).", .sub = &kControlSection},
    {.name = "metrics", .kind = Kind::kSection, .acc = member<&Config::metrics>(),
     .doc = "Prometheus text exposition over HTTP.", .sub = &kMetricsSection},
    {.name = "health_aggregation_policies", .kind = Kind::kList,
     .acc = member<&Config::health_aggregation_policies>(),
     .doc = "How a health source judges its group.", .range = kMaxPolicies,
     .what = "a list of policies", .sub = &kPolicySection},
    {.name = "health_sources", .kind = Kind::kList, .acc = member<&Config::health_sources>(),
     .doc = "One server group judged by one policy.", .range = kMaxHealthSources,
     .what = "a list of health sources", .sub = &kSourceSection},
    {.name = "composite_health_checks", .kind = Kind::kList,
     .acc = member<&Config::composite_health_checks>(),
     .doc = "Health sources combined (AND) into a listener's health.", .range = kMaxComposites,
     .what = "a list of composite health checks", .sub = &kCompositeSection},
    {.name = "listeners", .kind = Kind::kList, .acc = member<&Config::listeners>(),
     .doc = "Services: server groups as regions in order of preference.", .range = kNamesList,
     .what = "a list of listeners", .items = "listeners", .sub = &kListenerSection,
     .check = checkListenerCount, .range_doc = "at most 16",
     .default_doc = "one over the first group"},
    {.name = "tags", .kind = Kind::kList, .acc = member<&Config::tags>(),
     .doc = "Names for the values of `traffic_classes[].tag`.", .range = kTagsList,
     .what = "a list of tags", .items = "tags", .sub = &kTagSection, .range_doc = "at most 1024"},
    {.name = "traffic_classes", .kind = Kind::kList, .acc = member<&Config::traffic_classes>(),
     .doc = "Which new flows go to which listener, are bypassed or dropped: first match wins; "
            "no match: dropped.",
     .range = kClassesList, .what = "a list of traffic classes", .items = "classes",
     .sub = &kClassSection, .check = checkClassCount, .range_doc = "at most 1000",
     .default_doc = "none: everything to the first listener"},
    {.name = "health_endpoint", .kind = Kind::kSection, .acc = member<&Config::health_endpoint>(),
     .doc = "HTTP health of the listeners, for consumers.", .sub = &kHealthEndpointSection},
    {.name = "fleet", .kind = Kind::kSection, .acc = member<&Config::fleet>(),
     .doc = "This gateway as one of a fleet (docs/fleet.md); absent: a single gateway.",
     .sub = &kFleetSection},
};
const Section kRoot{"", kRootKeys};

}  // namespace

const Section& rootSection() { return kRoot; }

}  // namespace gwlb::ctl::schema
