// The appliances' MAC addresses on the underlay, learned by ARP and kept
// fresh the way RFC 4861 section 7.3 keeps IPv6 neighbours, so that an
// appliance replaced with the same address and a new MAC is found again:
//
//   INCOMPLETE --any ARP from it--> REACHABLE --reachable_ns passes--> STALE
//   STALE --next tick: unicast ARP request to the known MAC--> PROBE
//   PROBE --answer--> REACHABLE      PROBE --max_probes unanswered--> INCOMPLETE
//   INCOMPLETE: broadcast ARP request every retrans_ns, no MAC (traffic to it
//   counts as drop_neighbour_unresolved)
//
// Any ARP packet from the appliance (a reply, a request, a gratuitous
// announcement) confirms it: the entry becomes REACHABLE with the sender's
// MAC, a new MAC at once. Pure control logic, time passed in (monotonic ns),
// no I/O: the daemon sends the requests tick() asks for and republishes the
// snapshot when a MAC changes. Not thread-safe (the control thread owns it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/net_types.h"

namespace gwlb::ctl {

struct NeighbourTiming {
  uint64_t reachable_ns = 30'000'000'000ULL;  // RFC 4861 REACHABLE_TIME
  uint64_t retrans_ns = 1'000'000'000ULL;     // RFC 4861 RETRANS_TIMER
  unsigned max_probes = 3;                    // RFC 4861 MAX_UNICAST_SOLICIT
};

class NeighbourCache {
 public:
  using Timing = NeighbourTiming;
  enum class State : uint8_t { kIncomplete, kReachable, kStale, kProbe };

  struct Entry {
    State state = State::kIncomplete;
    std::optional<MacAddr> mac;
    uint64_t confirmed_ns = 0;  // last ARP heard from it
    uint64_t next_ns = 0;       // next request due (INCOMPLETE, PROBE)
    unsigned probes = 0;        // unicast probes sent in this PROBE
  };

  // An ARP request to send: unicast to `mac` (a probe) or broadcast.
  struct Request {
    uint32_t ip = 0;
    std::optional<MacAddr> mac;
  };

  explicit NeighbourCache(Timing t = {}) : t_(t) {}

  // The addresses to resolve (host order): new ones start INCOMPLETE with a
  // request due now; ones no longer listed are forgotten. True when an
  // address that had a MAC was forgotten.
  bool track(const std::vector<uint32_t>& ips, uint64_t now_ns);

  // An ARP packet from `ip` says it is at `mac`. Ignored (false) for an
  // address not tracked. True when the MAC in use for `ip` changed (it had
  // none, or another one): the snapshot must be rebuilt.
  bool heard(uint32_t ip, const MacAddr& mac, uint64_t now_ns);

  // Advances every entry to now_ns and appends the ARP requests due. True
  // when a MAC was forgotten (probes unanswered): the snapshot must be rebuilt.
  bool tick(uint64_t now_ns, std::vector<Request>& out);

  // ip -> MAC of every entry that has one (REACHABLE, STALE, PROBE).
  std::map<uint32_t, MacAddr> macs() const;

  const Entry* find(uint32_t ip) const;
  const std::map<uint32_t, Entry>& entries() const { return entries_; }
  const Timing& timing() const { return t_; }

 private:
  Timing t_;
  std::map<uint32_t, Entry> entries_;
};

const char* toString(NeighbourCache::State s);

}  // namespace gwlb::ctl
