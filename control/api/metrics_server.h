// The Prometheus scrape listener (metrics.listen): an HttpServer that serves
// GET /metrics and nothing else. Control thread.
#pragma once

#include <functional>
#include <string>

#include "control/api/http_server.h"

namespace gwlb::ctl {

// GET /metrics: `body` renders the exposition text on each scrape. Throws
// std::runtime_error when `listen` ("addr:port") cannot be bound.
class MetricsServer : public HttpServer {
 public:
  MetricsServer(boost::asio::io_context& io, const std::string& listen,
                std::function<std::string()> body);
};

}  // namespace gwlb::ctl
