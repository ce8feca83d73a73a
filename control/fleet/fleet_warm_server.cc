// FleetSync: the warm-start server (docs/fleet.md "Warm start"), the TCP
// listener's accept loop and the sessions that each stream this node's whole
// table to one peer that asked. The client side is fleet_sync_warm.cc.
#include <spdlog/spdlog.h>

#include <chrono>

#include "control/fleet/fleet_sync.h"
#include "control/fleet/fleet_sync_clock.h"
#include "dataplane/worker.h"

namespace gwlb::ctl {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

using fleet_clock::unixMs;

constexpr size_t kMaxSessions = 4;
constexpr size_t kMessagesPerWrite = 64;
// Table slots one write of a transfer walks at most (a sparse table is sent in
// bounded steps: the control thread's other work runs between them).
constexpr size_t kSlotsPerWrite = FleetSync::kScanSlotsPerTick;
// A transfer is served as long as the peer reads: it is closed once a write
// has waited this long (the peer stopped reading), never for its length.
constexpr std::chrono::seconds kSessionIdle{30};
constexpr std::chrono::seconds kRequestDeadline{5};

}  // namespace

// One warm-start transfer this node serves: read the request, then stream
// the table (kTransfer messages bound to the request's nonce), then the end.
class FleetSync::Session : public std::enable_shared_from_this<FleetSync::Session> {
 public:
  Session(FleetSync& fs, tcp::socket s)
      : fs_(fs), count_(fs.sessions_), sock_(std::move(s)), timer_(fs.io_) {}
  void start() {
    ++*count_;
    timer_.expires_after(kRequestDeadline);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->close("no request in time");
    });
    auto self = shared_from_this();
    asio::async_read(sock_, asio::buffer(len_), [self](const boost::system::error_code& ec, size_t) {
      if (ec) return self->close("");
      size_t n = size_t(self->len_[0] | self->len_[1] << 8);
      if (n > sync::kMaxMessage) return self->close("request too long");
      self->msg_.resize(n);
      asio::async_read(self->sock_, asio::buffer(self->msg_),
                       [self](const boost::system::error_code& ec2, size_t) {
                         if (ec2) return self->close("");
                         self->onRequest();
                       });
    });
  }
  ~Session() { --*count_; }

 private:
  void onRequest() {
    sync::Header h;
    sync::Record recs[sync::kMaxRecords];
    sync::Status st = sync::decode(fs_.key_, msg_.data(), msg_.size(), h, recs);
    Peer* p = fs_.peerFor(peer_.address(), 0);
    if (st != sync::Status::kOk || h.type != sync::MsgType::kWarmRequest) {
      if (p) ++(st == sync::Status::kAuthFailed ? p->auth_failures : p->malformed);
      return close(st == sync::Status::kAuthFailed ? "bad MAC (another fleet secret?)"
                                                   : "malformed request");
    }
    sync::Sender from = sync::senderOf(h, fs_.node_id_, fs_.epoch_);
    if (from != sync::Sender::kPeer) {
      ++fs_.from_self_;
      // Our own request (its nonce is the one our warm start sent now): the
      // entry it is asking reaches this node.
      const Warm& w = fs_.warm_;
      if (from == sync::Sender::kThisNode && !fs_.warmStartDone() && w.asking && w.connected &&
          h.nonce == w.nonce && w.next_peer < fs_.peers_.size())
        fs_.markThisNode(w.next_peer, "a warm-start request sent to it reached this node's own "
                                      "listener");
      return close(from == sync::Sender::kThisNode
                       ? "refused a warm-start request from this node itself"
                       : "refused a warm-start request from another node named " +
                             fs_.opt_.node_name + " (every node needs its own fleet.node_name)");
    }
    sync::ReplayWindow fresh;
    auto v = fresh.check(h, unixMs());
    if (v != sync::ReplayWindow::Verdict::kOk || !fs_.served_nonces_.remember(h.nonce)) {
      if (p) ++(v == sync::ReplayWindow::Verdict::kStale ? p->stale : p->replayed);
      return close("stale or replayed request");
    }
    nonce_ = h.nonce;
    takes_bypass_ = (p && p->takes_flags) || (h.nonce & 0xFFFF) == sync::kWarmNonceBypassMark;
    // A peer that stops reading does not hold the session for ever.
    started_ = written_ = dp::monotonicNs();
    cpu_start_ = fleet_clock::threadCpu();
    armIdle(kSessionIdle);
    spdlog::info("fleet sync: serving our flow table to {} (warm start)", who());
    next();
  }

  // The next write: up to kMessagesPerWrite batches of the table from up to
  // kSlotsPerWrite slots, or the end.
  void next() {
    if (closed_) return;
    if (done_) return close("");
    const uint64_t t0 = fleet_clock::threadCpuNs();
    recs_.clear();
    std::vector<sync::Record>& recs = recs_;
    out_.clear();
    uint64_t now = dp::monotonicNs();
    auto emit = [&]() {
      if (recs.empty()) return;
      sync::Header h = header(sync::MsgType::kTransfer);
      size_t at = out_.size();
      out_.resize(at + 2 + sync::kMaxMessage);
      size_t len = sync::encode(fs_.key_, h, recs.data(), recs.size(), out_.data() + at + 2,
                                sync::kMaxMessage);
      unsigned_ = unsigned_ || len == 0;
      out_[at] = uint8_t(len), out_[at + 1] = uint8_t(len >> 8);
      out_.resize(at + 2 + len);
      sent_ += recs.size();
      recs.clear();
    };
    size_t messages = 0, walked = 0;
    bool more = true;
    while (more && messages < kMessagesPerWrite && walked < kSlotsPerWrite) {
      uint32_t from = cursor_;
      more = fs_.flows_.scan(cursor_, sync::kMaxRecords * 4, kSlotsPerWrite - walked,
                             [&](const FlowKey& k, int32_t pos, const dp::FlowEntry&) {
        sync::Record r;
        // Transfers carry no kRecordOpened (warm-started entries fall back to
        // the older-copy rule), and bypass flags only to a requester that takes them.
        if (fs_.makeRecord(pos, k, sync::RecordKind::kTransfer, now, r)) {
          r.opened = false;
          if (!takes_bypass_) r.bypass = 0, r.bypass_left_s = 0;
          if (!sync::fits(recs.data(), recs.size(), r)) emit(), ++messages;
          recs.push_back(r);
        }
        if (recs.size() == sync::kMaxRecords) emit(), ++messages;
        return true;
      });
      walked += cursor_ - from;
    }
    emit();
    if (more && out_.empty()) {  // only empty slots this time: go on after other work
      asio::post(sock_.get_executor(), [self = shared_from_this()] { self->next(); });
      return;
    }
    if (!more) {
      sync::Header h = header(sync::MsgType::kWarmEnd);
      size_t at = out_.size();
      out_.resize(at + 2 + sync::kMaxMessage);
      size_t len = sync::encode(fs_.key_, h, nullptr, 0, out_.data() + at + 2, sync::kMaxMessage, sent_);
      unsigned_ = unsigned_ || len == 0;
      out_[at] = uint8_t(len), out_[at + 1] = uint8_t(len >> 8);
      out_.resize(at + 2 + len);
      done_ = true;
    }
    if (unsigned_) return close("a message could not be authenticated (OpenSSL failed)");
    encode_ns_ += fleet_clock::threadCpuNs() - t0;
    ++writes_;
    asio::async_write(sock_, asio::buffer(out_),
                      [self = shared_from_this()](const boost::system::error_code& ec, size_t) {
                        if (ec) return self->close("peer closed the transfer");
                        self->written_ = dp::monotonicNs();
                        self->next();
                      });
  }

  // Closes the session once no write completed for kSessionIdle (checked
  // when the timer fires, so a write costs no timer operation).
  void armIdle(std::chrono::nanoseconds in) {
    timer_.expires_after(in);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->closed_) return;
      auto idle = std::chrono::nanoseconds(dp::monotonicNs() - self->written_);
      if (idle >= kSessionIdle) return self->close("the peer stopped reading the transfer");
      self->armIdle(kSessionIdle - idle);
    });
  }

  sync::Header header(sync::MsgType t) {
    sync::Header h;
    h.type = t;
    h.node = fs_.node_id_;
    h.epoch = fs_.epoch_;
    h.seq = ++seq_;
    h.time_ms = unixMs();
    h.nonce = nonce_;
    return h;
  }

  std::string who() const {
    boost::system::error_code ec;
    auto ep = sock_.remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void close(const std::string& why) {
    if (closed_) return;
    closed_ = true;
    if (!why.empty()) spdlog::warn("fleet sync: warm-start session with {}: {}", who(), why);
    else if (done_) {
      ++fs_.transfers_served_;
      fleet_clock::ThreadCpu cpu = fleet_clock::threadCpu();
      spdlog::info("fleet sync: sent {} flows to {} in {:.3f} s (control thread cpu: user {:.3f} s, "
                   "sys {:.3f} s; walking the table and encoding {:.3f} s; {} writes)",
                   sent_, who(), double(dp::monotonicNs() - started_) / 1e9,
                   double(cpu.user_ns - cpu_start_.user_ns) / 1e9,
                   double(cpu.sys_ns - cpu_start_.sys_ns) / 1e9, double(encode_ns_) / 1e9, writes_);
    }
    timer_.cancel();
    boost::system::error_code ec;
    sock_.shutdown(tcp::socket::shutdown_both, ec);
    sock_.close(ec);
  }

 public:
  tcp::endpoint peer_;

 private:
  FleetSync& fs_;
  std::shared_ptr<unsigned> count_;
  tcp::socket sock_;
  asio::steady_timer timer_;
  std::array<uint8_t, 2> len_{};
  std::vector<uint8_t> msg_, out_;
  uint64_t nonce_ = 0, seq_ = 0, sent_ = 0, started_ = 0, written_ = 0;
  // What serving costs this thread: from the request on (other work of the
  // thread included), and walking and encoding alone; and the writes.
  fleet_clock::ThreadCpu cpu_start_;
  uint64_t encode_ns_ = 0, writes_ = 0;
  std::vector<sync::Record> recs_;  // one message's records, reused
  bool takes_bypass_ = false;  // the requester takes records' bypass flags
  uint32_t cursor_ = 0;
  bool done_ = false, closed_ = false, unsigned_ = false;
};

void FleetSync::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (!ec) {
      boost::system::error_code e2;
      tcp::endpoint remote = s.remote_endpoint(e2);
      if (e2 || *sessions_ >= kMaxSessions || !peerFor(remote.address(), 0)) {
        if (!e2 && !peerFor(remote.address(), 0)) ++unknown_sender_;
        s.close(e2);
      } else {
        auto session = std::make_shared<Session>(*this, std::move(s));
        session->peer_ = remote;
        session->start();
      }
    }
    accept();
  });
}

}  // namespace gwlb::ctl
