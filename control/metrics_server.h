// A minimal read-only HTTP/1.1 server (GET and HEAD, one request per
// connection) for Prometheus scrapes (GET /metrics) and the health endpoint
// (GET /destinations/NAME). Runs on the control thread's io_context; bounded
// request size (8 KiB) and time (5 s).
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <functional>
#include <string>

namespace gwlb::ctl {

struct HttpReply {
  int status = 200;           // 200, 404, 503, ...
  std::string content_type;
  std::string body;
};

class HttpServer {
 public:
  // `handler` answers each GET/HEAD for a path (the query string removed).
  // Throws std::runtime_error when `listen` ("addr:port") cannot be bound;
  // `what` names the setting in that error. Control thread.
  HttpServer(boost::asio::io_context& io, const std::string& listen, const std::string& what,
             std::function<HttpReply(const std::string& path)> handler);
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void accept();
  boost::asio::ip::tcp::acceptor acceptor_;
  std::function<HttpReply(const std::string&)> handler_;
};

// GET /metrics: `body` renders the exposition text on each scrape.
class MetricsServer : public HttpServer {
 public:
  MetricsServer(boost::asio::io_context& io, const std::string& listen,
                std::function<std::string()> body);
};

}  // namespace gwlb::ctl
