// Benchmark (never pass/fail): the worker pipeline's throughput on one lcore,
// fed through a DPDK net_ring port, in cycles per packet (figure 1).
//
// One process, the main lcore pinned to one cpu. A net_ring port made with
// rte_eth_from_rings has its own RX ring and TX ring. Per burst:
//   untimed  allocate B mbufs, write the next B flows' frames into them
//            (header bytes from per-flow templates), enqueue them on the RX ring
//   timed    rte_eth_rx_burst -> dp::processBurst -> rte_eth_tx_burst of both
//            output lists (what a worker does per burst; rte_rdtsc around it)
//   untimed  dequeue the TX ring, check every packet came out, free them
// so the timed region holds the same ring operations testpmd's io forwarding
// does on the same kind of port (bench.sh runs testpmd in the same run), plus
// our pipeline. A `ring` variant times only rx_burst + tx_burst (our harness's
// io forwarding, for comparison with testpmd io).
//
// Cases (--mode):
//   established  the flows exist (a first untimed pass created them); Geneve
//                (aws format, 3 options) to one of 3 appliances
//   new          every packet is a new flow: key, lookup miss, Maglev, insert,
//                route CAS, encapsulation. Each repetition inserts --flows new
//                flows into an empty table (capacity 2 x flows) and the table is
//                emptied (untimed) between repetitions.
//   return       Geneve from the appliance for existing flows (cookies taken
//                from a forward pass): validate, look up, check the cookie,
//                strip, rewrite L2, back to the router
//   bypassed     established flows whose appliance handed them back (appliance
//                bypass, for the flow's life): looked up, sent straight back
//                to the router, no encapsulation
//   ring         no pipeline: rx_burst + tx_burst only
// Frames: Ethernet + IPv4 + TCP (20 B header, ACK) or UDP, --size bytes in all
// (without FCS); flows differ in client address and port, all to one server.
// Flows are visited in a fixed pseudo-random order (each pass the same order),
// so consecutive packets belong to unrelated flows.
//
//   pipeline_bench --mode M --flows N --size S --proto tcp|udp [--burst B]
//                  [--reps R] [--rep-packets P] [--cpu C] [--instructions]
//                  [--tx-offload] [--huge-dir DIR] [--pad-instructions N] [--help]
//                  [--classes N [--mirror] [--tag]] [--vxlan] [--underlay ipv4|ipv6]
//                  [--geneve-format aws|ethernet]
// --vxlan: the group uses encapsulation vxlan (Azure's two tunnels, inner
// Ethernet frame) instead of Geneve's aws format.
// --geneve-format ethernet: the Geneve group carries the whole Ethernet
// frame (protocol 0x6558, no aws options) instead of the aws format's IP
// packet; with --vxlan, refused (VXLAN has no Geneve format).
// --classes N: N traffic classes of mixed fields (bench/bench_net.h
// benchClasses), the flows matching the last one (the worst case).
// --mirror: that class also has a mirror group of one tool: each packet's
// copy (a header mbuf chained to the original's data) is built and sent too;
// the copies come out of the TX ring beside the originals.
// --tag: that class has a tag: each packet carries the 12-byte tag option.
// Prints one JSON line per case (last line of stdout).
// Offload, hugepages and the budget test's deliberate regression (kept together
// in the blocks marked "offload and hugepages"):
//   --tx-offload        the port "offers" outer IPv4/UDP checksum offload: the
//                       pipeline sets the mbuf's offload flags and the
//                       pseudo-header sum instead of summing in software
//                       (what gwlbd does with dataplane.checksum_offload on a
//                       NIC that offers it; net_ring itself ignores the flags)
//   --huge-dir DIR      the EAL on hugepages from the hugetlbfs at DIR instead
//                       of --no-huge (4 KiB pages); the flow table then sits in
//                       hugepage memory as in gwlbd (scripts/bench.sh reserves
//                       and returns the pages)
//   --pad-instructions N  a deliberate regression for the instruction budget's
//                       self-test (bench/instruction_budget.py): about N extra
//                       instructions per packet in processBurstPad(), which
//                       callgrind's --toggle-collect='*processBurst*' counts
//   --underlay ipv6     the three appliances at IPv6 addresses: Geneve over an
//                       IPv6 underlay (outer header 20 bytes longer, no IPv4
//                       header checksum, a flow label and traffic class)
//   --help              the options, then exit (the budget test asks for
//                       options it needs with it: an unknown one is refused
//                       before --help is reached)
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <sched.h>
#include <unistd.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define GWLB_HAVE_CALLGRIND 1
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/counters.h"
#include "common/snapshot.h"
#include "control/config/config.h"
#include "control/engine/snapshot_builder.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"
#include "bench/bench_net.h"
#include "tests/dp/packet_builder.h"

namespace gwlb::bench {
namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "pipeline_bench: %s\n", what.c_str());
  std::exit(1);
}

// kBypassed: established flows whose appliance handed them back (appliance
// bypass): sent straight back, no Geneve.
enum class Mode { kEstablished, kNew, kReturn, kRing, kBypassed };

struct Options {
  Mode mode = Mode::kEstablished;
  std::string mode_name = "established";
  uint32_t flows = 1024;
  uint32_t size = 64;
  bool tcp = false;
  uint16_t burst = 32;
  unsigned reps = 7;
  uint64_t rep_packets = 2'000'000;
  int cpu = -1;
  bool instructions = false;
  // offload and hugepages
  bool tx_offload = false;
  std::string huge_dir;
  unsigned pad = 0;
  uint32_t classes = 0;  // traffic classes in the snapshot (benchClasses)
  bool mirror = false;   // the matched class has a mirror group (one tool)
  bool tag = false;      // the matched class has a tag
  bool ipv6_underlay = false;  // --underlay ipv6: the appliances are IPv6 (Geneve over IPv6)
  bool vxlan = false;    // --vxlan: encapsulation vxlan
  bool geneve_ethernet = false;  // --geneve-format ethernet
};

// a deliberate regression (--pad-instructions): about `per` extra
// instructions per packet, in a function callgrind's '*processBurst*' toggle
// counts (called beside processBurst, not inside it: nested toggles cancel).
[[gnu::noinline]] void processBurstPad(uint16_t n, unsigned per) {
  for (uint32_t i = 0, end = uint32_t(n) * (per / 3); i < end; ++i) asm volatile("" ::: "memory");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const IpAddr kServer = kBenchServer;
constexpr size_t kFwdHdr = 64;    // template bytes per flow, forward frames
constexpr size_t kRetHdr = 160;   // template bytes per flow, return frames
constexpr uint64_t kBaseNs = 1'000'000'000'000ULL;

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o) {
    if (o.size < 64 || o.size > 1500) die("--size must be 64..1500");
    if (o.burst == 0 || o.burst > dp::kMaxBurst) die("--burst must be 1..256");
    unsigned n_mbufs = 4 * o.burst < 1024 ? 1023 : 4 * o.burst - 1;
    pool_ = dp::createMbufPool("pb_pool", n_mbufs, 2048);
    rx_ = dp::createRing("pb_rx", 1024, true);
    tx_ = dp::createRing("pb_tx", 1024, true);
    int port = rte_eth_from_rings("pb_ring", &rx_, 1, &tx_, 1, int(rte_socket_id()));
    if (port < 0) die("rte_eth_from_rings failed");
    port_ = uint16_t(port);
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(port_, 1, 1, &conf) != 0 ||
        rte_eth_rx_queue_setup(port_, 0, 1024, rte_socket_id(), nullptr, pool_) != 0 ||
        rte_eth_tx_queue_setup(port_, 0, 1024, rte_socket_id(), nullptr) != 0 ||
        rte_eth_dev_start(port_) != 0)
      die("cannot start the net_ring port");
    qsbr_ = dp::createQsbr(1);
    if (rte_rcu_qsbr_thread_register(qsbr_, 0) != 0) die("qsbr register");
    rte_rcu_qsbr_thread_online(qsbr_, 0);
    buildSnapshot();
    dp_.underlay_csum_offload = o.tx_offload;  // --tx-offload
    newTable();
    w_ = std::make_unique<dp::WorkerState>();
    order_.resize(o.flows);
    std::iota(order_.begin(), order_.end(), 0u);
    std::shuffle(order_.begin(), order_.end(), std::mt19937(12345));
    buildForwardTemplates(0);
  }

  void newTable() {
    dp_.flows = nullptr;
    table_.reset();
    table_ = std::make_unique<dp::FlowTable>("pb_ft" + std::to_string(tables_++),
                                             std::max<uint32_t>(2 * o_.flows, 1024), qsbr_,
                                             int(rte_socket_id()));
    dp_.flows = table_.get();
  }

  // Forward frame templates for flows [first, first + flows).
  void buildForwardTemplates(uint32_t first) {
    using namespace dptest;
    L2 l2{*MacAddr::parse("02:00:00:00:00:a1"), *MacAddr::parse("02:00:00:00:0a:0a"), {}};
    fwd_.assign(size_t(o_.flows) * kFwdHdr, 0);
    for (uint32_t i = 0; i < o_.flows; ++i) {
      uint32_t f = first + i;
      IpAddr c = IpAddr::v4(0x0A400000u + f / 60000);  // 10.64.x.y
      uint16_t sport = uint16_t(1024 + f % 60000);
      size_t l4_hdr = o_.tcp ? 20 : 8;
      size_t payload = o_.size - 14 - 20 - l4_hdr;
      Bytes l4 = o_.tcp ? tcp(c, kServer, sport, 443, pattern(payload), kTcpAck)
                        : udp(c, kServer, sport, 53, pattern(payload));
      Bytes fr = ether(l2, kEthIpv4, ipv4(c, kServer, o_.tcp ? 6 : 17, l4));
      if (fr.size() != o_.size) die("frame size mismatch");
      std::memcpy(&fwd_[size_t(i) * kFwdHdr], fr.data(), kFwdHdr);
      if (i == 0) full_ = fr;
    }
  }

  // One timed pass over `count` packets (flows in order_, wrapping). Returns cycles.
  uint64_t pass(uint64_t count, uint64_t& packets, bool timed_callgrind = false) {
    uint64_t cycles = 0;
    rte_mbuf* pkts[dp::kMaxBurst];
    rte_mbuf* back[2 * dp::kMaxBurst];  // originals and their mirror copies
    dp::BurstOutput out;
    (void)timed_callgrind;
    while (count) {
      uint16_t k = uint16_t(std::min<uint64_t>(o_.burst, count));
      if (rte_pktmbuf_alloc_bulk(pool_, pkts, k) != 0) die("mbuf pool empty");
      for (uint16_t j = 0; j < k; ++j) fill(pkts[j], order_[cursor_++ % o_.flows]);
      if (rte_ring_enqueue_burst(rx_, reinterpret_cast<void**>(pkts), k, nullptr) != k)
        die("rx ring full");
      uint64_t t0 = rte_rdtsc();
      uint16_t n = rte_eth_rx_burst(port_, 0, pkts, o_.burst);
      uint16_t sent;
      if (o_.mode == Mode::kRing) {
        sent = rte_eth_tx_burst(port_, 0, pkts, n);
      } else {
        uint64_t now = dp::monotonicNs() - t_start_ + kBaseNs;
        if (o_.pad) processBurstPad(n, o_.pad);  // --pad-instructions
        dp::processBurst(dp_, *w_, pkts, n, now, out);
        sent = rte_eth_tx_burst(port_, 0, out.to_appliance, out.n_appliance);
        sent = uint16_t(sent + rte_eth_tx_burst(port_, 0, out.to_router, out.n_router));
        if (out.n_mirror) sent = uint16_t(sent + rte_eth_tx_burst(port_, 0, out.to_mirror, out.n_mirror));
      }
      cycles += rte_rdtsc() - t0;
      // --mode bypassed measures the bypass only if nothing was encapsulated.
      if (bypassing_ && (out.n_appliance != 0 || out.n_router != n))
        die("a bypassed flow's packet went to an appliance (" + std::to_string(out.n_appliance) + " of " +
            std::to_string(n) + ")");
      unsigned got = rte_ring_dequeue_burst(tx_, reinterpret_cast<void**>(back), 2 * dp::kMaxBurst,
                                            nullptr);
      // With --mirror (forward modes) each packet also sends its copy.
      const unsigned want = o_.mirror ? 2u * k : k;
      if (n != k || sent != want || got != want)
        die("a packet did not come out (rx " + std::to_string(n) + ", sent " +
            std::to_string(sent) + ", of " + std::to_string(k) + "): " + dropSummary());
      if (capture_) for (unsigned j = 0; j < got; ++j) capture(back[j]);
      rte_pktmbuf_free_bulk(back, got);
      packets += k;
      count -= k;
    }
    return cycles;
  }

  // Runs the case; returns cycles/packet of each repetition.
  // Publishes the snapshot; established/return: one untimed pass creates
  // every flow (return: and turns its Geneve output into the replies).
  void warm() {
    t_start_ = dp::monotonicNs();
    if (o_.mode == Mode::kBypassed)
      for (dp::ListenerView& l : snap_->listeners) l.bypass_allow = true;
    dp_.snapshot.store(snap_.get(), std::memory_order_release);
    if (o_.mode != Mode::kEstablished && o_.mode != Mode::kReturn && o_.mode != Mode::kBypassed) return;
    if (o_.mode == Mode::kReturn) {
      ret_.assign(size_t(o_.flows) * kRetHdr, 0);
      ret_len_ = 0;
      capture_ = true;
    }
    uint64_t packets = 0;
    cursor_ = 0;
    pass(o_.flows, packets);
    capture_ = false;
    if (o_.mode == Mode::kReturn) returning_ = true;
    if (o_.mode == Mode::kBypassed)  // as a grant leaves them: bypassed for the flow's life
      table_->forEach([](const FlowKey&, int32_t, const dp::FlowEntry& e) {
        auto& r = const_cast<dp::FlowEntry&>(e).route;
        r.store(dp::withBypass(r.load(), false, 0));
      });
    bypassing_ = o_.mode == Mode::kBypassed;
  }

  std::vector<double> run() {
    warm();
    std::vector<double> per;
    for (unsigned r = 0; r < o_.reps; ++r) {
      uint64_t packets = 0, cycles = 0;
      if (o_.mode == Mode::kNew) {
        // Fresh flows every repetition: a new table, new addresses.
        newTable();
        buildForwardTemplates(uint32_t(r + 1) * o_.flows);
        cursor_ = 0;
        cycles = pass(o_.flows, packets);
      } else {
        cycles = pass(o_.rep_packets, packets);
      }
      per.push_back(double(cycles) / double(packets));
    }
    return per;
  }

  // Deterministic instruction counts: one callgrind-collected pass.
  void runInstructions(uint64_t& packets) {
    warm();
    cursor_ = 0;
    uint64_t n = o_.mode == Mode::kNew ? o_.flows : std::min<uint64_t>(o_.rep_packets, 200000);
#ifdef GWLB_HAVE_CALLGRIND
    CALLGRIND_ZERO_STATS;
#endif
    pass(n, packets);
#ifdef GWLB_HAVE_CALLGRIND
    CALLGRIND_DUMP_STATS_AT("case");
#endif
  }

  double tscHz() const { return double(rte_get_tsc_hz()); }
  size_t tableHugepageBytes() const { return table_->hugepageBytes(); }
  uint32_t frameBytes() const { return o_.mode == Mode::kReturn ? ret_len_ : o_.size; }

 private:
  void fill(rte_mbuf* m, uint32_t flow) {
    uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
    if (returning_) {
      std::memcpy(d, &ret_[size_t(flow) * kRetHdr], kRetHdr);
      m->data_len = uint16_t(ret_len_);
      m->pkt_len = ret_len_;
      m->port = 3;
    } else {
      std::memcpy(d, &fwd_[size_t(flow) * kFwdHdr], kFwdHdr);
      m->data_len = uint16_t(o_.size);
      m->pkt_len = o_.size;
      m->port = 0;
    }
    if (capture_) flow_of_[m] = flow;
  }

  // Turns a Geneve packet the gateway sent into what its appliance returns:
  // outer addresses swapped, everything else byte for byte.
  void capture(rte_mbuf* m) {
    uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
    uint32_t flow = flow_of_[m];
    uint8_t* t = &ret_[size_t(flow) * kRetHdr];
    std::memcpy(t, f, kRetHdr);
    std::swap_ranges(t, t + 6, t + 6);            // MACs
    if (o_.ipv6_underlay) std::swap_ranges(t + 22, t + 38, t + 38);  // IPv6 addresses
    else std::swap_ranges(t + 26, t + 30, t + 30);     // IPv4 addresses
    ret_len_ = m->data_len;
  }

  std::string dropSummary() const {
    std::string s;
    for (size_t i = 0; i < kNumCounters; ++i)
      if (kCounterInfo[i].is_drop && w_->counters.v[i])
        s += std::string(kCounterInfo[i].name) + "=" + std::to_string(w_->counters.v[i]) + " ";
    return s.empty() ? "no drop counted" : s;
  }

  void buildSnapshot() {
    cfg_ = benchConfig(3, ctl::FailoverMode::kNoRebalance);
    cfg_.traffic_classes = benchClasses(o_.classes);
    if (o_.mirror) {  // one tool in a group of its own
      ctl::ApplianceGroupConfig g;
      g.name = "tools";
      g.geneve.vni = 0x77;
      ctl::ApplianceConfig t;
      t.address = benchAppliance(7);
      g.appliances.push_back(t);
      cfg_.server_groups.push_back(g);
      cfg_.traffic_classes.back().mirror.group = "tools";
    }
    if (o_.tag) cfg_.traffic_classes.back().tag = "42";
    if (o_.ipv6_underlay) {  // the same three appliances at IPv6 addresses
      cfg_.node.underlay_ipv6 = IpAddr::parse("2001:db8:f::1");
      for (size_t i = 0; i < cfg_.server_groups[0].appliances.size(); ++i)
        cfg_.server_groups[0].appliances[i].address = *IpAddr::parse("2001:db8:f::" + std::to_string(11 + i));
    }
    if (o_.vxlan) cfg_.server_groups[0].encapsulation = ctl::Encapsulation::kVxlan;
    if (o_.geneve_ethernet) cfg_.server_groups[0].geneve.format = ctl::GeneveFormat::kEthernet;
    ctl::HealthMap h = benchAllHealthy();
    snap_ = ctl::buildSnapshot(cfg_, reg_, {}, 1, h);
  }

  Options o_;
  rte_mempool* pool_ = nullptr;
  rte_ring* rx_ = nullptr;
  rte_ring* tx_ = nullptr;
  uint16_t port_ = 0;
  rte_rcu_qsbr* qsbr_ = nullptr;
  ctl::Config cfg_;
  ctl::ApplianceRegistry reg_;
  std::unique_ptr<dp::Snapshot> snap_;
  std::unique_ptr<dp::FlowTable> table_;
  unsigned tables_ = 0;
  dp::Dataplane dp_;
  std::unique_ptr<dp::WorkerState> w_;
  std::vector<uint32_t> order_;
  std::vector<uint8_t> fwd_, ret_;
  uint32_t ret_len_ = 0;
  dptest::Bytes full_;
  uint64_t cursor_ = 0;
  uint64_t t_start_ = 0;
  bool capture_ = false, returning_ = false;
  bool bypassing_ = false;  // the flows' entries carry the bypass (--mode bypassed, after warm())
  // Which flow an mbuf carries (for turning outputs into return templates).
  struct PtrHash {
    size_t operator()(const rte_mbuf* m) const { return std::hash<const void*>()(m); }
  };
  std::unordered_map<const rte_mbuf*, uint32_t, PtrHash> flow_of_;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--mode") {
      o.mode_name = next();
      if (o.mode_name == "established") o.mode = Mode::kEstablished;
      else if (o.mode_name == "new") o.mode = Mode::kNew;
      else if (o.mode_name == "return") o.mode = Mode::kReturn;
      else if (o.mode_name == "ring") o.mode = Mode::kRing;
      else if (o.mode_name == "bypassed") o.mode = Mode::kBypassed;
      else die("unknown mode " + o.mode_name);
    } else if (a == "--flows") o.flows = uint32_t(std::stoul(next()));
    else if (a == "--size") o.size = uint32_t(std::stoul(next()));
    else if (a == "--proto") {
      std::string p = next();
      if (p != "tcp" && p != "udp") die("--proto tcp|udp");
      o.tcp = p == "tcp";
    } else if (a == "--burst") o.burst = uint16_t(std::stoul(next()));
    else if (a == "--reps") o.reps = unsigned(std::stoul(next()));
    else if (a == "--rep-packets") o.rep_packets = std::stoull(next());
    else if (a == "--cpu") o.cpu = std::stoi(next());
    else if (a == "--instructions") o.instructions = true;
    // offload and hugepages
    else if (a == "--tx-offload") o.tx_offload = true;
    else if (a == "--huge-dir") o.huge_dir = next();
    else if (a == "--pad-instructions") o.pad = unsigned(std::stoul(next()));
    else if (a == "--underlay") {
      std::string u = next();
      if (u != "ipv4" && u != "ipv6") die("--underlay ipv4|ipv6");
      o.ipv6_underlay = u == "ipv6";
    }
    else if (a == "--help") {
      std::printf("pipeline_bench --mode established|new|return|ring|bypassed --flows N --size S --proto "
                  "tcp|udp [--burst B] [--reps R] [--rep-packets P] [--cpu C] [--instructions] "
                  "[--tx-offload] [--huge-dir DIR] [--pad-instructions N] [--classes N] [--mirror] "
                  "[--tag] [--underlay ipv4|ipv6] [--vxlan] [--geneve-format aws|ethernet] [--help]\n");
      std::exit(0);
    }
    else if (a == "--classes") o.classes = uint32_t(std::stoul(next()));
    else if (a == "--mirror") o.mirror = true;
    else if (a == "--tag") o.tag = true;
    else if (a == "--vxlan") o.vxlan = true;
    else if (a == "--geneve-format") {
      std::string f = next();
      if (f != "aws" && f != "ethernet") die("--geneve-format aws|ethernet");
      o.geneve_ethernet = f == "ethernet";
    }
    else die("unknown argument " + a);
  }
  if (o.flows == 0) die("--flows must be > 0");
  if (o.geneve_ethernet && o.vxlan) die("--geneve-format: Geneve groups only, not with --vxlan");
  if (o.classes > 1000) die("--classes must be 0..1000");
  if ((o.mirror || o.tag) && o.classes == 0) die("--mirror and --tag need --classes N (N >= 1)");
  if (o.mirror && o.mode != Mode::kEstablished && o.mode != Mode::kNew)
    die("--mirror: modes established and new only (returns are not mirrored)");
  return o;
}

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using namespace gwlb::bench;
  try {
    Options o = parse(argc, argv);
    std::vector<std::string> eal = {"--no-huge", "--no-pci", "--no-shconf", "-m", "1024",
                                    "--log-level", "lib.eal:error", "--no-telemetry"};
    if (!o.huge_dir.empty())  // hugepages, taken as needed (no -m)
      eal = {"--huge-dir", o.huge_dir, "--file-prefix", "pb" + std::to_string(getpid()),
             "--in-memory", "--no-pci", "--log-level", "lib.eal:error", "--no-telemetry"};
    if (o.cpu >= 0) {
      eal.push_back("-l");
      eal.push_back(std::to_string(o.cpu));
    }
    gwlb::dp::initEal("pipeline_bench", eal);
    Bench b(o);
    if (o.instructions) {
      uint64_t packets = 0;
      b.runInstructions(packets);
      std::printf("{\"mode\":\"%s\",\"flows\":%u,\"size\":%u,\"proto\":\"%s\",\"classes\":%u,"
                  "\"mirror\":%s,\"tag\":%s,\"packets\":%llu}\n",
                  o.mode_name.c_str(), o.flows, o.size, o.tcp ? "tcp" : "udp", o.classes,
                  o.mirror ? "true" : "false", o.tag ? "true" : "false", (unsigned long long)packets);
      return 0;
    }
    std::vector<double> per = b.run();
    double med = median(per);
    auto [mn, mx] = std::minmax_element(per.begin(), per.end());
    std::fprintf(stderr, "%s %u flows %u B %s: %.1f cycles/packet (%.2f Mpps at TSC %.0f MHz)\n",
                 o.mode_name.c_str(), o.flows, o.size, o.tcp ? "tcp" : "udp", med,
                 b.tscHz() / med / 1e6, b.tscHz() / 1e6);
    std::printf("{\"mode\":\"%s\",\"flows\":%u,\"classes\":%u,\"mirror\":%s,\"tag\":%s,\"size\":%u,\"frame_bytes\":%u,\"proto\":\"%s\","
                "\"burst\":%u,\"reps\":%u,\"rep_packets\":%llu,\"cpu\":%d,\"tsc_hz\":%.0f,"
                "\"cycles_per_packet\":%.2f,\"spread\":[%.2f,%.2f],\"mpps\":%.3f,"
                "\"hugepages\":%s,\"flow_table_hugepage_bytes\":%zu,\"tx_offload\":%s,\"encapsulation\":\"%s\","
                "\"geneve_format\":\"%s\",\"underlay\":\"%s\",\"per_rep\":[",
                o.mode_name.c_str(), o.flows, o.classes, o.mirror ? "true" : "false",
                o.tag ? "true" : "false", o.size, b.frameBytes(), o.tcp ? "tcp" : "udp",
                o.burst, o.reps,
                (unsigned long long)(o.mode == Mode::kNew ? o.flows : o.rep_packets), o.cpu,
                b.tscHz(), med, *mn, *mx, b.tscHz() / med / 1e6,
                rte_eal_has_hugepages() ? "true" : "false", b.tableHugepageBytes(),
                o.tx_offload ? "true" : "false", o.vxlan ? "vxlan" : "geneve",
                o.vxlan ? "" : o.geneve_ethernet ? "ethernet" : "aws", o.ipv6_underlay ? "ipv6" : "ipv4");
    for (size_t i = 0; i < per.size(); ++i) std::printf("%s%.2f", i ? "," : "", per[i]);
    std::printf("]}\n");
  } catch (const std::exception& e) {
    die(e.what());
  }
  return 0;
}
