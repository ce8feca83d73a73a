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
  std::string domain;                      // Host and SNI; "" = address:port as Host, no SNI
  std::vector<CodeRange> codes{{200, 399}};  // success status codes (http_2xx, http_3xx)
  std::chrono::milliseconds timeout{5000};   // whole probe: connect + TLS + response
  std::optional<IpAddr> source;            // bind before connect (management network)
  bool verify_tls = false;                 // verify the certificate (with ca_file)
  std::string ca_file;
};

struct ProbeResult {
  bool ok = false;
  // ok | connect_refused | connect_timeout | connect_failed | tls_handshake_failed |
  // response_timeout | bad_status | malformed_response | response_too_large | bind_failed |
  // response_failed (send/receive error, e.g. reset, after connecting) |
  // invalid_spec (no address, path or domain unusable in a request, no codes)
  std::string reason;
  int status = 0;                          // HTTP status when one was read
  std::chrono::microseconds elapsed{0};
  std::string detail;                      // human text, e.g. "HTTP 503 (expected 200-399)"
};

using ProbeCallback = std::function<void(const ProbeResult&)>;

// Starts one probe. TCP: connect; success on connect, then close with RST
// (SO_LINGER {1,0}). HTTP(S): GET path HTTP/1.1, Host, Connection: close; reads
// at most kMaxResponseHead bytes of status line + headers. The callback fires
// once, no later than timeout plus scheduling slack; sockets are closed.
// `tls` is the TLS client context for HTTPS (one shared context is fine); null
// uses a process-wide default. Per-probe TLS settings (SNI, verify_tls, ca_file
// with a cached store, name check) are applied to each connection, not to `tls`.
// Every probe closes abortively (SO_LINGER {1,0}), so none leaves TIME_WAIT.
// Never throws (except std::bad_alloc); the callback is never run inside
// startProbe() itself.
void startProbe(boost::asio::io_context& io, const ProbeSpec& spec, ProbeCallback cb,
                boost::asio::ssl::context* tls = nullptr);

inline constexpr size_t kMaxResponseHead = 8192;

// Parses the start of an HTTP response (status line and headers, up to and
// including the blank line). Returns 1 with the status when complete, 0 when
// more bytes are needed, -1 when malformed (reason in `err`). Pure; fuzzable.
// A lone LF ends a line as well as CRLF (RFC 9112 2.2); a bare CR, a control
// character, a header line without ':' or a status code outside 100..599 are
// malformed. Garbage fails as soon as the first bytes disagree with "HTTP/1.".
int parseResponseHead(const char* data, size_t len, int& status, std::string& err);
// Same, and on 1 sets `head_len` to the bytes of the head including the blank line.
int parseResponseHead(const char* data, size_t len, int& status, std::string& err,
                      size_t& head_len);

// "http_2xx", "http_3xx", "http_4xx", "http_5xx", "200", "200-299": false with
// `err` on anything else or an empty list.
bool parseHttpCodes(const std::vector<std::string>& in, std::vector<CodeRange>& out,
                    std::string& err);

// "200-399,404" for details and JSON.
std::string codesToString(const std::vector<CodeRange>& codes);
bool codeMatches(const std::vector<CodeRange>& codes, int status);

}  // namespace gwlb::probe
