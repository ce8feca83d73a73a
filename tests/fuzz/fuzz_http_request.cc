// Fuzz target 7: gwlbd's HTTP listeners (metrics and the health endpoint).
// Any bytes are what a client sends on one connection; the first byte says
// which listener (bit 0) and how the bytes arrive (bits 1..7: chunk size
// 1..128); the rest is the stream. It is read as the session in
// control/api/http_server.cc reads it: chunks appended up to kHttpMaxRequest
// + 1 bytes, httpHeadEnd() from the previous size, 431 past the limit, and at
// the end of the bytes (the client's EOF) the head so far is answered, or
// nothing when there is none. The answer comes from httpRespond() with the
// handler each listener has in gwlbd: /metrics (a fixed body) or
// destinationsReply() over two destinations ("inspect" healthy, "edge" not).
// Invariants (docs/fuzzing.md):
//  - nothing throws; the handler never gets to 500;
//  - the response is "HTTP/1.1 NNN Reason\r\n" + headers + "\r\n\r\n" with NNN
//    one of 200 400 404 405 431 503; Content-Length is the body's length
//    (HEAD: the length GET would send, and no body);
//  - the whole response is valid UTF-8 (header values included) and a JSON
//    body parses;
//  - the head end found chunk by chunk is the one found in one pass;
//    GET /destinations/NAME answers 200 exactly for inspect, 503 for edge;
//  - the same request answers the same bytes.
#include <string>
#include <string_view>
#include <vector>

#include "control/api/health_endpoint.h"
#include "control/api/http_request.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb::ctl;

namespace {

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c >> 5) == 6) {
      n = 1, cp = c & 0x1F;
    } else if ((c >> 4) == 14) {
      n = 2, cp = c & 0x0F;
    } else if ((c >> 3) == 30) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 2) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += n + 1;
  }
  return true;
}

const std::vector<RegionTracker::Listener>& destinations() {
  static const std::vector<RegionTracker::Listener> ls = [] {
    std::vector<RegionTracker::Listener> v(2);
    v[0].name = "inspect";
    v[0].destination_healthy = true;
    v[0].reason = "fw-east is healthy";
    v[1].name = "edge";
    v[1].destination_healthy = false;
    v[1].reason = "every region is unhealthy";
    return v;
  }();
  return ls;
}

HttpHandler handlerFor(bool metrics) {
  if (metrics)
    return [](const std::string& path) {
      if (path == "/metrics")
        return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", "gwlb_uptime_seconds 1\n"};
      return HttpReply{404, "text/plain; charset=utf-8", "only /metrics is served\n"};
    };
  return [](const std::string& path) {
    return destinationsReply(path, destinations(), [](const RegionTracker::Listener& l) {
      return nlohmann::json{{"name", l.name}, {"healthy", l.destination_healthy}, {"reason", l.reason}};
    });
  };
}

// The session's reading: returns the response, or "" when none is sent.
std::string serve(std::string_view stream, size_t chunk, const HttpHandler& h, size_t& head_end) {
  std::string req;
  head_end = std::string::npos;
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t n = std::min(chunk, stream.size() - pos);
    size_t before = req.size();
    req.append(stream.substr(pos, std::min(n, kHttpMaxRequest + 1 - req.size())));
    pos += n;
    size_t end = httpHeadEnd(req, before);
    if (end != std::string::npos) {
      head_end = end;
      return httpRespond(std::string_view(req).substr(0, end), false, h);
    }
    if (req.size() > kHttpMaxRequest) return httpRespond(req, true, h);
  }
  if (req.empty()) return "";
  return httpRespond(req, false, h);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  bool metrics = data[0] & 1;
  size_t chunk = size_t(data[0] >> 1) + 1;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  HttpHandler h = handlerFor(metrics);
  size_t head_end = 0;
  std::string out = serve(stream, chunk, h, head_end);

  // The head end found chunk by chunk is the one found in one pass over what
  // the session keeps (kHttpMaxRequest + 1 bytes).
  size_t whole = httpHeadEnd(stream.substr(0, std::min(stream.size(), kHttpMaxRequest + 1)));
  FUZZ_CHECK(head_end == whole, "head end %zu chunked, %zu in one pass", head_end, whole);
  if (stream.empty()) {
    FUZZ_CHECK(out.empty(), "an empty connection gets no answer");
    return 0;
  }
  FUZZ_CHECK(out.rfind("HTTP/1.1 ", 0) == 0 && out.size() > 13, "status line: %.40s", out.c_str());
  int status = std::stoi(out.substr(9, 3));
  FUZZ_CHECK(status == 200 || status == 400 || status == 404 || status == 405 || status == 431 ||
                 status == 503,
             "status %d", status);
  size_t hend = out.find("\r\n\r\n");
  FUZZ_CHECK(hend != std::string::npos, "no end of response head");
  std::string head = out.substr(0, hend + 2);
  std::string body = out.substr(hend + 4);
  size_t cl = head.find("\r\nContent-Length: ");
  FUZZ_CHECK(cl != std::string::npos, "no Content-Length");
  size_t len = std::stoul(head.substr(cl + 18));
  std::string_view line = stream.substr(0, stream.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  bool is_head = line.rfind("HEAD ", 0) == 0;
  if (is_head) {
    FUZZ_CHECK(body.empty(), "HEAD with a body of %zu bytes", body.size());
  } else {
    FUZZ_CHECK(len == body.size(), "Content-Length %zu for %zu bytes", len, body.size());
  }
  FUZZ_CHECK(validUtf8(out), "response is not valid UTF-8");
  if (head.find("Content-Type: application/json") != std::string::npos && !is_head)
    FUZZ_CHECK(!nlohmann::json::parse(body, nullptr, false).is_discarded(), "JSON body does not parse");
  // The health endpoint's verdicts follow the destinations, whatever else the line holds.
  if (!metrics && status != 431 && line.rfind("GET /destinations/", 0) == 0) {
    std::string_view target = line.substr(4);
    target = target.substr(0, target.find(' '));
    target = target.substr(0, target.find_first_of("?#"));
    if (target == "/destinations/inspect") FUZZ_CHECK(status == 200, "inspect: %d", status);
    if (target == "/destinations/edge") FUZZ_CHECK(status == 503, "edge: %d", status);
  }
  // Deterministic.
  size_t again_end = 0;
  FUZZ_CHECK(serve(stream, chunk, h, again_end) == out, "a second run answers differently");
  return 0;
}
