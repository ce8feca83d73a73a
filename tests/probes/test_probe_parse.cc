// Pure parts of the probes: response head parser, code sets, CLI arguments, JSON.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "probes/probe.h"
#include "probes/probe_cli.h"

namespace gwlb::probe {
namespace {

#define BIN(lit) std::string(lit, sizeof(lit) - 1)

struct HeadCase {
  const char* name;
  std::string input;
  int want;         // 1 complete, 0 need more, -1 malformed
  int status = 0;   // when want == 1
  size_t head_len = 0;  // when want == 1; 0 = whole input
};

TEST(ParseResponseHead, Table) {
  const std::vector<HeadCase> cases = {
      {"complete", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1, 200},
      {"no headers", "HTTP/1.1 204 No Content\r\n\r\n", 1, 204},
      {"http 1.0", "HTTP/1.0 302 Found\r\nLocation: /x\r\n\r\n", 1, 302},
      {"empty reason", "HTTP/1.1 503\r\n\r\n", 1, 503},
      {"empty reason with space", "HTTP/1.1 404 \r\n\r\n", 1, 404},
      {"lone LF lines", "HTTP/1.1 200 OK\nServer: x\n\n", 1, 200},
      {"body follows", "HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody bytes", 1, 200, 25},
      {"obs-fold", "HTTP/1.1 200 OK\r\nA: b\r\n  c\r\n\r\n", 1, 200},
      {"utf-8 reason", "HTTP/1.1 200 \xc3\xa9t\xc3\xa9\r\n\r\n", 1, 200},
      {"empty", "", 0},
      {"prefix", "HTT", 0},
      {"status line only", "HTTP/1.1 200 OK", 0},
      {"status line CR only", "HTTP/1.1 200 OK\r", 0},
      {"no blank line", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n", 0},
      {"header partial", "HTTP/1.1 200 OK\r\nContent-Len", 0},
      {"blank line partial", "HTTP/1.1 200 OK\r\nA: b\r\n\r", 0},
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
      {"bare CR in status", "HTTP/1.1 200 OK\rX: y\r\n\r\n", -1},
      {"bare CR in header", "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", -1},
      {"NUL in status", BIN("HTTP/1.1 200 O\0K\r\n\r\n"), -1},
      {"NUL in header", BIN("HTTP/1.1 200 OK\r\nA: \0\r\n\r\n"), -1},
      {"header without colon", "HTTP/1.1 200 OK\r\nNoColonHere\r\n\r\n", -1},
      {"space before colon", "HTTP/1.1 200 OK\r\nName : v\r\n\r\n", -1},
      {"empty header name", "HTTP/1.1 200 OK\r\n: v\r\n\r\n", -1},
      {"fold as first header", "HTTP/1.1 200 OK\r\n folded\r\n\r\n", -1},
      {"garbage partial header", "HTTP/1.1 200 OK\r\n\x01\x02", -1},
  };
  for (const HeadCase& c : cases) {
    int status = -7;
    size_t head_len = 0;
    std::string err;
    int r = parseResponseHead(c.input.data(), c.input.size(), status, err, head_len);
    EXPECT_EQ(r, c.want) << c.name << " (err: " << err << ")";
    if (c.want == 1 && r == 1) {
      EXPECT_EQ(status, c.status) << c.name;
      EXPECT_EQ(head_len, c.head_len ? c.head_len : c.input.size()) << c.name;
    }
    if (c.want == -1) {
      EXPECT_FALSE(err.empty()) << c.name;
    }
    // The short overload agrees.
    int s2 = 0;
    std::string e2;
    EXPECT_EQ(parseResponseHead(c.input.data(), c.input.size(), s2, e2), r) << c.name;
  }
}

TEST(ParseResponseHead, EveryPrefixOfAValidHeadNeedsMore) {
  const std::string head = "HTTP/1.1 301 Moved Permanently\r\nLocation: /a\r\nX: y\r\n\r\n";
  for (size_t n = 0; n < head.size(); ++n) {
    int status = 0;
    std::string err;
    EXPECT_EQ(parseResponseHead(head.data(), n, status, err), 0) << "prefix " << n << ": " << err;
  }
  int status = 0;
  std::string err;
  EXPECT_EQ(parseResponseHead(head.data(), head.size(), status, err), 1);
  EXPECT_EQ(status, 301);
}

TEST(ParseResponseHead, GarbageFailsOnFirstByte) {
  int status = 0;
  std::string err;
  EXPECT_EQ(parseResponseHead("X", 1, status, err), -1);
  EXPECT_EQ(parseResponseHead("HTTP/3", 6, status, err), -1);
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
