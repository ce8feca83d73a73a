// The config's key table, the node's parts: node (its ports, exception
// path), dataplane, control, metrics, health_endpoint and fleet (flow sync,
// BIRD), with the rules on one key's value alone (Key::check).
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

#include "control/config/config_schema.h"
#include "control/config/config_schema_parts.h"

namespace gwlb::ctl::schema {
namespace {

// A key's digits written in the config itself, not a file's path.
bool isInlineKey(const std::string& v) { return !v.empty() && v[0] != '/'; }

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

void checkPortCount(const void* v, const std::string& path, Report& r) {
  size_t n = as<std::vector<PortConfig>>(v).size();
  if (n > kMaxPortEntries) r.add(path, tooMany(n, kMaxPortEntries, "ports", false));
}

// AWS's class would make gwlb read AWS's own options as its requests.
void checkOptionClass(const void* v, const std::string& path, Report& r) {
  if (as<uint16_t>(v) == 0x0108)
    r.add(path, "0x0108 is AWS's option class; pick another (default 0xFF01, experimental range)");
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
     .doc = "This node's IPv4 underlay address, the source of Geneve to IPv4 appliances. "
            "Required unless the node is IPv6-only (`underlay_ipv6` set, no IPv4 appliance).",
     .what = "this node's IPv4 address on the underlay", .default_doc = "none"},
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
}  // namespace
const Section kNodeSection{"node", kNodeKeys};
namespace {

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
}  // namespace
const Section kDataplaneSection{"dataplane", kDataplaneKeys};
namespace {

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
}  // namespace
const Section kControlSection{"control", kControlKeys};
namespace {

const Key kMetricsKeys[] = {
    {.name = "listen", .kind = Kind::kString, .acc = member<&MetricsConfig::listen>(),
     .doc = "Serve Prometheus metrics on `GET /metrics` at this address.",
     .reload = Reload::kRestart, .what = "an address:port like 127.0.0.1:9100",
     .check = checkMetricsListen, .range_doc = "`127.0.0.1:9100`, `[::1]:9100`",
     .default_doc = "empty (off)"},
};
}  // namespace
const Section kMetricsSection{"metrics", kMetricsKeys};
namespace {

const Key kHealthEndpointKeys[] = {
    {.name = "listen", .kind = Kind::kString, .acc = member<&HealthEndpointConfig::listen>(),
     .doc = "HTTP: `GET /destinations/NAME` answers 200 (healthy) or 503; `GET /destinations` all.",
     .reload = Reload::kRestart, .what = "an address:port like 127.0.0.1:8081",
     .check = checkHealthListen, .range_doc = "`127.0.0.1:8081`, `[::1]:8081`",
     .default_doc = "empty (off)"},
};
}  // namespace
const Section kHealthEndpointSection{"health_endpoint", kHealthEndpointKeys};
namespace {

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
}  // namespace
const Section kFleetSection{"fleet", kFleetKeys, fleetBegin, nullptr, fleetConfigured};
}  // namespace gwlb::ctl::schema
