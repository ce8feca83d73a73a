// keep_alive HTTP probes against an in-test keep-alive server on 127.0.0.1:
// each probe connects afresh (the proof that the appliance accepts), then asks
// on the connection kept from the target's last probe; what ends a kept
// connection (Connection: close, unframed bodies, idle, worn out, full) and
// what a kept connection must not hide (a listener gone).
#include "probe_test_util.h"

namespace gwlb::probe::test {
namespace {

// What the server saw: connections accepted, and each request's connection
// (by accept order) and its Connection header.
struct Seen {
  int connections = 0;
  int closed = 0;  // connections the server closed after answering (close_after)
  std::vector<std::pair<int, std::string>> requests;
  int requestsOn(int conn) const {
    int n = 0;
    for (auto& [c, h] : requests) n += c == conn;
    return n;
  }
};

// Answers requests on a connection for as long as the client keeps it:
// `respond(k)` is the k-th response of the whole server (from 0); with
// `close_after`, the server closes each connection after one response
// without saying so (an appliance's keep-alive timeout, a restart); with
// `one_per_connection`, it takes a connection's second request and closes
// without answering it (a restart between the probe's look and its request).
struct KeepAliveHttp {
  std::function<std::string(int)> respond = [](int) {
    return std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  };
  bool close_after = false;
  bool one_per_connection = false;
  std::shared_ptr<Seen> seen = std::make_shared<Seen>();

  ConnHandler handler() const {
    return [respond = respond, close_after = close_after, one = one_per_connection,
            seen = seen](tcp::socket s) -> asio::awaitable<void> {
      const int conn = seen->connections++;
      std::string buf;
      for (int answered = 0;; ++answered) {
        error_code ec;
        size_t n = co_await asio::async_read_until(s, asio::dynamic_buffer(buf, 16384), "\r\n\r\n",
                                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec || (one && answered > 0)) co_return;  // closed or reset by the probe; or s closes
        const std::string req = buf.substr(0, n);
        buf.erase(0, n);
        seen->requests.emplace_back(conn, headerValue(req, "Connection"));
        const std::string resp = respond(int(seen->requests.size()) - 1);
        co_await asio::async_write(s, asio::buffer(resp), asio::redirect_error(asio::use_awaitable, ec));
        if (!ec && close_after) {
          s.close(ec);
          ++seen->closed;
        }
        if (ec || close_after) co_return;  // s closes
      }
    };
  }
};

ProbeSpec keepSpec(uint16_t port) {
  ProbeSpec s = loopbackSpec(Protocol::kHttp, port, "/health", 2000ms);
  s.keep_alive = true;
  return s;
}

class ProbeKeepAlive : public ::testing::Test {
 protected:
  asio::io_context io;
  std::shared_ptr<KeptConnections> kept = std::make_shared<KeptConnections>();
};

// The first probe opens the connection and keeps it; each later one connects
// afresh (accepted, then reset before any request) and asks on the kept one.
TEST_F(ProbeKeepAlive, LaterProbesAskOnTheKeptConnectionAfterAFreshConnect) {
  KeepAliveHttp http;
  TestServer srv(io, http.handler());
  const ProbeSpec spec = keepSpec(srv.port());
  for (int i = 0; i < 4; ++i) {
    ProbeResult r = runProbe(io, spec, nullptr, kept);
    ASSERT_TRUE(r.ok) << i << ": " << r.reason << ": " << r.detail;
    EXPECT_EQ(r.reused, i > 0) << "probe " << i;
  }
  EXPECT_EQ(kept->counts().reused, 3u);
  runUntil(io, [&] { return http.seen->connections == 4; }, 1000ms);
  EXPECT_EQ(http.seen->connections, 4) << "every probe connects afresh";
  EXPECT_EQ(http.seen->requestsOn(0), 4) << "all requests on the first connection";
  EXPECT_EQ(http.seen->requests.size(), 4u);
  EXPECT_EQ(http.seen->requests[0].second, "<none>") << "no Connection: close asked for";
  EXPECT_EQ(kept->size(), 1u);
}

// The check still proves that the appliance accepts new connections: with
// its listener gone, the fresh connect is refused while the kept connection
// would still have answered.
TEST_F(ProbeKeepAlive, AListenerGoneFailsThoughTheKeptConnectionAnswers) {
  KeepAliveHttp http;
  auto srv = std::make_unique<TestServer>(io, http.handler());
  const ProbeSpec spec = keepSpec(srv->port());
  ASSERT_TRUE(runProbe(io, spec, nullptr, kept).ok);
  ASSERT_EQ(kept->size(), 1u);
  srv.reset();  // the listener closes; the accepted connection's coroutine goes on
  ProbeResult r = runProbe(io, spec, nullptr, kept);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reason, "connect_refused") << r.detail;
  EXPECT_EQ(http.seen->requests.size(), 1u) << "nothing asked once the connect failed";
}

// An appliance that closed the kept connection while it was idle (its FIN
// came before the next probe): the probe sees so before using it, and asks
// on its fresh connection, and passes.
TEST_F(ProbeKeepAlive, AKeptConnectionTheApplianceClosedIsNotUsed) {
  KeepAliveHttp http;
  http.close_after = true;
  TestServer srv(io, http.handler());
  const ProbeSpec spec = keepSpec(srv.port());
  for (int i = 0; i < 3; ++i) {
    ProbeResult r = runProbe(io, spec, nullptr, kept);
    ASSERT_TRUE(r.ok) << i << ": " << r.reason << ": " << r.detail;
    EXPECT_FALSE(r.reused) << "probe " << i << ": answered on a connection the server had closed";
    ASSERT_TRUE(runUntil(io, [&] { return http.seen->closed == i + 1; }, 1000ms));
  }
  EXPECT_EQ(http.seen->requests.size(), 3u) << "each request sent once";
  EXPECT_EQ(kept->counts().closed, 2u) << "probes 2 and 3 found their kept connection closed";
  EXPECT_EQ(kept->counts().stale, 0u) << "nothing sent into a closed connection";
  EXPECT_EQ(kept->counts().reused, 0u);
}

// A kept connection that looked alive but fails before any byte of its
// response (the appliance closed it between the look and the request): not
// a verdict; the request goes again on the fresh connection.
TEST_F(ProbeKeepAlive, AKeptConnectionFailingBeforeItsResponseIsAskedAgainOnTheFreshOne) {
  KeepAliveHttp http;
  http.one_per_connection = true;
  TestServer srv(io, http.handler());
  const ProbeSpec spec = keepSpec(srv.port());
  for (int i = 0; i < 3; ++i) {
    ProbeResult r = runProbe(io, spec, nullptr, kept);
    ASSERT_TRUE(r.ok) << i << ": " << r.reason << ": " << r.detail;
    EXPECT_FALSE(r.reused) << "probe " << i;
  }
  EXPECT_EQ(http.seen->requests.size(), 3u) << "one answered request per probe";
  EXPECT_EQ(kept->counts().reused, 2u);
  EXPECT_EQ(kept->counts().stale, 2u);
  EXPECT_EQ(kept->counts().closed, 0u);
}

// Bytes the appliance sent on an idle kept connection, unasked: the
// connection is out of step with its requests and is not used.
TEST_F(ProbeKeepAlive, AKeptConnectionWithUnaskedBytesIsNotUsed) {
  auto kept_sock = std::make_shared<std::optional<tcp::socket>>();
  TestServer srv(io, [kept_sock](tcp::socket s) -> asio::awaitable<void> {
    std::string buf;
    error_code ec;
    co_await asio::async_read_until(s, asio::dynamic_buffer(buf, 16384), "\r\n\r\n",
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    const std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    co_await asio::async_write(s, asio::buffer(resp), asio::redirect_error(asio::use_awaitable, ec));
    kept_sock->emplace(std::move(s));
  });
  const ProbeSpec spec = keepSpec(srv.port());
  ASSERT_TRUE(runProbe(io, spec, nullptr, kept).ok);
  ASSERT_TRUE(runUntil(io, [&] { return kept_sock->has_value(); }, 1000ms));
  asio::write(**kept_sock, asio::buffer(std::string("HTTP/1.1 408 Request Timeout\r\n\r\n")));
  ProbeResult r = runProbe(io, spec, nullptr, kept);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail << " (a 408 nobody asked for is no verdict)";
  EXPECT_FALSE(r.reused);
  EXPECT_EQ(kept->counts().closed, 1u);
}

// A failing status on the kept connection fails the probe as on any other.
TEST_F(ProbeKeepAlive, ABadStatusOnTheKeptConnectionFails) {
  KeepAliveHttp http;
  http.respond = [](int k) {
    return k == 0 ? std::string("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                  : std::string("HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy");
  };
  TestServer srv(io, http.handler());
  const ProbeSpec spec = keepSpec(srv.port());
  ASSERT_TRUE(runProbe(io, spec, nullptr, kept).ok);
  ProbeResult r = runProbe(io, spec, nullptr, kept);
  EXPECT_EQ(r.reason, "bad_status");
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(r.reused);
  ProbeResult again = runProbe(io, spec, nullptr, kept);
  EXPECT_TRUE(again.reused) << "a framed 503 leaves the connection usable";
}

// Responses whose end is not known from their head, or that ask to close,
// are judged as usual; their connection is not kept.
TEST_F(ProbeKeepAlive, UnframedOrClosingResponsesAreJudgedButNotKept) {
  const std::vector<std::string> responses = {
      "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA",
  };
  for (const std::string& resp : responses) {
    KeepAliveHttp http;
    http.respond = [resp](int) { return resp; };
    TestServer srv(io, http.handler());
    ProbeResult r = runProbe(io, keepSpec(srv.port()), nullptr, kept);
    EXPECT_TRUE(r.ok) << resp << ": " << r.reason;
    EXPECT_EQ(kept->size(), 0u) << resp;
  }
}

// A body that has not all come by the timeout: the verdict stands (the status
// came), the connection is not kept.
TEST_F(ProbeKeepAlive, ABodyStillComingAtTheTimeoutKeepsTheVerdict) {
  KeepAliveHttp http;
  http.respond = [](int) { return std::string("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"); };
  TestServer srv(io, http.handler());
  ProbeSpec spec = keepSpec(srv.port());
  spec.timeout = 300ms;
  ProbeResult r = runProbe(io, spec, nullptr, kept);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_GE(r.elapsed, 250ms);
  EXPECT_EQ(kept->size(), 0u);
}

// A kept connection serves kMaxRequests probes, then the next one opens a new
// connection (which proves again what a new connection needs, e.g. TLS).
TEST_F(ProbeKeepAlive, AConnectionIsRetiredAfterMaxRequests) {
  KeepAliveHttp http;
  TestServer srv(io, http.handler());
  const ProbeSpec spec = keepSpec(srv.port());
  const int n = int(KeptConnections::kMaxRequests) + 1;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(runProbe(io, spec, nullptr, kept).ok) << i;
  EXPECT_EQ(http.seen->requestsOn(0), int(KeptConnections::kMaxRequests));
  const int last = http.seen->requests.back().first;
  EXPECT_NE(last, 0) << "the last probe asked on a new connection";
  EXPECT_EQ(http.seen->requestsOn(last), 1);
}

// A connection idle for longer than the pool's max_idle is closed, not used.
TEST_F(ProbeKeepAlive, AnIdleConnectionIsNotUsed) {
  kept = std::make_shared<KeptConnections>(0, 200ms);
  KeepAliveHttp http;
  TestServer srv(io, http.handler());
  const ProbeSpec spec = keepSpec(srv.port());
  ASSERT_TRUE(runProbe(io, spec, nullptr, kept).ok);
  EXPECT_TRUE(runProbe(io, spec, nullptr, kept).reused);
  const auto until = std::chrono::steady_clock::now() + 300ms;
  runUntil(io, [&] { return std::chrono::steady_clock::now() >= until; }, 1000ms);
  ProbeResult r = runProbe(io, spec, nullptr, kept);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(r.reused);
  EXPECT_EQ(kept->counts().expired, 1u);
}

// Full: a probe closes its connection as without keep_alive, and says so.
TEST_F(ProbeKeepAlive, AFullPoolKeepsNoMore) {
  kept = std::make_shared<KeptConnections>(1);
  KeepAliveHttp a, b;
  TestServer sa(io, a.handler()), sb(io, b.handler());
  ASSERT_TRUE(runProbe(io, keepSpec(sa.port()), nullptr, kept).ok);
  ASSERT_TRUE(runProbe(io, keepSpec(sb.port()), nullptr, kept).ok);
  EXPECT_EQ(kept->size(), 1u);
  EXPECT_EQ(kept->counts().refused, 1u);
  EXPECT_TRUE(runProbe(io, keepSpec(sa.port()), nullptr, kept).reused);
  EXPECT_FALSE(runProbe(io, keepSpec(sb.port()), nullptr, kept).reused);
}

// Without a KeptConnections (or without keep_alive), nothing is kept.
TEST_F(ProbeKeepAlive, NothingIsKeptWithoutThePoolOrTheSetting) {
  KeepAliveHttp http;
  TestServer srv(io, http.handler());
  ProbeSpec spec = keepSpec(srv.port());
  EXPECT_FALSE(runProbe(io, spec, nullptr, nullptr).reused);
  EXPECT_FALSE(runProbe(io, spec, nullptr, nullptr).reused);
  spec.keep_alive = false;
  EXPECT_FALSE(runProbe(io, spec, nullptr, kept).reused);
  EXPECT_EQ(kept->size(), 0u);
  EXPECT_EQ(http.seen->requests.back().second, "close");
}

}  // namespace
}  // namespace gwlb::probe::test
