// gwlbd's client of BIRD's control socket (docs/fleet.md, "Announcing the
// routes"): keeps each configured protocol enabled while gwlbd wants the
// node's routes announced and disabled while it does not.
//
// Every `period` (and at once when the wish changes) it runs one round: for
// each protocol `show protocols NAME`, then `enable NAME` when it should
// announce and the protocol is down, `disable NAME` when it should not and
// the protocol is not down, then `show protocols NAME` again. So a BIRD that
// restarted (its protocols come up `disabled` again) is corrected within a
// period. Not connected: it connects at the start of a round. Every step
// has a deadline (`timeout`): a BIRD that does not answer costs a closed
// connection and a retry next round, never a stalled control thread.
//
// Asio, control thread only. Create with std::make_shared (the handlers hold
// it); stop() before the io_context ends.
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "control/fleet/bird_protocol.h"

namespace gwlb::ctl {

class BirdClient : public std::enable_shared_from_this<BirdClient> {
 public:
  struct Protocol {
    std::string name;
    std::string state = "unknown";  // BIRD's: up, down, start, stop, flush; or unknown, missing
  };

  // `protocols` must be valid names (bird::validProtocolName). Does nothing before start().
  BirdClient(boost::asio::io_context& io, std::string socket, std::vector<std::string> protocols,
             std::chrono::milliseconds period = std::chrono::seconds(1),
             std::chrono::milliseconds timeout = std::chrono::seconds(2));
  BirdClient(const BirdClient&) = delete;
  BirdClient& operator=(const BirdClient&) = delete;

  void start();
  // Closes the connection and stops the rounds (pending handlers end quietly).
  void stop();

  // What the protocols should be: enabled (announce) or disabled. A change
  // starts a round at once (or right after the one running).
  void setAnnounce(bool announce);
  bool wantAnnounce() const { return want_; }

  bool connected() const { return connected_; }
  // Every protocol is seen in the wanted state (up / down) in the last round.
  bool converged() const;
  const std::vector<Protocol>& protocols() const { return protos_; }
  const std::string& socket() const { return path_; }
  // Why the last round failed ("" after a round that succeeded).
  const std::string& lastError() const { return error_; }
  uint64_t rounds() const { return rounds_; }
  uint64_t commandsSent() const { return commands_; }  // enable + disable
  uint64_t failures() const { return failures_; }      // rounds that ended in an error

  // Called after each round and when the connection drops (control thread).
  std::function<void()> on_round;

 private:
  void round();
  void onConnected();
  void step(size_t i, int phase);
  // Sends `cmd` (or nothing when empty: the greeting) and calls `done` with
  // BIRD's reply; a timeout or an error fails the round.
  void request(const std::string& cmd, std::function<void(const bird::Reply&)> done);
  void readMore(std::function<void(const bird::Reply&)> done);
  void fail(const std::string& why);
  void finishRound();
  void schedule(std::chrono::milliseconds after);

  boost::asio::io_context& io_;
  std::string path_;
  std::vector<Protocol> protos_;
  std::chrono::milliseconds period_, timeout_;
  boost::asio::local::stream_protocol::socket sock_;
  boost::asio::steady_timer tick_;
  boost::asio::steady_timer deadline_;
  bird::ReplyParser parser_;
  std::string out_;
  std::array<char, 4096> in_{};
  uint64_t conn_ = 0;  // connection generation: handlers of an old one do nothing
  bool started_ = false, stopped_ = false;
  bool connected_ = false, busy_ = false, again_ = false;
  bool want_ = false;
  std::string error_;
  uint64_t rounds_ = 0, commands_ = 0, failures_ = 0;
};

}  // namespace gwlb::ctl
