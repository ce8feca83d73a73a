// Two workers (the main lcore and a second EAL lcore), each with its own
// WorkerState and QSBR reader id, process the two directions of the same flows
// at the same time, burst by burst in lock step, so both race to create each
// flow. Both directions of every flow must get the same appliance, cookie and
// UDP source port, each flow must be counted as created exactly once, and the
// returns (each handled by the other worker) must all come back.
#include <gtest/gtest.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <sched.h>

#include <atomic>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

constexpr uint32_t kFlows = 8192;
constexpr uint16_t kBurst = 16;

// A sense-reversing spin barrier for two threads.
class Barrier {
 public:
  void wait() {
    bool sense = !sense_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == 1) {
      arrived_.store(0, std::memory_order_relaxed);
      sense_.store(sense, std::memory_order_release);
    } else {
      // Spin: a burst starts only while both workers are on a CPU, which is
      // what makes them overlap. Yield rarely, for when both share one CPU.
      for (unsigned spins = 0; sense_.load(std::memory_order_acquire) != sense; ++spins) {
        if (spins % (1u << 20) == (1u << 20) - 1) sched_yield();
        else rte_pause();
      }
    }
  }

 private:
  std::atomic<uint32_t> arrived_{0};
  std::atomic<bool> sense_{false};
};

struct Observation {
  uint32_t flow;
  uint8_t dir;  // 0 client->server, 1 server->client
  IpAddr appliance;
  uint32_t cookie;
  uint16_t sport;
};

struct WorkerJob {
  dp::Dataplane* dp = nullptr;
  rte_rcu_qsbr* qsbr = nullptr;
  unsigned reader_id = 0;
  Barrier* barrier = nullptr;
  dp::WorkerState state;
  std::vector<std::pair<Bytes, uint16_t>> frames;  // in burst order
  uint64_t now = 0;
  std::vector<Bytes> to_appliance, to_router;
  uint32_t alloc_failures = 0;
};

// Runs a job's frames burst by burst, meeting the other worker before each burst.
int runJob(void* arg) {
  auto* j = static_cast<WorkerJob*>(arg);
  const bool own_reader = rte_lcore_id() != rte_get_main_lcore();
  if (own_reader) {
    rte_rcu_qsbr_thread_register(j->qsbr, j->reader_id);
    rte_rcu_qsbr_thread_online(j->qsbr, j->reader_id);
  }
  dp::BurstOutput out;
  rte_mbuf* pkts[kBurst];
  for (size_t at = 0; at < j->frames.size(); at += kBurst) {
    uint16_t n = 0;
    for (size_t i = at; i < j->frames.size() && n < kBurst; ++i) {
      rte_mbuf* m = rte_pktmbuf_alloc(testPool());
      if (!m) {
        ++j->alloc_failures;
        continue;
      }
      const Bytes& b = j->frames[i].first;
      std::memcpy(rte_pktmbuf_append(m, uint16_t(b.size())), b.data(), b.size());
      m->port = j->frames[i].second;
      pkts[n++] = m;
    }
    j->barrier->wait();
    dp::processBurst(*j->dp, j->state, pkts, n, j->now, out);
    rte_rcu_qsbr_quiescent(j->qsbr, j->reader_id);
    for (uint16_t i = 0; i < out.n_appliance; ++i) {
      const uint8_t* p = rte_pktmbuf_mtod(out.to_appliance[i], const uint8_t*);
      j->to_appliance.emplace_back(p, p + out.to_appliance[i]->data_len);
      rte_pktmbuf_free(out.to_appliance[i]);
    }
    for (uint16_t i = 0; i < out.n_router; ++i) {
      const uint8_t* p = rte_pktmbuf_mtod(out.to_router[i], const uint8_t*);
      j->to_router.emplace_back(p, p + out.to_router[i]->data_len);
      rte_pktmbuf_free(out.to_router[i]);
    }
  }
  if (own_reader) {
    rte_rcu_qsbr_thread_offline(j->qsbr, j->reader_id);
    rte_rcu_qsbr_thread_unregister(j->qsbr, j->reader_id);
  }
  return 0;
}

// Both jobs at once: job 1 on the worker lcore, job 0 here on the main lcore.
void runBoth(WorkerJob& a, WorkerJob& b) {
  ASSERT_EQ(a.frames.size(), b.frames.size()) << "lock step needs equal burst counts";
  ASSERT_EQ(rte_eal_remote_launch(runJob, &b, workerLcore()), 0);
  runJob(&a);
  EXPECT_EQ(rte_eal_wait_lcore(workerLcore()), 0);
  EXPECT_EQ(a.alloc_failures + b.alloc_failures, 0u);
}

// Flow i: client 198.51.100.(i % 250 + 1) port 20000 + i <-> server 203.0.113.20:443.
static_assert(20000 + kFlows <= 65535);
IpAddr clientOf(uint32_t i) { return IpAddr::v4(0xC6336400u + i % 250 + 1); }
uint16_t portOf(uint32_t i) { return uint16_t(20000 + i); }

Bytes frameOf(uint32_t i, uint8_t dir) {
  const Net& n = net();
  IpAddr c = clientOf(i);
  if (dir == 0)
    return ether(n.fromA(), kEthIpv4, ipv4(c, n.server4, 6, tcp(c, n.server4, portOf(i), 443)));
  return ether(n.fromB(), kEthIpv4,
               ipv4(n.server4, c, 6, tcp(n.server4, c, 443, portOf(i), {}, kTcpSyn | kTcpAck)));
}

TEST(TwoWorkers, BothDirectionsOfEveryFlowAgreeUnderConcurrentCreation) {
  ASSERT_LT(workerLcore(), unsigned(RTE_MAX_LCORE)) << "EAL gave no second lcore";
  HarnessOptions opts;
  opts.flow_table_size = 4 * kFlows;
  Harness h(opts);
  Barrier barrier;
  WorkerJob w[2];
  for (unsigned k = 0; k < 2; ++k) {
    w[k].dp = &h.dataplane();
    w[k].qsbr = h.qsbr();
    w[k].reader_id = k;
    w[k].barrier = &barrier;
    w[k].state.id = uint16_t(k);
    w[k].now = h.now;
  }
  // Worker 0 takes client->server of even flows and server->client of odd
  // ones; worker 1 the opposite, in the same order: each burst pair races on
  // the same 16 flows from both ends.
  for (uint32_t i = 0; i < kFlows; ++i) {
    uint8_t d0 = i % 2;
    w[0].frames.emplace_back(frameOf(i, d0), d0 == 0 ? kPortA : kPortB);
    w[1].frames.emplace_back(frameOf(i, uint8_t(1 - d0)), d0 == 0 ? kPortB : kPortA);
  }
  runBoth(w[0], w[1]);

  std::map<uint32_t, Observation> first;
  std::map<uint32_t, int> seen;
  size_t outputs = 0, disagreements = 0;
  std::string examples;
  for (auto& job : w) {
    for (const Bytes& g : job.to_appliance) {
      ++outputs;
      ASSERT_EQ(g.size(), 14u + 20 + 8 + 8 + 32 + 40) << "aws Geneve around a 40-byte SYN";
      const size_t in = 14 + 20 + 8 + 8 + 32;
      uint8_t dir = get16(g, in + 20) == 443 ? 1 : 0;
      uint16_t cport = dir == 0 ? get16(g, in + 20) : get16(g, in + 22);
      uint32_t flow = uint32_t(cport - 20000);
      Observation o{flow, dir, IpAddr::v4(g.data() + 30), get32(g, 14 + 20 + 8 + 8 + 28),
                    get16(g, 34)};
      ++seen[flow];
      auto [it, inserted] = first.emplace(flow, o);
      if (inserted) continue;
      const Observation& f = it->second;
      if (f.dir == o.dir || f.appliance != o.appliance || f.cookie != o.cookie ||
          f.sport != o.sport) {
        if (++disagreements <= 5)
          examples += "\n  flow " + std::to_string(flow) + ": dir " + std::to_string(f.dir) +
                      " -> " + f.appliance.str() + " cookie " + std::to_string(f.cookie) +
                      " sport " + std::to_string(f.sport) + ", dir " + std::to_string(o.dir) +
                      " -> " + o.appliance.str() + " cookie " + std::to_string(o.cookie) +
                      " sport " + std::to_string(o.sport);
      }
    }
  }
  EXPECT_EQ(disagreements, 0u) << "flows whose two directions got different appliance, cookie "
                                  "or UDP source port (first 5):"
                               << examples;
  EXPECT_EQ(outputs, 2u * kFlows);
  EXPECT_EQ(first.size(), kFlows);
  size_t not_twice = 0;
  for (const auto& [flow, count] : seen) not_twice += count != 2;
  EXPECT_EQ(not_twice, 0u) << "flows not seen exactly once per direction";
  WorkerCounters sum = sumCounters(&w[0].state.counters, 1);
  for (size_t k = 0; k < kNumCounters; ++k) sum.v[k] += w[1].state.counters.v[k];
  EXPECT_EQ(sum.get(Counter::flows_created), kFlows) << "each flow created exactly once";
  EXPECT_EQ(sum.get(Counter::encapsulated), 2u * kFlows);
  EXPECT_EQ(h.flows().count(), kFlows);
  expectCounterInvariant(w[0].state.counters, "worker 0");
  expectCounterInvariant(w[1].state.counters, "worker 1");

  // Returns: every Geneve packet a worker produced goes back through the other
  // worker, again concurrently.
  WorkerJob r[2];
  for (unsigned k = 0; k < 2; ++k) {
    r[k].dp = &h.dataplane();
    r[k].qsbr = h.qsbr();
    r[k].reader_id = k;
    r[k].barrier = &barrier;
    r[k].state.id = uint16_t(k);
    r[k].now = h.now;
    for (const Bytes& g : w[1 - k].to_appliance) r[k].frames.emplace_back(reflect(g), kUnderlayPort);
  }
  // Lock step needs equal lengths: pad the shorter list with frames that drop.
  const Bytes junk = ether(net().fromA(), 0x88CC, pattern(46));
  while (r[0].frames.size() < r[1].frames.size()) r[0].frames.emplace_back(junk, kPortA);
  while (r[1].frames.size() < r[0].frames.size()) r[1].frames.emplace_back(junk, kPortA);
  size_t junk_count = r[0].frames.size() + r[1].frames.size() - 2u * kFlows;
  runBoth(r[0], r[1]);
  EXPECT_EQ(r[0].to_router.size() + r[1].to_router.size(), 2u * kFlows);
  EXPECT_EQ(r[0].state.counters.get(Counter::returned) + r[1].state.counters.get(Counter::returned),
            2u * kFlows);
  EXPECT_EQ(r[0].state.counters.get(Counter::drop_unsupported_ethertype) +
                r[1].state.counters.get(Counter::drop_unsupported_ethertype),
            junk_count);
  for (auto& job : r) {
    for (const Bytes& f : job.to_router) {
      // Client->server packets return toward router A, the others toward B.
      bool to_a = get16(f, 14 + 22) == 443;
      const Net& n = net();
      EXPECT_EQ(slice(f, 0, 6), to_a ? Bytes(n.router_a.b.begin(), n.router_a.b.end())
                                     : Bytes(n.router_b.b.begin(), n.router_b.b.end()));
    }
  }
  expectCounterInvariant(r[0].state.counters, "return worker 0");
  expectCounterInvariant(r[1].state.counters, "return worker 1");
}

}  // namespace
}  // namespace gwlb::dptest
