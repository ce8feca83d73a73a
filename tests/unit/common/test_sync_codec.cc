// The flow sync wire format (common/sync_codec.h): round trips, every
// malformed class, authentication and the replay window.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "common/sync_codec.h"

using namespace gwlb;
using namespace gwlb::sync;

namespace {

SyncKey key(uint64_t k0 = 0x0123456789abcdefULL, uint64_t k1 = 0xfedcba9876543210ULL) {
  return SyncKey::fromHashKey(k0, k1);
}

Record record(uint32_t i) {
  Record r;
  r.key.a[0] = 10, r.key.a[3] = uint8_t(i);
  r.key.b[0] = 192, r.key.b[1] = 0, r.key.b[2] = 2, r.key.b[3] = 7;
  r.key.port_a = uint16_t(40000 + i);
  r.key.port_b = 443;
  r.key.proto = 6;
  r.key.family = 4;
  r.key.listener = 0;
  r.key.kind = KeyKind::kFlow;
  r.flow_hash = 0x11223344u + i;
  r.appliance = 0x0a000001u + i;
  r.cookie = 0xdead0000u + i;
  r.prev_appliance = i % 2 ? 0x0a0000feu : 0;
  r.prev_cookie = i % 2 ? 0xbeefu : 0;
  r.moves = uint16_t(i % 3);
  r.move_reason = uint8_t(i % 2);
  r.first_dir = uint8_t(i & 1);
  r.kind = RecordKind(1 + i % 4);
  r.idle_for_ms = 1000 * i;
  r.age_ms = 5000 * i + 1;
  r.opened = i % 3 == 1;
  return r;
}

Header header(uint64_t seq, uint64_t time_ms = 1'700'000'000'000ULL, uint64_t epoch = 77) {
  Header h;
  h.node = nodeId("gw-1");
  h.epoch = epoch;
  h.seq = seq;
  h.time_ms = time_ms;
  return h;
}

std::vector<uint8_t> message(const SyncKey& k, const Header& h, size_t n) {
  std::vector<Record> recs;
  for (size_t i = 0; i < n; ++i) recs.push_back(record(uint32_t(i)));
  std::vector<uint8_t> out(kMaxMessage);
  size_t len = encode(k, h, recs.data(), n, out.data(), out.size());
  out.resize(len);
  return out;
}

bool sameRecord(const Record& a, const Record& b) {
  return a.key == b.key && a.flow_hash == b.flow_hash && a.appliance == b.appliance &&
         a.cookie == b.cookie && a.prev_appliance == b.prev_appliance &&
         a.prev_cookie == b.prev_cookie && a.moves == b.moves && a.move_reason == b.move_reason &&
         a.first_dir == b.first_dir && a.kind == b.kind && a.idle_for_ms == b.idle_for_ms &&
         a.age_ms == b.age_ms && a.opened == b.opened;
}

}  // namespace

TEST(SyncCodec, FullDatagramFitsTheBudget) {
  EXPECT_EQ(kMaxRecords, 17u);
  EXPECT_LE(kMaxMessage, kMaxDatagram);
  SyncKey k = key();
  EXPECT_EQ(message(k, header(1), kMaxRecords).size(), kMaxMessage);
  // One more than fits is refused, not truncated.
  std::vector<Record> recs(kMaxRecords + 1, record(1));
  uint8_t out[2048];
  EXPECT_EQ(encode(k, header(1), recs.data(), recs.size(), out, sizeof out), 0u);
  EXPECT_EQ(encode(k, header(1), recs.data(), 2, out, kHeaderSize + 2 * kRecordSize + kMacSize - 1), 0u);
}

TEST(SyncCodec, RoundTripEveryCount) {
  SyncKey k = key();
  for (size_t n = 0; n <= kMaxRecords; ++n) {
    Header h = header(n + 1);
    h.nonce = n * 31;
    auto m = message(k, h, n);
    ASSERT_EQ(m.size(), kHeaderSize + n * kRecordSize + kMacSize);
    Header got;
    Record recs[kMaxRecords];
    ASSERT_EQ(decode(k, m.data(), m.size(), got, recs), Status::kOk) << n;
    EXPECT_EQ(got.type, MsgType::kRecords);
    EXPECT_EQ(got.count, n);
    EXPECT_EQ(got.node, h.node);
    EXPECT_EQ(got.epoch, h.epoch);
    EXPECT_EQ(got.seq, h.seq);
    EXPECT_EQ(got.time_ms, h.time_ms);
    EXPECT_EQ(got.nonce, h.nonce);
    for (size_t i = 0; i < n; ++i) EXPECT_TRUE(sameRecord(recs[i], record(uint32_t(i)))) << i;
  }
}

TEST(SyncCodec, RoundTripIpv6AndControlMessages) {
  SyncKey k = key();
  Record r = record(3);
  std::memset(r.key.a, 0x20, 16);
  std::memset(r.key.b, 0x30, 16);
  r.key.family = 6;
  uint8_t out[kMaxMessage];
  Header h = header(9);
  h.type = MsgType::kTransfer;
  size_t len = encode(k, h, &r, 1, out, sizeof out);
  Header got;
  Record recs[kMaxRecords];
  ASSERT_EQ(decode(k, out, len, got, recs), Status::kOk);
  EXPECT_EQ(got.type, MsgType::kTransfer);
  EXPECT_TRUE(sameRecord(recs[0], r));

  h.type = MsgType::kWarmEnd;
  len = encode(k, h, nullptr, 0, out, sizeof out, 1234567);
  ASSERT_EQ(len, kHeaderSize + kWarmEndBody + kMacSize);
  uint64_t total = 0;
  ASSERT_EQ(decode(k, out, len, got, recs, &total), Status::kOk);
  EXPECT_EQ(got.type, MsgType::kWarmEnd);
  EXPECT_EQ(total, 1234567u);

  h.type = MsgType::kWarmRequest;
  h.nonce = 0x5555;
  len = encode(k, h, &r, 1, out, sizeof out);  // a request carries no records
  ASSERT_EQ(len, kHeaderSize + kMacSize);
  ASSERT_EQ(decode(k, out, len, got, recs), Status::kOk);
  EXPECT_EQ(got.count, 0);
  EXPECT_EQ(got.nonce, 0x5555u);
}

TEST(SyncCodec, HealthViewRoundTripAndBadEntries) {
  SyncKey k = key();
  std::vector<HealthEntry> view;
  for (uint32_t i = 0; i < kMaxHealthEntries; ++i)
    view.push_back({0x0a000001 + i, uint8_t(i % 6), i % 3 == 0});
  uint8_t out[kMaxMessage];
  size_t len = encodeHealth(k, header(4), view.data(), view.size(), out, sizeof out);
  ASSERT_GT(len, 0u);
  ASSERT_LE(len, kMaxDatagram) << "a full health message fits one datagram";
  EXPECT_EQ(encodeHealth(k, header(4), view.data(), kMaxHealthEntries + 1, out, sizeof out), 0u);
  Header got;
  Record recs[kMaxRecords];
  HealthEntry back[kMaxHealthEntries];
  ASSERT_EQ(decode(k, out, len, got, recs, nullptr, back), Status::kOk);
  EXPECT_EQ(got.type, MsgType::kHealth);
  ASSERT_EQ(got.count, kMaxHealthEntries);
  for (size_t i = 0; i < view.size(); ++i) {
    EXPECT_EQ(back[i].appliance, view[i].appliance);
    EXPECT_EQ(back[i].state, view[i].state);
    EXPECT_EQ(back[i].in_service, view[i].in_service);
  }
  // An unknown state, a zero address, a service flag of 2, a reserved byte:
  // each malformed even under a valid MAC.
  for (int bad = 0; bad < 4; ++bad) {
    HealthEntry e{0x0a000001, 1, true};
    size_t l = encodeHealth(k, header(5), &e, 1, out, sizeof out);
    uint8_t* p = out + kHeaderSize;
    if (bad == 0) p[4] = kMaxHealthState + 1;
    if (bad == 1) std::memset(p, 0, 4);
    if (bad == 2) p[5] = 2;
    if (bad == 3) p[7] = 1;
    auto m = k.mac(out, l - kMacSize);
    ASSERT_TRUE(m);
    std::memcpy(out + l - kMacSize, m->data(), kMacSize);
    EXPECT_EQ(decode(k, out, l, got, recs, nullptr, back), Status::kMalformed) << bad;
  }
}

TEST(SyncCodec, WrongSecretIsAnAuthFailure) {
  auto m = message(key(), header(1), 3);
  Header got;
  Record recs[kMaxRecords];
  EXPECT_EQ(decode(key(1, 2), m.data(), m.size(), got, recs), Status::kAuthFailed);
  EXPECT_EQ(decode(key(0x0123456789abcdefULL, 0xfedcba9876543211ULL), m.data(), m.size(), got, recs),
            Status::kAuthFailed);
}

TEST(SyncCodec, EveryFlippedBitIsRejected) {
  SyncKey k = key();
  auto m = message(k, header(1), 2);
  Header got;
  Record recs[kMaxRecords];
  for (size_t bit = 0; bit < m.size() * 8; ++bit) {
    auto c = m;
    c[bit / 8] ^= uint8_t(1 << (bit % 8));
    Status st = decode(k, c.data(), c.size(), got, recs);
    EXPECT_NE(st, Status::kOk) << "bit " << bit;
  }
}

TEST(SyncCodec, MalformedClasses) {
  SyncKey k = key();
  Header got;
  Record recs[kMaxRecords];
  auto m = message(k, header(1), 2);
  // Truncated anywhere, one byte more, empty.
  for (size_t len = 0; len < m.size(); ++len)
    EXPECT_EQ(decode(k, m.data(), len, got, recs), Status::kMalformed) << len;
  auto longer = m;
  longer.push_back(0);
  EXPECT_EQ(decode(k, longer.data(), longer.size(), got, recs), Status::kMalformed);
  std::vector<uint8_t> huge(kMaxMessage + 1, 0);
  EXPECT_EQ(decode(k, huge.data(), huge.size(), got, recs), Status::kMalformed);
  // Magic, version, type, a count that disagrees with the length or exceeds the maximum.
  auto bad = m;
  bad[0] ^= 1;
  EXPECT_EQ(decode(k, bad.data(), bad.size(), got, recs), Status::kMalformed);
  bad = m;
  bad[4] = 2;
  EXPECT_EQ(decode(k, bad.data(), bad.size(), got, recs), Status::kMalformed);
  for (uint8_t t : {0, 5, 255}) {
    bad = m;
    bad[5] = t;
    EXPECT_EQ(decode(k, bad.data(), bad.size(), got, recs), Status::kMalformed) << int(t);
  }
  bad = m;
  bad[6] = 3;
  EXPECT_EQ(decode(k, bad.data(), bad.size(), got, recs), Status::kMalformed);
  bad = m;
  bad[6] = 18;
  EXPECT_EQ(decode(k, bad.data(), bad.size(), got, recs), Status::kMalformed);
  // A request or an end message with a count.
  Header h = header(2);
  h.type = MsgType::kWarmRequest;
  uint8_t out[kMaxMessage];
  size_t len = encode(k, h, nullptr, 0, out, sizeof out);
  out[6] = 1;
  EXPECT_EQ(decode(k, out, len, got, recs), Status::kMalformed);
}

// The flags byte (offset 65 of a record): kRecordOpened round trips; a
// record without flags has the byte 0, as a gwlbd before flags requires (the
// sender clears flags for such a peer); an unknown flag is malformed.
TEST(SyncCodec, RecordFlagsByte) {
  SyncKey k = key();
  Header got;
  Record recs[kMaxRecords];
  uint8_t out[kMaxMessage];
  const size_t at = kHeaderSize + 65;
  for (bool opened : {false, true}) {
    Record r = record(2);
    r.opened = opened;
    size_t len = encode(k, header(1), &r, 1, out, sizeof out);
    ASSERT_GT(len, 0u);
    EXPECT_EQ(out[at], opened ? kRecordOpened : 0);
    ASSERT_EQ(decode(k, out, len, got, recs), Status::kOk);
    EXPECT_EQ(recs[0].opened, opened);
  }
  Record r = record(2);
  size_t len = encode(k, header(1), &r, 1, out, sizeof out);
  out[at] = kRecordOpened | 8;
  auto mac = k.mac(out, len - kMacSize);
  ASSERT_TRUE(mac.has_value());
  std::memcpy(out + len - kMacSize, mac->data(), kMacSize);
  EXPECT_EQ(decode(k, out, len, got, recs), Status::kMalformed) << "an unknown flag";
}

// Records that pass the MAC but are not flow records we install: a sender
// with the secret and a bug, never trusted blindly.
TEST(SyncCodec, MalformedRecordsUnderAValidMac) {
  SyncKey k = key();
  Header got;
  Record recs[kMaxRecords];
  auto expectMalformed = [&](Record r, const char* what) {
    uint8_t out[kMaxMessage];
    size_t len = encode(k, header(1), &r, 1, out, sizeof out);
    ASSERT_GT(len, 0u);
    EXPECT_EQ(decode(k, out, len, got, recs), Status::kMalformed) << what;
  };
  Record r = record(1);
  r.key.kind = KeyKind::kFragment;
  expectMalformed(r, "fragment entry");
  r = record(1);
  r.key.family = 5;
  expectMalformed(r, "family");
  r = record(1);
  r.key.a[9] = 1;
  expectMalformed(r, "IPv4 key with bytes past the address");
  r = record(1);
  r.kind = RecordKind(0);
  expectMalformed(r, "kind 0");
  r.kind = RecordKind(5);
  expectMalformed(r, "kind 5");
  r = record(1);
  r.first_dir = 2;
  expectMalformed(r, "direction");
  r = record(1);
  r.appliance = 0;
  expectMalformed(r, "no appliance");
  r = record(1);
  r.cookie = 0;
  expectMalformed(r, "no cookie");
}

TEST(ReplayWindow, AcceptsInOrderAndOutOfOrderOnce) {
  ReplayWindow w;
  const uint64_t now = 1'700'000'000'000ULL;
  for (uint64_t s : {1, 2, 5, 3, 4, 10, 7}) {
    ASSERT_EQ(w.check(header(s, now), now), ReplayWindow::Verdict::kOk) << s;
    w.accept(header(s, now));
  }
  for (uint64_t s : {1, 2, 3, 4, 5, 7, 10})
    EXPECT_EQ(w.check(header(s, now), now), ReplayWindow::Verdict::kReplayed) << s;
  EXPECT_EQ(w.check(header(6, now), now), ReplayWindow::Verdict::kOk);
  EXPECT_EQ(w.check(header(8, now), now), ReplayWindow::Verdict::kOk);
  EXPECT_EQ(w.check(header(0, now), now), ReplayWindow::Verdict::kReplayed);  // never sent
}

TEST(ReplayWindow, WindowEdges) {
  ReplayWindow w;
  const uint64_t now = 1'700'000'000'000ULL;
  w.accept(header(100, now));
  // 63 below the highest is still inside the window, 64 below is not.
  EXPECT_EQ(w.check(header(37, now), now), ReplayWindow::Verdict::kOk);
  EXPECT_EQ(w.check(header(36, now), now), ReplayWindow::Verdict::kReplayed);
  w.accept(header(37, now));
  EXPECT_EQ(w.check(header(37, now), now), ReplayWindow::Verdict::kReplayed);
  // A jump of exactly 64 forgets every bit; 37 is now too old either way.
  w.accept(header(164, now));
  EXPECT_EQ(w.check(header(101, now), now), ReplayWindow::Verdict::kOk);
  EXPECT_EQ(w.check(header(100, now), now), ReplayWindow::Verdict::kReplayed);
  EXPECT_EQ(w.check(header(164, now), now), ReplayWindow::Verdict::kReplayed);
  // A jump of 63 keeps the old highest in the window's last bit.
  ReplayWindow v;
  v.accept(header(1, now));
  v.accept(header(64, now));
  EXPECT_EQ(v.check(header(1, now), now), ReplayWindow::Verdict::kReplayed);
  EXPECT_EQ(v.check(header(2, now), now), ReplayWindow::Verdict::kOk);
  // Huge sequence numbers do not overflow the shift.
  v.accept(header(~0ULL, now));
  EXPECT_EQ(v.check(header(~0ULL, now), now), ReplayWindow::Verdict::kReplayed);
  EXPECT_EQ(v.check(header(~0ULL - 1, now), now), ReplayWindow::Verdict::kOk);
}

TEST(ReplayWindow, StaleTimeBothWays) {
  ReplayWindow w;
  const uint64_t now = 1'700'000'000'000ULL;
  EXPECT_EQ(w.check(header(1, now - 30'000), now), ReplayWindow::Verdict::kOk);
  EXPECT_EQ(w.check(header(1, now + 30'000), now), ReplayWindow::Verdict::kOk);
  EXPECT_EQ(w.check(header(1, now - 30'001), now), ReplayWindow::Verdict::kStale);
  EXPECT_EQ(w.check(header(1, now + 30'001), now), ReplayWindow::Verdict::kStale);
  EXPECT_EQ(w.check(header(1, 0), now), ReplayWindow::Verdict::kStale);
}

TEST(ReplayWindow, NewEpochAfterRestartOldEpochRejected) {
  ReplayWindow w;
  const uint64_t t = 1'700'000'000'000ULL;
  w.accept(header(1, t, 111));
  w.accept(header(500, t + 1000, 111));
  // The sender restarted: a new epoch, counting from 1 again, later time.
  ASSERT_EQ(w.check(header(1, t + 2000, 222), t + 2000), ReplayWindow::Verdict::kOk);
  w.accept(header(1, t + 2000, 222));
  EXPECT_EQ(w.epoch(), 222u);
  // Messages of the old epoch, even unseen sequence numbers, are replays now.
  EXPECT_EQ(w.check(header(501, t + 2100, 111), t + 2100), ReplayWindow::Verdict::kReplayed);
  // An unknown epoch with a time older than the newest accepted is a replay
  // from before the restart.
  w.accept(header(2, t + 3000, 222));
  EXPECT_EQ(w.check(header(9, t + 2500, 333), t + 3000), ReplayWindow::Verdict::kReplayed);
  EXPECT_EQ(w.check(header(9, t + 3000, 333), t + 3000), ReplayWindow::Verdict::kOk);
  // Retired epochs are remembered (the last kRetired).
  for (uint64_t e = 1000; e < 1000 + ReplayWindow::kRetired; ++e)
    w.accept(header(1, t + 4000 + e, e));
  EXPECT_EQ(w.check(header(3, t + 9000, 1000), t + 9000), ReplayWindow::Verdict::kReplayed);
  EXPECT_EQ(w.check(header(3, t + 9000, 1000 + ReplayWindow::kRetired - 2), t + 9000),
            ReplayWindow::Verdict::kReplayed);
}

TEST(SyncCodec, NodeIdAndKeyDerivation) {
  EXPECT_NE(nodeId("gw-1"), nodeId("gw-2"));
  EXPECT_EQ(nodeId("gw-1"), nodeId("gw-1"));
  // Known-answer test: HMAC-SHA256(secret, "gwlb flow sync v1") as the MAC key,
  // checked against an independent computation (Python's hmac module):
  //   k = hmac.new(bytes.fromhex("0123456789abcdeffedcba9876543210"),
  //                b"gwlb flow sync v1", "sha256").digest()
  //   hmac.new(k, b"abc", "sha256").hexdigest()[:32]
  auto m = key().mac(reinterpret_cast<const uint8_t*>("abc"), 3);
  ASSERT_TRUE(m);
  char hex[33];
  for (size_t i = 0; i < 16; ++i) snprintf(hex + 2 * i, 3, "%02x", (*m)[i]);
  EXPECT_STREQ(hex, "2cb059a2f12e92287ef279a61a0c23f8");
}

// Issue 24 item 3: a MAC that cannot be computed (OpenSSL failing, or a key
// never made) authenticates nothing. It used to come out as 16 zero bytes,
// compared with the message's tag: a forged datagram with an all-zero tag
// then passed.
TEST(SyncCodec, AMacFailureIsAnAuthFailureNotAnAllZeroTag) {
  auto m = message(key(), header(1), 2);
  std::memset(m.data() + m.size() - kMacSize, 0, kMacSize);  // the forger's tag
  Header got;
  Record recs[kMaxRecords];
  EXPECT_EQ(decode(key(), m.data(), m.size(), got, recs), Status::kAuthFailed)
      << "a wrong tag while the MAC works";
  EXPECT_EQ(decode(SyncKey(), m.data(), m.size(), got, recs), Status::kAuthFailed)
      << "a key never derived has no MAC";
  test_hooks::failMacs(true);
  EXPECT_EQ(decode(key(), m.data(), m.size(), got, recs), Status::kAuthFailed)
      << "OpenSSL failing: the all-zero tag must not authenticate";
  uint8_t out[kMaxMessage];
  EXPECT_EQ(encode(key(), header(2), nullptr, 0, out, sizeof out), 0u)
      << "nothing is sent without a MAC";
  HealthEntry e{0x0a000001, 1, true};
  EXPECT_EQ(encodeHealth(key(), header(3), &e, 1, out, sizeof out), 0u);
  test_hooks::failMacs(false);
  EXPECT_GT(encode(key(), header(2), nullptr, 0, out, sizeof out), 0u) << "works again";
}

// Issue 24 item 6: the warm-start requests served are remembered (each is
// served once) up to NonceHistory::kCapacity, and beyond that the oldest is
// forgotten. It used to forget the smallest nonce: a request whose nonce was
// the smallest was forgotten as soon as it was served, and could be replayed.
TEST(NonceHistory, ForgetsTheOldestNotTheSmallest) {
  NonceHistory h;
  for (uint64_t i = 0; i < NonceHistory::kCapacity; ++i) ASSERT_TRUE(h.remember(1000 + i));
  EXPECT_FALSE(h.remember(1000)) << "served once";
  EXPECT_TRUE(h.remember(5)) << "a new request, smaller than every nonce held";
  EXPECT_EQ(h.size(), NonceHistory::kCapacity);
  EXPECT_TRUE(h.seen(5)) << "the newest request was forgotten at once: it could be replayed";
  EXPECT_FALSE(h.remember(5));
  EXPECT_FALSE(h.seen(1000)) << "the oldest is the one forgotten";
  EXPECT_TRUE(h.seen(1001));
}

// Issue 24 item 7: the config digest message (docs/fleet.md "Config drift"):
// round trip (a section id this version does not know included), the
// health view's feature bits kept, and every bad entry malformed.
TEST(SyncCodec, ConfigDigestRoundTripAndBadEntries) {
  SyncKey k = key();
  const DigestEntry sent[] = {{1, 0x0123456789abcdefULL}, {8, 1}, {200, ~0ULL}};
  uint8_t out[kMaxMessage];
  size_t len = encodeConfigDigest(k, header(4), sent, 3, out, sizeof out);
  ASSERT_EQ(len, kHeaderSize + 3 * kDigestEntrySize + kMacSize);
  Header got;
  Record recs[kMaxRecords];
  DigestEntry back[kMaxDigestEntries];
  ASSERT_EQ(decode(k, out, len, got, recs, nullptr, nullptr, back), Status::kOk);
  EXPECT_EQ(got.type, MsgType::kConfigDigest);
  ASSERT_EQ(got.count, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back[i], sent[i]) << i;
  EXPECT_EQ(decode(k, out, len, got, recs), Status::kOk) << "checked without a place to put them";
  EXPECT_EQ(encodeConfigDigest(k, header(5), sent, kMaxDigestEntries + 1, out, sizeof out), 0u);
  std::vector<DigestEntry> many(kMaxDigestEntries, DigestEntry{3, 3});
  EXPECT_GT(encodeConfigDigest(k, header(5), many.data(), many.size(), out, sizeof out), 0u);

  for (int bad = 0; bad < 3; ++bad) {
    size_t l = encodeConfigDigest(k, header(6), sent, 1, out, sizeof out);
    uint8_t* p = out + kHeaderSize;
    if (bad == 0) p[0] = 0;  // section 0
    if (bad == 1) p[1] = 1;  // reserved
    if (bad == 2) p[3] = 0x80;
    auto m = k.mac(out, l - kMacSize);
    ASSERT_TRUE(m);
    std::memcpy(out + l - kMacSize, m->data(), kMacSize);
    EXPECT_EQ(decode(k, out, l, got, recs, nullptr, nullptr, back), Status::kMalformed) << bad;
  }
  // 33 entries: more than a receiver takes, malformed before the MAC is looked at.
  std::vector<uint8_t> big(kHeaderSize + 33 * kDigestEntrySize + kMacSize, 0);
  encodeConfigDigest(k, header(7), many.data(), 1, big.data(), big.size());
  big[6] = 33;
  EXPECT_EQ(decode(k, big.data(), big.size(), got, recs), Status::kMalformed);

  // A health view's nonce carries the sender's feature bits, kept as sent.
  Header h = header(8);
  h.nonce = kFeatureConfigDigest;
  HealthEntry e{0x0a000001, 1, true};
  len = encodeHealth(k, h, &e, 1, out, sizeof out);
  HealthEntry view[kMaxHealthEntries];
  ASSERT_EQ(decode(k, out, len, got, recs, nullptr, view), Status::kOk);
  EXPECT_EQ(got.nonce, kFeatureConfigDigest);
}

// An appliance's bypass travels in the record (kFeatureRecordFlags): its flags in
// the byte that was reserved, a timed one's seconds left in two of the last
// four; anything else there is malformed, as before (an older gwlbd refuses
// every flag, which is why only peers that said kFeatureRecordFlags get them).
TEST(SyncCodec, BypassFlagsRoundTripAndBadValues) {
  SyncKey k = key();
  Header got;
  Record recs[kMaxRecords];
  Record in[3] = {record(1), record(2), record(3)};
  for (Record& r : in) r.opened = false;  // the bypass bits alone (RecordFlagsByte: the opening bit)
  in[1].bypass = kRecordBypassed;  // for the flow's life
  in[2].bypass = kRecordBypassed | kRecordBypassTimed;
  in[2].bypass_left_s = 3600;
  uint8_t out[kMaxMessage];
  size_t len = encode(k, header(1), in, 3, out, sizeof out);
  ASSERT_GT(len, 0u);
  // The flags sit where an older decoder wants zeros.
  EXPECT_EQ(out[kHeaderSize + 65], 0);
  EXPECT_EQ(out[kHeaderSize + kRecordSize + 65], kRecordBypassed);
  EXPECT_EQ(out[kHeaderSize + 2 * kRecordSize + 65], 3);
  EXPECT_EQ(out[kHeaderSize + 2 * kRecordSize + 74] | out[kHeaderSize + 2 * kRecordSize + 75] << 8, 3600);
  ASSERT_EQ(decode(k, out, len, got, recs), Status::kOk);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(sameRecord(recs[i], in[i])) << i;
    EXPECT_EQ(recs[i].bypass, in[i].bypass) << i;
    EXPECT_EQ(recs[i].bypass_left_s, in[i].bypass_left_s) << i;
  }
  auto expectMalformed = [&](Record r, const char* what) {
    uint8_t o[kMaxMessage];
    size_t n = encode(k, header(1), &r, 1, o, sizeof o);
    ASSERT_GT(n, 0u);
    EXPECT_EQ(decode(k, o, n, got, recs), Status::kMalformed) << what;
  };
  Record r = record(1);
  r.bypass = kRecordBypassTimed;
  r.bypass_left_s = 5;
  expectMalformed(r, "timed without bypassed");
  r.bypass = 8;
  expectMalformed(r, "unknown flag");
  r.bypass = kRecordBypassed | kRecordBypassTimed;
  r.bypass_left_s = 0;
  expectMalformed(r, "timed with no seconds left");
}

// Flows on IPv6 appliances: a batch holding one goes as kRecords6 (or
// kTransfer6), 108-byte records naming the appliance and the previous one
// by IPv6 address beside IPv4 ones; one family per appliance, else malformed.
TEST(SyncCodec, Ipv6AppliancesTravelInWideRecords) {
  SyncKey k = key();
  const std::array<uint8_t, 16> a6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a};
  std::array<uint8_t, 16> b6 = a6;
  b6[15] = 0x0b;
  std::vector<Record> recs{record(0), record(1), record(2)};
  recs[1].appliance = 0, recs[1].appliance6 = a6;   // IPv6, moved from an IPv4 one
  recs[2].appliance = 0, recs[2].appliance6 = b6;   // IPv6, moved from an IPv6 one
  recs[2].prev_appliance = 0, recs[2].prev_appliance6 = a6, recs[2].prev_cookie = 9;
  uint8_t out[kMaxMessage];
  for (MsgType t : {MsgType::kRecords, MsgType::kTransfer}) {
    Header h = header(1);
    h.type = t;
    size_t len = encode(k, h, recs.data(), recs.size(), out, sizeof out);
    ASSERT_EQ(len, kHeaderSize + 3 * kRecord6Size + kMacSize);
    Header got;
    Record back[kMaxRecords];
    back[0].appliance6 = b6;  // left over from an earlier message: cleared
    ASSERT_EQ(decode(k, out, len, got, back), Status::kOk);
    EXPECT_EQ(got.type, t == MsgType::kRecords ? MsgType::kRecords6 : MsgType::kTransfer6);
    EXPECT_TRUE(t == MsgType::kRecords ? isRecords(got.type) : isTransfer(got.type));
    ASSERT_EQ(got.count, 3);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(sameRecord(back[i], recs[i])) << i;
      EXPECT_EQ(back[i].appliance6, recs[i].appliance6) << i;
      EXPECT_EQ(back[i].prev_appliance6, recs[i].prev_appliance6) << i;
    }
    EXPECT_FALSE(back[0].wide());
    // A narrow message after it leaves no IPv6 address behind.
    auto m = message(k, header(2), 1);
    ASSERT_EQ(decode(k, m.data(), m.size(), got, back), Status::kOk);
    EXPECT_EQ(got.type, MsgType::kRecords);
    EXPECT_FALSE(back[0].wide());
  }
  // An appliance in both families, in neither, a previous one in both:
  // malformed under a valid MAC.
  for (int bad = 0; bad < 3; ++bad) {
    size_t len = encode(k, header(3), recs.data(), recs.size(), out, sizeof out);
    uint8_t* p = out + kHeaderSize + kRecord6Size;  // recs[1]
    if (bad == 0) p[44] = 1;
    if (bad == 1) std::memset(p + kRecordSize, 0, 16);
    if (bad == 2) p = out + kHeaderSize + 2 * kRecord6Size, p[52] = 1;
    auto m = k.mac(out, len - kMacSize);
    ASSERT_TRUE(m);
    std::memcpy(out + len - kMacSize, m->data(), kMacSize);
    Header got;
    Record back[kMaxRecords];
    EXPECT_EQ(decode(k, out, len, got, back), Status::kMalformed) << bad;
  }
  // Room: 11 wide records a message (17 narrow ones).
  EXPECT_EQ(kMaxRecords6, 11u);
  std::vector<Record> many(kMaxRecords6 + 1, recs[1]);
  EXPECT_EQ(encode(k, header(4), many.data(), kMaxRecords6 + 1, out, sizeof out), 0u);
  EXPECT_EQ(encode(k, header(4), many.data(), kMaxRecords6, out, sizeof out),
            kHeaderSize + kMaxRecords6 * kRecord6Size + kMacSize);
  std::vector<Record> narrow(kMaxRecords, record(0));
  EXPECT_TRUE(fits(narrow.data(), kMaxRecords6 - 1, recs[1]));
  EXPECT_FALSE(fits(narrow.data(), kMaxRecords6, recs[1]));
  EXPECT_TRUE(fits(narrow.data(), kMaxRecords6, recs[0]));
  EXPECT_FALSE(fits(narrow.data(), kMaxRecords, recs[0]));
  EXPECT_FALSE(fits(many.data(), kMaxRecords6, recs[0]));
}
