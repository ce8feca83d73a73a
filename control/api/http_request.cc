#include "control/api/http_request.h"

#include <exception>

namespace gwlb::ctl {

size_t httpHeadEnd(std::string_view data, size_t from) {
  // A blank line is "\n\n" or "\n\r\n"; one ending at or after `from` starts
  // at most two bytes before it.
  size_t i = from > 2 ? from - 2 : 0;
  for (; i < data.size(); ++i) {
    if (data[i] != '\n') continue;
    if (i + 1 < data.size() && data[i + 1] == '\n') return i + 2;
    if (i + 2 < data.size() && data[i + 1] == '\r' && data[i + 2] == '\n') return i + 3;
  }
  return std::string_view::npos;
}

const char* httpReason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

namespace {

HttpReply plain(int status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body)};
}

}  // namespace

std::string httpRespond(std::string_view head, bool too_large, const HttpHandler& handler,
                        std::string* handler_error) {
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t sp = line.find(' ');
  std::string_view method = line.substr(0, sp);
  bool is_head = sp != std::string_view::npos && method == "HEAD";
  HttpReply r;
  if (too_large) {
    r = plain(431, "request head larger than " + std::to_string(kHttpMaxRequest) + " bytes\n");
  } else if (sp == std::string_view::npos || method.empty()) {
    r = plain(400, "expected: GET /path HTTP/1.1\n");
  } else if (method != "GET" && !is_head) {
    r = plain(405, "only GET and HEAD\n");
  } else {
    std::string_view target = line.substr(sp + 1);
    target = target.substr(0, target.find(' '));
    if (target.empty() || target[0] != '/') {
      r = plain(400, "expected a path starting with /\n");
    } else {
      std::string path(target.substr(0, target.find_first_of("?#")));
      try {
        r = handler(path);
      } catch (const std::exception& e) {
        if (handler_error) *handler_error = e.what();
        r = plain(500, "internal error\n");
      } catch (...) {
        if (handler_error) *handler_error = "unknown exception";
        r = plain(500, "internal error\n");
      }
    }
  }
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + httpReason(r.status) +
                    "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    (r.status == 405 ? "\r\nAllow: GET, HEAD" : "") +
                    "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
  if (!is_head) out += r.body;
  return out;
}

}  // namespace gwlb::ctl
