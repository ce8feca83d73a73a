#include "control/api/http_server.h"

#include <spdlog/spdlog.h>

#include "control/config/config.h"
#include "control/runtime/control_loop.h"

namespace gwlb::ctl {

using boost::asio::ip::tcp;

// One connection: read the request head (bounded in size and time), answer it,
// drain what the client still sends for a moment, close. Every wait is bounded
// by one timer: the request deadline, then the linger time.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket s, const HttpHandler& handler, std::shared_ptr<HttpConnections> conns)
      : sock_(std::move(s)), timer_(sock_.get_executor()), handler_(handler),
        conns_(std::move(conns)) {}
  ~HttpSession() {
    if (listed_) {
      conns_->open.erase(slot_);
      --conns_->stats.open;
    }
  }

  void start() {
    conns_->open.push_back(weak_from_this());
    slot_ = std::prev(conns_->open.end());
    listed_ = true;
    ++conns_->stats.open;
    auto self = shared_from_this();
    timer_.expires_after(kHttpRequestDeadline);
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->close();
    });
    read();
  }

  // Ends the connection at once (deadline, eviction, error). Idempotent.
  void close() {
    boost::system::error_code ignored;
    sock_.close(ignored);
    timer_.cancel();
    if (listed_) {
      conns_->open.erase(slot_);
      --conns_->stats.open;
      listed_ = false;
    }
  }

 private:
  void read() {
    auto self = shared_from_this();
    sock_.async_read_some(boost::asio::buffer(chunk_),
                          [self](const boost::system::error_code& ec, size_t n) {
                            guarded("http", [&] { self->onRead(ec, n); });
                          });
  }

  void onRead(const boost::system::error_code& ec, size_t n) {
    if (ec == boost::asio::error::operation_aborted || !sock_.is_open()) return;
    if (ec && ec != boost::asio::error::eof) return close();
    size_t before = req_.size();
    req_.append(chunk_, std::min(n, kHttpMaxRequest + 1 - req_.size()));
    size_t end = httpHeadEnd(req_, before);
    if (end != std::string::npos) return respond(std::string_view(req_).substr(0, end), false);
    if (req_.size() > kHttpMaxRequest) return respond(req_, true);
    if (ec == boost::asio::error::eof) {
      if (req_.empty()) return close();
      return respond(req_, false);  // the client said all it will: answer that
    }
    read();
  }

  void respond(std::string_view head, bool too_large) {
    std::string error;
    out_ = httpRespond(head, too_large, handler_, &error);
    if (!error.empty()) {
      ++conns_->stats.handler_errors;
      controlFaults().record("http", error.c_str());
    }
    auto self = shared_from_this();
    boost::asio::async_write(sock_, boost::asio::buffer(out_),
                             [self](const boost::system::error_code& ec, size_t) {
                               guarded("http", [&] { self->linger(ec); });
                             });
  }

  // The response is out: stop sending, and read (and drop) what the client
  // may still send, so that closing with unread bytes does not reset the
  // connection before the client has read the response.
  void linger(const boost::system::error_code& ec) {
    out_.clear();
    if (ec || !sock_.is_open()) return close();
    boost::system::error_code ignored;
    sock_.shutdown(tcp::socket::shutdown_send, ignored);
    auto self = shared_from_this();
    timer_.expires_after(kHttpLinger);
    timer_.async_wait([self](const boost::system::error_code& tec) {
      if (!tec) self->close();
    });
    drain();
  }

  void drain() {
    auto self = shared_from_this();
    sock_.async_read_some(boost::asio::buffer(chunk_),
                          [self](const boost::system::error_code& ec, size_t) {
                            if (ec) return self->close();
                            self->drain();
                          });
  }

  tcp::socket sock_;
  boost::asio::steady_timer timer_;
  HttpHandler handler_;
  std::shared_ptr<HttpConnections> conns_;
  std::list<std::weak_ptr<HttpSession>>::iterator slot_;
  bool listed_ = false;
  std::string req_;
  std::string out_;
  char chunk_[2048];
};

HttpServer::HttpServer(boost::asio::io_context& io, const std::string& listen,
                       const std::string& what, const std::string& name, HttpHandler handler)
    : acceptor_(io), accept_retry_(io), listen_(listen), name_(name),
      handler_(std::move(handler)) {
  IpAddr a;
  uint16_t port = 0;
  if (!parseListen(listen, a, port)) throw std::runtime_error(what + ": bad address " + listen);
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(a.str(), ec);
  tcp::endpoint ep(addr, port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error(what + " " + listen + ": " + ec.message());
  accept();
}

HttpServer::~HttpServer() {
  boost::system::error_code ec;
  acceptor_.close(ec);
  accept_retry_.cancel();
  // Open connections end with the listener.
  while (!conns_->open.empty()) {
    if (auto s = conns_->open.front().lock()) s->close();
    else conns_->open.pop_front();
  }
}

void HttpServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (ec) {
      // Out of descriptors, say: the pending connection stays queued, so an
      // immediate retry would spin. Wait a little and say so once.
      ++conns_->stats.accept_errors;
      if (!accept_failing_)
        spdlog::warn("{} {}: accept failed ({}); retrying every {} ms", name_, listen_,
                     ec.message(), kHttpAcceptRetry.count());
      accept_failing_ = true;
      accept_retry_.expires_after(kHttpAcceptRetry);
      accept_retry_.async_wait([this](const boost::system::error_code& tec) {
        if (!tec) accept();
      });
      return;
    }
    if (accept_failing_) spdlog::info("{} {}: accepting again", name_, listen_);
    accept_failing_ = false;
    guarded("http", [&] {
      ++conns_->stats.accepted;
      // At the cap, the connection open longest makes room: a client that
      // sends its request at once (any real one) is answered before it could
      // become the oldest.
      while (conns_->open.size() >= kHttpMaxConnections) {
        auto oldest = conns_->open.front().lock();
        if (!oldest) {
          conns_->open.pop_front();
          continue;
        }
        ++conns_->stats.evicted;
        oldest->close();
      }
      std::make_shared<HttpSession>(std::move(s), handler_, conns_)->start();
    });
    accept();
  });
}

}  // namespace gwlb::ctl
