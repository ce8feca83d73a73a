// A minimal read-only HTTP server for Prometheus scrapes: GET /metrics only.
// Runs on the control thread's io_context; bounded request size and time.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <functional>
#include <string>

namespace gwlb::ctl {

class MetricsServer {
 public:
  // `body` renders the exposition text on each scrape. Throws std::runtime_error
  // when `listen` ("addr:port") cannot be bound. Control thread.
  MetricsServer(boost::asio::io_context& io, const std::string& listen,
                std::function<std::string()> body);
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void accept();
  boost::asio::ip::tcp::acceptor acceptor_;
  std::function<std::string()> body_;
};

}  // namespace gwlb::ctl
