// Installing peers' flow records (ctl::FleetSync::install, rule R9 in
// docs/architecture.md): a flow we do not have is created with the peer's
// route and then forwarded there by the workers; a record overrides a local
// route only as a move from exactly the route the flow has, or when both
// nodes created the flow with different appliances (the lower address wins
// everywhere); the same
// route refreshes the last packet time; unknown appliances and foreign flow
// hashes are refused. And makeRecord gives back what install took. A record
// carries its flow's listener: installed under it, whatever this node's own
// traffic classes would say (issue 27).
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "common/flow_cookie.h"
#include "control/config/config_digest.h"
#include "control/engine/region_failover.h"
#include "control/fleet/fleet_sync.h"
#include "dataplane/worker.h"
#include <rte_ring.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <map>
#include <thread>
#include <vector>

#include "dataplane/eal.h"
#include "tests/dp/dataplane/flow_table_test_access.h"
#include "tests/dp/dp_harness.h"
#include "tests/dp/sync_sockets.h"

namespace gwlb::dptest {
namespace {

struct RecordKey {
  FlowKey k;
  bool operator<(const RecordKey& o) const { return std::memcmp(&k, &o.k, sizeof k) < 0; }
};

class FleetSyncInstall : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = std::make_unique<Harness>();
    ctl::FleetSync::Options o;
    o.node_name = "gw-test";
    o.secret = flowHashKey();
    bindRetrying(o.listen, [&] {
      fs_ = std::make_unique<ctl::FleetSync>(io_, o, h_->flows(), nullptr,
                                             [this] { return &h_->snapshot(); });
    });
  }
  void TearDown() override {
    fs_.reset();
    h_.reset();
  }
  // The peer's record of flow i (client port 40000 + i) on appliance `app`.
  sync::Record peerRecord(int i, const IpAddr& app, sync::RecordKind kind = sync::RecordKind::kNew) {
    L4Tuple t;
    t.src = net().client4;
    t.dst = net().server4;
    t.proto = 6;
    t.sport = uint16_t(40000 + i);
    t.dport = 443;
    sync::Record r;
    r.key = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
    r.flow_hash = flowHash(r.key);
    r.appliance = app.v4HostOrder();
    r.cookie = flowCookie(r.flow_hash, r.appliance);
    r.kind = kind;
    r.idle_for_ms = 1000;
    r.age_ms = 5000;
    return r;
  }
  // A segment of flow i: by default its opening SYN; kTcpAck a mid-stream
  // segment, kTcpSyn | kTcpAck the server's SYN-ACK (same key, this node's
  // harness sends both from the client side).
  Frame flow(int i, uint8_t flags = kTcpSyn) const {
    const Net& n = net();
    return Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, uint16_t(40000 + i), 443, {}, flags)),
                 kPortA};
  }
  // Where the worker sends flow i now (appliance, cookie).
  Encap sent(int i, uint8_t flags = kTcpSyn) {
    Result r = h_->send(flow(i, flags));
    EXPECT_EQ(r.verdict, Verdict::kAppliance) << describe(r);
    return checkEncap(*h_, r.bytes, expectedInner(*h_, flow(i, flags)), expectedProtocol(*h_, flow(i, flags)));
  }
  const dp::FlowEntry& entryOf(int i) {
    sync::Record r = peerRecord(i, net().appliances[0]);
    int32_t pos = h_->flows().lookup(r.key, r.flow_hash);
    EXPECT_GE(pos, 0);
    return h_->flows().entry(pos);
  }
  // The appliance today's table picks for flow i, and one it does not.
  IpAddr picked(int i) {
    const dp::Snapshot& s = h_->snapshot();
    const auto& g = s.groups[0];
    return IpAddr::v4(s.appliances[g.maglev[peerRecord(i, net().appliances[0]).flow_hash % g.maglev.size()]].ip);
  }
  IpAddr other(int i) {
    IpAddr p = picked(i);
    for (const IpAddr& a : net().appliances)
      if (!(a == p)) return a;
    return p;
  }
  boost::asio::io_context io_;
  std::unique_ptr<Harness> h_;
  std::unique_ptr<ctl::FleetSync> fs_;
};

TEST_F(FleetSyncInstall, APeersFlowIsCreatedWithItsRouteAndForwardedThere) {
  uint64_t now = h_->now;
  for (int i = 0; i < 20; ++i) {
    sync::Record r = peerRecord(i, other(i));  // not what this node's table picks
    ASSERT_EQ(fs_->install(r, now), ctl::InstallResult::kInstalled) << i;
    Encap e = sent(i);
    EXPECT_EQ(e.appliance, other(i)) << "the peer's appliance, not today's choice";
    EXPECT_EQ(e.cookie, r.cookie);
    int32_t pos = h_->flows().lookup(r.key, r.flow_hash);
    ASSERT_GE(pos, 0);
    const dp::FlowEntry& en = h_->flows().entry(pos);
    EXPECT_EQ(en.idle_timeout.ns(), 350'000'000'000ULL) << "the group's TCP idle timeout";
    // Times are kept in ticks of 2^20 ns.
    EXPECT_NEAR(double(en.created.ns(now)), double(now - 5'000'000'000ULL), double(dp::kTickNs));
  }
  EXPECT_EQ(h_->get(Counter::flows_created), 0u) << "the workers created none of them";
  // makeRecord gives back what install took.
  for (int i = 0; i < 20; ++i) {
    sync::Record r = peerRecord(i, other(i));
    int32_t pos = h_->flows().lookup(r.key, r.flow_hash);
    sync::Record back;
    ASSERT_TRUE(fs_->makeRecord(pos, r.key, sync::RecordKind::kRefresh, h_->now, back));
    EXPECT_EQ(back.appliance, r.appliance);
    EXPECT_EQ(back.cookie, r.cookie);
    EXPECT_EQ(back.flow_hash, r.flow_hash);
    EXPECT_TRUE(back.key == r.key);
    EXPECT_EQ(back.idle_for_ms, 0u) << "the worker's packet just now";
  }
}

// An appliance's bypass as a peer has it (docs/fleet.md "Flow state sync"):
// set on the same route, sent back by makeRecord with the seconds left; a
// refresh without it (a peer without kFeatureRecordFlags) is the same route, not
// a conflict, and keeps it; a change without it (it ended there) clears it.
TEST_F(FleetSyncInstall, APeersBypassIsKeptOnTheSameRouteAndEndedByAChange) {
  const uint64_t now = h_->now;
  sync::Record r = peerRecord(1, other(1));
  r.bypass = sync::kRecordBypassed | sync::kRecordBypassTimed;
  r.bypass_left_s = 120;
  ASSERT_EQ(fs_->install(r, now), ctl::InstallResult::kInstalled);
  int32_t pos = h_->flows().lookup(r.key, r.flow_hash);
  ASSERT_GE(pos, 0);
  const dp::FlowEntry& en = h_->flows().entry(pos);
  uint64_t route = en.route.load();
  EXPECT_TRUE(dp::routeBypassed(route) && dp::routeBypassTimed(route));
  EXPECT_EQ(dp::routeBase(route), dp::packRoute(h_->snapshot().applianceByIp(r.appliance), r.cookie));
  EXPECT_NEAR(double(dp::bypassUntilNs(route, now) - now) / 1e9, 120.0, 1.1);
  sync::Record back;
  ASSERT_TRUE(fs_->makeRecord(pos, r.key, sync::RecordKind::kRefresh, now, back));
  EXPECT_EQ(back.bypass, sync::kRecordBypassed | sync::kRecordBypassTimed);
  EXPECT_GE(back.bypass_left_s, 120);
  EXPECT_LE(back.bypass_left_s, 122);

  EXPECT_EQ(fs_->install(peerRecord(1, other(1), sync::RecordKind::kRefresh), now),
            ctl::InstallResult::kRefreshed);
  EXPECT_TRUE(dp::routeBypassed(en.route.load())) << "an older peer's refresh keeps it";
  EXPECT_EQ(en.moves.load(), 0u);
  EXPECT_EQ(fs_->install(peerRecord(1, other(1), sync::RecordKind::kChanged), now),
            ctl::InstallResult::kRefreshed);
  EXPECT_FALSE(dp::routeBypassed(en.route.load())) << "ended on the peer: ended here";
  EXPECT_EQ(dp::routeBase(en.route.load()), dp::routeBase(route));

  // For the flow's life: no seconds left to send.
  sync::Record life = peerRecord(2, other(2));
  life.bypass = sync::kRecordBypassed;
  ASSERT_EQ(fs_->install(life, now), ctl::InstallResult::kInstalled);
  pos = h_->flows().lookup(life.key, life.flow_hash);
  ASSERT_TRUE(fs_->makeRecord(pos, life.key, sync::RecordKind::kRefresh, now + 7200 * 1'000'000'000ULL, back));
  EXPECT_EQ(back.bypass, sync::kRecordBypassed);
  EXPECT_EQ(back.bypass_left_s, 0);
}

TEST_F(FleetSyncInstall, TwoCreationsWithDifferentAppliancesSettleOnTheLowerAddress) {
  // Two nodes with different health views create the same flow at once (ECMP
  // sent its directions to both): when neither copy came from the opening
  // SYN, or both did, each node ends with the lower appliance address,
  // whichever record arrives where.
  int lower_won = 0, local_kept = 0;
  for (int n = 0; n < 32; ++n) {
    const bool opened = n >= 16;
    const int i = n;
    Encap local = sent(i, opened ? kTcpSyn : kTcpAck);
    IpAddr elsewhere = other(i);
    ASSERT_FALSE(elsewhere == local.appliance);
    bool peer_lower = elsewhere.v4HostOrder() < local.appliance.v4HostOrder();
    sync::Record r = peerRecord(i, elsewhere, i % 2 ? sync::RecordKind::kNew : sync::RecordKind::kRefresh);
    r.opened = opened;
    r.age_ms = 300;  // created 0.3 s before ours: a tie
    auto res = fs_->install(r, h_->now);
    int32_t pos = h_->flows().lookup(r.key, r.flow_hash);
    const dp::FlowEntry& en = h_->flows().entry(pos);
    if (peer_lower) {
      ++lower_won;
      EXPECT_EQ(res, ctl::InstallResult::kConflict) << i;
      Encap now = sent(i);
      EXPECT_EQ(now.appliance, elsewhere) << i;
      EXPECT_EQ(now.cookie, r.cookie) << i;
      EXPECT_EQ(dp::moveReason(en.moved.load()), uint8_t(dp::MoveReason::kFleetConflict));
      EXPECT_EQ(dp::moveCookie(en.moved.load()), local.cookie);
      EXPECT_EQ(en.moves.load(), 1);
      // The peer's copy of the loser's record changes nothing there either:
      // the same rule with the roles swapped keeps the lower address.
      sync::Record loser = peerRecord(i, local.appliance);
      loser.opened = opened;
      loser.age_ms = 0;
      EXPECT_EQ(fs_->install(loser, h_->now), ctl::InstallResult::kIgnored);
      EXPECT_EQ(sent(i).appliance, elsewhere);
    } else {
      ++local_kept;
      EXPECT_EQ(res, ctl::InstallResult::kIgnored) << i;
      EXPECT_EQ(sent(i).appliance, local.appliance) << i;
      EXPECT_EQ(en.moves.load(), 0);
    }
  }
  EXPECT_GT(lower_won, 0);
  EXPECT_GT(local_kept, 0);
}

TEST_F(FleetSyncInstall, AnOlderCopyWinsWhateverItsAddress) {
  // A copy created well before ours (a record this node missed, then ECMP
  // brought the flow here and a worker picked today's choice) wins; a copy
  // created well after ours never moves our established flow (neither came
  // from the opening SYN).
  int older_won = 0, newer_lost = 0;
  for (int i = 0; i < 8; ++i) {
    Encap local = sent(i, kTcpAck);
    IpAddr elsewhere = other(i);
    sync::Record newer = peerRecord(i, elsewhere);
    newer.age_ms = 0;
    h_->now += 5'000'000'000ULL;  // the peer created it 5 s after us
    EXPECT_EQ(fs_->install(newer, h_->now), ctl::InstallResult::kIgnored) << i;
    EXPECT_EQ(sent(i).appliance, local.appliance) << i;
    ++newer_lost;
    sync::Record older = peerRecord(i, elsewhere);
    older.age_ms = 60'000;  // the peer's copy is a minute old, ours 5 s
    EXPECT_EQ(fs_->install(older, h_->now), ctl::InstallResult::kConflict) << i;
    EXPECT_EQ(sent(i).appliance, elsewhere) << i;
    ++older_won;
  }
  EXPECT_EQ(older_won, 8);
  EXPECT_EQ(newer_lost, 8);
}

TEST_F(FleetSyncInstall, AReplyInFlightWhenALaterRefreshSettlesTheCopyIsAReturnAfterMove) {
  // The soak's drop_return_after_move with no fault near (docs/fleet.md "What
  // each failure does"): this node missed a peer's record of a flow (a sync
  // cut, a restart), made its own copy on another appliance when ECMP brought
  // the flow here, and sent packets there; the peer's next refresh (up to a
  // third of the idle timeout later) settles it on the older copy. What the
  // appliance it left still had in flight comes back to a flow that moved.
  Encap local = sent(3, kTcpAck);
  IpAddr elsewhere = other(3);
  ASSERT_FALSE(local.appliance == elsewhere);
  sync::Record older = peerRecord(3, elsewhere, sync::RecordKind::kRefresh);
  older.age_ms = 60'000;
  h_->now += 20'000'000'000ULL;  // the refresh, 20 s later
  EXPECT_EQ(fs_->install(older, h_->now), ctl::InstallResult::kConflict);
  Result r = h_->send(fromAppliance(local.appliance, local.sport, local.geneve_hdr, local.inner), kUnderlayPort);
  EXPECT_EQ(r.verdict, Verdict::kDrop) << describe(r);
  EXPECT_EQ(h_->get(Counter::drop_return_after_move), 1u);
  EXPECT_EQ(h_->get(Counter::drop_return_wrong_appliance), 0u);
  EXPECT_EQ(sent(3, kTcpAck).appliance, elsewhere) << "the flow's packets go to the older copy's appliance now";
}

TEST_F(FleetSyncInstall, TheCopyThatSawTheOpeningSynWinsWhateverTheAddress) {
  // ECMP sent the client's SYN to the peer and the server's SYN-ACK here, and
  // the two health views differed: a stateful appliance passes only the
  // connection whose SYN it saw, so the peer's copy wins here whatever the
  // addresses, and ours (from the SYN-ACK) never wins there.
  int against_address = 0;
  for (int i = 0; i < 16; ++i) {
    Encap local = sent(i, kTcpSyn | kTcpAck);
    IpAddr elsewhere = other(i);
    ASSERT_FALSE(elsewhere == local.appliance);
    if (elsewhere.v4HostOrder() > local.appliance.v4HostOrder()) ++against_address;
    const dp::FlowEntry& en = entryOf(i);
    EXPECT_FALSE(en.idle_timeout.opened()) << "created from the SYN-ACK";
    sync::Record r = peerRecord(i, elsewhere, i % 2 ? sync::RecordKind::kNew : sync::RecordKind::kRefresh);
    r.opened = true;
    r.age_ms = 300;
    EXPECT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kConflict) << i;
    Encap now = sent(i, kTcpAck);
    EXPECT_EQ(now.appliance, elsewhere) << i;
    EXPECT_EQ(now.cookie, r.cookie) << i;
    EXPECT_TRUE(en.idle_timeout.opened()) << "the copy is the peer's connection now";
    EXPECT_EQ(dp::moveReason(en.moved.load()), uint8_t(dp::MoveReason::kFleetConflict));
    // Our old copy's record, as the peer would get it: refused here too.
    sync::Record loser = peerRecord(i, local.appliance);
    loser.age_ms = 0;
    EXPECT_EQ(fs_->install(loser, h_->now), ctl::InstallResult::kIgnored) << i;
    EXPECT_EQ(sent(i, kTcpAck).appliance, elsewhere) << i;
  }
  EXPECT_GT(against_address, 0) << "the lower address would have decided otherwise";
  // The other side: our copy came from the SYN; the peer's from the SYN-ACK
  // (its record carries no opening) is refused, lower address or not.
  int lower_refused = 0;
  for (int i = 16; i < 32; ++i) {
    Encap local = sent(i);
    IpAddr elsewhere = other(i);
    if (elsewhere.v4HostOrder() < local.appliance.v4HostOrder()) ++lower_refused;
    sync::Record r = peerRecord(i, elsewhere);
    r.age_ms = 300;
    EXPECT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kIgnored) << i;
    EXPECT_EQ(sent(i, kTcpAck).appliance, local.appliance) << i;
    EXPECT_EQ(entryOf(i).moves.load(), 0) << i;
  }
  EXPECT_GT(lower_refused, 0) << "the lower address would have decided otherwise";
}

TEST_F(FleetSyncInstall, APortReusedPastHalfTheIdleTimeoutIsANewConnectionEveryNodeAgreesOn) {
  // The TCP idle timeout is 350 s (half: 175 s). A client reuses a 5-tuple.
  constexpr uint64_t kS = 1'000'000'000ULL;
  // 1. This node still holds the old connection's entry and gets the new
  // SYN: the entry keeps its appliance (which sees this SYN) and becomes the
  // new connection's, created now and opened; a SYN retransmitted sooner
  // changes nothing.
  Encap first = sent(1, kTcpAck);  // the old connection, seen mid-stream
  const dp::FlowEntry& en = entryOf(1);
  uint64_t born = en.created.ns(h_->now);
  h_->now += 100 * kS;
  EXPECT_EQ(sent(1).appliance, first.appliance);
  EXPECT_EQ(en.created.ns(h_->now), born) << "idle for less than half its timeout: the same connection";
  EXPECT_FALSE(en.idle_timeout.opened());
  h_->now += 200 * kS;
  EXPECT_EQ(sent(1).appliance, first.appliance) << "the entry keeps its appliance";
  EXPECT_TRUE(en.idle_timeout.opened());
  EXPECT_EQ(en.idle_timeout.ns(), 350 * kS);
  sync::Record mine;
  sync::Record probe = peerRecord(1, first.appliance);
  ASSERT_TRUE(fs_->makeRecord(h_->flows().lookup(probe.key, probe.flow_hash), probe.key,
                              sync::RecordKind::kRefresh, h_->now, mine));
  EXPECT_TRUE(mine.opened);
  EXPECT_LT(mine.age_ms, 5u) << "sent as a connection created now";
  // A peer that expired the old entry made its own copy from the SYN-ACK on
  // another appliance: its record does not move ours.
  sync::Record theirs = peerRecord(1, other(1));
  theirs.age_ms = 0;
  EXPECT_EQ(fs_->install(theirs, h_->now), ctl::InstallResult::kIgnored);
  // Nor does its refresh of the old connection's copy (opened long ago).
  sync::Record stale = peerRecord(1, other(1), sync::RecordKind::kRefresh);
  stale.opened = true;
  stale.age_ms = 400'000;
  EXPECT_EQ(fs_->install(stale, h_->now), ctl::InstallResult::kIgnored);
  EXPECT_EQ(sent(1, kTcpAck).appliance, first.appliance);

  // 2. That peer, seen from here: our copy came from the SYN-ACK just now;
  // the record of the re-opened copy (moved twice in its old life) wins.
  sent(2, kTcpSyn | kTcpAck);
  sync::Record reopened = peerRecord(2, other(2));
  reopened.opened = true;
  reopened.age_ms = 0;
  reopened.moves = 2;
  reopened.prev_appliance = net().appliances[0].v4HostOrder() == reopened.appliance
                                ? net().appliances[1].v4HostOrder() : net().appliances[0].v4HostOrder();
  reopened.prev_cookie = 7;
  EXPECT_EQ(fs_->install(reopened, h_->now), ctl::InstallResult::kConflict);
  EXPECT_EQ(sent(2, kTcpAck).appliance, other(2));

  // 3. The reverse: this node holds the old connection's copy (opened by its
  // SYN long ago, moved since); a peer that expired it got the new SYN and
  // made a copy on another appliance: the new connection's copy wins.
  Encap old3 = sent(3);
  const dp::FlowEntry& e3 = entryOf(3);
  const_cast<dp::FlowEntry&>(e3).moves.store(1);
  h_->now += 200 * kS;
  sent(3, kTcpSyn | kTcpAck);  // the new SYN-ACK reached us: no SYN, so no re-opening
  sync::Record fresh = peerRecord(3, other(3));
  ASSERT_FALSE(other(3) == old3.appliance);
  fresh.opened = true;
  fresh.age_ms = 0;
  EXPECT_EQ(fs_->install(fresh, h_->now), ctl::InstallResult::kConflict);
  EXPECT_EQ(sent(3, kTcpAck).appliance, other(3));
  EXPECT_NEAR(double(e3.created.ns(h_->now)), double(h_->now), double(2 * dp::kTickNs))
      << "our copy is the new connection's now";
}

TEST_F(FleetSyncInstall, AFlowThatMovedHereIsNeverOverriddenByNewOrRefresh) {
  // A local flow with a move history is not a fresh creation: only a peer's
  // move from exactly its route changes it.
  Encap local = sent(1);
  sync::Record mine = peerRecord(1, local.appliance);
  int32_t pos = h_->flows().lookup(mine.key, mine.flow_hash);
  h_->flows().entry(pos).moves.store(1);
  for (const IpAddr& elsewhere : net().appliances) {
    if (elsewhere == local.appliance) continue;
    for (auto kind : {sync::RecordKind::kNew, sync::RecordKind::kRefresh, sync::RecordKind::kTransfer})
      EXPECT_EQ(fs_->install(peerRecord(1, elsewhere, kind), h_->now), ctl::InstallResult::kIgnored);
  }
  EXPECT_EQ(sent(1).appliance, local.appliance);
  // The same route: the peer's later packet keeps it alive here.
  sync::Record same = peerRecord(1, local.appliance, sync::RecordKind::kRefresh);
  same.idle_for_ms = 0;
  h_->flows().entry(pos).last_seen.store(h_->now - 30'000'000'000ULL);
  EXPECT_EQ(fs_->install(same, h_->now), ctl::InstallResult::kRefreshed);
  EXPECT_EQ(h_->flows().entry(pos).last_seen.tick(), dp::toTick(h_->now));
  // An older peer packet does not move it back.
  same.idle_for_ms = 60'000;
  EXPECT_EQ(fs_->install(same, h_->now), ctl::InstallResult::kRefreshed);
  EXPECT_EQ(h_->flows().entry(pos).last_seen.tick(), dp::toTick(h_->now));
}

TEST_F(FleetSyncInstall, AMoveAppliesOnlyFromTheRouteItLeft) {
  Encap local = sent(2);
  IpAddr to = other(2);
  sync::Record mv = peerRecord(2, to, sync::RecordKind::kChanged);
  mv.prev_appliance = local.appliance.v4HostOrder();
  mv.prev_cookie = local.cookie;
  mv.moves = 1;
  mv.move_reason = uint8_t(dp::MoveReason::kUnhealthy);
  // From another cookie (another route): ignored.
  sync::Record wrong = mv;
  wrong.prev_cookie ^= 1;
  EXPECT_EQ(fs_->install(wrong, h_->now), ctl::InstallResult::kIgnored);
  EXPECT_EQ(sent(2).appliance, local.appliance);
  EXPECT_EQ(fs_->install(mv, h_->now), ctl::InstallResult::kMoved);
  Encap after = sent(2);
  EXPECT_EQ(after.appliance, to);
  EXPECT_EQ(after.cookie, mv.cookie);
  int32_t pos = h_->flows().lookup(mv.key, mv.flow_hash);
  const dp::FlowEntry& e = h_->flows().entry(pos);
  EXPECT_EQ(e.moves.load(), 1);
  EXPECT_EQ(dp::moveCookie(e.moved.load()), local.cookie);
  // The same move again: the route is already the record's.
  EXPECT_EQ(fs_->install(mv, h_->now), ctl::InstallResult::kRefreshed);
  EXPECT_EQ(e.moves.load(), 1);
}

// Found by the soak (issue 26): a node that missed a peer's "changed" record
// (the sync link down while the flow moved) kept the flow on the appliance it
// had left, because refreshes of a moved flow were ignored; a warm start from
// that node or ECMP sending the flow there then moved it back to its old
// appliance with both in service. A refresh or transfer of a flow moved more
// often than the local copy, whose last move left exactly the local route, is
// that missed move: applied as one.
TEST_F(FleetSyncInstall, AMissedMoveIsHealedByTheNextRefreshOrTransfer) {
  for (auto kind : {sync::RecordKind::kRefresh, sync::RecordKind::kTransfer}) {
    int i = kind == sync::RecordKind::kRefresh ? 3 : 4;
    Encap local = sent(i);
    IpAddr to = other(i);
    sync::Record r = peerRecord(i, to, kind);
    r.prev_appliance = local.appliance.v4HostOrder();
    r.prev_cookie = local.cookie;
    r.moves = 1;
    r.move_reason = uint8_t(dp::MoveReason::kUnhealthy);
    // Its last move left another route: not ours to follow.
    sync::Record wrong = r;
    wrong.prev_cookie ^= 1;
    EXPECT_EQ(fs_->install(wrong, h_->now), ctl::InstallResult::kIgnored);
    EXPECT_EQ(sent(i).appliance, local.appliance);
    EXPECT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kMoved);
    Encap after = sent(i);
    EXPECT_EQ(after.appliance, to);
    EXPECT_EQ(after.cookie, r.cookie);
    int32_t pos = h_->flows().lookup(r.key, r.flow_hash);
    const dp::FlowEntry& e = h_->flows().entry(pos);
    EXPECT_EQ(e.moves.load(), 1);
    EXPECT_EQ(dp::moveCookie(e.moved.load()), local.cookie);
    EXPECT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kRefreshed);
  }
  // A copy that has moved as often (or more) is no missed move: a late
  // record of an older move never takes a flow back.
  Encap local = sent(5);
  IpAddr to = other(5);
  int32_t pos = h_->flows().lookup(peerRecord(5, to).key, peerRecord(5, to).flow_hash);
  h_->flows().entry(pos).moves.store(1);
  sync::Record late = peerRecord(5, to, sync::RecordKind::kRefresh);
  late.prev_appliance = local.appliance.v4HostOrder();
  late.prev_cookie = local.cookie;
  late.moves = 1;
  EXPECT_EQ(fs_->install(late, h_->now), ctl::InstallResult::kIgnored);
  EXPECT_EQ(sent(5).appliance, local.appliance);
}

// Issue 27 item 6: flow sync and warm start carry the listener in the record's
// key. A peer's flow of listener 1 is installed here under listener 1 (not
// re-keyed by this node's classes, which here send everything to listener 0:
// a node whose classes differ), forwarded to the record's appliance with its
// cookie, and sent on (makeRecord: refresh, warm start) still as listener 1's.
TEST_F(FleetSyncInstall, AListenerOneRecordIsInstalledAndKeptUnderListenerOne) {
  ctl::Config& c = h_->config();
  ctl::ApplianceGroupConfig g = c.server_groups[0];
  g.name = "g1";
  g.appliances.clear();
  ctl::ApplianceConfig sc;
  sc.address = ip("10.0.2.21");
  g.appliances.push_back(sc);
  c.server_groups.push_back(g);
  c.listeners.clear();
  for (int i = 0; i < 2; ++i) {
    ctl::ListenerConfig l;
    l.name = "l" + std::to_string(i);
    l.server_groups = {c.server_groups[size_t(i)].name};
    c.listeners.push_back(l);
  }
  ctl::TrafficClassConfig all;
  all.name = "all";
  all.listener = "l0";  // this node: everything to listener 0
  c.traffic_classes = {all};
  ctl::RegionTracker regions;
  regions.update(c, {}, nullptr, h_->now, nullptr);
  h_->republish({}, nullptr, &regions);
  ASSERT_EQ(h_->snapshot().listeners.size(), 2u);

  for (int i = 0; i < 8; ++i) {
    sync::Record r = peerRecord(i, ip("10.0.2.21"));
    L4Tuple t;
    t.src = net().client4;
    t.dst = net().server4;
    t.proto = 6;
    t.sport = uint16_t(40000 + i);
    t.dport = 443;
    r.key = makeFlowKey(t, StickinessMode::kFiveTuple, 1).key;  // the peer classified it to listener 1
    r.flow_hash = flowHash(r.key);
    r.cookie = flowCookie(r.flow_hash, r.appliance);
    ASSERT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kInstalled) << i;
    const FlowKey k0 = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
    EXPECT_LT(h_->flows().lookup(k0, flowHash(k0)), 0) << "nothing under listener 0";
    int32_t pos = h_->flows().lookup(r.key, r.flow_hash);
    ASSERT_GE(pos, 0) << "installed under listener 1";
    Result out = h_->send(flow(i));
    h_->quiescent();
    ASSERT_EQ(out.verdict, Verdict::kAppliance) << describe(out);
    ASSERT_GE(out.bytes.size(), 42u + 8 + 24 + 8);
    EXPECT_EQ(IpAddr::v4(&out.bytes[30]), ip("10.0.2.21"))
        << "listener 1's appliance, though this node classifies to 0";
    const size_t opt = 42 + 8 + 24;  // the aws format's cookie option (docs/wire-format.md)
    ASSERT_EQ(get16(out.bytes, opt), 0x0108);
    EXPECT_EQ(get32(out.bytes, opt + 4), r.cookie);
    sync::Record back;
    ASSERT_TRUE(fs_->makeRecord(pos, r.key, sync::RecordKind::kRefresh, h_->now, back));
    EXPECT_EQ(back.key.listener, 1u);
    EXPECT_EQ(back.appliance, r.appliance);
    EXPECT_EQ(back.cookie, r.cookie);
  }
  EXPECT_EQ(h_->get(Counter::flows_created), 0u) << "no packet made a listener-0 entry of its own";
  EXPECT_EQ(h_->flows().count(), 8u);
}

TEST_F(FleetSyncInstall, ForeignRecordsAreRefused) {
  sync::Record r = peerRecord(3, ip("10.9.9.9"));
  EXPECT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kUnknownAppliance);
  r = peerRecord(3, net().appliances[0]);
  r.flow_hash ^= 1;  // another secret or config
  EXPECT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kBadRecord);
  r = peerRecord(3, net().appliances[0]);
  r.key.listener = 5;
  r.flow_hash = flowHash(r.key);
  EXPECT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kBadRecord);
  r = peerRecord(3, net().appliances[0]);
  r.idle_for_ms = 400'000;  // idle longer than the TCP timeout: would expire at once
  EXPECT_EQ(fs_->install(r, h_->now), ctl::InstallResult::kIgnored);
  EXPECT_EQ(h_->flows().count(), 0u) << "nothing of that was inserted";
}

// The sending side: a peer (a UDP socket here) gets a "new" record for every
// flow the workers create, whether the ring took its event or not (the scan
// catches what a full ring dropped), "changed" for a move, a refresh only for
// flows that had packets here and were last sent a third of their idle
// timeout ago, and an empty keepalive after a second without anything.
class FleetSyncSend : public ::testing::Test {
 protected:
  void make(unsigned ring_size, ctl::FailoverMode mode = ctl::FailoverMode::kNoRebalance,
            uint32_t flow_table_size = 4096) {
    HarnessOptions ho;
    ho.failover_mode = mode;
    ho.sync_ring_size = ring_size;
    ho.flow_table_size = flow_table_size;
    h_ = std::make_unique<Harness>(ho);
    ring_ = h_->dataplane().sync;
    peer_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(peer_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    ::getsockname(peer_, reinterpret_cast<sockaddr*>(&a), &len);
    ctl::FleetSync::Options o;
    o.node_name = "gw-send";
    o.peers = {"127.0.0.1:" + std::to_string(ntohs(a.sin_port))};
    o.secret = flowHashKey();
    o.health = health_;
    key_ = sync::SyncKey::fromHashKey(o.secret.k0, o.secret.k1);
    bindRetrying(listen_, [&] {
      o.listen = listen_;
      fs_ = std::make_unique<ctl::FleetSync>(io_, o, h_->flows(), ring_,
                                             [this] { return &h_->snapshot(); });
    });
  }
  void TearDown() override {
    fs_.reset();
    h_.reset();
    if (peer_ >= 0) ::close(peer_);
  }
  // A segment of flow i: its opening SYN by default, kTcpAck a mid-stream one.
  Frame flow(int i, uint8_t flags = kTcpSyn) const {
    const Net& n = net();
    return Frame{n.fromA(), kEthIpv4,
                 ipv4(n.client4, n.server4, 6, tcp(n.client4, n.server4, uint16_t(41000 + i), 443, {}, flags)),
                 kPortA};
  }
  // The datagrams the peer got since the last call, decoded: waits (up to
  // 10 s) until `want` records came, or 100 ms when none are expected, so a
  // late delivery never lands in the next call. `empties` counts datagrams
  // without records.
  // 30 flows synced, then appliance 1 fails and those of its flows seen again
  // rebalance; returns that appliance and how many moved (its tick not yet run).
  std::pair<IpAddr, uint64_t> failOneApplianceUnderThirtyFlows() {
    for (int i = 0; i < 30; ++i) h_->send(flow(i));
    fs_->tick(h_->now);
    EXPECT_EQ(received(30).size(), 30u);
    IpAddr down = net().appliances[1];
    ctl::HealthMap health;
    for (const IpAddr& a : net().appliances)
      health[a.v4HostOrder()] = a == down ? HealthState::kUnhealthy : HealthState::kHealthy;
    h_->republish(health);
    for (int i = 0; i < 30; ++i) h_->send(flow(i));
    return {down, h_->get(Counter::flows_rebalanced)};
  }
  std::vector<sync::Record> received(size_t want = 0, int* empties = nullptr) {
    std::vector<sync::Record> out;
    uint8_t buf[2048];
    auto end = std::chrono::steady_clock::now() +
               (want ? std::chrono::milliseconds(10000) : std::chrono::milliseconds(100));
    while (want == 0 || out.size() < want) {
      size_t n = nextDatagram(buf, end);
      if (n == 0) break;
      sync::Header hd;
      sync::Record recs[sync::kMaxRecords];
      EXPECT_EQ(sync::decode(key_, buf, n, hd, recs), sync::Status::kOk);
      EXPECT_EQ(hd.node, sync::nodeId("gw-send"));
      if (hd.count == 0 && empties) ++*empties;
      out.insert(out.end(), recs, recs + hd.count);
    }
    return out;
  }
  // The next datagram the peer got before `end`: its size, 0 when none came.
  size_t nextDatagram(uint8_t (&buf)[2048], std::chrono::steady_clock::time_point end) {
    while (std::chrono::steady_clock::now() < end) {
      ssize_t n = ::recv(peer_, buf, sizeof buf, 0);
      if (n > 0) return size_t(n);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
  }
  std::map<RecordKey, sync::RecordKind> kinds(const std::vector<sync::Record>& v) {
    std::map<RecordKey, sync::RecordKind> m;
    for (auto& r : v) m[RecordKey{r.key}] = r.kind;
    return m;
  }
  boost::asio::io_context io_;
  std::unique_ptr<Harness> h_;
  std::unique_ptr<ctl::FleetSync> fs_;
  // This node's health view, when a test sets one before make().
  std::function<std::map<uint32_t, std::pair<uint8_t, bool>>()> health_;
  std::string listen_;  // "127.0.0.1:port"
  uint16_t listenPort() const { return uint16_t(std::stoi(listen_.substr(listen_.find(':') + 1))); }
  // A header from the fake peer "gw-peer", stamped now.
  static sync::Header peerHeader(uint64_t epoch, uint64_t seq) {
    sync::Header hd;
    hd.node = sync::nodeId("gw-peer");
    hd.epoch = epoch;
    hd.seq = seq;
    hd.time_ms = uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count());
    return hd;
  }
  // The fake peer's socket sends one datagram to the node's sync port.
  void sendToNode(const uint8_t* out, size_t len) {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    to.sin_port = htons(listenPort());
    ASSERT_EQ(::sendto(peer_, out, len, 0, reinterpret_cast<sockaddr*>(&to), sizeof to), ssize_t(len));
  }
  rte_ring* ring_ = nullptr;
  int peer_ = -1;
  sync::SyncKey key_;
};

TEST_F(FleetSyncSend, NewFlowsOnceRefreshOnlyWhatHadPacketsKeepaliveWhenIdle) {
  make(1024);
  std::map<int, Encap> at;
  for (int i = 0; i < 20; ++i) {
    Result r = h_->send(flow(i));
    ASSERT_EQ(r.verdict, Verdict::kAppliance);
    at[i] = checkEncap(*h_, r.bytes, expectedInner(*h_, flow(i)), expectedProtocol(*h_, flow(i)));
  }
  uint64_t t0 = h_->now;
  fs_->tick(t0);
  auto got = received(20);
  ASSERT_EQ(got.size(), 20u) << "one record per new flow";
  for (auto& r : got) {
    EXPECT_EQ(r.kind, sync::RecordKind::kNew);
    bool found = false;
    for (auto& [i, e] : at)
      if (e.cookie == r.cookie) found = e.appliance.v4HostOrder() == r.appliance;
    EXPECT_TRUE(found) << "each record carries its flow's appliance and cookie";
  }
  // Nothing new: nothing but a keepalive once a second has passed.
  fs_->tick(t0 + 500'000'000ULL);
  EXPECT_TRUE(received().empty());
  int empties = 0;
  fs_->tick(t0 + 1'100'000'000ULL);
  EXPECT_TRUE(received(0, &empties).empty());
  EXPECT_EQ(empties, 1);
  // Flows 0..4 have packets 200 s later (TCP idle timeout 350 s: a third is
  // 117 s): only they are refreshed, once. (Mid-stream segments: a SYN this
  // late would be a new connection on the 5-tuple, sent as new.)
  h_->now = t0 + 200'000'000'000ULL;
  for (int i = 0; i < 5; ++i) h_->send(flow(i, kTcpAck));
  fs_->tick(h_->now);
  got = received(5);
  ASSERT_EQ(got.size(), 5u);
  for (auto& r : got) {
    EXPECT_EQ(r.kind, sync::RecordKind::kRefresh);
    EXPECT_EQ(r.idle_for_ms, 0u);
    EXPECT_EQ(r.age_ms, 200'000u);
  }
  fs_->tick(h_->now + 10'000'000);
  EXPECT_TRUE(received().empty()) << "refreshed once, not every tick";
}

// A gwlbd before record flags refuses a record with one set (its whole
// datagram, as malformed): flags go only to a peer whose health view said it
// takes them; until then (or from an older peer) its records come without.
TEST_F(FleetSyncSend, RecordFlagsGoOnlyToAPeerThatSaidItTakesThem) {
  make(1024);
  h_->send(flow(0));  // a SYN: the entry is opened
  fs_->tick(h_->now);
  auto got = received(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(got[0].opened) << "a peer not heard from may be a gwlbd before flags";
  fs_->start();
  sync::Header hd = peerHeader(81, 1);
  hd.nonce = sync::kFeatureConfigDigest | sync::kFeatureRecordFlags;
  sync::HealthEntry v{net().appliances[0].v4HostOrder(), uint8_t(HealthState::kHealthy), true};
  uint8_t out[sync::kMaxMessage];
  size_t len = sync::encodeHealth(key_, hd, &v, 1, out, sizeof out);
  ASSERT_GT(len, 0u);
  sendToNode(out, len);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fs_->status()["peers"][0]["datagrams_received"] == 0 && std::chrono::steady_clock::now() < until) {
    io_.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(fs_->status()["peers"][0]["datagrams_received"], 1);
  h_->send(flow(1));
  fs_->tick(h_->now + 1'000'000);
  got = received(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].opened) << "the peer said it takes flags";
}

TEST_F(FleetSyncSend, WhatAFullRingDroppedTheScanSends) {
  make(8);  // holds 7
  std::vector<std::pair<Bytes, uint16_t>> burst;
  for (int i = 0; i < 20; ++i) burst.push_back({flow(i).bytes(), kPortA});
  h_->sendBurst(burst);
  ASSERT_EQ(h_->get(Counter::sync_queue_full), 13u);
  fs_->tick(h_->now);
  auto got = received(20);
  EXPECT_EQ(got.size(), 20u) << "7 from the ring, 13 found by the scan";
  auto k = kinds(got);
  EXPECT_EQ(k.size(), 20u) << "each flow once";
  for (auto& [key, kind] : k) EXPECT_EQ(kind, sync::RecordKind::kNew);
}

TEST_F(FleetSyncSend, AMoveIsSentAsChanged) {
  make(1024, ctl::FailoverMode::kRebalance);
  const auto [down, moved] = failOneApplianceUnderThirtyFlows();
  ASSERT_GT(moved, 0u);
  fs_->tick(h_->now + 1'000'000);
  auto got = received(moved);
  ASSERT_EQ(got.size(), moved);
  for (auto& r : got) {
    EXPECT_EQ(r.kind, sync::RecordKind::kChanged);
    EXPECT_EQ(r.prev_appliance, down.v4HostOrder());
    EXPECT_NE(r.appliance, down.v4HostOrder());
    EXPECT_EQ(r.moves, 1);
    EXPECT_EQ(r.move_reason, uint8_t(dp::MoveReason::kUnhealthy));
  }
}

// Found by the 25-minute soak (seed 4242): a gateway moved a flow off a failed
// appliance while its sync link was congested; the "changed" record was lost,
// its peers kept the old appliance, and when the gateway stopped gracefully 7 s
// later (before its refresh could heal them) the router moved the flow to a
// peer, which sent it back to the appliance it had left, in service again. A
// graceful stop now hands its recent moves off once more before the routes go.
TEST_F(FleetSyncSend, AGracefulStopHandsOffTheRecentMovesOnce) {
  make(1024, ctl::FailoverMode::kRebalance);
  const auto [down, moved] = failOneApplianceUnderThirtyFlows();
  ASSERT_GT(moved, 0u);
  fs_->tick(h_->now + 1'000'000);
  ASSERT_EQ(received(moved).size(), moved) << "the moves' own records (lost on the way, say)";
  // 7 s later, no packet since (nothing to refresh): the stop hands the moves off.
  uint64_t stop = h_->now + 7'000'000'000ULL;
  fs_->tick(stop - 10'000'000);
  EXPECT_TRUE(received().empty()) << "nothing to send before the stop";
  fs_->handOff(stop);
  auto got = received(moved);
  ASSERT_EQ(got.size(), moved) << "every moved flow once more, at the hand-off itself";
  for (auto& r : got) {
    EXPECT_EQ(r.kind, sync::RecordKind::kChanged);
    EXPECT_EQ(r.prev_appliance, down.v4HostOrder());
    EXPECT_NE(r.appliance, down.v4HostOrder());
  }
  fs_->tick(stop + 10'000'000);
  fs_->tick(stop + 20'000'000);
  EXPECT_TRUE(received().empty()) << "once, not every tick of the grace period";
  fs_->handOff(stop + 30'000'000);
  EXPECT_TRUE(received().empty()) << "a second signal hands nothing off again";
}

// Issue 24 item 4: the refresh scan runs every 10 ms on the control thread.
// It used to stop only after kScanPerTick live keys, so with few flows every
// tick walked the whole tag array (4.6 MB at 1 M slots, ~590 MB at 2^27),
// delaying everything else the control thread does. Now a tick walks at most
// kScanSlotsPerTick slots; a pass over a sparse table takes several ticks and
// still sends what the ring missed. API fleet_sync shows the scan's progress.
TEST_F(FleetSyncSend, ARefreshTickWalksABoundedNumberOfSlots) {
  make(8, ctl::FailoverMode::kNoRebalance, 1u << 20);  // a ring of 7: the scan sends the rest
  std::vector<std::pair<Bytes, uint16_t>> burst;
  for (int i = 0; i < 10; ++i) burst.push_back({flow(i).bytes(), kPortA});
  h_->sendBurst(burst);
  ASSERT_EQ(h_->get(Counter::sync_queue_full), 3u);
  const size_t slots = h_->flows().slots() / 2;
  const size_t per_tick = ctl::FleetSync::kScanSlotsPerTick;
  ASSERT_GT(slots, 4 * per_tick) << "a table several ticks long";
  uint64_t now = h_->now;
  fs_->tick(now);
  nlohmann::json scan = fs_->status()["refresh_scan"];
  ASSERT_TRUE(scan.is_object()) << "API fleet_sync shows the refresh scan";
  EXPECT_EQ(scan["slots"].get<size_t>(), slots);
  EXPECT_LE(scan["last_tick_slots"].get<size_t>(), per_tick)
      << "one tick walked more than kScanSlotsPerTick slots";
  EXPECT_GT(scan["last_tick_slots"].get<size_t>(), 0u);
  EXPECT_EQ(scan["passes"].get<uint64_t>(), 0u);
  size_t ticks = 1;
  while (fs_->status()["refresh_scan"]["passes"].get<uint64_t>() == 0 && ticks < 1000) {
    now += 10'000'000;
    fs_->tick(now);
    EXPECT_LE(fs_->status()["refresh_scan"]["last_tick_slots"].get<size_t>(), per_tick);
    ++ticks;
  }
  EXPECT_EQ(ticks, (slots + per_tick - 1) / per_tick) << "a pass: slots / kScanSlotsPerTick ticks";
  auto got = received(10);
  EXPECT_EQ(kinds(got).size(), 10u) << "7 from the ring, 3 found by the scan, each once";
  for (auto& [key, kind] : kinds(got)) EXPECT_EQ(kind, sync::RecordKind::kNew);
}

// Issue 24 item 5: what the sync remembers per table position (when its flow
// was last sent) took 16 B for each of the table's positions, IPv4 and IPv6
// halves alike (~35 B per unit of flow_table_size, resident), and nothing
// counted it. Now 8 B, in memory that becomes resident only where written: a
// node with IPv4 flows only never touches the IPv6 half. --check-config
// counts it (test_memory_plan).
TEST_F(FleetSyncSend, TheSentLogTakesEightBytesAPositionAndIpv4FlowsLeaveTheIpv6HalfUntouched) {
  make(1024, ctl::FailoverMode::kNoRebalance, 1u << 20);
  for (int i = 0; i < 200; ++i) h_->send(flow(i));
  fs_->tick(h_->now);
  EXPECT_EQ(received(200).size(), 200u);
  nlohmann::json log = fs_->status()["sent_log"];
  ASSERT_TRUE(log.is_object()) << "API fleet_sync shows the sent log's memory";
  const size_t positions = h_->flows().slots();
  EXPECT_EQ(log["positions"].get<size_t>(), positions);
  EXPECT_LE(log["bytes_per_position"].get<size_t>(), 8u);
  EXPECT_LE(log["reserved_bytes"].get<uint64_t>(), positions * 8 + 4095);
  uint64_t resident = log["resident_bytes"].get<uint64_t>();
  EXPECT_GT(resident, 0u);
  EXPECT_LE(resident, 200u * 4096) << "a page at most per flow sent";
  EXPECT_EQ(log["ipv6_resident_bytes"].get<uint64_t>(), 0u) << "the IPv6 half is not touched";
}

// Issue 27 item 6: a peer whose traffic classes differ from this node's is
// reported (docs/fleet.md "Config drift": reported, not refused): the real
// digests of two configs that differ only in their classes name the section
// "classes" in the status (gwlbctl fleet), in gwlb_fleet_config_differs and
// once in the log, with what it means; the log says so again when they agree.
TEST_F(FleetSyncSend, APeerWhoseClassesDifferIsReportedInStatusMetricsAndLog) {
  const uint32_t a = net().appliances[0].v4HostOrder();
  health_ = [&] {
    std::map<uint32_t, std::pair<uint8_t, bool>> v;
    v[a] = {uint8_t(HealthState::kHealthy), true};
    return v;
  };
  make(1024);
  std::ostringstream log;
  auto saved = spdlog::default_logger();
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  ctl::Config here = h_->config();
  ctl::TrafficClassConfig tenant;
  tenant.name = "tenant-a";
  tenant.match.vlans = {100, 101};
  ctl::TrafficClassConfig rest;
  rest.name = "rest";
  here.traffic_classes = {tenant, rest};
  ctl::Config there = here;
  there.traffic_classes[0].match.vlans = {100};  // the peer classifies VLAN 101 as "rest"
  fs_->setConfigDigest(ctl::configDigest(here, flowHashKey()));
  fs_->start();
  uint64_t seq = 0;
  auto send = [&](auto encode) {
    sync::Header hd = peerHeader(80, ++seq);
    uint8_t out[sync::kMaxMessage];
    size_t len = encode(hd, out);
    ASSERT_GT(len, 0u);
    sendToNode(out, len);
  };
  auto sendDigests = [&](const ctl::Config& cfg) {
    std::vector<sync::DigestEntry> d = ctl::configDigest(cfg, flowHashKey());
    send([&](sync::Header hd, uint8_t* out) {
      return sync::encodeConfigDigest(key_, hd, d.data(), d.size(), out, sync::kMaxMessage);
    });
  };
  auto waitState = [&](const char* want) {
    nlohmann::json c;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
      io_.poll();
      c = fs_->status()["peers"][0]["config"];
      if (c["state"] == want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    } while (std::chrono::steady_clock::now() < until);
    return c;
  };
  send([&](sync::Header hd, uint8_t* out) {
    hd.nonce = sync::kFeatureConfigDigest;
    sync::HealthEntry v{a, uint8_t(HealthState::kHealthy), true};
    return sync::encodeHealth(key_, hd, &v, 1, out, sync::kMaxMessage);
  });
  sendDigests(there);
  sendDigests(there);  // the next second's: logged once
  nlohmann::json c = waitState("differs");
  for (int i = 0; i < 50 && fs_->status()["peers"][0]["datagrams_received"] < 3u; ++i) {
    io_.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(c["differing_sections"], nlohmann::json::array({"classes"})) << c.dump();
  std::string m;
  fs_->metrics(m);
  EXPECT_NE(m.find(",section=\"classes\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find(",section=\"listeners\"} 0\n"), std::string::npos) << m;
  std::string text = log.str();
  // Word for word as docs/fleet.md "Config drift" quotes it (there for peer 10.0.0.2:7946).
  sockaddr_in pa{};
  socklen_t pl = sizeof pa;
  ::getsockname(peer_, reinterpret_cast<sockaddr*>(&pa), &pl);
  const std::string warned =
      "fleet sync: peer 127.0.0.1:" + std::to_string(ntohs(pa.sin_port)) +
      "'s config differs from this node's in: classes; its traffic classes differ, so a new flow may "
      "go to another listener, or be bypassed or dropped, on one node than on the other (established "
      "flows keep their listener on every node) (gwlbctl fleet; gwlb_fleet_config_differs)\n";
  EXPECT_NE(text.find(warned), std::string::npos) << text;
  EXPECT_EQ(text.find(warned), text.rfind(warned)) << "logged once, not every second: " << text;
  // The peer reloads ours: it agrees again, and the log says so.
  sendDigests(here);
  EXPECT_EQ(waitState("same")["state"], "same");
  EXPECT_NE(log.str().find("fleet sync: peer 127.0.0.1:" + std::to_string(ntohs(pa.sin_port)) +
                           "'s config agrees with this node's again\n"),
            std::string::npos)
      << log.str();
  spdlog::set_default_logger(saved);
  fs_->stop();
}

}  // namespace
}  // namespace gwlb::dptest

namespace gwlb::dptest {
namespace {

// The health views: each node sends its own every second; a peer's view is
// compared with ours and every appliance that takes new flows on one node but
// not on the other is listed (API fleet_sync / gwlbctl fleet), so a lasting
// disagreement (a broken path from one node) is visible.
TEST_F(FleetSyncSend, HealthViewsAreExchangedAndDisagreementsListed) {
  const uint32_t a = net().appliances[0].v4HostOrder(), b = net().appliances[1].v4HostOrder();
  health_ = [&] {
    std::map<uint32_t, std::pair<uint8_t, bool>> v;
    v[a] = {uint8_t(HealthState::kHealthy), true};
    v[b] = {uint8_t(HealthState::kHealthy), true};
    return v;
  };
  make(1024);
  fs_->tick(h_->now);
  // Our view reaches the peer.
  uint8_t buf[2048];
  bool got_view = false;
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!got_view) {
    size_t n = nextDatagram(buf, end);
    if (n == 0) break;
    sync::Header hd;
    sync::Record recs[sync::kMaxRecords];
    sync::HealthEntry view[sync::kMaxHealthEntries];
    ASSERT_EQ(sync::decode(key_, buf, n, hd, recs, nullptr, view), sync::Status::kOk);
    if (hd.type != sync::MsgType::kHealth) continue;
    ASSERT_EQ(hd.count, 2);
    EXPECT_EQ(view[0].appliance, a);
    EXPECT_TRUE(view[0].in_service && view[1].in_service);
    got_view = true;
  }
  ASSERT_TRUE(got_view) << "no health view sent";
  EXPECT_TRUE(fs_->status()["peers"][0]["health_disagreements"].empty());

  // The peer says b is unhealthy there.
  auto sendView = [&](uint64_t seq, uint8_t state_b, bool in_service_b) {
    sync::HealthEntry v[2] = {{a, uint8_t(HealthState::kHealthy), true}, {b, state_b, in_service_b}};
    sync::Header hd = peerHeader(77, seq);
    uint8_t out[sync::kMaxMessage];
    size_t len = sync::encodeHealth(key_, hd, v, 2, out, sizeof out);
    sendToNode(out, len);
  };
  auto disagreements = [&](size_t want) {
    nlohmann::json d;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
      io_.poll();
      d = fs_->status()["peers"][0]["health_disagreements"];
      if (d.size() == want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    } while (std::chrono::steady_clock::now() < until);
    return d;
  };
  fs_->start();
  sendView(1, uint8_t(HealthState::kUnhealthy), false);
  nlohmann::json d = disagreements(1);
  ASSERT_EQ(d.size(), 1u) << fs_->status().dump();
  EXPECT_EQ(d[0]["appliance"], net().appliances[1].str());
  EXPECT_EQ(d[0]["here"], "healthy");
  EXPECT_EQ(d[0]["there"], "unhealthy");
  EXPECT_EQ(d[0]["new_flows_there"], false);
  // It recovers there: no disagreement left.
  sendView(2, uint8_t(HealthState::kHealthy), true);
  EXPECT_TRUE(disagreements(0).empty());
  fs_->stop();
}

// Issue 24 item 3: while the MAC cannot be computed, a datagram with an
// all-zero tag is refused and counted as an authentication failure (it was
// accepted: the failed MAC came out as zeros and matched the forged tag).
TEST_F(FleetSyncSend, AnAllZeroTagIsRefusedAndCountedWhileTheMacFails) {
  make(1024);
  fs_->start();
  const uint32_t b = net().appliances[1].v4HostOrder();
  sync::HealthEntry v[1] = {{b, uint8_t(HealthState::kUnhealthy), false}};
  sync::Header hd = peerHeader(78, 1);
  uint8_t out[sync::kMaxMessage];
  size_t len = sync::encodeHealth(key_, hd, v, 1, out, sizeof out);
  ASSERT_GT(len, 0u);
  std::memset(out + len - sync::kMacSize, 0, sync::kMacSize);  // the forger's tag
  // This thread runs the io_context: FleetSync's MACs fail from here on.
  sync::test_hooks::failMacs(true);
  sendToNode(out, len);
  nlohmann::json p;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    io_.poll();
    p = fs_->status()["peers"][0];
    if (p["auth_failures"].get<uint64_t>() + p["datagrams_received"].get<uint64_t>() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  } while (std::chrono::steady_clock::now() < until);
  sync::test_hooks::failMacs(false);
  EXPECT_EQ(p["datagrams_received"], 0u) << "the forged datagram was accepted: " << p.dump();
  EXPECT_EQ(p["auth_failures"], 1u) << p.dump();
  EXPECT_EQ(p["reachable"], false);
  fs_->stop();
}

// Issue 24 item 6: a peer's record whose insert was given up (another
// inserter of a key with the same tag stayed busy, FlowTable::kAbandoned) is
// counted as insert_abandoned, not table_full (which tells operators to raise
// flow_table_size when the table is not full).
TEST_F(FleetSyncSend, AnAbandonedInsertIsNotCountedAsATableFull) {
  make(1024);
  fs_->start();
  L4Tuple t;
  t.src = net().client4;
  t.dst = net().server4;
  t.proto = 6;
  t.sport = 42001;
  t.dport = 443;
  sync::Record r;
  r.key = makeFlowKey(t, StickinessMode::kFiveTuple, 0).key;
  r.flow_hash = flowHash(r.key);
  r.appliance = net().appliances[0].v4HostOrder();
  r.cookie = flowCookie(r.flow_hash, r.appliance);
  r.idle_for_ms = 1000;
  r.age_ms = 5000;
  // A worker preempted right after claiming a slot with this key's tag.
  dp::FlowTableTestAccess::holdSlotBusy(h_->flows(), r.key, r.flow_hash);
  sync::Header hd = peerHeader(79, 1);
  uint8_t out[sync::kMaxMessage];
  size_t len = sync::encode(key_, hd, &r, 1, out, sizeof out);
  sendToNode(out, len);
  nlohmann::json p;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    io_.poll();
    p = fs_->status()["peers"][0];
    if (p["flows_received"].get<uint64_t>() > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  } while (std::chrono::steady_clock::now() < until);
  EXPECT_EQ(p["flows_received"], 1u) << p.dump();
  EXPECT_EQ(p["table_full"], 0u) << p.dump();
  EXPECT_EQ(p["insert_abandoned"], 1u) << p.dump();
  fs_->stop();
}

// Issue 24 item 7: config drift. A node sends its config digests to a peer
// once the peer's health view says it takes them (an older gwlbd would count
// the new message type as malformed), compares the peer's digests per
// section (status, gwlbctl fleet, metric), and sends new digests after a
// config change.
TEST_F(FleetSyncSend, ConfigDigestsAreExchangedAndADifferingSectionIsNamed) {
  const uint32_t a = net().appliances[0].v4HostOrder();
  health_ = [&] {
    std::map<uint32_t, std::pair<uint8_t, bool>> v;
    v[a] = {uint8_t(HealthState::kHealthy), true};
    return v;
  };
  make(1024);
  const std::vector<sync::DigestEntry> mine = {{1, 0x11}, {7, 0x77}, {8, 0x88}};
  fs_->setConfigDigest(mine);
  EXPECT_EQ(fs_->status()["peers"][0]["config"]["state"], "unknown");
  EXPECT_EQ(fs_->status()["config_digest"]["timeouts"], "0000000000000077");
  // What the peer gets in one round: our health view's nonce, and our digests.
  auto round = [&](uint64_t now, std::vector<sync::DigestEntry>* got) {
    fs_->tick(now);
    uint64_t features = 0;
    uint8_t buf[2048];
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (size_t n = nextDatagram(buf, end)) {
      sync::Header hd;
      sync::Record recs[sync::kMaxRecords];
      sync::HealthEntry view[sync::kMaxHealthEntries];
      sync::DigestEntry dig[sync::kMaxDigestEntries];
      EXPECT_EQ(sync::decode(key_, buf, n, hd, recs, nullptr, view, dig), sync::Status::kOk);
      if (hd.type == sync::MsgType::kHealth) features = hd.nonce;
      if (hd.type == sync::MsgType::kConfigDigest && got) got->assign(dig, dig + hd.count);
    }
    return features;
  };
  std::vector<sync::DigestEntry> got;
  EXPECT_EQ(round(h_->now, &got), sync::kFeatureConfigDigest | sync::kFeatureRecordFlags)
      << "our view says we take digests and record flags";
  EXPECT_TRUE(got.empty()) << "nothing of the new type before the peer said it takes it";

  // The peer: a view saying it takes digests, then its digests (timeouts differ,
  // and a section this version does not know).
  uint64_t seq = 0;
  auto send = [&](auto encode) {
    sync::Header hd = peerHeader(80, ++seq);
    uint8_t out[sync::kMaxMessage];
    size_t len = encode(hd, out);
    ASSERT_GT(len, 0u);
    sendToNode(out, len);
  };
  fs_->start();
  send([&](sync::Header hd, uint8_t* out) {
    hd.nonce = sync::kFeatureConfigDigest;
    sync::HealthEntry v{a, uint8_t(HealthState::kHealthy), true};
    return sync::encodeHealth(key_, hd, &v, 1, out, sync::kMaxMessage);
  });
  const sync::DigestEntry theirs[] = {{1, 0x11}, {7, 0x99}, {8, 0x88}, {200, 5}};
  send([&](sync::Header hd, uint8_t* out) {
    return sync::encodeConfigDigest(key_, hd, theirs, 4, out, sync::kMaxMessage);
  });
  nlohmann::json c;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    io_.poll();
    c = fs_->status()["peers"][0]["config"];
    if (c["state"] != "unknown") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  } while (std::chrono::steady_clock::now() < until);
  EXPECT_EQ(c["state"], "differs") << c.dump();
  EXPECT_EQ(c["differing_sections"], nlohmann::json::array({"timeouts"})) << c.dump();
  EXPECT_EQ(c["digests"]["timeouts"], "0000000000000099");
  std::string m;
  fs_->metrics(m);
  std::string peer = "peer=\"127.0.0.1:" + std::to_string(ntohs([&] {
                       sockaddr_in x{};
                       socklen_t l = sizeof x;
                       ::getsockname(peer_, reinterpret_cast<sockaddr*>(&x), &l);
                       return x.sin_port;
                     }())) + "\"";
  EXPECT_NE(m.find("gwlb_fleet_config_differs{" + peer + ",section=\"timeouts\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("gwlb_fleet_config_differs{" + peer + ",section=\"groups\"} 0"), std::string::npos) << m;

  // Now it takes them: ours go out. A reload that changes our timeouts ends the drift.
  got.clear();
  round(h_->now + 2'000'000'000ULL, &got);
  EXPECT_EQ(got, mine);
  std::vector<sync::DigestEntry> reloaded = {{1, 0x11}, {7, 0x99}, {8, 0x88}};
  fs_->setConfigDigest(reloaded);
  got.clear();
  round(h_->now + 4'000'000'000ULL, &got);
  EXPECT_EQ(got, reloaded) << "the next round carries the new digests";
  EXPECT_EQ(fs_->status()["peers"][0]["config"]["state"], "same");
  fs_->stop();
}

// This node's own messages from a peer's address. Each is signed but not
// secret: anyone on the sync network can keep one and send it back under a
// peer's address. Such a message alone never marks the entry as this node
// (it did, for good: all sync to that peer stopped until a restart); only a
// challenge sent to the entry coming back does, and the peer's own message
// from its address undoes that.
class FleetSyncSelf : public FleetSyncSend {
 protected:
  // The log goes to log_ until the test ends, however it ends.
  void captureLog() {
    saved_ = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_)));
  }
  void TearDown() override {
    FleetSyncSend::TearDown();
    if (saved_) spdlog::set_default_logger(saved_);
  }
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> saved_;
  // Runs the node until the peer gets a datagram of it that `want` accepts:
  // its bytes (empty after 10 s).
  template <class Want>
  std::vector<uint8_t> awaitDatagram(Want want) {
    uint8_t buf[2048];
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < end) {
      io_.poll();
      ssize_t n = ::recv(peer_, buf, sizeof buf, 0);
      if (n <= 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      sync::Header hd;
      sync::Record recs[sync::kMaxRecords];
      if (sync::decode(key_, buf, size_t(n), hd, recs) == sync::Status::kOk && want(hd))
        return std::vector<uint8_t>(buf, buf + n);
    }
    return {};
  }
  // Runs the node for `d`: the datagrams the peer got meanwhile.
  int datagramsFor(std::chrono::milliseconds d) {
    uint8_t buf[2048];
    int n = 0;
    auto end = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < end) {
      io_.poll();
      if (::recv(peer_, buf, sizeof buf, 0) > 0) ++n;
      else std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return n;
  }
  static bool keepalive(const sync::Header& hd) {
    return hd.type == sync::MsgType::kRecords && hd.count == 0 && hd.nonce == 0;
  }
  static bool challenge(const sync::Header& hd) {
    return hd.type == sync::MsgType::kRecords && hd.count == 0 && hd.nonce != 0;
  }
  static sync::Header headerOf(const std::vector<uint8_t>& d) {
    sync::Header hd;
    sync::Record recs[sync::kMaxRecords];
    EXPECT_EQ(sync::decode(sync::SyncKey::fromHashKey(flowHashKey().k0, flowHashKey().k1), d.data(),
                           d.size(), hd, recs),
              sync::Status::kOk);
    return hd;
  }
  nlohmann::json peer() { return fs_->status()["peers"][0]; }
  // Runs the node until peers[0] satisfies `cond` (10 s at most): its status.
  template <class Cond>
  nlohmann::json pollUntil(Cond cond) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    nlohmann::json p;
    do {
      io_.poll();
      p = peer();
      if (cond(p)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    } while (std::chrono::steady_clock::now() < end);
    return p;
  }
};

TEST_F(FleetSyncSelf, AReplayedKeepaliveFromAPeersAddressDoesNotCutTheSyncToIt) {
  make(1024);
  captureLog();
  fs_->start();
  std::vector<uint8_t> captured = awaitDatagram(keepalive);
  ASSERT_FALSE(captured.empty()) << "no keepalive reached the peer";
  sendToNode(captured.data(), captured.size());  // under the peer's address
  nlohmann::json p = pollUntil([](const nlohmann::json& x) {
    return x.value("this_node", false) || x.value("self_challenges", uint64_t(0)) == 1u;
  });
  EXPECT_EQ(p["this_node"], false) << "a replayed keepalive marked the peer as this node: " << p.dump();
  EXPECT_EQ(fs_->status()["from_self"], 1u);
  // It is fresh: the node challenges the entry, and the peer (not this node)
  // sends nothing back.
  EXPECT_EQ(p["self_challenges"], 1u) << p.dump();
  EXPECT_FALSE(awaitDatagram(challenge).empty()) << "no challenge sent: " << peer().dump();

  // The sync to it goes on: a new flow's record, then keepalives.
  ASSERT_EQ(h_->send(flow(1)).verdict, Verdict::kAppliance);
  EXPECT_FALSE(awaitDatagram([](const sync::Header& hd) { return hd.count > 0; }).empty())
      << "no record sent to the peer after the replay: " << peer().dump();
  EXPECT_FALSE(awaitDatagram(keepalive).empty()) << "no keepalive after the replay";

  // The same datagram again, and one of this node's own older than the
  // replay window: counted replays, nothing more.
  sendToNode(captured.data(), captured.size());
  p = pollUntil([](const nlohmann::json& x) { return x.value("self_replayed", uint64_t(0)) == 1u; });
  EXPECT_EQ(p["self_replayed"], 1u) << p.dump();
  // As docs/fleet.md "Authentication and replay" quotes it.
  const std::string who = p["address"].get<std::string>();
  EXPECT_NE(log_.str().find("fleet sync: a replay of this node's own datagram (sequence " +
                           std::to_string(headerOf(captured).seq) + ", time "),
            std::string::npos)
      << log_.str();
  EXPECT_NE(log_.str().find(" from peer " + who + " dropped; the entry stays a peer\n"), std::string::npos)
      << log_.str();
  sync::Header old = headerOf(captured);
  old.seq += 1000;
  old.time_ms -= 60'000;
  uint8_t out[sync::kMaxMessage];
  size_t len = sync::encode(key_, old, nullptr, 0, out, sizeof out);
  sendToNode(out, len);
  p = pollUntil([](const nlohmann::json& x) { return x.value("self_replayed", uint64_t(0)) == 2u; });
  EXPECT_EQ(p["self_replayed"], 2u) << p.dump();
  EXPECT_EQ(p["self_challenges"], 1u) << "a replay sends no challenge: " << p.dump();
  EXPECT_EQ(p["this_node"], false) << p.dump();
  EXPECT_FALSE(awaitDatagram(keepalive).empty()) << "no keepalive after the replays";
  std::string m;
  fs_->metrics(m);
  EXPECT_NE(m.find("gwlb_fleet_sync_self_replayed_total{peer=\"" + p["address"].get<std::string>() +
                   "\"} 2"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("gwlb_fleet_sync_peer_is_this_node{peer=\"" + p["address"].get<std::string>() +
                   "\"} 0"),
            std::string::npos)
      << m;
  fs_->stop();
}

TEST_F(FleetSyncSelf, OnlyAChallengeComingBackMarksTheEntryAndAPeersOwnMessageUndoesIt) {
  make(1024);
  captureLog();
  fs_->start();
  std::vector<uint8_t> captured = awaitDatagram(keepalive);
  ASSERT_FALSE(captured.empty());
  sendToNode(captured.data(), captured.size());
  std::vector<uint8_t> ch = awaitDatagram(challenge);
  ASSERT_FALSE(ch.empty());
  // The entry sends the challenge back (as a port forward to this node would).
  sendToNode(ch.data(), ch.size());
  nlohmann::json p = pollUntil([](const nlohmann::json& x) { return x.value("this_node", false); });
  ASSERT_EQ(p["this_node"], true) << p.dump();
  EXPECT_NE(p["this_node_why"].get<std::string>().find("challenge"), std::string::npos) << p.dump();
  // Marked: nothing more is sent to it (a keepalive goes out every second).
  EXPECT_EQ(datagramsFor(std::chrono::milliseconds(2500)), 0) << "sent to an entry marked as this node";

  // The peer's own fresh message from the entry's address: it is not this node.
  sync::Header hd = peerHeader(81, 1);
  uint8_t out[sync::kMaxMessage];
  size_t len = sync::encode(key_, hd, nullptr, 0, out, sizeof out);
  sendToNode(out, len);
  p = pollUntil([](const nlohmann::json& x) { return !x.value("this_node", true); });
  EXPECT_EQ(p["this_node"], false) << p.dump();
  EXPECT_FALSE(awaitDatagram(keepalive).empty()) << "not sent to again";
  // As docs/fleet.md "Warm start" quotes it (there for 10.0.0.2:7946).
  EXPECT_NE(log_.str().find("fleet sync: fleet.peers[0] " + p["address"].get<std::string>() +
                           " is not this node: a peer's own messages come from it; sending to it "
                           "again\n"),
            std::string::npos)
      << log_.str();
  fs_->stop();
}

}  // namespace
}  // namespace gwlb::dptest
