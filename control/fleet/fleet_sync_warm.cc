// FleetSync: this node's warm start (docs/fleet.md "Warm start"), the TCP
// client that asks the peers, one after the other, for their whole table.
//
// Deadlines: each peer gets warm_connect_timeout_ms to accept the connection
// and may then stay silent at most warm_idle_timeout_ms (before its first
// message and between two), else the next peer is asked. The whole warm start
// ends without a table once warm_start_timeout_s passed without a transfer
// message from any peer (counted from the start, and again from the last
// message of a transfer that broke off): a transfer that keeps arriving is
// never cut, however long the table. Both timers are checked lazily: a
// message costs no timer operation, the timer re-arms itself when it fires
// early.
//
// Each attempt has an id; the handlers of an attempt the node gave up on
// (its socket closed under them) see another id and return.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>

#include "control/fleet/fleet_sync.h"
#include "control/fleet/fleet_sync_clock.h"
#include "dataplane/worker.h"

namespace gwlb::ctl {

namespace asio = boost::asio;
using asio::ip::tcp;
using fleet_clock::unixMs;
using fleet_clock::unixS;

namespace {

std::string seconds(uint64_t ms) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g s", double(ms) / 1000.0);
  return b;
}

}  // namespace

void FleetSync::warmBegin() {
  warm_.started_ns = dp::monotonicNs();
  warm_.cpu_start = fleet_clock::threadCpu();
  if (peers_.empty()) return warmFinish(WarmState::kNoPeers, "no peers configured");
  size_t others = 0;
  for (const Peer& p : peers_) others += !p.this_node;
  if (others == 0)
    return warmFinish(WarmState::kNoPeers, "every fleet.peers entry is this node: nobody to ask");
  warm_timer_.expires_after(std::chrono::seconds(opt_.warm_start_timeout_s));
  warm_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) onWarmDeadline();
  });
  warmConnect();
}

void FleetSync::onWarmDeadline() {
  if (warmStartDone() || stopped_) return;
  uint64_t from = std::max(warm_.started_ns, warm_.progress_ns);
  uint64_t deadline = from + uint64_t(opt_.warm_start_timeout_s) * 1'000'000'000ULL;
  uint64_t now = dp::monotonicNs();
  if (now < deadline) {  // a transfer made progress since: not yet
    warm_timer_.expires_after(std::chrono::nanoseconds(deadline - now));
    warm_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) onWarmDeadline();
    });
    return;
  }
  std::string t = std::to_string(opt_.warm_start_timeout_s) + " s";
  warmFinish(WarmState::kTimedOut,
             warm_.progress_ns == 0
                 ? "no peer sent its table within fleet.warm_start_timeout (" + t +
                       "): going on without (the first node of a fleet has nobody to ask)"
                 : "no peer's table arrived for fleet.warm_start_timeout (" + t +
                       ") since a transfer broke off: going on with what was installed");
}

void FleetSync::warmConnect() {
  if (warmStartDone() || stopped_) return;
  while (warm_.next_peer < peers_.size() && peers_[warm_.next_peer].this_node) ++warm_.next_peer;
  if (warm_.next_peer >= peers_.size()) {
    // Everyone refused or stayed silent: try again shortly, until the timeout.
    warm_.next_peer = 0;
    warm_.asking = warm_.connected = false;
    retry_timer_.expires_after(std::chrono::milliseconds(500));
    retry_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) warmConnect();
    });
    return;
  }
  Peer& p = peers_[warm_.next_peer];
  uint64_t id = ++warm_.attempt;
  ++warm_.attempts;
  warm_.asking = true;
  warm_.connected = false;
  warm_.asked_ns = warm_.heard_ns = dp::monotonicNs();
  warm_.received = warm_.installed = 0;
  warm_in_len_ = 0;
  warm_recs_.clear();
  boost::system::error_code ec;
  warm_socket_.close(ec);
  warm_socket_ = tcp::socket(io_);
  peer_timer_.expires_after(std::chrono::milliseconds(opt_.warm_connect_timeout_ms));
  peer_timer_.async_wait([this, id](const boost::system::error_code& e) {
    if (!e) onPeerDeadline(id);
  });
  warm_socket_.async_connect(p.tcp, [this, id](const boost::system::error_code& ec2) {
    if (warmStartDone() || stopped_ || id != warm_.attempt) return;
    if (ec2) return warmFail("no connection: " + ec2.message());
    Peer& peer = peers_[warm_.next_peer];
    warm_.connected = true;
    warm_.heard_ns = dp::monotonicNs();  // the idle deadline starts now
    warm_.nonce = (fleet_clock::random64() & ~uint64_t(0xFFFF)) | sync::kWarmNonceBypassMark;
    warm_.expect_seq = 1;
    warm_.peer = peer.address;
    sync::Header h = header(sync::MsgType::kWarmRequest);
    h.nonce = warm_.nonce;
    warm_buf_.assign(2 + sync::kMaxMessage, 0);
    size_t len = sync::encode(key_, h, nullptr, 0, warm_buf_.data() + 2, sync::kMaxMessage);
    warm_buf_[0] = uint8_t(len), warm_buf_[1] = uint8_t(len >> 8);
    warm_buf_.resize(2 + len);
    asio::async_write(warm_socket_, asio::buffer(warm_buf_),
                      [this, id](const boost::system::error_code& ec3, size_t) {
                        if (warmStartDone() || stopped_ || id != warm_.attempt) return;
                        if (ec3) return warmFail("request not sent: " + ec3.message());
                        spdlog::info("fleet sync: warm start: asked {} for its flow table", warm_.peer);
                        warmRead(id);
                      });
  });
}

void FleetSync::onPeerDeadline(uint64_t id) {
  if (warmStartDone() || stopped_ || id != warm_.attempt) return;
  uint64_t now = dp::monotonicNs();
  uint64_t limit_ms = warm_.connected ? opt_.warm_idle_timeout_ms : opt_.warm_connect_timeout_ms;
  uint64_t since = warm_.connected ? warm_.heard_ns : warm_.asked_ns;
  uint64_t deadline = since + limit_ms * 1'000'000ULL;
  if (now < deadline) {  // bytes came, or the connect succeeded, since it was armed
    peer_timer_.expires_after(std::chrono::nanoseconds(deadline - now));
    peer_timer_.async_wait([this, id](const boost::system::error_code& e) {
      if (!e) onPeerDeadline(id);
    });
    return;
  }
  if (!warm_.connected)
    warmFail("no connection within fleet.warm_start_connect_timeout (" + seconds(limit_ms) + ")");
  else if (warm_.received == 0)
    warmFail("no answer within fleet.warm_start_idle_timeout (" + seconds(limit_ms) + ")");
  else
    warmFail("the transfer stalled: nothing for fleet.warm_start_idle_timeout (" +
             seconds(limit_ms) + ") after " + std::to_string(warm_.received) + " flows");
}

// The stream is read in chunks of up to kWarmReadBytes (one read takes what
// the socket holds, many messages), not a read per length prefix and per
// message: every whole message of a chunk is checked and decoded, their
// records installed together (installBatch), and a message cut by the
// chunk's end waits in warm_in_ for the next read.
void FleetSync::warmRead(uint64_t id) {
  if (warm_in_.size() != kWarmReadBytes) warm_in_.assign(kWarmReadBytes, 0);
  warm_socket_.async_read_some(
      asio::buffer(warm_in_.data() + warm_in_len_, warm_in_.size() - warm_in_len_),
      [this, id](const boost::system::error_code& ec, size_t n) {
        if (warmStartDone() || stopped_ || id != warm_.attempt) return;
        if (ec) return warmFail("transfer ended early: " + ec.message());
        ++warm_.reads;
        warm_.heard_ns = dp::monotonicNs();
        warm_in_len_ += n;
        warmChunk(id);
      });
}

void FleetSync::warmChunk(uint64_t id) {
  const uint64_t t0 = fleet_clock::threadCpuNs();
  size_t at = 0;
  while (warm_in_len_ - at >= 2) {
    size_t n = size_t(warm_in_[at] | warm_in_[at + 1] << 8);
    if (n > sync::kMaxMessage) return warmFail("a message longer than the maximum");
    if (warm_in_len_ - at < 2 + n) break;
    // False: the warm start left this peer (or ended); warm_in_ is not ours now.
    if (!warmMessage(warm_in_.data() + at + 2, n)) return;
    at += 2 + n;
  }
  warm_.verify_ns += fleet_clock::threadCpuNs() - t0;
  warmInstall();
  std::memmove(warm_in_.data(), warm_in_.data() + at, warm_in_len_ - at);
  warm_in_len_ -= at;
  warmRead(id);
}

void FleetSync::warmInstall() {
  if (warm_recs_.empty() || warm_.next_peer >= peers_.size()) return;
  const uint64_t t0 = fleet_clock::threadCpuNs();
  Peer& p = peers_[warm_.next_peer];
  warm_results_.resize(warm_recs_.size());
  installBatch(warm_recs_.data(), warm_recs_.size(), dp::monotonicNs(), warm_results_.data());
  for (InstallResult r : warm_results_) {
    countInstall(&p, r);
    if (r == InstallResult::kInstalled || r == InstallResult::kRefreshed) ++warm_.installed;
  }
  ++warm_.batches;
  warm_.batched += warm_recs_.size();
  warm_recs_.clear();
  warm_.install_ns += fleet_clock::threadCpuNs() - t0;
}

// One whole message of the transfer, d[0..len): its records join warm_recs_.
// False when the warm start moved on (the next peer, or its end): the
// records gathered so far are installed first.
bool FleetSync::warmMessage(const uint8_t* d, size_t len) {
  Peer& p = peers_[warm_.next_peer];
  sync::Header h;
  uint64_t total = 0;
  const size_t have = warm_recs_.size();
  warm_recs_.resize(have + sync::kMaxRecords);
  sync::Status st = sync::decode(key_, d, len, h, warm_recs_.data() + have, &total);
  warm_recs_.resize(st == sync::Status::kOk && sync::isTransfer(h.type) ? have + h.count : have);
  if (st != sync::Status::kOk) {
    ++(st == sync::Status::kAuthFailed ? p.auth_failures : p.malformed);
    warmFail(st == sync::Status::kAuthFailed ? "a message whose MAC does not verify (secret mismatch?)"
                                             : "a malformed message");
    return false;
  }
  // Bound to our request first: a message of this node's own (signed, so
  // anyone may have kept one) says who answers only with our fresh nonce.
  const sync::Sender from = sync::senderOf(h, node_id_, epoch_);
  sync::ReplayWindow fresh;
  if (h.nonce != warm_.nonce || h.seq != warm_.expect_seq ||
      fresh.check(h, unixMs()) != sync::ReplayWindow::Verdict::kOk) {
    warm_recs_.resize(have);
    if (from != sync::Sender::kPeer) ++from_self_;
    ++(from == sync::Sender::kThisNode ? p.self_replayed : p.replayed);
    warmFail("a message not bound to our request (nonce, order or time)");
    return false;
  }
  if (from != sync::Sender::kPeer) {
    warm_recs_.resize(have);
    ++from_self_;
    if (from == sync::Sender::kThisNode) {
      warmInstall();
      markThisNode(warm_.next_peer, "it answered a warm-start request with this node's own table");
      return false;
    }
    warmFail("it answers as node " + opt_.node_name +
             ", this node's own fleet.node_name: every node needs its own name");
    return false;
  }
  ++warm_.expect_seq;
  p.last_sync = unixS();
  view_.heard(warm_.next_peer, h.epoch, warm_.heard_ns);
  warm_.progress_ns = warm_.heard_ns;
  if (h.type == sync::MsgType::kWarmEnd) {
    warm_.peer_total = total;
    p.warm_error.clear();
    warmFinish(WarmState::kDone, "");
    return false;
  }
  if (!sync::isTransfer(h.type)) {
    ++p.malformed;
    warmFail("an unexpected message type");
    return false;
  }
  warm_.received += h.count;
  p.flows_received += h.count;
  return true;
}

// Gives up on the peer asked now and asks the next. `why` empty: already
// said (markThisNode).
void FleetSync::warmFail(const std::string& why) {
  warmInstall();  // what this peer sent before stays installed
  Peer& p = peers_[warm_.next_peer];
  if (!why.empty()) {
    p.warm_error = why;
    if (logAllowed(&p)) spdlog::warn("fleet sync: warm start from {}: {}; asking the next peer", p.address, why);
  }
  ++warm_.attempt;  // the abandoned attempt's handlers return
  warm_.asking = warm_.connected = false;
  peer_timer_.cancel();
  boost::system::error_code ec;
  warm_socket_.close(ec);
  ++warm_.next_peer;
  warmConnect();
}

void FleetSync::markThisNode(size_t i, const std::string& why) {
  Peer& p = peers_[i];
  if (p.this_node) return;
  p.this_node = true;
  view_.ignore(i);
  p.this_node_why = why;
  p.warm_error = "this node";
  spdlog::warn("fleet sync: fleet.peers[{}] {} is this node ({}): skipped, nothing is sent to it "
               "(leave it out of this node's fleet.peers, or keep it when one list serves every node)",
               i, p.address, why);
  // Before start() (the constructor's check) warmBegin() sees it; after the
  // warm start it changes nothing there.
  if (warm_.started_ns == 0 || warmStartDone()) return;
  size_t others = 0;
  for (const Peer& q : peers_) others += !q.this_node;
  if (others == 0) {
    ++warm_.attempt;  // the handlers of an attempt under way return
    return warmFinish(WarmState::kNoPeers, "every fleet.peers entry is this node: nobody to ask");
  }
  if (warm_.asking && warm_.next_peer == i) warmFail("");  // it was asking it: the next one
}

void FleetSync::warmFinish(WarmState s, const std::string& why) {
  warmInstall();
  warm_.state = s;
  warm_.ended_ns = dp::monotonicNs();
  warm_.cpu_end = fleet_clock::threadCpu();
  view_.warmStartEnded(s == WarmState::kDone, s != WarmState::kNoPeers, warm_.ended_ns);
  warm_timer_.cancel();
  retry_timer_.cancel();
  peer_timer_.cancel();
  boost::system::error_code ec;
  warm_socket_.close(ec);
  double secs = double(warm_.ended_ns - warm_.started_ns) / 1e9;
  if (s == WarmState::kDone)
    spdlog::info("fleet sync: warm start done: {} flows from {} ({} installed, {} sent) in {:.3f} s",
                 warm_.received, warm_.peer, warm_.installed, warm_.peer_total, secs);
  else if (s == WarmState::kTimedOut)
    spdlog::warn("fleet sync: warm start: {}", why);
  else
    spdlog::info("fleet sync: warm start: {}", why);
}

}  // namespace gwlb::ctl
