// The control API client: one Unix stream connection to gwlbd, one JSON
// request line out, one reply line back (docs/control-api.md). Blocking I/O
// with poll() deadlines. Throws ClientError with a message meant for the user.
#pragma once

#include <stdexcept>
#include <string>

#include "cli/json.h"

namespace gwlb::cli {

class ClientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Reply {
  bool ok = false;
  Json result;  // when ok
  Json error;   // when !ok: {code, message, details?}
};

class ControlClient {
 public:
  // Connects lazily, on the first call().
  ControlClient(std::string socket_path, double timeout_s)
      : path_(std::move(socket_path)), timeout_s_(timeout_s) {}
  ~ControlClient();
  ControlClient(const ControlClient&) = delete;
  ControlClient& operator=(const ControlClient&) = delete;

  // Sends {"id", "method", "params"} and waits up to timeout_s for the reply
  // line. Throws ClientError on connect, I/O, timeout or a malformed reply;
  // a server-side error is a Reply with ok == false, not an exception.
  Reply call(const std::string& method, const Json& params);
  // Closes the connection; the next call() reconnects.
  void close();

 private:
  void connect();
  void sendAll(const std::string& data, double deadline);
  std::string readLine(double deadline);

  std::string path_;
  double timeout_s_;
  int fd_ = -1;
  uint64_t next_id_ = 1;
  std::string buffer_;  // bytes received after the last reply line
};

// The message for a failed connect(2) to `path` with errno `err`.
std::string connectErrorMessage(const std::string& path, int err);

}  // namespace gwlb::cli
