// gwlbd's HTTP listeners and the control loop's guard (issue 14 items 1 and 3),
// on a plain io_context with real loopback sockets: no EAL, no daemon.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "control/runtime/control_loop.h"
#include "control/api/health_endpoint.h"
#include "control/api/http_request.h"
#include "control/api/http_server.h"

namespace gwlb::ctl {
namespace {

HttpHandler echo() {
  return [](const std::string& path) { return HttpReply{200, "text/plain", "path=" + path}; };
}

TEST(HttpRequest, HeadEndAcceptsCrlfAndLoneLf) {
  EXPECT_EQ(httpHeadEnd("GET / HTTP/1.1\r\n\r\n"), 18u);
  EXPECT_EQ(httpHeadEnd("GET / HTTP/1.1\n\n"), 16u);
  EXPECT_EQ(httpHeadEnd("GET / HTTP/1.1\r\nA: b\n\r\nrest"), 23u);
  EXPECT_EQ(httpHeadEnd("GET / HTTP/1.1\r\nA: b\r\n"), std::string::npos);
  EXPECT_EQ(httpHeadEnd("\r\r\r\r"), std::string::npos);
  // Fed a byte at a time with `from` = the previous size, it finds the same end.
  std::string req = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
  size_t found = std::string::npos;
  for (size_t n = 1; n <= req.size() && found == std::string::npos; ++n)
    found = httpHeadEnd(std::string_view(req).substr(0, n), n - 1);
  EXPECT_EQ(found, req.size());
}

TEST(HttpRequest, StatusesForEveryKindOfRequest) {
  auto status = [](std::string_view head, bool too_large = false) {
    std::string r = httpRespond(head, too_large, echo());
    return std::stoi(r.substr(9, 3));
  };
  EXPECT_EQ(status("GET /metrics HTTP/1.1\r\n\r\n"), 200);
  EXPECT_EQ(status("GET /metrics"), 200) << "no version, no line end (EOF-terminated)";
  EXPECT_EQ(status("POST /metrics HTTP/1.1\r\n\r\n"), 405);
  EXPECT_EQ(status("GET\r\n\r\n"), 400);
  EXPECT_EQ(status("\r\n\r\n"), 400);
  EXPECT_EQ(status("GET http://h/metrics HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET /metrics HTTP/1.1\r\n\r\n", true), 431);
  std::string get = httpRespond("GET /a?b=\xff HTTP/1.1\r\n\r\n", false, echo());
  EXPECT_NE(get.find("\r\nContent-Length: 7\r\n"), std::string::npos) << get;
  EXPECT_EQ(get.substr(get.size() - 7), "path=/a") << "query removed";
  std::string head = httpRespond("HEAD /a HTTP/1.1\r\n\r\n", false, echo());
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n") << "HEAD: headers only";
  EXPECT_NE(head.find("Content-Length: 7"), std::string::npos);
}

TEST(HttpRequest, ThrowingHandlerGets500AndItsMessage) {
  std::string error;
  std::string r = httpRespond("GET / HTTP/1.1\r\n\r\n", false,
                              [](const std::string&) -> HttpReply { throw std::runtime_error("boom"); },
                              &error);
  EXPECT_EQ(r.rfind("HTTP/1.1 500 ", 0), 0u) << r;
  EXPECT_EQ(error, "boom");
}

// The text gwlbd sent for GET /destinations/\xff before issue 14: nlohmann
// threw type_error.316 out of the handler and out of io_context::run().
TEST(HealthEndpoint, InvalidUtf8InTheNameIsAnsweredNotThrown) {
  std::vector<RegionTracker::Listener> ls(1);
  ls[0].name = "inspect";
  auto render = [](const RegionTracker::Listener& l) { return nlohmann::json{{"name", l.name}}; };
  HttpReply r;
  ASSERT_NO_THROW(r = destinationsReply("/destinations/\xff", ls, render));
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(r.body.find("\xEF\xBF\xBD"), std::string::npos) << "U+FFFD stands for the bad byte";
  EXPECT_FALSE(nlohmann::json::parse(r.body, nullptr, false).is_discarded());
  ls[0].name = "bad\xc3";  // a name that is itself not UTF-8 (never valid config, still no throw)
  ASSERT_NO_THROW(r = destinationsReply("/destinations", ls, render));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(destinationsReply("/destinations/inspect", {}, render).status, 404);
}

// A loopback client: connect, send, read to EOF.
int connectTo(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string readAll(int fd) {
  std::string out;
  char b[4096];
  ssize_t n;
  while ((n = ::recv(fd, b, sizeof b, 0)) > 0) out.append(b, size_t(n));
  return out;
}

std::string request(uint16_t port, const std::string& req) {
  int fd = connectTo(port);
  if (fd < 0) return "connect failed";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string r = readAll(fd);
  ::close(fd);
  return r;
}

// "127.0.0.1:PORT" with a port free a moment ago (listen addresses need a port).
std::string freeListen() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

// Runs an io_context (with runControlLoop, as gwlbd does) on a thread.
struct Loop {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread t;
  void start() { t = std::thread([this] { runControlLoop(io); }); }
  ~Loop() {
    work.reset();
    io.stop();
    if (t.joinable()) t.join();
  }
};

TEST(HttpServer, AHandlerThatThrowsCosts500NotTheServer) {
  Loop loop;
  int calls = 0;
  HttpServer srv(loop.io, freeListen(), "test.listen", "test", [&](const std::string& p) {
    if (++calls == 1) throw std::runtime_error("first request fails");
    return HttpReply{200, "text/plain", "ok " + p};
  });
  uint16_t port = srv.port();
  uint64_t before = controlFaults().total();
  loop.start();
  EXPECT_EQ(request(port, "GET /a HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 500 ", 0), 0u);
  std::string r = request(port, "GET /b HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
  EXPECT_EQ(r.substr(r.size() - 5), "ok /b");
  boost::asio::post(loop.io, [&] { loop.io.stop(); });
  loop.t.join();
  EXPECT_EQ(controlFaults().total(), before + 1);
  EXPECT_EQ(srv.stats().handler_errors, 1u);
}

TEST(HttpServer, AtTheCapTheOldestConnectionMakesRoom) {
  Loop loop;
  HttpServer srv(loop.io, freeListen(), "test.listen", "test", echo());
  uint16_t port = srv.port();
  loop.start();
  std::vector<int> idle;
  for (size_t i = 0; i < kHttpMaxConnections + 10; ++i) {
    int fd = connectTo(port);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  // A real client still gets its answer at once.
  auto t0 = std::chrono::steady_clock::now();
  std::string r = request(port, "GET /x HTTP/1.1\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.1 200 ", 0), 0u) << r;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  // The first idle ones were closed by the server (EOF before the deadline).
  char b;
  EXPECT_EQ(::recv(idle[0], &b, 1, 0), 0);
  EXPECT_EQ(::recv(idle[10], &b, 1, 0), 0);
  for (int fd : idle) ::close(fd);
  boost::asio::post(loop.io, [&] { loop.io.stop(); });
  loop.t.join();
  EXPECT_GE(srv.stats().evicted, 11u);
  EXPECT_LE(srv.stats().open, kHttpMaxConnections);
}

TEST(ControlLoop, SurvivesAnExceptionFromAnyHandler) {
  boost::asio::io_context io;
  uint64_t before = controlFaults().total();
  bool later_ran = false;
  boost::asio::post(io, [] { throw std::runtime_error("a handler fails"); });
  boost::asio::post(io, [] { throw 42; });
  boost::asio::steady_timer t(io, std::chrono::milliseconds(20));
  t.async_wait([&](const boost::system::error_code&) { later_ran = true; });
  EXPECT_EQ(runControlLoop(io), 2u);
  EXPECT_TRUE(later_ran) << "the loop went on after both";
  EXPECT_EQ(controlFaults().total(), before + 2);
  EXPECT_GE(controlFaults().byWhere().at("loop"), 2u);
  // guarded(): a timer body that throws is counted; the caller re-arms.
  EXPECT_FALSE(guarded("timer", [] { throw std::logic_error("x"); }));
  EXPECT_TRUE(guarded("timer", [] {}));
  EXPECT_EQ(controlFaults().byWhere().at("timer"), 1u);
}

}  // namespace
}  // namespace gwlb::ctl
