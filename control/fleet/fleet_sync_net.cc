// FleetSync, network side: the UDP socket (record batches in and out), the
// TCP listener that serves a whole table (warm start of a peer); status and
// metrics. This node's own warm start (the TCP client) is fleet_sync_warm.cc.
#include <spdlog/spdlog.h>

#include <chrono>

#include "common/health.h"
#include "control/config/config.h"
#include "control/config/config_digest.h"
#include "control/fleet/fleet_peers.h"
#include "control/fleet/fleet_sync.h"
#include "control/fleet/fleet_sync_clock.h"
#include "dataplane/worker.h"

namespace gwlb::ctl {

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;

namespace {

using fleet_clock::random64;
using fleet_clock::unixMs;
using fleet_clock::unixS;

asio::ip::address toAsio(const IpAddr& a) {
  if (a.isV4()) return asio::ip::address_v4(a.v4HostOrder());
  asio::ip::address_v6::bytes_type b;
  std::copy(a.b.begin(), a.b.end(), b.begin());
  return asio::ip::address_v6(b);
}

void parseOrThrow(const std::string& s, asio::ip::address& a, uint16_t& port) {
  IpAddr ip;
  if (!parseListen(s, ip, port)) throw std::runtime_error("fleet sync: bad address '" + s + "'");
  a = toAsio(ip);
}

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
    // A peer that stops reading does not hold the session for ever.
    started_ = written_ = dp::monotonicNs();
    armIdle(kSessionIdle);
    spdlog::info("fleet sync: serving our flow table to {} (warm start)", who());
    next();
  }

  // The next write: up to kMessagesPerWrite batches of the table from up to
  // kSlotsPerWrite slots, or the end.
  void next() {
    if (closed_) return;
    if (done_) return close("");
    std::vector<sync::Record> recs;
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
        if (fs_.makeRecord(pos, k, sync::RecordKind::kTransfer, now, r)) recs.push_back(r);
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
      spdlog::info("fleet sync: sent {} flows to {} in {:.3f} s", sent_, who(),
                   double(dp::monotonicNs() - started_) / 1e9);
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
  uint32_t cursor_ = 0;
  bool done_ = false, closed_ = false, unsigned_ = false;
};

FleetSync::FleetSync(asio::io_context& io, Options o, dp::FlowTable& flows, rte_ring* events,
                     std::function<const dp::Snapshot*()> snapshot)
    : io_(io), opt_(std::move(o)), flows_(flows), events_(events), snapshot_(std::move(snapshot)),
      key_(sync::SyncKey::fromHashKey(opt_.secret.k0, opt_.secret.k1)),
      udp_(io), acceptor_(io), tick_timer_(io), warm_timer_(io), retry_timer_(io),
      peer_timer_(io), warm_socket_(io), sent_(flows.slots()) {
  node_id_ = sync::nodeId(opt_.node_name);
  epoch_ = random64();
  out_.resize(sync::kMaxMessage);
  for (const std::string& a : opt_.peers) {
    Peer p;
    p.address = a;
    asio::ip::address ip;
    uint16_t port = 0;
    parseOrThrow(a, ip, port);
    p.udp = udp::endpoint(ip, port);
    p.tcp = tcp::endpoint(ip, port);
    peers_.push_back(std::move(p));
  }
  // Entries that are this node (one list written for every node, with a
  // wildcard sync_listen): never sent to, never asked.
  for (const SelfPeer& sp : selfPeers(opt_.listen, opt_.peers, hostAddresses()))
    markThisNode(sp.index, sp.why);
  asio::ip::address ip;
  uint16_t port = 0;
  parseOrThrow(opt_.listen, ip, port);
  udp::endpoint uep(ip, port);
  tcp::endpoint tep(ip, port);
  try {
    udp_.open(uep.protocol());
    udp_.bind(uep);
    udp_.non_blocking(true);
    acceptor_.open(tep.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(tep);
    acceptor_.listen();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error("fleet.sync_listen " + opt_.listen + ": " + e.code().message());
  }
}

FleetSync::~FleetSync() { stop(); }

void FleetSync::start() {
  receive();
  accept();
  armTick();
  spdlog::info("fleet sync: node {} on {} (UDP records, TCP warm start), {} peer(s)",
               opt_.node_name, opt_.listen, peers_.size());
  warmBegin();
}

void FleetSync::armTick() {
  tick_timer_.expires_after(kTick);
  tick_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    try {
      tick(dp::monotonicNs());
    } catch (const std::exception& e) {
      spdlog::error("fleet sync: tick: {}", e.what());
    }
    armTick();
  });
}

void FleetSync::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ec;
  tick_timer_.cancel();
  warm_timer_.cancel();
  retry_timer_.cancel();
  peer_timer_.cancel();
  udp_.close(ec);
  acceptor_.close(ec);
  warm_socket_.close(ec);
}

sync::Header FleetSync::header(sync::MsgType t) {
  sync::Header h;
  h.type = t;
  h.node = node_id_;
  h.epoch = epoch_;
  h.seq = ++seq_;
  h.time_ms = unixMs();
  return h;
}

FleetSync::Peer* FleetSync::peerFor(const asio::ip::address& a, uint16_t port) {
  asio::ip::address addr = a;
  if (addr.is_v6() && addr.to_v6().is_v4_mapped())
    addr = asio::ip::make_address_v4(asio::ip::v4_mapped, addr.to_v6());
  Peer* by_ip = nullptr;
  for (Peer& p : peers_) {
    if (p.udp.address() != addr) continue;
    if (port && p.udp.port() == port) return &p;
    if (!by_ip) by_ip = &p;
  }
  return by_ip;
}

bool FleetSync::logAllowed(Peer* p) {
  double now = unixS();
  double& last = p ? p->last_log : unknown_log_;
  if (now - last < 10.0) return false;
  last = now;
  return true;
}

void FleetSync::sendToPeers(const uint8_t* msg, size_t len, size_t records) {
  if (len == 0) return;
  for (Peer& p : peers_) {
    if (p.this_node) continue;
    boost::system::error_code ec;
    udp_.send_to(asio::buffer(msg, len), p.udp, 0, ec);
    if (ec) {
      ++p.send_errors;
      continue;
    }
    ++p.datagrams_sent;
    p.flows_sent += records;
  }
}

void FleetSync::receive() {
  udp_.async_receive_from(asio::buffer(rx_), rx_from_,
                          [this](const boost::system::error_code& ec, size_t len) {
    if (stopped_ || ec == asio::error::operation_aborted) return;
    if (!ec) {
      try {
        onDatagram(len);
      } catch (const std::exception& e) {
        spdlog::error("fleet sync: datagram: {}", e.what());
      }
    }
    receive();
  });
}

void FleetSync::onDatagram(size_t len) {
  Peer* p = peerFor(rx_from_.address(), rx_from_.port());
  if (!p) {
    ++unknown_sender_;
    if (logAllowed(nullptr))
      spdlog::warn("fleet sync: datagram from {} dropped: not one of fleet.peers",
                   rx_from_.address().to_string());
    return;
  }
  sync::Header h;
  sync::Record recs[sync::kMaxRecords];
  sync::HealthEntry health[sync::kMaxHealthEntries];
  sync::DigestEntry digests[sync::kMaxDigestEntries];
  sync::Status st = sync::decode(key_, rx_.data(), len, h, recs, nullptr, health, digests);
  if (st == sync::Status::kOk && h.type != sync::MsgType::kRecords &&
      h.type != sync::MsgType::kHealth && h.type != sync::MsgType::kConfigDigest)
    st = sync::Status::kMalformed;
  if (st != sync::Status::kOk) {
    ++(st == sync::Status::kAuthFailed ? p->auth_failures : p->malformed);
    if (logAllowed(p))
      spdlog::warn("fleet sync: {} from peer {} dropped{}",
                   st == sync::Status::kAuthFailed ? "a datagram whose MAC does not verify"
                                                   : "a malformed datagram",
                   p->address,
                   st == sync::Status::kAuthFailed ? " (secret mismatch? every node needs the same fleet secret)" : "");
    return;
  }
  if (sync::Sender from = sync::senderOf(h, node_id_, epoch_); from != sync::Sender::kPeer) {
    ++from_self_;
    // Our own datagram came back from this entry's exact address: it is us.
    if (from == sync::Sender::kThisNode && p->udp.port() == rx_from_.port() && !p->this_node)
      return markThisNode(size_t(p - peers_.data()), "this node's own datagrams come back from it");
    if (!p->this_node && logAllowed(p))
      spdlog::warn("fleet sync: datagram from {} dropped: it carries this node's own node id ({}){}",
                   rx_from_.address().to_string(), sync::toString(from),
                   from == sync::Sender::kSameName
                       ? ": another node has fleet.node_name " + opt_.node_name +
                             " too; every node needs its own name"
                       : ": a fleet.peers entry reaches this node");
    return;
  }
  sync::ReplayWindow& w = windows_[h.node];
  auto v = w.check(h, unixMs());
  if (v != sync::ReplayWindow::Verdict::kOk) {
    ++(v == sync::ReplayWindow::Verdict::kStale ? p->stale : p->replayed);
    if (logAllowed(p))
      spdlog::warn("fleet sync: {} datagram from peer {} dropped (sequence {}, time {} ms off ours)",
                   sync::toString(v), p->address, h.seq, int64_t(h.time_ms - unixMs()));
    return;
  }
  w.accept(h);
  p->last_sync = unixS();
  ++p->datagrams_received;
  if (h.type == sync::MsgType::kConfigDigest) {
    p->digest.assign(digests, digests + h.count);
    p->has_digest = true;
    return;
  }
  if (h.type == sync::MsgType::kHealth) {
    // Whether it takes our config digests; a peer that stopped (downgraded) has none.
    p->takes_digest = (h.nonce & sync::kFeatureConfigDigest) != 0;
    if (!p->takes_digest) p->has_digest = false, p->digest.clear();
    for (size_t i = 0; i < h.count; ++i)
      p->health[health[i].appliance] = {health[i].state, health[i].in_service, p->last_sync};
    // Forget what it stopped mentioning (an appliance removed there).
    for (auto it = p->health.begin(); it != p->health.end();)
      it = p->last_sync - it->second.at > kHealthViewS ? p->health.erase(it) : std::next(it);
    return;
  }
  p->flows_received += h.count;
  uint64_t now = dp::monotonicNs();
  for (size_t i = 0; i < h.count; ++i) countInstall(p, install(recs[i], now));
}

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

// --- observability ---

nlohmann::json FleetSync::disagreements(const Peer& p, double now) const {
  nlohmann::json out = nlohmann::json::array();
  if (!opt_.health) return out;
  auto name = [](uint8_t st) {
    return st <= sync::kMaxHealthState ? toString(HealthState(st)) : "?";
  };
  for (const auto& [ip, here] : opt_.health()) {
    auto it = p.health.find(ip);
    if (it == p.health.end() || now - it->second.at > kHealthViewS) continue;
    if (it->second.in_service == here.second) continue;
    out.push_back({{"appliance", IpAddr::v4(ip).str()},
                   {"here", name(here.first)},
                   {"there", name(it->second.state)},
                   {"new_flows_here", here.second},
                   {"new_flows_there", it->second.in_service}});
  }
  return out;
}

nlohmann::json FleetSync::status() const {
  using nlohmann::json;
  double now = unixS();
  json peers = json::array();
  for (const Peer& p : peers_) {
    bool reachable = !p.this_node && p.last_sync > 0 && now - p.last_sync <= kReachableS;
    peers.push_back({{"address", p.address},
                     {"this_node", p.this_node},
                     {"this_node_why", p.this_node ? json(p.this_node_why) : json()},
                     {"reachable", reachable},
                     {"last_sync_s", p.last_sync > 0 ? json(std::max(0.0, now - p.last_sync)) : json()},
                     {"flows_received", p.flows_received},
                     {"flows_sent", p.flows_sent},
                     {"auth_failures", p.auth_failures},
                     {"replayed", p.replayed},
                     {"malformed", p.malformed},
                     {"stale", p.stale},
                     {"datagrams_received", p.datagrams_received},
                     {"datagrams_sent", p.datagrams_sent},
                     {"send_errors", p.send_errors},
                     {"installed", p.installed},
                     {"moved", p.moved},
                     {"refreshed", p.refreshed},
                     {"ignored", p.ignored},
                     {"conflicts", p.conflicts},
                     {"unknown_appliance", p.unknown_appliance},
                     {"bad_records", p.bad_records},
                     {"table_full", p.table_full},
                     {"insert_abandoned", p.insert_abandoned},
                     {"warm_start_error", p.warm_error.empty() ? json() : json(p.warm_error)},
                     {"health_disagreements", disagreements(p, now)},
                     {"config", configComparison(config_digest_, p.has_digest ? &p.digest : nullptr)}});
  }
  const char* state = warm_.state == WarmState::kWaiting    ? "waiting"
                      : warm_.state == WarmState::kDone     ? "done"
                      : warm_.state == WarmState::kTimedOut ? "timed_out"
                                                            : "no_peers";
  uint64_t end = warm_.ended_ns ? warm_.ended_ns : dp::monotonicNs();
  bool asking = !warmStartDone() && warm_.asking && warm_.next_peer < peers_.size();
  json warm = {{"done", warmStartDone()},
               {"state", state},
               {"peer", warm_.peer.empty() ? json() : json(warm_.peer)},
               {"asking", asking ? json(peers_[warm_.next_peer].address) : json()},
               {"flows_received", warm_.received},
               {"flows_installed", warm_.installed},
               {"peer_total", warm_.peer_total},
               {"attempts", warm_.attempts},
               {"elapsed_s", warm_.started_ns ? double(end - warm_.started_ns) / 1e9 : 0.0},
               {"timeout_s", opt_.warm_start_timeout_s},
               {"connect_timeout_s", opt_.warm_connect_timeout_ms / 1000.0},
               {"idle_timeout_s", opt_.warm_idle_timeout_ms / 1000.0}};
  return {{"node", opt_.node_name},
          {"listen", opt_.listen},
          {"peers", peers},
          {"warm_start", warm},
          {"sent", {{"new", new_sent_}, {"changed", changed_sent_}, {"refresh", refresh_sent_}}},
          {"events_drained", events_drained_},
          {"unknown_sender", unknown_sender_},
          {"from_self", from_self_},
          {"transfers_served", transfers_served_},
          {"config_digest", digestJson(config_digest_)},
          {"refresh_scan", scanStatus()},
          {"sent_log", sentLogStatus()}};
}

void FleetSync::metrics(std::string& out) const {
  auto family = [&](const char* name, const char* type, const char* help) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  };
  auto perPeer = [&](const char* name, const char* type, const char* help, auto get) {
    family(name, type, help);
    for (const Peer& p : peers_)
      out += std::string(name) + "{peer=\"" + p.address + "\"} " + std::to_string(get(p)) + "\n";
  };
  double now = unixS();
  perPeer("gwlb_fleet_sync_peer_reachable", "gauge",
          "1 when an authenticated message came from the peer in the last 5 s",
          [&](const Peer& p) {
            return int(!p.this_node && p.last_sync > 0 && now - p.last_sync <= kReachableS);
          });
  perPeer("gwlb_fleet_sync_peer_is_this_node", "gauge",
          "1 when the fleet.peers entry reaches this node itself (skipped: nothing sent to it)",
          [](const Peer& p) { return int(p.this_node); });
  perPeer("gwlb_fleet_sync_flows_received_total", "counter", "flow records received from the peer",
          [](const Peer& p) { return p.flows_received; });
  perPeer("gwlb_fleet_sync_flows_sent_total", "counter", "flow records sent to the peer",
          [](const Peer& p) { return p.flows_sent; });
  perPeer("gwlb_fleet_sync_flows_installed_total", "counter",
          "peer records that created a local flow entry", [](const Peer& p) { return p.installed; });
  perPeer("gwlb_fleet_sync_flows_ignored_total", "counter",
          "peer records that changed nothing (a local route kept, or too old)",
          [](const Peer& p) { return p.ignored; });
  perPeer("gwlb_fleet_sync_table_full_total", "counter",
          "peer records dropped because the flow table had no room",
          [](const Peer& p) { return p.table_full; });
  perPeer("gwlb_fleet_sync_insert_abandoned_total", "counter",
          "peer records dropped because another inserter of a same-tag key stayed busy (the "
          "table is not full)",
          [](const Peer& p) { return p.insert_abandoned; });
  perPeer("gwlb_fleet_health_disagreements", "gauge",
          "appliances that take new flows on one of this node and the peer but not the other "
          "(their health checks disagree)",
          [&](const Peer& p) { return disagreements(p, now).size(); });
  perPeer("gwlb_fleet_sync_conflicts_total", "counter",
          "flows both nodes created with different appliances, settled here on the peer's "
          "(lower address)",
          [](const Peer& p) { return p.conflicts; });
  perPeer("gwlb_fleet_sync_unknown_appliance_total", "counter",
          "peer records naming an appliance this node does not have",
          [](const Peer& p) { return p.unknown_appliance; });
  perPeer("gwlb_fleet_sync_auth_failures_total", "counter",
          "messages from the peer whose MAC did not verify (secret mismatch or forgery)",
          [](const Peer& p) { return p.auth_failures; });
  perPeer("gwlb_fleet_sync_replayed_total", "counter",
          "messages from the peer dropped as replays (sequence window, old epoch, wrong nonce)",
          [](const Peer& p) { return p.replayed; });
  perPeer("gwlb_fleet_sync_stale_total", "counter",
          "messages from the peer whose time was more than 30 s from ours",
          [](const Peer& p) { return p.stale; });
  perPeer("gwlb_fleet_sync_malformed_total", "counter",
          "messages from the peer with a bad length, magic, version, type or record",
          [](const Peer& p) { return p.malformed; });
  perPeer("gwlb_fleet_sync_last_sync_age_seconds", "gauge",
          "seconds since the last authenticated message from the peer (-1: never)",
          [&](const Peer& p) { return p.last_sync > 0 ? now - p.last_sync : -1.0; });
  configDriftMetrics(out);
  family("gwlb_fleet_sync_warm_start_done", "gauge",
         "1 once the warm start is over (done, timed out or no peers)");
  out += "gwlb_fleet_sync_warm_start_done " + std::to_string(int(warmStartDone())) + "\n";
  family("gwlb_fleet_sync_warm_start_flows", "gauge", "flow records received in the warm start");
  out += "gwlb_fleet_sync_warm_start_flows " + std::to_string(warm_.received) + "\n";
  family("gwlb_fleet_sync_unknown_sender_total", "counter",
         "datagrams and connections from addresses that are not fleet.peers");
  out += "gwlb_fleet_sync_unknown_sender_total " + std::to_string(unknown_sender_) + "\n";
  family("gwlb_fleet_sync_from_self_total", "counter",
         "messages carrying this node's own node id (its own come back through a fleet.peers "
         "entry, or another node with the same fleet.node_name), refused");
  out += "gwlb_fleet_sync_from_self_total " + std::to_string(from_self_) + "\n";
}

}  // namespace gwlb::ctl
