// gwlbctl health checks: `health` rendering, the health cells of `servers`,
// and `probe` argument handling and result text (no sockets).
#include <gtest/gtest.h>

#include "cli/args.h"
#include "cli/health_render.h"
#include "cli/probe_cmd.h"
#include "cli/validate.h"

using namespace gwlb::cli;
using gwlb::probe::Protocol;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Invocation parse(std::vector<std::string> a) { return parseArgs(a, nullptr); }

std::string probeUsageError(std::vector<std::string> a, const Json* health = nullptr) {
  try {
    buildProbeSpec(parse(std::move(a)), health);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

const char* kHealth = R"J({"state": "unhealthy", "consecutive": 3, "last_ok": false,
  "last_result": "connect_timeout: no answer to SYN within 5000 ms", "since": 1000.0,
  "failure_window_s": 19.0, "success_window_s": 4.0, "address": "192.0.2.10",
  "group": "firewalls",
  "check": {"configured": true, "enabled": true, "protocol": "http", "port": 8080,
            "path": "/healthz", "domain": "fw.example", "http_codes": ["http_2xx", "302"],
            "interval_ms": 2000, "timeout_ms": 5000, "healthy_threshold": 3,
            "unhealthy_threshold": 3},
  "history": [
    {"ago_s": 75.5, "transition": {"from": "initializing", "to": "healthy"},
     "reason": "3 consecutive successes"},
    {"ago_s": 12.34, "ok": true, "reason": "ok", "response_ms": 3},
    {"ago_s": 5.0, "ok": false, "reason": "connect_timeout: no answer to SYN within 5000 ms",
     "response_ms": 5000},
    {"ago_s": 0.0, "transition": {"from": "healthy", "to": "unhealthy"},
     "reason": "3 consecutive failures (connect_timeout: no answer to SYN within 5000 ms)"}]})J";

}  // namespace

TEST(Health, Cells) {
  Json h = Json::parse(kHealth);
  EXPECT_EQ(healthConsecutive(h), "3✗");
  EXPECT_EQ(healthLastResult(h, false), "connect_timeout");
  EXPECT_EQ(healthLastResult(h, true), "connect_timeout: no answer to SYN within 5000 ms");
  EXPECT_EQ(healthWindows(h), "fail 19s / ok 4s");
  Json ok = {{"state", "healthy"}, {"consecutive", 1}, {"last_ok", true}, {"last_result", "ok"},
             {"failure_window_s", 1.1}, {"success_window_s", 0.03}};
  EXPECT_EQ(healthConsecutive(ok), "1✓");
  EXPECT_EQ(healthWindows(ok), "fail 1.1s / ok 30ms");
  EXPECT_EQ(healthLastResult(Json{{"consecutive", 2},
                                  {"last_result", "bad_status: HTTP 404 (expected 200-399)"}},
                             false),
            "bad_status 404");
  // Weight 0 before any probe: gwlbd reports the transition's reason; not a result.
  Json unused = {{"state", "unused"}, {"consecutive", 0}, {"last_ok", false},
                 {"last_result", "weight 0"}};
  EXPECT_EQ(healthLastResult(unused, false), "-");
  EXPECT_EQ(healthLastResult(unused, true), "-");
  Json off = {{"state", "disabled"}};
  EXPECT_EQ(healthConsecutive(off), "-");
  EXPECT_EQ(healthLastResult(off, false), "-");
  EXPECT_EQ(healthWindows(off), "-");
  Json init = {{"state", "initializing"}, {"consecutive", 0}, {"last_ok", false},
               {"last_result", ""}, {"failure_window_s", 19}, {"success_window_s", 4}};
  EXPECT_EQ(healthConsecutive(init), "-");
  EXPECT_EQ(healthWindows(init), "fail 19s / ok 4s");
  // Odd input never throws.
  EXPECT_EQ(healthConsecutive(Json("x")), "-");
  EXPECT_EQ(healthWindows(Json::array()), "-");
}

TEST(Health, Units) {
  EXPECT_EQ(formatMs(200), "200ms");
  EXPECT_EQ(formatMs(2000), "2s");
  EXPECT_EQ(formatMs(1500), "1.5s");
  EXPECT_EQ(formatMs(19000), "19s");
  EXPECT_EQ(formatMs(90000), "1m30s");
  EXPECT_EQ(formatAgo(12.34), "12.3s ago");
  EXPECT_EQ(formatAgo(0), "0.0s ago");
  EXPECT_EQ(formatAgo(75.5), "1m15s ago");
}

TEST(Health, Render) {
  std::string t = renderHealth(Json::parse(kHealth), 1072.0);
  EXPECT_TRUE(has(t, "appliance    192.0.2.10 (group firewalls)\n")) << t;
  EXPECT_TRUE(has(t, "state        unhealthy since 1m12s ago (failed its checks: no new flows)\n")) << t;
  EXPECT_TRUE(has(t, "last result  ✗ connect_timeout: no answer to SYN within 5000 ms (3 failures in a row)\n"))
      << t;
  EXPECT_TRUE(has(t, "windows      fail 19s / ok 4s")) << t;
  EXPECT_TRUE(has(t, "check        http port 8080, GET /healthz, Host fw.example, codes http_2xx,302\n"
                     "             every 2s, timeout 5s; healthy after 3 successes, unhealthy after 3 failures\n"))
      << t;
  // History, newest last, ages right-aligned.
  EXPECT_TRUE(has(t, "history (newest last):\n"
                     "  1m15s ago  → healthy: 3 consecutive successes\n"
                     "  12.3s ago  ✓ ok (3 ms)\n"
                     "   5.0s ago  ✗ connect_timeout (5000 ms): no answer to SYN within 5000 ms\n"
                     "   0.0s ago  → unhealthy: 3 consecutive failures (connect_timeout: no answer to "
                     "SYN within 5000 ms)\n"))
      << t;

  Json off = Json::parse(R"J({"state": "disabled", "address": "192.0.2.11", "group": "fw",
    "check": {"configured": false, "enabled": true, "protocol": "tcp", "port": 80},
    "history": []})J");
  t = renderHealth(off, 0);
  EXPECT_TRUE(has(t, "state      disabled (health checks off: treated as healthy)")) << t;
  EXPECT_TRUE(has(t, "none configured")) << t;
  EXPECT_FALSE(has(t, "history")) << t;
  EXPECT_FALSE(has(t, "windows")) << t;
  Json fresh = {{"state", "initializing"}, {"consecutive", 0}, {"address", "192.0.2.12"},
                {"history", Json::array()}};
  t = renderHealth(fresh, 0);
  EXPECT_TRUE(has(t, "last result  none yet")) << t;
  EXPECT_TRUE(has(t, "history: none yet")) << t;
  EXPECT_NO_THROW(renderHealth(Json("garbage"), 0));
  EXPECT_NO_THROW(renderHealth(Json{{"history", {1, "x", Json::object()}}}, 0));
  // HTTPS with keep_alive, and a group settling after a whole-group outage.
  Json h = Json::parse(kHealth);
  h["connections"] = {{"answered_on_kept", 15}, {"tls_full_handshakes", 1}, {"tls_resumed_handshakes", 0}};
  h["settling"] = {{"keeps_flows_for_s", 2.5}};
  t = renderHealth(h, 1072.0);
  EXPECT_TRUE(has(t, "connections  15 answered on a kept connection; TLS handshakes 1 full, 0 resumed\n")) << t;
  EXPECT_TRUE(has(t, "settling     keeps its flows 2.5s more: its group settles after every appliance failed\n"))
      << t;
  h["connections"] = "x";
  h["settling"] = {{"keeps_flows_for_s", "x"}};
  EXPECT_NO_THROW(t = renderHealth(h, 1072.0));
  EXPECT_FALSE(has(t, "settling")) << t;
}

// Issue 14 item 14: "3 successes in a row" (not "successs"), and the windows
// say from when they count (a fault can start up to an interval earlier).
TEST(Health, SuccessesAndWindowLabels) {
  Json h = Json::parse(kHealth);
  h["state"] = "healthy";
  h["last_ok"] = true;
  h["last_result"] = "ok";
  h["consecutive"] = 12;
  std::string t = renderHealth(h, 1072.0);
  EXPECT_TRUE(has(t, "last result  ✓ ok (12 successes in a row)\n")) << t;
  EXPECT_FALSE(has(t, "successs")) << t;
  EXPECT_TRUE(has(t, "windows      fail 19s / ok 4s (unhealthy / healthy this long after the "
                     "first failed / passed check)\n"))
      << t;
  EXPECT_FALSE(has(t, "longest")) << t;
  h["consecutive"] = 1;
  EXPECT_TRUE(has(renderHealth(h, 1072.0), "(1 success in a row)")) << renderHealth(h, 1072.0);
}

// Issue 14 item 15: an initializing appliance says whether it serves.
TEST(Health, InitializingSaysWhetherItServes) {
  Json h = {{"state", "initializing"}, {"provisional", true}, {"consecutive", 0},
            {"address", "192.0.2.12"}, {"history", Json::array()}};
  EXPECT_TRUE(has(renderHealth(h, 0), "serves new flows until its first failed check"))
      << renderHealth(h, 0);
  h["provisional"] = false;
  EXPECT_TRUE(has(renderHealth(h, 0), "no new flows until it passes its checks"))
      << renderHealth(h, 0);
}

TEST(Health, CommandsParse) {
  auto inv = parse({"health", "192.0.2.10"});
  auto req = buildRequest(inv);
  EXPECT_EQ(req.method, "health");
  EXPECT_EQ(req.params, (Json{{"address", "192.0.2.10"}}));
  EXPECT_THROW(buildRequest(parse({"health", "fw1"})), UsageError);
  EXPECT_THROW(parse({"health"}), UsageError);
  // servers --wide is client-side only.
  EXPECT_EQ(buildRequest(parse({"servers", "--wide"})).params, Json::object());
  // After `probe`, --timeout is the probe's; before the command, the socket's.
  inv = parse({"--timeout", "2", "probe", "--timeout", "1500", "--protocol", "tcp", "--address",
               "127.0.0.1"});
  EXPECT_DOUBLE_EQ(inv.timeout_s, 2.0);
  EXPECT_EQ(inv.opt("--timeout"), "1500");
  EXPECT_EQ(parse({"status", "--timeout", "3"}).timeout_s, 3.0);
  EXPECT_TRUE(has(commandHelp(*findCommand("probe")), "(before 'probe')"));
  EXPECT_FALSE(has(commandHelp(*findCommand("status")), "(before"));
}

TEST(Probe, Timeout) {
  EXPECT_EQ(parseProbeTimeoutMs("1500"), 1500u);
  EXPECT_EQ(parseProbeTimeoutMs("200ms"), 200u);
  EXPECT_EQ(parseProbeTimeoutMs("2s"), 2000u);
  EXPECT_EQ(parseProbeTimeoutMs("1.5s"), 1500u);
  EXPECT_EQ(parseProbeTimeoutMs("600s"), 600000u);
  for (const char* bad : {"0", "0ms", "601s", "1.5", "0.0001s", "2m", "s", "ms", "-1", "", "x",
                          ".5s", "1e3", "1.5ms"})
    EXPECT_THROW(parseProbeTimeoutMs(bad), UsageError) << bad;
}

TEST(Probe, SpecFromOptions) {
  auto spec = buildProbeSpec(parse({"probe", "--protocol", "http", "--address", "::1", "--port",
                                    "8080", "--path", "/h", "--domain", "x.example", "--timeout",
                                    "2s", "--codes", "http_2xx,404"}),
                             nullptr);
  EXPECT_EQ(spec.protocol, Protocol::kHttp);
  EXPECT_EQ(spec.address.str(), "::1");
  EXPECT_EQ(spec.port, 8080);
  EXPECT_EQ(spec.path, "/h");
  EXPECT_EQ(spec.domain, "x.example");
  EXPECT_EQ(spec.timeout.count(), 2000);
  EXPECT_EQ(gwlb::probe::codesToString(spec.codes), "200-299,404");
  EXPECT_EQ(describeProbe(spec),
            "http [::1]:8080 GET /h, Host x.example, codes 200-299,404, timeout 2000 ms");
  spec = buildProbeSpec(parse({"probe", "--protocol=https", "--address=127.0.0.1"}), nullptr);
  EXPECT_EQ(spec.port, 443);

  EXPECT_TRUE(has(probeUsageError({"probe"}), "missing --protocol and --address"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "tcp"}), "missing --protocol"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "udp", "--address", "127.0.0.1"}),
                  "--protocol must be tcp, http or https"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "tcp", "--address", "localhost"}),
                  "not an IPv4 or IPv6 address"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "tcp", "--address", "127.0.0.1",
                                   "--port", "0"}),
                  "--port must be 1..65535"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "http", "--address", "127.0.0.1",
                                   "--path", "h"}),
                  "--path must start with '/'"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "http", "--address", "127.0.0.1",
                                   "--codes", "http_6xx"}),
                  "--codes"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "tcp", "--address", "127.0.0.1",
                                   "--source", "::1"}),
                  "same family"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "https", "--address", "127.0.0.1",
                                   "--verify"}),
                  "--verify needs --ca-file"));
  EXPECT_TRUE(has(probeUsageError({"probe", "--protocol", "tcp", "--address", "127.0.0.1",
                                   "--timeout", "0"}),
                  "--timeout: '0'"));
  EXPECT_THROW(parse({"probe", "--verify=1"}), UsageError);
  EXPECT_THROW(parse({"probe", "--frobnicate", "1"}), UsageError);
}

TEST(Probe, SpecFromConfiguredCheck) {
  Json h = Json::parse(kHealth);
  auto args = probeArgsFromCheck(h["check"], "192.0.2.10");
  EXPECT_EQ(args, (std::vector<std::string>{"--address=192.0.2.10", "--protocol=http",
                                            "--port=8080", "--path=/healthz",
                                            "--domain=fw.example", "--timeout=5000",
                                            "--codes=http_2xx,302"}));
  auto spec = buildProbeSpec(parse({"probe", "192.0.2.10"}), &h);
  EXPECT_EQ(spec.protocol, Protocol::kHttp);
  EXPECT_EQ(spec.address.str(), "192.0.2.10");
  EXPECT_EQ(spec.port, 8080);
  EXPECT_EQ(spec.timeout.count(), 5000);
  EXPECT_EQ(gwlb::probe::codesToString(spec.codes), "200-299,302");
  // Options given as well override the configured check.
  spec = buildProbeSpec(parse({"probe", "192.0.2.10", "--timeout", "300ms", "--port", "81"}), &h);
  EXPECT_EQ(spec.timeout.count(), 300);
  EXPECT_EQ(spec.port, 81);
  EXPECT_EQ(spec.path, "/healthz");
  // Settings a newer gwlbd may report.
  Json c = h["check"];
  c["source"] = "192.0.2.1";
  c["verify"] = true;
  c["ca_file"] = "/etc/ca.pem";
  c["protocol"] = "https";
  Json h2 = h;
  h2["check"] = c;
  spec = buildProbeSpec(parse({"probe", "192.0.2.10"}), &h2);
  EXPECT_EQ(spec.source->str(), "192.0.2.1");
  EXPECT_TRUE(spec.verify_tls);
  EXPECT_EQ(spec.ca_file, "/etc/ca.pem");
  EXPECT_TRUE(has(probeUsageError({"probe", "192.0.2.10", "--address", "127.0.0.1"}, &h),
                  "ADDRESS or --address, not both"));
  EXPECT_TRUE(has(probeUsageError({"probe", "fw1"}, &h), "ADDRESS: 'fw1'"));
}

TEST(Probe, ResultText) {
  gwlb::probe::ProbeResult r;
  r.ok = true;
  r.reason = "ok";
  r.status = 200;
  r.detail = "HTTP 200";
  r.elapsed = std::chrono::microseconds(3240);
  EXPECT_EQ(renderProbeResult(r), "ok: HTTP 200 in 3.2 ms");
  r.detail = "connected";
  r.elapsed = std::chrono::microseconds(80);
  EXPECT_EQ(renderProbeResult(r), "ok: connected in 0.08 ms");
  r.ok = false;
  r.reason = "connect_timeout";
  r.detail = "no answer to SYN within 1000 ms";
  r.elapsed = std::chrono::microseconds(1000400);
  EXPECT_EQ(renderProbeResult(r),
            "failed: connect_timeout after 1000 ms: no answer to SYN within 1000 ms");
  r.detail.clear();
  EXPECT_EQ(renderProbeResult(r), "failed: connect_timeout after 1000 ms");
}
