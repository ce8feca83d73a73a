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

// Builds an error reply.
nlohmann::json apiError(const nlohmann::json& id, const std::string& code,
                        const std::string& message);

// Nesting depth of a JSON text ({ and [ outside strings); stops counting past `limit`.
int jsonDepth(const std::string& text, int limit);

// Parses one request line and returns the reply object. Never throws: a
// request that is not a JSON object with a string "method" gets bad_request.
using ApiHandler = std::function<nlohmann::json(const std::string& method,
                                                const nlohmann::json& params,
                                                const nlohmann::json& id)>;
nlohmann::json dispatchLine(const std::string& line, const ApiHandler& handler);

class ApiServer {
 public:
  // Binds `path` (creating its directory; replacing a stale socket; refusing
  // one that another process answers on). Throws std::runtime_error. Control thread.
  ApiServer(boost::asio::io_context& io, const std::string& path, unsigned mode,
            ApiHandler handler);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  size_t connections() const { return *live_; }
  uint64_t requests() const { return *requests_; }

 private:
  void accept();

  boost::asio::io_context& io_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::string path_;
  ApiHandler handler_;
  std::shared_ptr<size_t> live_ = std::make_shared<size_t>(0);
  std::shared_ptr<uint64_t> requests_ = std::make_shared<uint64_t>(0);
};

}  // namespace gwlb::ctl
