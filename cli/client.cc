#include "cli/client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

namespace gwlb::cli {

namespace {

constexpr size_t kMaxReplyBytes = size_t(256) << 20;  // a 10000-flow page is a few MiB

double nowS() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Waits for `events` on fd until `deadline`; false on timeout.
bool waitFor(int fd, short events, double deadline) {
  while (true) {
    double left = deadline - nowS();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, int(std::ceil(left * 1000.0)));
    if (rc > 0) return true;
    if (rc == 0) continue;  // re-check the clock
    if (errno != EINTR) throw ClientError(std::string("poll: ") + std::strerror(errno));
  }
}

}  // namespace

std::string connectErrorMessage(const std::string& path, int err) {
  std::string m = "cannot connect to " + path + ": " + std::strerror(err);
  if (err == ENOENT || err == ECONNREFUSED) {
    m += " \u2014 is gwlbd running? (--socket PATH)";
  } else if (err == EACCES || err == EPERM) {
    m += " \u2014 run as root or as a member of the socket's group";
  }
  return m;
}

ControlClient::~ControlClient() { close(); }

void ControlClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
}

void ControlClient::connect() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path)
    throw ClientError("cannot connect to " + path_ + ": socket path longer than " +
                      std::to_string(sizeof addr.sun_path - 1) + " bytes");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw ClientError(std::string("socket: ") + std::strerror(errno));
  // A Unix connect only blocks while the listener's backlog is full; it then
  // waits at most SO_SNDTIMEO and fails with EAGAIN.
  timeval tv{};
  tv.tv_sec = time_t(timeout_s_);
  tv.tv_usec = suseconds_t((timeout_s_ - double(tv.tv_sec)) * 1e6);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc;
  do {
    rc = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    close();
    if (err == EAGAIN || err == EINPROGRESS)
      throw ClientError("cannot connect to " + path_ + ": no answer within " +
                        secondsText(timeout_s_) + " s (--timeout SECONDS)");
    throw ClientError(connectErrorMessage(path_, err));
  }
  int flags = ::fcntl(fd_, F_GETFL);
  ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
}

void ControlClient::sendAll(const std::string& data, double deadline) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += size_t(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!waitFor(fd_, POLLOUT, deadline))
        throw ClientError("gwlbd at " + path_ + " did not take the request within " +
                          secondsText(timeout_s_) + " s (--timeout SECONDS)");
      continue;
    }
    throw ClientError("lost the connection to gwlbd at " + path_ + ": " + std::strerror(errno));
  }
}

std::string ControlClient::readLine(double deadline) {
  while (true) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (buffer_.size() > kMaxReplyBytes)
      throw ClientError("reply from gwlbd larger than " + std::to_string(kMaxReplyBytes >> 20) +
                        " MiB");
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buffer_.append(chunk, size_t(n));
      continue;
    }
    if (n == 0)
      throw ClientError("gwlbd at " + path_ + " closed the connection without replying");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!waitFor(fd_, POLLIN, deadline))
        throw ClientError("no reply from gwlbd at " + path_ + " within " +
                          secondsText(timeout_s_) + " s (--timeout SECONDS)");
      continue;
    }
    throw ClientError("lost the connection to gwlbd at " + path_ + ": " + std::strerror(errno));
  }
}

Reply ControlClient::call(const std::string& method, const Json& params) {
  if (fd_ < 0) connect();
  uint64_t id = next_id_++;
  Json req = {{"id", id}, {"method", method}};
  if (!params.empty()) req["params"] = params;
  double deadline = nowS() + timeout_s_;
  sendAll(req.dump() + "\n", deadline);
  std::string line = readLine(deadline);
  Json j = Json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw ClientError("gwlbd sent a reply that is not a JSON object: " + line.substr(0, 200));
  if (j.contains("id") && j["id"] != id)
    throw ClientError("gwlbd answered request " + j["id"].dump() + ", expected " +
                      std::to_string(id));
  Reply r;
  auto ok = j.find("ok");
  r.ok = ok != j.end() && ok->is_boolean() && ok->get<bool>();
  if (r.ok) {
    r.result = j.contains("result") ? j["result"] : Json::object();
  } else {
    r.error = j.contains("error") && j["error"].is_object() ? j["error"] : Json::object();
    if (!r.error.contains("code")) r.error["code"] = "internal";
    if (!r.error.contains("message")) r.error["message"] = "reply without an error message: " + line.substr(0, 200);
    // A server that closes after an error (too_large, busy) must not be reused.
    if (r.error["code"] == "too_large" || r.error["code"] == "busy") close();
  }
  return r;
}

}  // namespace gwlb::cli
