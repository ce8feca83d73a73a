// HTTPS probes against an in-test asio::ssl server with a throwaway
// self-signed certificate made by the openssl command at test time.
#include <openssl/ssl.h>

#include <boost/asio/ssl.hpp>
#include <cstdlib>
#include <filesystem>

#include "probe_test_util.h"

namespace gwlb::probe::test {
namespace {

namespace ssl = asio::ssl;
namespace fs = std::filesystem;

constexpr const char* kDomain = "probe.test";

fs::path workDir() {
  const char* w = std::getenv("GWLB_PROBE_WORK");
  return w ? fs::path(w) : fs::temp_directory_path() / "gwlb-probe-tests";
}

class ProbeTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = workDir() / "tls";
    std::error_code ec;
    fs::create_directories(dir_, ec);
    auto mk = [](const fs::path& key, const fs::path& cert, const std::string& cn,
                 const std::string& san) {
      std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                        " -keyout '" + key.string() + "' -out '" + cert.string() +
                        "' -days 2 -subj '/CN=" + cn + "' -addext 'subjectAltName=" + san +
                        "' >/dev/null 2>&1";
      return std::system(cmd.c_str()) == 0;
    };
    ready_ = mk(dir_ / "key.pem", dir_ / "cert.pem", kDomain,
                std::string("DNS:") + kDomain + ",IP:127.0.0.1") &&
             mk(dir_ / "other-key.pem", dir_ / "other.pem", "other.test", "DNS:other.test");
  }

  void SetUp() override {
    if (!ready_) GTEST_SKIP() << "could not make a test certificate with the openssl command";
    server_ctx_.use_certificate_chain_file((dir_ / "cert.pem").string());
    server_ctx_.use_private_key_file((dir_ / "key.pem").string(), ssl::context::pem);
  }

  // TLS server: records the SNI it got, answers `resp` to one request.
  ConnHandler tlsHandler(std::string resp) {
    return [this, resp](tcp::socket s) -> asio::awaitable<void> {
      ssl::stream<tcp::socket> tls(std::move(s), server_ctx_);
      error_code ec;
      co_await tls.async_handshake(ssl::stream_base::server,
                                   asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        ++handshake_failures_;
        co_return;
      }
      const char* sni = SSL_get_servername(tls.native_handle(), TLSEXT_NAMETYPE_host_name);
      snis_.push_back(sni ? sni : "<none>");
      std::string req;
      if (!co_await readRequest(tls, req)) co_return;
      hosts_.push_back(headerValue(req, "Host"));
      co_await asio::async_write(tls, asio::buffer(resp), asio::redirect_error(asio::use_awaitable, ec));
      co_await drainUntilClosed(tls);
    };
  }

  ProbeSpec httpsSpec(uint16_t port) { return loopbackSpec(Protocol::kHttps, port, "/", 3000ms); }

  static inline fs::path dir_;
  static inline bool ready_ = false;
  ssl::context server_ctx_{ssl::context::tls_server};
  ssl::context client_ctx_{ssl::context::tls_client};
  std::vector<std::string> snis_, hosts_;
  int handshake_failures_ = 0;
  asio::io_context io;  // last: destroyed first, with any server coroutine still parked
};

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

TEST_F(ProbeTls, HttpsIsOkWithoutVerification) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeResult r = runProbe(io, httpsSpec(srv.port()), &client_ctx_);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_EQ(r.status, 200);
  ASSERT_EQ(snis_.size(), 1u);
  EXPECT_EQ(snis_[0], "<none>") << "no domain: no SNI";
  ASSERT_EQ(hosts_.size(), 1u);
  EXPECT_EQ(hosts_[0], "127.0.0.1:" + std::to_string(srv.port()));
}

// A target's next probe resumes the TLS session of its last one (no
// certificate and key exchange again); after a failed handshake the next
// one is full. Each probe still opens its own connection.
TEST_F(ProbeTls, TheNextProbeResumesTheSession) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeSpec spec = httpsSpec(srv.port());
  spec.domain = kDomain;
  ProbeResult first = runProbe(io, spec, &client_ctx_);
  ASSERT_TRUE(first.ok) << first.reason << ": " << first.detail;
  EXPECT_TRUE(first.handshake);
  EXPECT_FALSE(first.resumed);
  ProbeResult second = runProbe(io, spec, &client_ctx_);
  ASSERT_TRUE(second.ok) << second.reason << ": " << second.detail;
  EXPECT_TRUE(second.handshake);
  EXPECT_TRUE(second.resumed) << "the first probe's session was not resumed";
  EXPECT_EQ(snis_.size(), 2u) << "two connections, two handshakes";
  // Another target (here: another SNI) has a session of its own.
  spec.domain = "other.test";
  ProbeResult other = runProbe(io, spec, &client_ctx_);
  ASSERT_TRUE(other.ok) << other.reason << ": " << other.detail;
  EXPECT_FALSE(other.resumed);
  // Verification asked for: not from a session made without it.
  spec.domain = kDomain;
  spec.verify_tls = true;
  spec.ca_file = (dir_ / "cert.pem").string();
  ProbeResult verified = runProbe(io, spec, &client_ctx_);
  ASSERT_TRUE(verified.ok) << verified.reason << ": " << verified.detail;
  EXPECT_FALSE(verified.resumed);
}

// The fixture's httpsSpec with keep_alive.
ProbeSpec keepAliveSpec(uint16_t port) {
  ProbeSpec spec = loopbackSpec(Protocol::kHttps, port, "/", 3000ms);
  spec.keep_alive = true;
  return spec;
}

// A keep-alive HTTPS server: counts handshakes and requests; with
// `shutdown_after`, it ends each connection after one response with a TLS
// close_notify (nginx's way at its keepalive_timeout), and counts those.
struct TlsKeepAlive {
  int handshakes = 0, requests = 0, shut = 0;
  bool shutdown_after = false;
};

ConnHandler keepAliveTls(ssl::context& ctx, TlsKeepAlive& st) {
  return [&ctx, &st](tcp::socket s) -> asio::awaitable<void> {
    // Only a connection that sends something is taken for TLS: a probe's
    // fresh connection is reset unused.
    error_code ec;
    co_await s.async_wait(tcp::socket::wait_read, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || s.available(ec) == 0) co_return;
    ssl::stream<tcp::socket> tls(std::move(s), ctx);
    co_await tls.async_handshake(ssl::stream_base::server, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;
    ++st.handshakes;
    std::string buf;
    for (;;) {
      size_t n = co_await asio::async_read_until(tls, asio::dynamic_buffer(buf, 16384), "\r\n\r\n",
                                                 asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      buf.erase(0, n);
      ++st.requests;
      co_await asio::async_write(tls, asio::buffer(kOk), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      if (st.shutdown_after) {
        ++st.shut;
        // Sends close_notify, then waits for the probe's, which never comes:
        // ends when the probe resets the connection.
        co_await tls.async_shutdown(asio::redirect_error(asio::use_awaitable, ec));
        co_return;
      }
    }
  };
}

// keep_alive over TLS: one handshake, then each probe connects afresh (and
// resets) and asks on the kept TLS connection; no handshake on the fresh one.
TEST_F(ProbeTls, KeepAliveAsksOnTheKeptTlsConnection) {
  TlsKeepAlive st;
  TestServer srv(io, keepAliveTls(server_ctx_, st));
  auto kept = std::make_shared<KeptConnections>();
  const ProbeSpec spec = keepAliveSpec(srv.port());
  for (int i = 0; i < 3; ++i) {
    ProbeResult r = runProbe(io, spec, &client_ctx_, kept);
    ASSERT_TRUE(r.ok) << i << ": " << r.reason << ": " << r.detail;
    EXPECT_EQ(r.reused, i > 0) << i;
    EXPECT_EQ(r.handshake, i == 0) << i << ": a probe on the kept connection makes no handshake";
  }
  EXPECT_EQ(st.handshakes, 1);
  EXPECT_EQ(st.requests, 3);
  // No kept connection (all closed): the next probe's handshake is on its
  // fresh connection, and resumes the session the first one made.
  kept->clear();
  ProbeResult r = runProbe(io, spec, &client_ctx_, kept);
  ASSERT_TRUE(r.ok) << r.reason << ": " << r.detail;
  EXPECT_FALSE(r.reused);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(st.handshakes, 2);
}

// An HTTPS appliance that ended the kept connection with a close_notify while
// it was idle: the next probe sees bytes waiting on it, does not send its
// request into it, and asks on its fresh connection (a resumed handshake).
TEST_F(ProbeTls, AKeptTlsConnectionEndedWithCloseNotifyIsNotUsed) {
  TlsKeepAlive st;
  st.shutdown_after = true;
  TestServer srv(io, keepAliveTls(server_ctx_, st));
  auto kept = std::make_shared<KeptConnections>();
  const ProbeSpec spec = keepAliveSpec(srv.port());
  for (int i = 0; i < 3; ++i) {
    ProbeResult r = runProbe(io, spec, &client_ctx_, kept);
    ASSERT_TRUE(r.ok) << i << ": " << r.reason << ": " << r.detail;
    EXPECT_FALSE(r.reused) << i;
    EXPECT_EQ(r.resumed, i > 0) << i;
    ASSERT_TRUE(runUntil(io, [&] { return st.shut == i + 1; }, 1000ms));
    // The close_notify's write follows within the same loop turn or the next.
    const auto until = std::chrono::steady_clock::now() + 100ms;
    runUntil(io, [&] { return std::chrono::steady_clock::now() >= until; }, 1000ms);
  }
  EXPECT_EQ(st.requests, 3) << "each request sent once";
  EXPECT_EQ(kept->counts().closed, 2u);
  EXPECT_EQ(kept->counts().stale, 0u);
}

TEST_F(ProbeTls, DefaultContextWhenNoneGiven) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeResult r = runProbe(io, httpsSpec(srv.port()), nullptr);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
}

TEST_F(ProbeTls, SniIsTheDomain) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeSpec spec = httpsSpec(srv.port());
  spec.domain = kDomain;
  ProbeResult r = runProbe(io, spec, &client_ctx_);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  ASSERT_EQ(snis_.size(), 1u);
  EXPECT_EQ(snis_[0], kDomain);
  ASSERT_EQ(hosts_.size(), 1u);
  EXPECT_EQ(hosts_[0], kDomain);
}

// Issue 14 item 14: a fully qualified domain ("probe.test.") is sent as SNI
// without its trailing dot (RFC 6066 section 3) and verified as "probe.test";
// the Host header carries the domain as configured.
TEST_F(ProbeTls, TrailingDotDomainSniHasNoDot) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeSpec spec = httpsSpec(srv.port());
  spec.domain = std::string(kDomain) + ".";
  spec.verify_tls = true;
  spec.ca_file = (dir_ / "cert.pem").string();
  ProbeResult r = runProbe(io, spec, &client_ctx_);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  ASSERT_EQ(snis_.size(), 1u);
  EXPECT_EQ(snis_[0], kDomain);
  ASSERT_EQ(hosts_.size(), 1u);
  EXPECT_EQ(hosts_[0], std::string(kDomain) + ".");
}

TEST_F(ProbeTls, BadStatusOverTls) {
  TestServer srv(io, tlsHandler("HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"));
  ProbeResult r = runProbe(io, httpsSpec(srv.port()), &client_ctx_);
  EXPECT_EQ(r.reason, "bad_status");
  EXPECT_EQ(r.status, 500);
}

TEST_F(ProbeTls, PlainTcpServerFailsHandshake) {
  // Answers the ClientHello with plain HTTP and closes.
  TestServer srv(io, [](tcp::socket s) -> asio::awaitable<void> {
    char buf[512];
    error_code ec;
    co_await s.async_read_some(asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    const std::string resp = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    co_await asio::async_write(s, asio::buffer(resp), asio::redirect_error(asio::use_awaitable, ec));
    s.shutdown(tcp::socket::shutdown_send, ec);
    co_await drainUntilClosed(s);
  });
  ProbeResult r = runProbe(io, httpsSpec(srv.port()), &client_ctx_);
  EXPECT_EQ(r.reason, "tls_handshake_failed") << r.detail;
  EXPECT_LT(r.elapsed, 2500ms);
}

TEST_F(ProbeTls, SilentServerFailsHandshakeByTimeout) {
  TestServer srv(io, [](tcp::socket s) -> asio::awaitable<void> { co_await drainUntilClosed(s); });
  ProbeSpec spec = httpsSpec(srv.port());
  spec.timeout = 700ms;
  ProbeResult r = runProbe(io, spec, &client_ctx_);
  EXPECT_EQ(r.reason, "tls_handshake_failed") << r.detail;
  EXPECT_GE(r.elapsed, 600ms);
}

TEST_F(ProbeTls, VerifyWithTheRightCa) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeSpec spec = httpsSpec(srv.port());
  spec.verify_tls = true;
  spec.ca_file = (dir_ / "cert.pem").string();
  spec.domain = kDomain;
  ProbeResult r = runProbe(io, spec, &client_ctx_);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
  // No domain: the certificate must name the address (it has IP:127.0.0.1).
  spec.domain.clear();
  r = runProbe(io, spec, &client_ctx_);
  EXPECT_TRUE(r.ok) << r.reason << ": " << r.detail;
}

TEST_F(ProbeTls, VerifyWithAWrongCaFails) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeSpec spec = httpsSpec(srv.port());
  spec.verify_tls = true;
  spec.ca_file = (dir_ / "other.pem").string();
  spec.domain = kDomain;
  ProbeResult r = runProbe(io, spec, &client_ctx_);
  EXPECT_EQ(r.reason, "tls_handshake_failed") << r.detail;
}

TEST_F(ProbeTls, VerifyWithTheWrongNameFails) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeSpec spec = httpsSpec(srv.port());
  spec.verify_tls = true;
  spec.ca_file = (dir_ / "cert.pem").string();
  spec.domain = "wrong.test";
  ProbeResult r = runProbe(io, spec, &client_ctx_);
  EXPECT_EQ(r.reason, "tls_handshake_failed") << r.detail;
}

TEST_F(ProbeTls, MissingCaFileFails) {
  TestServer srv(io, tlsHandler(kOk));
  ProbeSpec spec = httpsSpec(srv.port());
  spec.verify_tls = true;
  spec.ca_file = (dir_ / "does-not-exist.pem").string();
  ProbeResult r = runProbe(io, spec, &client_ctx_);
  EXPECT_EQ(r.reason, "tls_handshake_failed") << r.detail;
}

}  // namespace
}  // namespace gwlb::probe::test
