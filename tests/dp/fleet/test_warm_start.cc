// This node's warm start against fake peers on 127.0.0.1 (issue 24 items 1
// and 2; docs/fleet.md "Warm start"):
//  - a peer whose SYNs are dropped (its accept queue is full), one that
//    accepts and never answers, and one that sends part of its table and
//    stops are each left after their own deadline, and the node gets the
//    whole table from the next, good peer, long before warm_start_timeout;
//  - a transfer that keeps arriving is never cut, however much longer than
//    warm_start_timeout it takes; with nobody answering the warm start still
//    ends after warm_start_timeout, having asked round the list;
//  - a peers entry that reaches this node itself (here through a port
//    forward, as a relay on loopback) is found out on the warm-start
//    listener and on the UDP socket, and skipped; messages under this node's
//    own name from another node are refused on both;
//  - the peer's appliance bypasses arrive with its table, and this node
//    serves its own only to a requester that takes them.
// Each fake peer is a thread with blocking sockets; the node's io_context
// runs on the test thread.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "common/flow_cookie.h"
#include "control/fleet/fleet_sync.h"
#include "dataplane/worker.h"
#include "tests/dp/dp_harness.h"
#include "tests/dp/sync_sockets.h"

namespace gwlb::dptest {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

uint64_t unixMsNow() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

const sync::SyncKey& fleetKey() {
  static const sync::SyncKey k = sync::SyncKey::fromHashKey(flowHashKey().k0, flowHashKey().k1);
  return k;
}

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  return a;
}

uint16_t boundPort(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// Waits until fd is readable or `stop` is set: false on stop.
bool waitReadable(int fd, const std::atomic<bool>& stop) {
  pollfd p{fd, POLLIN, 0};
  while (!stop) {
    int r = ::poll(&p, 1, 20);
    if (r > 0) return true;
  }
  return false;
}

// Reads exactly n bytes: false on EOF, an error or `stop`.
bool readFull(int fd, uint8_t* d, size_t n, const std::atomic<bool>& stop) {
  while (n > 0) {
    if (!waitReadable(fd, stop)) return false;
    ssize_t r = ::recv(fd, d, n, 0);
    if (r <= 0) return false;
    d += r, n -= size_t(r);
  }
  return true;
}

bool writeAll(int fd, const uint8_t* d, size_t n) {
  while (n > 0) {
    ssize_t r = ::send(fd, d, n, MSG_NOSIGNAL);
    if (r <= 0) return false;
    d += r, n -= size_t(r);
  }
  return true;
}

// One length-prefixed frame of the warm-start stream.
std::vector<uint8_t> frame(const sync::Header& h, const sync::Record* recs, size_t n,
                           uint64_t total = 0) {
  std::vector<uint8_t> f(2 + sync::kMaxMessage);
  size_t len = sync::encode(fleetKey(), h, recs, n, f.data() + 2, sync::kMaxMessage, total);
  f[0] = uint8_t(len), f[1] = uint8_t(len >> 8);
  f.resize(2 + len);
  return f;
}

// A fake fleet peer listening on 127.0.0.1 (TCP).
class FakePeer {
 public:
  enum class Mode {
    kBlackhole,  // its accept queue is full: SYNs to it are dropped, a connect hangs
    kSilent,     // the kernel accepts connections; it never reads nor answers
    kStall,      // answers with `stall_after` messages of its table, then sends nothing
    kSlow,       // sends its whole table, one message every `gap`, then the end
    kGood,       // sends its whole table, then the end
    kBurst,      // sends its whole table and the end in one write
    kReplaysSelf,  // answers with a message of the asking node's own (a keepalive kept)
  };
  FakePeer(Mode mode, std::vector<sync::Record> table = {}, size_t stall_after = 0,
           std::chrono::milliseconds gap = 0ms)
      : mode_(mode), table_(std::move(table)), stall_after_(stall_after), gap_(gap) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    port_ = boundPort(fd_);
    EXPECT_EQ(::listen(fd_, mode == Mode::kBlackhole ? 0 : 8), 0);
    if (mode == Mode::kBlackhole) {
      // Backlog 0 holds one connection: fill it, nobody accepts it, and the
      // kernel drops every later SYN (the connect of the node under test hangs).
      for (int i = 0; i < 2; ++i) {
        int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        sockaddr_in to = loopback(port_);
        ::connect(c, reinterpret_cast<sockaddr*>(&to), sizeof to);
        fillers_.push_back(c);
      }
      std::this_thread::sleep_for(50ms);
    } else if (mode != Mode::kSilent) {
      thread_ = std::thread([this] { serve(); });
    }
  }
  ~FakePeer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int c : fillers_) ::close(c);
    ::close(fd_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }
  uint64_t lastNonce() const { return nonce_; }  // of the last warm-start request

 private:
  void serve() {
    while (!stop_) {
      if (!waitReadable(fd_, stop_)) return;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      answer(c);
      ::close(c);
    }
  }
  void answer(int c) {
    uint8_t len[2];
    if (!readFull(c, len, 2, stop_)) return;
    std::vector<uint8_t> req(size_t(len[0] | len[1] << 8));
    if (!readFull(c, req.data(), req.size(), stop_)) return;
    sync::Header rh;
    sync::Record none[sync::kMaxRecords];
    if (sync::decode(fleetKey(), req.data(), req.size(), rh, none) != sync::Status::kOk ||
        rh.type != sync::MsgType::kWarmRequest)
      return;
    ++requests_;
    nonce_ = rh.nonce;
    if (mode_ == Mode::kReplaysSelf) {
      // A keepalive of the asking node's (its node id and epoch, no nonce),
      // as anyone who captured one could send it into the stream.
      sync::Header k;
      k.node = rh.node;
      k.epoch = rh.epoch;
      k.seq = rh.seq;
      k.time_ms = unixMsNow();
      auto f = frame(k, nullptr, 0);
      writeAll(c, f.data(), f.size());
      return;
    }
    sync::Header h;
    h.node = sync::nodeId("gw-fake-" + std::to_string(port_));
    h.epoch = 99;
    h.nonce = rh.nonce;
    size_t messages = 0;
    std::vector<uint8_t> burst;
    auto send = [&](const std::vector<uint8_t>& f) {
      if (mode_ != Mode::kBurst) return writeAll(c, f.data(), f.size());
      burst.insert(burst.end(), f.begin(), f.end());
      return true;
    };
    for (size_t i = 0; i < table_.size(); i += sync::kMaxRecords) {
      if (mode_ == Mode::kStall && messages == stall_after_) {
        // Stalled mid-stream (a peer that lost power): the connection stays.
        uint8_t b;
        while (waitReadable(c, stop_) && ::recv(c, &b, 1, 0) > 0) {
        }
        return;
      }
      if (mode_ == Mode::kSlow && messages > 0) std::this_thread::sleep_for(gap_);
      h.type = sync::MsgType::kTransfer;
      h.seq = ++messages;
      h.time_ms = unixMsNow();
      size_t n = std::min(sync::kMaxRecords, table_.size() - i);
      auto f = frame(h, table_.data() + i, n);
      if (!send(f)) return;
    }
    h.type = sync::MsgType::kWarmEnd;
    h.seq = ++messages;
    h.time_ms = unixMsNow();
    send(frame(h, nullptr, 0, table_.size()));
    if (mode_ == Mode::kBurst) writeAll(c, burst.data(), burst.size());
  }

  Mode mode_;
  std::vector<sync::Record> table_;
  size_t stall_after_;
  std::chrono::milliseconds gap_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::vector<int> fillers_;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::atomic<uint64_t> nonce_{0};
  std::thread thread_;
};

// A port forward on 127.0.0.1 to `target` (a node's own sync port), of TCP,
// UDP or both: the way a fleet.peers entry can reach the node itself without
// naming its address.
class Relay {
 public:
  enum class Carries { kTcp, kUdp };
  Relay(uint16_t target, Carries what) : target_(target) {
    bool udp_only = what == Carries::kUdp;
    for (;;) {
      uint16_t p = freeSyncPort();
      sockaddr_in a = loopback(p);
      if (udp_only) {
        udp_ = ::socket(AF_INET, SOCK_DGRAM, 0);
        if (::bind(udp_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
          ::close(udp_);
          continue;
        }
      } else {
        tcp_ = ::socket(AF_INET, SOCK_STREAM, 0);
        if (::bind(tcp_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(tcp_, 8) != 0) {
          ::close(tcp_);
          continue;
        }
      }
      port_ = p;
      break;
    }
    thread_ = std::thread([this] { run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
    for (int fd : {udp_, tcp_, a_, b_})
      if (fd >= 0) ::close(fd);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int datagrams() const { return datagrams_; }

 private:
  void run() {
    uint8_t buf[65536];
    while (!stop_) {
      std::vector<pollfd> p;
      if (udp_ >= 0) p.push_back({udp_, POLLIN, 0});
      if (tcp_ >= 0 && a_ < 0) p.push_back({tcp_, POLLIN, 0});
      if (a_ >= 0) p.push_back({a_, POLLIN, 0}), p.push_back({b_, POLLIN, 0});
      if (::poll(p.data(), p.size(), 20) <= 0) continue;
      for (const pollfd& x : p) {
        if (!(x.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (x.fd == udp_ && udp_ >= 0) {
          ssize_t n = ::recv(udp_, buf, sizeof buf, 0);
          sockaddr_in to = loopback(target_);
          if (n > 0 && ::sendto(udp_, buf, size_t(n), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) == n)
            ++datagrams_;
        } else if (x.fd == tcp_) {
          a_ = ::accept(tcp_, nullptr, nullptr);
          b_ = ::socket(AF_INET, SOCK_STREAM, 0);
          sockaddr_in to = loopback(target_);
          ::connect(b_, reinterpret_cast<sockaddr*>(&to), sizeof to);
        } else if (a_ >= 0) {
          int from = x.fd, to = x.fd == a_ ? b_ : a_;
          ssize_t n = ::recv(from, buf, sizeof buf, 0);
          if (n <= 0 || !writeAll(to, buf, size_t(n))) {
            ::close(a_), ::close(b_);
            a_ = b_ = -1;
            break;
          }
        }
      }
    }
  }

  uint16_t target_, port_ = 0;
  int udp_ = -1, tcp_ = -1, a_ = -1, b_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<int> datagrams_{0};
  std::thread thread_;
};

class WarmStart : public ::testing::Test {
 protected:
  void SetUp() override { h_ = std::make_unique<Harness>(); }
  void TearDown() override {
    fs_.reset();
    h_.reset();
  }
  ctl::FleetSync::Options options(std::vector<std::string> peers, uint32_t timeout_s,
                                  uint32_t connect_ms, uint32_t idle_ms) {
    ctl::FleetSync::Options o;
    o.node_name = "gw-warm";
    o.secret = flowHashKey();
    o.peers = std::move(peers);
    o.warm_start_timeout_s = timeout_s;
    o.warm_connect_timeout_ms = connect_ms;
    o.warm_idle_timeout_ms = idle_ms;
    return o;
  }
  void make(ctl::FleetSync::Options o) {
    bindRetrying(o.listen, [&] {
      fs_ = std::make_unique<ctl::FleetSync>(io_, o, h_->flows(), nullptr,
                                             [this] { return &h_->snapshot(); });
    });
  }
  // Makes the node on `port` (a Relay already forwards there): false when
  // another process took the port meanwhile.
  bool makeOn(ctl::FleetSync::Options o, uint16_t port) {
    o.listen = "127.0.0.1:" + std::to_string(port);
    try {
      fs_ = std::make_unique<ctl::FleetSync>(io_, o, h_->flows(), nullptr,
                                             [this] { return &h_->snapshot(); });
      return true;
    } catch (const std::runtime_error& e) {
      if (!std::strstr(e.what(), "in use")) throw;
      return false;
    }
  }
  // Runs the node's io_context until its warm start is over, at most `wall`.
  void runWarmStart(std::chrono::seconds wall) {
    auto end = Clock::now() + wall;
    while (!fs_->warmStartDone() && Clock::now() < end) io_.run_for(20ms);
  }
  void runFor(std::chrono::milliseconds d) {
    auto end = Clock::now() + d;
    while (Clock::now() < end) io_.run_for(20ms);
  }
  // A peer's table of n flows (client port 42000 + i), each on an appliance
  // this node's own table does not pick for it.
  std::vector<sync::Record> table(int n) {
    std::vector<sync::Record> t;
    const dp::Snapshot& s = h_->snapshot();
    const auto& g = s.groups[0];
    for (int i = 0; i < n; ++i) {
      L4Tuple tu;
      tu.src = net().client4;
      tu.dst = net().server4;
      tu.proto = 6;
      tu.sport = uint16_t(42000 + i);
      tu.dport = 443;
      sync::Record r;
      r.key = makeFlowKey(tu, StickinessMode::kFiveTuple, 0).key;
      r.flow_hash = flowHash(r.key);
      uint32_t picked = s.appliances[g.maglev[r.flow_hash % g.maglev.size()]].ip;
      for (const IpAddr& a : net().appliances)
        if (a.v4HostOrder() != picked) r.appliance = a.v4HostOrder();
      r.cookie = flowCookie(r.flow_hash, r.appliance);
      r.kind = sync::RecordKind::kTransfer;
      r.idle_for_ms = 1000;
      r.age_ms = 5000;
      t.push_back(r);
    }
    return t;
  }
  // This node holds every flow of `t` with its appliance and cookie.
  void expectHolds(const std::vector<sync::Record>& t) {
    for (size_t i = 0; i < t.size(); ++i) {
      const sync::Record& r = t[i];
      int32_t pos = h_->flows().lookup(r.key, r.flow_hash);
      ASSERT_GE(pos, 0) << "flow " << i << " of the peer's table not installed";
      sync::Record back;
      ASSERT_TRUE(fs_->makeRecord(pos, r.key, sync::RecordKind::kRefresh, dp::monotonicNs(), back));
      EXPECT_EQ(back.appliance, r.appliance);
      EXPECT_EQ(back.cookie, r.cookie);
    }
  }
  std::string warmError(size_t peer) { return peerField(peer, "warm_start_error"); }
  // A string field of peers[i] in fleet_sync's status ("" when absent).
  std::string peerField(size_t peer, const char* name) {
    nlohmann::json st = fs_->status();
    const nlohmann::json& e = st["peers"][peer][name];
    return e.is_string() ? e.get<std::string>() : "";
  }
  uint64_t fromSelf() { return fs_->status().value("from_self", uint64_t(0)); }
  bool isThisNode(size_t peer) { return fs_->status()["peers"][peer].value("this_node", false); }

  boost::asio::io_context io_;
  std::unique_ptr<Harness> h_;
  std::unique_ptr<ctl::FleetSync> fs_;
};

TEST_F(WarmStart, UnresponsivePeersAreLeftAndTheNextPeersTableIsInstalled) {
  auto t = table(100);  // 6 messages of at most 17 records
  FakePeer blackhole(FakePeer::Mode::kBlackhole), silent(FakePeer::Mode::kSilent),
      stalls(FakePeer::Mode::kStall, t, 2), good(FakePeer::Mode::kGood, t);
  // Per peer: 0.5 s to connect, 1 s of silence; 30 s for the whole.
  make(options({blackhole.address(), silent.address(), stalls.address(), good.address()}, 30, 500,
                1000));
  fs_->start();
  runWarmStart(40s);
  nlohmann::json st = fs_->status();
  nlohmann::json w = st["warm_start"];
  ASSERT_EQ(w["state"], "done") << "the blackholed connect held the warm start until its timeout: "
                                << st.dump();
  EXPECT_EQ(w["peer"], good.address());
  EXPECT_EQ(w["flows_received"], 100u);
  EXPECT_EQ(w["peer_total"], 100u);
  EXPECT_GE(w["attempts"].get<unsigned>(), 4u) << "each peer asked";
  EXPECT_NE(warmError(0).find("no connection within fleet.warm_start_connect_timeout (0.5 s)"),
            std::string::npos) << warmError(0);
  EXPECT_NE(warmError(1).find("no answer within fleet.warm_start_idle_timeout (1 s)"),
            std::string::npos) << warmError(1);
  EXPECT_NE(warmError(2).find("stalled: nothing for fleet.warm_start_idle_timeout (1 s) after 34 flows"),
            std::string::npos) << warmError(2);
  EXPECT_EQ(stalls.requests(), 1);
  EXPECT_GE(good.requests(), 1);
  expectHolds(t);
}

TEST_F(WarmStart, ATransferThatKeepsArrivingIsNotCutByTheTimeout) {
  auto t = table(int(sync::kMaxRecords) * 12);
  // 12 messages 200 ms apart: at least 2.2 s, against a 1 s warm_start_timeout
  // (each gap well inside the 1.5 s idle deadline).
  FakePeer slow(FakePeer::Mode::kSlow, t, 0, 200ms);
  make(options({slow.address()}, 1, 500, 1500));
  fs_->start();
  runWarmStart(30s);
  nlohmann::json st = fs_->status();
  nlohmann::json w = st["warm_start"];
  ASSERT_EQ(w["state"], "done") << st.dump();
  EXPECT_EQ(w["flows_received"], t.size());
  EXPECT_GT(w["elapsed_s"].get<double>(), 2.0) << "it outlasted warm_start_timeout";
  expectHolds(t);
}

// The stream is read many messages at a time, not with a read per length
// prefix and one per message (two per message before: 242 reads here), and
// each read's records are installed as one batch.
TEST_F(WarmStart, TheTransferIsReadManyMessagesAtATimeAndInstalledInBatches) {
  auto t = table(int(sync::kMaxRecords) * 120);  // 120 messages and the end, 164 kB
  FakePeer burst(FakePeer::Mode::kBurst, t);
  make(options({burst.address()}, 30, 500, 3000));
  fs_->start();
  runWarmStart(30s);
  nlohmann::json st = fs_->status();
  nlohmann::json w = st["warm_start"];
  ASSERT_EQ(w["state"], "done") << st.dump();
  EXPECT_EQ(w["flows_received"], t.size());
  EXPECT_EQ(w["flows_installed"], t.size());
  EXPECT_LE(w["reads"].get<uint64_t>(), 30u) << w.dump();
  EXPECT_GE(w["install_batches"].get<uint64_t>(), 1u) << w.dump();
  EXPECT_LE(w["install_batches"], w["reads"]) << w.dump();
  expectHolds(t);
}

// A warm start keeps the peer's appliance bypasses (docs/product-rules.md
// "Appliance-requested bypass"): the request says this node takes the
// record flags, and each flow the peer's appliance handed back is bypassed
// here too, for the flow's life or for the seconds the peer had left; a flow
// without one stays inspected.
TEST_F(WarmStart, ThePeersBypassesArriveWithItsTable) {
  auto t = table(int(sync::kMaxRecords) + 3);  // two messages
  t[0].bypass = sync::kRecordBypassed;  // for the flow's life
  t[1].bypass = sync::kRecordBypassed | sync::kRecordBypassTimed;
  t[1].bypass_left_s = 300;
  t.back().bypass = sync::kRecordBypassed | sync::kRecordBypassTimed;  // in the second message
  t.back().bypass_left_s = 60;
  FakePeer good(FakePeer::Mode::kGood, t);
  make(options({good.address()}, 30, 500, 3000));
  fs_->start();
  runWarmStart(30s);
  ASSERT_EQ(fs_->status()["warm_start"]["state"], "done") << fs_->status().dump();
  EXPECT_EQ(good.lastNonce() & 0xFFFF, sync::kWarmNonceBypassMark) << "the request did not say it takes bypasses";
  expectHolds(t);
  const uint64_t now = dp::monotonicNs();
  auto route = [&](const sync::Record& r) {
    return h_->flows().entry(h_->flows().lookup(r.key, r.flow_hash)).route.load();
  };
  EXPECT_TRUE(dp::routeBypassed(route(t[0])) && !dp::routeBypassTimed(route(t[0])));
  ASSERT_TRUE(dp::routeBypassed(route(t[1])) && dp::routeBypassTimed(route(t[1])));
  EXPECT_NEAR(double(dp::bypassUntilNs(route(t[1]), now) - now) / 1e9, 300.0, 5.0);
  ASSERT_TRUE(dp::routeBypassed(route(t.back())) && dp::routeBypassTimed(route(t.back())));
  EXPECT_NEAR(double(dp::bypassUntilNs(route(t.back()), now) - now) / 1e9, 60.0, 5.0);
  for (size_t i = 2; i + 1 < t.size(); ++i) EXPECT_FALSE(dp::routeBypassed(route(t[i]))) << "flow " << i;
}

// Serving a warm start: a flow's appliance bypass goes to a requester whose
// request says it takes record flags, never to one that does not (that node
// keeps inspecting the flow).
TEST_F(WarmStart, ItServesItsBypassesOnlyToANodeThatSaysItTakesThem) {
  // Its one peer on 127.0.0.1 (nothing listens there: its own warm start
  // ends at once), the address it serves warm starts to.
  const std::string peer = "127.0.0.1:" + std::to_string(freeSyncPort());
  uint16_t port = 0;
  for (int tries = 0;; ++tries) {
    port = freeSyncPort();
    if (makeOn(options({peer}, 1, 200, 200), port)) break;
    ASSERT_LT(tries, 20);
  }
  fs_->start();
  runWarmStart(10s);
  auto t = table(3);
  t[0].bypass = sync::kRecordBypassed;
  t[1].bypass = sync::kRecordBypassed | sync::kRecordBypassTimed;
  t[1].bypass_left_s = 300;
  for (const sync::Record& r : t) ASSERT_EQ(fs_->install(r, dp::monotonicNs()), ctl::InstallResult::kInstalled);
  // A requester on its own thread (the node's io_context runs on this one):
  // the records of the whole transfer.
  auto ask = [&](uint64_t nonce) {
    std::map<uint32_t, sync::Record> got;  // by flow hash
    std::atomic<bool> done{false}, stop{false};
    std::thread asker([&] {
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in to = loopback(port);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) {
        sync::Header h;
        h.type = sync::MsgType::kWarmRequest;
        h.node = sync::nodeId("gw-asker");
        h.epoch = 5;
        h.seq = 1;
        h.time_ms = unixMsNow();
        h.nonce = nonce;
        auto f = frame(h, nullptr, 0);
        writeAll(fd, f.data(), f.size());
        uint8_t len[2];
        std::vector<uint8_t> msg;
        sync::Record recs[sync::kMaxRecords];
        while (readFull(fd, len, 2, stop)) {
          msg.resize(size_t(len[0] | len[1] << 8));
          sync::Header rh;
          if (!readFull(fd, msg.data(), msg.size(), stop) ||
              sync::decode(fleetKey(), msg.data(), msg.size(), rh, recs) != sync::Status::kOk ||
              rh.type == sync::MsgType::kWarmEnd)
            break;
          for (uint16_t i = 0; i < rh.count; ++i) got[recs[i].flow_hash] = recs[i];
        }
      }
      ::close(fd);
      done = true;
    });
    auto end = Clock::now() + 10s;
    while (!done && Clock::now() < end) io_.run_for(20ms);
    stop = true;
    asker.join();
    return got;
  };
  auto takes = ask((0x5eed000000000000ULL & ~uint64_t(0xFFFF)) | sync::kWarmNonceBypassMark);
  ASSERT_EQ(takes.size(), t.size()) << fs_->status().dump();
  EXPECT_EQ(takes[t[0].flow_hash].bypass, sync::kRecordBypassed);
  EXPECT_EQ(takes[t[1].flow_hash].bypass, sync::kRecordBypassed | sync::kRecordBypassTimed);
  EXPECT_NEAR(takes[t[1].flow_hash].bypass_left_s, 300, 5);
  EXPECT_EQ(takes[t[2].flow_hash].bypass, 0);
  auto older = ask(0x01d0000000000001ULL);
  ASSERT_EQ(older.size(), t.size()) << fs_->status().dump();
  for (const auto& [hash, r] : older) {
    EXPECT_EQ(r.bypass, 0) << "flow " << hash << ": a bypass to a node that does not take it";
    EXPECT_EQ(r.bypass_left_s, 0);
  }
}

TEST_F(WarmStart, WithNobodyAnsweringItEndsAfterTheTimeoutHavingAskedRoundTheList) {
  FakePeer blackhole(FakePeer::Mode::kBlackhole), silent(FakePeer::Mode::kSilent);
  make(options({blackhole.address(), silent.address()}, 2, 200, 200));
  fs_->start();
  runWarmStart(30s);
  nlohmann::json st = fs_->status();
  nlohmann::json w = st["warm_start"];
  ASSERT_EQ(w["state"], "timed_out") << st.dump();
  EXPECT_GE(w["attempts"].get<unsigned>(), 3u) << "each peer asked, and again: " << st.dump();
  EXPECT_TRUE(w["asking"].is_null());
  EXPECT_NE(warmError(0).find("no connection within"), std::string::npos) << warmError(0);
  EXPECT_NE(warmError(1).find("no answer within"), std::string::npos) << warmError(1);
}

// Issue 24 item 2: an entry that is this node (a port forward of TCP to its
// own sync port) is found out by its own warm-start request and skipped; the
// node gets the table of the next peer, not its own empty one.
TEST_F(WarmStart, AnEntryThatReachesThisNodeIsFoundOutAndSkipped) {
  auto t = table(40);
  FakePeer good(FakePeer::Mode::kGood, t);
  std::unique_ptr<Relay> relay;
  for (int tries = 0;; ++tries) {
    uint16_t port = freeSyncPort();
    relay = std::make_unique<Relay>(port, Relay::Carries::kTcp);
    if (makeOn(options({relay->address(), good.address()}, 20, 500, 1000), port)) break;
    ASSERT_LT(tries, 20);
  }
  fs_->start();
  runWarmStart(30s);
  nlohmann::json st = fs_->status();
  nlohmann::json w = st["warm_start"];
  ASSERT_EQ(w["state"], "done") << st.dump();
  EXPECT_EQ(w["peer"], good.address()) << "not its own table: " << st.dump();
  EXPECT_EQ(w["flows_received"], 40u);
  EXPECT_TRUE(isThisNode(0)) << st.dump();
  EXPECT_NE(peerField(0, "this_node_why").find("reached this node's own listener"), std::string::npos)
      << st.dump();
  EXPECT_FALSE(isThisNode(1));
  EXPECT_GE(fromSelf(), 1u);
  EXPECT_EQ(st["transfers_served"], 0u) << "it served nothing to itself";
  expectHolds(t);
  std::string metrics;
  fs_->metrics(metrics);
  EXPECT_NE(metrics.find("gwlb_fleet_sync_peer_is_this_node{peer=\"" + relay->address() + "\"} 1"),
            std::string::npos) << metrics;
}

// The same through UDP alone (a forward of UDP only): the node's keepalive
// comes back; the entry is marked, and nothing more is sent to it.
TEST_F(WarmStart, OwnDatagramsComingBackMarkTheEntryAndStopTheSending) {
  std::unique_ptr<Relay> relay;
  for (int tries = 0;; ++tries) {
    uint16_t port = freeSyncPort();
    relay = std::make_unique<Relay>(port, Relay::Carries::kUdp);
    if (makeOn(options({relay->address()}, 20, 200, 200), port)) break;
    ASSERT_LT(tries, 20);
  }
  fs_->start();
  // A keepalive goes out after a second without records.
  auto end = Clock::now() + 20s;
  while (!isThisNode(0) && Clock::now() < end) io_.run_for(20ms);
  nlohmann::json st = fs_->status();
  ASSERT_TRUE(isThisNode(0)) << "our own datagram came back: " << st.dump();
  EXPECT_NE(peerField(0, "this_node_why").find("own datagrams come back"), std::string::npos);
  EXPECT_GE(fromSelf(), 1u);
  EXPECT_EQ(st["warm_start"]["state"], "no_peers") << "every entry is this node: " << st.dump();
  int sent = relay->datagrams();
  runFor(2500ms);  // two more keepalive periods
  EXPECT_EQ(relay->datagrams(), sent) << "nothing more sent to it";
  EXPECT_EQ(st["peers"][0]["reachable"], false);
}

// A peer that answers the warm-start request with a message of this node's
// own (a keepalive someone kept): not bound to the request's nonce, so a
// counted replay; the entry stays a peer (it was marked as this node for
// good, and nothing was sent to it again until a restart).
TEST_F(WarmStart, AReplayOfThisNodesOwnMessageInTheAnswerIsAReplayNotThisNode) {
  auto t = table(20);
  FakePeer replayer(FakePeer::Mode::kReplaysSelf);
  FakePeer good(FakePeer::Mode::kGood, t);
  make(options({replayer.address(), good.address()}, 20, 500, 1000));
  fs_->start();
  runWarmStart(30s);
  nlohmann::json st = fs_->status();
  ASSERT_EQ(st["warm_start"]["state"], "done") << st.dump();
  EXPECT_EQ(st["warm_start"]["peer"], good.address());
  EXPECT_GE(replayer.requests(), 1);
  EXPECT_FALSE(isThisNode(0)) << "a replayed message marked the peer as this node: " << st.dump();
  EXPECT_GE(st["peers"][0].value("self_replayed", uint64_t(0)), 1u) << st.dump();
  EXPECT_NE(warmError(0).find("not bound to our request"), std::string::npos) << warmError(0);
  expectHolds(t);
}

// Another node under this node's fleet.node_name (the same node id, another
// epoch): its records and its warm-start request are refused.
TEST_F(WarmStart, MessagesUnderThisNodesNameFromElsewhereAreRefused) {
  int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a = loopback(0);
  ASSERT_EQ(::bind(udp, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string peer = "127.0.0.1:" + std::to_string(boundPort(udp));
  FakePeer good(FakePeer::Mode::kGood, {});
  make(options({peer, good.address()}, 20, 200, 500));
  fs_->start();
  runWarmStart(30s);
  ASSERT_EQ(fs_->status()["warm_start"]["state"], "done");
  uint16_t port = uint16_t(std::stoi(fs_->status()["listen"].get<std::string>().substr(10)));

  sync::Header h;
  h.node = sync::nodeId("gw-warm");  // this node's name
  h.epoch = 4242;
  h.seq = 1;
  h.time_ms = unixMsNow();
  auto rec = table(1);
  rec[0].kind = sync::RecordKind::kNew;
  uint8_t msg[sync::kMaxMessage];
  size_t len = sync::encode(fleetKey(), h, rec.data(), 1, msg, sizeof msg);
  sockaddr_in to = loopback(port);
  ASSERT_EQ(::sendto(udp, msg, len, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), ssize_t(len));
  auto end = Clock::now() + 10s;
  while (fromSelf() < 1 && Clock::now() < end) io_.run_for(20ms);
  runFor(100ms);
  EXPECT_EQ(fromSelf(), 1u);
  EXPECT_LT(h_->flows().lookup(rec[0].key, rec[0].flow_hash), 0) << "its record was installed";
  EXPECT_EQ(fs_->status()["peers"][0]["installed"], 0u);
  ::close(udp);

  // A warm-start request under this node's name: closed unanswered.
  int c = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  h.type = sync::MsgType::kWarmRequest;
  h.seq = 2;
  h.nonce = 77;
  auto f = frame(h, nullptr, 0);
  ASSERT_TRUE(writeAll(c, f.data(), f.size()));
  std::atomic<bool> stop{false};
  std::thread client([&] {
    uint8_t b[64];
    ssize_t n = waitReadable(c, stop) ? ::recv(c, b, sizeof b, 0) : -1;
    EXPECT_EQ(n, 0) << "the request was answered";
  });
  end = Clock::now() + 10s;
  while (fromSelf() < 2 && Clock::now() < end) io_.run_for(20ms);
  runFor(100ms);
  stop = true;
  client.join();
  ::close(c);
  EXPECT_EQ(fromSelf(), 2u);
  EXPECT_EQ(fs_->status()["transfers_served"], 0u);
}

}  // namespace
}  // namespace gwlb::dptest
