#include "control/daemon/memory_plan.h"

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pdump.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "control/engine/snapshot_builder.h"
#include "control/fleet/sync_sent_log.h"
#include "dataplane/flow_table.h"
#include "dataplane/neighbour_table.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"

namespace gwlb::ctl {

namespace {
// The "rte_pdump_stats" memzone of dataplane/capture.cc: RX and TX records
// for every port and queue DPDK allows, plus its own pointer.
constexpr uint64_t kCaptureStatsBytes =
    2ull * RTE_MAX_ETHPORTS * RTE_MAX_QUEUES_PER_PORT * sizeof(struct rte_pdump_stats) + 64;
}  // namespace

namespace {

constexpr uint64_t kMiB = 1ull << 20;

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }
uint64_t ringBytes(unsigned entries) {
  ssize_t n = rte_ring_get_memsize(entries);
  return n > 0 ? roundUp(uint64_t(n), RTE_CACHE_LINE_SIZE) + RTE_CACHE_LINE_SIZE : 0;
}
uint64_t ceilMiB(uint64_t b) { return (b + kMiB - 1) / kMiB; }

// dp::FlowTable's layout (dataplane/flow_table.cc, constructor): 10 % more
// slots than keys plus two buckets, in buckets of kBucketSlots.
uint64_t flowSlots(uint32_t capacity) {
  uint64_t want = uint64_t(capacity) + capacity / 10 + 2 * dp::FlowTable::kBucketSlots;
  uint64_t buckets = (want + dp::FlowTable::kBucketSlots - 1) / dp::FlowTable::kBucketSlots;
  return buckets * dp::FlowTable::kBucketSlots;
}
uint64_t page(uint64_t b) { return roundUp(b, 4096); }

// "1024" (MiB) -> bytes; false when not a number.
bool parseMiB(const std::string& s, uint64_t& out) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), ::isdigit)) return false;
  out = std::stoull(s) * kMiB;
  return true;
}

uint64_t readNumber(const std::filesystem::path& p) {
  std::ifstream f(p);
  uint64_t v = 0;
  if (!(f >> v)) return 0;
  return v;
}

// The hugepages other gwlbd processes hold (HugetlbPages in
// /proc/PID/status): a running gwlbd keeps its own for as long as it runs,
// and gives them back when it stops, as at the restart that would start the
// config being checked.
struct HeldPages {
  uint64_t bytes = 0;
  std::string pids;  // "1234", "1234, 5678"
};
HeldPages heldByGwlbd(const std::string& proc_dir) {
  HeldPages h;
  std::error_code ec;
  const std::string self = std::to_string(::getpid());
  for (const auto& e : std::filesystem::directory_iterator(proc_dir, ec)) {
    const std::string pid = e.path().filename().string();
    if (pid.empty() || pid == self || !std::all_of(pid.begin(), pid.end(), ::isdigit)) continue;
    std::ifstream comm(e.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name != "gwlbd") continue;
    std::ifstream status(e.path() / "status");
    uint64_t kb = 0;
    for (std::string line; std::getline(status, line);)
      if (line.rfind("HugetlbPages:", 0) == 0) kb = std::strtoull(line.c_str() + 13, nullptr, 10);
    if (kb == 0) continue;
    h.bytes += kb * 1024;
    h.pids += (h.pids.empty() ? "" : ", ") + pid;
  }
  return h;
}

}  // namespace

uint64_t MemoryPlan::ealBytes() const {
  uint64_t t = 0;
  for (const auto& p : parts)
    if (p.eal) t += p.bytes;
  return t;
}

uint64_t MemoryPlan::processBytes() const {
  uint64_t t = 0;
  for (const auto& p : parts)
    if (!p.eal) t += p.bytes;
  return t;
}

const MemoryPart* MemoryPlan::find(const std::string& name) const {
  for (const auto& p : parts)
    if (p.name == name) return &p;
  return nullptr;
}

std::string mib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / double(kMiB));
  return b;
}

unsigned mbufDataRoom(const Config& cfg) {
  return std::max<unsigned>(RTE_MBUF_DEFAULT_DATAROOM, cfg.node.underlay_mtu + 64);
}

uint64_t mbufObjectBytes(unsigned data_room) {
  rte_mempool_objsz sz{};
  // As rte_pktmbuf_pool_create lays them out (no private area, default flags).
  return rte_mempool_calc_obj_size(uint32_t(sizeof(rte_mbuf) + data_room + RTE_PKTMBUF_HEADROOM),
                                   0, &sz);
}

uint64_t flowTableIpv4Bytes(uint32_t capacity) {
  uint64_t n = flowSlots(capacity);
  return page(n * 4) + page(n * 64);
}

uint64_t flowTableBytes(uint32_t capacity) {
  return flowTableIpv4Bytes(capacity) + page(flowSlots(capacity) * 128);
}

uint64_t flowTableMarkerBytes(uint32_t capacity) {
  return flowSlots(capacity) + flowSlots(capacity) / dp::FlowTable::kBucketSlots;
}

uint64_t sentLogBytes(uint32_t capacity) { return SentLog::bytesFor(2 * flowSlots(capacity)); }

uint64_t sentLogIpv4Bytes(uint32_t capacity) {
  return flowSlots(capacity) * sizeof(SentLog::Entry);
}

MemoryPlan planMemory(const Config& cfg, unsigned pci_ports, bool hugepages) {
  MemoryPlan plan;
  const DataplaneConfig& d = cfg.dataplane;
  unsigned room = mbufDataRoom(cfg);
  uint64_t obj = mbufObjectBytes(room);
  plan.parts.push_back({"mbuf pool",
                        std::to_string(d.mbufs) + " mbufs x " + std::to_string(obj) +
                            " B (data room " + std::to_string(room) + " B + headroom " +
                            std::to_string(RTE_PKTMBUF_HEADROOM) + " + mbuf and pool headers)",
                        "dataplane.mbufs, node.underlay_mtu", uint64_t(d.mbufs) * obj, true});
  uint64_t pool_meta = ringBytes(rte_align32pow2(d.mbufs + 1)) +
                       roundUp(sizeof(rte_mempool) + RTE_MAX_LCORE * sizeof(rte_mempool_cache) +
                                   sizeof(rte_pktmbuf_pool_private),
                               RTE_CACHE_LINE_SIZE);
  plan.parts.push_back({"mbuf pool ring and caches",
                        "free-mbuf ring of " + std::to_string(rte_align32pow2(d.mbufs + 1)) +
                            " + " + std::to_string(RTE_MAX_LCORE) + " per-lcore caches",
                        "dataplane.mbufs", pool_meta, true});
  uint64_t rings = 2 * ringBytes(kPuntRingSize);
  std::string which = "punt and control TX (" + std::to_string(kPuntRingSize) + " each)";
  if (cfg.node.exception_path.enabled) {
    rings += ringBytes(kExceptionRingSize);
    which += ", exception path (" + std::to_string(kExceptionRingSize) + ")";
  }
  const bool sync = cfg.fleet.configured && !cfg.fleet.sync_listen.empty() && !cfg.fleet.peers.empty();
  if (sync) {
    rings += ringBytes(kSyncRingSize);
    which += ", fleet sync (" + std::to_string(kSyncRingSize) + ")";
  }
  rings += roundUp(rte_rcu_qsbr_get_memsize(d.workers), RTE_CACHE_LINE_SIZE);
  plan.parts.push_back({"rings and RCU", which + ", RCU variable", "", rings, true});
  if (pci_ports) {
    uint64_t desc = uint64_t(pci_ports) * d.workers *
                    (uint64_t(d.rx_queue_size) + d.tx_queue_size) * kBytesPerDescriptor;
    plan.parts.push_back({"NIC descriptor rings",
                          std::to_string(pci_ports) + " PCI port(s) x " + std::to_string(d.workers) +
                              " RX+TX queue pair(s) x (" + std::to_string(d.rx_queue_size) + "+" +
                              std::to_string(d.tx_queue_size) + ") descriptors x " +
                              std::to_string(kBytesPerDescriptor) + " B (estimate)",
                          "dataplane.rx_queue_size, dataplane.tx_queue_size, dataplane.workers",
                          desc, true});
  }
  // dataplane/capture.cc reserves it at start: what dpdk-dumpcap reads.
  plan.parts.push_back({"packet capture statistics",
                        "counters per port, queue and direction that dpdk-dumpcap reads", "",
                        kCaptureStatsBytes, true});
  plan.parts.push_back({"EAL internal", "DPDK's own memzones and heap headers (reserve)", "",
                        kEalReserveBytes, true});
  uint64_t ft = flowTableBytes(d.flow_table_size);
  uint64_t ft4 = flowTableIpv4Bytes(d.flow_table_size);
  std::string slots = std::to_string(d.flow_table_size) + " flows in " +
                      std::to_string(flowSlots(d.flow_table_size)) + " slots: ";
  if (hugepages) {
    // dp::FlowTable takes its tags and IPv4 slots from the EAL's hugepage heap
    // when the EAL has hugepages; the IPv6 slots stay anonymous memory.
    plan.parts.push_back({"flow table", slots + "tags and IPv4 slots in hugepages",
                          "dataplane.flow_table_size", ft4, true});
    plan.parts.push_back({"flow table, IPv6 slots",
                          "once IPv6 flows fill it (anonymous memory, resident as written)",
                          "dataplane.flow_table_size", ft - ft4, false});
  } else {
    plan.parts.push_back({"flow table",
                          slots + mib(ft4) + " for IPv4 flows (resident from start; " + mib(ft4) +
                              " of hugepages when the EAL has them), " + mib(ft - ft4) +
                              " more once IPv6 flows fill it (anonymous memory)",
                          "dataplane.flow_table_size", ft, false});
  }
  plan.parts.push_back({"flow table overflow marker",
                        "1 B per slot and per bucket (which keys live outside their first bucket pair)",
                        "dataplane.flow_table_size", flowTableMarkerBytes(d.flow_table_size), false});
  if (sync) {
    uint64_t sl = sentLogBytes(d.flow_table_size), sl4 = sentLogIpv4Bytes(d.flow_table_size);
    plan.parts.push_back({"fleet sync",
                          std::to_string(sizeof(SentLog::Entry)) +
                              " B per flow-table slot (when its flow was last sent): " + mib(sl4) +
                              " for IPv4 flows, " + mib(sl - sl4) +
                              " more once IPv6 flows are sent (anonymous memory, resident as written)",
                          "dataplane.flow_table_size, fleet.peers", sl, false});
  }
  plan.parts.push_back({"worker state",
                        std::to_string(d.workers) + " x " +
                            std::to_string(sizeof(dp::WorkerState) + sizeof(dp::WorkerRun)) +
                            " B (counters, per-appliance traffic)",
                        "dataplane.workers",
                        uint64_t(d.workers) * (sizeof(dp::WorkerState) + sizeof(dp::WorkerRun)),
                        false});
  if (!cfg.traffic_classes.empty()) {
    // Compiled as gwlbd will (the cache hands gwlbd's first snapshot this
    // table); a change of classes holds the running and the new table at once.
    const ClassTable t = compiledClasses(cfg.traffic_classes);
    plan.parts.push_back({"traffic classes",
                          std::to_string(t.size()) + " classes compiled (" +
                              (t.crossProduct() ? "cross product" : "bit vectors") + ", IPv4 " +
                              (t.ipv4Trie() ? "trie" : "interval search") + "): " + mib(t.memoryBytes()) +
                              ", twice while a reload replaces them",
                          "traffic_classes", 2 * uint64_t(t.memoryBytes()), false});
  }
  // NeighbourTable's kMapBytes (private): 17 bytes per slot.
  plan.parts.push_back({"neighbour table",
                        std::to_string(dp::NeighbourTable::kSlots) + " L2 neighbours", "",
                        page(uint64_t(dp::NeighbourTable::kSlots) * 17), false});
  return plan;
}

EalBudget ealBudget(const std::vector<std::string>& eal, const std::string& hugepage_dir,
                    const std::string& proc_dir) {
  EalBudget b;
  uint64_t m = 0, socket_mem = 0;
  bool have_m = false, have_socket = false, legacy = false, no_pci = false;
  unsigned allow = 0;
  std::string m_text, socket_text;
  for (size_t i = 0; i < eal.size(); ++i) {
    const std::string& a = eal[i];
    auto value = [&](const std::string& opt, std::string& out) {
      if (a == opt && i + 1 < eal.size()) {
        out = eal[++i];
        return true;
      }
      if (opt.size() > 2 && a.rfind(opt + "=", 0) == 0) {
        out = a.substr(opt.size() + 1);
        return true;
      }
      if (opt.size() == 2 && a.size() > 2 && a.rfind(opt, 0) == 0) {  // -m1024, -a0000:..
        out = a.substr(2);
        return true;
      }
      return false;
    };
    std::string v;
    if (a == "--no-huge") {
      b.no_huge = true;
    } else if (a == "--legacy-mem") {
      legacy = true;
    } else if (a == "--no-pci") {
      no_pci = true;
    } else if (value("-m", v)) {
      have_m = true;
      m_text = v;
      if (!parseMiB(v, m)) b.error = "eal: -m " + v + ": not a size in MiB";
    } else if (value("--socket-mem", v)) {
      have_socket = true;
      socket_text = v;
      size_t pos = 0;
      while (pos <= v.size()) {
        size_t end = v.find(',', pos);
        if (end == std::string::npos) end = v.size();
        uint64_t one = 0;
        if (!parseMiB(v.substr(pos, end - pos), one))
          b.error = "eal: --socket-mem " + v + ": not a list of sizes in MiB";
        socket_mem += one;
        pos = end + 1;
      }
    } else if (value("-a", v) || value("--allow", v) || value("-w", v)) {
      ++allow;
    }
  }
  b.pci_ports = no_pci ? 0 : std::max(1u, allow);
  if (!b.error.empty()) return b;
  if (have_m && have_socket) {
    b.error = "eal: -m and --socket-mem cannot be used together (DPDK refuses it): keep one";
    return b;
  }
  if (b.no_huge) {
    if (have_socket) {
      b.error = "eal: --socket-mem needs hugepages; with --no-huge give the size with -m";
    } else if (have_m) {
      b.bytes = m;
      b.source = "-m " + m_text + " with --no-huge";
    } else {
      b.bytes = 64 * kMiB;
      b.source = "--no-huge without -m: DPDK's default of 64 MiB";
    }
    return b;
  }
  uint64_t free_bytes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(hugepage_dir, ec)) {
    std::string name = e.path().filename().string();  // hugepages-2048kB
    if (name.rfind("hugepages-", 0) != 0) continue;
    uint64_t kb = std::strtoull(name.c_str() + 10, nullptr, 10);
    free_bytes += readNumber(e.path() / "free_hugepages") * kb * 1024;
  }
  const HeldPages held = heldByGwlbd(proc_dir);
  const std::string free_text =
      held.bytes == 0 ? mib(free_bytes) + " are free"
                      : mib(free_bytes) + " are free and the running gwlbd (pid " + held.pids +
                            ") holds " + mib(held.bytes) + " until it stops";
  free_bytes += held.bytes;
  uint64_t asked = have_m ? m : socket_mem;
  std::string asked_text = have_m ? "-m " + m_text : "--socket-mem " + socket_text;
  if ((have_m || have_socket) && asked > free_bytes) {
    b.error = "eal: " + asked_text + " asks for " + mib(asked) + " of hugepages but " + free_text +
              ": reserve more hugepages (docs/deploy.md \"Memory\"), lower it, or "
              "run without hugepages (--no-huge with -m)";
    return b;
  }
  if (legacy && (have_m || have_socket)) {
    b.bytes = asked;
    b.source = asked_text + " with --legacy-mem";
  } else {
    b.bytes = free_bytes;
    b.source = "free hugepages now (" + hugepage_dir + "/*/free_hugepages)" +
               (held.bytes ? " and the " + mib(held.bytes) + " the running gwlbd (pid " + held.pids +
                                 ") holds until it stops"
                           : "") +
               (have_m || have_socket ? "; " + asked_text + " of them taken at start" : "");
  }
  return b;
}

std::string formatPlan(const MemoryPlan& plan, const EalBudget& budget) {
  std::string out = "memory:\n";
  char line[512];
  for (const auto& p : plan.parts) {
    std::snprintf(line, sizeof line, "  %-26s %12s  %-7s  %s%s\n", p.name.c_str(), mib(p.bytes).c_str(),
                  p.eal ? "EAL" : "process", p.detail.c_str(),
                  p.keys.empty() ? "" : ("  [" + p.keys + "]").c_str());
    out += line;
  }
  out += "  EAL memory needed: " + mib(plan.ealBytes()) + "; the EAL gets " +
         (budget.error.empty() ? mib(budget.bytes) + " (" + budget.source + ")" : "?") + "\n";
  out += "  process memory (not hugepages): up to " + mib(plan.processBytes()) + "\n";
  return out;
}

std::string checkFits(const MemoryPlan& plan, const EalBudget& budget) {
  if (!budget.error.empty()) return budget.error;
  uint64_t need = plan.ealBytes();
  if (need <= budget.bytes) return "";
  const MemoryPart* pool = plan.find("mbuf pool");
  std::string lower = pool ? ", or lower dataplane.mbufs (" + pool->detail.substr(0, pool->detail.find(" (")) +
                                 " = " + mib(pool->bytes) + ")"
                           : "";
  std::string what = "EAL memory: the config needs " + mib(need) + " but the EAL gets " +
                     mib(budget.bytes) + " (" + budget.source + "): ";
  if (budget.no_huge)
    return what + "set \"-m\", \"" + std::to_string(ceilMiB(need)) + "\" (or more) in eal:" + lower;
  uint64_t pages2m = (need + (2 * kMiB) - 1) / (2 * kMiB);
  return what + "reserve at least " + std::to_string(ceilMiB(need)) + " MiB of hugepages (e.g. " +
         std::to_string(pages2m) + " pages of 2 MiB: docs/deploy.md \"Memory\")" + lower;
}

std::string mbufWarning(const Config& cfg, unsigned pci_ports) {
  const DataplaneConfig& d = cfg.dataplane;
  uint64_t rx = uint64_t(pci_ports) * d.workers * d.rx_queue_size;
  uint64_t want = uint64_t(pci_ports) * d.workers * (uint64_t(d.rx_queue_size) + d.tx_queue_size) +
                  uint64_t(d.workers + 1) * 384;
  if (pci_ports == 0 || d.mbufs >= want) return "";
  return "dataplane.mbufs " + std::to_string(d.mbufs) + (d.mbufs < rx ? " cannot fill" : " barely fill") +
         " the RX rings of " + std::to_string(pci_ports) + " PCI port(s) (" + std::to_string(rx) +
         " descriptors; with the TX rings and lcore caches " + std::to_string(want) +
         "): a port may fail to start or drop under load; raise it to at least " +
         std::to_string(2 * want) + " (docs/deploy.md \"Memory\")";
}

std::string allocationHint(const Config& cfg, const std::string& part) {
  MemoryPlan plan = planMemory(cfg, 0);
  const MemoryPart* p = plan.find(part);
  std::string key = p && !p->keys.empty() ? p->keys.substr(0, p->keys.find(',')) : "";
  if (p && !p->eal)  // process memory (anonymous mmap), not the EAL's
    return " (the " + part + " maps " + mib(p->bytes) + " of process memory, not hugepages: " +
           "allow the process more address space (ulimit -v, vm.overcommit_memory)" +
           (key.empty() ? "" : " or lower " + key) + "; gwlbd --check-config shows the memory by part)";
  std::string s = " (the EAL needs about " + mib(plan.ealBytes()) + " for this config";
  if (p) s += ", " + mib(p->bytes) + " of it for the " + part;
  s += ": give the EAL more memory (\"-m\" in eal: with --no-huge, else more free hugepages)";
  if (!key.empty()) s += " or lower " + key;
  return s + "; gwlbd --check-config shows the memory by part)";
}

}  // namespace gwlb::ctl
