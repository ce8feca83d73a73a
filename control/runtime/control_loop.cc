#include "control/runtime/control_loop.h"

#include <spdlog/spdlog.h>

namespace gwlb::ctl {

void ControlFaults::record(const char* where, const char* what) noexcept {
  ++total_;
  try {
    ++by_where_[where];
    auto now = std::chrono::steady_clock::now();
    if (total_ > 1 && now - last_log_ < std::chrono::seconds(1)) {
      ++unlogged_;
      return;
    }
    last_log_ = now;
    if (unlogged_)
      spdlog::error("control thread: a {} handler threw: {} (and {} more not logged); the "
                    "control thread goes on",
                    where, what, unlogged_);
    else
      spdlog::error("control thread: a {} handler threw: {}; the control thread goes on", where,
                    what);
    unlogged_ = 0;
  } catch (...) {
    // Out of memory while counting or logging: the total above still counts it.
  }
}

ControlFaults& controlFaults() {
  static ControlFaults faults;
  return faults;
}

uint64_t runControlLoop(boost::asio::io_context& io) {
  uint64_t caught = 0;
  for (;;) {
    try {
      io.run();
      return caught;
    } catch (const std::exception& e) {
      controlFaults().record("loop", e.what());
    } catch (...) {
      controlFaults().record("loop", "unknown exception");
    }
    ++caught;
  }
}

}  // namespace gwlb::ctl
