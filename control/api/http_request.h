// The request side of gwlbd's two read-only HTTP listeners (metrics and the
// health endpoint): finding the end of a request head and answering it. Pure
// (no sockets, no Asio, no logging): control/api/metrics_server.cc runs it on the
// connections, tests/fuzz/fuzz_http_request.cc on any bytes.
//
// What is accepted: HTTP/1.x GET and HEAD, one request per connection,
// origin-form targets ("/path?query"); lines may end in CRLF or a lone LF (RFC
// 9112 section 2.2 lets a server accept LF); a client that stops sending
// (half-close) before the blank line is answered on what it sent. Everything
// else gets a status: 400 (no method or target), 405 (other methods), 431
// (head over kHttpMaxRequest bytes), 500 (the handler threw).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace gwlb::ctl {

inline constexpr size_t kHttpMaxRequest = 8192;
// From accept to the end of the response: one deadline, never renewed by a
// byte dripping in (slowloris).
inline constexpr std::chrono::seconds kHttpRequestDeadline{5};
// After the response, unread bytes from the client are drained (so closing
// does not reset the connection under the response) for at most this long.
inline constexpr std::chrono::milliseconds kHttpLinger{1000};
// Open connections per listener; one more closes the one open longest.
inline constexpr size_t kHttpMaxConnections = 64;
// After a failed accept (e.g. out of file descriptors) the next try waits this long.
inline constexpr std::chrono::milliseconds kHttpAcceptRetry{100};

struct HttpReply {
  int status = 200;           // 200, 404, 503, ...
  std::string content_type;
  std::string body;
};

// Answers a GET/HEAD for `path` (the target without its query). May throw:
// httpRespond turns that into 500.
using HttpHandler = std::function<HttpReply(const std::string& path)>;

// One past the blank line that ends the request head in `data`, or npos while
// there is none. Only a blank line ending at or after `from` is looked for
// (the caller passes the previous size, so each byte is scanned about once).
size_t httpHeadEnd(std::string_view data, size_t from = 0);

// The whole response (status line, headers, body; no body for HEAD) to the
// request head `head` (complete, or what came before EOF). `too_large`: the
// head outgrew kHttpMaxRequest (431). Never throws but for std::bad_alloc: a
// throwing handler gives 500 and its message in `*handler_error` (when given).
std::string httpRespond(std::string_view head, bool too_large, const HttpHandler& handler,
                        std::string* handler_error = nullptr);

const char* httpReason(int status);

}  // namespace gwlb::ctl
