// The forwarding check in HealthChecker (health_check.forwarding,
// docs/product-rules.md "Forwarding checks") on a real io_context: the
// configured TCP check passes against a listener on 127.0.0.1 throughout;
// the probe "comes back" when the test's sender hands its token back, as
// gwlbd's control thread does for a returned probe. Probes that return keep
// the appliance healthy; probes that do not (a black hole) make it unhealthy
// with reason forwarding_timeout within the failure window; late ones and
// ones from another appliance are counted and change nothing.
#include <gtest/gtest.h>

#include <utility>  // before Asio (Boost 1.74)
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <set>

#include "control/health/health_checker.h"

namespace gwlb::ctl {
namespace {

using boost::asio::ip::tcp;
using namespace std::chrono_literals;

constexpr uint32_t kAppliance = 0x7F000001;  // 127.0.0.1
constexpr uint32_t kOther = 0x7F000002;

struct Bench {
  boost::asio::io_context io;
  tcp::acceptor acc{io, tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0)};
  std::function<void()> accept = [this] {
    acc.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
      if (ec) return;
      s.close();
      accept();
    });
  };
  HealthChecker hc{io, [](const HealthReport&) {}};
  // What the "appliance" does with a probe: return it (after 1 ms), return
  // it as another appliance, or nothing.
  enum class Mode { kForward, kBlackhole, kWrongAppliance, kLate } mode = Mode::kForward;
  std::set<uint32_t> swallow;  // appliances that black-hole whatever the mode
  Config cfg;

  explicit Bench(bool forwarding) {
    accept();
    hc.setForwardingSender([this](uint32_t ip, uint32_t token) {
      auto t = std::make_shared<boost::asio::steady_timer>(io);
      auto back = [this, t, ip, token](uint32_t from) {
        t->async_wait([this, t, from, token](const boost::system::error_code& ec) {
          if (!ec) hc.forwardingReturned(from, token);
        });
      };
      if (swallow.count(ip)) return true;
      switch (mode) {
        case Mode::kForward: t->expires_after(1ms); back(ip); break;
        case Mode::kWrongAppliance: t->expires_after(1ms); back(kOther); break;
        case Mode::kLate: t->expires_after(150ms); back(ip); break;  // after the 100 ms timeout
        case Mode::kBlackhole: break;
      }
      return true;
    });
    ApplianceGroupConfig g;
    g.name = "g";
    ApplianceConfig s;
    s.address = IpAddr::v4(kAppliance);
    g.appliances.push_back(s);
    HealthCheckConfig& h = g.health_check;
    h.configured = true;
    h.protocol = HealthProtocol::kTcp;
    h.port = acc.local_endpoint().port();
    h.interval_ms = 20;
    h.timeout_ms = 100;
    h.healthy_threshold = 2;
    h.unhealthy_threshold = 2;
    h.jitter = false;
    h.forwarding = forwarding;
    cfg.server_groups.push_back(g);
    hc.reconcile(cfg);
  }
  const HealthTracker& tracker() { return *hc.tracker(kAppliance); }
  // Runs the loop until pred holds or 20 s pass.
  bool runUntil(const std::function<bool()>& pred) {
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!pred() && std::chrono::steady_clock::now() < deadline) {
      io.restart();
      io.run_for(10ms);
    }
    return pred();
  }
  void runFor(std::chrono::milliseconds d) {
    io.restart();
    io.run_for(d);
  }
  std::string lastReason() {
    for (auto it = tracker().history().rbegin(); it != tracker().history().rend(); ++it)
      if (!it->is_transition) return it->reason;
    return "";
  }
};

TEST(ForwardingCheck, ReturnedProbesKeepItHealthyABlackHoleTurnsItUnhealthy) {
  Bench b(true);
  ASSERT_TRUE(b.runUntil([&] { return b.tracker().state() == HealthState::kHealthy; }));
  EXPECT_GE(b.hc.forwardingCounts().returned, 2u);
  b.runFor(300ms);
  EXPECT_EQ(b.tracker().state(), HealthState::kHealthy);
  EXPECT_EQ(b.hc.forwardingCounts().timed_out, 0u);

  // The TCP check still passes; the probes stop coming back.
  b.mode = Bench::Mode::kBlackhole;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.runUntil([&] { return b.tracker().state() == HealthState::kUnhealthy; }));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(b.lastReason(), "forwarding_timeout");
  EXPECT_GE(b.hc.forwardingCounts().timed_out, 2u);
  // The window: a round in flight, then timeout x 2 + interval; generous
  // for a loaded machine, but far below "never".
  EXPECT_LT(took, 3s);

  b.mode = Bench::Mode::kForward;
  EXPECT_TRUE(b.runUntil([&] { return b.tracker().state() == HealthState::kHealthy; }));
}

TEST(ForwardingCheck, WithoutForwardingABlackHoleStaysHealthy) {
  Bench b(false);
  b.mode = Bench::Mode::kBlackhole;
  ASSERT_TRUE(b.runUntil([&] { return b.tracker().state() == HealthState::kHealthy; }));
  b.runFor(500ms);
  EXPECT_EQ(b.tracker().state(), HealthState::kHealthy);
  EXPECT_EQ(b.hc.forwardingCounts().sent, 0u) << "no probes without forwarding: true";
}

TEST(ForwardingCheck, ProbesFromAnotherApplianceOrTooLateDoNotCount) {
  Bench b(true);
  b.mode = Bench::Mode::kWrongAppliance;
  ASSERT_TRUE(b.runUntil([&] { return b.tracker().state() == HealthState::kUnhealthy; }));
  EXPECT_EQ(b.lastReason(), "forwarding_timeout");
  EXPECT_GE(b.hc.forwardingCounts().wrong_appliance, 2u);
  EXPECT_EQ(b.hc.forwardingCounts().returned, 0u);

  Bench l(true);
  l.mode = Bench::Mode::kLate;
  ASSERT_TRUE(l.runUntil([&] { return l.tracker().state() == HealthState::kUnhealthy; }));
  ASSERT_TRUE(l.runUntil([&] { return l.hc.forwardingCounts().late >= 1; }));
  EXPECT_EQ(l.lastReason(), "forwarding_timeout");
  EXPECT_EQ(l.hc.forwardingCounts().returned, 0u);
}

// Each appliance's own counts: the gateway-wide ones cannot say which
// appliance swallows the probes.
TEST(ForwardingCheck, CountsArePerAppliance) {
  Bench b(true);
  ApplianceConfig other;
  other.address = IpAddr::v4(kOther);
  b.cfg.server_groups[0].appliances.push_back(other);
  b.swallow.insert(kOther);
  b.hc.reconcile(b.cfg);
  ASSERT_TRUE(b.runUntil([&] {
    const auto* o = b.hc.forwardingCounts(kOther);
    return b.tracker().state() == HealthState::kHealthy && o && o->timed_out >= 2;
  }));
  const HealthChecker::ForwardingCounts* a = b.hc.forwardingCounts(kAppliance);
  const HealthChecker::ForwardingCounts* o = b.hc.forwardingCounts(kOther);
  ASSERT_TRUE(a && o);
  EXPECT_GE(a->sent, 2u);
  EXPECT_GE(a->returned, 2u);
  EXPECT_EQ(a->timed_out, 0u);
  EXPECT_GE(o->sent, 2u);
  EXPECT_EQ(o->returned, 0u);
  EXPECT_GE(o->timed_out, 2u);
  const auto& all = b.hc.forwardingCounts();
  EXPECT_EQ(all.sent, a->sent + o->sent);
  EXPECT_EQ(all.returned, a->returned + o->returned);
  EXPECT_EQ(all.timed_out, a->timed_out + o->timed_out);
  EXPECT_EQ(b.hc.forwardingCounts(0x7F000003), nullptr);  // not checked
}

}  // namespace
}  // namespace gwlb::ctl
