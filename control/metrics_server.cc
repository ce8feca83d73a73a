#include "control/metrics_server.h"

#include <memory>

#include "control/config.h"

namespace gwlb::ctl {

using boost::asio::ip::tcp;

namespace {

constexpr size_t kMaxRequest = 8192;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket s, const std::function<std::string()>& body)
      : sock_(std::move(s)), timer_(sock_.get_executor()), buf_(kMaxRequest), body_(body) {}

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
    std::string status = "200 OK", type = "text/plain; version=0.0.4; charset=utf-8", body;
    if (ec == boost::asio::error::not_found) {
      status = "431 Request Header Fields Too Large", body = "request too large\n";
    } else if (line.rfind("GET ", 0) != 0 && line.rfind("HEAD ", 0) != 0) {
      status = "405 Method Not Allowed", body = "only GET /metrics\n";
    } else {
      std::string path = line.substr(line.find(' ') + 1);
      path = path.substr(0, path.find(' '));
      if (path == "/metrics") body = body_();
      else status = "404 Not Found", body = "only /metrics is served\n";
    }
    out_ = "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           (line.rfind("HEAD ", 0) == 0 ? std::string() : body);
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
  std::function<std::string()> body_;
  std::string out_;
};

}  // namespace

MetricsServer::MetricsServer(boost::asio::io_context& io, const std::string& listen,
                             std::function<std::string()> body)
    : acceptor_(io), body_(std::move(body)) {
  IpAddr a;
  uint16_t port = 0;
  if (!parseListen(listen, a, port)) throw std::runtime_error("metrics.listen: bad address " + listen);
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(a.str(), ec);
  tcp::endpoint ep(addr, port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(16, ec);
  if (ec) throw std::runtime_error("metrics on " + listen + ": " + ec.message());
  accept();
}

void MetricsServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) std::make_shared<HttpSession>(std::move(s), body_)->start();
    accept();
  });
}

}  // namespace gwlb::ctl
