// One-shot health probes: one ProbeSession per probe, one deadline timer, every
// socket operation asynchronous. Nothing here blocks, sleeps or starts a thread,
// so one control thread can keep thousands of probes in flight.
#include "probes/probe.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

namespace gwlb::probe {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

const char* toString(Protocol p) {
  switch (p) {
    case Protocol::kTcp: return "tcp";
    case Protocol::kHttp: return "http";
    case Protocol::kHttps: return "https";
  }
  return "?";
}

std::optional<Protocol> parseProtocol(std::string_view s) {
  if (s == "tcp") return Protocol::kTcp;
  if (s == "http") return Protocol::kHttp;
  if (s == "https") return Protocol::kHttps;
  return std::nullopt;
}

std::string codesToString(const std::vector<CodeRange>& codes) {
  std::string s;
  for (const CodeRange& c : codes) {
    if (!s.empty()) s += ',';
    s += std::to_string(c.lo);
    if (c.hi != c.lo) s += '-' + std::to_string(c.hi);
  }
  return s;
}

bool codeMatches(const std::vector<CodeRange>& codes, int status) {
  return std::any_of(codes.begin(), codes.end(),
                     [status](const CodeRange& c) { return status >= c.lo && status <= c.hi; });
}

// ---------------------------------------------------------------------------
// Pure parsers

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// RFC 9110 tchar.
bool isTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != 0;
}

// Field values and reason phrases: HTAB, SP, VCHAR, obs-text.
bool isTextChar(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

// Checks one line of the response head, complete (`complete`) or not yet.
// `line` excludes the LF and an optional CR right before it. A bare CR, a NUL
// or another control character is malformed at once, so garbage fails fast.
int checkHeaderLine(std::string_view line, bool complete, bool first_field, std::string& err) {
  if (line.empty()) return 0;
  if (line[0] == ' ' || line[0] == '\t') {  // obs-fold continuation
    if (first_field) {
      err = "header block starts with whitespace";
      return -1;
    }
    for (char c : line)
      if (!isTextChar(static_cast<unsigned char>(c))) {
        err = "control character in header";
        return -1;
      }
    return 0;
  }
  size_t colon = line.find(':');
  size_t name_end = colon == std::string_view::npos ? line.size() : colon;
  for (size_t i = 0; i < name_end; ++i)
    if (!isTokenChar(static_cast<unsigned char>(line[i]))) {
      err = "bad character in header name";
      return -1;
    }
  if (colon == std::string_view::npos) {
    if (complete) {
      err = "header line without ':'";
      return -1;
    }
    return 0;
  }
  if (colon == 0) {
    err = "empty header name";
    return -1;
  }
  for (size_t i = colon + 1; i < line.size(); ++i)
    if (!isTextChar(static_cast<unsigned char>(line[i]))) {
      err = "control character in header value";
      return -1;
    }
  return 0;
}

// Parses the status line at the start of `d`. Returns 1 with `line_len` (up to
// and including its LF), 0 when more bytes are needed, -1 when malformed.
int parseStatusLine(const char* d, size_t len, int& status, std::string& err, size_t& line_len) {
  static constexpr std::string_view kPrefix = "HTTP/";
  for (size_t i = 0; i < kPrefix.size(); ++i) {
    if (i >= len) return 0;
    if (d[i] != kPrefix[i]) {
      err = "not an HTTP response (no HTTP/ status line)";
      return -1;
    }
  }
  // "HTTP/" DIGIT "." DIGIT SP
  if (len < 6) return 0;
  if (d[5] != '1') {
    err = isDigit(d[5]) ? "unsupported HTTP version" : "bad HTTP version";
    return -1;
  }
  if (len < 7) return 0;
  if (d[6] != '.') {
    err = "bad HTTP version";
    return -1;
  }
  if (len < 8) return 0;
  if (!isDigit(d[7])) {
    err = "bad HTTP version";
    return -1;
  }
  if (len < 9) return 0;
  if (d[8] != ' ') {
    err = "bad HTTP version";
    return -1;
  }
  int code = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (i >= len) return 0;
    if (!isDigit(d[i])) {
      err = "bad status code";
      return -1;
    }
    code = code * 10 + (d[i] - '0');
  }
  if (code < 100 || code > 599) {
    err = "status code " + std::to_string(code) + " out of range";
    return -1;
  }
  if (len < 13) return 0;
  if (d[12] != ' ' && d[12] != '\r' && d[12] != '\n') {
    err = "bad status code";
    return -1;
  }
  // Reason phrase (possibly empty) up to CRLF; a lone LF is accepted (RFC 9112 2.2).
  for (size_t i = 12; i < len; ++i) {
    unsigned char c = static_cast<unsigned char>(d[i]);
    if (c == '\n') {
      status = code;
      line_len = i + 1;
      return 1;
    }
    if (c == '\r') {
      if (i + 1 >= len) return 0;
      if (d[i + 1] != '\n') {
        err = "bare CR in status line";
        return -1;
      }
      continue;
    }
    if (!isTextChar(c)) {
      err = "control character in status line";
      return -1;
    }
  }
  return 0;
}

}  // namespace

int parseResponseHead(const char* data, size_t len, int& status, std::string& err,
                      size_t& head_len) {
  int code = 0;
  size_t pos = 0;
  int r = parseStatusLine(data, len, code, err, pos);
  if (r != 1) return r;
  bool first_field = true;
  while (pos < len) {
    const char* lf = static_cast<const char*>(std::memchr(data + pos, '\n', len - pos));
    size_t end = lf ? static_cast<size_t>(lf - data) : len;
    size_t content_end = end;
    if (lf && content_end > pos && data[content_end - 1] == '\r') --content_end;
    std::string_view line(data + pos, content_end - pos);
    size_t cr = line.find('\r');
    // Without an LF yet, a CR may be the last byte read, waiting for its LF.
    if (cr != std::string_view::npos && (lf || cr + 1 != line.size())) {
      err = "bare CR in header";
      return -1;
    }
    if (!lf) {
      if (cr != std::string_view::npos) line.remove_suffix(1);
      return checkHeaderLine(line, false, first_field, err) < 0 ? -1 : 0;
    }
    if (line.empty()) {
      status = code;
      head_len = end + 1;
      return 1;
    }
    if (checkHeaderLine(line, true, first_field, err) < 0) return -1;
    first_field = false;
    pos = end + 1;
  }
  return 0;
}

int parseResponseHead(const char* data, size_t len, int& status, std::string& err) {
  size_t head_len = 0;
  return parseResponseHead(data, len, status, err, head_len);
}

bool parseHttpCodes(const std::vector<std::string>& in, std::vector<CodeRange>& out,
                    std::string& err) {
  if (in.empty()) {
    err = "no HTTP codes given";
    return false;
  }
  auto code = [](std::string_view t, int& v) {
    if (t.size() != 3 || !isDigit(t[0]) || !isDigit(t[1]) || !isDigit(t[2])) return false;
    v = (t[0] - '0') * 100 + (t[1] - '0') * 10 + (t[2] - '0');
    return v >= 100 && v <= 599;
  };
  std::vector<CodeRange> res;
  for (const std::string& s : in) {
    std::string_view t = s;
    if (t.size() == 8 && t.substr(0, 5) == "http_" && t[5] >= '2' && t[5] <= '5' &&
        t.substr(6) == "xx") {
      int base = (t[5] - '0') * 100;
      res.push_back({base, base + 99});
      continue;
    }
    size_t dash = t.find('-');
    int lo = 0, hi = 0;
    bool good = dash == std::string_view::npos
                    ? code(t, lo) && ((hi = lo), true)
                    : code(t.substr(0, dash), lo) && code(t.substr(dash + 1), hi) && lo <= hi;
    if (!good) {
      err = "\"" + s +
            "\" is not http_2xx, http_3xx, http_4xx, http_5xx, a code (200) or a range (200-299)";
      return false;
    }
    res.push_back({lo, hi});
  }
  out = std::move(res);
  return true;
}

// ---------------------------------------------------------------------------
// TLS helpers

namespace {

ssl::context& defaultTlsContext() {
  static ssl::context ctx = [] {
    ssl::context c(ssl::context::tls_client);
    c.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3);
    error_code ec;
    c.set_default_verify_paths(ec);  // only used with verify_tls and no ca_file
    return c;
  }();
  return ctx;
}

std::string opensslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// CA stores loaded from ca_file, shared by all probes and reloaded when the
// file changes. Returns a store with one reference for the caller, or null.
X509_STORE* caStore(const std::string& path, std::string& err) {
  struct Entry {
    X509_STORE* store = nullptr;
    struct timespec mtime {};
    off_t size = 0;
  };
  static std::mutex mu;
  static std::map<std::string, Entry> cache;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    err = "cannot read CA file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  std::lock_guard lock(mu);
  Entry& e = cache[path];
  if (e.store && e.mtime.tv_sec == st.st_mtim.tv_sec && e.mtime.tv_nsec == st.st_mtim.tv_nsec &&
      e.size == st.st_size) {
    X509_STORE_up_ref(e.store);
    return e.store;
  }
  X509_STORE* s = X509_STORE_new();
  if (!s) {
    err = "out of memory";
    return nullptr;
  }
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  int loaded = X509_STORE_load_file(s, path.c_str());
#else
  int loaded = X509_STORE_load_locations(s, path.c_str(), nullptr);
#endif
  if (loaded != 1) {
    err = "cannot load CA file " + path + ": " + opensslError();
    X509_STORE_free(s);
    return nullptr;
  }
  if (e.store) X509_STORE_free(e.store);
  e.store = s;
  e.mtime = st.st_mtim;
  e.size = st.st_size;
  X509_STORE_up_ref(s);
  return s;
}

asio::ip::address toAsio(const IpAddr& a) {
  if (a.isV4()) {
    asio::ip::address_v4::bytes_type b;
    std::copy_n(a.b.begin(), 4, b.begin());
    return asio::ip::address_v4(b);
  }
  asio::ip::address_v6::bytes_type b;
  std::copy_n(a.b.begin(), 16, b.begin());
  return asio::ip::address_v6(b);
}

// Path and Host go into the request line and a header: refuse anything that
// could break out of them (the config validator is stricter still).
bool safeForRequest(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u != 0x7f;
  });
}

// ---------------------------------------------------------------------------
// One probe in flight

class ProbeSession : public std::enable_shared_from_this<ProbeSession> {
 public:
  ProbeSession(asio::io_context& io, const ProbeSpec& spec, ProbeCallback cb, ssl::context* tls)
      : spec_(spec), cb_(std::move(cb)), tls_ctx_(tls), sock_(io), timer_(io) {}

  void start();

 private:
  enum class Phase : uint8_t { kConnect, kTls, kRequest, kResponse };

  void onTimeout();
  void onConnect(const error_code& ec);
  void startTls();
  void onHandshake(const error_code& ec);
  void sendRequest();
  void onWrite(const error_code& ec);
  void readMore();
  void onRead(const error_code& ec, size_t n);
  bool handleHead();  // true when the probe finished
  void finish(const char* reason, std::string detail, int status = 0);

  std::string timeoutText() const { return std::to_string(spec_.timeout.count()) + " ms"; }

  ProbeSpec spec_;
  ProbeCallback cb_;
  ssl::context* tls_ctx_;
  tcp::socket sock_;
  asio::steady_timer timer_;
  std::unique_ptr<ssl::stream<tcp::socket&>> tls_;
  std::string request_;
  std::vector<char> buf_;   // grows on demand up to kMaxResponseHead
  size_t used_ = 0;         // bytes received
  size_t head_start_ = 0;   // start of the current head (after 1xx interim ones)
  Clock::time_point start_;
  Phase phase_ = Phase::kConnect;
  bool done_ = false;
};

void ProbeSession::start() {
  start_ = Clock::now();
  if (!spec_.address.isV4() && !spec_.address.isV6())
    return finish("invalid_spec", "no target address");
  if (spec_.protocol != Protocol::kTcp) {
    if (spec_.path.empty() || spec_.path[0] != '/' || !safeForRequest(spec_.path))
      return finish("invalid_spec", "path must start with '/' and hold no spaces or controls");
    if (!safeForRequest(spec_.domain))
      return finish("invalid_spec", "domain holds spaces or control characters");
    if (spec_.codes.empty()) return finish("invalid_spec", "no expected HTTP codes");
  }
  if (spec_.timeout.count() <= 0) return finish("invalid_spec", "timeout must be positive");

  const asio::ip::address target = toAsio(spec_.address);
  error_code ec;
  sock_.open(target.is_v4() ? tcp::v4() : tcp::v6(), ec);
  if (ec) return finish("connect_failed", "socket: " + ec.message());
  // Abortive close for every probe: TCP success ends with RST as the domain
  // asks, and no probe leaves TIME_WAIT behind on the prober.
  sock_.set_option(asio::socket_base::linger(true, 0), ec);
  if (spec_.source) {
    if (spec_.source->family != spec_.address.family)
      return finish("bind_failed", "source " + spec_.source->str() + " is not the family of " +
                                       spec_.address.str());
    sock_.bind(tcp::endpoint(toAsio(*spec_.source), 0), ec);
    if (ec) return finish("bind_failed", "bind " + spec_.source->str() + ": " + ec.message());
  }

  timer_.expires_after(spec_.timeout);
  timer_.async_wait([self = shared_from_this()](const error_code& e) {
    if (!e) self->onTimeout();
  });
  sock_.async_connect(tcp::endpoint(target, spec_.port),
                      [self = shared_from_this()](const error_code& e) { self->onConnect(e); });
}

void ProbeSession::onTimeout() {
  if (done_) return;
  switch (phase_) {
    case Phase::kConnect:
      return finish("connect_timeout", "no answer to SYN within " + timeoutText());
    case Phase::kTls:
      return finish("tls_handshake_failed", "TLS handshake not done within " + timeoutText());
    case Phase::kRequest:
    case Phase::kResponse:
      return finish("response_timeout", "no complete response head within " + timeoutText() +
                                            " (" + std::to_string(used_) + " bytes received)");
  }
}

void ProbeSession::onConnect(const error_code& ec) {
  if (done_) return;
  if (ec == asio::error::connection_refused) return finish("connect_refused", "connection refused");
  if (ec == asio::error::timed_out) return finish("connect_timeout", "connect: " + ec.message());
  if (ec) return finish("connect_failed", "connect: " + ec.message());
  switch (spec_.protocol) {
    case Protocol::kTcp: return finish("ok", "connected");
    case Protocol::kHttp: return sendRequest();
    case Protocol::kHttps: return startTls();
  }
}

void ProbeSession::startTls() {
  phase_ = Phase::kTls;
  try {
    tls_ = std::make_unique<ssl::stream<tcp::socket&>>(sock_,
                                                       tls_ctx_ ? *tls_ctx_ : defaultTlsContext());
  } catch (const boost::system::system_error& e) {  // SSL_new failed
    return finish("tls_handshake_failed", std::string("TLS setup: ") + e.what());
  }
  SSL* s = tls_->native_handle();
  error_code ec;
  const bool domain_is_ip = !spec_.domain.empty() && IpAddr::parse(spec_.domain).has_value();
  // SNI carries host names only (RFC 6066 section 3), never address literals.
  if (!spec_.domain.empty() && !domain_is_ip &&
      SSL_set_tlsext_host_name(s, const_cast<char*>(spec_.domain.c_str())) != 1)
    return finish("tls_handshake_failed", "cannot set SNI: " + opensslError());
  if (spec_.verify_tls) {
    tls_->set_verify_mode(ssl::verify_peer, ec);
    if (!spec_.ca_file.empty()) {
      std::string err;
      X509_STORE* store = caStore(spec_.ca_file, err);
      if (!store) return finish("tls_handshake_failed", err);
      SSL_set1_verify_cert_store(s, store);
      X509_STORE_free(store);  // the SSL holds its own reference
    }
    X509_VERIFY_PARAM* param = SSL_get0_param(s);
    int set = 0;
    if (!spec_.domain.empty() && !domain_is_ip) {
      set = X509_VERIFY_PARAM_set1_host(param, spec_.domain.c_str(), 0);
    } else {
      const IpAddr ip = domain_is_ip ? *IpAddr::parse(spec_.domain) : spec_.address;
      set = X509_VERIFY_PARAM_set1_ip(param, ip.b.data(), ip.isV4() ? 4 : 16);
    }
    if (set != 1) return finish("tls_handshake_failed", "cannot set name check: " + opensslError());
  } else {
    tls_->set_verify_mode(ssl::verify_none, ec);
  }
  tls_->async_handshake(ssl::stream_base::client,
                        [self = shared_from_this()](const error_code& e) { self->onHandshake(e); });
}

void ProbeSession::onHandshake(const error_code& ec) {
  if (done_) return;
  if (ec) {
    std::string detail = "TLS handshake: " + ec.message();
    if (spec_.verify_tls) {
      long v = SSL_get_verify_result(tls_->native_handle());
      if (v != X509_V_OK) detail += std::string(" (") + X509_verify_cert_error_string(v) + ")";
    }
    return finish("tls_handshake_failed", detail);
  }
  sendRequest();
}

void ProbeSession::sendRequest() {
  phase_ = Phase::kRequest;
  std::string host = spec_.domain;
  if (host.empty()) {
    host = spec_.address.isV6() ? "[" + spec_.address.str() + "]" : spec_.address.str();
    host += ":" + std::to_string(spec_.port);
  }
  request_ = "GET " + spec_.path + " HTTP/1.1\r\nHost: " + host +
             "\r\nUser-Agent: gwlb-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n";
  auto h = [self = shared_from_this()](const error_code& e, size_t) { self->onWrite(e); };
  if (tls_) asio::async_write(*tls_, asio::buffer(request_), h);
  else asio::async_write(sock_, asio::buffer(request_), h);
}

void ProbeSession::onWrite(const error_code& ec) {
  if (done_) return;
  if (ec) return finish("response_failed", "sending request: " + ec.message());
  phase_ = Phase::kResponse;
  readMore();
}

void ProbeSession::readMore() {
  if (used_ == buf_.size())
    buf_.resize(std::min(std::max<size_t>(512, buf_.size() * 2), kMaxResponseHead));
  auto b = asio::buffer(buf_.data() + used_, buf_.size() - used_);
  auto h = [self = shared_from_this()](const error_code& e, size_t n) { self->onRead(e, n); };
  if (tls_) tls_->async_read_some(b, h);
  else sock_.async_read_some(b, h);
}

void ProbeSession::onRead(const error_code& ec, size_t n) {
  if (done_) return;
  if (n > 0) {
    const size_t before = used_;
    used_ += n;
    // Re-parse only when a line may have ended, or while the status line
    // prefix is still being checked: keeps a byte-by-byte drip linear enough.
    const bool newline = std::memchr(buf_.data() + before, '\n', n) != nullptr;
    if ((newline || used_ - head_start_ <= 16) && handleHead()) return;
    if (used_ >= kMaxResponseHead)
      return finish("response_too_large", "no end of the response head in the first " +
                                              std::to_string(kMaxResponseHead) + " bytes");
  }
  if (ec == asio::error::eof || ec == ssl::error::stream_truncated) {
    return finish("malformed_response",
                  used_ == 0 ? "connection closed without a response"
                             : "connection closed after " + std::to_string(used_) +
                                   " bytes, before the end of the response head");
  }
  if (ec) return finish("response_failed", "reading response: " + ec.message());
  readMore();
}

bool ProbeSession::handleHead() {
  for (;;) {
    int status = 0;
    size_t head_len = 0;
    std::string err;
    int r = parseResponseHead(buf_.data() + head_start_, used_ - head_start_, status, err,
                              head_len);
    if (r < 0) {
      finish("malformed_response", err);
      return true;
    }
    if (r == 0) return false;
    if (status >= 100 && status < 200 && status != 101) {  // interim (100, 103): the real one follows
      head_start_ += head_len;
      continue;
    }
    if (codeMatches(spec_.codes, status))
      finish("ok", "HTTP " + std::to_string(status), status);
    else
      finish("bad_status",
             "HTTP " + std::to_string(status) + " (expected " + codesToString(spec_.codes) + ")",
             status);
    return true;
  }
}

void ProbeSession::finish(const char* reason, std::string detail, int status) {
  if (done_) return;
  done_ = true;
  ProbeResult r;
  r.ok = std::strcmp(reason, "ok") == 0;
  r.reason = reason;
  r.status = status;
  r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_);
  r.detail = std::move(detail);
  error_code ec;
  timer_.cancel();
  sock_.close(ec);  // linger {1,0}: RST if connected; a pending SYN is simply dropped
  ProbeCallback cb = std::move(cb_);
  cb_ = nullptr;
  if (cb) cb(r);
}

}  // namespace

void startProbe(asio::io_context& io, const ProbeSpec& spec, ProbeCallback cb,
                ssl::context* tls) {
  auto session = std::make_shared<ProbeSession>(io, spec, std::move(cb), tls);
  // Start from the loop so the callback never runs inside startProbe().
  asio::post(io, [session] { session->start(); });
}

}  // namespace gwlb::probe
