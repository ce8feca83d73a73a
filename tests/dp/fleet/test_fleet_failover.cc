// Two gateways of a fleet hold copies of the same flows (as flow sync leaves
// them); an appliance fails and comes back. Only one gateway carries the
// flows' packets while it is failed, so only its workers move them, and its
// "changed" records are lost (a congested or cut sync link: nothing here
// installs them). Each gateway's engine runs its own control core on its own
// health view, as gwlbd's does. When the appliance is back, the other gateway
// must still send every flow where the first one moved it: with fleet sync
// configured, its control sweep moves its own copies off the failed appliance
// as the first gateway's workers did (docs/fleet.md "Flows through sync
// faults"); without it (a single gateway) the copies wait for a packet.
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include <map>
#include <string>
#include <vector>

#include "control/engine/engine.h"
#include "control/engine/scripted_events.h"
#include "dataplane/eal.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

constexpr uint64_t kMs = 1'000'000ULL;
constexpr uint64_t kS = 1'000'000'000ULL;
constexpr unsigned kFlows = 60;

const char* kBase = R"(node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:01
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: east
    failover_mode: rebalance
    tcp_idle_timeout: 60
    servers:
      - { address: 10.0.1.11 }
      - { address: 10.0.1.12 }
      - { address: 10.0.1.13 }
listeners:
  - { name: web, server_groups: [east] }
dataplane:
  flow_table_size: 4096
)";
const char* kFleet = R"(fleet:
  node_name: NAME
  secret: 00112233445566778899aabbccddeeff
  sync_listen: "127.0.0.1:7946"
  peers: ["127.0.0.2:7946"]
)";

// One gateway: its flow table, one worker, its engine on a virtual clock.
struct Gateway {
  Gateway(const std::string& name, bool fleet) {
    std::string text = kBase;
    if (fleet) {
      std::string f = kFleet;
      f.replace(f.find("NAME"), 4, name);
      text += f;
    }
    std::vector<ctl::ConfigError> errors;
    if (!ctl::parseConfig(text, cfg, errors)) ADD_FAILURE() << ctl::formatErrors(errors);
    qsbr = dp::createQsbr(1);
    flows = std::make_unique<dp::FlowTable>(name, 4096, qsbr, 0);
    d.flows = flows.get();
    engine = std::make_unique<ctl::Engine>(cfg, *flows, d, qsbr);
    engine->start(0);
  }
  ~Gateway() { engine.reset(); }  // before the flow table and the dataplane

  // Every flow sends one mid-connection TCP segment (ACK) at `now`; returns
  // each flow's appliance as the Geneve packet names it.
  std::vector<uint32_t> packets(uint64_t now) {
    std::vector<uint32_t> seen(kFlows, 0);
    for (unsigned f = 0; f < kFlows; ++f) {
      L2 l2{net().underlay_mac, net().router_a, {}};
      Bytes b = ether(l2, kEthIpv4,
                      ipv4(net().client4, net().server4, 6,
                           tcp(net().client4, net().server4, uint16_t(21000 + f * 3), 443, {}, kTcpAck)));
      rte_mbuf* m = rte_pktmbuf_alloc(testPool());
      EXPECT_NE(m, nullptr);
      if (!m) return seen;
      std::memcpy(rte_pktmbuf_append(m, uint16_t(b.size())), b.data(), b.size());
      m->port = 0;
      dp::BurstOutput out;
      dp::processBurst(d, worker, &m, 1, now, out);
      EXPECT_EQ(out.n_appliance, 1u) << "flow " << f;
      for (uint16_t k = 0; k < out.n_appliance; ++k) {
        const uint8_t* p = rte_pktmbuf_mtod(out.to_appliance[k], const uint8_t*);
        // Ethernet (14) + outer IPv4: its destination is the appliance.
        seen[f] = uint32_t(p[30]) << 24 | uint32_t(p[31]) << 16 | uint32_t(p[32]) << 8 | p[33];
        rte_pktmbuf_free(out.to_appliance[k]);
      }
      for (uint16_t k = 0; k < out.n_router; ++k) rte_pktmbuf_free(out.to_router[k]);
      rte_rcu_qsbr_quiescent(qsbr, 0);
    }
    return seen;
  }

  ctl::Config cfg;
  rte_rcu_qsbr* qsbr = nullptr;
  std::unique_ptr<dp::FlowTable> flows;
  dp::Dataplane d;
  dp::WorkerState worker;
  std::unique_ptr<ctl::Engine> engine;
};

// The most common appliance of `v` (the one the test fails, so it holds flows).
uint32_t busiest(const std::vector<uint32_t>& v) {
  std::map<uint32_t, int> n;
  for (uint32_t a : v) ++n[a];
  uint32_t best = 0;
  int most = -1;
  for (auto [a, c] : n)
    if (c > most) best = a, most = c;
  return best;
}

std::string dotted(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string(a >> 16 & 255) + "." + std::to_string(a >> 8 & 255) +
         "." + std::to_string(a & 255);
}

struct Outcome {
  std::vector<uint32_t> before, carrier, other;  // first packets; A after the failure; B after the recovery
  uint32_t failed = 0;
};

// A carries the flows while `failed` is down; B only holds copies. Both see
// the same health (each probes the appliance itself).
Outcome run(bool fleet) {
  Gateway a("gw-a", fleet), b("gw-b", fleet);
  Outcome o;
  o.before = a.packets(500 * kMs);
  std::vector<uint32_t> b_first = b.packets(500 * kMs);  // B's copies: where A put them (same Maglev)
  EXPECT_EQ(b_first, o.before);
  o.failed = busiest(o.before);
  const std::string ip = dotted(o.failed);
  std::vector<ctl::ScriptedEvent> down = ctl::parseEvents(
      "- { at: 1.2s, server: " + ip + ", health: unhealthy }\n- { at: 6.2s, server: " + ip + ", health: healthy }\n",
      "failover");
  ctl::EventSchedule sa(*a.engine, down, 0), sb(*b.engine, down, 0);
  sa.runUntil(2500 * kMs);
  sb.runUntil(2500 * kMs);
  o.carrier = a.packets(2500 * kMs);  // A's workers move the failed appliance's flows
  sa.runUntil(8500 * kMs);            // the appliance is back at 6.2 s
  sb.runUntil(8500 * kMs);
  o.other = b.packets(8500 * kMs);    // ECMP now sends the flows to B
  return o;
}

TEST(FleetFailover, AGatewayThatCarriedNoneOfAFailedAppliancesFlowsSendsThemWhereTheCarrierMovedThem) {
  Outcome o = run(true);
  int moved = 0;
  for (unsigned f = 0; f < kFlows; ++f) {
    SCOPED_TRACE("flow " + std::to_string(f));
    EXPECT_NE(o.carrier[f], o.failed) << "the carrier moved it off the failed appliance";
    if (o.before[f] == o.failed) ++moved;
    EXPECT_EQ(o.other[f], o.carrier[f]) << "gw-b sends it where gw-a moved it, not back to " << dotted(o.failed);
  }
  EXPECT_GT(moved, 0);
}

// The rule is a fleet's: a single gateway keeps the lazy move (a flow that
// sends nothing while its appliance is failed stays there when it recovers).
TEST(FleetFailover, WithoutFleetSyncIdleCopiesWaitForTheirNextPacket) {
  Outcome o = run(false);
  int stayed = 0;
  for (unsigned f = 0; f < kFlows; ++f)
    if (o.before[f] == o.failed) {
      EXPECT_EQ(o.other[f], o.failed) << "flow " << f;
      ++stayed;
    }
  EXPECT_GT(stayed, 0);
}

}  // namespace
}  // namespace gwlb::dptest
