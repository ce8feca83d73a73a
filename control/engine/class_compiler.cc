#include "control/engine/class_compiler.h"

#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {

ClassCompiler::ClassCompiler() : thread_([this] { run(); }) {}

ClassCompiler::~ClassCompiler() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    waiting_.reset();
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t ClassCompiler::request(Classes classes) {
  uint64_t n;
  {
    std::lock_guard lock(mu_);
    n = ++latest_;
    waiting_ = Job{n, std::move(classes)};
    done_.reset();
  }
  cv_.notify_all();
  return n;
}

std::optional<ClassCompiler::Result> ClassCompiler::take() {
  std::lock_guard lock(mu_);
  if (!done_ || done_->request != latest_) return std::nullopt;
  std::optional<Result> r = std::move(done_);
  done_.reset();
  return r;
}

void ClassCompiler::cancel() {
  std::lock_guard lock(mu_);
  ++latest_;  // a compile running now is thrown away when it ends
  waiting_.reset();
  done_.reset();
}

bool ClassCompiler::busy() const {
  std::lock_guard lock(mu_);
  return waiting_.has_value() || compiling_;
}

uint64_t ClassCompiler::compiled() const {
  std::lock_guard lock(mu_);
  return compiled_;
}

void ClassCompiler::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || waiting_; });
    if (stop_) return;
    Job job = std::move(*waiting_);
    waiting_.reset();
    compiling_ = true;
    lock.unlock();
    Result r{job.request, classRules(*job.classes), {}};
    job.classes.reset();  // before take() can return: the engine moves them back into its config
    r.table = ClassTable(r.rules);
    lock.lock();
    compiling_ = false;
    ++compiled_;
    if (r.request == latest_) {
      done_ = std::move(r);
    } else {
      // Superseded: freed without the lock, off the control thread.
      lock.unlock();
      r = Result{};
      lock.lock();
    }
  }
}

}  // namespace gwlb::ctl
