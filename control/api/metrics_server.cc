#include "control/api/metrics_server.h"

#include <utility>

namespace gwlb::ctl {

MetricsServer::MetricsServer(boost::asio::io_context& io, const std::string& listen,
                             std::function<std::string()> body)
    : HttpServer(io, listen, "metrics.listen", "metrics",
                 [body = std::move(body)](const std::string& path) {
                   if (path == "/metrics")
                     return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", body()};
                   return HttpReply{404, "text/plain; charset=utf-8", "only /metrics is served\n"};
                 }) {}

}  // namespace gwlb::ctl
