// The config's key table, part server_groups[]: the keys of a group and of
// everything under it (its appliances, tunnels, health check, draining,
// resets), with the rules on one key's value alone (Key::check). Sections
// innermost first; fields not given keep Key's defaults: reloadable,
// optional, no range, no extra check.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "common/http_codes.h"
#include "common/maglev.h"
#include "control/config/config_schema.h"
#include "control/config/config_schema_parts.h"

namespace gwlb::ctl::schema {

void checkGroupCount(const void* v, const std::string& path, Report& r) {
  size_t n = as<std::vector<ApplianceGroupConfig>>(v).size();
  if (n == 0) r.add(path, "at least one server group is required");
  else if (n > kMaxGroups) r.add(path, tooMany(n, kMaxGroups, "groups", true));
}

namespace {

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

void checkAppliances(const void* v, const std::string& path, Report& r) {
  const auto& s = as<std::vector<ApplianceConfig>>(v);
  if (s.empty()) r.add(path, "has no servers; allowed 1.." + std::to_string(kMaxAppliances));
  else if (s.size() > kMaxAppliances) r.add(path, tooMany(s.size(), kMaxAppliances, "servers", true));
  bool any_weight = std::any_of(s.begin(), s.end(), [](const ApplianceConfig& x) { return x.weight > 0; });
  if (!s.empty() && !any_weight)
    r.add(path, "every server has weight 0; at least one server needs weight > 0");
}

// Smallest prime >= n, or 0 if there is none up to the allowed maximum.
uint32_t nextPrime(uint32_t n) {
  for (uint64_t p = n; p <= kMaglevRange.hi; ++p)
    if (isPrime(static_cast<uint32_t>(p))) return static_cast<uint32_t>(p);
  return 0;
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

constexpr std::string_view kAfterProtocol[] = {"protocol"};
constexpr std::string_view kAfterProtocolVerify[] = {"protocol", "verify"};

const Key kApplianceKeys[] = {
    {.name = "address", .kind = Kind::kIp, .acc = member<&ApplianceConfig::address>(),
     .doc = "The appliance's underlay address; unique in the file, not this node's. IPv6: "
            "Geneve over IPv6 from `node.underlay_ipv6`.",
     .required = true, .what = "the appliance's IPv4 or IPv6 address"},
    {.name = "weight", .kind = Kind::kUint, .acc = member<&ApplianceConfig::weight>(),
     .doc = "Share of new flows, relative to the group's other servers; 0: none.",
     .range = kWeightRange},
    {.name = "mac", .kind = Kind::kMac, .acc = member<&ApplianceConfig::mac>(),
     .doc = "Fixed MAC of this appliance (else `node.gateway_mac`, else ARP; IPv6: neighbor discovery)."},
};
const Section kApplianceSection{"server_groups[].servers[]", kApplianceKeys};

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
    {.name = "keep_alive", .kind = Kind::kBool, .acc = member<&HealthCheckConfig::keep_alive>(),
     .doc = "`http(s)` only: each probe still connects afresh (and resets), then asks on the "
            "connection kept from the last probe: no TLS handshake a probe "
            "([product-rules.md](product-rules.md#1-health-checks)).",
     .after = kAfterProtocol},
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
    {.name = "name", .kind = Kind::kString, .acc = member<&ApplianceGroupConfig::name>(),
     .doc = "Used in logs, counters and references.", .required = true, .what = "a group name",
     .range_doc = kNameRule},
    {.name = "stickiness", .kind = Kind::kEnum, .acc = member<&ApplianceGroupConfig::stickiness>(),
     .doc = "Which fields of a flow pick its appliance.", .enm = &kStickiness},
    {.name = "geneve", .kind = Kind::kSection, .acc = member<&ApplianceGroupConfig::geneve>(),
     .doc = "How packets are encapsulated for this group.", .sub = &kGeneveSection},
    {.name = "encapsulation", .kind = Kind::kEnum, .acc = member<&ApplianceGroupConfig::encapsulation>(),
     .doc = "Tunnel to the appliances: Geneve (the `geneve` map) or VXLAN as Azure's Gateway Load "
            "Balancer sends it (the `vxlan` map).",
     .enm = &kEncapsulation},
    {.name = "vxlan", .kind = Kind::kSection, .acc = member<&ApplianceGroupConfig::vxlan>(),
     .doc = "`encapsulation: vxlan`: the group's two tunnels.", .sub = &kVxlanSection},
    {.name = "maglev_table_size", .kind = Kind::kUint,
     .acc = member<&ApplianceGroupConfig::maglev_table_size>(),
     .doc = "Size of the consistent-hashing table; over 100 x the servers is advised.",
     .range = kMaglevRange, .check = checkMaglevPrime,
     .range_doc = "a prime in 251..1000003, > the servers"},
    {.name = "tcp_idle_timeout", .kind = Kind::kSeconds,
     .acc = member<&ApplianceGroupConfig::tcp_idle_timeout_s>(),
     .doc = "A TCP flow with no packets for this long is forgotten.", .range = kIdleRange},
    {.name = "other_idle_timeout", .kind = Kind::kSeconds,
     .acc = member<&ApplianceGroupConfig::other_idle_timeout_s>(),
     .doc = "The same for UDP and every other protocol.", .range = kIdleRange},
    {.name = "servers", .kind = Kind::kList, .acc = member<&ApplianceGroupConfig::appliances>(),
     .doc = "The appliances of this group.", .range = kAppliancesList, .required = true,
     .what = "a list of servers", .items = "servers", .needs_one = true, .sub = &kApplianceSection,
     .check = checkAppliances, .range_doc = "1..4096, one with weight > 0"},
    {.name = "health_check", .kind = Kind::kSection,
     .acc = member<&ApplianceGroupConfig::health_check>(),
     .doc = "Health checks of the appliances; off when absent.", .sub = &kHealthSection,
     .default_doc = "off"},
    {.name = "when_all_unhealthy", .kind = Kind::kEnum,
     .acc = member<&ApplianceGroupConfig::when_all_unhealthy>(),
     .doc = "No appliance in service: new flows spread over all (`fail_open`) or are dropped.",
     .enm = &kWhenAllUnhealthy},
    {.name = "failover_mode", .kind = Kind::kEnum, .acc = member<&ApplianceGroupConfig::failover_mode>(),
     .doc = "Where existing flows of an appliance that failed or left go.", .enm = &kFailoverMode},
    {.name = "connection_draining", .kind = Kind::kSection,
     .acc = member<&ApplianceGroupConfig::connection_draining>(),
     .doc = "Draining of removed or drained appliances.", .sub = &kDrainingSection},
    {.name = "send_tcp_reset", .kind = Kind::kSection,
     .acc = member<&ApplianceGroupConfig::send_tcp_reset>(),
     .doc = "RSTs for TCP flows whose appliance failed or left ([product-rules.md](product-rules.md#2-existing-flows-when-an-appliance-leaves-rebalance-and-draining)).",
     .sub = &kGroupResetSection},
    {.name = "slow_start", .kind = Kind::kSeconds, .acc = member<&ApplianceGroupConfig::slow_start_s>(),
     .doc = "An appliance coming into service ramps up to its share of new flows over this time.",
     .range = kHoldRange},
};
}  // namespace
const Section kGroupSection{"server_groups[]", kGroupKeys};
}  // namespace gwlb::ctl::schema
