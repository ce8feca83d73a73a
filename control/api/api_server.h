// The control API transport: newline-delimited JSON over a Unix stream socket
// (docs/control-api.md). Runs on the control thread's io_context; a slow,
// stuck or hostile client costs a bounded buffer and a timer, never a stall.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace gwlb::ctl {

inline constexpr size_t kApiMaxLine = 65536;
inline constexpr int kApiMaxDepth = 32;
inline constexpr size_t kApiMaxConnections = 32;
inline constexpr std::chrono::seconds kApiIdleTimeout{10};
// After a failed accept (e.g. out of file descriptors) the next try waits this long.
inline constexpr std::chrono::milliseconds kApiAcceptRetry{100};

// Builds an error reply.
nlohmann::json apiError(const nlohmann::json& id, const std::string& code,
                        const std::string& message);

// Nesting depth of a JSON text ({ and [ outside strings); stops counting past `limit`.
int jsonDepth(const std::string& text, int limit);

// Parses one request line and returns the reply object. Never throws: a
// request that is not a JSON object with a string "method" gets bad_request.
// The handler gets only what the request says: it names no file (see
// docs/control-api.md, "Files").
using ApiHandler = std::function<nlohmann::json(const std::string& method,
                                                const nlohmann::json& params,
                                                const nlohmann::json& id)>;
nlohmann::json dispatchLine(const std::string& line, const ApiHandler& handler);

class ApiServer {
 public:
  // Binds `path` with permissions `mode` from the first instant (bound under a
  // umask that leaves exactly `mode`, never chmod'ed afterwards by path) and,
  // when `group` is not empty (a group name or number), gives it that group.
  // Creates a missing directory (0755); refuses a directory every user may
  // write that is not sticky. At `path` itself: a stale socket (nobody
  // answers) is replaced; a live one, a symlink or any other file is refused,
  // never followed, chmod'ed or removed. Throws std::runtime_error. Control thread.
  ApiServer(boost::asio::io_context& io, const std::string& path, unsigned mode,
            const std::string& group, ApiHandler handler);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  size_t connections() const { return *live_; }
  uint64_t requests() const { return *requests_; }

 private:
  void accept();

  boost::asio::io_context& io_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;
  bool accept_failing_ = false;  // the last accept failed (log once per run of failures)
  std::string path_;
  uint64_t dev_ = 0, ino_ = 0;  // the socket file we bound: the destructor unlinks only it
  ApiHandler handler_;
  std::shared_ptr<size_t> live_ = std::make_shared<size_t>(0);
  std::shared_ptr<uint64_t> requests_ = std::make_shared<uint64_t>(0);
};

}  // namespace gwlb::ctl
