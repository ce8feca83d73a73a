// Shared pieces of the probe tests: an io_context harness that runs one probe
// to completion, and coroutine TCP servers on loopback (ephemeral ports).
#pragma once

#include <utility>  // before Asio (Boost 1.74 + GCC 12)
#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "probes/probe.h"

namespace gwlb::probe::test {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

inline IpAddr ip(const char* s) { return *IpAddr::parse(s); }

// A probe of `protocol` to 127.0.0.1:port.
inline ProbeSpec loopbackSpec(Protocol protocol, uint16_t port, const char* path,
                              std::chrono::milliseconds timeout) {
  ProbeSpec s;
  s.protocol = protocol;
  s.address = ip("127.0.0.1");
  s.port = port;
  s.path = path;
  s.timeout = timeout;
  return s;
}

// Runs `io` until `done()` or `limit` passes; restarts it when it ran out of work.
inline bool runUntil(asio::io_context& io, const std::function<bool()>& done,
                     std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (io.stopped()) io.restart();
    io.run_one_for(20ms);
  }
  return true;
}

// Runs one probe on `io`; fails the test unless the callback fires exactly
// once within the probe's timeout + 2 s.
// With `kept`, a keep_alive spec asks on the connections it keeps.
inline ProbeResult runProbe(asio::io_context& io, const ProbeSpec& spec,
                            asio::ssl::context* tls = nullptr,
                            const std::shared_ptr<KeptConnections>& kept = nullptr) {
  int calls = 0;
  ProbeResult res;
  const auto prepared = prepareProbe(spec);  // held, as a checker holds it
  startProbe(io, prepared, [&](const ProbeResult& r) {
    ++calls;
    res = r;
  }, tls, kept);
  EXPECT_EQ(calls, 0) << "callback ran inside startProbe()";
  bool done = runUntil(io, [&] { return calls > 0; }, spec.timeout + 2s);
  EXPECT_TRUE(done) << "no result within timeout + 2 s";
  // Let late handlers run: the callback must not fire again.
  io.poll();
  EXPECT_LE(calls, 1) << "callback ran more than once";
  EXPECT_LE(res.elapsed, spec.timeout + 2s);
  std::printf("    probe %s %s:%u -> %s (%s)%s in %lld us\n", toString(spec.protocol),
              spec.address.str().c_str(), spec.port, res.reason.c_str(), res.detail.c_str(),
              res.reused ? " on a kept connection" : "", static_cast<long long>(res.elapsed.count()));
  return res;
}

using ConnHandler = std::function<asio::awaitable<void>(tcp::socket)>;

// Accepts on address:0 and runs `handler` for every connection.
class TestServer {
 public:
  TestServer(asio::io_context& io, ConnHandler handler, const char* address = "127.0.0.1")
      : acceptor_(io), handler_(std::move(handler)) {
    tcp::endpoint ep(asio::ip::make_address(address), 0);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(io, acceptLoop(&acceptor_, handler_, alive_), asio::detached);
  }
  ~TestServer() {
    *alive_ = false;
    error_code ec;
    acceptor_.close(ec);
  }
  uint16_t port() const { return port_; }

 private:
  static asio::awaitable<void> acceptLoop(tcp::acceptor* acc, ConnHandler handler,
                                          std::shared_ptr<bool> alive) {
    for (;;) {
      error_code ec;
      tcp::socket s = co_await acc->async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !*alive) co_return;
      asio::co_spawn(acc->get_executor(), handler(std::move(s)), asio::detached);
    }
  }

  tcp::acceptor acceptor_;
  ConnHandler handler_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  uint16_t port_ = 0;
};

// A loopback port with nobody listening (bound once, then released).
inline uint16_t closedPort(asio::io_context& io, const char* address = "127.0.0.1") {
  tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address(address), 0));
  uint16_t p = a.local_endpoint().port();
  a.close();
  return p;
}

// Reads a request head (up to the blank line, at most 16 KiB) into `req`.
template <class Stream>
asio::awaitable<bool> readRequest(Stream& s, std::string& req) {
  error_code ec;
  co_await asio::async_read_until(s, asio::dynamic_buffer(req, 16384), "\r\n\r\n",
                                  asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

// The value of header `name` (case-insensitive) in a request head, or "<none>".
inline std::string headerValue(const std::string& req, const std::string& name) {
  size_t pos = req.find("\r\n");
  while (pos != std::string::npos) {
    size_t start = pos + 2, end = req.find("\r\n", start);
    if (end == std::string::npos || end == start) break;
    std::string line = req.substr(start, end - start);
    size_t colon = line.find(':');
    if (colon != std::string::npos && colon == name.size() &&
        std::equal(name.begin(), name.end(), line.begin(),
                   [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
      size_t v = line.find_first_not_of(' ', colon + 1);
      return v == std::string::npos ? "" : line.substr(v);
    }
    pos = end;
  }
  return "<none>";
}

inline asio::awaitable<void> sleepFor(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  error_code ec;
  co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// Waits until the peer closes or resets; returns the read error.
template <class Stream>
asio::awaitable<error_code> drainUntilClosed(Stream& s) {
  char buf[1024];
  error_code ec;
  while (!ec) co_await s.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
  co_return ec;
}

}  // namespace gwlb::probe::test
