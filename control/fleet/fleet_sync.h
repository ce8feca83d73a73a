// Flow state sync between the gateways of a fleet (docs/fleet.md "Flow state
// sync"). Runs on gwlbd's control thread (its io_context): it drains the
// workers' sync ring (flows created or moved), re-sends flows that kept
// sending, sends the records in authenticated UDP batches to every peer,
// installs what peers send into the local flow table, and serves and asks
// for whole tables over TCP (warm start). The wire format is
// common/sync_codec.h.
//
// Threads: every member runs on the control thread; the workers only
// enqueue into the ring (Dataplane::sync). Entries it writes follow rules R1
// (a new flow: insert + route CAS from 0), R4 (a move: one CAS from the route
// the record says the flow left) and R9 (docs/architecture.md "Flow entries:
// concurrency rules").
#pragma once

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange
#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "common/snapshot.h"
#include "common/sync_codec.h"
#include "control/fleet/fleet_sync_clock.h"
#include "control/fleet/fleet_view.h"
#include "control/fleet/sync_sent_log.h"
#include "dataplane/flow_table.h"

struct rte_ring;

namespace gwlb::ctl {

// What installing one peer record did (counted per peer).
enum class InstallResult : uint8_t {
  kInstalled,         // a new local entry with the peer's route
  kMoved,             // a local entry moved as the peer moved it
  kRefreshed,         // an entry with the same route: its last packet time advanced
  kIgnored,           // a local entry with another route kept it (or nothing newer)
  kConflict,          // both created it with different appliances: the lower address won here
  kUnknownAppliance,  // the record's appliance is not one of ours
  kBadRecord,         // another listener or flow hash than this node's config gives
  kTableFull,         // no room for a new entry
  kInsertAbandoned,   // another inserter of a same-tag key stayed busy (the table is not full)
};
const char* toString(InstallResult r);

class FleetSync {
 public:
  struct Options {
    std::string node_name;
    std::string listen;               // "ip:port" (fleet.sync_listen)
    std::vector<std::string> peers;   // "ip:port" each (fleet.peers)
    // Warm start: given up after this long without any peer's table
    // arriving (from the start, or from the last message of a transfer that
    // broke off); a transfer that keeps arriving is never cut.
    uint32_t warm_start_timeout_s = 10;
    // Per peer asked: the longest TCP connect, and the longest it may send
    // nothing (its first answer included); then the next peer is asked.
    uint32_t warm_connect_timeout_ms = 2000;
    uint32_t warm_idle_timeout_ms = 3000;
    FlowHashKey secret;               // the fleet secret
    // This node's health view (appliance -> state), sent to the peers every
    // second so each node lists where they disagree. Unset: none sent.
    std::function<std::map<uint32_t, std::pair<uint8_t, bool>>()> health;
    // Where the workers read whether this node's flow records may be missing
    // (Dataplane::fleet_view_incomplete; control/fleet/fleet_view.h): written
    // every tick. Null: nowhere.
    std::atomic<bool>* view_incomplete = nullptr;
  };
  // Two copies of a flow created this close together are a tie (settled on
  // the lower appliance address); further apart, the older copy wins.
  static constexpr uint64_t kConflictMarginNs = 1'000'000'000ULL;
  // Which of two copies on different appliances the opening SYN decides for
  // (install's conflict rule): the peer's, ours, or neither (the older copy,
  // then the lower address decide).
  enum class Settle : uint8_t { kTakePeer, kKeepLocal, kUndecided };
  static Settle settleByOpening(bool peer_opened, bool local_opened, bool peer_older, bool peer_newer);
  // A peer's health entry older than this is forgotten (it sends every second).
  static constexpr double kHealthViewS = 5.0;
  // How often the control thread drains, scans and sends.
  static constexpr std::chrono::milliseconds kTick{10};
  // Ring slots (Dataplane::sync): at 100 k new flows/s, 650 ms of events.
  static constexpr unsigned kRingSize = 65536;
  // Events drained per tick; the refresh scan visits up to kScanPerTick keys
  // and walks up to kScanSlotsPerTick table slots per tick, whichever comes
  // first (slots: a sparse table is walked in bounded steps too, 1 MiB of
  // tags a tick; a pass over slots() / 2 slots takes at least
  // slots() / 2 / kScanSlotsPerTick ticks).
  static constexpr unsigned kDrainPerTick = 16384;
  static constexpr size_t kScanPerTick = 4096;
  static constexpr size_t kScanSlotsPerTick = size_t(1) << 18;
  // An empty batch goes to each peer after this long without a send, so
  // "reachable" means something on an idle fleet.
  static constexpr uint64_t kKeepaliveNs = 1'000'000'000ULL;
  // A peer whose last authenticated message is older than this is unreachable.
  static constexpr double kReachableS = 5.0;
  // How long a challenge's nonce may take to come back (a port forward
  // returns it in milliseconds); no new challenge goes to the entry before.
  static constexpr uint64_t kChallengeNs = 2'000'000'000ULL;

  // `events`: the workers' ring (may be null: nothing to drain). `snapshot`
  // returns the snapshot in force (for address <-> server id). Throws
  // std::runtime_error when an address does not parse or a socket cannot be
  // bound (start-up only).
  FleetSync(boost::asio::io_context& io, Options o, dp::FlowTable& flows, rte_ring* events,
            std::function<const dp::Snapshot*()> snapshot);
  ~FleetSync();
  FleetSync(const FleetSync&) = delete;
  FleetSync& operator=(const FleetSync&) = delete;

  // Starts receiving, serving, the tick, and the warm start.
  void start();
  // Closes every socket and timer (the io_context may still run).
  void stop();

  // True once this node asked a peer for its table and installed it, or no
  // peer's table arrived for warm_start_timeout, or it has no peers (or every
  // entry is this node). The route announcement waits for it.
  bool warmStartDone() const { return warm_.state != WarmState::kWaiting; }

  // Control thread: this node's config digests (control/config/config_digest.h),
  // sent to the peers every second with the health view and compared with
  // theirs. Call again after every config change (reload, API edits).
  void setConfigDigest(std::vector<sync::DigestEntry> d) { config_digest_ = std::move(d); }

  // Whether a TCP segment with no record can be picked from this node's own
  // table now (docs/fleet.md "A segment with no record").
  const FleetView& view() const { return view_; }

  // API `fleet_sync` (docs/control-api.md).
  nlohmann::json status() const;
  // Prometheus lines (gwlb_fleet_sync_*), appended to `out`.
  void metrics(std::string& out) const;

  // Control thread: one tick at monotonic time now_ns (the timer runs it every
  // kTick): drain the workers' ring, scan part of the table for flows to
  // (re)send, send what is pending, and an empty batch after kKeepaliveNs
  // without a send.
  void tick(uint64_t now_ns);
  // Control thread, when this node stops gracefully, before its routes are
  // withdrawn: every flow moved in the last third of its idle timeout (the
  // span in which this node's refresh may not yet have healed a peer that
  // lost the move's record) goes to the peers once more, as "changed", with
  // this call (one tick's slice of the table) and the next ticks. A peer that
  // missed the move would otherwise send the flow to the appliance it left
  // once the router moves it there (found by the soak: a congested sync link).
  void handOff(uint64_t now_ns);
  // Control thread: installs one record (public for tests and the warm start).
  InstallResult install(const sync::Record& r, uint64_t now_ns);
  // Control thread: install() of n records (out[i] is recs[i]'s result), the
  // table's part batched (FlowTable::insertBulkFromControl): a warm start's
  // records, read many messages at a time.
  void installBatch(const sync::Record* recs, size_t n, uint64_t now_ns, InstallResult* out);
  // Control thread: the record of the flow at `pos` (false when the position
  // holds no complete flow entry, or its appliance has no address).
  bool makeRecord(int32_t pos, const FlowKey& key, sync::RecordKind kind, uint64_t now_ns,
                  sync::Record& out) const;

 private:
  struct Peer {
    std::string address;
    boost::asio::ip::udp::endpoint udp;
    boost::asio::ip::tcp::endpoint tcp;
    uint64_t flows_received = 0, flows_sent = 0, datagrams_received = 0, datagrams_sent = 0;
    uint64_t auth_failures = 0, replayed = 0, stale = 0, malformed = 0, send_errors = 0;
    uint64_t installed = 0, moved = 0, refreshed = 0, ignored = 0, unknown_appliance = 0;
    uint64_t bad_records = 0, table_full = 0, insert_abandoned = 0, conflicts = 0;
    double last_sync = 0;       // Unix time of the last authenticated message (0: never)
    // Its health view: appliance -> (HealthState, takes new flows there, Unix time heard).
    struct Seen {
      uint8_t state = 0;
      bool in_service = false;
      double at = 0;
    };
    std::map<uint32_t, Seen> health;
    // Its config digests (docs/fleet.md "Config drift"): sent only once its
    // health view says it takes them (an older gwlbd refuses the type).
    bool takes_digest = false, has_digest = false;
    // Whether it takes records with flags (sync::kFeatureRecordFlags, from its
    // health view: bypass bits, kRecordOpened): an older gwlbd refuses them, so
    // it gets them cleared (its flows stay inspected).
    bool takes_flags = false;
    std::vector<sync::DigestEntry> digest;
    // The sections it differs in as last logged (a change is logged once).
    std::vector<std::string> drift_logged;
    double last_log = -1e9;     // rate limit of this peer's warnings
    // This entry reaches this node itself (a wildcard sync_listen, a port
    // forward): nothing is sent to it, and it is not asked for a warm start.
    bool this_node = false;
    std::string this_node_why;
    // Found from the addresses at start (never undone). Found at run time
    // (a challenge that came back), the mark is undone by a peer's own
    // message from the entry's exact address: a reflected challenge cannot
    // cut the sync to a live peer for longer than its next keepalive.
    bool this_node_by_address = false;
    // This node's own messages seen from the entry's exact address. Anyone
    // can replay one (signed, not secret), so such a message only sends a
    // challenge: an empty batch with a fresh nonce to the entry; the entry is
    // this node when that nonce comes back within kChallengeNs. A replay
    // (outside this window, or seen before) is counted, nothing more.
    sync::ReplayWindow self_window;
    uint64_t challenge = 0, challenge_ns = 0;  // the nonce out now (0: none), sent when
    uint64_t challenges = 0, self_replayed = 0;
    double self_log = -1e9;     // rate limit of its replay warnings (other warnings do not hide them)
    std::string warm_error;     // why the warm start last moved on from it
  };
  enum class WarmState : uint8_t { kWaiting, kDone, kTimedOut, kNoPeers };
  struct Warm {
    WarmState state = WarmState::kWaiting;
    std::string peer;           // who answered
    uint64_t received = 0, installed = 0, peer_total = 0;  // from the peer asked last
    uint64_t started_ns = 0, ended_ns = 0;
    uint64_t progress_ns = 0;   // the last transfer message from any peer (0: none yet)
    uint64_t asked_ns = 0;      // when the current attempt began
    uint64_t heard_ns = 0;      // the last bytes of the peer asked now
    size_t next_peer = 0;       // the peer asked now
    uint64_t nonce = 0, expect_seq = 1;
    unsigned attempts = 0;
    uint64_t attempt = 0;       // the current attempt's id: an abandoned one's handlers return
    bool asking = false;        // an attempt is under way (not between rounds)
    bool connected = false;     // the current attempt is past its connect
    // What it cost: socket reads, install batches and the records in them,
    // and the control thread's CPU time checking and decoding, installing,
    // and in all (user, system) from the start.
    uint64_t reads = 0, batches = 0, batched = 0;
    uint64_t verify_ns = 0, install_ns = 0;
    fleet_clock::ThreadCpu cpu_start, cpu_end;
  };
  class Session;  // one warm-start transfer served (fleet_warm_server.cc)

  // Table side (fleet_sync.cc).
  // What install() settles from the record and the snapshot before the table.
  struct InstallPlan {
    uint32_t hash = 0;
    uint16_t id = 0, prev = 0;  // its appliance, the one it moved from
    uint64_t want = 0, seen = 0, born = 0, idle_ns = 0;
  };
  bool planInstall(const dp::Snapshot* s, const sync::Record& r, uint64_t now_ns, InstallPlan& p,
                   InstallResult& stop) const;
  static InstallResult placeFailed(int32_t pos);
  InstallResult applyInstall(const dp::Snapshot* s, const sync::Record& r, const InstallPlan& p,
                             int32_t pos, uint64_t now_ns);
  void armTick();
  void drainEvents(uint64_t now_ns);
  void refreshScan(uint64_t now_ns);
  void queue(int32_t pos, const sync::Record& r, uint64_t now_ns);
  void flush(uint64_t now_ns);
  void countInstall(Peer* p, InstallResult r);
  // Publishes view_'s judgement to the workers (Options::view_incomplete).
  void updateView(uint64_t now);
  // Status and metrics (fleet_sync_status.cc): status()'s "refresh_scan" and
  // "sent_log".
  nlohmann::json scanStatus() const;
  nlohmann::json sentLogStatus() const;
  nlohmann::json viewStatus() const;
  nlohmann::json warmCpu() const;
  // Network side, the UDP path (fleet_sync_net.cc).
  void receive();
  void onDatagram(size_t len);
  void logDrift(Peer& p);
  // The warm-start server (fleet_warm_server.cc).
  void accept();
  // This node's warm start (fleet_sync_warm.cc).
  void warmBegin();
  void onWarmDeadline();
  void warmConnect();
  void onPeerDeadline(uint64_t attempt);
  void warmRead(uint64_t attempt);
  void warmChunk(uint64_t attempt);
  bool warmMessage(const uint8_t* d, size_t len);
  void warmInstall();
  void warmFail(const std::string& why);
  void warmFinish(WarmState s, const std::string& why);
  // Peer i is this node: logged once, skipped from now on (and the warm
  // start moves on when it was asking it).
  void markThisNode(size_t i, const std::string& why);
  // This node's own message (its node id and epoch) came from peer p's
  // exact address: a counted replay, a challenge sent, or (the challenge's
  // nonce back) the entry marked as this node (fleet_sync_net.cc).
  void onOwnDatagram(Peer& p, const sync::Header& h);
  void sendChallenge(Peer& p, uint64_t now_ns);
  // To every peer, or only those that take record flags (kTakesFlags) or
  // only those that do not (kNoFlags).
  enum class PeerSet : uint8_t { kAll, kTakesFlags, kNoFlags };
  void sendToPeers(const uint8_t* msg, size_t len, size_t records, PeerSet only = PeerSet::kAll);
  void sendHealth();
  void sendConfigDigest();
  // gwlb_fleet_config_differs{peer, section} (docs/fleet.md "Config drift";
  // fleet_sync_status.cc).
  void configDriftMetrics(std::string& out) const;
  // Appliances whose "takes new flows" differs between here and peer p
  // (fleet_sync_status.cc).
  nlohmann::json disagreements(const Peer& p, double now) const;
  Peer* peerFor(const boost::asio::ip::address& a, uint16_t port);
  sync::Header header(sync::MsgType t);
  bool logAllowed(Peer* p);

  boost::asio::io_context& io_;
  Options opt_;
  dp::FlowTable& flows_;
  rte_ring* events_;
  std::function<const dp::Snapshot*()> snapshot_;
  sync::SyncKey key_;
  uint64_t node_id_ = 0, epoch_ = 0, seq_ = 0;
  boost::asio::ip::udp::socket udp_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer tick_timer_, warm_timer_, retry_timer_, peer_timer_;
  boost::asio::ip::tcp::socket warm_socket_;
  std::vector<uint8_t> warm_buf_;  // the warm start's request
  // The warm start's reads: up to kWarmReadBytes of the stream at a time,
  // warm_in_len_ of them not yet taken (a message cut by a read's end); the
  // records of the whole messages read, installed together.
  static constexpr size_t kWarmReadBytes = size_t(256) << 10;
  std::vector<uint8_t> warm_in_;
  size_t warm_in_len_ = 0;
  std::vector<sync::Record> warm_recs_;
  std::vector<InstallResult> warm_results_;
  std::vector<Peer> peers_;
  std::map<uint64_t, sync::ReplayWindow> windows_;  // per sender node id
  // Per table position: when its flow was last sent and its move count then
  // (a changed count means a move the ring did not report, e.g. a sweep).
  SentLog sent_;
  std::vector<sync::Record> pending_;
  std::vector<uint8_t> out_;
  std::array<uint8_t, sync::kMaxMessage + 1> rx_{};
  boost::asio::ip::udp::endpoint rx_from_;
  uint32_t scan_cursor_ = 0;
  // The refresh scan: slots walked in the last tick, passes completed, when
  // the current pass started and how long the last one took.
  uint64_t scan_last_slots_ = 0, scan_passes_ = 0, scan_pass_start_ns_ = 0, scan_last_pass_ns_ = 0;
  uint64_t last_send_ns_ = 0;
  uint64_t handoff_ns_ = 0;  // when a graceful stop asked for the hand-off; 0: never
  uint64_t last_health_ns_ = 0;
  Warm warm_;
  FleetView view_{0};
  std::vector<sync::DigestEntry> config_digest_;
  sync::NonceHistory served_nonces_;
  // Warm-start sessions being served; shared with them (they may outlive us
  // as handlers the io_context still holds).
  std::shared_ptr<unsigned> sessions_ = std::make_shared<unsigned>(0);
  bool stopped_ = false;
  // Totals not tied to a peer.
  uint64_t events_drained_ = 0, refresh_sent_ = 0, changed_sent_ = 0, new_sent_ = 0;
  uint64_t unknown_sender_ = 0, transfers_served_ = 0;
  // Messages carrying this node's own node id (its own come back, or another
  // node with its name), on the UDP socket and the warm-start listener.
  uint64_t from_self_ = 0;
  double unknown_log_ = -1e9;
};

}  // namespace gwlb::ctl
