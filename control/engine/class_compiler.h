// Compiles traffic classes on a thread of its own, so that a config change
// with a large class set (up to seconds and hundreds of MiB for the largest
// legal sets) never holds the control thread: the engine asks for a compile,
// keeps serving the running snapshot (old classes included), and publishes
// the change once take() hands the table back. Requests supersede each
// other: a request made while another waits or compiles makes that one's
// result be thrown away (the latest wins), and only the latest request's
// table is ever handed back. One compile at a time; the destructor waits for
// the one running (a compile cannot be cut short) and joins the thread.
// Any thread may call request(), take(), cancel() and busy().
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/traffic_class.h"
#include "control/config/config.h"

namespace gwlb::ctl {

class ClassCompiler {
 public:
  ClassCompiler();
  ~ClassCompiler();
  ClassCompiler(const ClassCompiler&) = delete;
  ClassCompiler& operator=(const ClassCompiler&) = delete;

  // Asks for `classes` compiled (their rules taken on the compiler's thread
  // too: a copy of a large set costs milliseconds); supersedes every earlier
  // request. The compiler lets go of `classes` before take() can hand back
  // their table. Returns the request's number.
  using Classes = std::shared_ptr<const std::vector<TrafficClassConfig>>;
  uint64_t request(Classes classes);
  struct Result {
    uint64_t request = 0;
    std::vector<ClassRule> rules;  // classRules(classes)
    ClassTable table;
  };
  // The latest request's table once compiled (then no longer held), else none.
  std::optional<Result> take();
  // Forgets every request: nothing will be handed back until the next one.
  void cancel();
  // A request waits or compiles.
  bool busy() const;
  // Compiles finished since start, including those thrown away.
  uint64_t compiled() const;

 private:
  void run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t latest_ = 0;                          // the number of the last request
  struct Job {
    uint64_t request = 0;
    Classes classes;
  };
  std::optional<Job> waiting_;                   // asked for, not yet started
  bool compiling_ = false;
  std::optional<Result> done_;                   // the latest request's, compiled
  uint64_t compiled_ = 0;
  bool stop_ = false;
  std::thread thread_;                           // last: starts once the rest is built
};

}  // namespace gwlb::ctl
