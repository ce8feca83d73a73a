// TCP and HTTP probes against in-test Asio servers on loopback.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "probe_test_util.h"

namespace gwlb::probe::test {
namespace {

ProbeSpec tcpSpec(uint16_t port, const char* addr = "127.0.0.1") {
  ProbeSpec s;
  s.protocol = Protocol::kTcp;
  s.address = ip(addr);
  s.port = port;
  s.timeout = 2000ms;
  return s;
}

ProbeSpec httpSpec(uint16_t port, const char* addr = "127.0.0.1") {
  ProbeSpec s = tcpSpec(port, addr);
  s.protocol = Protocol::kHttp;
  s.path = "/health";
  return s;
}

// Answers every request with `response`, then closes; records the last request.
struct FixedHttp {
  std::string response;
  std::shared_ptr<std::string> last_request = std::make_shared<std::string>();
  ConnHandler handler() const {
    return [resp = response, last = last_request](tcp::socket s) -> asio::awaitable<void> {
      std::string req;
      if (!co_await readRequest(s, req)) co_return;
      *last = req;
      error_code ec;
      co_await asio::async_write(s, asio::buffer(resp), asio::redirect_error(asio::use_awaitable, ec));
      s.shutdown(tcp::socket::shutdown_send, ec);
      co_await drainUntilClosed(s);
    };
  }
};

std::string response(int code, const char* reason) {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason +
         "\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi";
}

class ProbeNet : public ::testing::Test {
 protected:
  asio::io_context io;
};

// --- TCP -----------------------------------------------------------------

TEST_F(ProbeNet, TcpAcceptingIsOkAndClosesWithRst) {
  auto seen = std::make_shared<std::optional<error_code>>();
  auto got_bytes = std::make_shared<size_t>(0);
  TestServer srv(io, [seen, got_bytes](tcp::socket s) -> asio::awaitable<void> {
    char buf[256];
    error_code ec;
    for (;;) {
      size_t n = co_await s.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
      *got_bytes += n;
      if (ec) break;
    }
    *seen = ec;
  });
  ProbeResult r = runProbe(io, tcpSpec(srv.port()));
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_EQ(r.reason, "ok");
  EXPECT_GT(r.elapsed.count(), 0);
  ASSERT_TRUE(runUntil(io, [&] { return seen->has_value(); }, 3s)) << "server saw no close";
  // SO_LINGER {1,0}: the server sees a reset, not an orderly FIN (eof).
  EXPECT_EQ(**seen, asio::error::connection_reset) << (*seen)->message();
  EXPECT_EQ(*got_bytes, 0u) << "a TCP probe sends no payload";
}

TEST_F(ProbeNet, TcpClosedPortIsRefused) {
  ProbeResult r = runProbe(io, tcpSpec(closedPort(io)));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "connect_refused") << r.detail;
}

TEST_F(ProbeNet, TcpIpv6) {
  std::unique_ptr<TestServer> srv;
  try {
    srv = std::make_unique<TestServer>(io, [](tcp::socket s) -> asio::awaitable<void> {
      co_await drainUntilClosed(s);
    }, "::1");
  } catch (const boost::system::system_error& e) {
    GTEST_SKIP() << "no IPv6 loopback: " << e.what();
  }
  ProbeResult r = runProbe(io, tcpSpec(srv->port(), "::1"));
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  r = runProbe(io, tcpSpec(closedPort(io, "::1"), "::1"));
  EXPECT_EQ(r.reason, "connect_refused") << r.detail;
}

TEST_F(ProbeNet, SourceAddressIsBound) {
  // HTTP keeps the connection up until the answer, so the server can see the peer.
  auto peer = std::make_shared<std::string>();
  const std::string resp = response(200, "OK");
  TestServer srv(io, [peer, resp](tcp::socket s) -> asio::awaitable<void> {
    error_code ec;
    *peer = s.remote_endpoint(ec).address().to_string();
    std::string req;
    if (!co_await readRequest(s, req)) co_return;
    co_await asio::async_write(s, asio::buffer(resp), asio::redirect_error(asio::use_awaitable, ec));
    co_await drainUntilClosed(s);
  });
  ProbeSpec spec = httpSpec(srv.port());
  spec.source = ip("127.0.0.2");  // all of 127/8 is local on Linux
  ProbeResult r = runProbe(io, spec);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_EQ(*peer, "127.0.0.2");
}

TEST_F(ProbeNet, SourceAddressErrorsAreBindFailed) {
  ProbeSpec spec = tcpSpec(closedPort(io));
  spec.source = ip("::1");  // wrong family
  EXPECT_EQ(runProbe(io, spec).reason, "bind_failed");
  spec.source = ip("192.0.2.1");  // not local: EADDRNOTAVAIL, nothing is sent
  ProbeResult r = runProbe(io, spec);
  EXPECT_EQ(r.reason, "bind_failed") << r.detail;
}

TEST_F(ProbeNet, InvalidSpecs) {
  ProbeSpec spec = httpSpec(closedPort(io));
  spec.address = IpAddr{};
  EXPECT_EQ(runProbe(io, spec).reason, "invalid_spec");
  spec = httpSpec(closedPort(io));
  spec.path = "/a b\r\nX: y";
  EXPECT_EQ(runProbe(io, spec).reason, "invalid_spec");
  spec = httpSpec(closedPort(io));
  spec.domain = "evil\r\nX: 1";
  EXPECT_EQ(runProbe(io, spec).reason, "invalid_spec");
  spec = httpSpec(closedPort(io));
  spec.codes.clear();
  EXPECT_EQ(runProbe(io, spec).reason, "invalid_spec");
}

// Many probes in flight from one thread: every one reports once.
TEST_F(ProbeNet, ManyConcurrentProbesOneThread) {
  TestServer srv(io, [](tcp::socket s) -> asio::awaitable<void> { co_await drainUntilClosed(s); });
  FixedHttp ok{response(200, "OK")};
  TestServer http(io, ok.handler());
  const uint16_t closed = closedPort(io);
  constexpr int kEach = 300;
  int ok_count = 0, refused = 0, http_ok = 0, other = 0;
  for (int i = 0; i < kEach; ++i) {
    startProbe(io, tcpSpec(srv.port()), [&](const ProbeResult& r) { (r.ok ? ok_count : other)++; });
    startProbe(io, tcpSpec(closed), [&](const ProbeResult& r) {
      (r.reason == "connect_refused" ? refused : other)++;
    });
    startProbe(io, httpSpec(http.port()), [&](const ProbeResult& r) { (r.ok ? http_ok : other)++; });
  }
  ASSERT_TRUE(runUntil(io, [&] { return ok_count + refused + http_ok + other == 3 * kEach; }, 10s));
  EXPECT_EQ(ok_count, kEach);
  EXPECT_EQ(refused, kEach);
  EXPECT_EQ(http_ok, kEach);
  EXPECT_EQ(other, 0);
}

// --- HTTP ----------------------------------------------------------------

TEST_F(ProbeNet, Http200IsOk) {
  FixedHttp srv_def{response(200, "OK")};
  TestServer srv(io, srv_def.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_EQ(r.status, 200);
  const std::string& req = *srv_def.last_request;
  EXPECT_EQ(req.substr(0, req.find("\r\n")), "GET /health HTTP/1.1");
  EXPECT_EQ(headerValue(req, "Connection"), "close");
}

TEST_F(ProbeNet, Http503IsBadStatus) {
  FixedHttp d{response(503, "Service Unavailable")};
  TestServer srv(io, d.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "bad_status");
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.detail.find("503"), std::string::npos) << r.detail;
}

TEST_F(ProbeNet, Http302WithDefaultCodesIsOk) {
  FixedHttp d{"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"};
  TestServer srv(io, d.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_EQ(r.status, 302);
}

TEST_F(ProbeNet, Http4xxCodeSet) {
  FixedHttp d{response(404, "Not Found")};
  TestServer srv(io, d.handler());
  ProbeSpec spec = httpSpec(srv.port());
  std::string err;
  ASSERT_TRUE(parseHttpCodes({"http_4xx"}, spec.codes, err));
  ProbeResult r = runProbe(io, spec);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_EQ(r.status, 404);
  // The same answer with the default codes fails.
  r = runProbe(io, httpSpec(srv.port()));
  EXPECT_EQ(r.reason, "bad_status");
}

TEST_F(ProbeNet, HttpInterimResponseIsSkipped) {
  FixedHttp d{"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n" + response(200, "OK")};
  TestServer srv(io, d.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_EQ(r.status, 200);
}

// Answers 421 unless Host is `domain`; records every Host it saw.
struct HostCheck {
  std::string domain;
  std::shared_ptr<std::vector<std::string>> hosts = std::make_shared<std::vector<std::string>>();
  ConnHandler handler() const {
    return [domain = domain, hosts = hosts](tcp::socket s) -> asio::awaitable<void> {
      std::string req;
      if (!co_await readRequest(s, req)) co_return;
      std::string host = headerValue(req, "Host");
      hosts->push_back(host);
      std::string resp = host == domain ? response(200, "OK") : response(421, "Misdirected Request");
      error_code ec;
      co_await asio::async_write(s, asio::buffer(resp), asio::redirect_error(asio::use_awaitable, ec));
      co_await drainUntilClosed(s);
    };
  }
};

TEST_F(ProbeNet, HttpHostHeaderUsesDomain) {
  HostCheck hc{"app.example.test"};
  TestServer srv(io, hc.handler());
  ProbeSpec spec = httpSpec(srv.port());
  spec.domain = "app.example.test";
  ProbeResult r = runProbe(io, spec);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  ASSERT_EQ(hc.hosts->size(), 1u);
  EXPECT_EQ(hc.hosts->at(0), "app.example.test");
}

TEST_F(ProbeNet, HttpHostHeaderWithoutDomainIsAddressAndPort) {
  HostCheck hc{"app.example.test"};
  TestServer srv(io, hc.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "bad_status");
  EXPECT_EQ(r.status, 421);
  ASSERT_EQ(hc.hosts->size(), 1u);
  EXPECT_EQ(hc.hosts->at(0), "127.0.0.1:" + std::to_string(srv.port()));
}

TEST_F(ProbeNet, HttpIpv6HostHeaderIsBracketed) {
  HostCheck hc{"none"};
  std::unique_ptr<TestServer> srv;
  try {
    srv = std::make_unique<TestServer>(io, hc.handler(), "::1");
  } catch (const boost::system::system_error& e) {
    GTEST_SKIP() << "no IPv6 loopback: " << e.what();
  }
  ProbeResult r = runProbe(io, httpSpec(srv->port(), "::1"));
  EXPECT_EQ(r.status, 421) << r.reason << ": " << r.detail;
  ASSERT_EQ(hc.hosts->size(), 1u);
  EXPECT_EQ(hc.hosts->at(0), "[::1]:" + std::to_string(srv->port()));
}

TEST_F(ProbeNet, HttpGarbageIsMalformed) {
  FixedHttp d{"garbage\r\n\r\n"};
  TestServer srv(io, d.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_EQ(r.reason, "malformed_response") << r.detail;
  EXPECT_LT(r.elapsed, 1500ms) << "garbage should fail at once, not by timeout";
}

TEST_F(ProbeNet, HttpCloseWithoutResponseIsMalformed) {
  FixedHttp d{""};
  TestServer srv(io, d.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_EQ(r.reason, "malformed_response") << r.detail;
}

TEST_F(ProbeNet, HttpTruncatedStatusLineIsMalformed) {
  FixedHttp d{"HTTP/1.1 20"};
  TestServer srv(io, d.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_EQ(r.reason, "malformed_response") << r.detail;
}

// Issue 14 item 14: the verdict is the status line; a real 200 whose headers
// are far over 8 KiB (cookies, CSP, ...) is healthy, and a 503 with the same
// headers is bad_status, both without reading the headers to their end.
TEST_F(ProbeNet, HttpLargeHeadersAreJudgedOnTheStatusLine) {
  for (int code : {200, 503}) {
    auto sent = std::make_shared<size_t>(0);
    TestServer srv(io, [sent, code](tcp::socket s) -> asio::awaitable<void> {
      std::string req;
      if (!co_await readRequest(s, req)) co_return;
      std::string head = "HTTP/1.1 " + std::to_string(code) + " X\r\n";
      while (head.size() < 64 * 1024) head += "Set-Cookie: c=" + std::string(200, 'a') + "\r\n";
      head += "Content-Length: 0\r\n\r\n";
      error_code ec;
      *sent = co_await asio::async_write(s, asio::buffer(head),
                                         asio::redirect_error(asio::use_awaitable, ec));
      co_await drainUntilClosed(s);
    });
    ProbeResult r = runProbe(io, httpSpec(srv.port()));
    EXPECT_EQ(r.status, code) << r.reason << ": " << r.detail;
    EXPECT_EQ(r.ok, code == 200) << r.reason << ": " << r.detail;
    EXPECT_EQ(r.reason, code == 200 ? "ok" : "bad_status");
    EXPECT_LT(r.elapsed, 1500ms);
  }
}

// Interim heads are skipped whatever their size up to 64 KiB in all; beyond
// that the probe fails (response_too_large) at once instead of reading on.
TEST_F(ProbeNet, HttpEndlessInterimHeadsAreBounded) {
  TestServer srv(io, [](tcp::socket s) -> asio::awaitable<void> {
    std::string req;
    if (!co_await readRequest(s, req)) co_return;
    std::string chunk = "HTTP/1.1 103 Early Hints\r\n";
    while (chunk.size() < 128 * 1024) chunk += "Link: </" + std::string(100, 'a') + ".css>\r\n";
    error_code ec;
    co_await asio::async_write(s, asio::buffer(chunk), asio::redirect_error(asio::use_awaitable, ec));
    co_await drainUntilClosed(s);
  });
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "response_too_large") << r.detail;
  EXPECT_LT(r.elapsed, 1500ms);
}

TEST_F(ProbeNet, HttpLargeInterimHeadThenOk) {
  std::string hints = "HTTP/1.1 103 Early Hints\r\n";
  while (hints.size() < 20 * 1024) hints += "Link: </" + std::string(100, 'b') + ".js>\r\n";
  hints += "\r\n";
  FixedHttp d{"HTTP/1.1 100 Continue\r\n\r\n" + hints + response(204, "No Content")};
  TestServer srv(io, d.handler());
  ProbeResult r = runProbe(io, httpSpec(srv.port()));
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_EQ(r.status, 204);
}

TEST_F(ProbeNet, HttpSlowDripTimesOut) {
  TestServer srv(io, [](tcp::socket s) -> asio::awaitable<void> {
    std::string req;
    if (!co_await readRequest(s, req)) co_return;
    const std::string resp = response(200, "OK");
    for (char c : resp) {
      error_code ec;
      co_await asio::async_write(s, asio::buffer(&c, 1), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      co_await sleepFor(300ms);
    }
  });
  ProbeSpec spec = httpSpec(srv.port());
  spec.timeout = 1000ms;
  ProbeResult r = runProbe(io, spec);
  EXPECT_EQ(r.reason, "response_timeout") << r.detail;
  EXPECT_GE(r.elapsed, 900ms);
  EXPECT_LE(r.elapsed, 3000ms);
}

TEST_F(ProbeNet, HttpSilentServerTimesOut) {
  TestServer srv(io, [](tcp::socket s) -> asio::awaitable<void> { co_await drainUntilClosed(s); });
  ProbeSpec spec = httpSpec(srv.port());
  spec.timeout = 800ms;
  ProbeResult r = runProbe(io, spec);
  EXPECT_EQ(r.reason, "response_timeout") << r.detail;
  EXPECT_GE(r.elapsed, 700ms);
}

TEST_F(ProbeNet, HttpClosedPortIsRefused) {
  EXPECT_EQ(runProbe(io, httpSpec(closedPort(io))).reason, "connect_refused");
}

// --- gwlb-probe, the one-probe command ------------------------------------

struct CmdResult {
  int exit_code = -1;
  std::string out;
};

CmdResult runCommand(const std::string& cmd) {
  CmdResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 512> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = ::pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(ProbeCommand, ExitCodesAndJson) {
  const char* bin = std::getenv("GWLB_PROBE_BIN");
  if (!bin) GTEST_SKIP() << "GWLB_PROBE_BIN not set (run through meson test)";
  asio::io_context io;
  FixedHttp d{response(200, "OK")};
  TestServer srv(io, d.handler());
  const uint16_t closed = closedPort(io);
  auto guard = asio::make_work_guard(io);
  std::thread t([&] { io.run(); });
  const std::string b = bin;
  CmdResult ok = runCommand(b + " --protocol http --address 127.0.0.1 --port " +
                            std::to_string(srv.port()) + " --path /x --timeout 3000");
  CmdResult refused = runCommand(b + " --protocol tcp --address 127.0.0.1 --port " +
                                 std::to_string(closed) + " --timeout 3000");
  CmdResult usage = runCommand(b + " --protocol smtp --address 127.0.0.1 2>/dev/null");
  guard.reset();
  io.stop();
  t.join();
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"ok\":true"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("\"status\":200"), std::string::npos) << ok.out;
  EXPECT_EQ(std::count(ok.out.begin(), ok.out.end(), '\n'), 1) << "one JSON line";
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.out.find("\"reason\":\"connect_refused\""), std::string::npos) << refused.out;
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_TRUE(usage.out.empty());
}

}  // namespace
}  // namespace gwlb::probe::test
