// systemd's notification protocol as gwlbd speaks it (control/daemon/sd_notify.h):
// datagrams to $NOTIFY_SOCKET (a path or an abstract '@' name), the watchdog
// settings from the environment, and the "every worker made progress"
// judgement that decides whether the watchdog is fed.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "control/daemon/sd_notify.h"

namespace gwlb::ctl {
namespace {

// A datagram socket bound where the test says; recv() waits up to 10 s.
struct Receiver {
  int fd = -1;
  explicit Receiver(const std::string& name) {
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::string n = name;
    if (n[0] == '@') n[0] = '\0';
    else unlink(n.c_str());
    std::memcpy(sa.sun_path, n.data(), n.size());
    socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + n.size() + (n[0] ? 1 : 0));
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), len), 0) << std::strerror(errno);
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Receiver() { close(fd); }
  std::string recv() {
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, size_t(n)) : std::string();
  }
};

TEST(SdNotify, DisabledWithoutNotifySocket) {
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  SdNotifier n;
  EXPECT_FALSE(n.enabled());
  EXPECT_FALSE(n.notify("READY=1\n"));
  EXPECT_EQ(n.watchdogUsec(), 0u);
}

TEST(SdNotify, PathSocket) {
  std::string path = "/tmp/gwlb-sdnotify-" + std::to_string(getpid()) + ".sock";
  Receiver r(path);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  SdNotifier n;
  ASSERT_TRUE(n.enabled());
  EXPECT_TRUE(n.notify("READY=1\nSTATUS=running\n"));
  EXPECT_EQ(r.recv(), "READY=1\nSTATUS=running\n");
  unlink(path.c_str());
  unsetenv("NOTIFY_SOCKET");
}

TEST(SdNotify, AbstractSocket) {
  std::string name = "@gwlb-sdnotify-test-" + std::to_string(getpid());
  Receiver r(name);
  setenv("NOTIFY_SOCKET", name.c_str(), 1);
  SdNotifier n;
  ASSERT_TRUE(n.enabled());
  EXPECT_TRUE(n.notify("WATCHDOG=1\n"));
  EXPECT_EQ(r.recv(), "WATCHDOG=1\n");
  unsetenv("NOTIFY_SOCKET");
}

TEST(SdNotify, WatchdogOnlyForUs) {
  setenv("WATCHDOG_USEC", "4000000", 1);
  unsetenv("WATCHDOG_PID");
  EXPECT_EQ(SdNotifier().watchdogUsec(), 4000000u);
  setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
  EXPECT_EQ(SdNotifier().watchdogUsec(), 4000000u);
  setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);  // another process's
  EXPECT_EQ(SdNotifier().watchdogUsec(), 0u);
  setenv("WATCHDOG_USEC", "soon", 1);
  unsetenv("WATCHDOG_PID");
  EXPECT_EQ(SdNotifier().watchdogUsec(), 0u);
  unsetenv("WATCHDOG_USEC");
}

TEST(WorkerProgress, FedOnlyWhileEveryWorkerMoves) {
  WorkerProgress p;
  EXPECT_FALSE(p.advanced({0, 5}));   // worker 0 has not looped yet
  EXPECT_TRUE(p.advanced({3, 9}));
  EXPECT_TRUE(p.advanced({100, 200}));
  EXPECT_FALSE(p.advanced({150, 200}));  // worker 1 stalled
  EXPECT_FALSE(p.advanced({170, 200}));  // still stalled
  EXPECT_TRUE(p.advanced({180, 201}));   // moves again
  EXPECT_FALSE(p.advanced({180, 202}));  // worker 0 stalled
  EXPECT_FALSE(p.advanced({}));          // no worker: nothing makes progress
  WorkerProgress first;
  EXPECT_TRUE(first.advanced({1, 1}));
}

}  // namespace
}  // namespace gwlb::ctl
