// One-shot health probes (TCP, HTTP, HTTPS) over kernel sockets with Boost.Asio.
// Probes only report {ok, reason, latency}; judging is HealthTracker's job.
// Control thread: startProbe() must be called on the thread running `io`, and
// the callback runs there exactly once.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/net_types.h"

namespace gwlb::probe {

enum class Protocol : uint8_t { kTcp, kHttp, kHttps };
const char* toString(Protocol p);
std::optional<Protocol> parseProtocol(std::string_view s);  // "tcp", "http", "https"

struct CodeRange {
  int lo, hi;  // inclusive
};

struct ProbeSpec {
  Protocol protocol = Protocol::kTcp;
  IpAddr address;
  uint16_t port = 80;
  std::string path = "/";                  // http(s)
  std::string domain;                      // Host as given; SNI without a trailing dot (sniName);
                                           // "" = address:port as Host, no SNI
  std::vector<CodeRange> codes{{200, 399}};  // success status codes (http_2xx, http_3xx)
  std::chrono::milliseconds timeout{5000};   // whole probe: connect + TLS + response
  std::optional<IpAddr> source;            // bind before connect
  std::string device;                      // "" or the interface the socket is bound to
                                           // (SO_BINDTODEVICE): it leaves by that device only
  bool verify_tls = false;                 // verify the certificate (with ca_file)
  std::string ca_file;
  // http(s): ask on a connection kept from this target's last probe (HTTP
  // keep-alive), after a fresh TCP connect that proves the appliance still
  // accepts. Needs a KeptConnections given to startProbe; see below.
  bool keep_alive = false;
};

struct ProbeResult {
  bool ok = false;
  // ok | connect_refused | connect_timeout | connect_failed | tls_handshake_failed |
  // response_timeout | bad_status | malformed_response | bind_failed (source or device) |
  // response_too_large (interim 1xx heads over StatusReader::kMaxInterimBytes) |
  // response_failed (send/receive error, e.g. reset, after connecting) |
  // invalid_spec (no address, path or domain unusable in a request, no codes)
  std::string reason;
  int status = 0;                          // HTTP status when one was read
  std::chrono::microseconds elapsed{0};
  std::string detail;                      // human text, e.g. "HTTP 503 (expected 200-399)"
  bool handshake = false;                  // https: this probe completed a TLS handshake
  bool resumed = false;                    // https: that handshake resumed an earlier probe's
                                           // TLS session (no certificate, no full key exchange)
  bool reused = false;                     // keep_alive: answered on a connection kept from
                                           // an earlier probe (after a fresh TCP connect)
};

using ProbeCallback = std::function<void(const ProbeResult&)>;

// The connections keep_alive probes keep between probes, one per target
// (address, port, protocol, SNI and verification), for one io_context: the
// owner (gwlbd's HealthChecker) destroys it before that io_context. Probes
// in flight hold it weakly: a probe that ends after it is gone closes its
// connection. A kept connection is used again only while it is younger
// than kMaxIdle since its last response and has served fewer than
// kMaxRequests probes; then the next probe opens (and resumes) a new one, so
// the TLS handshake of a new connection is still proven at least that
// often. Nor is it used when the appliance closed it while it was idle (its
// own keep-alive timeout, shorter than the interval) or sent anything on it
// unasked: a look at the socket before each use (no byte read) finds that,
// and the probe asks on its fresh connection instead of sending into a
// closed one. It holds at most `capacity` connections (by default half of
// the open-file limit, at most kMaxCapacity): beyond, a probe closes its
// connection as without keep_alive. counts() says what became of them.
class PreparedProbe;
class KeptConnections {
 public:
  static constexpr std::chrono::seconds kMaxIdle{30};
  static constexpr uint32_t kMaxRequests = 100;
  static constexpr size_t kMaxCapacity = 65536;
  // capacity 0: from RLIMIT_NOFILE; max_idle: kMaxIdle but in tests.
  explicit KeptConnections(size_t capacity = 0, std::chrono::milliseconds max_idle = kMaxIdle);
  ~KeptConnections();
  KeptConnections(const KeptConnections&) = delete;
  KeptConnections& operator=(const KeptConnections&) = delete;
  size_t size() const;
  size_t capacity() const { return capacity_; }
  // What became of kept connections, since this pool was made.
  struct Counts {
    uint64_t reused = 0;   // given to a probe to ask on
    uint64_t closed = 0;   // found closed by the appliance (or with bytes nobody
                           // asked for) when a probe came for it: not used
    uint64_t stale = 0;    // failed before any byte of its response: the probe
                           // asked again on its fresh connection
    uint64_t expired = 0;  // closed unused: idle for max_idle
    uint64_t refused = 0;  // not kept: the pool was full
  };
  const Counts& counts() const { return counts_; }
  void noteStale() { ++counts_.stale; }
  // The session's side (probe.cc): opaque here.
  struct Conn;
  std::unique_ptr<Conn> take(const std::string& key, std::chrono::steady_clock::time_point now);
  void put(const std::string& key, std::unique_ptr<Conn> c, std::chrono::steady_clock::time_point now);
  // Closes the connection kept for `p`'s target (its appliance removed, or
  // its check changed or paused); idle ones of targets gone are closed by a
  // sweep at most once a second as well.
  void drop(const PreparedProbe& p);
  void clear();

 private:
  void sweep(std::chrono::steady_clock::time_point now);
  struct Entry;
  std::map<std::string, std::unique_ptr<Entry>> map_;
  size_t capacity_;
  std::chrono::milliseconds max_idle_;
  Counts counts_;
  std::chrono::steady_clock::time_point swept_{};
};

// Starts one probe. TCP: connect; success on connect, then close with RST
// (SO_LINGER {1,0}). HTTP(S): GET path HTTP/1.1, Host, Connection: close; the
// verdict is taken on the final response's status line (StatusReader): its
// headers and body are never read, so a 200 with large headers is a 200
// (keep_alive: the request has no Connection: close, and the rest of the
// response is read as far as ResponseFramer needs, after the verdict).
// The callback fires once, no later than timeout plus scheduling slack;
// sockets are closed.
// `tls` is the TLS client context for HTTPS (one shared context is fine); null
// uses a process-wide default. Per-probe TLS settings (SNI, verify_tls, ca_file
// with a cached store, name check) are applied to each connection, not to `tls`.
// Every probe closes abortively (SO_LINGER {1,0}), so none leaves TIME_WAIT.
// Each probe opens a connection of its own: what a check proves is that the
// appliance accepts new connections, as new flows need, and an old
// connection would still answer after the appliance stopped accepting (a
// full accept queue, a listener gone, a SYN flood defence). With keep_alive
// (and a KeptConnections) that connection is only connected and reset, and
// the request goes on the target's kept one (or, when the appliance closed
// that meanwhile, on the fresh one after all). What is worth keeping between
// probes besides is the TLS session: an HTTPS probe resumes the session of the last one
// that got a response from the same target (address, port, SNI,
// verification and CA file), which spares both sides the certificate and
// key exchange; a failed handshake forgets it, so the next one is full.
// Never throws (except std::bad_alloc); the callback is never run inside
// startProbe() itself.
void startProbe(boost::asio::io_context& io, const ProbeSpec& spec, ProbeCallback cb,
                boost::asio::ssl::context* tls = nullptr);

// A spec made ready once for every probe of it: checked, and its target
// endpoint, HTTP request, SNI and TLS session key built, so that a probe
// copies and builds none of them (a checker probing thousands of appliances
// a second prepares each appliance's spec when its settings change).
// Immutable: probes in flight share it. A spec that is not valid still
// prepares; each of its probes then fails with invalid_spec, as above.
class PreparedProbe;
std::shared_ptr<const PreparedProbe> prepareProbe(const ProbeSpec& spec);
const ProbeSpec& specOf(const PreparedProbe& p);
// The same as startProbe(io, spec, ...) with the spec prepared.
void startProbe(boost::asio::io_context& io, std::shared_ptr<const PreparedProbe> prepared, ProbeCallback cb,
                boost::asio::ssl::context* tls = nullptr);
// The same with kept connections for a spec with keep_alive (null: none
// kept, every probe opens its own as without keep_alive). A probe keeps its
// connection only if the caller still holds `prepared` when it ends.
void startProbe(boost::asio::io_context& io, std::shared_ptr<const PreparedProbe> prepared, ProbeCallback cb,
                boost::asio::ssl::context* tls, const std::shared_ptr<KeptConnections>& kept);

// The host name a probe sends as SNI and checks the certificate against:
// `domain` without a trailing dot (RFC 6066 section 3: "without a trailing
// dot"); "" when there is none or it is an address literal (no SNI then).
std::string sniName(const std::string& domain);

// Reads the start of an HTTP/1.x response as it arrives, only as far as a
// health check needs. Interim heads (1xx other than 101) are skipped without
// being kept; the final response is judged on its status line: version, code
// and the byte after the code. Its reason phrase, headers and body are never
// read, so no size limit applies to them. Pure; fuzzable.
// Malformed: anything that is not "HTTP/1.<digit> <100..599>" followed by a
// space, CR or LF (garbage fails at its first wrong byte), or interim heads
// longer than kMaxInterimBytes in all (tooLarge()).
class StatusReader {
 public:
  static constexpr size_t kMaxInterimBytes = 64 * 1024;
  static constexpr size_t kStatusPrefix = 13;  // "HTTP/1.1 200 "

  // Feeds the next n bytes. Returns 1 once the final status is known
  // (status()), 0 when more bytes are needed, -1 when malformed (error()).
  // Once 1 or -1, it stays so and takes no more bytes.
  int feed(const char* data, size_t n);
  int result() const { return result_; }
  int status() const { return status_; }
  const std::string& error() const { return error_; }
  bool tooLarge() const { return too_large_; }
  // Bytes taken so far: on 1, up to and including the byte after the final code.
  size_t consumed() const { return consumed_; }
  // Interim (1xx) responses skipped so far.
  unsigned interim() const { return interim_; }

 private:
  char line_[kStatusPrefix] = {};
  size_t line_len_ = 0;      // bytes of the current status line prefix
  bool skipping_ = false;    // inside an interim head, looking for its blank line
  bool line_empty_ = false;  // skipping: the current line has no content yet
  size_t interim_bytes_ = 0;
  unsigned interim_ = 0;
  size_t consumed_ = 0;
  int result_ = 0;
  int status_ = 0;
  bool too_large_ = false;
  std::string error_;
};

// After a final status line (StatusReader), where the response ends, so
// that its connection can carry the next request (keep_alive). Fed the bytes
// after the ones StatusReader took. Only a response whose end is known from
// its head is framed: a Content-Length up to kMaxBody, or a status that has
// no body (1xx, 204, 304); chunked or unframed bodies, `Connection: close`,
// a head over kMaxHeadBytes or bytes beyond the response end it as not
// reusable (the connection is then closed; the verdict stands). Pure; fuzzable.
class ResponseFramer {
 public:
  static constexpr size_t kMaxHeadBytes = 16 * 1024;
  static constexpr size_t kMaxBody = 64 * 1024;
  // `status_line_ended`: the byte after the code was the status line's LF.
  explicit ResponseFramer(int status = 200, bool status_line_ended = false)
      : status_(status), first_line_(!status_line_ended) {}
  // Returns 1 when the response ended exactly here and the connection is
  // reusable, 0 when more bytes are needed, -1 when it is not reusable
  // (why()). Once 1 or -1, it stays so; bytes fed after 1 turn it to -1.
  int feed(const char* data, size_t n);
  int result() const { return result_; }
  const std::string& why() const { return why_; }

 private:
  int fail(std::string why);
  void headerLine();

  int status_;
  std::string line_;        // the current header line (bounded by kMaxHeadBytes)
  size_t head_bytes_ = 0;
  bool in_body_ = false;
  bool first_line_;         // the rest of the status line comes first
  int64_t length_ = -1;     // Content-Length; -1: none seen
  uint64_t body_left_ = 0;
  bool close_ = false, chunked_ = false, bad_length_ = false;
  int result_ = 0;
  std::string why_;
};

// "http_2xx", "http_3xx", "http_4xx", "http_5xx", "200", "200-299": false with
// `err` on anything else or an empty list.
bool parseHttpCodes(const std::vector<std::string>& in, std::vector<CodeRange>& out,
                    std::string& err);

// "200-399,404" for details and JSON.
std::string codesToString(const std::vector<CodeRange>& codes);
bool codeMatches(const std::vector<CodeRange>& codes, int status);

}  // namespace gwlb::probe
