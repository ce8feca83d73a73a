// A minimal read-only HTTP/1.1 server (GET and HEAD, one request per
// connection) for Prometheus scrapes (GET /metrics: metrics_server.h) and the
// health endpoint (GET /destinations/NAME: health_endpoint.h). Runs on the control thread's io_context. What a
// request may be and how it is answered: control/api/http_request.h. Bounds: 8 KiB
// of request head, 5 s from accept to response, 64 connections per listener
// (one more closes the connection open longest, so a flood of idle or
// dripping connections cannot lock a scraper out), and after a failed accept
// (out of file descriptors, say) a 100 ms pause instead of a spin.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>

#include "control/api/http_request.h"

namespace gwlb::ctl {

class HttpSession;

// What a listener did since start (shown as metrics).
struct HttpStats {
  uint64_t accepted = 0;
  uint64_t evicted = 0;         // closed to make room at kHttpMaxConnections
  uint64_t accept_errors = 0;   // failed accepts (each followed by a kHttpAcceptRetry pause)
  uint64_t handler_errors = 0;  // requests answered 500 because the handler threw
  size_t open = 0;              // connections open now
};

// Open connections of one listener, oldest first; shared with the sessions,
// which may outlive the server by a few handlers.
struct HttpConnections {
  std::list<std::weak_ptr<HttpSession>> open;
  HttpStats stats;
};

class HttpServer {
 public:
  // `handler` answers each GET/HEAD for a path (the query string removed); a
  // handler that throws gets 500 (counted). `name` labels the metrics
  // ("metrics", "health_endpoint"); `what` names the setting in errors.
  // Throws std::runtime_error when `listen` ("addr:port") cannot be bound.
  // Control thread.
  HttpServer(boost::asio::io_context& io, const std::string& listen, const std::string& what,
             const std::string& name, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  const std::string& name() const { return name_; }
  const HttpStats& stats() const { return conns_->stats; }

 private:
  void accept();

  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;
  bool accept_failing_ = false;  // the last accept failed (log once per run of failures)
  std::string listen_, name_;
  HttpHandler handler_;
  std::shared_ptr<HttpConnections> conns_ = std::make_shared<HttpConnections>();
};

}  // namespace gwlb::ctl
