#include "control/metrics_server.h"

#include <memory>

#include "control/config.h"

namespace gwlb::ctl {

using boost::asio::ip::tcp;

namespace {

constexpr size_t kMaxRequest = 8192;

const char* reasonPhrase(int status);

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket s, const std::function<HttpReply(const std::string&)>& handler)
      : sock_(std::move(s)), timer_(sock_.get_executor()), buf_(kMaxRequest), handler_(handler) {}

  void start() {
    auto self = shared_from_this();
    timer_.expires_after(std::chrono::seconds(5));
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) {
        boost::system::error_code ignored;
        self->sock_.close(ignored);
      }
    });
    boost::asio::async_read_until(sock_, buf_, "\r\n\r\n",
                                  [self](const boost::system::error_code& ec, size_t) {
                                    self->respond(ec);
                                  });
  }

 private:
  void respond(const boost::system::error_code& ec) {
    if (ec && ec != boost::asio::error::not_found) return finish();
    std::string req(boost::asio::buffers_begin(buf_.data()), boost::asio::buffers_end(buf_.data()));
    std::string line = req.substr(0, req.find("\r\n"));
    HttpReply r{200, "text/plain; charset=utf-8", ""};
    if (ec == boost::asio::error::not_found) {
      r.status = 431, r.body = "request too large\n";
    } else if (line.rfind("GET ", 0) != 0 && line.rfind("HEAD ", 0) != 0) {
      r.status = 405, r.body = "only GET and HEAD\n";
    } else {
      std::string path = line.substr(line.find(' ') + 1);
      path = path.substr(0, path.find(' '));
      path = path.substr(0, path.find('?'));
      r = handler_(path);
    }
    out_ = "HTTP/1.1 " + std::to_string(r.status) + " " + reasonPhrase(r.status) +
           "\r\nContent-Type: " + r.content_type +
           "\r\nContent-Length: " + std::to_string(r.body.size()) +
           "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n" +
           (line.rfind("HEAD ", 0) == 0 ? std::string() : r.body);
    auto self = shared_from_this();
    boost::asio::async_write(sock_, boost::asio::buffer(out_),
                             [self](const boost::system::error_code&, size_t) { self->finish(); });
  }
  void finish() {
    boost::system::error_code ignored;
    sock_.shutdown(tcp::socket::shutdown_both, ignored);
    sock_.close(ignored);
    timer_.cancel();
  }

  tcp::socket sock_;
  boost::asio::steady_timer timer_;
  boost::asio::streambuf buf_;
  std::function<HttpReply(const std::string&)> handler_;
  std::string out_;
};

const char* reasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

}  // namespace

HttpServer::HttpServer(boost::asio::io_context& io, const std::string& listen,
                       const std::string& what,
                       std::function<HttpReply(const std::string&)> handler)
    : acceptor_(io), handler_(std::move(handler)) {
  IpAddr a;
  uint16_t port = 0;
  if (!parseListen(listen, a, port)) throw std::runtime_error(what + ": bad address " + listen);
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(a.str(), ec);
  tcp::endpoint ep(addr, port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(16, ec);
  if (ec) throw std::runtime_error(what + " " + listen + ": " + ec.message());
  accept();
}

MetricsServer::MetricsServer(boost::asio::io_context& io, const std::string& listen,
                             std::function<std::string()> body)
    : HttpServer(io, listen, "metrics.listen", [body = std::move(body)](const std::string& path) {
        if (path == "/metrics") return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", body()};
        return HttpReply{404, "text/plain; charset=utf-8", "only /metrics is served\n"};
      }) {}

void HttpServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) std::make_shared<HttpSession>(std::move(s), handler_)->start();
    accept();
  });
}

}  // namespace gwlb::ctl
