// The workers' half of the flow state sync (docs/fleet.md "Flow state
// sync"): with Dataplane::sync set, every flow a burst creates or moves is
// queued once (its table position and new/moved), once per burst; a full
// ring is counted (sync_queue_full) and never waited for; fragment entries
// and packets of existing flows queue nothing; without the ring nothing is.
#include <gtest/gtest.h>
#include <rte_ring.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "dataplane/eal.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

Frame tcpFlow(int i) {
  const Net& n = net();
  return Frame{n.fromA(), kEthIpv4,
               ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, uint16_t(30000 + i), 443)),
               kPortA};
}

int32_t positionOf(Harness& h, int i) {
  L4Tuple t;
  t.src = net().client4;
  t.dst = net().server4;
  t.proto = 6;
  t.sport = uint16_t(30000 + i);
  t.dport = 443;
  FlowKey k = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
  return h.flows().lookup(k, flowHash(k));
}

struct Events {
  std::vector<std::pair<int32_t, dp::SyncEvent>> all;
};

Events drain(rte_ring* r) {
  Events e;
  void* obj;
  while (rte_ring_dequeue(r, &obj) == 0) e.all.push_back({dp::syncEventPos(obj), dp::syncEventKind(obj)});
  return e;
}

class SyncEvents : public ::testing::Test {
 protected:
  void make(unsigned ring_size, ctl::FailoverMode mode = ctl::FailoverMode::kNoRebalance) {
    HarnessOptions o;
    o.failover_mode = mode;
    o.sync_ring_size = ring_size;
    h_ = std::make_unique<Harness>(o);
    ring_ = h_->dataplane().sync;
  }
  void TearDown() override {
    h_.reset();
  }
  std::unique_ptr<Harness> h_;
  rte_ring* ring_ = nullptr;
};

TEST_F(SyncEvents, EveryNewFlowOnceExistingFlowsNever) {
  make(1024);
  std::vector<std::pair<Bytes, uint16_t>> burst;
  for (int i = 0; i < 20; ++i) burst.push_back({tcpFlow(i).bytes(), kPortA});
  for (int i = 0; i < 5; ++i) burst.push_back({tcpFlow(i).bytes(), kPortA});  // second packets
  auto out = h_->sendBurst(burst);
  ASSERT_EQ(out.size(), 25u);
  Events e = drain(ring_);
  ASSERT_EQ(e.all.size(), 20u) << "one event per new flow, none for a flow's later packets";
  std::set<int32_t> want;
  for (int i = 0; i < 20; ++i) want.insert(positionOf(*h_, i));
  std::set<int32_t> got;
  for (auto& [pos, kind] : e.all) {
    EXPECT_EQ(kind, dp::SyncEvent::kNew);
    got.insert(pos);
  }
  EXPECT_EQ(got, want);
  // Later packets of the same flows, in later bursts: nothing.
  for (int i = 0; i < 20; ++i) h_->send(tcpFlow(i));
  EXPECT_TRUE(drain(ring_).all.empty());
  EXPECT_EQ(h_->get(Counter::sync_queue_full), 0u);
}

TEST_F(SyncEvents, MovedFlowsAreQueuedAsMoved) {
  make(1024, ctl::FailoverMode::kRebalance);
  std::map<int, std::string> appliance;
  for (int i = 0; i < 40; ++i) {
    Result r = h_->send(tcpFlow(i));
    ASSERT_EQ(r.verdict, Verdict::kAppliance);
    appliance[i] = checkEncap(*h_, r.bytes, expectedInner(*h_, tcpFlow(i)),
                              expectedProtocol(*h_, tcpFlow(i))).appliance.str();
  }
  drain(ring_);
  IpAddr down = net().appliances[0];
  ctl::HealthMap health;
  for (const IpAddr& a : net().appliances)
    health[a.v4HostOrder()] = a == down ? HealthState::kUnhealthy : HealthState::kHealthy;
  h_->republish(health);
  std::set<int32_t> want;
  for (int i = 0; i < 40; ++i) {
    h_->send(tcpFlow(i));
    if (appliance[i] == down.str()) want.insert(positionOf(*h_, i));
  }
  ASSERT_FALSE(want.empty());
  Events e = drain(ring_);
  std::set<int32_t> got;
  for (auto& [pos, kind] : e.all) {
    EXPECT_EQ(kind, dp::SyncEvent::kMoved);
    got.insert(pos);
  }
  EXPECT_EQ(got, want) << "exactly the flows that moved, once each";
  EXPECT_EQ(e.all.size(), want.size());
  EXPECT_EQ(h_->get(Counter::flows_rebalanced), want.size());
}

TEST_F(SyncEvents, FullRingIsCountedAndTrafficGoesOn) {
  make(8);  // holds 7
  std::vector<std::pair<Bytes, uint16_t>> burst;
  for (int i = 0; i < 20; ++i) burst.push_back({tcpFlow(i).bytes(), kPortA});
  auto out = h_->sendBurst(burst);
  EXPECT_EQ(out.size(), 20u) << "every packet is still sent";
  EXPECT_EQ(h_->get(Counter::encapsulated), 20u);
  EXPECT_EQ(drain(ring_).all.size(), 7u);
  EXPECT_EQ(h_->get(Counter::sync_queue_full), 13u);
  expectCounterInvariant(h_->counters(), "full sync ring");
}

TEST(SyncEventsOff, NoRingNoEvents) {
  Harness h;
  ASSERT_EQ(h.dataplane().sync, nullptr);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(h.send(tcpFlow(i)).verdict, Verdict::kAppliance);
  EXPECT_EQ(h.get(Counter::sync_queue_full), 0u);
  EXPECT_EQ(h.get(Counter::flows_created), 10u);
}

}  // namespace
}  // namespace gwlb::dptest
