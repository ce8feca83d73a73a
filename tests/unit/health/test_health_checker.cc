// HealthChecker on a real io_context against a TCP listener on 127.0.0.1: an
// appliance's checks go on after the change handler (the snapshot rebuild)
// throws; the exception itself is the control loop's to log and count.
#include <gtest/gtest.h>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <stdexcept>

#include "control/health/health_checker.h"

namespace gwlb::ctl {
namespace {

using boost::asio::ip::tcp;
using namespace std::chrono_literals;

TEST(HealthChecker, ChecksGoOnAfterTheChangeHandlerThrows) {
  boost::asio::io_context io;
  tcp::acceptor acc(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
  const uint16_t port = acc.local_endpoint().port();
  std::function<void()> accept = [&] {
    acc.async_accept([&](const boost::system::error_code& ec, tcp::socket s) {
      if (ec) return;
      s.close();
      accept();
    });
  };
  accept();

  int changes = 0;
  HealthChecker hc(io, [&] {
    if (++changes == 1) throw std::runtime_error("snapshot rebuild failed");
  });
  Config cfg;
  ServerGroupConfig g;
  g.name = "g";
  ServerConfig s;
  s.address = IpAddr::v4(0x7F000001);
  g.servers.push_back(s);
  g.health_check.configured = true;
  g.health_check.protocol = HealthProtocol::kTcp;
  g.health_check.port = port;
  g.health_check.interval_ms = 20;
  g.health_check.timeout_ms = 500;
  g.health_check.healthy_threshold = 2;
  g.health_check.unhealthy_threshold = 2;
  g.health_check.jitter = false;
  cfg.server_groups.push_back(g);
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
  acc.close();
  EXPECT_TRUE(runUntil([&] { return t->state() == HealthState::kUnhealthy; }))
      << "no check ran after the handler threw";
  EXPECT_EQ(changes, 2);
  EXPECT_EQ(thrown, 1);
}

}  // namespace
}  // namespace gwlb::ctl
