// The control thread's guard against exceptions escaping a completion handler:
// one that escaped io_context::run() used to end gwlbd, dataplane
// included. Every such exception is counted (metric
// gwlb_control_handler_errors_total{where}) and logged (at most one line a
// second, with how many were not logged), and the loop goes on.
// Control thread only.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <string>

namespace gwlb::ctl {

class ControlFaults {
 public:
  // Counts one fault under `where` (e.g. "http", "timer", "loop") and logs it
  // unless a line was logged less than a second ago. Never throws.
  void record(const char* where, const char* what) noexcept;
  uint64_t total() const { return total_; }
  // Count per `where`, for the metric.
  const std::map<std::string, uint64_t>& byWhere() const { return by_where_; }

 private:
  uint64_t total_ = 0;
  uint64_t unlogged_ = 0;
  std::chrono::steady_clock::time_point last_log_{};
  std::map<std::string, uint64_t> by_where_;
};

// The process's one instance (the control thread's).
ControlFaults& controlFaults();

// Calls f(); an exception from it is recorded under `where` instead of
// propagating. Returns false when f threw.
template <class F>
bool guarded(const char* where, F&& f) noexcept {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    controlFaults().record(where, e.what());
  } catch (...) {
    controlFaults().record(where, "unknown exception");
  }
  return false;
}

// Runs `io` until it is stopped or out of work. An exception that escapes a
// handler is recorded under "loop" and run() is entered again (Asio allows
// that without restart()): the handler that threw is lost, every other one
// goes on. Returns how many exceptions it caught.
uint64_t runControlLoop(boost::asio::io_context& io);

}  // namespace gwlb::ctl
