// FleetSync, network side: the sockets opened and closed, and the UDP path
// (datagrams out to the peers; records, health views and config digests in).
// The warm-start server is fleet_warm_server.cc, this node's own warm start
// (the TCP client) fleet_sync_warm.cc, status and metrics fleet_sync_status.cc.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

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

}  // namespace

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
  view_ = FleetView(peers_.size());
  // Entries that are this node (one list written for every node, with a
  // wildcard sync_listen): never sent to, never asked.
  for (const SelfPeer& sp : selfPeers(opt_.listen, opt_.peers, hostAddresses())) {
    markThisNode(sp.index, sp.why);
    peers_[sp.index].this_node_by_address = true;
  }
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

void FleetSync::sendToPeers(const uint8_t* msg, size_t len, size_t records, PeerSet only) {
  if (len == 0) return;
  for (Peer& p : peers_) {
    if (p.this_node) continue;
    if (only != PeerSet::kAll && p.takes_flags != (only == PeerSet::kTakesFlags)) continue;
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

// Logs a change of the sections a peer's config differs from ours in (docs/fleet.md
// "Config drift": reported, never acted on), once per change. Classes get their
// consequence spelled out: the two nodes send new flows to different listeners.
void FleetSync::logDrift(Peer& p) {
  std::vector<std::string> diff = differingSections(config_digest_, p.digest);
  if (diff == p.drift_logged) return;
  if (diff.empty()) {
    spdlog::info("fleet sync: peer {}'s config agrees with this node's again", p.address);
  } else {
    std::string list;
    for (const std::string& s : diff) list += (list.empty() ? "" : ", ") + s;
    const bool classes = std::find(diff.begin(), diff.end(), "classes") != diff.end();
    spdlog::warn("fleet sync: peer {}'s config differs from this node's in: {}{} (gwlbctl fleet; "
                 "gwlb_fleet_config_differs)",
                 p.address, list,
                 classes ? "; its traffic classes differ, so a new flow may go to another listener, or "
                           "be bypassed or dropped, on one node than on the other (established flows keep "
                           "their listener on every node)"
                         : "");
  }
  p.drift_logged = std::move(diff);
}

void FleetSync::onOwnDatagram(Peer& p, const sync::Header& h) {
  if (p.self_window.check(h, unixMs()) != sync::ReplayWindow::Verdict::kOk) {
    ++p.self_replayed;
    if (double now = unixS(); now - p.self_log >= 10.0) {
      p.self_log = now;
      spdlog::warn("fleet sync: a replay of this node's own datagram (sequence {}, time {} ms off "
                   "ours) from peer {} dropped; the entry stays a peer",
                   h.seq, int64_t(h.time_ms - unixMs()), p.address);
    }
    return;
  }
  p.self_window.accept(h);
  uint64_t now = dp::monotonicNs();
  const bool pending = p.challenge != 0 && now - p.challenge_ns <= kChallengeNs;
  if (pending && h.nonce == p.challenge && h.type == sync::MsgType::kRecords)
    return markThisNode(size_t(&p - peers_.data()),
                        "this node's own datagrams come back from it: a challenge sent to it came back");
  if (!pending) sendChallenge(p, now);
}

// An empty batch (a keepalive to any peer, older ones included: they ignore
// a records batch's nonce) whose nonce only this node knows.
void FleetSync::sendChallenge(Peer& p, uint64_t now_ns) {
  sync::Header h = header(sync::MsgType::kRecords);
  h.nonce = random64() | 1;
  size_t len = sync::encode(key_, h, nullptr, 0, out_.data(), out_.size());
  if (len == 0) return;
  boost::system::error_code ec;
  udp_.send_to(asio::buffer(out_.data(), len), p.udp, 0, ec);
  if (ec) {
    ++p.send_errors;
    return;
  }
  ++p.datagrams_sent;
  ++p.challenges;
  p.challenge = h.nonce;
  p.challenge_ns = now_ns;
  // The first one only (the counter has the rest): the replay warnings keep
  // the entry's log allowance.
  if (p.challenges == 1)
    spdlog::info("fleet sync: this node's own datagram came from peer {}: a challenge sent to it "
                 "(the entry is this node only if its nonce comes back)",
                 p.address);
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
  if (st == sync::Status::kOk && !sync::isRecords(h.type) &&
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
    // Our own datagram from this entry's exact address: it may be us, or a
    // replay under a forged address; only a challenge tells.
    if (from == sync::Sender::kThisNode && p->udp.port() == rx_from_.port() && !p->this_node)
      return onOwnDatagram(*p, h);
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
  if (p->this_node && !p->this_node_by_address && p->udp.port() == rx_from_.port()) {
    // Another node's own fresh message from the entry's exact address: the
    // entry is that node, whatever came back before (a reflected challenge).
    p->this_node = false;
    view_.ignore(size_t(p - peers_.data()), false);
    p->this_node_why.clear();
    p->warm_error.clear();
    p->challenge = 0;
    spdlog::warn("fleet sync: fleet.peers[{}] {} is not this node: a peer's own messages come from "
                 "it; sending to it again",
                 size_t(p - peers_.data()), p->address);
  }
  p->last_sync = unixS();
  view_.heard(size_t(p - peers_.data()), h.epoch, dp::monotonicNs());
  ++p->datagrams_received;
  if (h.type == sync::MsgType::kConfigDigest) {
    p->digest.assign(digests, digests + h.count);
    p->has_digest = true;
    logDrift(*p);
    return;
  }
  if (h.type == sync::MsgType::kHealth) {
    // Whether it takes our config digests; a peer that stopped (downgraded) has none.
    p->takes_digest = (h.nonce & sync::kFeatureConfigDigest) != 0;
    p->takes_flags = (h.nonce & sync::kFeatureRecordFlags) != 0;
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

}  // namespace gwlb::ctl
