#include "control/fleet/bird_client.h"

#include <spdlog/spdlog.h>

namespace gwlb::ctl {

using stream_protocol = boost::asio::local::stream_protocol;

BirdClient::BirdClient(boost::asio::io_context& io, std::string socket,
                       std::vector<std::string> protocols, std::chrono::milliseconds period,
                       std::chrono::milliseconds timeout)
    : io_(io), path_(std::move(socket)), period_(period), timeout_(timeout), sock_(io), tick_(io),
      deadline_(io) {
  for (auto& n : protocols) protos_.push_back({std::move(n), "unknown"});
}

void BirdClient::start() {
  if (started_) return;
  started_ = true;
  round();
}

void BirdClient::stop() {
  stopped_ = true;
  ++conn_;
  boost::system::error_code ec;
  sock_.close(ec);
  tick_.cancel();
  deadline_.cancel();
  connected_ = false;
}

void BirdClient::setAnnounce(bool announce) {
  if (announce == want_) return;
  want_ = announce;
  if (!started_ || stopped_) return;
  if (busy_) again_ = true;
  else round();
}

bool BirdClient::converged() const {
  if (!connected_) return false;
  for (const Protocol& p : protos_)
    if (want_ ? p.state != "up" : p.state != "down") return false;
  return true;
}

void BirdClient::schedule(std::chrono::milliseconds after) {
  tick_.expires_after(after);
  std::weak_ptr<BirdClient> w = weak_from_this();
  tick_.async_wait([w](const boost::system::error_code& ec) {
    auto self = w.lock();
    if (ec || !self || self->stopped_) return;
    if (!self->busy_) self->round();
  });
}

void BirdClient::round() {
  if (stopped_ || busy_) return;
  busy_ = true;
  again_ = false;
  tick_.cancel();
  if (connected_) {
    step(0, 0);
    return;
  }
  uint64_t gen = ++conn_;
  boost::system::error_code ec;
  sock_.close(ec);
  parser_.reset();
  auto self = shared_from_this();
  deadline_.expires_after(timeout_);
  deadline_.async_wait([self, gen](const boost::system::error_code& e) {
    if (e || gen != self->conn_) return;
    self->fail("no connection within " + std::to_string(self->timeout_.count()) + " ms");
  });
  sock_.async_connect(stream_protocol::endpoint(path_),
                      [self, gen](const boost::system::error_code& e) {
                        if (gen != self->conn_ || self->stopped_) return;
                        if (e) {
                          self->fail("connect: " + e.message());
                          return;
                        }
                        self->onConnected();
                      });
}

void BirdClient::onConnected() {
  // The greeting: "0001 BIRD x.y ready."
  request("", [this](const bird::Reply& r) {
    if (r.code != 1) {
      fail("unexpected greeting: " + r.text());
      return;
    }
    if (!connected_) spdlog::info("BIRD: connected to {} ({})", path_, r.text());
    connected_ = true;
    step(0, 0);
  });
}

// Protocol i, phase 0: show; phase 1: after enable/disable, show again.
void BirdClient::step(size_t i, int phase) {
  if (i >= protos_.size()) {
    finishRound();
    return;
  }
  const std::string name = protos_[i].name;
  request("show protocols " + name, [this, i, phase, name](const bird::Reply& r) {
    if (!r.ok()) {
      protos_[i].state = "missing";
      error_ = "BIRD has no protocol " + name + " (" + r.text() + ")";
      step(i + 1, 0);
      return;
    }
    std::optional<std::string> st = bird::protocolState(r, name);
    protos_[i].state = st ? *st : "missing";
    if (!st) error_ = "BIRD's reply names no protocol " + name;
    bool up = protos_[i].state == "up" || protos_[i].state == "start";
    bool down = protos_[i].state == "down";
    const char* verb = nullptr;
    if (st && phase == 0 && want_ && down) verb = "enable ";
    // stop and flush are on their way down: nothing to do.
    if (st && phase == 0 && !want_ && up) verb = "disable ";
    if (!verb) {
      step(i + 1, 0);
      return;
    }
    ++commands_;
    request(verb + name, [this, i, verb, name](const bird::Reply& rr) {
      if (!rr.ok()) error_ = std::string(verb) + name + ": " + rr.text();
      else spdlog::info("BIRD: {}{}: {}", verb, name, rr.text());
      step(i, 1);
    });
  });
}

void BirdClient::finishRound() {
  deadline_.cancel();
  busy_ = false;
  ++rounds_;
  bool missing = false;
  for (const Protocol& p : protos_) missing = missing || p.state == "missing";
  if (!missing) error_.clear();
  else ++failures_;
  if (on_round) on_round();
  if (stopped_) return;
  if (again_) round();
  else schedule(period_);
}

void BirdClient::request(const std::string& cmd, std::function<void(const bird::Reply&)> done) {
  uint64_t gen = conn_;
  auto self = shared_from_this();
  deadline_.expires_after(timeout_);
  deadline_.async_wait([self, gen, cmd](const boost::system::error_code& e) {
    if (e || gen != self->conn_) return;
    self->fail("no answer to '" + (cmd.empty() ? std::string("(greeting)") : cmd) + "' within " +
               std::to_string(self->timeout_.count()) + " ms");
  });
  if (cmd.empty()) {
    readMore(std::move(done));
    return;
  }
  out_ = cmd + "\n";
  boost::asio::async_write(sock_, boost::asio::buffer(out_),
                           [self, gen, done = std::move(done)](const boost::system::error_code& e,
                                                               size_t) mutable {
                             if (gen != self->conn_ || self->stopped_) return;
                             if (e) {
                               self->fail("write: " + e.message());
                               return;
                             }
                             self->readMore(std::move(done));
                           });
}

void BirdClient::readMore(std::function<void(const bird::Reply&)> done) {
  if (std::optional<bird::Reply> r = parser_.next()) {
    done(*r);
    return;
  }
  uint64_t gen = conn_;
  auto self = shared_from_this();
  sock_.async_read_some(boost::asio::buffer(in_),
                        [self, gen, done = std::move(done)](const boost::system::error_code& e,
                                                            size_t n) mutable {
                          if (gen != self->conn_ || self->stopped_) return;
                          if (e) {
                            self->fail(e == boost::asio::error::eof ? "BIRD closed the connection"
                                                                    : "read: " + e.message());
                            return;
                          }
                          if (!self->parser_.feed(std::string_view(self->in_.data(), n))) {
                            self->fail("bad reply: " + self->parser_.error());
                            return;
                          }
                          self->readMore(std::move(done));
                        });
}

void BirdClient::fail(const std::string& why) {
  if (connected_ || error_ != why)
    spdlog::warn("BIRD at {}: {}; retrying every {} ms", path_, why, period_.count());
  ++conn_;
  boost::system::error_code ec;
  sock_.close(ec);
  deadline_.cancel();
  connected_ = false;
  error_ = why;
  for (Protocol& p : protos_) p.state = "unknown";
  busy_ = false;
  ++rounds_;
  ++failures_;
  if (on_round) on_round();
  if (stopped_) return;
  if (again_) {
    again_ = false;
    schedule(std::chrono::milliseconds(0));  // not recursively: after this handler
  } else {
    schedule(period_);
  }
}

}  // namespace gwlb::ctl
