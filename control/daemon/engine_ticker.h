// gwlbd's driver of the control core on Asio: a steady timer that, every
// `period`, runs `each` (gwlbd: punted ARP/ND) and then Engine::advance with
// the clock's time. While the engine walks the flow table in slices
// (Engine::walking), the next turn comes at once instead: every other
// handler of the io_context runs between two slices, and a walk takes as
// many turns as it has slices, not as many periods. Changes (control API, probes, ARP) call the engine
// directly on the same io_context, so every engine call is on one thread.
// The equivalence test (tests/dp/engine/test_engine.cc) runs this same class on a
// virtual clock beside gwlb-replay's EventSchedule.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>

#include "control/runtime/control_loop.h"
#include "control/engine/engine.h"

namespace gwlb::ctl {

class EngineTicker {
 public:
  EngineTicker(boost::asio::io_context& io, Engine& engine, std::function<uint64_t()> clock,
               std::chrono::nanoseconds period, std::function<void()> each = {})
      : timer_(io), engine_(engine), clock_(std::move(clock)), period_(period),
        each_(std::move(each)) {}

  void start() { arm(); }
  void stop() { timer_.cancel(); }
  uint64_t ticks() const { return ticks_; }

 private:
  void arm() {
    timer_.expires_after(engine_.walking() ? std::chrono::nanoseconds(0) : period_);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      // A tick that threw (logged and counted) must not stop the next ones.
      guarded("timer", [&] {
        ++ticks_;
        if (each_) each_();
        engine_.advance(clock_());
      });
      arm();
    });
  }

  boost::asio::steady_timer timer_;
  Engine& engine_;
  std::function<uint64_t()> clock_;
  std::chrono::nanoseconds period_;
  std::function<void()> each_;
  uint64_t ticks_ = 0;
};

}  // namespace gwlb::ctl
