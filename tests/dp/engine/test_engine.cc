// The control core (control/engine/engine.h) under its two drivers: gwlb-replay's
// EventSchedule (every action at its exact capture time) and gwlbd's
// EngineTicker (an Asio timer every 10 ms, here on a virtual clock). One
// scenario — packets, drains, health changes that fail a region over and back
// after a failback hold, a removal with draining, an add, a weight change,
// flows expiring — runs through both, and the decisions (snapshot
// generations with what each routes, lifecycle changes, region changes) must
// be the same, one by one.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "control/engine/engine.h"
#include "control/daemon/engine_ticker.h"
#include "control/engine/scripted_events.h"
#include "dataplane/eal.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

constexpr uint64_t kMs = 1'000'000ULL;
constexpr uint64_t kS = 1'000'000'000ULL;

const char* kConfig = R"(node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:01
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: east
    failover_mode: rebalance
    connection_draining: { enabled: true, timeout: 5 }
    tcp_idle_timeout: 60
    servers:
      - { address: 10.0.1.11 }
      - { address: 10.0.1.12 }
      - { address: 10.0.1.13 }
      - { address: 10.0.1.14 }
      - { address: 10.0.1.15 }
  - name: west
    failover_mode: rebalance
    tcp_idle_timeout: 60
    servers:
      - { address: 10.0.2.11 }
      - { address: 10.0.2.12 }
      - { address: 10.0.2.13 }
health_aggregation_policies:
  - { name: regional, min_healthy_percent: 60, min_healthy_count: 2 }
health_sources:
  - { name: east-src, server_group: east, policy: regional }
  - { name: west-src, server_group: west, policy: regional }
composite_health_checks:
  - { name: east-health, sources: [east-src], destination: web }
  - { name: west-health, sources: [west-src], destination: web }
listeners:
  - { name: web, server_groups: [east, west], failback_hold: 2 }
dataplane:
  flow_table_size: 4096
)";

// Times from the start (virtual ns); packets at x.5 s stay clear of the
// once-a-second housekeeping grid, which both drivers share.
const char* kEvents = R"(
- { at: 2.3s, server: 10.0.1.11, drain: true, timeout: 5s }
- { at: 3.2s, server: 10.0.1.12, health: unhealthy }
- { at: 4.4s, server: 10.0.1.13, health: unhealthy }
- { at: 4.45s, server: 10.0.1.14, health: unhealthy }
- { at: 5.6s, server: 10.0.1.13, health: healthy }
- { at: 6.1s, server: 10.0.1.15, remove: true }
- { at: 8.2s, server: 10.0.2.14, add: west, weight: 50 }
- { at: 9.3s, server: 10.0.2.11, weight: 0 }
- { at: 12.5s, server: 10.0.1.11, undrain: true }
- { at: 13.5s, server: 10.0.1.14, health: healthy }
)";
const uint64_t kPacketTimes[] = {500 * kMs, 3700 * kMs, 6500 * kMs, 10500 * kMs};
constexpr uint64_t kEnd = 75 * kS;  // flows idle since 10.5 s expire after 60 s
constexpr unsigned kFlows = 48;

struct Decisions {
  std::vector<ctl::Decision> decisions;
  uint64_t packets_out = 0;
  WorkerCounters counters;
};

// What both drivers share: the flow table, the dataplane, one worker.
struct Rig {
  explicit Rig(const std::string& name) {
    std::vector<ctl::ConfigError> errors;
    if (!ctl::parseConfig(kConfig, cfg, errors)) ADD_FAILURE() << ctl::formatErrors(errors);
    qsbr = dp::createQsbr(1);
    flows = std::make_unique<dp::FlowTable>(name, 4096, qsbr, 0);
    d.flows = flows.get();
    ctl::EngineHooks hooks;
    hooks.decided = [this](const ctl::Decision& x) { run.decisions.push_back(x); };
    engine = std::make_unique<ctl::Engine>(cfg, *flows, d, qsbr, ctl::EngineInputs{}, hooks);
    engine->start(0);
  }
  ~Rig() { engine.reset(); }  // before the flow table and the dataplane

  // Every flow sends one packet at `now` (TCP from the router side).
  void packets(uint64_t now) {
    std::vector<rte_mbuf*> in;
    for (unsigned f = 0; f < kFlows; ++f) {
      L2 l2{net().underlay_mac, net().router_a, {}};
      const uint16_t sport = uint16_t(20000 + f * 7);
      Bytes b = ether(l2, kEthIpv4,
                      ipv4(net().client4, net().server4, 6,
                           tcp(net().client4, net().server4, sport, 443, {}, kTcpAck)));
      rte_mbuf* m = rte_pktmbuf_alloc(testPool());
      ASSERT_NE(m, nullptr);
      std::memcpy(rte_pktmbuf_append(m, uint16_t(b.size())), b.data(), b.size());
      m->port = 0;
      in.push_back(m);
    }
    dp::BurstOutput out;
    for (size_t i = 0; i < in.size(); i += 16) {
      dp::processBurst(d, worker, in.data() + i, uint16_t(std::min<size_t>(16, in.size() - i)), now,
                       out);
      run.packets_out += out.n_appliance;
      for (uint16_t k = 0; k < out.n_appliance; ++k) rte_pktmbuf_free(out.to_appliance[k]);
      for (uint16_t k = 0; k < out.n_router; ++k) rte_pktmbuf_free(out.to_router[k]);
    }
  }

  ctl::Config cfg;
  rte_rcu_qsbr* qsbr = nullptr;
  std::unique_ptr<dp::FlowTable> flows;
  dp::Dataplane d;
  dp::WorkerState worker;
  std::unique_ptr<ctl::Engine> engine;
  Decisions run;
};

std::vector<ctl::ScriptedEvent> scenario() { return ctl::parseEvents(kEvents, "scenario"); }

// gwlb-replay's driver: before each packet time, every event and engine
// action due by then, each at its own time.
Decisions replayDriver() {
  Rig rig("eq_replay");
  std::vector<ctl::ScriptedEvent> events = scenario();
  ctl::EventSchedule schedule(*rig.engine, events, 0);
  for (uint64_t t : kPacketTimes) {
    schedule.runUntil(t);
    rig.packets(t);
  }
  schedule.runUntil(kEnd);
  EXPECT_EQ(schedule.applied(), events.size());
  rig.run.counters = rig.worker.counters;
  return std::move(rig.run);
}

// gwlbd's driver: EngineTicker on an io_context; the virtual clock moves
// 10 ms per tick; events (as the control API and the health checker would
// deliver them) and packets arrive at the first tick at or after their time.
Decisions gwlbdDriver() {
  Rig rig("eq_gwlbd");
  rig.engine->setWalkBudget(1);  // as gwlbd: a slice of a flow-table walk per turn
  std::vector<ctl::ScriptedEvent> events = scenario();
  boost::asio::io_context io;
  uint64_t now = 0;
  size_t next_event = 0, next_packets = 0;
  ctl::EngineTicker ticker(io, *rig.engine, [&] { return now; }, std::chrono::microseconds(1),
                           [&] {
                             now += 10 * kMs;
                             while (next_event < events.size() && events[next_event].at_ns <= now) {
                               ctl::EventOutcome done = ctl::applyEvent(events[next_event], *rig.engine, now);
                               EXPECT_EQ(done.error, "") << "event " << next_event;
                               EXPECT_EQ(done.refused, "") << "event " << next_event;
                               ++next_event;
                             }
                             if (next_packets < std::size(kPacketTimes) &&
                                 kPacketTimes[next_packets] <= now)
                               rig.packets(now), ++next_packets;
                             if (now >= kEnd) io.stop();
                           });
  ticker.start();
  io.run();
  EXPECT_EQ(next_event, events.size());
  EXPECT_GE(ticker.ticks(), kEnd / (10 * kMs));
  return std::move(rig.run);
}

std::string show(const ctl::Decision& d) {
  char t[32];
  std::snprintf(t, sizeof t, "%.3f s ", double(d.at_ns) / 1e9);
  return t + std::string(ctl::toString(d.kind)) + ": " + d.text;
}

TEST(EngineEquivalence, ReplayAndGwlbdDriversMakeTheSameDecisions) {
  Decisions replay = replayDriver();
  Decisions gwlbd = gwlbdDriver();
  // The scenario exercises every kind of decision (the comparison below
  // would pass vacuously on an empty list).
  size_t kinds[3] = {};
  for (const ctl::Decision& d : replay.decisions) ++kinds[size_t(d.kind)];
  EXPECT_GE(kinds[size_t(ctl::Decision::Kind::kSnapshot)], 12u);
  EXPECT_GE(kinds[size_t(ctl::Decision::Kind::kLifecycle)], 3u);
  EXPECT_GE(kinds[size_t(ctl::Decision::Kind::kRegion)], 2u);
  bool hold_ended = false, forgotten = false, drain_timeout = false;
  for (const ctl::Decision& d : replay.decisions) {
    hold_ended |= d.text.find("(failback hold ended)") != std::string::npos;
    forgotten |= d.why.find("forgotten") != std::string::npos;
    drain_timeout |= d.why == "drain timeout";
  }
  EXPECT_TRUE(hold_ended) << "no failback hold ended in the scenario";
  EXPECT_TRUE(forgotten) << "the removed appliance was never forgotten";
  EXPECT_TRUE(drain_timeout) << "no drain timed out with flows left";
  EXPECT_EQ(replay.packets_out, kFlows * std::size(kPacketTimes)) << [&] {
    std::string c;
    for (size_t k = 0; k < kNumCounters; ++k)
      if (replay.counters.v[k]) c += std::string(kCounterInfo[k].name) + "=" + std::to_string(replay.counters.v[k]) + " ";
    return c;
  }();
  EXPECT_EQ(gwlbd.packets_out, replay.packets_out);

  ASSERT_EQ(replay.decisions.size(), gwlbd.decisions.size()) << [&] {
    std::string s = "replay:\n";
    for (auto& d : replay.decisions) s += "  " + show(d) + "\n";
    s += "gwlbd:\n";
    for (auto& d : gwlbd.decisions) s += "  " + show(d) + "\n";
    return s;
  }();
  for (size_t i = 0; i < replay.decisions.size(); ++i) {
    const ctl::Decision& a = replay.decisions[i];
    const ctl::Decision& b = gwlbd.decisions[i];
    EXPECT_EQ(a.kind, b.kind) << i << ": " << show(a) << " vs " << show(b);
    EXPECT_EQ(a.text, b.text) << i;
    // gwlbd applies a change at its next tick (10 ms at most later); actions
    // the engine schedules itself run at their due times in both.
    EXPECT_LE(b.at_ns - a.at_ns, 10 * kMs) << i << ": " << show(a) << " vs " << show(b);
    EXPECT_GE(b.at_ns, a.at_ns) << i;
  }
}

// The engine decides on the clock it is given, never on its own: the same
// script run twice on the replay driver gives identical decisions, times included.
TEST(EngineEquivalence, DecisionsDependOnlyOnTheInjectedClock) {
  Decisions a = replayDriver();
  Decisions b = replayDriver();
  ASSERT_EQ(a.decisions.size(), b.decisions.size());
  for (size_t i = 0; i < a.decisions.size(); ++i) {
    EXPECT_EQ(show(a.decisions[i]), show(b.decisions[i])) << i;
  }
}

}  // namespace
}  // namespace gwlb::dptest
