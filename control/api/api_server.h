// The control API transport: newline-delimited JSON over a Unix stream socket
// (docs/control-api.md). Runs on the control thread's io_context; a slow,
// stuck or hostile client costs a bounded buffer and a timer, never a stall.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// A method whose reply waits for work done elsewhere (`reload`: the file is
// read and checked on another thread). start() gets the request's params and
// a reply function; it may answer at once (a bad parameter) or keep the
// function and call it later, on the control thread. Meanwhile the
// connection stays open and reads no further request; if no reply has come
// after the returned timeout, the client gets error `timeout` with the
// returned message, and a reply that comes later is dropped. A reply
// function is called at most once and never keeps the connection alive by
// itself (a client gone meanwhile costs nothing).
using ApiReply = std::function<void(nlohmann::json reply)>;
struct ApiDeferral {
  std::chrono::milliseconds timeout{0};
  std::string on_timeout;  // the `timeout` error's message
};
struct ApiDeferredMethod {
  std::string method;
  std::function<ApiDeferral(const nlohmann::json& params, ApiReply reply)> start;
};

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
            const std::string& group, ApiHandler handler,
            std::vector<ApiDeferredMethod> deferred = {});
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
  std::shared_ptr<const std::vector<ApiDeferredMethod>> deferred_;
  std::shared_ptr<size_t> live_ = std::make_shared<size_t>(0);
  std::shared_ptr<uint64_t> requests_ = std::make_shared<uint64_t>(0);
};

}  // namespace gwlb::ctl
