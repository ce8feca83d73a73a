// Where health probes travel (docs/deploy.md "Where probes travel").
//
// A probe must see what the data sees. By default (the data path) probes are
// kernel sockets bound (SO_BINDTODEVICE) to the exception-path tap of the
// appliance port (node.underlay_port), from node.underlay_ip: the kernel
// writes them to the tap, gwlbd sends them out of the DPDK port, and the
// answers come back through the dataplane's exception path. Probes to IPv6
// appliances come from node.underlay_ipv6 the same way. A dead port, a
// wrong MAC or an unplugged link then fails the probe, as it fails the data.
// With health_check.interface, probes take that interface instead (a
// management network or a VRF device), from health_check.source when set.
//
// Two kinds of checks, both refusing rather than guessing:
// - probePathErrors: rules on the config alone (no kernel), for
//   --check-config, start and reload;
// - probeRouteErrors: asks the kernel (rtnetlink RTM_GETROUTE) how each
//   probed appliance would be reached on its path, and refuses no route or a
//   route out of another interface.
// Control thread (or gwlbd's main before the loop); nothing here runs on a worker.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/net_types.h"
#include "control/config/config.h"

namespace gwlb::ctl {

struct ProbePath {
  enum class Kind : uint8_t {
    kData,        // the appliance port's tap, from node.underlay_ip
    kManagement,  // health_check.interface, from health_check.source (or the kernel's choice)
    kUnbound,     // neither (no interface, no exception path): refused by probePathErrors;
                  // only programs that skip that check (tests, tools) probe this way
  };
  Kind kind = Kind::kUnbound;
  std::string device;             // the interface probes are bound to ("" for kUnbound)
  std::optional<IpAddr> source;   // the address they come from (nullopt: the kernel picks)
  std::optional<IpAddr> source6;  // the data path's to IPv6 appliances (node.underlay_ipv6)
  // The source of probes to `dst`: the path's address of dst's family, else
  // nullopt (the kernel picks).
  std::optional<IpAddr> sourceFor(const IpAddr& dst) const;
  // "data path (tap gwlb1, from 192.0.2.1)", "management path (eth1)", ...
  std::string describe() const;
};
const char* toString(ProbePath::Kind k);  // "data", "management", "unbound"

// The exception-path tap of node.underlay_port: name_prefix + port id.
std::string applianceTap(const NodeConfig& node);

// The path of one group's probes. Pure.
ProbePath probePathOf(const Config& c, const HealthCheckConfig& h);

// The rules that need no kernel, one error per group that breaks them: every
// probed group has a path (an `interface`, or the exception path for the
// data path), and `source` only goes with `interface`. Pure; never throws.
std::vector<ConfigError> probePathErrors(const Config& c);

// The kernel's answer to "how would a packet to `dst` leave, bound to
// `device`, from `source`" (what `ip route get DST [from SRC] oif DEVICE`
// prints).
struct KernelRoute {
  bool ok = false;
  std::string error;        // when !ok: what the kernel said ("Network is unreachable", ...)
  std::string out;          // the interface it leaves by
  std::string out_master;   // that interface's master (a VRF, a bridge), "" when none
  std::optional<IpAddr> source;  // the source address the kernel would use
};
// Never throws (except std::bad_alloc); a netlink failure is an answer with !ok.
KernelRoute kernelRoute(const IpAddr& dst, const std::string& device,
                        const std::optional<IpAddr>& source);

// Every probed appliance's route on its path: one error (at its group's
// health_check) per appliance that has no route, whose route leaves by an
// interface that is neither the path's device nor enslaved to it (a VRF), or
// whose answers the host's reverse-path filter would drop. Changes nothing in
// the kernel, so a config change is checked before anything is applied: the
// data path is judged as prepareDataPath leaves it (the tap's own rp_filter
// off; node.underlay_ip not on the tap yet: the kernel's choice of source).
// IPv6 appliances: on a management path looked up in the IPv6 routes (IPv6
// has no rp_filter); on the data path prepareDataPath routes them by the tap.
// Never throws (except std::bad_alloc).
std::vector<ConfigError> probeRouteErrors(const Config& c);

// A permanent neighbour entry gwlbd sets on the data path's tap: a probed
// appliance and the MAC the dataplane sends it to.
struct NeighbourPin {
  IpAddr address;
  MacAddr mac;
  bool operator==(const NeighbourPin&) const = default;
};
// The pins `c` wants: every appliance of a group probed on the data path
// whose MAC the config fixes (its `mac`, else node.gateway_mac). Pure.
std::vector<NeighbourPin> wantedPins(const Config& c);

// What gwlbd set on the data path's tap (the tap is gwlbd's own: it goes
// when gwlbd does), so that a later config takes back what it no longer wants.
struct TapState {
  std::vector<NeighbourPin> pins;  // the permanent neighbours gwlbd pinned
  std::vector<IpAddr> addresses;   // the host addresses gwlbd added (not those it found there)
};

// Readies the data path's tap for the probes of `c` (an accepted config):
// node.underlay_ip (/32) on the tap unless it is there already (and
// node.underlay_ipv6 (/128, without duplicate address detection: the node
// owns it on the underlay already) when an IPv6 appliance is probed there),
// the tap's rp_filter off (and its IPv6 on, when off), and exactly wantedPins(c) pinned as permanent
// neighbours, so the kernel sends to the MAC the dataplane uses (appliances
// without a fixed MAC are resolved by the kernel's own ARP or neighbor
// discovery through the tap). `tap` is what gwlbd set before: the pins `c`
// no longer wants are deleted (an appliance removed, or now resolved by ARP
// or ND), and so are the addresses gwlbd added that `c` no longer wants (an
// underlay address changed or removed, or no probe on the data path any
// more: the kernel would otherwise keep answering for and sourcing from an
// address the node gave up); on return it holds what is set now, also when
// a change fails. Each probed IPv6 appliance gets a host route (/128) by the tap (a
// socket bound to a device finds no IPv6 route by another), in table 6081,
// which a rule makes only traffic leaving by the tap look up (the host's
// own traffic to the appliances keeps its routes); a route no longer
// probed is removed. Returns one line per change made (for the log); throws
// std::runtime_error naming the tap and the kernel's answer when a change
// fails.
std::vector<std::string> prepareDataPath(const Config& c, TapState& tap);

}  // namespace gwlb::ctl
