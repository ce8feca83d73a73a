// Fuzz target 10: the flow sync receiver's decoder (common/sync_codec.cc).
// Any bytes are one UDP datagram (or warm-start frame) that reached the sync
// port. Each input is decoded twice under the fixed test key (fleet secret
// 00112233445566778899aabbccddeeff, the corpus's):
//  1. as it is: with a MAC that does not verify it is kAuthFailed or
//     kMalformed, never kOk; the verdict does not depend on anything past the
//     length the header announces (decode reads only d[0..len));
//  2. re-signed: the last 16 bytes replaced by the MAC of what precedes them,
//     as a sender holding the secret would, so the record checks behind the
//     MAC are reached: the verdict is never kAuthFailed; kOk gives a count
//     within the maximum, records that are flow keys of family 4 or 6 with a
//     known kind, an appliance and a cookie; health views and config digests
//     (issue 24 item 7: section not 0, at most 32) have valid entries; and
//     re-encoding the decoded header and body gives back exactly the input's
//     bytes (a health view's nonce, its feature bits, included).
// Every accepted header is also run through a ReplayWindow: a message
// accepted once is a replay the second time; and through the receivers'
// sender check (senderOf, before the window): a header is this node's own
// exactly when it carries the receiver's node id and epoch, another node's
// under the receiver's name when only the node id matches, a peer's
// otherwise; a receiver that is the fuzz node ("gw-fuzz", epoch 7, the
// corpus's from_self_* seeds) refuses exactly the headers with its node id.
#include <array>
#include <cstring>
#include <vector>

#include "common/sync_codec.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;
using namespace gwlb::sync;

namespace {

const SyncKey& testKey() {
  static const SyncKey k = SyncKey::fromHashKey(0x0011223344556677ULL, 0x8899aabbccddeeffULL);
  return k;
}

const uint64_t kFuzzNode = nodeId("gw-fuzz");
constexpr uint64_t kFuzzEpoch = 7;

void checkSender(const Header& h) {
  FUZZ_CHECK(senderOf(h, h.node, h.epoch) == Sender::kThisNode, "its own message not recognised");
  FUZZ_CHECK(senderOf(h, h.node, h.epoch + 1) == Sender::kSameName, "same name not recognised");
  FUZZ_CHECK(senderOf(h, h.node ^ 1, h.epoch) == Sender::kPeer, "another node's refused");
  Sender s = senderOf(h, kFuzzNode, kFuzzEpoch);
  FUZZ_CHECK((s == Sender::kPeer) == (h.node != kFuzzNode), "node id %llx seen as %s",
             (unsigned long long)h.node, toString(s));
  if (s == Sender::kThisNode) FUZZ_CHECK(h.epoch == kFuzzEpoch, "another epoch taken as our own");
}

void checkReplay(const Header& h) {
  // The replay window: what it accepted once it refuses the second time.
  ReplayWindow w;
  if (w.check(h, h.time_ms) == ReplayWindow::Verdict::kOk) {
    w.accept(h);
    FUZZ_CHECK(w.check(h, h.time_ms) == ReplayWindow::Verdict::kReplayed, "accepted twice");
  }
}

void checkAccepted(const uint8_t* d, size_t size, const Header& h, const Record* recs,
                   uint64_t end_total, const HealthEntry* health, const DigestEntry* digests) {
  if (h.type == MsgType::kConfigDigest) {
    FUZZ_CHECK(h.count <= kMaxDigestEntries, "digest count %u", unsigned(h.count));
    for (size_t i = 0; i < h.count; ++i)
      FUZZ_CHECK(digests[i].section != 0, "digest entry %zu: section 0", i);
    std::vector<uint8_t> again(kMaxMessage);
    size_t n = encodeConfigDigest(testKey(), h, digests, h.count, again.data(), again.size());
    FUZZ_CHECK(n == size && std::memcmp(again.data(), d, size) == 0,
               "re-encoding digests gives %zu bytes (input %zu) or other bytes", n, size);
    checkReplay(h);
    return;
  }
  if (h.type == MsgType::kHealth) {
    FUZZ_CHECK(h.count <= kMaxHealthEntries, "health count %u", unsigned(h.count));
    for (size_t i = 0; i < h.count; ++i)
      FUZZ_CHECK(health[i].appliance != 0 && health[i].state <= kMaxHealthState,
                 "health entry %zu: fields", i);
    std::vector<uint8_t> again(kMaxMessage);
    size_t n = encodeHealth(testKey(), h, health, h.count, again.data(), again.size());
    FUZZ_CHECK(n == size && std::memcmp(again.data(), d, size) == 0,
               "re-encoding health gives %zu bytes (input %zu) or other bytes", n, size);
    checkSender(h);
    checkReplay(h);
    return;
  }
  const bool wide = h.type == MsgType::kRecords6 || h.type == MsgType::kTransfer6;
  FUZZ_CHECK(h.count <= (wide ? kMaxRecords6 : kMaxRecords), "count %u", unsigned(h.count));
  for (size_t i = 0; i < h.count; ++i) {
    const Record& r = recs[i];
    FUZZ_CHECK(r.key.kind == KeyKind::kFlow, "record %zu: not a flow key", i);
    FUZZ_CHECK(r.key.family == 4 || r.key.family == 6, "record %zu: family %u", i,
               unsigned(r.key.family));
    FUZZ_CHECK(uint8_t(r.kind) >= 1 && uint8_t(r.kind) <= 4, "record %zu: kind %u", i,
               unsigned(r.kind));
    // One family names the appliance (IPv6 only in kRecords6 / kTransfer6).
    const bool v6 = r.appliance6 != std::array<uint8_t, 16>{};
    FUZZ_CHECK((r.appliance != 0) != v6 && r.cookie != 0 && r.first_dir <= 1, "record %zu: fields", i);
    FUZZ_CHECK(!r.wide() || wide,
               "record %zu: an IPv6 appliance in a narrow message", i);
  }
  std::vector<uint8_t> again(kMaxMessage);
  size_t n = encode(testKey(), h, recs, h.count, again.data(), again.size(), end_total);
  FUZZ_CHECK(n == size && std::memcmp(again.data(), d, size) == 0,
             "re-encoding gives %zu bytes (input %zu) or other bytes", n, size);
  checkSender(h);
  checkReplay(h);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t size) {
  Header h;
  Record recs[kMaxRecords];
  HealthEntry health[kMaxHealthEntries];
  DigestEntry digests[kMaxDigestEntries];
  uint64_t total = 0;
  Status st = decode(testKey(), d, size, h, recs, &total, health, digests);
  if (st == Status::kOk) checkAccepted(d, size, h, recs, total, health, digests);  // a seed signed for real

  if (size < kMacSize || size > kMaxMessage) {
    FUZZ_CHECK(st == Status::kMalformed, "a %zu-byte input was not malformed", size);
    return 0;
  }
  std::vector<uint8_t> s(d, d + size);
  auto m = testKey().mac(s.data(), size - kMacSize);
  FUZZ_CHECK(m.has_value(), "the test key gave no MAC");
  bool was_signed = std::memcmp(m->data(), d + size - kMacSize, kMacSize) == 0;
  FUZZ_CHECK(was_signed || st != Status::kOk, "accepted with a MAC that does not verify");
  std::memcpy(s.data() + size - kMacSize, m->data(), kMacSize);
  Header h2;
  Status st2 = decode(testKey(), s.data(), size, h2, recs, &total, health, digests);
  FUZZ_CHECK(st2 != Status::kAuthFailed, "a re-signed input failed authentication");
  if (was_signed) FUZZ_CHECK(st2 == st, "the same bytes decoded differently");
  if (st2 == Status::kOk) checkAccepted(s.data(), size, h2, recs, total, health, digests);
  return 0;
}
