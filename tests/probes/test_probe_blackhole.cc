// Probes to an address that never answers a SYN. Runs only inside the private
// network namespace that blackhole.sh sets up (GWLB_PROBE_BLACKHOLE=<address>,
// optionally GWLB_PROBE_BLACKHOLE6=<v6 address>); skipped anywhere else.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "probe_test_util.h"

namespace gwlb::probe::test {
namespace {

// Sockets in SYN_SENT (state 02) in this namespace, v4 and v6.
int synSentSockets() {
  int n = 0;
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(f);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream ss(line);
      std::string sl, local, remote, state;
      ss >> sl >> local >> remote >> state;
      if (state == "02") ++n;
    }
  }
  return n;
}

std::optional<IpAddr> envAddr(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return IpAddr::parse(v);
}

ProbeSpec blackholeSpec(const IpAddr& a, Protocol p) {
  ProbeSpec s;
  s.protocol = p;
  s.address = a;
  s.port = 9;
  s.timeout = 1000ms;
  return s;
}

TEST(Blackhole, TcpAndHttpTimeOutInConnect) {
  auto a = envAddr("GWLB_PROBE_BLACKHOLE");
  if (!a) GTEST_SKIP() << "only inside blackhole.sh's namespace";
  asio::io_context io;
  for (Protocol p : {Protocol::kTcp, Protocol::kHttp, Protocol::kHttps}) {
    ProbeResult r = runProbe(io, blackholeSpec(*a, p));
    EXPECT_EQ(r.reason, "connect_timeout") << toString(p) << ": " << r.detail;
    EXPECT_GE(r.elapsed, 900ms);
    EXPECT_LE(r.elapsed, 3000ms);
  }
}

TEST(Blackhole, Ipv6TimesOutInConnect) {
  auto a = envAddr("GWLB_PROBE_BLACKHOLE6");
  if (!a) GTEST_SKIP() << "no IPv6 black hole configured";
  asio::io_context io;
  ProbeResult r = runProbe(io, blackholeSpec(*a, Protocol::kTcp));
  EXPECT_EQ(r.reason, "connect_timeout") << r.detail;
}

// A timed-out attempt leaves no half-open socket behind.
TEST(Blackhole, TimedOutAttemptsLeaveNoHalfOpenSockets) {
  auto a = envAddr("GWLB_PROBE_BLACKHOLE");
  if (!a) GTEST_SKIP() << "only inside blackhole.sh's namespace";
  asio::io_context io;
  constexpr int kProbes = 200;
  int done = 0, timeouts = 0;
  for (int i = 0; i < kProbes; ++i)
    startProbe(io, blackholeSpec(*a, Protocol::kTcp), [&](const ProbeResult& r) {
      ++done;
      if (r.reason == "connect_timeout") ++timeouts;
    });
  runUntil(io, [] { return false; }, 300ms);  // all SYNs sent, none answered
  EXPECT_EQ(synSentSockets(), kProbes) << "the SYN_SENT count check itself works";
  ASSERT_TRUE(runUntil(io, [&] { return done == kProbes; }, 3s));
  EXPECT_EQ(timeouts, kProbes);
  EXPECT_EQ(synSentSockets(), 0);
}

}  // namespace
}  // namespace gwlb::probe::test
