// The flow state sync wire format between the gateways of a fleet
// (docs/fleet.md "Flow state sync"). Pure code: no DPDK, no Asio; OpenSSL
// for HMAC-SHA256. Thread: any (a SyncKey is read-only once made).
//
// One message (a UDP datagram of at most kMaxDatagram bytes, or one
// length-prefixed frame of the warm-start TCP stream), little endian:
//
//   0      4   5    6     8          16          24       32         40       48
//   +------+---+----+-----+----------+-----------+--------+----------+--------+
//   |magic |ver|type|count| node id  |   epoch   |  seq   | time ms  | nonce  |
//   +------+---+----+-----+----------+-----------+--------+----------+--------+
//   | body: count records of kRecordSize bytes (kRecords, kTransfer),         |
//   |       8-byte total (kWarmEnd), nothing (kWarmRequest), count health     |
//   |       entries (kHealth), count config digest entries (kConfigDigest)    |
//   +-------------------------------------------------------------------------+
//   | HMAC-SHA256 over everything before it, truncated to 16 bytes            |
//   +-------------------------------------------------------------------------+
//
// node id: a 64-bit hash of the sender's fleet.node_name; epoch: a random
// value the sender draws at start; seq: the sender's message counter in that
// epoch (from 1); time: the sender's Unix time in ms; nonce: 0, or on the
// warm-start stream the requester's nonce (binds the stream to the request),
// on kHealth the sender's feature bits (kFeatureConfigDigest, kFeatureRecordFlags).
// The MAC key is HMAC-SHA256(fleet secret, "gwlb flow sync v1").
//
// One record (kRecordSize = 76 bytes): the canonical FlowKey (40 bytes as
// common/flow_key.h lays it out, ports little endian), flow hash, appliance
// IPv4, cookie, previous appliance IPv4, previous cookie (0, 0 when never
// moved), moves, move reason, first direction, record kind, flags (bit 0
// kRecordBypassed: bypassed by its appliance, bit 1 kRecordBypassTimed, bit 2
// kRecordOpened: the sender's copy was created by the connection's opening
// SYN; the other bits 0), idle for (ms), age (ms), the timed bypass's seconds
// left (16 bits; 0 unless timed), 2 reserved bytes (0). A gwlbd before the
// flags byte refuses a record with any flag set, so a sender sets flags only
// for a peer whose kHealth messages carry kFeatureRecordFlags.
//
// A flow on an IPv6 appliance travels in kRecords6 / kTransfer6 messages,
// whose records (kRecord6Size = 108 bytes) are the 76 bytes above followed by
// the appliance's IPv6 address and the previous appliance's (16 bytes each,
// :: when never moved or when the previous one is IPv4). In such a record the
// appliance IPv4 field is 0 when the appliance is IPv6 and the IPv6 field is
// :: when it is IPv4: exactly one of the two names it, and at most one names
// the previous appliance. A sender writes one of these types only when a
// batch holds such a flow; a gwlbd without them has no IPv6 appliances (its
// config refuses them in a fleet), so never takes one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/flow_key.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace gwlb::sync {

inline constexpr uint32_t kMagic = 0x53464C47;  // "GLFS" read little endian
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderSize = 48;
inline constexpr size_t kMacSize = 16;
inline constexpr size_t kRecordSize = 76;
inline constexpr size_t kMaxDatagram = 1400;
inline constexpr size_t kMaxRecords = (kMaxDatagram - kHeaderSize - kMacSize) / kRecordSize;  // 17
inline constexpr size_t kMaxMessage = kHeaderSize + kMaxRecords * kRecordSize + kMacSize;
inline constexpr size_t kRecord6Size = kRecordSize + 32;
inline constexpr size_t kMaxRecords6 = (kMaxMessage - kHeaderSize - kMacSize) / kRecord6Size;  // 11
inline constexpr size_t kWarmEndBody = 8;
// Messages whose sender time is further than this from ours are stale.
inline constexpr int64_t kMaxClockSkewMs = 30'000;

enum class MsgType : uint8_t {
  kRecords = 1,
  kWarmRequest = 2,
  kTransfer = 3,
  kWarmEnd = 4,
  kHealth = 5,  // the sender's health view: count entries of kHealthEntrySize bytes
  kConfigDigest = 6,  // the sender's config digests: count entries of kDigestEntrySize bytes
  kRecords6 = 7,      // kRecords with kRecord6Size records (IPv6 appliances)
  kTransfer6 = 8,     // kTransfer with kRecord6Size records
};
// Whether a message of type t carries flow records (kRecords, kRecords6), and
// whether it is a warm start's (kTransfer, kTransfer6).
inline bool isRecords(MsgType t) { return t == MsgType::kRecords || t == MsgType::kRecords6; }
inline bool isTransfer(MsgType t) { return t == MsgType::kTransfer || t == MsgType::kTransfer6; }
// A kHealth message's nonce field: bits saying what its sender takes (0 from
// a gwlbd before them; a receiver ignores bits it does not know).
inline constexpr uint64_t kFeatureConfigDigest = 1;  // kConfigDigest messages
// Records' flags byte (bypass bits, kRecordOpened) and the timed bypass's
// seconds left.
inline constexpr uint64_t kFeatureRecordFlags = 2;
inline constexpr uint8_t kRecordBypassed = 1, kRecordBypassTimed = 2;
// The sender's copy was created (or re-opened) by the connection's opening TCP
// SYN (SYN without ACK).
inline constexpr uint8_t kRecordOpened = 4;
// A kWarmRequest's nonce ends in these 16 bits when its sender takes records'
// bypass flags (an older gwlbd's random nonce does so once in 32,768: its warm
// start then fails as malformed and it starts cold). The server also trusts a
// peer whose kHealth said kFeatureRecordFlags.
inline constexpr uint64_t kWarmNonceBypassMark = 0xB9A5;
// One health entry: appliance IPv4, its state (common/health.h HealthState),
// 1 when it takes new flows there, 2 reserved bytes (0). An IPv6 appliance is
// named by its 32-bit appliance key (common/net_types.h applianceKey: the
// config refuses two appliances with one key, and nodes of a fleet share the
// appliance list, which the config digests check).
inline constexpr size_t kHealthEntrySize = 8;
// Within kMaxMessage, the largest message a receiver takes.
inline constexpr size_t kMaxHealthEntries = (kMaxMessage - kHeaderSize - kMacSize) / kHealthEntrySize;  // 161
inline constexpr uint8_t kMaxHealthState = 5;  // HealthState::kDraining
// One config digest entry (docs/fleet.md "Config drift"): section id (not 0;
// ids the receiver does not know are kept, not compared), 3 reserved bytes
// (0), the section's 64-bit digest.
inline constexpr size_t kDigestEntrySize = 12;
inline constexpr size_t kMaxDigestEntries = 32;
// Why a record was sent.
enum class RecordKind : uint8_t { kNew = 1, kChanged = 2, kRefresh = 3, kTransfer = 4 };
const char* toString(RecordKind k);

struct Header {
  MsgType type = MsgType::kRecords;
  uint16_t count = 0;
  uint64_t node = 0;
  uint64_t epoch = 0;
  uint64_t seq = 0;
  uint64_t time_ms = 0;
  uint64_t nonce = 0;
};

struct Record {
  FlowKey key{};
  uint32_t flow_hash = 0;
  uint32_t appliance = 0;       // IPv4, host order
  uint32_t cookie = 0;
  uint32_t prev_appliance = 0;  // where the last move came from (0: never moved)
  uint32_t prev_cookie = 0;
  uint16_t moves = 0;
  uint8_t move_reason = 0;      // dp::MoveReason
  uint8_t first_dir = 0;
  RecordKind kind = RecordKind::kNew;
  uint32_t idle_for_ms = 0;     // since the sender last saw a packet of the flow
  uint32_t age_ms = 0;          // since the flow was created
  uint8_t bypass = 0;           // kRecordBypassed | kRecordBypassTimed
  uint16_t bypass_left_s = 0;   // timed: seconds until the bypass ends (>= 1)
  bool bypass_timed() const { return bypass & kRecordBypassTimed; }
  bool opened = false;          // created by the connection's opening SYN (kRecordOpened)
  // An IPv6 appliance (then `appliance` is 0), and an IPv6 previous one
  // (then `prev_appliance` is 0); all zero for IPv4 ones.
  std::array<uint8_t, 16> appliance6{};
  std::array<uint8_t, 16> prev_appliance6{};
  bool wide() const { return appliance6 != std::array<uint8_t, 16>{} || prev_appliance6 != std::array<uint8_t, 16>{}; }
};

// Whether `next` fits in one message beside recs[0..n): kMaxRecords records,
// or kMaxRecords6 once one of them (or next) is wide().
bool fits(const Record* recs, size_t n, const Record& next);

// What the sender's health checks say of one appliance (kHealth).
struct HealthEntry {
  uint32_t appliance = 0;  // IPv4, host order
  uint8_t state = 0;       // HealthState
  bool in_service = false;  // takes new flows on the sender
};

// The sender's digest of one config section (kConfigDigest).
struct DigestEntry {
  uint8_t section = 0;
  uint64_t digest = 0;
  bool operator==(const DigestEntry&) const = default;
};

// The MAC key, derived from the 128-bit fleet secret (its 32 hex digits'
// bytes, first digit first). Holds the HMAC's precomputed inner and outer
// states, so a message costs two SHA-256 runs over its bytes plus two blocks.
class SyncKey {
 public:
  SyncKey() = default;
  // Throws std::runtime_error when OpenSSL cannot hash (start-up only).
  explicit SyncKey(const uint8_t secret[16]);
  static SyncKey fromHashKey(uint64_t k0, uint64_t k1);
  // HMAC-SHA256 of data under the derived key, truncated to 16 bytes;
  // nullopt when there is none (a key never derived, or OpenSSL failed):
  // then nothing is sent, and nothing authenticates.
  std::optional<std::array<uint8_t, kMacSize>> mac(const uint8_t* data, size_t len) const;
  bool valid() const { return inner_ != nullptr; }

 private:
  // SHA-256 states after (derived key ^ 0x36) and (derived key ^ 0x5c).
  std::shared_ptr<evp_md_ctx_st> inner_, outer_;
};

// Test seam: while on, every SyncKey::mac on the calling thread fails as an
// OpenSSL failure would (tests show such a failure authenticates nothing).
namespace test_hooks {
void failMacs(bool on);
}

// 64-bit FNV-1a of the node name: the header's node id.
uint64_t nodeId(const std::string& node_name);

// Writes one kHealth message of n <= kMaxHealthEntries entries; 0 when it
// does not fit (or the MAC cannot be computed). h.type and h.count are set here.
size_t encodeHealth(const SyncKey& key, Header h, const HealthEntry* e, size_t n, uint8_t* out,
                    size_t cap);

// Writes one kConfigDigest message of n <= kMaxDigestEntries entries; 0 when
// it does not fit (or the MAC cannot be computed). h.type and h.count are set here.
size_t encodeConfigDigest(const SyncKey& key, Header h, const DigestEntry* e, size_t n,
                          uint8_t* out, size_t cap);

// Writes one message (header, body, MAC) to out[0..cap); returns its size,
// or 0 when it does not fit, count > kMaxRecords (kMaxRecords6 with a wide()
// record) or the MAC cannot be computed. A kRecords or kTransfer batch with
// a wide() record goes as kRecords6 or kTransfer6. For kWarmEnd, `end_total`
// is the body; kWarmRequest has none. h.count is set from n.
size_t encode(const SyncKey& key, Header h, const Record* recs, size_t n, uint8_t* out,
              size_t cap, uint64_t end_total = 0);

enum class Status : uint8_t { kOk, kMalformed, kAuthFailed };
const char* toString(Status s);

// Checks and decodes one message. kMalformed: wrong length for its count or
// type, bad magic, version or type, a record that is not a flow record of a
// known kind (fragment key, family not 4/6, nonzero reserved bytes, an
// appliance named in both families or in neither); checked
// before the MAC only where the length is concerned, so an attacker learns
// nothing from which. kAuthFailed: the MAC does not match, or cannot be
// computed (a key never derived, OpenSSL failing). Records are
// written to recs[0..h.count) (room for kMaxRecords); `end_total` gets a
// kWarmEnd's total; a kHealth message's entries go to health[0..h.count)
// when given (room for kMaxHealthEntries; checked either way: appliance not
// 0, state known, in_service 0/1, reserved bytes 0); a kConfigDigest
// message's entries go to digests[0..h.count) when given (room for
// kMaxDigestEntries; checked either way: section not 0, reserved bytes 0).
// Never reads outside d[0..len).
Status decode(const SyncKey& key, const uint8_t* d, size_t len, Header& h, Record* recs,
              uint64_t* end_total = nullptr, HealthEntry* health = nullptr,
              DigestEntry* digests = nullptr);

// Who sent an authenticated message, seen from the node whose own headers
// carry (self_node, self_epoch): kThisNode, its own message come back (a
// fleet.peers entry that reaches this node: a wildcard sync_listen, a port
// forward); kSameName, another node with this node's fleet.node_name (so the
// same node id); kPeer otherwise. A receiver refuses the first two, on the
// UDP socket and on both ends of a warm start, before its replay window.
enum class Sender : uint8_t { kPeer, kThisNode, kSameName };
Sender senderOf(const Header& h, uint64_t self_node, uint64_t self_epoch);
const char* toString(Sender s);

// Per sender: which (epoch, seq) were accepted, to reject replays.
// A sliding window of 64 sequence numbers below the highest seen in the
// current epoch; a new epoch replaces the current one only when its message
// time is not older than the newest accepted in the current epoch (a restart
// draws a new epoch and its clock goes on); the epochs it replaced are kept
// (the last kRetired) and rejected for good.
class ReplayWindow {
 public:
  static constexpr size_t kRetired = 8;
  enum class Verdict : uint8_t { kOk, kReplayed, kStale };
  // Whether a message may be accepted at our Unix time now_ms. Does not
  // change the window: call accept() once the MAC has been checked too.
  Verdict check(const Header& h, uint64_t now_ms) const;
  void accept(const Header& h);
  uint64_t epoch() const { return epoch_; }
  uint64_t highest() const { return top_; }

 private:
  bool have_ = false;
  uint64_t epoch_ = 0;
  uint64_t top_ = 0;
  uint64_t bits_ = 0;  // bit i: top_ - i was accepted
  uint64_t newest_ms_ = 0;
  std::array<uint64_t, kRetired> retired_{};
  size_t n_retired_ = 0, next_retired_ = 0;
};
const char* toString(ReplayWindow::Verdict v);

// The nonces of the warm-start requests served lately: a request is served
// once. Holds the last kCapacity; beyond that the oldest is forgotten.
class NonceHistory {
 public:
  static constexpr size_t kCapacity = 4096;
  bool seen(uint64_t nonce) const { return set_.count(nonce) != 0; }
  // Remembers a nonce; false when it was already there.
  bool remember(uint64_t nonce);
  size_t size() const { return set_.size(); }

 private:
  std::set<uint64_t> set_;
  std::deque<uint64_t> order_;  // oldest first
};

}  // namespace gwlb::sync
