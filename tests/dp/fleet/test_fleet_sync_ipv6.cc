// Flow sync over IPv6: two real FleetSync nodes whose sync_listen and peers
// are IPv6 loopback addresses, in front of appliances on an IPv6 underlay
// (and one IPv4 appliance beside them). A flow the first node's worker sends
// to an IPv6 appliance reaches the second node by warm start (TCP) and by
// records (UDP), named by the appliance's IPv6 address, and the second
// node's worker then sends it to that same appliance. A record naming an
// IPv6 address this node does not have is refused as unknown.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/flow_cookie.h"
#include "control/fleet/fleet_sync.h"
#include "dataplane/worker.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

const IpAddr kUs6 = ip("2001:db8:f::1");
const IpAddr kApp6a = ip("2001:db8:f::11"), kApp6b = ip("2001:db8:f::12");

// An IPv6 loopback port free for TCP and UDP right now.
uint16_t freePort6() {
  for (;;) {
    int t = ::socket(AF_INET6, SOCK_STREAM, 0);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    ::bind(t, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(t, reinterpret_cast<sockaddr*>(&a), &len);
    int u = ::socket(AF_INET6, SOCK_DGRAM, 0);
    bool both = ::bind(u, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(u);
    ::close(t);
    if (both) return ntohs(a.sin6_port);
  }
}

class FleetSyncIpv6 : public ::testing::Test {
 protected:
  static HarnessOptions opts() {
    HarnessOptions o;
    o.appliances = {kApp6a, kApp6b, net().appliances[0]};
    o.underlay_ipv6 = kUs6;
    o.sync_ring_size = 1024;
    return o;
  }
  void SetUp() override {
    a_ = std::make_unique<Harness>(opts());
    b_ = std::make_unique<Harness>(opts());
    const uint16_t pa = freePort6(), pb = freePort6();
    listen_a_ = "[::1]:" + std::to_string(pa);
    listen_b_ = "[::1]:" + std::to_string(pb);
  }
  void TearDown() override {
    fa_.reset();
    fb_.reset();
    a_.reset();
    b_.reset();
  }
  std::unique_ptr<ctl::FleetSync> node(const char* name, const std::string& listen, const std::string& peer,
                                       Harness& h) {
    ctl::FleetSync::Options o;
    o.node_name = name;
    o.listen = listen;
    o.peers = {peer};
    o.secret = flowHashKey();
    o.warm_start_timeout_s = 2;
    o.warm_connect_timeout_ms = 500;
    o.warm_idle_timeout_ms = 1000;
    auto f = std::make_unique<ctl::FleetSync>(io_, o, h.flows(), h.dataplane().sync,
                                              [&h] { return &h.snapshot(); });
    f->start();
    return f;
  }
  Frame flow(int i) const {
    const Net& n = net();
    return Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, uint16_t(45000 + i), 443, {}, kTcpSyn)),
                 kPortA};
  }
  // The appliance a harness's worker sends flow i to: the outer IPv6
  // destination (or the IPv4 one).
  static IpAddr sentTo(Harness& h, const Frame& f) {
    h.now = dp::monotonicNs();  // the clock FleetSync's timers read (two nodes, real sockets)
    Result r = h.send(f);
    EXPECT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    if (r.bytes.size() < 54) return IpAddr{};
    if (get16(r.bytes, 12) == kEthIpv6) return IpAddr::v6(r.bytes.data() + 38);
    return IpAddr::v4(r.bytes.data() + 30);
  }
  uint64_t peerCount(ctl::FleetSync& f, const char* field) {
    return f.status()["peers"][0].value(field, uint64_t(0));
  }
  void runUntil(const std::function<bool()>& done, std::chrono::seconds wall) {
    auto end = Clock::now() + wall;
    while (!done() && Clock::now() < end) io_.run_for(20ms);
  }

  boost::asio::io_context io_;
  std::unique_ptr<Harness> a_, b_;
  std::unique_ptr<ctl::FleetSync> fa_, fb_;
  std::string listen_a_, listen_b_;
};

TEST_F(FleetSyncIpv6, FlowsOnIpv6AppliancesReachAPeerByWarmStartAndByRecords) {
  fa_ = node("gw-a", listen_a_, listen_b_, *a_);
  // Node A's worker takes 40 flows: Maglev spreads them over the two IPv6
  // appliances and the IPv4 one.
  std::map<int, IpAddr> where;
  for (int i = 0; i < 40; ++i) where[i] = sentTo(*a_, flow(i));
  size_t on_v6 = 0;
  for (auto& [i, app] : where) on_v6 += app.isV6();
  ASSERT_GE(on_v6, 10u) << "the test needs flows on the IPv6 appliances";
  ASSERT_LT(on_v6, 40u) << "and some on the IPv4 one";
  // makeRecord names an IPv6 appliance by its address.
  for (auto& [i, app] : where) {
    L4Tuple t;
    t.src = net().client4, t.dst = net().server4, t.proto = 6, t.sport = uint16_t(45000 + i), t.dport = 443;
    FlowKey k = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
    int32_t pos = a_->flows().lookup(k, flowHash(k));
    ASSERT_GE(pos, 0);
    sync::Record r;
    ASSERT_TRUE(fa_->makeRecord(pos, k, sync::RecordKind::kRefresh, dp::monotonicNs(), r));
    if (app.isV6()) {
      EXPECT_EQ(r.appliance, 0u) << i;
      EXPECT_EQ(IpAddr::v6(r.appliance6.data()), app) << i;
    } else {
      EXPECT_EQ(IpAddr::v4(r.appliance), app) << i;
      EXPECT_FALSE(r.wide()) << i;
    }
  }
  // A's records of them go out while B is not there yet (lost), and A's own
  // warm start finds nobody.
  runUntil([&] { return fa_->warmStartDone(); }, 10s);
  io_.run_for(100ms);
  // Node B starts and asks A for its table over TCP between IPv6 addresses.
  fb_ = node("gw-b", listen_b_, listen_a_, *b_);
  runUntil([&] { return fb_->warmStartDone(); }, 10s);
  nlohmann::json st = fb_->status();
  ASSERT_EQ(st["warm_start"].value("state", std::string()), "done") << st.dump();
  EXPECT_EQ(st["warm_start"].value("flows_installed", uint64_t(0)), 40u) << st.dump();
  // B's worker sends each flow where A did, not where B's own table would
  // pick (B's table is A's: the flows prove the install by their count and
  // counters, the outer address by where they go).
  for (auto& [i, app] : where) EXPECT_EQ(sentTo(*b_, flow(i)), app) << "flow " << i;
  EXPECT_EQ(b_->get(Counter::flows_created), 0u) << "every flow came from A's table";
  // New flows on A go to B as records over UDP (kRecords6 when a batch holds
  // an IPv6 appliance's flow).
  const uint64_t before = peerCount(*fb_, "installed");
  std::map<int, IpAddr> more;
  for (int i = 40; i < 70; ++i) more[i] = sentTo(*a_, flow(i));
  runUntil([&] { return peerCount(*fb_, "installed") >= before + 30; }, 10s);
  EXPECT_EQ(peerCount(*fb_, "installed"), before + 30) << fb_->status().dump();
  EXPECT_EQ(peerCount(*fb_, "unknown_appliance"), 0u);
  EXPECT_EQ(peerCount(*fb_, "malformed"), 0u);
  for (auto& [i, app] : more) EXPECT_EQ(sentTo(*b_, flow(i)), app) << "flow " << i;
  EXPECT_EQ(b_->get(Counter::flows_created), 0u);
}

TEST_F(FleetSyncIpv6, ARecordNamingAnIpv6AddressThisNodeLacksIsAnUnknownAppliance) {
  fb_ = node("gw-b", listen_b_, listen_a_, *b_);
  L4Tuple t;
  t.src = net().client4, t.dst = net().server4, t.proto = 6, t.sport = 46000, t.dport = 443;
  sync::Record r;
  r.key = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
  r.flow_hash = flowHash(r.key);
  r.appliance6 = ip("2001:db8:f::99").b;
  r.cookie = 77;
  r.idle_for_ms = 100;
  r.age_ms = 1000;
  EXPECT_EQ(fb_->install(r, dp::monotonicNs()), ctl::InstallResult::kUnknownAppliance);
  // The same flow on a known IPv6 appliance, moved there from the other one.
  r.appliance6 = kApp6b.b;
  r.prev_appliance6 = kApp6a.b;
  r.prev_cookie = 5;
  r.moves = 1;
  EXPECT_EQ(fb_->install(r, dp::monotonicNs()), ctl::InstallResult::kInstalled);
  const Frame f{net().fromA(), kEthIpv4,
                ipv4(net().client4, net().server4, 6, tcp(net().client4, net().server4, 46000, 443, {}, kTcpAck)),
                kPortA};
  EXPECT_EQ(sentTo(*b_, f), kApp6b);
  int32_t pos = b_->flows().lookup(r.key, r.flow_hash);
  ASSERT_GE(pos, 0);
  sync::Record back;
  ASSERT_TRUE(fb_->makeRecord(pos, r.key, sync::RecordKind::kRefresh, dp::monotonicNs(), back));
  EXPECT_EQ(back.appliance6, kApp6b.b);
  EXPECT_EQ(back.prev_appliance6, kApp6a.b) << "the move's origin, by its IPv6 address";
  EXPECT_EQ(back.prev_appliance, 0u);
}

}  // namespace
}  // namespace gwlb::dptest
