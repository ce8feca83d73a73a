#include "control/daemon/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace gwlb::ctl {

SdNotifier::SdNotifier() {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path && *path && (path[0] == '/' || path[0] == '@') &&
      std::strlen(path) < sizeof(sockaddr_un::sun_path)) {
    addr_ = path;
    if (addr_[0] == '@') addr_[0] = '\0';
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  }
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  if (usec && *usec) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(usec, &end, 10);
    bool ours = !pid || !*pid || std::strtoll(pid, nullptr, 10) == getpid();
    if (end && *end == '\0' && ours) watchdog_usec_ = v;
  }
}

SdNotifier::~SdNotifier() {
  if (fd_ >= 0) close(fd_);
}

bool SdNotifier::notify(const std::string& state) {
  if (fd_ < 0) return false;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, addr_.data(), addr_.size());
  socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + addr_.size() +
                            (addr_[0] == '\0' ? 0 : 1));
  ssize_t n = sendto(fd_, state.data(), state.size(), MSG_NOSIGNAL,
                     reinterpret_cast<const sockaddr*>(&sa), len);
  return n == ssize_t(state.size());
}

bool WorkerProgress::advanced(const std::vector<uint64_t>& loops) {
  bool moved = !loops.empty();
  if (first_) {
    for (uint64_t l : loops)
      if (l == 0) moved = false;  // not started yet
  } else {
    if (loops.size() != last_.size()) moved = false;
    else
      for (size_t i = 0; i < loops.size(); ++i)
        if (loops[i] == last_[i]) moved = false;
  }
  first_ = false;
  last_ = loops;
  return moved;
}

}  // namespace gwlb::ctl
