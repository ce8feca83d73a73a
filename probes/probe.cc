// One-shot health probes: one ProbeSession per probe, one deadline timer, every
// socket operation asynchronous. Nothing here blocks, sleeps or starts a thread,
// so one control thread can keep thousands of probes in flight.
#include "probes/probe.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
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

// The TLS session of each target's last probe that got a response, resumed
// by its next probe. Bounded: past kMaxSessions targets it starts afresh.
class TlsSessions {
 public:
  static constexpr size_t kMaxSessions = 65536;
  ~TlsSessions() {
    for (auto& [k, s] : map_) SSL_SESSION_free(s);
  }
  // A new reference to the session for `key`, or null.
  SSL_SESSION* get(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    SSL_SESSION_up_ref(it->second);
    return it->second;
  }
  // Keeps `s` (takes its reference); null forgets the key.
  void put(const std::string& key, SSL_SESSION* s) {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      SSL_SESSION_free(it->second);
      map_.erase(it);
    }
    if (!s) return;
    if (map_.size() >= kMaxSessions) {
      for (auto& [k, old] : map_) SSL_SESSION_free(old);
      map_.clear();
    }
    map_.emplace(key, s);
  }

 private:
  std::mutex mu_;
  std::map<std::string, SSL_SESSION*> map_;
};

TlsSessions& tlsSessions() {
  static TlsSessions sessions;
  return sessions;
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

}  // namespace

// ---------------------------------------------------------------------------
// A spec made ready for its probes

class PreparedProbe {
 public:
  explicit PreparedProbe(const ProbeSpec& s);
  ProbeSpec spec;
  std::string invalid;  // why each probe fails with invalid_spec; "" when valid
  tcp::endpoint target;
  std::string request;      // http(s): the whole GET
  std::string sni;          // https: sniName(domain)
  std::string session_key;  // https: whose TLS session a probe resumes and keeps
  std::string conn_key;     // keep_alive: whose kept connection a probe asks on
};

PreparedProbe::PreparedProbe(const ProbeSpec& s) : spec(s) {
  if (!spec.address.isV4() && !spec.address.isV6()) {
    invalid = "no target address";
    return;
  }
  if (spec.protocol != Protocol::kTcp) {
    if (spec.path.empty() || spec.path[0] != '/' || !safeForRequest(spec.path)) {
      invalid = "path must start with '/' and hold no spaces or controls";
      return;
    }
    if (!safeForRequest(spec.domain)) {
      invalid = "domain holds spaces or control characters";
      return;
    }
    if (spec.codes.empty()) {
      invalid = "no expected HTTP codes";
      return;
    }
  }
  if (spec.timeout.count() <= 0) {
    invalid = "timeout must be positive";
    return;
  }
  target = tcp::endpoint(toAsio(spec.address), spec.port);
  if (spec.protocol == Protocol::kTcp) return;
  std::string host = spec.domain;
  if (host.empty()) {
    host = spec.address.isV6() ? "[" + spec.address.str() + "]" : spec.address.str();
    host += ":" + std::to_string(spec.port);
  }
  request = "GET " + spec.path + " HTTP/1.1\r\nHost: " + host +
            "\r\nUser-Agent: gwlb-probe\r\nAccept: */*\r\n" +
            (spec.keep_alive ? "" : "Connection: close\r\n") + "\r\n";
  if (spec.protocol == Protocol::kHttps) {
    sni = sniName(spec.domain);
    // A session is only resumed by a probe that would have checked the
    // certificate the same way: the key holds all that decides it.
    session_key = spec.address.str() + "|" + std::to_string(spec.port) + "|" + sni + "|" +
                  (spec.verify_tls ? "v|" + spec.ca_file : "-");
  }
  // A kept connection is asked only by a probe that would have opened it the
  // same way (and checked its certificate the same way).
  if (spec.keep_alive)
    conn_key = std::string(toString(spec.protocol)) + "|" + spec.address.str() + "|" + std::to_string(spec.port) +
               "|" + sni + "|" + (spec.verify_tls ? "v|" + spec.ca_file : "-") + "|" + spec.device + "|" +
               (spec.source ? spec.source->str() : "");
}

// ---------------------------------------------------------------------------
// Connections kept between probes (keep_alive)

// A connection of a probe: its socket and, for HTTPS, its TLS stream on it.
// Heap-held, so that the stream's reference to the socket stays good while
// the connection moves from a probe to KeptConnections and to the next one.
struct KeptConnections::Conn {
  explicit Conn(asio::io_context& io) : sock(io) {}
  // Its operations still pending complete with operation_aborted; the TLS
  // stream must outlive them (its operations use it to the end), so a probe
  // closes its connections and frees them with itself.
  void close() {
    // Closed with a reset, never a close_notify: marked as shut down all the
    // same, or freeing the SSL would mark its session unusable.
    if (tls) SSL_set_shutdown(tls->native_handle(), SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    error_code ec;
    sock.close(ec);  // linger {1,0}: RST if connected; a pending SYN is simply dropped
  }
  ~Conn() { close(); }
  tcp::socket sock;
  std::unique_ptr<ssl::stream<tcp::socket&>> tls;
  uint32_t requests = 0;  // responses read on it
};

struct KeptConnections::Entry {
  std::unique_ptr<Conn> conn;
  Clock::time_point last;  // its last response
};

namespace {

// ---------------------------------------------------------------------------
// One probe in flight

class ProbeSession : public std::enable_shared_from_this<ProbeSession> {
 public:
  using Conn = KeptConnections::Conn;
  ProbeSession(asio::io_context& io, std::shared_ptr<const PreparedProbe> prepared, ProbeCallback cb,
               ssl::context* tls, std::weak_ptr<KeptConnections> kept, bool keep)
      : prep_(std::move(prepared)), spec_(prep_->spec), cb_(std::move(cb)), tls_ctx_(tls),
        fresh_(std::make_unique<Conn>(io)), kept_(std::move(kept)), keep_(keep), timer_(io) {}

  void start();

 private:
  enum class Phase : uint8_t { kConnect, kTls, kRequest, kResponse };

  void onTimeout();
  void onConnect(const error_code& ec);
  void useFresh();  // the request goes on the fresh connection
  void startTls();
  void onHandshake(const error_code& ec);
  void sendRequest();
  void onWrite(const error_code& ec);
  void readMore();
  void onRead(const error_code& ec, size_t n);
  bool staleKept(const error_code& ec);  // the kept connection is gone: use the fresh one
  void judge();  // the status is known: finish with ok or bad_status
  void keepTlsSession();
  void finish(const char* reason, std::string detail, int status = 0);

  std::string timeoutText() const { return std::to_string(spec_.timeout.count()) + " ms"; }

  std::shared_ptr<const PreparedProbe> prep_;
  const ProbeSpec& spec_;  // prep_'s
  ProbeCallback cb_;
  ssl::context* tls_ctx_;
  std::unique_ptr<Conn> fresh_;  // this probe's own connection (its connect is the proof)
  std::unique_ptr<Conn> reused_;  // keep_alive: the connection kept from an earlier probe
  Conn* conn_ = nullptr;          // the one the request goes on: fresh_ or reused_
  std::weak_ptr<KeptConnections> kept_;
  bool keep_;  // keep_alive with a KeptConnections
  asio::steady_timer timer_;
  std::array<char, 512> buf_{};  // one read; the reader keeps no bytes beyond 13
  StatusReader reader_;
  std::optional<ResponseFramer> framer_;  // keep_: where the response ends
  Clock::time_point start_;
  Phase phase_ = Phase::kConnect;
  bool handshook_ = false;  // a TLS handshake was done by this probe
  bool done_ = false;
};

void ProbeSession::start() {
  start_ = Clock::now();
  if (!prep_->invalid.empty()) return finish("invalid_spec", prep_->invalid);

  tcp::socket& sock = fresh_->sock;
  error_code ec;
  sock.open(prep_->target.protocol(), ec);
  if (ec) return finish("connect_failed", "socket: " + ec.message());
  // Abortive close for every probe: TCP success ends with RST as the domain
  // asks, and no probe leaves TIME_WAIT behind on the prober.
  sock.set_option(asio::socket_base::linger(true, 0), ec);
  if (!spec_.device.empty()) {
    // Bound to the device, the kernel routes the probe out of it or not at
    // all (no other route applies): docs/deploy.md "Where probes travel".
    if (::setsockopt(sock.native_handle(), SOL_SOCKET, SO_BINDTODEVICE, spec_.device.c_str(),
                     socklen_t(spec_.device.size())) != 0)
      return finish("bind_failed", "interface " + spec_.device + ": " + std::strerror(errno));
  }
  if (spec_.source) {
    if (spec_.source->family != spec_.address.family)
      return finish("bind_failed", "source " + spec_.source->str() + " is not the family of " +
                                       spec_.address.str());
    sock.bind(tcp::endpoint(toAsio(*spec_.source), 0), ec);
    if (ec) return finish("bind_failed", "bind " + spec_.source->str() + ": " + ec.message());
  }

  timer_.expires_after(spec_.timeout);
  timer_.async_wait([self = shared_from_this()](const error_code& e) {
    if (!e) self->onTimeout();
  });
  sock.async_connect(prep_->target, [self = shared_from_this()](const error_code& e) { self->onConnect(e); });
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
      // keep_alive: the status came and the verdict stands; only the end of
      // the response did not (the connection is not kept).
      if (reader_.result() > 0) return judge();
      return finish("response_timeout", "no final status line within " + timeoutText() +
                                            " (" + std::to_string(reader_.consumed()) +
                                            " bytes received)");
  }
}

void ProbeSession::onConnect(const error_code& ec) {
  if (done_) return;
  if (ec == asio::error::connection_refused) return finish("connect_refused", "connection refused");
  if (ec == asio::error::timed_out) return finish("connect_timeout", "connect: " + ec.message());
  if (ec) return finish("connect_failed", "connect: " + ec.message());
  if (spec_.protocol == Protocol::kTcp) return finish("ok", "connected");
  // keep_alive: the fresh connection proved the appliance accepts; the
  // request goes on the connection kept from its last probe, if there is one.
  if (keep_)
    if (auto k = kept_.lock()) reused_ = k->take(prep_->conn_key, Clock::now());
  if (reused_) {
    conn_ = reused_.get();
    return sendRequest();
  }
  useFresh();
}

void ProbeSession::useFresh() {
  conn_ = fresh_.get();
  if (spec_.protocol == Protocol::kHttps) return startTls();
  sendRequest();
}

void ProbeSession::startTls() {
  phase_ = Phase::kTls;
  try {
    fresh_->tls = std::make_unique<ssl::stream<tcp::socket&>>(fresh_->sock,
                                                              tls_ctx_ ? *tls_ctx_ : defaultTlsContext());
  } catch (const boost::system::system_error& e) {  // SSL_new failed
    return finish("tls_handshake_failed", std::string("TLS setup: ") + e.what());
  }
  ssl::stream<tcp::socket&>& tls = *fresh_->tls;
  SSL* s = tls.native_handle();
  error_code ec;
  // SNI carries host names only, without a trailing dot (RFC 6066 section 3),
  // never address literals.
  const std::string& sni = prep_->sni;
  if (!sni.empty() && SSL_set_tlsext_host_name(s, const_cast<char*>(sni.c_str())) != 1)
    return finish("tls_handshake_failed", "cannot set SNI: " + opensslError());
  if (spec_.verify_tls) {
    tls.set_verify_mode(ssl::verify_peer, ec);
    if (!spec_.ca_file.empty()) {
      std::string err;
      X509_STORE* store = caStore(spec_.ca_file, err);
      if (!store) return finish("tls_handshake_failed", err);
      SSL_set1_verify_cert_store(s, store);
      X509_STORE_free(store);  // the SSL holds its own reference
    }
    X509_VERIFY_PARAM* param = SSL_get0_param(s);
    int set = 0;
    if (!sni.empty()) {
      set = X509_VERIFY_PARAM_set1_host(param, sni.c_str(), 0);
    } else {
      // An address literal as domain is checked as an address; else the appliance's.
      std::string lit = spec_.domain;
      while (!lit.empty() && lit.back() == '.') lit.pop_back();
      const IpAddr ip = IpAddr::parse(lit).value_or(spec_.address);
      set = X509_VERIFY_PARAM_set1_ip(param, ip.b.data(), ip.isV4() ? 4 : 16);
    }
    if (set != 1) return finish("tls_handshake_failed", "cannot set name check: " + opensslError());
  } else {
    tls.set_verify_mode(ssl::verify_none, ec);
  }
  if (SSL_SESSION* kept = tlsSessions().get(prep_->session_key)) {
    SSL_set_session(s, kept);  // the SSL takes its own reference
    SSL_SESSION_free(kept);
  }
  tls.async_handshake(ssl::stream_base::client,
                      [self = shared_from_this()](const error_code& e) { self->onHandshake(e); });
}

void ProbeSession::onHandshake(const error_code& ec) {
  if (done_) return;
  if (ec) {
    tlsSessions().put(prep_->session_key, nullptr);  // the next handshake is a full one
    std::string detail = "TLS handshake: " + ec.message();
    if (spec_.verify_tls) {
      long v = SSL_get_verify_result(fresh_->tls->native_handle());
      if (v != X509_V_OK) detail += std::string(" (") + X509_verify_cert_error_string(v) + ")";
    }
    return finish("tls_handshake_failed", detail);
  }
  handshook_ = true;
  sendRequest();
}

void ProbeSession::sendRequest() {
  phase_ = Phase::kRequest;
  auto h = [self = shared_from_this()](const error_code& e, size_t) { self->onWrite(e); };
  if (conn_->tls) asio::async_write(*conn_->tls, asio::buffer(prep_->request), h);
  else asio::async_write(conn_->sock, asio::buffer(prep_->request), h);
}

// A kept connection that fails before any byte of its response came was
// closed by the appliance while it was idle (its keep-alive timeout, a
// restart): not a verdict. The request goes again, on the fresh connection.
bool ProbeSession::staleKept(const error_code& ec) {
  if (!ec || conn_ != reused_.get() || reader_.consumed() > 0) return false;
  reused_->close();  // freed with the probe (see Conn::close)
  if (auto k = kept_.lock()) k->noteStale();
  reader_ = StatusReader();
  useFresh();
  return true;
}

void ProbeSession::onWrite(const error_code& ec) {
  if (done_) return;
  if (staleKept(ec)) return;
  if (ec) return finish("response_failed", "sending request: " + ec.message());
  phase_ = Phase::kResponse;
  readMore();
}

void ProbeSession::readMore() {
  auto b = asio::buffer(buf_);
  auto h = [self = shared_from_this()](const error_code& e, size_t n) { self->onRead(e, n); };
  if (conn_->tls) conn_->tls->async_read_some(b, h);
  else conn_->sock.async_read_some(b, h);
}

void ProbeSession::onRead(const error_code& ec, size_t n) {
  if (done_) return;
  n = std::min(n, buf_.size());
  if (n > 0 && framer_) {  // keep_alive: the rest of the response
    if (framer_->feed(buf_.data(), n) != 0) return judge();
  } else if (n > 0) {
    const size_t before = reader_.consumed();
    int r = reader_.feed(buf_.data(), n);
    if (r < 0)
      return finish(reader_.tooLarge() ? "response_too_large" : "malformed_response",
                    reader_.error());
    if (r > 0) {
      if (!keep_) return judge();
      // Where this response ends decides whether its connection is kept.
      const size_t took = reader_.consumed() - before;
      framer_.emplace(reader_.status(), buf_[took - 1] == '\n');
      if (framer_->feed(buf_.data() + took, n - took) != 0) return judge();
    }
  }
  if (framer_ && ec) return judge();  // the verdict stands; the connection is not kept
  if (staleKept(ec)) return;
  if (ec == asio::error::eof || ec == ssl::error::stream_truncated) {
    return finish("malformed_response",
                  reader_.consumed() == 0
                      ? "connection closed without a response"
                      : "connection closed after " + std::to_string(reader_.consumed()) +
                            " bytes, before a final status line");
  }
  if (ec) return finish("response_failed", "reading response: " + ec.message());
  readMore();
}

void ProbeSession::judge() {
  const int status = reader_.status();
  if (codeMatches(spec_.codes, status))
    finish("ok", "HTTP " + std::to_string(status), status);
  else
    finish("bad_status",
           "HTTP " + std::to_string(status) + " (expected " + codesToString(spec_.codes) + ")",
           status);
}

// A response came over a connection this probe's handshake opened: its TLS
// session is kept for the target's next handshake. (TLS 1.3 tickets come
// after the handshake; by the response they are in.)
void ProbeSession::keepTlsSession() {
  SSL* s = fresh_->tls->native_handle();
  SSL_SESSION* kept = SSL_get1_session(s);
  if (kept && SSL_SESSION_is_resumable(kept) != 1) {
    SSL_SESSION_free(kept);
    kept = nullptr;
  }
  tlsSessions().put(prep_->session_key, kept);
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
  r.reused = conn_ && conn_ == reused_.get();
  timer_.cancel();
  if (handshook_) {
    r.handshake = true;
    r.resumed = SSL_session_reused(fresh_->tls->native_handle()) == 1;
    if (status != 0) keepTlsSession();
  }
  // keep_alive: a connection whose response ended exactly (nothing pending
  // on it) is kept for the target's next probe, until it has served
  // kMaxRequests, and only while the caller still holds the prepared spec
  // (an appliance removed or changed meanwhile: its checker let go of it).
  // Every other connection closes with a reset, and is freed with the probe
  // once its pending operations have completed.
  if (conn_ && framer_ && framer_->result() == 1 && ++conn_->requests < KeptConnections::kMaxRequests &&
      prep_.use_count() > 1)
    if (auto k = kept_.lock())
      k->put(prep_->conn_key, conn_ == reused_.get() ? std::move(reused_) : std::move(fresh_), Clock::now());
  if (reused_) reused_->close();
  if (fresh_) fresh_->close();
  ProbeCallback cb = std::move(cb_);
  cb_ = nullptr;
  if (cb) cb(r);
}

}  // namespace

std::string sniName(const std::string& domain) {
  std::string n = domain;
  while (!n.empty() && n.back() == '.') n.pop_back();
  if (IpAddr::parse(n).has_value()) return "";
  return n;
}

std::shared_ptr<const PreparedProbe> prepareProbe(const ProbeSpec& spec) {
  return std::make_shared<const PreparedProbe>(spec);
}

const ProbeSpec& specOf(const PreparedProbe& p) { return p.spec; }

void startProbe(asio::io_context& io, const ProbeSpec& spec, ProbeCallback cb,
                ssl::context* tls) {
  startProbe(io, prepareProbe(spec), std::move(cb), tls);
}

void startProbe(asio::io_context& io, std::shared_ptr<const PreparedProbe> prepared, ProbeCallback cb,
                ssl::context* tls) {
  startProbe(io, std::move(prepared), std::move(cb), tls, nullptr);
}

void startProbe(asio::io_context& io, std::shared_ptr<const PreparedProbe> prepared, ProbeCallback cb,
                ssl::context* tls, const std::shared_ptr<KeptConnections>& kept) {
  const bool keep = kept && prepared->spec.keep_alive && !prepared->conn_key.empty();
  auto session = std::make_shared<ProbeSession>(io, std::move(prepared), std::move(cb), tls, kept, keep);
  // Start from the loop so the callback never runs inside startProbe().
  asio::post(io, [session] { session->start(); });
}

KeptConnections::KeptConnections(size_t capacity, std::chrono::milliseconds max_idle)
    : capacity_(capacity), max_idle_(max_idle) {
  if (capacity_ == 0) {
    // Each kept connection holds a descriptor: at most half of the limit,
    // so that probes' own sockets and the rest of the process still open.
    struct rlimit rl {};
    capacity_ = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? size_t(rl.rlim_cur / 2)
                                                                                   : kMaxCapacity;
  }
  capacity_ = std::min(capacity_, kMaxCapacity);
}

KeptConnections::~KeptConnections() = default;

size_t KeptConnections::size() const { return map_.size(); }

void KeptConnections::clear() { map_.clear(); }

void KeptConnections::drop(const PreparedProbe& p) {
  if (!p.conn_key.empty()) map_.erase(p.conn_key);
}

std::unique_ptr<KeptConnections::Conn> KeptConnections::take(const std::string& key, Clock::time_point now) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  std::unique_ptr<Entry> e = std::move(it->second);
  map_.erase(it);
  if (now - e->last >= max_idle_) {
    ++counts_.expired;
    return nullptr;
  }
  // An idle kept connection has nothing to read: a response ended exactly
  // where it was kept. The appliance's FIN or reset, or any byte it sent
  // since (TLS: its close_notify before the FIN), means it is not usable.
  // MSG_PEEK reads nothing, so a connection found alive is untouched.
  char byte;
  const ssize_t got = ::recv(e->conn->sock.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
    ++counts_.closed;
    return nullptr;
  }
  ++counts_.reused;
  return std::move(e->conn);
}

void KeptConnections::put(const std::string& key, std::unique_ptr<Conn> c, Clock::time_point now) {
  if (now - swept_ >= std::chrono::seconds(1)) sweep(now);
  auto it = map_.find(key);
  if (it == map_.end() && map_.size() >= capacity_) {
    ++counts_.refused;
    return;  // c closes
  }
  auto e = std::make_unique<Entry>();
  e->conn = std::move(c);
  e->last = now;
  if (it == map_.end()) map_.emplace(key, std::move(e));
  else it->second = std::move(e);  // a probe in flight alongside: the older closes
}

// Connections of targets no longer probed (removed, or their settings
// changed) are closed once idle for max_idle.
void KeptConnections::sweep(Clock::time_point now) {
  swept_ = now;
  for (auto it = map_.begin(); it != map_.end();) {
    if (now - it->second->last >= max_idle_) {
      ++counts_.expired;
      it = map_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace gwlb::probe
