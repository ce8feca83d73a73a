// The immutable view of configuration and health that workers read. Built on
// the control thread (control/snapshot_builder), published with one pointer swap,
// freed only after every worker has passed an rte_rcu_qsbr quiescent point.
// Workers treat every field as read-only.
//
// Plain data, no DPDK: both sides use these types (control builds and
// inspects snapshots, dataplane reads them), so they live in common/. The
// names are also declared in gwlb::dp (the end of this file), where the
// dataplane and the code that reads its snapshots have always named them.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <cstdint>
#include <vector>

#include "common/flow_key.h"
#include "common/geneve.h"
#include "common/idle_timeout.h"
#include "common/net_types.h"
#include "common/traffic_class.h"
#include "common/vxlan.h"

namespace gwlb {

inline constexpr uint16_t kNoAppliance = 0xFFFF;
inline constexpr uint8_t kNoGroup = 0xFF;     // a listener with no group for new flows (drop)
inline constexpr uint8_t kNoListener = 0xFF;  // a group that serves no listener
// Server ids are below this; it sizes the per-worker per-server counters.
inline constexpr size_t kMaxApplianceIds = 16384;

// Why a flow left its appliance (FlowEntry::moved, gwlbctl explain).
enum class MoveReason : uint8_t {
  kNone = 0,
  kUnhealthy = 1,     // its appliance failed health checks (failover_mode: rebalance)
  kRemoved = 2,       // its appliance left the group, no draining (rebalance)
  kDrainTimeout = 3,  // its appliance's drain timeout passed (rebalance)
  kGone = 4,          // its appliance is no longer known at all
  kRegionFailover = 5,  // its server group's region failed over (rebalance)
  // Two gateways created the flow at once with different appliances (their
  // health views differed); flow sync settled it on the lower address.
  kFleetConflict = 6,
};
inline const char* toString(MoveReason r) noexcept {
  switch (r) {
    case MoveReason::kNone: return "none";
    case MoveReason::kUnhealthy: return "unhealthy";
    case MoveReason::kRemoved: return "removed";
    case MoveReason::kDrainTimeout: return "drain_timeout";
    case MoveReason::kGone: return "gone";
    case MoveReason::kRegionFailover: return "region_failover";
    case MoveReason::kFleetConflict: return "fleet_conflict";
  }
  return "unknown";
}

// Why the TCP flows on an appliance cannot continue (ApplianceSlot::reset): their
// segments are dropped and answered with an RST (send_tcp_reset,
// docs/product-rules.md section 2). The values index the reason counters.
enum class ResetReason : uint8_t {
  kNone = 0,
  kUnhealthy = 1,     // failed its health checks (on_unhealthy)
  kDeregistered = 2,  // removed or drained, its drain over (on_deregistration)
  kIdle = 3,          // the flow expired idle, or has no entry (on_idle_timeout)
  kFleetUnknown = 4,  // no entry, on a fleet node whose records may be missing (on_fleet_view_incomplete)
};
inline const char* toString(ResetReason r) noexcept {
  switch (r) {
    case ResetReason::kNone: return "none";
    case ResetReason::kUnhealthy: return "unhealthy";
    case ResetReason::kDeregistered: return "deregistered";
    case ResetReason::kIdle: return "idle";
    case ResetReason::kFleetUnknown: return "fleet_view_incomplete";
  }
  return "unknown";
}

// Where an appliance stands for traffic (control/engine/lifecycle.h decides).
enum class AppliancePhase : uint8_t {
  kGone = 0,      // not configured and no flow left on it: nothing is sent there
  kActive = 1,    // configured: new flows when in service, existing flows per health
  kDraining = 2,  // removed or drained: no new flows, existing ones stay until the timeout
  kDrained = 3,   // drain over (or removed without draining): no new flows
};
inline const char* toString(AppliancePhase p) noexcept {
  switch (p) {
    case AppliancePhase::kGone: return "gone";
    case AppliancePhase::kActive: return "active";
    case AppliancePhase::kDraining: return "draining";
    case AppliancePhase::kDrained: return "drained";
  }
  return "unknown";
}

// One appliance. `id` is stable for the life of the process (control keeps an
// address -> id registry), so flow entries that name it survive reloads.
struct ApplianceSlot {
  uint32_t ip = 0;          // IPv4, host order
  MacAddr mac;              // next hop toward it on the underlay
  bool mac_known = false;
  uint8_t group = 0;
  uint32_t weight = 0;
  bool in_use = false;      // present in the config with this snapshot
  // Existing flows may still be sent here and returned from here (every phase
  // but kGone). Return packets from an address not routable are dropped.
  bool routable = false;
  AppliancePhase phase = AppliancePhase::kGone;
  // Non-zero: a flow on this appliance moves to the group's Maglev choice on
  // its next packet (docs/product-rules.md section 2), for this reason.
  MoveReason move_reason = MoveReason::kNone;
  // Non-zero: a TCP segment (without SYN) of a flow on this appliance is
  // dropped and answered with an RST, whatever `move_reason` says; other protocols
  // follow `move_reason`. Decided from the snapshot alone, so every gateway of a
  // fleet resets the same flows, synced ones too.
  ResetReason reset = ResetReason::kNone;
  // Its outer headers (underlay MACs and addresses, its group's format, VNI
  // and IDs), built with the snapshot when its MAC is known: the fast path
  // copies them and patches lengths, port, cookie and checksums.
  EncapTemplate encap;
  // A VXLAN group's second tunnel (internal: the replies of a flow, see
  // VxlanTunnels); `encap` is then the external one. len 0 in Geneve groups.
  EncapTemplate encap_internal;
  // The snapshot builder's verdict that a packet can be sent here as it
  // stands: routable, MAC known, group in range and the template its length.
  // False leaves each check to the worker (a snapshot built by hand).
  bool sendable = false;
  // An appliance on an IPv6 underlay: its address is ip6, its outer headers
  // are IPv6 (encap.ipv6) and its returns are checked against ip6 (by_ip6).
  // `ip` then holds applianceKey() of it (net_types.h): the flow cookie's
  // appliance input and the registry's key.
  bool ipv6 = false;
  std::array<uint8_t, 16> ip6{};
};

struct GroupView {
  StickinessMode stickiness = StickinessMode::kFiveTuple;
  bool aws = true;          // aws format (inner L3 + options) or ethernet (inner frame)
  bool nsi = false;         // (aws true) the nsi format's options instead of aws's
  uint32_t vni = 0;
  uint64_t endpoint_id = 0, attachment_id = 0;
  bool vxlan = false;       // VXLAN (aws false): two tunnels, inner frame, no cookie
  VxlanTunnels tunnels;     // VXLAN: its tunnels' ports and VNIs
  // The idle timeouts as a flow entry holds them (idleTimeoutMs: whole ms,
  // rounded up), so a new flow's entry takes them without a division.
  uint32_t tcp_idle_ms = idleTimeoutMs(350'000'000'000ULL);
  uint32_t other_idle_ms = idleTimeoutMs(120'000'000'000ULL);
  uint64_t tcpIdleNs() const noexcept { return uint64_t(tcp_idle_ms) * 1'000'000; }
  uint64_t otherIdleNs() const noexcept { return uint64_t(other_idle_ms) * 1'000'000; }
  std::vector<uint16_t> maglev;  // slot -> server id (kNoAppliance when none)
  uint8_t listener = kNoListener;  // the listener it serves: flow keys carry the listener
  // Forwarding checks (health_check.forwarding): the inner addresses of the
  // probe (IPv4, host order; 0: none). A returned packet from src to dst that
  // has no flow is a probe coming back: the control thread's, not the router's.
  uint32_t probe_src = 0, probe_dst = 0;
  // The same when the reserved addresses are IPv6 (probe_dst is then 0): the
  // probe is an ICMPv6 echo request between them.
  bool probe_v6 = false;
  std::array<uint8_t, 16> probe_src6{}, probe_dst6{};

  // Installs the Maglev table and the reciprocal that maglevSlot() uses.
  void setMaglev(std::vector<uint16_t> table) noexcept {
    maglev = std::move(table);
    maglev_recip = maglev.empty() ? 0 : ~uint64_t(0) / maglev.size() + 1;
  }
  // hash % maglev.size() without a division (a 64-bit div costs 40-90
  // cycles, once per new flow): Lemire's exact remainder for 32-bit
  // operands, from the reciprocal setMaglev() computed. The table must not
  // be empty.
  uint32_t maglevSlot(uint32_t hash) const noexcept {
    uint64_t low = maglev_recip * hash;
    __extension__ using U128 = unsigned __int128;
    return uint32_t((U128(low) * maglev.size()) >> 64);
  }
  uint16_t maglevPick(uint32_t hash) const noexcept {
    return maglev.empty() ? kNoAppliance : maglev[maglevSlot(hash)];
  }
  uint64_t maglev_recip = 0;
};

// A service (control/engine/region_failover.h): its flows are keyed by the listener's index,
// so a flow keeps its entry when new flows fail over to another group.
struct ListenerView {
  uint8_t active = kNoGroup;       // the group new flows go to (kNoGroup: drop them)
  uint8_t preferred = 0;           // its first group
  StickinessMode stickiness = StickinessMode::kFiveTuple;  // shared by its groups
  // send_tcp_reset.on_idle_timeout: a TCP segment without SYN of a flow that
  // expired idle, or that has no entry, is answered with an RST.
  bool reset_on_idle = false;
  // send_tcp_reset.on_fleet_view_incomplete: a TCP segment without SYN and
  // without an entry is answered with an RST while Dataplane::fleet_view_incomplete
  // says this node's flow records may be missing (docs/fleet.md).
  bool reset_on_fleet_unknown = false;
  // appliance_bypass: its appliances may hand flows back (gwlb's Geneve
  // bypass option) for at most bypass_max_s seconds (0: as asked).
  bool bypass_allow = false;
  uint32_t bypass_max_s = 0;
};

// One dataplane port as the workers see it. A frame is taken in only when its
// destination MAC is `mac` (anything else is dropped or, for the control
// thread's ARP/ND, punted); `role` says which paths it feeds.
struct PortView {
  MacAddr mac;
  PortRole role = PortRole::kBoth;
};

struct Snapshot {
  Snapshot() noexcept { live_.fetch_add(1, std::memory_order_relaxed); }
  ~Snapshot() { live_.fetch_sub(1, std::memory_order_relaxed); }
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;
  // Snapshots alive in this process (published, awaiting their grace period,
  // or being built): retired ones must come back to 1-2.
  static int64_t live() noexcept { return live_.load(std::memory_order_relaxed); }

  uint64_t generation = 0;
  // node.underlay_ip, host order; 0 on an IPv6-only node (no IPv4 appliance
  // then, so nothing is sent from it; IPv4 to 0.0.0.0, which no host sends,
  // would meet the return path's checks and be dropped there).
  uint32_t underlay_ip = 0;
  // node.underlay_ipv6: the source of Geneve over IPv6 to IPv6 appliances and
  // where their returns come to (has_underlay_ip6 false: none). The builder
  // lists it in node_ipv6 too: its neighbor solicitations are answered and
  // whatever else comes to it but Geneve goes to the kernel's tap.
  bool has_underlay_ip6 = false;
  std::array<uint8_t, 16> underlay_ip6{};
  MacAddr underlay_mac;
  uint16_t underlay_port = 0;
  uint32_t underlay_mtu = 1500;
  uint16_t geneve_option_class = kGwlbOptionClassDefault;  // node.geneve_option_class
  uint32_t icmp_rate_per_s = 100;
  uint32_t tcp_reset_rate_per_s = 1000;  // RSTs per second per worker (node.tcp_reset_rate_per_s)
  // The UDP ports of every VXLAN group's tunnels (a handful, distinct): UDP
  // to the underlay address on one of them is a VXLAN return. Empty without
  // VXLAN groups, so Geneve-only gateways never look.
  // Stage 1 asks of every UDP packet: one bit test (bit port % 64 of each of
  // the ports) answers most without the loop (which cost every packet of a
  // VXLAN gateway about 10 instructions).
  std::vector<uint16_t> vxlan_ports;
  uint64_t vxlan_port_bits = 0;
  bool isVxlanPort(uint16_t port) const noexcept {
    if (!((vxlan_port_bits >> (port & 63)) & 1)) return false;
    for (uint16_t p : vxlan_ports)
      if (p == port) return true;
    return false;
  }
  void addVxlanPort(uint16_t port) {
    if (isVxlanPort(port)) return;
    vxlan_ports.push_back(port);
    vxlan_port_bits |= uint64_t(1) << (port & 63);
  }
  // Some listener has reset_on_idle: the workers check idle expiry per packet.
  bool reset_on_idle_any = false;
  // Some listener has reset_on_fleet_unknown.
  bool reset_on_fleet_unknown_any = false;
  // Indexed by DPDK port id (mbuf->port); a frame from a port past the end
  // counts as drop_not_our_mac.
  std::vector<PortView> ports;
  // node.ipv6_addresses: neighbor solicitations for them are punted, other
  // packets to them are drop_not_for_us.
  std::vector<std::array<uint8_t, 16>> node_ipv6;
  // listeners[0] receives all inspected traffic; default_group is its active
  // group (kNoGroup when new flows are dropped).
  uint8_t default_group = 0;
  std::vector<ListenerView> listeners;
  // traffic_classes compiled; empty: everything goes to listeners[0].
  ClassTable classes;
  // The WorkerState counter slot of each class, by its position in `classes`:
  // the slot follows the class's name across reloads (control/engine/class_slots.h).
  std::vector<uint16_t> class_slot;
  // Per class, what the workers' common case needs in one load (routeClasses).
  struct ClassRoute {
    uint16_t slot = 0;        // class_slot
    uint16_t origin = 0;      // FlowEntry::origin of its flows, direction 0
    uint8_t listener = 0;
    uint8_t inspect : 1 = 0;  // action inspect and its listener exists
    uint8_t stickiness : 7 = 0;
    bool operator==(const ClassRoute&) const = default;
  };
  std::vector<ClassRoute> class_route;
  // Classified once per flow (routeClasses): every inspect class goes to one
  // listener keyed by the five-tuple, so a whole packet's key needs no class.
  // Its flow's entry then gives its class while the entry's class marks
  // (dp::IdleTimeout) hold class_gen for its direction and L2; other
  // packets, and every packet otherwise, are classified one by one.
  bool class_by_flow = false;
  uint16_t class_flow_origin = 0;  // that listener, no class (dp::packOrigin)
  // Changes (1..63, then 1 again) with every snapshot whose classes classify
  // any packet otherwise than the previous one's (followClassGen): the
  // entries' class marks of older generations no longer hold.
  uint8_t class_gen = 1;
  // class_gen after `prev` (the snapshot this one replaces; null: none):
  // kept when the compiled classes and their routes are the same.
  void followClassGen(const Snapshot* prev) {
    if (!prev) return;
    if (prev->classes.sameCompilation(classes) && prev->class_route == class_route &&
        prev->class_slot == class_slot)
      class_gen = prev->class_gen;
    else
      class_gen = uint8_t(prev->class_gen % 63 + 1);
  }
  // A class's mirror (traffic_classes[].mirror): copies of its packets to one
  // appliance of `group`, picked by the flow's symmetric hash in the group's
  // Maglev table (so health, weights and draining apply as to any group).
  struct MirrorView {
    uint8_t group = kNoGroup;  // kNoGroup: the class is not mirrored
    uint16_t class_id = 0;     // its counter slot, carried in the mirror option
    uint32_t truncate = 0;     // bytes of the inner packet copied at most; 0: all
    uint32_t sample = 1;       // one packet in `sample`
  };
  // By class index (the builder fills it; empty: no class is mirrored).
  std::vector<MirrorView> class_mirror;
  // The same by counter slot (routeClasses), kMaxClasses of them when any
  // class is mirrored, else empty: the workers index it by FlowEntry::origin's class.
  std::vector<MirrorView> slot_mirror;
  // A class's tag (traffic_classes[].tag): gwlb's tag option on every
  // packet of its flows sent to an appliance.
  struct TagView {
    uint32_t value = 0;
    bool set = false;
  };
  std::vector<TagView> class_tag;  // by class index (the builder; empty: no class is tagged)
  std::vector<TagView> slot_tag;   // by counter slot (routeClasses), kMaxClasses or empty
  // Fills class_route from classes, class_slot and listeners; whoever sets
  // class_slot calls it. With classes it holds kMaxClasses routes (those past
  // the rules inspect nothing), so a worker indexes it by any class the
  // table returns without a bounds check.
  void routeClasses() {
    class_route.assign(classes.empty() ? 0 : kMaxClasses, ClassRoute{});
    for (size_t i = 0; i < classes.size() && i < class_slot.size(); ++i) {
      ClassRoute& r = class_route[i];
      const uint16_t c = uint16_t(i);
      r.slot = class_slot[i];
      r.listener = classes.listener(c);
      r.inspect = classes.action(c) == ClassVerdict::kInspect && r.listener < listeners.size();
      if (r.inspect) r.stickiness = uint8_t(listeners[r.listener].stickiness) & 0x7F;
      r.origin = uint16_t((r.listener & 15) << 1 | ((r.slot + 1) & 0x7FF) << 5);  // dp::packOrigin
    }
    class_by_flow = false;
    int flow_listener = -1;
    for (size_t i = 0; i < classes.size() && i < class_route.size(); ++i) {
      if (!class_route[i].inspect) continue;
      if (flow_listener < 0) flow_listener = class_route[i].listener;
      class_by_flow = flow_listener == class_route[i].listener &&
                      listeners[size_t(flow_listener)].stickiness == StickinessMode::kFiveTuple;
      if (!class_by_flow) break;
    }
    class_flow_origin = class_by_flow ? uint16_t((flow_listener & 15) << 1) : 0;  // dp::packOrigin(0, l, kNoClass)
    slot_tag.clear();
    for (size_t i = 0; i < class_tag.size() && i < class_slot.size(); ++i) {
      if (!class_tag[i].set || class_slot[i] >= kMaxClasses) continue;
      if (slot_tag.empty()) slot_tag.assign(kMaxClasses, TagView{});
      slot_tag[class_slot[i]] = class_tag[i];
    }
    slot_mirror.clear();
    for (size_t i = 0; i < class_mirror.size() && i < class_slot.size(); ++i) {
      if (class_mirror[i].group == kNoGroup || class_slot[i] >= kMaxClasses) continue;
      if (slot_mirror.empty()) slot_mirror.assign(kMaxClasses, MirrorView{});
      slot_mirror[class_slot[i]] = class_mirror[i];
      slot_mirror[class_slot[i]].class_id = class_slot[i];
    }
  }
  std::vector<GroupView> groups;
  std::vector<ApplianceSlot> appliances;  // indexed by server id
  // (ip, server id) sorted by ip: appliance lookup on the return path.
  std::vector<std::pair<uint32_t, uint16_t>> by_ip;

  // by_ip again as an open-addressed table (indexByIp(), after by_ip is
  // final): ip << 32 | (id + 1) per used cell, 0 empty; a power of two at
  // least twice by_ip's size, so a returned packet's appliance takes one or
  // two probes instead of a binary search. Empty: applianceByIp searches by_ip.
  std::vector<uint64_t> ip_index;
  uint32_t ip_index_shift = 30;
  static uint32_t ipCell(uint32_t ip, uint32_t shift) noexcept {
    return (ip * 0x9E3779B1u) >> shift;  // shift: 32 - log2(cells), at most 30
  }
  void indexByIp() {
    size_t cells = 4;
    uint32_t shift = 30;
    while (cells < 2 * by_ip.size()) cells *= 2, --shift;
    ip_index.assign(cells, 0);
    ip_index_shift = shift;
    for (const auto& [ip, id] : by_ip) {
      uint32_t at = ipCell(ip, shift);
      while (ip_index[at] != 0) at = (at + 1) & uint32_t(cells - 1);
      ip_index[at] = uint64_t(ip) << 32 | (uint32_t(id) + 1);
    }
  }

  // The IPv6 appliances (servers[id].ipv6, routable) by address, sorted:
  // a returned IPv6 packet's appliance. Few appliances per gateway: a binary
  // search of 16-byte keys (IPv4's hashed index is the common case).
  std::vector<std::pair<std::array<uint8_t, 16>, uint16_t>> by_ip6;
  // The keys compare as two big-endian 64-bit words (the bytes' order, which
  // sorted them): memcmp's library call cost a returned packet about 35
  // instructions more.
  uint16_t applianceByIp6(const uint8_t* a) const noexcept {
    const uint64_t ahi = ip6Word(a), alo = ip6Word(a + 8);
    size_t lo = 0, hi = by_ip6.size();
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      const uint8_t* k = by_ip6[mid].first.data();
      const uint64_t khi = ip6Word(k), klo = ip6Word(k + 8);
      if (khi == ahi && klo == alo) return by_ip6[mid].second;
      if (khi < ahi || (khi == ahi && klo < alo)) lo = mid + 1;
      else hi = mid;
    }
    return kNoAppliance;
  }
  static uint64_t ip6Word(const uint8_t* p) noexcept {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return __builtin_bswap64(v);
  }

  uint16_t applianceByIp(uint32_t ip) const noexcept {
    if (!ip_index.empty()) [[likely]] {
      const uint32_t mask = uint32_t(ip_index.size() - 1);
      for (uint32_t at = ipCell(ip, ip_index_shift);; at = (at + 1) & mask) {
        const uint64_t e = ip_index[at];
        if (e == 0) return kNoAppliance;
        if (uint32_t(e >> 32) == ip) return uint16_t(uint32_t(e) - 1);
      }
    }
    auto it = std::lower_bound(by_ip.begin(), by_ip.end(), std::pair<uint32_t, uint16_t>{ip, 0});
    if (it == by_ip.end() || it->first != ip) return kNoAppliance;
    return it->second;
  }

 private:
  static inline std::atomic<int64_t> live_{0};
};

}  // namespace gwlb

// The snapshot as the dataplane's form of the configuration: dp::Snapshot,
// dp::kNoAppliance, dp::toString(dp::MoveReason) ...
namespace gwlb::dp {
using gwlb::GroupView;
using gwlb::kMaxApplianceIds;
using gwlb::kNoGroup;
using gwlb::kNoListener;
using gwlb::kNoAppliance;
using gwlb::ListenerView;
using gwlb::MoveReason;
using gwlb::PortView;
using gwlb::ResetReason;
using gwlb::AppliancePhase;
using gwlb::ApplianceSlot;
using gwlb::Snapshot;
using gwlb::toString;
}  // namespace gwlb::dp
