// The memory a configuration needs, by part, and the EAL memory it will get
// (gwlbd --check-config, gwlbd's start-up log and errors; docs/deploy.md
// "Memory"). Pure arithmetic over the config and DPDK's own size functions
// (no EAL needed); the hugepage counts are read from sysfs.
//
// Two kinds of memory: what DPDK's EAL hands out (the mbuf pool, rings, the
// RCU variable, NIC descriptor rings, and with hugepages the flow table's tags
// and IPv4 slots: hugepages, or with --no-huge the -m area) and ordinary
// process memory (the flow table's slots under --no-huge and its IPv6 slots:
// anonymous mmap memory; worker state; the neighbour table). Only the first
// must fit what the EAL gets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/config/config.h"

namespace gwlb::ctl {

// Rings gwlbd creates in EAL memory (entries; powers of two).
inline constexpr unsigned kPuntRingSize = 1024;      // ARP/ND to the control thread; and control TX
// Frames for the kernel waiting for the control thread: about 4 ms of a
// 1 Mpps flood to our address; beyond it the workers count
// drop_exception_queue_full and go on.
inline constexpr unsigned kExceptionRingSize = 4096;
inline constexpr unsigned kSyncRingSize = 65536;     // FleetSync::kRingSize (daemon.cc asserts it)
// EAL memory DPDK itself takes beside our objects (memzones, heap headers,
// ethdev data): measured at 3-6 MiB with DPDK 22.11 (tests/daemon/run_memory.sh
// starts gwlbd with exactly the -m the check asks for).
inline constexpr uint64_t kEalReserveBytes = 6ull << 20;
// Descriptor-ring bytes per descriptor of a PCI device (a 16-32 B hardware
// descriptor and the driver's software ring entry): an upper estimate.
inline constexpr uint64_t kBytesPerDescriptor = 64;

struct MemoryPart {
  std::string name;    // "mbuf pool", "flow table", ...
  std::string detail;  // how it is computed, e.g. "65535 x 9408 B"
  std::string keys;    // the config keys that size it ("" when none)
  uint64_t bytes = 0;
  bool eal = false;    // from the EAL's memory (hugepages / -m), else process memory
};

struct MemoryPlan {
  std::vector<MemoryPart> parts;
  uint64_t ealBytes() const;
  uint64_t processBytes() const;
  const MemoryPart* find(const std::string& name) const;
};

// Data room of gwlbd's mbufs: the default, or the underlay MTU plus its
// Ethernet/VLAN headers when larger (jumbo underlays).
unsigned mbufDataRoom(const Config& cfg);
// Bytes one mbuf takes in its pool (object header, struct rte_mbuf, headroom,
// data room, padded as rte_mempool lays objects out).
uint64_t mbufObjectBytes(unsigned data_room);
// Virtual bytes the flow table maps for `capacity` keys (dp::FlowTable's
// layout: tag lines, one 64-byte slot per IPv4 key, a 128-byte one per other
// key; tests/dp checks this against FlowTable::reservedBytes()), and the part
// an IPv4-only table touches (tags + IPv4 slots).
uint64_t flowTableBytes(uint32_t capacity);
uint64_t flowTableIpv4Bytes(uint32_t capacity);
// The flow table's overflow marker (dp::FlowTable::markerBytes(), heap): 1 B
// per slot and 1 B per bucket of 16 slots.
uint64_t flowTableMarkerBytes(uint32_t capacity);
// Bytes fleet sync's sent log (control/fleet/sync_sent_log.h) maps beside a table
// of `capacity` keys: 8 B per table position, both halves; and the IPv4 half.
uint64_t sentLogBytes(uint32_t capacity);
uint64_t sentLogIpv4Bytes(uint32_t capacity);

// `eal_ports`: devices the EAL will probe that have descriptor rings in EAL
// memory (PCI devices); virtual devices (net_pcap, net_null...) have none.
// `hugepages`: the EAL runs on hugepages (no --no-huge): the flow table's tags
// and IPv4 slots are then EAL memory ("flow table"), its IPv6 slots process
// memory ("flow table, IPv6 slots"); else all of it is process memory.
MemoryPlan planMemory(const Config& cfg, unsigned pci_ports, bool hugepages = false);

// What the EAL will get, from its arguments (-m, --socket-mem, --no-huge,
// --legacy-mem) and the free hugepages under `hugepage_dir`
// (/sys/kernel/mm/hugepages: hugepages-<size>kB/free_hugepages), plus those
// a running gwlbd holds (`proc_dir`/PID/status HugetlbPages, for every
// process named gwlbd but this one): checking the next config of a running
// gateway counts the pages its restart gives back, and says so in `source`.
struct EalBudget {
  uint64_t bytes = 0;
  std::string source;  // "-m 1024", "--no-huge without -m: DPDK's default 64 MiB", ...
  std::string error;   // the arguments themselves cannot work (e.g. -m above the free hugepages)
  bool no_huge = false;
  unsigned pci_ports = 0;  // -a/--allow arguments (1 when PCI is probed with no allow-list)
};
EalBudget ealBudget(const std::vector<std::string>& eal,
                    const std::string& hugepage_dir = "/sys/kernel/mm/hugepages",
                    const std::string& proc_dir = "/proc");

// The report --check-config prints (one line per part, then the totals).
std::string formatPlan(const MemoryPlan& plan, const EalBudget& budget);
// "" when the EAL part fits; else one line saying what to change.
std::string checkFits(const MemoryPlan& plan, const EalBudget& budget);
// "" or a warning when the mbufs cannot fill the RX rings of the PCI ports
// (every RX descriptor holds an mbuf from the start: a port then fails to
// start) or leave little beside them.
std::string mbufWarning(const Config& cfg, unsigned pci_ports);
// The hint a start-up allocation failure adds: the EAL part needed and the keys.
std::string allocationHint(const Config& cfg, const std::string& part);

std::string mib(uint64_t bytes);  // "588.0 MiB"

}  // namespace gwlb::ctl
