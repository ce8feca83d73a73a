// HealthChecker on a real io_context against a TCP listener on 127.0.0.1: an
// appliance's checks go on after the report handler (the snapshot build)
// throws, the exception itself being the control loop's to log and count;
// each report names its appliance and transition.
#include <gtest/gtest.h>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
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

// An HTTP check's appliance on 127.0.0.1 that keeps connections: answers
// each request with a framed 200 on the same connection, `delay` after it
// came. Counts the connections accepted and which of them carried requests.
class KeepAliveHttp {
 public:
  explicit KeepAliveHttp(boost::asio::io_context& io)
      : acc_(io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0)) {
    accept();
  }
  uint16_t port() const { return acc_.local_endpoint().port(); }
  int accepted = 0, requests = 0, answered = 0;
  std::set<int> carried;  // connections (by accept order) that carried a request
  std::chrono::milliseconds delay{0};

 private:
  struct Conn {
    explicit Conn(tcp::socket s, int n) : sock(std::move(s)), id(n), timer(sock.get_executor()) {}
    tcp::socket sock;
    int id;
    std::string buf;
    boost::asio::steady_timer timer;
  };
  void accept() {
    acc_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
      if (ec) return;
      serve(std::make_shared<Conn>(std::move(s), accepted++));
      accept();
    });
  }
  void serve(std::shared_ptr<Conn> c) {
    boost::asio::async_read_until(c->sock, boost::asio::dynamic_buffer(c->buf, 4096), "\r\n\r\n",
                                  [this, c](const boost::system::error_code& ec, size_t n) {
                                    if (ec) return;
                                    c->buf.erase(0, n);
                                    ++requests;
                                    carried.insert(c->id);
                                    c->timer.expires_after(delay);
                                    c->timer.async_wait([this, c](const boost::system::error_code&) { answer(c); });
                                  });
  }
  void answer(std::shared_ptr<Conn> c) {
    static const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    boost::asio::async_write(c->sock, boost::asio::buffer(kOk), [this, c](const boost::system::error_code& e, size_t) {
      if (e) return;
      ++answered;
      serve(c);
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

// tcpGroup's one appliance, 127.0.0.1, with HTTP checks and keep_alive.
Config keepAliveGroup(uint16_t port) {
  Config cfg = tcpGroup({0x7F000001u}, port);
  cfg.server_groups[0].health_check.protocol = HealthProtocol::kHttp;
  cfg.server_groups[0].health_check.keep_alive = true;
  return cfg;
}

// health_check.keep_alive: after the first probe, each probe connects afresh
// and asks on the one kept connection; the appliance removed, the checker
// closes it. Without keep_alive, each request has its own connection.
TEST(HealthChecker, KeepAliveAsksOnOneKeptConnection) {
  boost::asio::io_context io;
  KeepAliveHttp http(io);
  HealthChecker hc(io, [](const HealthReport&) {});
  Config cfg = keepAliveGroup(http.port());
  hc.reconcile(cfg);
  auto probes = [&] { return hc.tracker(0x7F000001)->latency().count; };
  // Until 10 probes are done and the connection is back in the pool (not
  // taken by a probe in flight).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while ((probes() < 10 || hc.keptConnections().size() != 1) && std::chrono::steady_clock::now() < deadline)
    io.run_one_for(5ms);
  ASSERT_GE(probes(), 10u);
  EXPECT_EQ(hc.tracker(0x7F000001)->state(), HealthState::kHealthy);
  EXPECT_EQ(hc.keptConnections().size(), 1u);
  EXPECT_GE(http.requests, 10);
  EXPECT_EQ(http.carried.size(), 1u) << "every request on the one kept connection";
  EXPECT_GE(http.accepted, 10) << "every probe connects afresh";
  // The appliance's own count: every probe after the first answered on the kept one.
  ASSERT_NE(hc.connectionCounts(0x7F000001), nullptr);
  EXPECT_EQ(hc.connectionCounts(0x7F000001)->kept, probes() - 1);
  EXPECT_EQ(hc.connectionCounts(0x7F000001)->tls_full, 0u);
  // Removed: its kept connection is closed at once, and a probe still in
  // flight then does not keep its own.
  Config none = cfg;
  none.server_groups[0].appliances.clear();
  hc.reconcile(none);
  EXPECT_EQ(hc.keptConnections().size(), 0u);
  const auto settle = std::chrono::steady_clock::now() + 200ms;
  while (std::chrono::steady_clock::now() < settle) io.run_for(20ms);
  EXPECT_EQ(hc.keptConnections().size(), 0u);
  // Without keep_alive: a connection per request.
  cfg.server_groups[0].health_check.keep_alive = false;
  hc.reconcile(cfg);
  const int before = http.requests;
  const size_t carried_before = http.carried.size();
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (http.requests < before + 5 && std::chrono::steady_clock::now() < until) io.run_for(20ms);
  ASSERT_GE(http.requests, before + 5);
  EXPECT_EQ(http.carried.size() - carried_before, size_t(http.requests - before));
  EXPECT_EQ(hc.keptConnections().size(), 0u);
}

// An appliance whose checks stop (weight 0: unused) while its probe is in
// flight: its kept connection is closed at once, and the probe in flight,
// answered afterwards, does not keep its own.
TEST(HealthChecker, KeepAliveKeepsNothingOfAnApplianceNoLongerProbed) {
  boost::asio::io_context io;
  KeepAliveHttp http(io);
  HealthChecker hc(io, [](const HealthReport&) {});
  Config cfg = keepAliveGroup(http.port());
  hc.reconcile(cfg);
  auto runUntil = [&](const std::function<bool()>& pred) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!pred() && std::chrono::steady_clock::now() < deadline) io.run_one_for(5ms);
    return pred();
  };
  ASSERT_TRUE(runUntil([&] { return http.answered >= 3 && hc.keptConnections().size() == 1; }));
  http.delay = 300ms;
  const int asked = http.requests;
  ASSERT_TRUE(runUntil([&] { return http.requests > asked; })) << "no probe in flight";
  ASSERT_EQ(http.answered, asked) << "the probe in flight is answered only after the delay";
  Config unused = cfg;
  unused.server_groups[0].appliances[0].weight = 0;
  hc.reconcile(unused);
  ASSERT_EQ(hc.tracker(0x7F000001u)->state(), HealthState::kUnused);
  EXPECT_EQ(hc.keptConnections().size(), 0u);
  ASSERT_TRUE(runUntil([&] { return http.answered > asked; }));
  const auto settle = std::chrono::steady_clock::now() + 100ms;
  while (std::chrono::steady_clock::now() < settle) io.run_for(20ms);
  EXPECT_EQ(hc.keptConnections().size(), 0u) << "the probe in flight kept its connection";
  EXPECT_EQ(http.requests, asked + 1) << "no probe of an unused appliance";
}

}  // namespace
}  // namespace gwlb::ctl
