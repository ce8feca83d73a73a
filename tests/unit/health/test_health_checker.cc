// HealthChecker on a real io_context against a TCP listener on 127.0.0.1: an
// appliance's checks go on after the report handler (the snapshot build)
// throws, the exception itself being the control loop's to log and count;
// each report names its appliance and transition.
#include <gtest/gtest.h>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <vector>

#include "control/health/health_checker.h"

namespace gwlb::ctl {
namespace {

using boost::asio::ip::tcp;
using namespace std::chrono_literals;

// A TCP check's appliance on 127.0.0.1: accepts every connection and closes it.
class Listener {
 public:
  explicit Listener(boost::asio::io_context& io)
      : acc_(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0)) {
    accept();
  }
  uint16_t port() const { return acc_.local_endpoint().port(); }
  void close() { acc_.close(); }

 private:
  void accept() {
    acc_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
      if (ec) return;
      s.close();
      accept();
    });
  }
  tcp::acceptor acc_;
};

// One group "g" of the appliances at `addresses` (IPv4, host order), TCP
// checks to `port` every 20 ms, thresholds 2/2, no jitter; the timeout is
// long so that a loaded machine's slow connect is no failure here.
Config tcpGroup(const std::vector<uint32_t>& addresses, uint16_t port) {
  Config cfg;
  ApplianceGroupConfig g;
  g.name = "g";
  for (uint32_t a : addresses) {
    ApplianceConfig s;
    s.address = IpAddr::v4(a);
    g.appliances.push_back(s);
  }
  g.health_check.configured = true;
  g.health_check.protocol = HealthProtocol::kTcp;
  g.health_check.port = port;
  g.health_check.interval_ms = 20;
  g.health_check.timeout_ms = 5000;
  g.health_check.healthy_threshold = 2;
  g.health_check.unhealthy_threshold = 2;
  g.health_check.jitter = false;
  cfg.server_groups.push_back(g);
  return cfg;
}

TEST(HealthChecker, ChecksGoOnAfterTheChangeHandlerThrows) {
  boost::asio::io_context io;
  Listener listener(io);
  const uint16_t port = listener.port();

  int changes = 0;
  HealthChecker hc(io, [&](const HealthReport&) {
    if (++changes == 1) throw std::runtime_error("snapshot rebuild failed");
  });
  Config cfg = tcpGroup({0x7F000001u}, port);
  cfg.server_groups[0].health_check.timeout_ms = 500;
  hc.reconcile(cfg);

  int thrown = 0;
  // Runs the loop as the control loop does (an exception out of a handler is
  // caught and the loop entered again) until pred holds or 30 s pass.
  auto runUntil = [&](const std::function<bool()>& pred) {
    auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!pred() && std::chrono::steady_clock::now() < deadline) {
      io.restart();
      try {
        io.run_for(20ms);
      } catch (const std::runtime_error&) {
        ++thrown;
      }
    }
    return pred();
  };
  const HealthTracker* t = hc.tracker(0x7F000001);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(runUntil([&] { return t->state() == HealthState::kHealthy; }));
  EXPECT_EQ(thrown, 1) << "the transition to healthy ran the handler, which threw";
  // The listener goes away: only checks that still run can notice.
  listener.close();
  EXPECT_TRUE(runUntil([&] { return t->state() == HealthState::kUnhealthy; }))
      << "no check ran after the handler threw";
  EXPECT_EQ(changes, 2);
  EXPECT_EQ(thrown, 1);
}

// Two appliances on one checker: 127.0.0.1 answers, 127.0.0.2 refuses (the
// listener is on 127.0.0.1 only). Each report names which one changed and
// how, as the engine is told; none needs the checker asked back.
TEST(HealthChecker, ReportsWhichApplianceAndWhichTransition) {
  boost::asio::io_context io;
  Listener listener(io);
  std::vector<HealthReport> reports;
  HealthChecker hc(io, [&](const HealthReport& r) { reports.push_back(r); });
  Config cfg = tcpGroup({0x7F000001u, 0x7F000002u}, listener.port());
  // The new appliances come back from reconcile, initializing in provisional
  // service (a starting group), for the caller to apply with the config.
  std::vector<HealthReport> added = hc.reconcile(cfg);
  ASSERT_EQ(added.size(), 2u);
  for (const HealthReport& r : added) {
    EXPECT_EQ(r.now.state, HealthState::kInitializing);
    EXPECT_TRUE(r.now.provisional);
    EXPECT_FALSE(r.transition);
    EXPECT_FALSE(r.removed);
  }
  auto settled = [&] {
    const HealthTracker* a = hc.tracker(0x7F000001);
    const HealthTracker* b = hc.tracker(0x7F000002);
    return a->state() == HealthState::kHealthy && b->state() == HealthState::kUnhealthy;
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!settled() && std::chrono::steady_clock::now() < deadline) io.run_for(20ms);
  ASSERT_TRUE(settled());
  std::vector<HealthReport> of1, of2;
  for (const HealthReport& r : reports) (r.appliance == 0x7F000001 ? of1 : of2).push_back(r);
  ASSERT_EQ(of1.size(), 1u);
  ASSERT_TRUE(of1[0].transition);
  EXPECT_EQ(of1[0].transition->from, HealthState::kInitializing);
  EXPECT_EQ(of1[0].transition->to, HealthState::kHealthy);
  EXPECT_EQ(of1[0].now.state, HealthState::kHealthy);
  // 127.0.0.2: its first failed check ends its provisional service (no
  // transition yet), the second makes it unhealthy.
  ASSERT_EQ(of2.size(), 2u);
  EXPECT_FALSE(of2[0].transition);
  EXPECT_EQ(of2[0].now.state, HealthState::kInitializing);
  EXPECT_FALSE(of2[0].now.provisional);
  ASSERT_TRUE(of2[1].transition);
  EXPECT_EQ(of2[1].transition->to, HealthState::kUnhealthy);
  EXPECT_NE(of2[1].transition->reason.find("connect_refused"), std::string::npos) << of2[1].transition->reason;
  // Removed from the config: reported as removed by reconcile.
  cfg.server_groups[0].appliances.pop_back();
  std::vector<HealthReport> gone = hc.reconcile(cfg);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].appliance, 0x7F000002u);
  EXPECT_TRUE(gone[0].removed);
}

// The checker finds a due appliance by its slot, and a removed appliance's
// slot goes to the next one added: what the removed one had on the wheel
// must not start or hold back the newcomer's checks, and the newcomer is
// judged on its own results (127.0.0.2 refuses, 127.0.0.1 answers).
TEST(HealthChecker, AnApplianceInAFreedSlotIsCheckedOnItsOwn) {
  boost::asio::io_context io;
  Listener listener(io);
  HealthChecker hc(io, [](const HealthReport&) {});
  auto config = [&](std::vector<uint32_t> addresses) { return tcpGroup(addresses, listener.port()); };
  auto runUntil = [&](const std::function<bool()>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!pred() && std::chrono::steady_clock::now() < deadline) io.run_for(10ms);
    return pred();
  };
  auto state = [&](uint32_t a) { return hc.tracker(a) ? hc.tracker(a)->state() : HealthState::kDisabled; };
  hc.reconcile(config({0x7F000002u}));
  ASSERT_TRUE(runUntil([&] { return state(0x7F000002u) == HealthState::kUnhealthy; }));
  // Removed while its next check waits on the wheel; the newcomer takes its slot.
  hc.reconcile(config({}));
  EXPECT_EQ(hc.tracker(0x7F000002u), nullptr);
  hc.reconcile(config({0x7F000001u}));
  ASSERT_TRUE(runUntil([&] { return state(0x7F000001u) == HealthState::kHealthy; }))
      << "the appliance in the freed slot never became healthy";
  const uint64_t checks = hc.tracker(0x7F000001u)->latency().count;
  // Its checks go on, one per interval (each after the last result).
  ASSERT_TRUE(runUntil([&] { return hc.tracker(0x7F000001u)->latency().count >= checks + 3; }));
  EXPECT_EQ(state(0x7F000001u), HealthState::kHealthy);
  // And the removed one comes back with a slot of its own, judged afresh.
  hc.reconcile(config({0x7F000001u, 0x7F000002u}));
  EXPECT_EQ(state(0x7F000002u), HealthState::kInitializing);
  ASSERT_TRUE(runUntil([&] { return state(0x7F000002u) == HealthState::kUnhealthy; }));
  EXPECT_EQ(state(0x7F000001u), HealthState::kHealthy);
}

}  // namespace
}  // namespace gwlb::ctl
