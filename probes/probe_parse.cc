// The pure parts of a probe, no sockets: protocol names, the HTTP status
// code sets, the response's status line (StatusReader) and where a response
// ends (ResponseFramer, for keep_alive). Fuzzed by tests/fuzz/fuzz_http.cc.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "common/http_codes.h"
#include "probes/probe.h"

namespace gwlb::probe {

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

// Checks the first `len` (< StatusReader::kStatusPrefix + 1) bytes of a status
// line: "HTTP/1." DIGIT SP 3DIGIT (100..599), then SP, CR or LF. Returns 1
// when all 13 bytes are there and good (code in `code`), 0 when the bytes so
// far are a good prefix, -1 at the first wrong byte (reason in `err`).
int checkStatusPrefix(const char* d, size_t len, int& code, std::string& err) {
  static constexpr std::string_view kPrefix = "HTTP/";
  for (size_t i = 0; i < kPrefix.size() && i < len; ++i)
    if (d[i] != kPrefix[i]) {
      err = "not an HTTP response (no HTTP/ status line)";
      return -1;
    }
  if (len > 5 && d[5] != '1') {
    err = isDigit(d[5]) ? "unsupported HTTP version" : "bad HTTP version";
    return -1;
  }
  if ((len > 6 && d[6] != '.') || (len > 7 && !isDigit(d[7])) || (len > 8 && d[8] != ' ')) {
    err = "bad HTTP version";
    return -1;
  }
  for (size_t i = 9; i < 12 && i < len; ++i)
    if (!isDigit(d[i])) {
      err = "bad status code";
      return -1;
    }
  if (len < 12) return 0;
  code = (d[9] - '0') * 100 + (d[10] - '0') * 10 + (d[11] - '0');
  if (code < 100 || code > 599) {
    err = "status code " + std::to_string(code) + " out of range";
    return -1;
  }
  if (len < 13) return 0;
  if (d[12] != ' ' && d[12] != '\r' && d[12] != '\n') {
    err = "bad status code";
    return -1;
  }
  return 1;
}

}  // namespace

int StatusReader::feed(const char* d, size_t n) {
  size_t i = 0;
  while (result_ == 0 && i < n) {
    if (skipping_) {
      // Skip the rest of an interim head: its status line and header lines,
      // up to a line with no content (CRLF or a lone LF).
      char c = d[i++];
      ++consumed_;
      if (++interim_bytes_ > kMaxInterimBytes) {
        too_large_ = true;
        error_ = "interim (1xx) responses longer than " + std::to_string(kMaxInterimBytes) +
                 " bytes";
        result_ = -1;
        break;
      }
      if (c == '\n') {
        if (line_empty_) skipping_ = false;  // blank line: the next response starts
        line_empty_ = true;
      } else if (c != '\r') {
        line_empty_ = false;
      }
      continue;
    }
    line_[line_len_++] = d[i++];
    ++consumed_;
    int code = 0;
    int r = checkStatusPrefix(line_, line_len_, code, error_);
    if (r < 0) {
      result_ = -1;
      break;
    }
    if (r == 0) continue;
    if (code >= 100 && code < 200 && code != 101) {  // interim (100, 103): the real one follows
      ++interim_;
      interim_bytes_ += line_len_;
      skipping_ = true;
      line_empty_ = line_[12] == '\n';  // the status line already ended
      line_len_ = 0;
      continue;
    }
    status_ = code;
    result_ = 1;
  }
  return result_;
}

int ResponseFramer::fail(std::string why) {
  why_ = std::move(why);
  result_ = -1;
  return result_;
}

namespace {

std::string_view trimWs(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

bool iequals(std::string_view a, std::string_view b) {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c + ('a' - 'A')) : c; };
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [&](char x, char y) { return lower(x) == lower(y); });
}

}  // namespace

// One header line of the head, without its line end. What decides whether
// the connection can carry the next request: Content-Length (one value, or
// the same value repeated), Transfer-Encoding (any: not framed here) and
// Connection's tokens (close). Everything else is skipped.
void ResponseFramer::headerLine() {
  std::string_view l(line_);
  if (!l.empty() && (l.front() == ' ' || l.front() == '\t')) {
    bad_length_ = true;  // obsolete line folding: what it continues is unknown
    return;
  }
  const size_t colon = l.find(':');
  if (colon == std::string_view::npos) return;
  const std::string_view name = l.substr(0, colon), value = trimWs(l.substr(colon + 1));
  if (iequals(name, "content-length")) {
    int64_t v = 0;
    bool ok = !value.empty() && value.size() <= 18;
    for (char c : value) {
      if (c < '0' || c > '9') ok = false;
      else v = v * 10 + (c - '0');
    }
    if (!ok || (length_ >= 0 && v != length_)) bad_length_ = true;
    else length_ = v;
  } else if (iequals(name, "transfer-encoding")) {
    chunked_ = true;
  } else if (iequals(name, "connection")) {
    size_t start = 0;
    while (start <= value.size()) {
      size_t comma = value.find(',', start);
      if (comma == std::string_view::npos) comma = value.size();
      if (iequals(trimWs(value.substr(start, comma - start)), "close")) close_ = true;
      start = comma + 1;
    }
  }
}

int ResponseFramer::feed(const char* d, size_t n) {
  size_t i = 0;
  while (result_ == 0 && i < n) {
    if (in_body_) {
      const size_t take = size_t(std::min<uint64_t>(body_left_, n - i));
      i += take;
      body_left_ -= take;
      if (body_left_ == 0) result_ = 1;
      break;
    }
    const char c = d[i++];
    if (++head_bytes_ > kMaxHeadBytes)
      return fail("response head longer than " + std::to_string(kMaxHeadBytes) + " bytes");
    if (c != '\n') {
      line_ += c;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (first_line_) {  // the status line's reason phrase
      first_line_ = false;
      line_.clear();
      continue;
    }
    if (!line_.empty()) {
      headerLine();
      line_.clear();
      continue;
    }
    // The blank line: the head is over.
    if (status_ == 101) return fail("101 Switching Protocols");
    if (close_) return fail("Connection: close");
    if (chunked_) return fail("Transfer-Encoding (chunked bodies are not framed)");
    if (bad_length_) return fail("unusable Content-Length");
    if (status_ < 200 || status_ == 204 || status_ == 304) length_ = 0;
    if (length_ < 0) return fail("no Content-Length");
    if (uint64_t(length_) > kMaxBody)
      return fail("body of " + std::to_string(length_) + " bytes (over " + std::to_string(kMaxBody) + ")");
    in_body_ = true;
    body_left_ = uint64_t(length_);
    if (body_left_ == 0) result_ = 1;
  }
  if (result_ == 1 && i < n) return fail("bytes after the response");
  return result_;
}

bool parseHttpCodes(const std::vector<std::string>& in, std::vector<CodeRange>& out,
                    std::string& err) {
  if (in.empty()) {
    err = "no HTTP codes given";
    return false;
  }
  std::vector<CodeRange> res;
  for (const std::string& s : in) {
    auto r = parseHttpCode(s);  // the config's grammar (common/http_codes.h)
    if (!r) {
      err = "\"" + s + "\" " + std::string(kHttpCodeGrammar);
      return false;
    }
    res.push_back({r->lo, r->hi});
  }
  out = std::move(res);
  return true;
}

}  // namespace gwlb::probe
