// systemd's service notification protocol (sd_notify(3)), written out: one
// datagram of "KEY=VALUE" lines to the Unix socket named by $NOTIFY_SOCKET
// ('@' at its start = Linux abstract namespace). gwlbd sends READY=1 once
// its ports are up and its first snapshot is published, STATUS= lines,
// RELOADING=1 / READY=1 around a reload, STOPPING=1, and WATCHDOG=1 from
// the control loop only while every worker makes progress (docs/deploy.md
// "systemd"). Without $NOTIFY_SOCKET every call does nothing.
// Control thread only; never throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gwlb::ctl {

class SdNotifier {
 public:
  // Reads $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (the watchdog is
  // ours only when WATCHDOG_PID is unset or is our pid, as sd_watchdog_enabled).
  SdNotifier();
  ~SdNotifier();
  SdNotifier(const SdNotifier&) = delete;
  SdNotifier& operator=(const SdNotifier&) = delete;

  bool enabled() const { return fd_ >= 0; }
  // 0 when systemd runs no watchdog for us.
  uint64_t watchdogUsec() const { return watchdog_usec_; }
  // Sends `state` (lines "KEY=VALUE\n"); false when disabled or the send failed.
  bool notify(const std::string& state);

 private:
  int fd_ = -1;
  std::string addr_;  // sockaddr_un path (abstract: leading NUL)
  uint64_t watchdog_usec_ = 0;
};

// The watchdog's judgement: true when every worker's loop counter moved
// since the previous call (the first call compares with nothing: true when
// there is at least one worker). A worker stuck in a loop iteration, dead
// or starved of its core makes it false until it moves again.
class WorkerProgress {
 public:
  bool advanced(const std::vector<uint64_t>& loops);

 private:
  std::vector<uint64_t> last_;
  bool first_ = true;
};

}  // namespace gwlb::ctl
