// The snapshot update path under ThreadSanitizer (issue 5): one process, one
// EAL (--no-huge --no-pci, three lcores), two worker lcores running
// dp::processBurst on synthetic traffic of many flows, while the main lcore,
// playing gwlbd's control thread, rebuilds and publishes snapshots as fast as it
// can (health flips, removals and re-additions through ApplianceLifecycle, operator
// drains, weight changes, draining on/off; failover_mode rebalance), retires old
// snapshots after rte_rcu_qsbr grace periods exactly as Daemon::publish /
// retireSnapshots do, and runs FlowTable::expire / reclaim, ctl::countByAppliance,
// ApplianceLifecycle::tick / flowsExpired and ctl::sweepMoves (the control
// thread moving idle flows itself) as the daemon's timers do.
//
// Workers reflect some of their own Geneve output back into their next bursts
// (a transparent appliance), some of it late, so the return path runs too and
// meets moved and expired flows. Both workers draw from the same flows in both
// directions, so they race to create, move and return the same flow entries;
// every second burst they also meet at a barrier and then create the same new
// flows from opposite ends at the same moment.
//
// The clock is virtual (kSpeedup x real time, advanced by the main thread) so
// that idle timeouts (60 s minimum) and drain timeouts pass within seconds and
// flow-table positions are expired, reclaimed and re-used during the run.
//
// Each worker allocates from its own mempool and never hands an mbuf to
// another thread: mbufs then never travel through the (uninstrumented)
// mempool ring between threads, which TSan could not follow.
//
// Checked at the end (exit status 1 otherwise; TSan's own reports make it 66):
// no crash; per worker rx_packets == encapsulated + returned + icmp_sent +
// punted + drops; every retired snapshot freed (dp::Snapshot::live() == 1);
// every mbuf back in its pool; flows moved (flows_rebalanced > 0); returns
// delivered; positions expired and reclaimed; the flow table empties.
//
//   stress_update [--seconds S] [--read-counters]   (default 4 s; the meson test runs 6)
#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "common/counters.h"
#include "common/health.h"
#include "common/snapshot.h"
#include "control/config/config.h"
#include "control/engine/flow_policy.h"
#include "control/engine/lifecycle.h"
#include "control/engine/snapshot_builder.h"
#include "dataplane/eal.h"
#include "dataplane/flow_table.h"
#include "dataplane/pipeline.h"
#include "tests/dp/packet_builder.h"

namespace gwlb::sanitize {
namespace {

using dptest::Bytes;

constexpr unsigned kWorkers = 2;
constexpr uint16_t kBurst = 32;
constexpr uint32_t kFlows = 8192;        // flow ids 0..kFlows-1 (drawn at random)
constexpr uint32_t kRaceFlows = 32768;   // flow ids kFlows.. (created in lock step)
constexpr uint32_t kRacePerBurst = 16;   // new flows both workers create at once ...
constexpr uint64_t kRaceEvery = 2;       // ... every this many bursts
constexpr uint32_t kWindow = 768;        // flows in use at any moment ...
constexpr uint32_t kWindowStep = 96;     // ... sliding by this many ...
constexpr uint64_t kWindowStepNs = 10'000'000'000ULL;  // ... every 10 virtual seconds
constexpr uint64_t kSpeedup = 100;       // virtual ns per real ns
constexpr uint32_t kIdleS = 60;          // tcp and other idle timeouts (the minimum)
constexpr unsigned kPoolSize = 2047;     // mbufs per worker pool
constexpr size_t kMaxPendingReturns = 256;
constexpr size_t kAppliances = 8;        // 10.0.0.11 .. 10.0.0.18
constexpr size_t kMinConfigured = 2;
constexpr uint16_t kPortA = 0, kPortB = 1, kUnderlayPort = 3;

int g_failures = 0;
#define CHECK_THAT(cond, ...)                                                  \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++g_failures;                                                            \
      std::fprintf(stderr, "FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fprintf(stderr, "\n");                                              \
    }                                                                          \
  } while (0)

uint64_t xorshift(uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

uint64_t realNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// ---- Traffic ---------------------------------------------------------------

MacAddr macOf(const char* s) { return *MacAddr::parse(s); }
const MacAddr kUnderlayMac = macOf("02:00:00:00:00:01");
const MacAddr kGatewayMac = macOf("02:00:00:00:00:fe");
const MacAddr kRouterA = macOf("02:00:00:00:0a:0a"), kOurA = macOf("02:00:00:00:00:a1");
const MacAddr kRouterB = macOf("02:00:00:00:0b:0b"), kOurB = macOf("02:00:00:00:00:b1");
const IpAddr kUnderlay = IpAddr::v4(0xC0000201);  // 192.0.2.1
const IpAddr kServer4 = IpAddr::v4(0xCB007114);   // 203.0.113.20

IpAddr applianceAddr(size_t i) { return IpAddr::v4(0x0A00000Bu + uint32_t(i)); }

// The frames one pick of a flow sends, in order (two for a fragmented datagram).
struct FlowFrames {
  std::vector<std::pair<Bytes, uint16_t>> dir[2];
};

// Flow kinds by id % 16: UDP/IPv4 (8), TCP/IPv4 (4), UDP/IPv6 (2), an IPv4
// datagram in two fragments (client side only), an IPv4 packet too big for
// the underlay once encapsulated (ICMP too-big, rate-limited).
std::vector<FlowFrames> buildFlows() {
  using namespace dptest;
  std::vector<FlowFrames> v(kFlows + kRaceFlows);
  L2 from_a{kOurA, kRouterA, {}}, from_b{kOurB, kRouterB, {}};
  for (uint32_t i = 0; i < kFlows + kRaceFlows; ++i) {
    IpAddr c4 = IpAddr::v4(0xC6330000u + i);  // 198.51.x.y, 198.52.x.y
    uint8_t c6b[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, uint8_t(i >> 16),
                       uint8_t(i >> 8), uint8_t(i)};
    uint8_t s6b[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20};
    IpAddr c6 = IpAddr::v6(c6b), s6 = IpAddr::v6(s6b);
    uint16_t cport = uint16_t(1024 + i % 60000);
    unsigned kind = i % 16;
    FlowFrames& f = v[i];
    Bytes pay = pattern(24 + i % 200, uint8_t(i));
    if (kind < 8) {
      f.dir[0] = {{ether(from_a, kEthIpv4, ipv4(c4, kServer4, 17, udp(c4, kServer4, cport, 53, pay))), kPortA}};
      f.dir[1] = {{ether(from_b, kEthIpv4, ipv4(kServer4, c4, 17, udp(kServer4, c4, 53, cport, pay))), kPortB}};
    } else if (kind < 12) {
      f.dir[0] = {{ether(from_a, kEthIpv4, ipv4(c4, kServer4, 6, tcp(c4, kServer4, cport, 443, pay, kTcpAck))), kPortA}};
      f.dir[1] = {{ether(from_b, kEthIpv4, ipv4(kServer4, c4, 6, tcp(kServer4, c4, 443, cport, pay, kTcpAck))), kPortB}};
    } else if (kind < 14) {
      f.dir[0] = {{ether(from_a, kEthIpv6, ipv6(c6, s6, 17, udp(c6, s6, cport, 53, pay))), kPortA}};
      f.dir[1] = {{ether(from_b, kEthIpv6, ipv6(s6, c6, 17, udp(s6, c6, 53, cport, pay))), kPortB}};
    } else if (kind == 14) {
      Bytes seg = udp(c4, kServer4, cport, 4789, pattern(400, uint8_t(i)));
      auto fr = ipv4Fragments(c4, kServer4, 17, seg, 208, uint16_t(i));
      f.dir[0] = {{ether(from_a, kEthIpv4, fr[0]), kPortA}, {ether(from_a, kEthIpv4, fr[1]), kPortA}};
      f.dir[1] = {{ether(from_b, kEthIpv4, ipv4(kServer4, c4, 17, udp(kServer4, c4, 4789, cport, pay))), kPortB}};
    } else {
      Bytes big = pattern(1450, uint8_t(i));  // 1478 B of IPv4: 1546 once encapsulated
      f.dir[0] = {{ether(from_a, kEthIpv4, ipv4(c4, kServer4, 17, udp(c4, kServer4, cport, 9000, big))), kPortA}};
      f.dir[1] = {{ether(from_b, kEthIpv4, ipv4(kServer4, c4, 17, udp(kServer4, c4, 9000, cport, pay))), kPortB}};
    }
  }
  return v;
}

// Frames that never reach the flow table: an ARP request (no punt ring here:
// drop_punt_queue_full) and an LLDP frame (drop_unsupported_ethertype).
std::vector<std::pair<Bytes, uint16_t>> buildOddFrames() {
  using namespace dptest;
  L2 bcast{*MacAddr::parse("ff:ff:ff:ff:ff:ff"), kRouterA, {}};
  return {{ether(bcast, kEthArp, arpRequest(kRouterA, 0xC6336401, 0xC0000201)), kPortA},
          {ether({kOurA, kRouterA, {}}, 0x88CC, pattern(46)), kPortA}};
}

// ---- Shared state -----------------------------------------------------------

std::atomic<uint64_t> g_now{0};     // virtual dataplane clock (ns)
std::atomic<bool> g_go{false};
std::atomic<bool> g_stop{false};

// A sense-reversing spin barrier for the two workers (as tests/dp/dataplane/test_workers.cc):
// lines up the bursts in which both create the same new flows. Gives up when
// the run is stopping (the other worker may have left already).
class Barrier {
 public:
  bool wait() {
    bool sense = !sense_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == kWorkers - 1) {
      arrived_.store(0, std::memory_order_relaxed);
      sense_.store(sense, std::memory_order_release);
      return true;
    }
    for (unsigned spins = 0; sense_.load(std::memory_order_acquire) != sense; ++spins) {
      if (g_stop.load(std::memory_order_relaxed)) return false;
      // Three busy threads may share two CPUs: yield now and then.
      if (spins % 256 == 255) sched_yield();
      else rte_pause();
    }
    return true;
  }

 private:
  std::atomic<uint32_t> arrived_{0};
  std::atomic<bool> sense_{false};
};
Barrier g_race_barrier;

struct Pending {
  rte_mbuf* m;
  uint64_t due_burst;
};

struct Worker {
  unsigned reader_id = 0;
  unsigned lcore = 0;
  rte_mempool* pool = nullptr;
  dp::Dataplane* dp = nullptr;
  rte_rcu_qsbr* qsbr = nullptr;
  const std::vector<FlowFrames>* flows = nullptr;
  const std::vector<std::pair<Bytes, uint16_t>>* odd = nullptr;
  std::unique_ptr<dp::WorkerState> state = std::make_unique<dp::WorkerState>();
  uint64_t rng = 0;
  // Reflected Geneve packets waiting to come back, in due order.
  std::deque<Pending> pending;
  uint64_t race_round = 0;
  // Results, read by the main thread once `done` is set.
  uint64_t bursts = 0, alloc_failures = 0, reflected = 0, race_bursts = 0;
  std::atomic<bool> done{false};
};

// Swaps outer MACs and IPv4 addresses: a transparent appliance's reply.
void reflectInPlace(rte_mbuf* m) {
  uint8_t* f = rte_pktmbuf_mtod(m, uint8_t*);
  for (int i = 0; i < 6; ++i) std::swap(f[i], f[6 + i]);
  for (int i = 0; i < 4; ++i) std::swap(f[26 + i], f[30 + i]);
  m->port = kUnderlayPort;
}

bool appendFrame(Worker& w, rte_mbuf** pkts, uint16_t& n, const std::pair<Bytes, uint16_t>& fr) {
  rte_mbuf* m = rte_pktmbuf_alloc(w.pool);
  if (!m) {
    ++w.alloc_failures;
    return false;
  }
  char* d = rte_pktmbuf_append(m, uint16_t(fr.first.size()));
  std::memcpy(d, fr.first.data(), fr.first.size());
  m->port = fr.second;
  pkts[n++] = m;
  return true;
}

int workerMain(void* arg) {
  Worker& w = *static_cast<Worker*>(arg);
  while (!g_go.load(std::memory_order_acquire)) rte_pause();
  rte_rcu_qsbr_thread_register(w.qsbr, w.reader_id);
  rte_rcu_qsbr_thread_online(w.qsbr, w.reader_id);
  rte_mbuf* pkts[kBurst];
  dp::BurstOutput out;
  while (!g_stop.load(std::memory_order_relaxed)) {
    uint64_t now = g_now.load(std::memory_order_acquire);
    uint16_t n = 0;
    // Returns that are due first, then fresh frames of flows in the window.
    while (n < kBurst / 2 && !w.pending.empty() && w.pending.front().due_burst <= w.bursts) {
      pkts[n++] = w.pending.front().m;
      w.pending.pop_front();
    }
    // Every kRaceEvery bursts both workers meet and then create the same
    // kRacePerBurst new flows, from opposite ends (worker 0 sends even flows
    // client->server and odd ones server->client, worker 1 the reverse).
    bool race = w.bursts % kRaceEvery == 0;
    if (race) {
      for (uint32_t j = 0; j < kRacePerBurst; ++j) {
        uint32_t id = kFlows + uint32_t((w.race_round * kRacePerBurst + j) % kRaceFlows);
        const auto& frames = (*w.flows)[id].dir[(j + w.reader_id) % 2];
        appendFrame(w, pkts, n, frames[0]);
      }
      ++w.race_round;
    }
    uint32_t base = uint32_t((now / kWindowStepNs) * kWindowStep);
    while (n + 2 <= kBurst) {
      uint64_t r = xorshift(w.rng);
      if (r % 64 == 0) {
        if (!appendFrame(w, pkts, n, (*w.odd)[(r >> 8) % w.odd->size()])) break;
        continue;
      }
      uint32_t id = (base + uint32_t((r >> 8) % kWindow)) % kFlows;
      const auto& frames = (*w.flows)[id].dir[(r >> 40) & 1];
      bool ok = true;
      for (const auto& fr : frames) ok = ok && appendFrame(w, pkts, n, fr);
      if (!ok) break;
    }
    if (race) {
      if (!g_race_barrier.wait()) race = false;
      else ++w.race_bursts;
    }
    dp::processBurst(*w.dp, *w.state, pkts, n, now, out);
    rte_rcu_qsbr_quiescent(w.qsbr, w.reader_id);
    ++w.bursts;
    for (uint16_t i = 0; i < out.n_appliance; ++i) {
      rte_mbuf* m = out.to_appliance[i];
      uint64_t r = xorshift(w.rng);
      if (r % 4 != 0 || w.pending.size() >= kMaxPendingReturns) {
        rte_pktmbuf_free(m);
        continue;
      }
      reflectInPlace(m);
      ++w.reflected;
      // Mostly the next burst or so; some much later (after moves and expiry).
      uint64_t delay = (r >> 8) % 16 == 0 ? 200 + (r >> 16) % 400 : (r >> 8) % 4;
      Pending p{m, w.bursts + delay};
      // Keep the queue in due order (late ones go to the back).
      auto it = w.pending.end();
      while (it != w.pending.begin() && std::prev(it)->due_burst > p.due_burst) --it;
      w.pending.insert(it, p);
    }
    for (uint16_t i = 0; i < out.n_router; ++i) rte_pktmbuf_free(out.to_router[i]);
  }
  for (const Pending& p : w.pending) rte_pktmbuf_free(p.m);
  w.pending.clear();
  rte_rcu_qsbr_thread_offline(w.qsbr, w.reader_id);
  rte_rcu_qsbr_thread_unregister(w.qsbr, w.reader_id);
  // rte_eal_wait_lcore() synchronises in uninstrumented EAL code: give TSan
  // (and the main thread's reads of this worker's results) a visible edge.
  w.done.store(true, std::memory_order_release);
  return 0;
}

// ---- Control side (as control/daemon/daemon.cc) ------------------------------------

struct Retired {
  const dp::Snapshot* snap;
  uint64_t token;
};

class Control {
 public:
  Control(dp::Dataplane& dp, rte_rcu_qsbr* qsbr) : dp_(dp), qsbr_(qsbr) {}

  // Daemon::publish.
  void publish(std::unique_ptr<dp::Snapshot> s) {
    const dp::Snapshot* old = dp_.snapshot.exchange(s.release(), std::memory_order_acq_rel);
    if (old) retired_.push_back({old, rte_rcu_qsbr_start(qsbr_)});
    ++published_;
  }
  // Daemon::retireSnapshots.
  void retire(bool wait) {
    while (!retired_.empty()) {
      if (rte_rcu_qsbr_check(qsbr_, retired_.front().token, wait) != 1) break;
      delete retired_.front().snap;
      retired_.pop_front();
      ++freed_;
    }
  }
  size_t awaiting() const { return retired_.size(); }
  uint64_t published() const { return published_; }
  uint64_t freed() const { return freed_; }

 private:
  dp::Dataplane& dp_;
  rte_rcu_qsbr* qsbr_;
  std::deque<Retired> retired_;
  uint64_t published_ = 0, freed_ = 0;
};

ctl::Config baseConfig() {
  ctl::Config c;
  c.node.underlay_ip = kUnderlay;
  c.node.underlay_mac = kUnderlayMac;
  c.node.gateway_mac = kGatewayMac;
  c.node.underlay_port = kUnderlayPort;
  c.node.underlay_mtu = 1500;
  c.node.icmp_rate_per_s = 1000;
  // The router ports take in frames to their own MACs (as gwlbd's devices
  // would give them); the underlay port's is underlay_mac.
  for (auto [id, mac] : {std::pair{kPortA, kOurA}, std::pair{kPortB, kOurB}}) {
    ctl::PortConfig pc;
    pc.id = id;
    pc.role = PortRole::kRouter;
    pc.mac = mac;
    c.node.ports.push_back(pc);
  }
  ctl::ApplianceGroupConfig g;
  g.name = "inspection";
  g.geneve.format = ctl::GeneveFormat::kAws;
  g.geneve.vni = 0x123456;
  g.geneve.endpoint_id = 0x0A0B0C0D01020304ULL;
  g.geneve.attachment_id = 0x1122334455667788ULL;
  g.maglev_table_size = 1021;  // small: keeps each rebuild cheap under TSan
  g.tcp_idle_timeout_s = kIdleS;
  g.other_idle_timeout_s = kIdleS;
  g.failover_mode = ctl::FailoverMode::kRebalance;
  g.connection_draining.enabled = true;
  g.connection_draining.timeout_s = 20;
  for (size_t i = 0; i < 6; ++i) {
    ctl::ApplianceConfig s;
    s.address = applianceAddr(i);
    g.appliances.push_back(s);
  }
  c.server_groups.push_back(g);
  return c;
}

struct ControlStats {
  uint64_t iterations = 0, health_flips = 0, weight_changes = 0, removals = 0, additions = 0,
           drains = 0, undrains = 0, draining_toggles = 0, expired = 0, reclaimed = 0,
           counts = 0, lifecycle_changes = 0, swept = 0;
};

// --read-counters: the main thread also sums the workers' counters while they
// run, as gwlbd's stats and metrics do (the meson test turns it on).
bool g_read_counters = false;
Worker* g_workers = nullptr;
uint64_t g_counter_sink = 0;

void runControl(dp::Dataplane& dpl, dp::FlowTable& flows, rte_rcu_qsbr* qsbr, Control& ctl_pub,
                ctl::Config& cfg, ctl::ApplianceRegistry& reg, ctl::ApplianceLifecycle& life,
                uint64_t& generation, double seconds, ControlStats& st) {
  ctl::HealthMap health;
  for (size_t i = 0; i < kAppliances; ++i)
    health[applianceAddr(i).v4HostOrder()] = HealthState::kHealthy;
  uint64_t rng = 0x9E3779B97F4A7C15ULL;
  const uint64_t t0 = realNs();
  const uint64_t v0 = g_now.load(std::memory_order_relaxed);
  const uint64_t end = t0 + uint64_t(seconds * 1e9);
  std::vector<uint16_t> expired_on;
  std::vector<uint32_t> counts;
  (void)qsbr;
  for (uint64_t t = realNs(); t < end; t = realNs()) {
    const uint64_t now = v0 + (t - t0) * kSpeedup;
    g_now.store(now, std::memory_order_release);
    ++st.iterations;
    auto& appliances = cfg.server_groups[0].appliances;
    auto configured = [&](uint32_t ip) {
      for (auto& s : appliances)
        if (s.address.v4HostOrder() == ip) return true;
      return false;
    };
    uint64_t r = xorshift(rng);
    uint32_t ip = applianceAddr((r >> 8) % kAppliances).v4HostOrder();
    switch (r % 8) {
      case 0:
      case 1: {  // health flip (checked appliances flap)
        ApplianceHealth& h = health[ip];
        h = h == HealthState::kHealthy ? HealthState::kUnhealthy : HealthState::kHealthy;
        ++st.health_flips;
        break;
      }
      case 2: {  // weight change
        static const uint32_t kWeights[] = {0, 50, 100, 200};
        appliances[(r >> 16) % appliances.size()].weight = kWeights[(r >> 24) % 4];
        ++st.weight_changes;
        break;
      }
      case 3: {  // removal (reload without the appliance)
        if (appliances.size() <= kMinConfigured || !configured(ip)) break;
        ctl::Config next = cfg;
        auto& ns = next.server_groups[0].appliances;
        for (auto it = ns.begin(); it != ns.end(); ++it)
          if (it->address.v4HostOrder() == ip) {
            ns.erase(it);
            break;
          }
        life.applyConfig(cfg, next, now, "removed by stress test");
        cfg = std::move(next);
        ++st.removals;
        break;
      }
      case 4: {  // (re-)addition
        if (configured(ip)) break;
        ctl::Config next = cfg;
        ctl::ApplianceConfig s;
        s.address = IpAddr::v4(ip);
        next.server_groups[0].appliances.push_back(s);
        life.applyConfig(cfg, next, now, "added by stress test");
        cfg = std::move(next);
        ++st.additions;
        break;
      }
      case 5:  // operator drain, sometimes with its own timeout
        if (life.drain(cfg, ip, (r >> 32) % 2 ? std::optional<uint32_t>(5) : std::nullopt, now)
                .empty())
          ++st.drains;
        break;
      case 6:
        if (life.undrain(ip).empty()) ++st.undrains;
        break;
      case 7:  // draining on/off (removals then drain or move at once)
        if ((r >> 8) % 4 == 0) {
          auto& d = cfg.server_groups[0].connection_draining;
          d.enabled = !d.enabled;
          ++st.draining_toggles;
        }
        break;
    }
    // Validation wants one server with weight > 0 (a reload would be refused).
    bool any_weight = false;
    for (auto& s : cfg.server_groups[0].appliances) any_weight = any_weight || s.weight > 0;
    if (!any_weight) cfg.server_groups[0].appliances[0].weight = 100;
    // The daemon's timers: lifecycle tick (with a flow count now and then),
    // idle expiry, reclaim after the grace period.
    const std::vector<uint32_t> addrs = reg.addresses();
    bool count = st.iterations % 4 == 0;
    if (count) {
      // As Daemon::lifecycleTick: idle flows of appliances that left move now
      // (the control thread's CAS on routes the workers also move), then count.
      if (const dp::Snapshot* s = dpl.snapshot.load(std::memory_order_acquire)) {
        size_t n = ctl::sweepMoves(flows, *s, now);
        life.addSwept(n);
        st.swept += n;
      }
      counts.clear();
      ctl::countByAppliance(flows, counts);
      ++st.counts;
    }
    if (life.tick(now, count ? &counts : nullptr, addrs)) ++st.lifecycle_changes;
    if (st.iterations % 8 == 0) {
      expired_on.clear();
      st.expired += flows.expire(now, 0, &expired_on);
      life.flowsExpired(expired_on, addrs);
    }
    st.reclaimed += flows.reclaim(false);
    if (g_read_counters)
      for (unsigned k = 0; k < kWorkers; ++k)
        g_counter_sink += g_workers[k].state->counters.get(Counter::rx_packets);
    ctl_pub.publish(ctl::buildSnapshot(cfg, reg, {}, ++generation, health, &life));
    ctl_pub.retire(false);
  }
}

std::string lcoresArg() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  if (cpus.empty()) cpus = "0";
  // Three lcores, each free to run on any CPU this process may use.
  return "--lcores=(0-2)@(" + cpus + ")";
}

int run(double seconds) {
  dp::initEal("gwlb-sanitize", {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m",
                                "256", "--log-level=*:warning", lcoresArg()});
  std::vector<unsigned> lcores;
  unsigned lc;
  RTE_LCORE_FOREACH_WORKER(lc) lcores.push_back(lc);
  if (lcores.size() < kWorkers) {
    std::fprintf(stderr, "EAL gave %zu worker lcores, need %u\n", lcores.size(), kWorkers);
    return 1;
  }

  std::printf("building %u flows' frames...\n", kFlows);
  const std::vector<FlowFrames> flow_frames = buildFlows();
  const auto odd = buildOddFrames();

  rte_rcu_qsbr* qsbr = dp::createQsbr(kWorkers);
  auto flows = std::make_unique<dp::FlowTable>("san_ft", 65536, qsbr, int(rte_socket_id()));
  dp::Dataplane dpl;
  dpl.flows = flows.get();
  dpl.punt = nullptr;

  ctl::Config cfg = baseConfig();
  ctl::ApplianceRegistry reg;
  ctl::ApplianceLifecycle life;
  // Every address gets its id up front (as if all had been configured once).
  for (size_t i = 0; i < kAppliances; ++i) reg.idFor(applianceAddr(i).v4HostOrder());
  uint64_t generation = 0;
  Control pub(dpl, qsbr);
  g_now.store(1'000'000'000'000ULL, std::memory_order_relaxed);  // 1000 s
  pub.publish(ctl::buildSnapshot(cfg, reg, {}, ++generation));

  Worker workers[kWorkers];
  for (unsigned k = 0; k < kWorkers; ++k) {
    Worker& w = workers[k];
    w.reader_id = k;
    w.lcore = lcores[k];
    w.pool = dp::createMbufPool("san_pool" + std::to_string(k), kPoolSize, 2048);
    w.dp = &dpl;
    w.qsbr = qsbr;
    w.flows = &flow_frames;
    w.odd = &odd;
    w.state->id = uint16_t(k);
    w.rng = 0x2545F4914F6CDD1DULL * (k + 1);
    if (rte_eal_remote_launch(workerMain, &w, w.lcore) != 0) {
      std::fprintf(stderr, "cannot launch worker %u on lcore %u\n", k, w.lcore);
      return 1;
    }
  }
  g_workers = workers;
  g_go.store(true, std::memory_order_release);

  ControlStats st;
  const uint64_t t_start = realNs();
  try {
    runControl(dpl, *flows, qsbr, pub, cfg, reg, life, generation, seconds, st);
  } catch (const std::exception& e) {
    // Stop the workers before anything they use goes away.
    CHECK_THAT(false, "control thread: %s", e.what());
  }
  g_stop.store(true, std::memory_order_relaxed);
  for (Worker& w : workers) {
    CHECK_THAT(rte_eal_wait_lcore(w.lcore) == 0, "worker on lcore %u failed", w.lcore);
    while (!w.done.load(std::memory_order_acquire)) rte_pause();
  }
  const double wall = double(realNs() - t_start) / 1e9;

  // ---- Results ----
  WorkerCounters sum;
  uint64_t bursts = 0, alloc_failures = 0, reflected = 0, race_bursts = 0;
  for (unsigned k = 0; k < kWorkers; ++k) {
    const WorkerCounters& c = workers[k].state->counters;
    uint64_t drops = 0;
    for (size_t i = 0; i < kNumCounters; ++i) {
      sum.v[i] += c.v[i];
      if (kCounterInfo[i].is_drop) drops += c.v[i];
    }
    uint64_t out = c.get(Counter::encapsulated) + c.get(Counter::returned) +
                   c.get(Counter::icmp_sent) + c.get(Counter::tcp_resets_sent) + c.get(Counter::punted) +
                   c.get(Counter::bypassed) + drops;
    CHECK_THAT(c.get(Counter::rx_packets) == out,
               "worker %u: rx_packets %llu != encapsulated + returned + icmp_sent + punted + "
               "drops = %llu",
               k, (unsigned long long)c.get(Counter::rx_packets), (unsigned long long)out);
    bursts += workers[k].bursts;
    alloc_failures += workers[k].alloc_failures;
    reflected += workers[k].reflected;
    race_bursts += workers[k].race_bursts;
  }
  std::printf("ran %.2f s (virtual %.0f s): %llu control iterations, %llu snapshots published, "
              "%llu bursts, %llu packets (%.0f kpps under the sanitizer)\n",
              wall, double(g_now.load() - 1'000'000'000'000ULL) / 1e9,
              (unsigned long long)st.iterations, (unsigned long long)pub.published(),
              (unsigned long long)bursts, (unsigned long long)sum.get(Counter::rx_packets),
              double(sum.get(Counter::rx_packets)) / wall / 1e3);
  std::printf("control: %llu health flips, %llu weight changes, %llu removals, %llu additions, "
              "%llu drains, %llu undrains, %llu draining toggles, %llu lifecycle changes, %llu "
              "flow counts, %llu idle flows moved by the sweep, %llu flows expired, %llu "
              "positions reclaimed\n",
              (unsigned long long)st.health_flips, (unsigned long long)st.weight_changes,
              (unsigned long long)st.removals, (unsigned long long)st.additions,
              (unsigned long long)st.drains, (unsigned long long)st.undrains,
              (unsigned long long)st.draining_toggles, (unsigned long long)st.lifecycle_changes,
              (unsigned long long)st.counts, (unsigned long long)st.swept,
              (unsigned long long)st.expired,
              (unsigned long long)st.reclaimed);
  const auto& ls = life.stats();
  std::printf("lifecycle: %llu drains started, %llu emptied, %llu timed out, %llu removals, "
              "%llu forgotten\n",
              (unsigned long long)ls.drains_started, (unsigned long long)ls.drains_emptied,
              (unsigned long long)ls.drains_timed_out, (unsigned long long)ls.removals,
              (unsigned long long)ls.forgotten);
  std::printf("workers: %llu lock-step creation bursts, %llu reflected back, %llu mbuf "
              "allocation failures; counters:\n",
              (unsigned long long)race_bursts, (unsigned long long)reflected,
              (unsigned long long)alloc_failures);
  for (size_t i = 0; i < kNumCounters; ++i)
    if (sum.v[i]) std::printf("  %-36s %llu\n", kCounterInfo[i].name, (unsigned long long)sum.v[i]);

  CHECK_THAT(sum.get(Counter::flows_rebalanced) > 0, "no flow moved");
  CHECK_THAT(sum.get(Counter::flows_rebalanced_unhealthy) > 0, "no flow moved off an unhealthy appliance");
  CHECK_THAT(sum.get(Counter::encapsulated) > 0, "nothing encapsulated");
  CHECK_THAT(sum.get(Counter::returned) > 0, "no reflected packet returned");
  CHECK_THAT(pub.published() > 20, "only %llu snapshots published",
             (unsigned long long)pub.published());
  CHECK_THAT(st.expired > 0 && st.reclaimed > 0,
             "no flow-table position expired (%llu) and reclaimed (%llu) during the run",
             (unsigned long long)st.expired, (unsigned long long)st.reclaimed);

  // Every retired snapshot freed once no worker can hold it (workers are
  // offline now, so this does not wait); only the published one is left.
  pub.retire(true);
  CHECK_THAT(pub.awaiting() == 0, "%zu retired snapshots not freed", pub.awaiting());
  CHECK_THAT(dp::Snapshot::live() == 1, "%lld snapshots alive, want 1 (the published one)",
             (long long)dp::Snapshot::live());
  delete dpl.snapshot.exchange(nullptr);
  CHECK_THAT(dp::Snapshot::live() == 0, "%lld snapshots alive after the last one was deleted",
             (long long)dp::Snapshot::live());

  // The flow table empties: everything expires, every position comes back.
  // (Entry times are 32-bit ticks read against `now` within 24.8 days: a day
  // after the run's end is past every idle timeout, which are at most 6000 s.)
  flows->expire(g_now.load() + 86'400'000'000'000ULL);
  flows->reclaim(true);
  CHECK_THAT(flows->pendingReclaim() == 0, "%zu positions not reclaimed", flows->pendingReclaim());
  CHECK_THAT(flows->count() == 0, "%u keys left in the flow table", flows->count());
  flows.reset();

  for (Worker& w : workers) {
    unsigned avail = rte_mempool_avail_count(w.pool);
    CHECK_THAT(avail == kPoolSize, "worker %u's pool: %u of %u mbufs back (leaked or freed twice)",
               w.reader_id, avail, kPoolSize);
  }
  rte_free(qsbr);
  rte_eal_cleanup();
  std::printf("%s\n", g_failures ? "FAILED" : "OK");
  return g_failures ? 1 : 0;
}

}  // namespace
}  // namespace gwlb::sanitize

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  double seconds = 4;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (a == "--read-counters") gwlb::sanitize::g_read_counters = true;
    else {
      std::fprintf(stderr, "usage: %s [--seconds S] [--read-counters]\n", argv[0]);
      return 2;
    }
  }
  try {
    return gwlb::sanitize::run(seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stress_update: %s\n", e.what());
    return 1;
  }
}
