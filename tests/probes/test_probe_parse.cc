// Pure parts of the probes: status line reader, SNI name, code sets, CLI arguments, JSON.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "probes/probe.h"
#include "probes/probe_cli.h"

namespace gwlb::probe {
namespace {

#define BIN(lit) std::string(lit, sizeof(lit) - 1)

struct StatusCase {
  const char* name;
  std::string input;
  int want;              // 1 final status known, 0 need more, -1 malformed
  int status = 0;        // when want == 1
  size_t consumed = 0;   // when want == 1: bytes taken (0 = 13, the status prefix)
};

// Feeds `in` in pieces of `step` bytes (0: all at once).
StatusReader feedAll(const std::string& in, size_t step) {
  StatusReader r;
  if (step == 0) {
    r.feed(in.data(), in.size());
    return r;
  }
  for (size_t i = 0; i < in.size(); i += step) r.feed(in.data() + i, std::min(step, in.size() - i));
  return r;
}

TEST(StatusReader, Table) {
  const std::string big_headers = [] {
    std::string h;
    while (h.size() < 100 * 1024) h += "Set-Cookie: " + std::string(500, 'x') + "\r\n";
    return h;
  }();
  const std::vector<StatusCase> cases = {
      {"complete", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1, 200},
      {"status line only", "HTTP/1.1 200 OK", 1, 200},
      {"http 1.0", "HTTP/1.0 302 Found\r\nLocation: /x\r\n\r\n", 1, 302},
      {"empty reason CRLF", "HTTP/1.1 503\r\n\r\n", 1, 503},
      {"empty reason LF", "HTTP/1.1 503\n\n", 1, 503},
      // Issue 14 item 14: headers are not read, so their size does not matter.
      {"100 KiB of headers", "HTTP/1.1 200 OK\r\n" + big_headers + "\r\n", 1, 200},
      {"header garbage after the status", "HTTP/1.1 200 OK\r\n\x01\x02 no colon\r\n\r\n", 1, 200},
      {"100 then 200", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", 1, 200, 38},
      {"103 with headers then 404",
       "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 404 Not Found\r\n", 1, 404,
       57},
      {"lone LF interim", "HTTP/1.1 100\n\nHTTP/1.1 204\n", 1, 204, 27},
      {"101 is final", "HTTP/1.1 101 Switching Protocols\r\n\r\n", 1, 101},
      {"empty", "", 0},
      {"prefix", "HTT", 0},
      {"code partial", "HTTP/1.1 20", 0},
      {"code without delimiter", "HTTP/1.1 200", 0},
      {"interim not ended", "HTTP/1.1 100 Continue\r\n", 0},
      {"interim blank line partial", "HTTP/1.1 100 Continue\r\n\r", 0},
      {"garbage", "garbage\r\n\r\n", -1},
      {"lowercase", "http/1.1 200 OK\r\n\r\n", -1},
      {"html", "<html><body>hi</body></html>", -1},
      {"bad version", "HTTP/1.x 200 OK\r\n\r\n", -1},
      {"http2", "HTTP/2 200\r\n\r\n", -1},
      {"version two digits", "HTTP/1.10 200 OK\r\n\r\n", -1},
      {"bad code letters", "HTTP/1.1 2x0 OK\r\n\r\n", -1},
      {"short code", "HTTP/1.1 20 OK\r\n\r\n", -1},
      {"long code", "HTTP/1.1 2000 OK\r\n\r\n", -1},
      {"code out of range", "HTTP/1.1 099 Low\r\n\r\n", -1},
      {"code too high", "HTTP/1.1 600 High\r\n\r\n", -1},
      {"NUL after code", BIN("HTTP/1.1 200\0OK\r\n\r\n"), -1},
      {"garbage after interim", "HTTP/1.1 100 Continue\r\n\r\n<html>", -1},
      {"interim heads over 64 KiB", "HTTP/1.1 103 Hints\r\n" + big_headers + "\r\nHTTP/1.1 200 OK\r\n",
       -1},
  };
  for (const StatusCase& c : cases) {
    for (size_t step : {size_t(0), size_t(1), size_t(7), size_t(4096)}) {
      StatusReader r = feedAll(c.input, step);
      EXPECT_EQ(r.result(), c.want) << c.name << " step " << step << " (err: " << r.error() << ")";
      if (c.want == 1 && r.result() == 1) {
        EXPECT_EQ(r.status(), c.status) << c.name;
        EXPECT_EQ(r.consumed(), c.consumed ? c.consumed : StatusReader::kStatusPrefix) << c.name;
      }
      if (c.want == -1) { EXPECT_FALSE(r.error().empty()) << c.name; }
      // More bytes never change a verdict.
      int before = r.result(), st = r.status();
      size_t took = r.consumed();
      if (before != 0) {
        EXPECT_EQ(r.feed("HTTP/1.1 500 X\r\n\r\n", 19), before) << c.name;
        EXPECT_EQ(r.status(), st) << c.name;
        EXPECT_EQ(r.consumed(), took) << c.name;
      }
    }
  }
  StatusReader big = feedAll("HTTP/1.1 103 Hints\r\n" + big_headers, 0);
  EXPECT_TRUE(big.tooLarge());
  EXPECT_EQ(big.consumed(), StatusReader::kMaxInterimBytes + 1);
}

TEST(StatusReader, EveryPrefixOfAStatusPrefixNeedsMore) {
  const std::string head = "HTTP/1.1 301 Moved Permanently\r\nLocation: /a\r\n\r\n";
  for (size_t n = 0; n < StatusReader::kStatusPrefix; ++n) {
    StatusReader r;
    EXPECT_EQ(r.feed(head.data(), n), 0) << "prefix " << n << ": " << r.error();
  }
  StatusReader r;
  EXPECT_EQ(r.feed(head.data(), head.size()), 1);
  EXPECT_EQ(r.status(), 301);
}

TEST(StatusReader, GarbageFailsOnFirstWrongByte) {
  StatusReader a;
  EXPECT_EQ(a.feed("X", 1), -1);
  StatusReader b;
  EXPECT_EQ(b.feed("HTTP/3", 6), -1);
  EXPECT_EQ(b.consumed(), 6u);
}

// Where a response ends (keep_alive): fed what follows the status code, as
// the probe does. 1: the connection can carry the next request.
TEST(ResponseFramer, Table) {
  struct Case {
    int status;
    const char* rest;  // after "HTTP/1.1 NNN"
    int want;
    const char* why;   // part of why() for -1
  };
  const Case cases[] = {
      {200, " OK\r\nContent-Length: 2\r\n\r\nok", 1, ""},
      {200, " OK\r\ncontent-LENGTH:\t0 \r\nServer: x\r\n\r\n", 1, ""},
      {200, "\nContent-Length: 0\n\n", 1, ""},  // lone LFs
      {204, " No Content\r\n\r\n", 1, ""},
      {304, " Not Modified\r\nContent-Length: 9\r\n\r\n", 1, ""},  // no body, whatever it says
      {200, " OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", 1, ""},
      {200, " OK\r\nContent-Length: 2\r\n\r\no", 0, ""},
      {200, " OK\r\nContent-Length: 2\r\n", 0, ""},
      {200, " OK\r\n\r\n", -1, "no Content-Length"},
      {200, " OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", -1, "Connection: close"},
      {200, " OK\r\nTransfer-Encoding: chunked\r\n\r\n", -1, "chunked"},
      {200, " OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", -1, "Content-Length"},
      {200, " OK\r\nContent-Length: -1\r\n\r\n", -1, "Content-Length"},
      {200, " OK\r\nContent-Length: 1234567890123456789\r\n\r\n", -1, "Content-Length"},
      {200, " OK\r\nX: a\r\n  folded\r\nContent-Length: 0\r\n\r\n", -1, "Content-Length"},
      {200, " OK\r\nContent-Length: 65537\r\n\r\n", -1, "over 65536"},
      {200, " OK\r\nContent-Length: 0\r\n\r\nX", -1, "bytes after the response"},
      {101, " Switching Protocols\r\n\r\n", -1, "101"},
  };
  for (const Case& c : cases) {
    const std::string rest = c.rest;
    const bool ended = rest[0] == '\n';
    ResponseFramer whole(c.status, ended);
    EXPECT_EQ(whole.feed(rest.data() + ended, rest.size() - ended), c.want) << rest;
    if (c.want < 0) {
      EXPECT_NE(whole.why().find(c.why), std::string::npos) << rest << ": " << whole.why();
    }
    ResponseFramer bytes(c.status, ended);
    for (size_t i = ended; i < rest.size(); ++i) bytes.feed(rest.data() + i, 1);
    EXPECT_EQ(bytes.result(), c.want) << "byte by byte: " << rest;
  }
  // A head is bounded; a byte more after the end is not a reusable connection.
  ResponseFramer big(200);
  const std::string line = "X-Pad: " + std::string(100, 'p') + "\r\n";
  std::string head = " OK\r\n";
  while (head.size() <= ResponseFramer::kMaxHeadBytes) head += line;
  EXPECT_EQ(big.feed(head.data(), head.size()), -1);
  EXPECT_NE(big.why().find("longer than"), std::string::npos) << big.why();
  ResponseFramer done(200);
  const std::string ok = " OK\r\nContent-Length: 0\r\n\r\n";
  ASSERT_EQ(done.feed(ok.data(), ok.size()), 1);
  EXPECT_EQ(done.feed("H", 1), -1);
}

TEST(SniName, TrailingDotAndLiterals) {
  EXPECT_EQ(sniName("app.example.test."), "app.example.test");
  EXPECT_EQ(sniName("app.example.test"), "app.example.test");
  EXPECT_EQ(sniName(""), "");
  EXPECT_EQ(sniName("192.0.2.7"), "");
  EXPECT_EQ(sniName("192.0.2.7."), "");
}

TEST(ParseHttpCodes, Classes) {
  std::vector<CodeRange> out;
  std::string err;
  ASSERT_TRUE(parseHttpCodes({"http_2xx", "http_3xx"}, out, err)) << err;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].lo, 200);
  EXPECT_EQ(out[0].hi, 299);
  EXPECT_EQ(out[1].lo, 300);
  EXPECT_EQ(out[1].hi, 399);
  ASSERT_TRUE(parseHttpCodes({"http_4xx", "http_5xx"}, out, err));
  EXPECT_EQ(out[0].lo, 400);
  EXPECT_EQ(out[1].hi, 599);
}

TEST(ParseHttpCodes, CodesAndRanges) {
  std::vector<CodeRange> out;
  std::string err;
  ASSERT_TRUE(parseHttpCodes({"200-299", "302", "100-599"}, out, err)) << err;
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].lo, 200);
  EXPECT_EQ(out[0].hi, 299);
  EXPECT_EQ(out[1].lo, 302);
  EXPECT_EQ(out[1].hi, 302);
  EXPECT_TRUE(codeMatches(out, 302));
  EXPECT_EQ(codesToString(out), "200-299,302,100-599");
  ASSERT_TRUE(parseHttpCodes({"404-404"}, out, err));
  EXPECT_TRUE(codeMatches(out, 404));
  EXPECT_FALSE(codeMatches(out, 403));
}

TEST(ParseHttpCodes, Rejects) {
  const std::vector<std::vector<std::string>> bad = {
      {},           {""},        {"http_1xx"}, {"http_6xx"}, {"http_2XX"}, {"HTTP_2xx"},
      {"http_2xxx"}, {"2xx"},     {"99"},       {"099"},      {"600"},      {"2000"},
      {"200-"},     {"-200"},    {"300-200"},  {"200-600"},  {"200 "},     {"abc"},
      {"200,300"},  {"http_2xx", "bogus"}};
  for (const auto& in : bad) {
    std::vector<CodeRange> out = {{1, 2}};
    std::string err;
    EXPECT_FALSE(parseHttpCodes(in, out, err)) << (in.empty() ? "(empty)" : in.back());
    EXPECT_FALSE(err.empty());
    ASSERT_EQ(out.size(), 1u) << "out changed on failure";
  }
}

TEST(ProbeArgs, Full) {
  ProbeSpec spec;
  bool help = true;
  std::string err;
  ASSERT_TRUE(parseProbeArgs({"--protocol", "https", "--address", "2001:db8::5", "--path=/hc?x=1",
                              "--domain", "app.example", "--timeout", "1500", "--codes",
                              "200-299, 302", "--source", "2001:db8::1", "--verify",
                              "--ca-file", "/tmp/ca.pem"},
                             spec, help, err))
      << err;
  EXPECT_FALSE(help);
  EXPECT_EQ(spec.protocol, Protocol::kHttps);
  EXPECT_EQ(spec.address.str(), "2001:db8::5");
  EXPECT_EQ(spec.port, 443);  // https default
  EXPECT_EQ(spec.path, "/hc?x=1");
  EXPECT_EQ(spec.domain, "app.example");
  EXPECT_EQ(spec.timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(codesToString(spec.codes), "200-299,302");
  ASSERT_TRUE(spec.source.has_value());
  EXPECT_TRUE(spec.verify_tls);
  EXPECT_EQ(spec.ca_file, "/tmp/ca.pem");
}

TEST(ProbeArgs, Defaults) {
  ProbeSpec spec;
  bool help = false;
  std::string err;
  ASSERT_TRUE(parseProbeArgs({"--protocol", "tcp", "--address", "10.0.0.1"}, spec, help, err));
  EXPECT_EQ(spec.port, 80);
  EXPECT_EQ(spec.timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(codesToString(spec.codes), "200-399");
  ASSERT_TRUE(parseProbeArgs({"--help"}, spec, help, err));
  EXPECT_TRUE(help);
}

TEST(ProbeArgs, BadUsage) {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"--protocol", "tcp"},
      {"--address", "10.0.0.1"},
      {"--protocol", "udp", "--address", "10.0.0.1"},
      {"--protocol", "tcp", "--address", "10.0.0.300"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "--port", "0"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "--port", "65536"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "--port", "8o"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "--timeout", "0"},
      {"--protocol", "http", "--address", "10.0.0.1", "--codes", "http_9xx"},
      {"--protocol", "http", "--address", "10.0.0.1", "--path", "noslash"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "--source", "::1"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "--bogus", "1"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "extra"},
      {"--protocol", "tcp", "--address"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "--verify=yes"},
      // Issue 14 item 14: TLS options without TLS are refused, not ignored.
      {"--protocol", "http", "--address", "10.0.0.1", "--ca-file", "/tmp/ca.pem"},
      {"--protocol", "tcp", "--address", "10.0.0.1", "--verify"},
  };
  for (const auto& args : bad) {
    ProbeSpec spec;
    bool help = false;
    std::string err;
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_FALSE(parseProbeArgs(args, spec, help, err)) << joined;
    EXPECT_FALSE(err.empty()) << joined;
  }
}

// Issue 14 item 14: --ca-file alone verifies (it was ignored without --verify).
TEST(ProbeArgs, CaFileImpliesVerify) {
  ProbeSpec spec;
  bool help = false;
  std::string err;
  ASSERT_TRUE(parseProbeArgs({"--protocol", "https", "--address", "10.0.0.1", "--ca-file", "/tmp/ca.pem"},
                             spec, help, err))
      << err;
  EXPECT_TRUE(spec.verify_tls);
  EXPECT_EQ(spec.ca_file, "/tmp/ca.pem");
}

TEST(ResultJson, EscapesAndFields) {
  ProbeSpec spec;
  spec.protocol = Protocol::kHttp;
  spec.address = *IpAddr::parse("192.0.2.7");
  spec.port = 8080;
  ProbeResult r;
  r.ok = false;
  r.reason = "malformed_response";
  r.status = 0;
  r.elapsed = std::chrono::microseconds(1234);
  r.detail = "bad \"x\"\n\\\x01";
  EXPECT_EQ(resultJson(spec, r),
            "{\"protocol\":\"http\",\"address\":\"192.0.2.7\",\"port\":8080,\"ok\":false,"
            "\"reason\":\"malformed_response\",\"status\":0,\"elapsed_us\":1234,"
            "\"detail\":\"bad \\\"x\\\"\\n\\\\\\u0001\"}");
}

}  // namespace
}  // namespace gwlb::probe
