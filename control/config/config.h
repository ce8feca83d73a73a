// gwlbd configuration: a typed struct with named defaults, a YAML loader and a
// validator that reports every error with its key path. Control-thread code:
// allocates and may throw only where stated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "common/net_types.h"

namespace gwlb::ctl {

enum class Stickiness : uint8_t { kFiveTuple, kThreeTuple, kTwoTuple };
enum class GeneveFormat : uint8_t { kAws, kEthernet, kNsi };
// How a group's packets travel to its appliances: Geneve (the `geneve` map)
// or VXLAN with Azure's two tunnels (the `vxlan` map).
enum class Encapsulation : uint8_t { kGeneve, kVxlan };

const char* toString(Stickiness s);
const char* toString(GeneveFormat f);
const char* toString(Encapsulation e);

struct ApplianceConfig {
  IpAddr address;                // underlay address of the appliance (required); IPv6: Geneve over IPv6
  uint32_t weight = 100;         // 0..10000; 0 = in config but receives no new flows
  std::optional<MacAddr> mac;    // optional static MAC; else node.gateway_mac, else ARP
};

struct GeneveConfig {
  GeneveFormat format = GeneveFormat::kAws;
  uint32_t vni = 0;              // 0..0xFFFFFF
  uint64_t endpoint_id = 0;      // aws option type 1; nsi: the endpoint ID's high half (32 bits)
  uint64_t attachment_id = 0;    // aws option type 2
};

// One VXLAN tunnel interface (Azure: a pool's tunnel interface): the UDP
// port gwlbd sends to and accepts returns on, and its VNI.
struct VxlanTunnelConfig {
  uint16_t port = 0;             // 1..65535, not 6081
  uint32_t vni = 0;              // 0..0xFFFFFF
};
// Azure's defaults: internal 10800/800, external 10801/801. External carries
// the packets travelling the way their flow's first packet did, internal
// the replies (docs/deploy.md "Choosing a format and family").
struct VxlanConfig {
  VxlanTunnelConfig internal{10800, 800};
  VxlanTunnelConfig external{10801, 801};
};

enum class HealthProtocol : uint8_t { kTcp, kHttp, kHttps };
enum class WhenAllUnhealthy : uint8_t { kFailOpen, kDrop };
// Where existing flows of an appliance that left go (docs/product-rules.md section 2).
enum class FailoverMode : uint8_t { kNoRebalance, kRebalance };
const char* toString(HealthProtocol p);
const char* toString(WhenAllUnhealthy w);
const char* toString(FailoverMode m);

// Connection draining of appliances removed from a group (or drained by
// `gwlbctl server drain`): existing flows stay for up to timeout_s.
struct DrainingConfig {
  bool enabled = false;
  uint32_t timeout_s = 300;                // 1..3600
};

// TCP resets for flows that cannot continue (docs/product-rules.md section 2),
// scoped as AWS Gateway Load Balancer scopes its own: on_unhealthy and
// on_deregistration are server group settings (AWS: target group attributes),
// on_idle_timeout a listener's (AWS: a listener attribute). Off by default.
struct GroupTcpResetConfig {
  bool on_unhealthy = false;
  bool on_deregistration = false;
};
struct ListenerTcpResetConfig {
  bool on_idle_timeout = false;
  // Not AWS's: a fleet node whose peers' flow records may be missing resets a
  // segment without SYN and without an entry rather than guess its appliance
  // (docs/fleet.md "A segment with no record"). On by default: it acts only
  // in a fleet, only then, and a guess sends a stateful appliance a flow it drops.
  bool on_fleet_view_incomplete = true;
};
// Appliance-requested bypass (docs/product-rules.md "Appliance-requested
// bypass"): whether an appliance of the listener may hand a flow back with
// gwlb's bypass option, and for how long at most (0: as long as it asks,
// the flow's life included).
struct ApplianceBypassConfig {
  bool allow = false;
  uint32_t max_seconds = 0;                  // 0..3600
};
// Passive detection (docs/product-rules.md "Passive detection"): an appliance
// in service that was sent at least min_packets Geneve packets and returned
// none over the last window is ejected, unhealthy (no returns), while fewer
// than max_ejection_percent of its group are (at least one may be). An
// ejected appliance stays out for base_ejection_time x its ejections in a
// row, at most max(max_ejection_time, base_ejection_time), as Envoy's outlier
// detection.
struct PassiveCheckConfig {
  bool enabled = false;
  uint32_t min_packets = 100;              // 1..10^9
  uint32_t window_ms = 5000;               // 100 ms..300 s
  uint32_t max_ejection_percent = 50;      // 0..100
  uint32_t base_ejection_time_ms = 30000;  // 0..3600 s (0: back by its checks alone)
  uint32_t max_ejection_time_ms = 300000;  // 0..86400 s
};
// Flap dampening (docs/product-rules.md "Flap dampening"): each change between in
// service and out of it adds `penalty`, halved every half_life; above
// `suppress` the appliance is held down (dampened) until the penalty is
// below `reuse`, at most max_hold after its last change.
struct DampeningConfig {
  bool enabled = false;
  uint32_t penalty = 1000;                 // 1..100000
  uint32_t suppress = 3000;                // > reuse
  uint32_t reuse = 750;                    // 1..100000
  uint32_t half_life_s = 60;               // 1..3600
  uint32_t max_hold_s = 600;               // 1..86400
};

// Health checks of a group's appliances (docs/product-rules.md section 1). Off when the
// section is absent; `enabled` defaults to true once it is present.
struct HealthCheckConfig {
  bool configured = false;                 // the section is present
  bool enabled = true;
  HealthProtocol protocol = HealthProtocol::kTcp;
  uint16_t port = 80;                      // 1..65535
  std::string path = "/";                  // http(s): 1..80 chars, starts with '/'
  std::string domain;                      // optional, 1..80 chars [A-Za-z0-9.-], labels, one trailing dot
  std::vector<std::string> http_codes = {"http_2xx", "http_3xx"};
  uint32_t interval_ms = 2000;             // 10 ms..300 s
  uint32_t timeout_ms = 5000;              // 10 ms..300 s
  uint32_t healthy_threshold = 3;          // 2..10
  uint32_t unhealthy_threshold = 3;        // 2..10
  // Where probes travel (docs/deploy.md "Where probes travel"): without
  // `interface`, the data path (the exception-path tap of node.underlay_port,
  // from node.underlay_ip); with it, a management path bound to that device,
  // from `source` when set. Checked by probePathErrors (control/health/probe_path.h).
  std::string interface;                   // "" or 1..15 bytes: SO_BINDTODEVICE
  std::optional<IpAddr> source;            // management path only: bind probes to this address
  bool verify = false;                     // https: verify the certificate (implied by ca_file)
  std::string ca_file;                     // https: CA bundle; required with verify
  bool keep_alive = false;                 // http(s): ask on a kept connection after a fresh connect
  bool jitter = true;                      // spread first probes over one interval
  // The in-band check (docs/product-rules.md "Forwarding checks"): beside the
  // check above, an ICMP echo request from probe_src to probe_dst, wrapped as
  // data for the appliance, must come back wrapped from it within timeout.
  bool forwarding = false;
  struct ForwardingProbe {
    IpAddr src = IpAddr::v4(0xC6120001);   // 198.18.0.1 (RFC 2544 benchmarking range)
    IpAddr dst = IpAddr::v4(0xC6120002);   // 198.18.0.2
  } forwarding_probe;
  PassiveCheckConfig passive;
  DampeningConfig dampening;
  bool active() const { return configured && enabled; }
  bool forwardingActive() const { return active() && forwarding; }
};

struct ApplianceGroupConfig {
  std::string name;                          // required, unique, [A-Za-z0-9_.-]{1,63}
  Stickiness stickiness = Stickiness::kFiveTuple;
  GeneveConfig geneve;
  Encapsulation encapsulation = Encapsulation::kGeneve;
  VxlanConfig vxlan;                         // used with encapsulation: vxlan
  uint32_t maglev_table_size = 65537;        // prime, 251..1000003, > 100 x servers advised
  uint32_t tcp_idle_timeout_s = 350;         // 60..6000
  uint32_t other_idle_timeout_s = 120;       // 60..6000
  std::vector<ApplianceConfig> appliances;         // 1..4096, unique addresses
  HealthCheckConfig health_check;
  WhenAllUnhealthy when_all_unhealthy = WhenAllUnhealthy::kFailOpen;
  FailoverMode failover_mode = FailoverMode::kNoRebalance;
  DrainingConfig connection_draining;
  GroupTcpResetConfig send_tcp_reset;
  // Seconds over which an appliance that comes into service ramps up to its
  // full share of new flows (docs/product-rules.md "Slow start"); 0: at once.
  uint32_t slow_start_s = 0;                 // 0..3600
};

// One dataplane port's settings (node.ports[]). A port not listed gets its
// role by default: the underlay port is `appliance` when the dataplane has
// other ports and `both` when it is the only one; every other port is `router`.
struct PortConfig {
  uint16_t id = 0;                           // DPDK port id, 0..65535 (required)
  std::optional<PortRole> role;              // router | appliance | both
  // Frames are taken in only when addressed to the port's own MAC: this one,
  // else node.underlay_mac for the underlay port, else the device's MAC.
  std::optional<MacAddr> mac;
};

// The kernel exception path (docs/exception-path.md): one tap interface per
// DPDK port, named <name_prefix><port id>, through which frames for this
// node's own addresses that the dataplane does not handle reach the kernel,
// and what the kernel sends leaves by the port. Off: such frames are dropped
// (drop_not_for_us), as before.
struct ExceptionPathConfig {
  bool enabled = false;
  std::string name_prefix = "gwlb";          // 1..10 of [A-Za-z0-9_.-], not starting with - or .
};

struct NodeConfig {
  // The IPv4 underlay address, the source of Geneve to IPv4 appliances and
  // where their returns come to; the IPv6 one the same for IPv6 appliances.
  // At least one; each is required when an appliance of its family is listed,
  // so an IPv6-only node has no IPv4 underlay address at all.
  std::optional<IpAddr> underlay_ip;
  std::optional<IpAddr> underlay_ipv6;
  MacAddr underlay_mac;                      // required, unicast
  std::optional<MacAddr> gateway_mac;        // optional: next hop for all appliances
  uint16_t underlay_port = 0;                // DPDK port id facing the appliances
  uint32_t underlay_mtu = 1500;              // 576..9216: largest outer IPv4 packet
  uint32_t icmp_rate_per_s = 100;            // too-big errors per second per worker, 0..100000
  uint32_t tcp_reset_rate_per_s = 1000;      // send_tcp_reset RSTs per second per worker, 0..1000000
  // Keys the flow hash (common/flow_key.h): 32 hex digits (128 bits), or the
  // absolute path of a file holding them (no access for group or others).
  // "" = gwlbd picks a random key at start (gwlb-replay: the zero key). Every
  // gateway of a fleet must have the same one. Needs a restart to change.
  std::string flow_hash_secret;
  std::vector<PortConfig> ports;             // 0..64 entries, unique ids
  // IPv6 addresses routers use as this gateway's next hop: neighbor
  // solicitations for them are answered (0..16, unicast, unique).
  std::vector<IpAddr> ipv6_addresses;
  ExceptionPathConfig exception_path;
  // Microseconds a worker sleeps after a poll round that found nothing
  // (0 = busy polling, the default). For labs and VMs sharing few cores; each
  // packet that arrives while a worker sleeps waits up to this long.
  uint32_t idle_sleep_us = 0;
  // The Geneve option class of gwlb's own options (bypass from appliances),
  // from the experimental range 0xFF00..0xFFFF by default.
  uint16_t geneve_option_class = 0xFF01;
};

struct DataplaneConfig {
  uint32_t workers = 1;                      // worker lcores, 1..64
  uint32_t burst = 32;                       // 1..256
  uint32_t flow_table_size = 1u << 20;       // entries, 1024..(1 << 27)
  // The new flows a second the gateway is planned for, 0 = not said: a
  // planning figure, checked against flow_table_size (configWarnings).
  uint32_t new_flows_per_s = 0;
  uint32_t mbufs = 16384;                    // mempool size, 1024..(1 << 24)
  uint32_t rx_queue_size = 1024;             // descriptors per RX queue, 64..16384
  uint32_t tx_queue_size = 1024;             // descriptors per TX queue, 64..16384
  bool checksum_offload = true;              // outer IPv4/UDP checksums by the NIC when offered
};

// The local control API (docs/control-api.md).
struct ControlConfig {
  std::string socket = "/run/gwlbd/gwlbd.sock";  // absolute path, at most 107 bytes
  uint32_t socket_mode = 0660;                    // octal "0660"; 0..0777
  std::string socket_group;                       // group name or number; "" = gwlbd's group
};

// Prometheus text exposition over HTTP; off unless `listen` is set.
struct MetricsConfig {
  std::string listen;  // "127.0.0.1:9100" or "[::1]:9100"; "" = off
};

// Aggregated health (docs/product-rules.md section 3). A health source (one server group
// judged by one policy) is healthy when its healthy servers are at least
// min_healthy_percent of its servers and at least min_healthy_count.
struct AggregationPolicyConfig {
  std::string name;                          // unique, [A-Za-z0-9_.-]{1,63}
  uint32_t min_healthy_percent = 60;         // 0..100
  uint32_t min_healthy_count = 1;            // 0..4096
};
struct HealthSourceConfig {
  std::string name;                          // unique among sources and composites
  std::string server_group;                  // a server group's name
  std::string policy;                        // a policy's name; "" = the defaults (60 % / 1)
};
// Healthy when every source is (AND); its state goes to its destination, a
// listener. dry_run: computed, shown, logged and exported, never acted upon.
struct CompositeHealthCheckConfig {
  std::string name;
  std::vector<std::string> sources;          // 1..16 health source names (not composites)
  std::string destination;                   // a listener's name
  bool dry_run = false;
};
// A service: new flows go to the first of its server groups (regions, in
// order of preference) whose region is healthy.
struct ListenerConfig {
  std::string name;
  std::vector<std::string> server_groups;    // 1..16 group names, each in at most one listener
  uint32_t failback_hold_s = 0;              // 0..3600: a region must stay healthy this long before traffic returns
  WhenAllUnhealthy when_all_unhealthy = WhenAllUnhealthy::kFailOpen;  // no region healthy
  ListenerTcpResetConfig send_tcp_reset;
  ApplianceBypassConfig appliance_bypass;
};
// Traffic classes: an ordered list, first match wins, that sends
// each new flow to a listener (inspect), straight back (bypass) or nowhere
// (drop). Every field given must match; a field left empty matches all.
// prefixes and l4_ports match either endpoint of the flow, and ingress_ports
// and vlans list both directions' values, so both directions of a flow
// classify alike.
struct PortRange {
  uint16_t lo = 0, hi = 0;                   // lo <= hi; one port: lo == hi
};
struct PrefixConfig {
  IpAddr addr;                               // host bits zero
  uint8_t len = 0;                           // 0..32 (IPv4), 0..128 (IPv6)
};
struct TrafficClassMatch {
  std::vector<uint16_t> ingress_ports;       // DPDK port ids
  std::vector<uint16_t> vlans;               // 0..4094; 0 = untagged
  std::vector<PrefixConfig> prefixes;        // IPv4 and IPv6 CIDRs
  std::vector<uint8_t> protocols;            // IP protocol numbers (tcp, udp, ... by name in YAML)
  std::vector<PortRange> l4_ports;           // ports and ranges "1000-2000"
  // A file of more prefixes (control/config/prefix_list.h), "" = none: once
  // loaded, its absolute path; its prefixes are the last file_prefixes of
  // `prefixes`, so every reader of the classes sees one list.
  std::string prefixes_file;
  uint32_t file_prefixes = 0;
  std::string prefixes_file_sha256;          // of the bytes read (gwlbctl config dump shows it)
};
enum class ClassAction : uint8_t { kInspect, kBypass, kDrop };
const char* toString(ClassAction a);  // "inspect", "bypass", "drop"
// Copies of a class's packets for passive tools: the appliances of a server
// group that serves no listener (docs/config.md, traffic_classes[].mirror).
struct ClassMirrorConfig {
  std::string group;      // "" = no mirror
  uint32_t truncate = 0;  // bytes of each packet copied at most (0: all; else 64..65535)
  uint32_t sample = 1;    // one packet in `sample` (1: every packet)
  bool operator==(const ClassMirrorConfig&) const = default;
};
// A name for a tag value (top-level `tags`), so classes can say `tag: tenant-a`.
struct TagConfig {
  std::string name;
  uint32_t value = 0;
};
// The value of a class's tag: its number, or its name's in `tags`; nullopt
// when it has none or it names no tag (the validator reports that).
std::optional<uint32_t> classTagValue(const std::vector<TagConfig>& tags, const std::string& tag);
struct TrafficClassConfig {
  std::string name;                          // 1..63 chars, unique
  TrafficClassMatch match;
  ClassAction action = ClassAction::kInspect;
  // inspect: a configured listener's name. Without `listeners` it is empty
  // or "default": the implicit listener 0 over the first server group.
  std::string listener;
  ClassMirrorConfig mirror;
  // A number (decimal or 0x hex, 32 bits) or a name in Config::tags: added to
  // every packet of the class's flows as gwlb's tag option. "" = none.
  std::string tag;
};

// HTTP health endpoint for consumers: GET /destinations/<listener> -> 200 / 503.
struct HealthEndpointConfig {
  std::string listen;                        // "127.0.0.1:8081"; "" = off
};

// BIRD's control socket and the protocols gwlbd enables (announce) and
// disables (withdraw) there (docs/fleet.md).
struct BirdConfig {
  bool configured = false;              // the section is in the file
  std::string socket;                   // required: absolute path, at most 107 bytes
  std::vector<std::string> protocols;   // required: 1..16 BIRD protocol names
};

// A fleet of gateways behind the routers' ECMP (docs/fleet.md). Without the
// section the node is a single gateway, as before.
struct FleetConfig {
  bool configured = false;  // the section is in the file
  std::string node_name;    // required in the section: [A-Za-z0-9_.-]{1,63}
  // The fleet secret, 128 bits: it keys the flow hash (so every node picks
  // the same appliance) and the flow cookies (so every node accepts the
  // cookies the others send). `secret` holds its 32 hex digits, `secret_file`
  // names a file (absolute path, no access for group or others) holding them.
  // At least one; every one of secret, secret_file and node.flow_hash_secret
  // that is set must hold the same key. Needs a restart to change.
  std::string secret;
  std::string secret_file;
  // Flow state sync (docs/fleet.md "Flow state sync"). sync_listen: this
  // node's sync address, "ip:port" (UDP for records, TCP for warm start);
  // "" = no sync. peers: the other nodes' sync addresses (0..64, unique,
  // needs sync_listen). warm_start_timeout_s: how long a starting node goes
  // without any peer's table arriving before it goes on without one (1..600).
  // Per peer asked: warm_start_connect_timeout_ms for the TCP connect
  // (100..60000), warm_start_idle_timeout_ms without a byte from it, its
  // first answer included (100..600000); then the next peer is asked.
  std::string sync_listen;
  std::vector<std::string> peers;
  uint32_t warm_start_timeout_s = 10;
  uint32_t warm_start_connect_timeout_ms = 2000;
  uint32_t warm_start_idle_timeout_ms = 3000;
  // --- Route announcement through BIRD (docs/fleet.md, "Announcing the routes").
  // Without a `bird` section gwlbd announces nothing and a SIGTERM stops it at once.
  BirdConfig bird;
  // On SIGTERM with `bird`: withdraw, keep forwarding this long, then exit (0..3600 s).
  uint32_t grace_period_s = 5;
};

// Server ids are shared by all groups; this bounds per-worker per-server counters.
inline constexpr size_t kMaxAppliancesTotal = 16384;

struct Config {
  NodeConfig node;
  std::vector<ApplianceGroupConfig> server_groups;  // 1..64; the first receives all inspected traffic
  DataplaneConfig dataplane;
  ControlConfig control;
  MetricsConfig metrics;
  std::vector<AggregationPolicyConfig> health_aggregation_policies;
  std::vector<HealthSourceConfig> health_sources;
  std::vector<CompositeHealthCheckConfig> composite_health_checks;
  // Empty: one implicit listener over the first server group.
  std::vector<ListenerConfig> listeners;     // 0..16; without traffic_classes the first receives all inspected traffic
  // 0..1000, first match wins; empty: every packet goes to the first listener
  std::vector<TrafficClassConfig> traffic_classes;
  std::vector<TagConfig> tags;               // names for traffic_classes[].tag values
  HealthEndpointConfig health_endpoint;
  FleetConfig fleet;
  std::vector<std::string> eal_args;         // passed to rte_eal_init before any after "--"
  std::string log_level = "info";            // trace|debug|info|warn|error|critical|off
  std::string source_path;                   // file it was loaded from ("" for text)
};

struct ConfigError {
  std::string path;     // key path, e.g. "server_groups[0].servers[2].address"
  std::string message;  // what is wrong, including the offending value
};

// Parses YAML text and validates it. Never throws: on any error (YAML syntax,
// unknown key, wrong type, range, reference, text that is not UTF-8) returns
// false and fills `errors` with every problem found (at most 100, then one
// line counting the rest), each with its key path. Work and memory are bounded
// by the text's size: lists longer than their limit are not walked, so YAML
// aliases cannot multiply them. Thread: any.
// Relative prefix files (traffic_classes[].match.prefixes_file) are read
// from `base_dir` ("": the current directory).
bool parseConfig(const std::string& yaml_text, Config& out, std::vector<ConfigError>& errors,
                 const std::string& base_dir = {});

// Largest config file read: YAML costs about a quarter of a second per MiB to
// load, so a file at this limit, with its classes checked and compiled, stays
// well under a second. Large prefix sets go to prefix files.
inline constexpr size_t kMaxConfigBytes = 1u << 20;

// Reads the file (at most kMaxConfigBytes; a directory, a missing or
// unreadable file is one error with path "") then parseConfig() with the
// file's directory as base_dir.
bool loadConfigFile(const std::string& path, Config& out, std::vector<ConfigError>& errors);

// Checks every rule (each key's range and form, and the rules between keys)
// on an already-typed Config (used by parseConfig; callable on a Config built
// in code). Appends to `errors`; returns errors.empty().
bool validateConfig(const Config& c, std::vector<ConfigError>& errors);

std::string formatErrors(const std::vector<ConfigError>& errors);

// The node's underlay addresses as text, for logs: "192.0.2.1",
// "2001:db8::1" (an IPv6-only node) or both, "192.0.2.1 and 2001:db8::1".
// Never throws but std::bad_alloc.
std::string underlayAddresses(const NodeConfig& n);

// The flow hash key node.flow_hash_secret names: its digits, or the file's
// (a regular file, not a symlink, without group/other permissions, holding
// the 32 digits and optional whitespace). `configured` is false when the key
// is "". Returns false with `error` set when the file cannot be used. Never
// throws; reads a file (start-up, --check-config, reload checks).
bool loadFlowHashKey(const NodeConfig& n, FlowHashKey& key, bool& configured, std::string& error);

// The key of the flow hash and the flow cookies (docs/fleet.md): the fleet
// secret (fleet.secret or fleet.secret_file) when the config has a `fleet`
// section, else node.flow_hash_secret. Every one of those that is set is
// read (files as loadFlowHashKey reads them) and all must hold the same key,
// else false with `error` naming them (never the key). `configured` is false
// when none is set (gwlbd then uses its own: loadStateKey). Never throws; reads files.
bool loadHashKey(const Config& c, FlowHashKey& key, bool& configured, std::string& error);

// The flow hash key gwlbd keeps for a config that sets none (no
// node.flow_hash_secret, no fleet secret): generated once, at the first start,
// and kept, so that a restart or an upgrade hashes every flow to the appliance
// it had (docs/config.md "The flow hash key"). Like an SSH host key: 32 hex
// digits in kStateKeyFile, mode 0600, in gwlbd's state directory (the .deb
// creates it at installation).
inline constexpr const char* kStateDirectory = "/var/lib/gwlb";
inline constexpr const char* kStateKeyFile = "flow_hash.key";
// gwlbd's state directory: `env` ($STATE_DIRECTORY, which systemd's
// StateDirectory= sets; the first of a ':'-separated list) when set, else
// kStateDirectory. Pure.
std::string stateDirectory(const char* env);
// A key nobody can predict (getrandom). Never throws.
FlowHashKey randomFlowHashKey();
enum class StateKeyOutcome : uint8_t { kRead, kCreated, kMissing, kNotReadable };
// Reads `dir`/kStateKeyFile as a secret file is read (loadFlowHashKey: a
// regular file, no symbolic link, no access for group or others, 32 hex
// digits). When it is missing: kMissing, or with `create` a new random key
// written there (the directory created 0700 when absent, the file 0600, made
// whole before it takes the name, so a concurrent start reads the same key):
// kCreated. Without `create` (a check), a file this user may not read (a
// check run by another user than gwlbd's, e.g. gwlbctl config check) is
// kNotReadable, not an error: gwlbd's start judges it. False with `error` (the path and what to do; never the key) when
// the file cannot be read, created or used. Never throws but bad_alloc;
// start-up and --check-config only.
bool loadStateKey(const std::string& dir, bool create, FlowHashKey& key, StateKeyOutcome& outcome,
                  std::string& error);

// What gwlbd refuses a file for before it runs it: loadConfigFile()'s errors,
// then the flow hash key's (loadHashKey: a secret file that is missing, a
// symbolic link, open to group or others, or not 32 hex digits; secrets that
// hold different keys) as one error with its key path. gwlbd's start-up,
// --check-config and reload, and `gwlbctl config check` all call it, so they
// accept and refuse the same files. `key`/`key_configured` (optional) get
// the key. Never throws but bad_alloc; reads files. Thread: any.
bool loadRunnableConfig(const std::string& path, Config& out, std::vector<ConfigError>& errors,
                        FlowHashKey* key = nullptr, bool* key_configured = nullptr);

// What follows "KEY: holds another key than OTHER" when two sources of the
// flow hash key disagree: the inline keys compared by the config's checks,
// the secret files' by loadRunnableConfig(); one message for both.
inline constexpr const char* kOneHashKeyAdvice =
    " (values not shown); a gateway's flow hash and cookies have one key (the fleet secret): "
    "set the same key in both, or only one of them";

// The name restartNeeded() gives a change of `running`'s flow hash key ("fleet"
// when a fleet section holds it): what a reload reports when the key read
// from a secret file changed though the file's path did not.
std::string hashKeyRestartName(const Config& running);

// The lcores the EAL will have: counted from -l, --lcores or -c in `eal`
// (the first of them), else the CPUs this process may run on (the EAL then
// makes one lcore per CPU). 0 when an option cannot be read (the EAL judges
// it). Thread: any.
unsigned ealLcoreCount(const std::vector<std::string>& eal);

// "" when the lcores `eal` gives (ealLcoreCount) can run dataplane.workers
// (one each, plus the main lcore); else what to change. gwlbd's start-up
// fails on it after the EAL starts; --check-config and `gwlbctl config check`
// say it first.
std::string checkLcores(const Config& c, const std::vector<std::string>& eal);

// What a valid config most likely did not mean, each with its key path: a
// server group no listener serves (without `listeners`, any but the first),
// a server group without health_check (its appliances count as healthy
// forever); a traffic class an earlier one shadows (no packet can reach it),
// a first class that drops or bypasses every packet, a class ingress port
// that does not exist, an inspect class whose listener has no server group,
// a listener no class names (with traffic_classes). The shadow check's work
// is bounded: past its bound it says which classes it did not judge.
// `ports`: how many DPDK ports gwlbd has; 0 when not known (a file checked
// alone): then the ports are 0 .. the highest id node.underlay_port and
// node.ports give, as gwlb-replay has them.
// gwlbd logs them at start and on reload; --check-config and `gwlbctl config
// check` print them (they do not make the file invalid). Thread: any.
std::vector<ConfigError> configWarnings(const Config& c, unsigned ports = 0);

// The config as YAML that parseConfig() reads back to the same Config (the
// key table walked: every key, defaults included; sections and lists that
// are absent or empty left out). Secrets written in the config (fleet.secret,
// node.flow_hash_secret's digits) become a comment unless `secrets`; their
// paths go to `hidden`. Never throws but bad_alloc. Thread: any.
struct DumpOptions {
  bool secrets = false;
};
std::string dumpConfig(const Config& c, const DumpOptions& opt = {},
                       std::vector<std::string>* hidden = nullptr);

// Every key the loader accepts, as a path with "[]" for list indexes (e.g.
// "server_groups[].servers[].address"), sections included, in schema order
// (each section followed by its keys). From the key table (config_schema.cc).
std::vector<std::string> configKeyPaths();

// The keys whose change a reload cannot apply (they shape ports, memory,
// lcores, sockets or the process's logging), changed from `running` to `next`:
// a section whose every key needs a restart by its name ("dataplane",
// "control", "metrics", "health_endpoint"), other keys by their path
// ("node.underlay_port", "node.flow_hash_secret", "eal", "log_level").
// Compared through the key table, so a new key marked restart is covered.
// Never throws but bad_alloc. Thread: any.
std::vector<std::string> restartNeeded(const Config& running, const Config& next);

// Every name restartNeeded() can give, in schema order: the settings a
// reload cannot apply (`gwlbctl reload --help` lists them). Thread: any.
std::vector<std::string> restartKeyNames();

// restartNeeded(), after which `next` takes the running value of every key
// that needs a restart (what a reload applies is then `next`).
std::vector<std::string> holdRestartKeys(const Config& running, Config& next);

// An appliance the running config has otherwise than its file: a runtime
// change (gwlbd's server add, remove and set; gwlb-replay's events) since the
// file was read. The config file is the source of truth: a reload reverts
// every one the reloaded file does not carry (docs/cli.md).
struct RuntimeChange {
  std::string group;
  IpAddr address;
  int64_t file_weight = -1;     // -1: not in the file
  int64_t running_weight = -1;  // -1: not running
  int64_t after_reload = -1;    // revertedByReload only; -1: absent after it
  // "added" (at runtime, not in the file), "removed" or "weight".
  const char* change() const;
  // "192.0.2.12 (group fw): removed at runtime, still in the file", as
  // gwlbctl words it.
  std::string text() const;
};
// How `running` differs from `file` in its appliances, the running config's
// appliances first. Never throws but bad_alloc. Thread: any.
std::vector<RuntimeChange> runtimeChanges(const Config& file, const Config& running);
// The runtime changes (from `file` to `running`) that a reload to `next`
// reverts: those `next` does not repeat. Never throws but bad_alloc.
std::vector<RuntimeChange> revertedByReload(const Config& file, const Config& running,
                                            const Config& next);

// The key table of docs/config.md (Markdown): every key with its type,
// default, range, whether a reload applies it, and its line of doc.
std::string configKeyTable();

// Splits "host:port" / "[v6]:port" into an address and port. False when malformed.
bool parseListen(const std::string& s, IpAddr& addr, uint16_t& port);

}  // namespace gwlb::ctl
