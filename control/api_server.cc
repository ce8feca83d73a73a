#include "control/api_server.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <filesystem>

namespace gwlb::ctl {

using boost::asio::local::stream_protocol;
using nlohmann::json;

json apiError(const json& id, const std::string& code, const std::string& message) {
  json r = {{"ok", false}, {"error", {{"code", code}, {"message", message}}}};
  if (!id.is_null()) r["id"] = id;
  return r;
}

int jsonDepth(const std::string& text, int limit) {
  int depth = 0, max = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > max) max = depth;
      if (max > limit) return max;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max;
}

json dispatchLine(const std::string& line, const ApiHandler& handler) {
  if (jsonDepth(line, kApiMaxDepth) > kApiMaxDepth)
    return apiError(nullptr, "bad_request",
                    "JSON nested deeper than " + std::to_string(kApiMaxDepth) + " levels");
  json req = json::parse(line, nullptr, false);
  if (req.is_discarded()) return apiError(nullptr, "bad_request", "request is not valid JSON");
  if (!req.is_object()) return apiError(nullptr, "bad_request", "request must be a JSON object");
  json id = req.contains("id") ? req["id"] : json();
  for (auto& [k, v] : req.items())
    if (k != "id" && k != "method" && k != "params")
      return apiError(id, "bad_request", "unknown request key '" + k + "' (id, method, params)");
  if (!req.contains("method") || !req["method"].is_string())
    return apiError(id, "bad_request", "\"method\" must be a string");
  json params = req.contains("params") ? req["params"] : json::object();
  if (!params.is_object()) return apiError(id, "bad_request", "\"params\" must be an object");
  try {
    json r = handler(req["method"].get<std::string>(), params, id);
    if (!id.is_null()) r["id"] = id;
    return r;
  } catch (const std::exception& e) {
    return apiError(id, "internal", e.what());
  }
}

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(stream_protocol::socket s, const ApiHandler& h, std::shared_ptr<size_t> live,
          std::shared_ptr<uint64_t> requests)
      : sock_(std::move(s)),
        timer_(sock_.get_executor()),
        buf_(kApiMaxLine + 1),
        handler_(h),
        live_(std::move(live)),
        requests_(std::move(requests)) {
    ++*live_;
  }
  ~Session() { --*live_; }

  void start() {
    armTimer();
    read();
  }

  // Sends one reply and closes (used for `busy`).
  void refuse(const json& reply) {
    closing_ = true;
    send(reply.dump() + "\n");
  }

 private:
  void armTimer() {
    timer_.expires_after(kApiIdleTimeout);
    auto self = shared_from_this();
    timer_.async_wait([self](const boost::system::error_code& ec) {
      if (ec) return;
      boost::system::error_code ignored;
      self->sock_.close(ignored);  // idle, stuck reader or slow drip
    });
  }

  void read() {
    auto self = shared_from_this();
    boost::asio::async_read_until(
        sock_, buf_, '\n', [self](const boost::system::error_code& ec, size_t n) {
          if (ec == boost::asio::error::not_found) {
            self->refuse(apiError(nullptr, "too_large",
                                  "request line longer than " + std::to_string(kApiMaxLine) +
                                      " bytes"));
            return;
          }
          if (ec) {
            self->timer_.cancel();
            return;
          }
          std::string line(boost::asio::buffers_begin(self->buf_.data()),
                           boost::asio::buffers_begin(self->buf_.data()) + std::ptrdiff_t(n));
          self->buf_.consume(n);
          while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
          if (!line.empty()) {
            ++*self->requests_;
            self->send(dispatchLine(line, self->handler_).dump() + "\n");
          }
          self->armTimer();
          self->read();
        });
  }

  void send(std::string s) {
    out_.push_back(std::move(s));
    if (out_.size() == 1) write();
  }

  void write() {
    auto self = shared_from_this();
    boost::asio::async_write(sock_, boost::asio::buffer(out_.front()),
                             [self](const boost::system::error_code& ec, size_t) {
                               if (ec) {
                                 self->timer_.cancel();
                                 return;
                               }
                               self->out_.pop_front();
                               if (!self->out_.empty()) {
                                 self->write();
                               } else if (self->closing_) {
                                 boost::system::error_code ignored;
                                 self->sock_.shutdown(stream_protocol::socket::shutdown_both,
                                                      ignored);
                                 self->sock_.close(ignored);
                                 self->timer_.cancel();
                               }
                             });
  }

  stream_protocol::socket sock_;
  boost::asio::steady_timer timer_;
  boost::asio::streambuf buf_;
  ApiHandler handler_;
  std::deque<std::string> out_;
  bool closing_ = false;
  std::shared_ptr<size_t> live_;
  std::shared_ptr<uint64_t> requests_;
};

// True when something accepts connections on `path`.
bool socketAnswers(boost::asio::io_context& io, const std::string& path) {
  stream_protocol::socket probe(io);
  boost::system::error_code ec;
  probe.connect(stream_protocol::endpoint(path), ec);
  return !ec;
}

}  // namespace

ApiServer::ApiServer(boost::asio::io_context& io, const std::string& path, unsigned mode,
                     ApiHandler handler)
    : io_(io), acceptor_(io), path_(path), handler_(std::move(handler)) {
  namespace fs = std::filesystem;
  std::error_code fec;
  fs::create_directories(fs::path(path).parent_path(), fec);
  if (fs::exists(path, fec)) {
    if (socketAnswers(io, path))
      throw std::runtime_error("control socket " + path + " is in use by a running gwlbd");
    fs::remove(path, fec);
  }
  boost::system::error_code ec;
  acceptor_.open(stream_protocol(), ec);
  if (!ec) acceptor_.bind(stream_protocol::endpoint(path), ec);
  if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("control socket " + path + ": " + ec.message());
  if (::chmod(path.c_str(), mode_t(mode)) != 0)
    throw std::runtime_error("control socket " + path + ": chmod failed");
  accept();
}

ApiServer::~ApiServer() {
  boost::system::error_code ec;
  acceptor_.close(ec);
  ::unlink(path_.c_str());
}

void ApiServer::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, stream_protocol::socket s) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      bool busy = *live_ >= kApiMaxConnections;
      auto session = std::make_shared<Session>(std::move(s), handler_, live_, requests_);
      if (busy) {
        session->refuse(apiError(nullptr, "busy",
                                 "too many control connections (" +
                                     std::to_string(kApiMaxConnections) + ")"));
      } else {
        session->start();
      }
    }
    accept();
  });
}

}  // namespace gwlb::ctl
