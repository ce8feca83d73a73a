// Route announcement through BIRD (issue 16 item 3): the control-socket
// reply parser on BIRD 2's own transcripts, the announce rules, and the Asio
// client against a fake BIRD (a thread answering on a Unix socket as BIRD
// 2.0 does: the same codes and table rows). No EAL, no real BIRD.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "control/fleet/announce.h"
#include "control/fleet/bird_client.h"
#include "control/fleet/bird_protocol.h"

namespace gwlb::ctl {
namespace {

using namespace std::chrono_literals;

// Transcripts from BIRD 2.0.12 (Debian 12 bird2), byte for byte.
const char* const kGreeting = "0001 BIRD 2.0.12 ready.\n";
const char* const kShowDown =
    "2002-Name       Proto      Table      State  Since         Info\n"
    "1002-gwlb_routes Static     master4    down   17:56:15.662  \n"
    "0000 \n";
const char* const kShowAll =
    "2002-Name       Proto      Table      State  Since         Info\n"
    "1002-gwlb_routes Static     master4    up     17:56:23.061  \n"
    "1006-  Channel ipv4\n"
    "     State:          UP\n"
    "     Table:          master4\n"
    " \n"
    "0000 \n";
const char* const kUnknown =
    "9001 syntax error, unexpected CF_SYM_UNDEFINED, expecting END or CF_SYM_KNOWN or TEXT or ALL\n";

std::vector<bird::Reply> parseAll(const std::string& bytes, size_t chunk) {
  bird::ReplyParser p;
  for (size_t i = 0; i < bytes.size(); i += chunk)
    EXPECT_TRUE(p.feed(std::string_view(bytes).substr(i, chunk))) << p.error();
  std::vector<bird::Reply> out;
  while (auto r = p.next()) out.push_back(*r);
  return out;
}

TEST(BirdProtocol, ParsesBirdsRepliesInAnyChunking) {
  std::string all = std::string(kGreeting) + kShowDown + "0011-gwlb_routes: enabled\n0000 \n" +
                    kShowAll + kUnknown + "+async message\n0010-gwlb_routes: already enabled\n0000 \n";
  for (size_t chunk : {size_t(1), size_t(2), size_t(7), all.size()}) {
    std::vector<bird::Reply> r = parseAll(all, chunk);
    ASSERT_EQ(r.size(), 6u) << "chunk " << chunk;
    EXPECT_EQ(r[0].code, 1);
    EXPECT_EQ(r[0].text(), "BIRD 2.0.12 ready.");
    EXPECT_EQ(r[1].code, 0);
    EXPECT_EQ(r[1].lines.size(), 3u);
    EXPECT_EQ(bird::protocolState(r[1], "gwlb_routes"), "down");
    EXPECT_EQ(r[2].text(), "gwlb_routes: enabled");
    EXPECT_TRUE(r[2].ok());
    EXPECT_EQ(bird::protocolState(r[3], "gwlb_routes"), "up");
    EXPECT_EQ(r[3].lines[3].code, 1006) << "a ' text' line takes the code before it";
    EXPECT_EQ(r[4].code, 9001);
    EXPECT_FALSE(r[4].ok());
    EXPECT_EQ(r[5].text(), "gwlb_routes: already enabled");
  }
}

TEST(BirdProtocol, StateOfOneProtocolOnly) {
  std::vector<bird::Reply> r = parseAll(kShowDown, 1000);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(bird::protocolState(r[0], "gwlb"));
  EXPECT_FALSE(bird::protocolState(r[0], "Name")) << "the heading is not a row";
  std::vector<bird::Reply> short_row = parseAll("1002-gwlb_routes Static\n0000 \n", 1000);
  EXPECT_FALSE(bird::protocolState(short_row[0], "gwlb_routes"));
}

TEST(BirdProtocol, GarbageAndOversizeAreErrorsNotGrowth) {
  bird::ReplyParser p;
  EXPECT_FALSE(p.feed("HTTP/1.1 200 OK\n"));
  EXPECT_NE(p.error().find("not a BIRD reply line: 'HTTP/1.1 200 OK'"), std::string::npos);
  EXPECT_FALSE(p.feed("0000 \n")) << "stays failed";
  p.reset();
  EXPECT_FALSE(p.feed(" continuation without a line before\n"));
  p.reset();
  EXPECT_FALSE(p.feed("12a4 x\n"));
  p.reset();
  std::string big(bird::kBirdMaxLine + 1, 'x');
  EXPECT_FALSE(p.feed("0001-" + big));
  EXPECT_NE(p.error().find("longer than"), std::string::npos);
  p.reset();
  std::string many;
  for (size_t i = 0; i <= bird::kBirdMaxReplyLines; ++i) many += "1002-row\n";
  EXPECT_FALSE(p.feed(many));
  EXPECT_NE(p.error().find("more than"), std::string::npos);
  p.reset();
  EXPECT_TRUE(p.feed("0000\n")) << "a bare code ends a reply";
  EXPECT_TRUE(p.next());
}

TEST(BirdProtocol, ProtocolNames) {
  EXPECT_TRUE(bird::validProtocolName("gwlb_routes"));
  EXPECT_TRUE(bird::validProtocolName("_x1"));
  EXPECT_FALSE(bird::validProtocolName(""));
  EXPECT_FALSE(bird::validProtocolName("1x"));
  EXPECT_FALSE(bird::validProtocolName("a b"));
  EXPECT_FALSE(bird::validProtocolName("a\ndisable all"));
  EXPECT_FALSE(bird::validProtocolName(std::string(65, 'a')));
}

// --- The announce rules.

AnnounceInputs ready() {
  AnnounceInputs in;
  in.dataplane_running = in.snapshot_published = in.appliances_ready = true;
  in.grace_period_s = 5;
  return in;
}

TEST(Announce, EachConditionWithdrawsWithItsReason) {
  EXPECT_TRUE(decideAnnounce(ready()).announce);
  auto why = [](AnnounceInputs in) {
    AnnounceDecision d = decideAnnounce(in);
    EXPECT_FALSE(d.announce);
    return d.reason;
  };
  AnnounceInputs in = ready();
  in.dataplane_running = false;
  EXPECT_EQ(why(in), "not ready: dataplane not running");
  in = ready();
  in.snapshot_published = false;
  EXPECT_EQ(why(in), "not ready: no snapshot published yet");
  in = ready();
  in.appliances_ready = false;
  in.appliances_why = "group g0 has no appliance in service";
  EXPECT_EQ(why(in), "not ready: group g0 has no appliance in service");
  in = ready();
  in.warm_start_done = false;
  EXPECT_EQ(why(in), "not ready: warm start");
  in = ready();
  in.destinations_drop = true;
  in.destinations_why = "destination l: unhealthy, when_all_unhealthy drop";
  EXPECT_EQ(why(in), "unhealthy: destination l: unhealthy, when_all_unhealthy drop");
  in = ready();
  in.left_by_operator = true;
  in.destinations_drop = true;
  EXPECT_EQ(why(in), "left by operator (gwlbctl fleet join to return)") << "left comes first";
  in.stopping = true;
  EXPECT_NE(why(in).find("stopping"), std::string::npos) << "stopping comes before all";
  EXPECT_NE(why(in).find("(5 s)"), std::string::npos);
}

TEST(Announce, StateWaitsForBirdAndCountsChanges) {
  AnnounceState s;
  EXPECT_EQ(s.state(), "withdrawn");
  AnnounceDecision yes = decideAnnounce(ready());
  EXPECT_TRUE(s.update(yes, false, "connect: Connection refused", 1000));
  EXPECT_EQ(s.state(), "announcing");
  EXPECT_EQ(s.reason(), "waiting for BIRD: connect: Connection refused");
  EXPECT_EQ(s.changes(), 0u);
  EXPECT_TRUE(s.update(yes, true, "", 2000));
  EXPECT_TRUE(s.announced());
  EXPECT_EQ(s.sinceNs(), 2000u);
  EXPECT_EQ(s.changes(), 1u);
  EXPECT_FALSE(s.update(yes, true, "", 3000)) << "no change";
  EXPECT_EQ(s.sinceNs(), 2000u);
  AnnounceInputs left = ready();
  left.left_by_operator = true;
  EXPECT_TRUE(s.update(decideAnnounce(left), false, "", 4000));
  EXPECT_EQ(s.state(), "withdrawn");
  EXPECT_EQ(s.changes(), 2u);
}

// --- The client against a fake BIRD.

// Answers like BIRD 2.0: a greeting, `show protocols NAME`, `enable NAME`,
// `disable NAME`; unknown names get BIRD's 9001. restart() drops every
// connection and disables every protocol again (what a BIRD restart with
// `disabled` protocols does). silent: accept and never answer.
class FakeBird {
 public:
  explicit FakeBird(std::vector<std::string> protos) {
    for (auto& p : protos) state_[p] = "down";
    path_ = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/gwlb_fake_bird_" +
            std::to_string(::getpid()) + "_" + std::to_string(counter_++) + ".ctl";
  }
  ~FakeBird() { stopServing(); }
  const std::string& path() const { return path_; }

  void serve() {
    ::unlink(path_.c_str());
    lfd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
    ASSERT_EQ(::bind(lfd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(lfd_, 4), 0);
    running_ = true;
    th_ = std::thread([this] { acceptLoop(); });
  }
  void stopServing() {
    if (!running_) return;
    running_ = false;
    ::shutdown(lfd_, SHUT_RDWR);
    ::close(lfd_);
    dropClients();
    th_.join();
    for (auto& t : clients_) t.join();
    clients_.clear();
    ::unlink(path_.c_str());
  }
  void restart() {
    stopServing();
    {
      std::lock_guard<std::mutex> g(mu_);
      for (auto& [k, v] : state_) v = "down";
    }
    serve();
  }
  std::string state(const std::string& p) {
    std::lock_guard<std::mutex> g(mu_);
    return state_[p];
  }
  void setState(const std::string& p, const std::string& s) {
    std::lock_guard<std::mutex> g(mu_);
    state_[p] = s;
  }
  std::atomic<bool> silent{false};
  std::atomic<int> enables{0}, disables{0};

 private:
  void dropClients() {
    std::lock_guard<std::mutex> g(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }
  void acceptLoop() {
    while (running_) {
      int fd = ::accept(lfd_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard<std::mutex> g(mu_);
      fds_.push_back(fd);
      clients_.emplace_back([this, fd] { session(fd); });
    }
  }
  void send(int fd, const std::string& s) { (void)!::write(fd, s.data(), s.size()); }
  void session(int fd) {
    if (!silent) send(fd, kGreeting);
    std::string buf;
    char tmp[512];
    for (;;) {
      ssize_t n = ::read(fd, tmp, sizeof tmp);
      if (n <= 0) break;
      buf.append(tmp, size_t(n));
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        std::string cmd = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        if (!silent) send(fd, answer(cmd));
      }
    }
    ::close(fd);
  }
  std::string answer(const std::string& cmd) {
    std::lock_guard<std::mutex> g(mu_);
    auto arg = [&](const std::string& verb) { return cmd.substr(verb.size()); };
    auto known = [&](const std::string& n) { return state_.count(n) != 0; };
    if (cmd.rfind("show protocols ", 0) == 0) {
      std::string n = arg("show protocols ");
      if (!known(n)) return kUnknown;
      return "2002-Name       Proto      Table      State  Since         Info\n1002-" + n +
             " Static     master4    " + state_[n] + "     17:56:15.662  \n0000 \n";
    }
    if (cmd.rfind("enable ", 0) == 0) {
      std::string n = arg("enable ");
      if (!known(n)) return kUnknown;
      ++enables;
      if (state_[n] == "up") return "0010-" + n + ": already enabled\n0000 \n";
      state_[n] = "up";
      return "0011-" + n + ": enabled\n0000 \n";
    }
    if (cmd.rfind("disable ", 0) == 0) {
      std::string n = arg("disable ");
      if (!known(n)) return kUnknown;
      ++disables;
      if (state_[n] == "down") return "0008-" + n + ": already disabled\n0000 \n";
      state_[n] = "down";
      return "0009-" + n + ": disabled\n0000 \n";
    }
    return "9001 syntax error\n";
  }

  static inline int counter_ = 0;
  std::string path_;
  int lfd_ = -1;
  std::atomic<bool> running_{false};
  std::thread th_;
  std::vector<std::thread> clients_;
  std::vector<int> fds_;
  std::mutex mu_;
  std::map<std::string, std::string> state_;
};

// Runs io until cond() holds or the deadline (generous: CI has 2 shared cores and ASan).
bool runUntil(boost::asio::io_context& io, const std::function<bool()>& cond,
              std::chrono::milliseconds deadline = 20s) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    io.restart();
    io.run_for(10ms);
  }
  return true;
}

TEST(BirdClient, AnnouncesWithdrawsAndCorrectsABirdRestart) {
  FakeBird fake({"gwlb_routes", "gwlb_routes6"});
  fake.serve();
  boost::asio::io_context io;
  auto c = std::make_shared<BirdClient>(io, fake.path(),
                                        std::vector<std::string>{"gwlb_routes", "gwlb_routes6"},
                                        50ms, 500ms);
  c->start();
  ASSERT_TRUE(runUntil(io, [&] { return c->connected() && c->rounds() >= 1; })) << c->lastError();
  EXPECT_EQ(fake.state("gwlb_routes"), "down") << "nothing enabled before it is asked";
  EXPECT_TRUE(c->converged()) << "wanted withdrawn, BIRD has them down";
  c->setAnnounce(true);
  ASSERT_TRUE(runUntil(io, [&] { return c->converged(); })) << c->lastError();
  EXPECT_EQ(fake.state("gwlb_routes"), "up");
  EXPECT_EQ(fake.state("gwlb_routes6"), "up");
  EXPECT_EQ(c->protocols()[0].state, "up");
  EXPECT_EQ(c->commandsSent(), 2u);
  // Rounds go on without sending anything while BIRD agrees.
  uint64_t r = c->rounds();
  ASSERT_TRUE(runUntil(io, [&] { return c->rounds() >= r + 3; }));
  EXPECT_EQ(c->commandsSent(), 2u);
  // BIRD restarts: its protocols come back disabled; the client re-enables them.
  fake.restart();
  ASSERT_TRUE(runUntil(io, [&] { return fake.state("gwlb_routes") == "up" &&
                                        fake.state("gwlb_routes6") == "up" && c->converged(); }))
      << c->lastError();
  EXPECT_EQ(c->commandsSent(), 4u);
  // Someone enables/disables by hand: corrected too.
  fake.setState("gwlb_routes6", "down");
  ASSERT_TRUE(runUntil(io, [&] { return fake.state("gwlb_routes6") == "up"; }));
  c->setAnnounce(false);
  ASSERT_TRUE(runUntil(io, [&] { return c->converged(); })) << c->lastError();
  EXPECT_EQ(fake.state("gwlb_routes"), "down");
  EXPECT_EQ(fake.state("gwlb_routes6"), "down");
  c->stop();
}

TEST(BirdClient, NoBirdThenBirdAppears) {
  FakeBird fake({"gwlb_routes"});  // not serving yet: the path does not exist
  boost::asio::io_context io;
  auto c = std::make_shared<BirdClient>(io, fake.path(), std::vector<std::string>{"gwlb_routes"},
                                        50ms, 500ms);
  c->start();
  c->setAnnounce(true);
  ASSERT_TRUE(runUntil(io, [&] { return c->failures() >= 2; }));
  EXPECT_FALSE(c->connected());
  EXPECT_NE(c->lastError().find("connect:"), std::string::npos) << c->lastError();
  EXPECT_FALSE(c->converged());
  EXPECT_EQ(c->protocols()[0].state, "unknown");
  fake.serve();
  ASSERT_TRUE(runUntil(io, [&] { return c->converged(); })) << c->lastError();
  EXPECT_EQ(fake.state("gwlb_routes"), "up");
  EXPECT_EQ(c->lastError(), "");
  c->stop();
}

TEST(BirdClient, SilentBirdTimesOutWithoutStallingTheLoop) {
  FakeBird fake({"gwlb_routes"});
  fake.silent = true;
  fake.serve();
  boost::asio::io_context io;
  auto c = std::make_shared<BirdClient>(io, fake.path(), std::vector<std::string>{"gwlb_routes"},
                                        50ms, 200ms);
  // A timer on the same loop keeps firing: the client never blocks it.
  boost::asio::steady_timer t(io);
  int ticks = 0;
  std::function<void()> arm = [&] {
    t.expires_after(10ms);
    t.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) ++ticks, arm();
    });
  };
  arm();
  c->start();
  c->setAnnounce(true);
  ASSERT_TRUE(runUntil(io, [&] { return c->failures() >= 2; }));
  EXPECT_NE(c->lastError().find("no answer to '(greeting)' within 200 ms"), std::string::npos)
      << c->lastError();
  EXPECT_FALSE(c->connected());
  EXPECT_GT(ticks, 20);
  c->stop();
  t.cancel();
}

TEST(BirdClient, ProtocolMissingInBirdIsReported) {
  FakeBird fake({"gwlb_routes"});
  fake.serve();
  boost::asio::io_context io;
  auto c = std::make_shared<BirdClient>(io, fake.path(),
                                        std::vector<std::string>{"gwlb_routes", "typo_routes"}, 50ms,
                                        500ms);
  c->start();
  c->setAnnounce(true);
  ASSERT_TRUE(runUntil(io, [&] { return fake.state("gwlb_routes") == "up" && c->rounds() >= 2; }));
  EXPECT_EQ(c->protocols()[1].state, "missing");
  EXPECT_NE(c->lastError().find("BIRD has no protocol typo_routes"), std::string::npos)
      << c->lastError();
  EXPECT_FALSE(c->converged());
  EXPECT_TRUE(c->connected()) << "a missing protocol is not a connection problem";
  c->stop();
}

}  // namespace
}  // namespace gwlb::ctl
