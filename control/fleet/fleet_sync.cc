// FleetSync, table side: what goes out (the workers' events, the refresh
// scan) and what a peer's record does to the local table. The sockets are in
// fleet_sync_net.cc, status and metrics in fleet_sync_status.cc.
#include "control/fleet/fleet_sync.h"

#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "dataplane/move.h"
#include "dataplane/pipeline.h"
#include "dataplane/worker.h"

namespace gwlb::ctl {

const char* toString(InstallResult r) {
  switch (r) {
    case InstallResult::kInstalled: return "installed";
    case InstallResult::kMoved: return "moved";
    case InstallResult::kRefreshed: return "refreshed";
    case InstallResult::kIgnored: return "ignored";
    case InstallResult::kConflict: return "conflict";
    case InstallResult::kUnknownAppliance: return "unknown_appliance";
    case InstallResult::kBadRecord: return "bad_record";
    case InstallResult::kTableFull: return "table_full";
    case InstallResult::kInsertAbandoned: return "insert_abandoned";
  }
  return "?";
}

namespace {

// An appliance address as 16 bytes (IPv4 as ::ffff:a.b.c.d), so both nodes of
// a conflict order the two appliances alike whatever their families; among
// IPv4 ones the order is the addresses'.
std::array<uint8_t, 16> orderKey(uint32_t v4, const std::array<uint8_t, 16>& v6, bool is_v6) {
  if (is_v6) return v6;
  std::array<uint8_t, 16> k{};
  k[10] = k[11] = 0xff;
  k[12] = uint8_t(v4 >> 24), k[13] = uint8_t(v4 >> 16), k[14] = uint8_t(v4 >> 8), k[15] = uint8_t(v4);
  return k;
}

// Whether the record's appliance is below the local copy's.
bool lowerAppliance(const sync::Record& r, const dp::ApplianceSlot& local) {
  return orderKey(r.appliance, r.appliance6, r.appliance == 0) < orderKey(local.ip, local.ip6, local.ipv6);
}

}  // namespace

FleetSync::Settle FleetSync::settleByOpening(bool peer_opened, bool local_opened, bool peer_older,
                                             bool peer_newer) {
  if (peer_opened != local_opened) return peer_opened ? Settle::kTakePeer : Settle::kKeepLocal;
  if (!peer_opened) return Settle::kUndecided;
  // Both opened by a SYN: the later SYN started the connection in use now.
  if (peer_newer) return Settle::kTakePeer;
  if (peer_older) return Settle::kKeepLocal;
  return Settle::kUndecided;
}

bool FleetSync::makeRecord(int32_t pos, const FlowKey& key, sync::RecordKind kind, uint64_t now,
                           sync::Record& out) const {
  if (key.kind != KeyKind::kFlow) return false;  // fragment entries are never synced
  const dp::FlowEntry& e = flows_.entry(pos);
  // Concurrency rule R1 (docs/architecture.md "Flow entries: concurrency rules"):
  // no route, or no idle timeout yet: still being created; its creator's event comes later.
  uint64_t route = e.route.load(std::memory_order_acquire);
  if (!(route & dp::kRouteSet) || e.idle_timeout.ms.load(std::memory_order_acquire) == 0)
    return false;
  const dp::Snapshot* s = snapshot_();
  uint16_t id = dp::routeAppliance(route);
  if (!s || id >= s->appliances.size() || s->appliances[id].ip == 0) return false;
  out = sync::Record{};
  out.key = key;
  out.kind = kind;
  out.flow_hash = e.flow_hash.load(std::memory_order_relaxed);
  // An IPv6 appliance by its address (its `ip` is a local key only).
  if (s->appliances[id].ipv6) out.appliance6 = s->appliances[id].ip6;
  else out.appliance = s->appliances[id].ip;
  out.cookie = dp::routeCookie(route);
  // Concurrency rule R4 (docs/architecture.md "Flow entries: concurrency rules"):
  // `moved` is read after the route; a move in between shows next time.
  uint64_t mv = e.moved.load(std::memory_order_acquire);
  if (mv) {
    uint16_t from = dp::moveFrom(mv);
    if (from < s->appliances.size() && s->appliances[from].ipv6) out.prev_appliance6 = s->appliances[from].ip6;
    else out.prev_appliance = from < s->appliances.size() ? s->appliances[from].ip : 0;
    out.prev_cookie = dp::moveCookie(mv);
    out.move_reason = dp::moveReason(mv);
  }
  out.moves = e.moves.load(std::memory_order_relaxed);
  out.first_dir = dp::originDir(e.origin.load(std::memory_order_relaxed));
  out.opened = e.idle_timeout.opened(std::memory_order_acquire);
  uint64_t seen = e.last_seen.ns(now);
  uint64_t born = e.created.ns(now);
  auto ms = [](uint64_t ns) { return uint32_t(std::min<uint64_t>(ns / 1'000'000, UINT32_MAX)); };
  out.idle_for_ms = now > seen ? ms(now - seen) : 0;
  out.age_ms = now > born ? ms(now - born) : 0;
  // Its appliance's bypass, with the seconds it has left (an ended one, not
  // yet cleared by a packet, is sent as none).
  if (dp::routeBypassed(route)) {
    if (!dp::routeBypassTimed(route)) {
      out.bypass = sync::kRecordBypassed;
    } else if (!dp::bypassEnded(route, now)) {
      uint64_t until = dp::bypassUntilNs(route, now);
      out.bypass = sync::kRecordBypassed | sync::kRecordBypassTimed;
      out.bypass_left_s = uint16_t(std::clamp<uint64_t>((until - now + 999'999'999) / 1'000'000'000, 1,
                                                        dp::kMaxBypassSeconds));
    }
  }
  return true;
}

// install()'s checks before the table: false (with the record's result in
// `stop`) when the record goes no further.
bool FleetSync::planInstall(const dp::Snapshot* s, const sync::Record& r, uint64_t now, InstallPlan& p,
                            InstallResult& stop) const {
  if (!s || r.key.listener >= s->listeners.size()) return stop = InstallResult::kBadRecord, false;
  // Same secret and config: the same key hashes alike here. Anything else is
  // another config (listener indexes, stickiness) and would be a wrong entry.
  p.hash = flowHash(r.key);
  if (p.hash != r.flow_hash) return stop = InstallResult::kBadRecord, false;
  p.id = r.appliance ? s->applianceByIp(r.appliance) : s->applianceByIp6(r.appliance6.data());
  if (p.id == dp::kNoAppliance || p.id >= s->appliances.size() || !s->appliances[p.id].routable)
    return stop = InstallResult::kUnknownAppliance, false;
  const dp::ApplianceSlot& sv = s->appliances[p.id];
  if (sv.group >= s->groups.size()) return stop = InstallResult::kUnknownAppliance, false;
  const dp::GroupView& g = s->groups[sv.group];
  p.idle_ns = r.key.proto == kProtoTcp ? g.tcpIdleNs() : g.otherIdleNs();
  p.seen = now - std::min<uint64_t>(uint64_t(r.idle_for_ms) * 1'000'000, now);
  p.born = now - std::min<uint64_t>(uint64_t(r.age_ms) * 1'000'000, now);
  // A record older than the idle timeout would expire at the next sweep.
  if (p.seen + p.idle_ns <= now) return stop = InstallResult::kIgnored, false;
  p.prev = r.prev_appliance                          ? s->applianceByIp(r.prev_appliance)
           : r.prev_appliance6 != std::array<uint8_t, 16>{} ? s->applianceByIp6(r.prev_appliance6.data())
                                                            : dp::kNoAppliance;
  p.want = dp::packRoute(p.id, r.cookie);
  return true;
}

// The table's position for a record that passed planInstall(): kAbandoned and
// kFull (any other negative) are results.
InstallResult FleetSync::placeFailed(int32_t pos) {
  return pos == dp::FlowTable::kAbandoned ? InstallResult::kInsertAbandoned : InstallResult::kTableFull;
}

InstallResult FleetSync::install(const sync::Record& r, uint64_t now) {
  const dp::Snapshot* s = snapshot_();
  InstallPlan p;
  InstallResult stop;
  if (!planInstall(s, r, now, p, stop)) return stop;
  int32_t pos = flows_.lookup(r.key, p.hash);
  if (pos < 0) pos = flows_.insertFromControl(r.key, p.hash);  // never waits long behind a worker
  if (pos < 0) return placeFailed(pos);
  return applyInstall(s, r, p, pos, now);
}

void FleetSync::installBatch(const sync::Record* recs, size_t n, uint64_t now, InstallResult* out) {
  const dp::Snapshot* s = snapshot_();
  constexpr size_t kStage = 256;
  InstallPlan plan[kStage];
  const FlowKey* keys[kStage];
  uint32_t hashes[kStage], which[kStage];
  int32_t pos[kStage];
  for (size_t at = 0; at < n; at += kStage) {
    const size_t m = std::min(n - at, kStage);
    uint32_t k = 0;
    for (size_t i = 0; i < m; ++i) {
      if (!planInstall(s, recs[at + i], now, plan[k], out[at + i])) continue;
      keys[k] = &recs[at + i].key;
      hashes[k] = plan[k].hash;
      which[k++] = uint32_t(at + i);
    }
    // Never waits long behind a worker (insertFromControl's bound, per key).
    flows_.insertBulkFromControl(keys, hashes, k, pos);
    for (uint32_t j = 0; j < k; ++j)
      out[which[j]] = pos[j] < 0 ? placeFailed(pos[j]) : applyInstall(s, recs[which[j]], plan[j], pos[j], now);
  }
}

// install()'s changes to the entry at `pos` (found, or just inserted).
InstallResult FleetSync::applyInstall(const dp::Snapshot* s, const sync::Record& r, const InstallPlan& p,
                                      int32_t pos, uint64_t now) {
  const uint32_t hash = p.hash;
  const uint16_t prev = p.prev;
  const uint64_t want = p.want, seen = p.seen, born = p.born, idle_ns = p.idle_ns;
  dp::FlowEntry& e = flows_.entry(pos);
  InstallResult result = InstallResult::kIgnored;
  // Concurrency rule R9 (docs/architecture.md "Flow entries: concurrency rules"):
  // a peer's flow is created as a worker creates one (R1): the first route wins.
  uint64_t route = e.route.load(std::memory_order_acquire);
  if (!(route & dp::kRouteSet)) {
    e.flow_hash.store(hash, std::memory_order_relaxed);
    e.last_seen.store(seen);
    if (e.route.compare_exchange_strong(route, want, std::memory_order_acq_rel)) {
      e.created.store(born);
      e.origin.store(dp::packOrigin(r.first_dir, r.key.listener, kNoClass), std::memory_order_relaxed);
      if (r.moves) {
        e.moved.store(prev != dp::kNoAppliance ? dp::packMove(r.move_reason, prev, r.prev_cookie) : 0,
                      std::memory_order_release);
        e.moved_at.store(now);
        e.moves.store(r.moves, std::memory_order_relaxed);
      }
      e.idle_timeout.store(idle_ns, std::memory_order_release, r.opened);
      result = InstallResult::kInstalled;
      route = want;
    }
    // Lost: a worker created it meanwhile; handled as an existing flow below.
  }
  if (result != InstallResult::kInstalled) {
    if (dp::routeBase(route) == want) {
      result = InstallResult::kRefreshed;
    } else if (prev != dp::kNoAppliance && dp::routeAppliance(route) == prev && dp::routeCookie(route) == r.prev_cookie &&
               (r.kind == sync::RecordKind::kChanged ||
                // A refresh or transfer of a flow moved more often than our
                // copy, its last move from exactly our route: the move's own
                // record was lost (sync link down, a datagram lost), and
                // without this our copy would keep the old appliance until it
                // expired (the soak found it).
                r.moves > e.moves.load(std::memory_order_relaxed))) {
      // Concurrency rule R9 (docs/architecture.md "Flow entries: concurrency rules"):
      // a peer's move is one CAS from the route it left (R4); a worker's move wins a race.
      uint64_t seen_route = route;
      if (e.route.compare_exchange_strong(seen_route, want, std::memory_order_acq_rel)) {
        e.moved.store(dp::packMove(r.move_reason, prev, r.prev_cookie), std::memory_order_release);
        e.moved_at.store(now);
        e.moves.fetch_add(1, std::memory_order_relaxed);
        result = InstallResult::kMoved;
      }
    }
    // Two copies of the flow on different appliances, each made by its own
    // node. A stateful appliance passes only a connection whose opening SYN
    // it saw, so that decides first (settleByOpening): a copy created by the
    // opening SYN (SYN without ACK) wins over one created from a later
    // packet (the SYN-ACK, a mid-stream segment after a lost record),
    // whatever the addresses and moves; of two such copies, one opened more
    // than kConflictMarginNs after the other is a new connection on a reused
    // 5-tuple and wins. Otherwise (neither opened, or both within the
    // margin) every node settles it the same way when neither copy ever
    // moved: the copy created more than kConflictMarginNs earlier wins (an
    // established flow is never moved to a late creator's pick, e.g. after
    // a lost record); copies created within the margin of each other (ECMP
    // sent the two directions to two nodes whose health views differed) go
    // to the lower appliance address. The loser records it as a move
    // (fleet_conflict) from its own pick.
    uint16_t local_id = dp::routeAppliance(route);
    uint64_t local_born = e.created.ns(now);
    bool local_opened = e.idle_timeout.opened(std::memory_order_acquire);
    bool peer_older = born + kConflictMarginNs < local_born;
    bool peer_newer = local_born + kConflictMarginNs < born;
    Settle by_opening = settleByOpening(r.opened, local_opened, peer_older, peer_newer);
    bool take = by_opening == Settle::kTakePeer ||
                (by_opening == Settle::kUndecided && r.kind != sync::RecordKind::kChanged &&
                 r.moves == 0 && e.moves.load(std::memory_order_relaxed) == 0 &&
                 local_id < s->appliances.size() && !peer_newer &&
                 (peer_older || lowerAppliance(r, s->appliances[local_id])));
    if (result == InstallResult::kIgnored && route != want && take) {
      // Concurrency rule R9 (docs/architecture.md "Flow entries: concurrency rules"):
      // one CAS from the local route (R4); a worker's move wins a race.
      uint64_t seen_route = route;
      if (e.route.compare_exchange_strong(seen_route, want, std::memory_order_acq_rel)) {
        e.moved.store(dp::packMove(uint8_t(dp::MoveReason::kFleetConflict), local_id,
                                   dp::routeCookie(route)),
                      std::memory_order_release);
        e.moved_at.store(now);
        e.moves.fetch_add(1, std::memory_order_relaxed);
        if (by_opening == Settle::kTakePeer) {
          // The copy is now the peer's connection: its creation and opening
          // too, so the two copies compare equal from here on.
          e.created.store(born);
          if (r.opened) e.idle_timeout.store(e.idle_timeout.ns(), std::memory_order_release, true);
        }
        result = InstallResult::kConflict;
      }
    }
    // The same flow on the same appliance: the peer's packets keep it alive here.
    if (result == InstallResult::kRefreshed || result == InstallResult::kMoved ||
        result == InstallResult::kConflict) {
      uint64_t local = e.last_seen.ns(now);
      if (seen > local) e.last_seen.store(seen);
    }
  }
  // The appliance's bypass as the peer has it (docs/fleet.md "Flow state
  // sync"), on the same route only: a peer's record of a bypass that began
  // sets it here; a change without one (it ended there) clears it.
  // Concurrency rule R9 (docs/architecture.md "Flow entries: concurrency rules"):
  // one CAS; a worker's move or grant wins a race.
  uint64_t cur = e.route.load(std::memory_order_acquire);
  if (dp::routeBase(cur) == want) {
    uint64_t next = cur;
    if (r.bypass & sync::kRecordBypassed)
      next = dp::withBypass(cur, r.bypass_timed(), now + uint64_t(r.bypass_left_s) * 1'000'000'000);
    else if (r.kind == sync::RecordKind::kChanged)
      next = dp::routeBase(cur);
    if (next != cur) e.route.compare_exchange_strong(cur, next, std::memory_order_acq_rel);
  }
  // What a peer told us is not sent back to it (nor to the others) unless
  // this node's own packets refresh it later.
  sent_.mark(pos, now, e.moves.load(std::memory_order_relaxed));
  return result;
}

void FleetSync::tick(uint64_t now) {
  updateView(now);
  drainEvents(now);
  refreshScan(now);
  flush(now);
  if (now - last_send_ns_ >= kKeepaliveNs) {
    // Nothing to say: an empty batch tells the peers we are here.
    size_t len = sync::encode(key_, header(sync::MsgType::kRecords), nullptr, 0, out_.data(),
                              out_.size());
    sendToPeers(out_.data(), len, 0);
    last_send_ns_ = now;
  }
  if (now - last_health_ns_ >= kKeepaliveNs) {
    sendHealth();
    sendConfigDigest();
    last_health_ns_ = now;
  }
}

void FleetSync::updateView(uint64_t now) {
  // Twice the longest TCP idle timeout: a lost record's flow is refreshed
  // within a third of it if it has packets, and expires within it if not.
  if (const dp::Snapshot* s = snapshot_ ? snapshot_() : nullptr) {
    uint64_t idle = 0;
    for (const dp::GroupView& g : s->groups) idle = std::max(idle, g.tcpIdleNs());
    if (idle) view_.setHorizon(2 * idle);
  }
  // Written only on a change: the flag shares a cache line with what the
  // workers read every burst (Dataplane::snapshot).
  bool incomplete = !view_.complete(now);
  if (opt_.view_incomplete && opt_.view_incomplete->load(std::memory_order_relaxed) != incomplete)
    opt_.view_incomplete->store(incomplete, std::memory_order_relaxed);
}

void FleetSync::sendConfigDigest() {
  if (config_digest_.empty()) return;
  size_t n = std::min(config_digest_.size(), sync::kMaxDigestEntries);
  size_t len = sync::encodeConfigDigest(key_, header(sync::MsgType::kConfigDigest),
                                        config_digest_.data(), n, out_.data(), out_.size());
  if (len == 0) return;
  for (Peer& p : peers_) {
    if (!p.takes_digest) continue;
    boost::system::error_code ec;
    udp_.send_to(boost::asio::buffer(out_.data(), len), p.udp, 0, ec);
    ++(ec ? p.send_errors : p.datagrams_sent);
  }
}

void FleetSync::sendHealth() {
  if (!opt_.health) return;
  std::vector<sync::HealthEntry> view;
  for (const auto& [ip, st] : opt_.health()) view.push_back({ip, st.first, st.second});
  for (size_t i = 0; i < view.size(); i += sync::kMaxHealthEntries) {
    size_t n = std::min(view.size() - i, sync::kMaxHealthEntries);
    sync::Header h = header(sync::MsgType::kHealth);
    // We take config digests and record flags (old peers ignore the bits).
    h.nonce = sync::kFeatureConfigDigest | sync::kFeatureRecordFlags;
    size_t len = sync::encodeHealth(key_, h, view.data() + i, n, out_.data(), out_.size());
    sendToPeers(out_.data(), len, 0);
  }
}

void FleetSync::drainEvents(uint64_t now) {
  if (!events_) return;
  void* ev[256];
  unsigned total = 0;
  while (total < kDrainPerTick) {
    unsigned n = rte_ring_dequeue_burst(events_, ev, 256, nullptr);
    if (n == 0) break;
    total += n;
    for (unsigned i = 0; i < n; ++i) {
      int32_t pos = dp::syncEventPos(ev[i]);
      FlowKey key;
      if (!flows_.keyAt(pos, key)) continue;  // expired since
      // A bypass that began or ended is a change of the flow, as a move is.
      sync::RecordKind kind = dp::syncEventKind(ev[i]) != dp::SyncEvent::kNew
                                  ? sync::RecordKind::kChanged
                                  : sync::RecordKind::kNew;
      sync::Record r;
      if (makeRecord(pos, key, kind, now, r)) queue(pos, r, now);
    }
  }
  events_drained_ += total;
}

void FleetSync::refreshScan(uint64_t now) {
  if (scan_cursor_ == 0 && scan_pass_start_ns_ == 0) scan_pass_start_ns_ = now;
  uint32_t from = scan_cursor_;
  bool more = flows_.scan(scan_cursor_, kScanPerTick, kScanSlotsPerTick,
                          [&](const FlowKey& key, int32_t pos, const dp::FlowEntry& e) {
    if (key.kind != KeyKind::kFlow) return true;
    uint64_t at = 0;
    uint16_t sent_moves = 0;
    bool sent = sent_.get(pos, now, at, sent_moves);
    uint64_t born = e.created.ns(now);
    uint64_t idle = e.idle_timeout.ns(std::memory_order_acquire);
    if (idle == 0) return true;  // still being created (R1, R3)
    uint16_t moves = e.moves.load(std::memory_order_relaxed);
    sync::RecordKind kind;
    if (!sent || at < born) kind = sync::RecordKind::kNew;  // never sent (ring was full) or a new flow here
    else if (moves != sent_moves) kind = sync::RecordKind::kChanged;  // moved by a sweep
    else if (handoff_ns_ && at < (handoff_ns_ >> dp::kTickShift << dp::kTickShift) && moves &&
             e.moved_at.ns(now) + idle / 3 >= handoff_ns_)
      kind = sync::RecordKind::kChanged;  // a graceful stop hands its recent moves off (once: sent after it)
    else if (e.last_seen.ns(now) > at && now - at >= idle / 3)
      kind = sync::RecordKind::kRefresh;
    else
      return true;
    sync::Record r;
    if (makeRecord(pos, key, kind, now, r)) queue(pos, r, now);
    return true;
  });
  scan_last_slots_ = scan_cursor_ - from;
  if (!more) {
    scan_cursor_ = 0;
    ++scan_passes_;
    scan_last_pass_ns_ = now - scan_pass_start_ns_;
    scan_pass_start_ns_ = now;
  }
}

void FleetSync::handOff(uint64_t now) {
  if (handoff_ns_) return;
  handoff_ns_ = now;
  tick(now);
}

void FleetSync::queue(int32_t pos, const sync::Record& r, uint64_t now) {
  sent_.mark(pos, now, r.moves);
  switch (r.kind) {
    case sync::RecordKind::kNew: ++new_sent_; break;
    case sync::RecordKind::kChanged: ++changed_sent_; break;
    default: ++refresh_sent_; break;
  }
  if (peers_.empty()) return;
  if (!sync::fits(pending_.data(), pending_.size(), r)) flush(now);
  pending_.push_back(r);
  if (pending_.size() == sync::kMaxRecords) flush(now);
}

void FleetSync::flush(uint64_t now) {
  if (pending_.empty()) return;
  const sync::Header h = header(sync::MsgType::kRecords);
  size_t len = sync::encode(key_, h, pending_.data(), pending_.size(), out_.data(), out_.size());
  sendToPeers(out_.data(), len, pending_.size(), PeerSet::kTakesFlags);
  // The same records without flags, under the next sequence number, for
  // peers that would refuse them (a gwlbd before them, or one not heard yet).
  if (std::any_of(peers_.begin(), peers_.end(), [](const Peer& p) { return !p.this_node && !p.takes_flags; })) {
    for (sync::Record& r : pending_) r.opened = false, r.bypass = 0, r.bypass_left_s = 0;
    len = sync::encode(key_, header(sync::MsgType::kRecords), pending_.data(), pending_.size(),
                       out_.data(), out_.size());
    sendToPeers(out_.data(), len, pending_.size(), PeerSet::kNoFlags);
  }
  pending_.clear();
  last_send_ns_ = now;
}

void FleetSync::countInstall(Peer* p, InstallResult r) {
  if (!p) return;
  switch (r) {
    case InstallResult::kInstalled: ++p->installed; break;
    case InstallResult::kMoved: ++p->moved; break;
    case InstallResult::kRefreshed: ++p->refreshed; break;
    case InstallResult::kIgnored: ++p->ignored; break;
    case InstallResult::kConflict: ++p->conflicts; break;
    case InstallResult::kUnknownAppliance: ++p->unknown_appliance; break;
    case InstallResult::kBadRecord: ++p->bad_records; break;
    case InstallResult::kTableFull: ++p->table_full; break;
    case InstallResult::kInsertAbandoned: ++p->insert_abandoned; break;
  }
}

}  // namespace gwlb::ctl
