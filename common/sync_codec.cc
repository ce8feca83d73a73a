#include "common/sync_codec.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace gwlb::sync {
namespace {

constexpr char kKeyLabel[] = "gwlb flow sync v1";

void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint16_t get16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }
uint32_t get32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// SHA-256 of two pieces; false when OpenSSL fails.
bool sha256(const uint8_t* a, size_t an, const uint8_t* b, size_t bn, uint8_t out[32]) {
  MdCtx c(EVP_MD_CTX_new());
  unsigned len = 0;
  return c && EVP_DigestInit_ex(c.get(), EVP_sha256(), nullptr) == 1 &&
         EVP_DigestUpdate(c.get(), a, an) == 1 && (bn == 0 || EVP_DigestUpdate(c.get(), b, bn) == 1) &&
         EVP_DigestFinal_ex(c.get(), out, &len) == 1 && len == 32;
}

// Plain HMAC-SHA256 (RFC 2104) with a key of at most 64 bytes.
bool hmac(const uint8_t* key, size_t key_len, const uint8_t* msg, size_t len, uint8_t out[32]) {
  uint8_t ipad[64] = {}, opad[64] = {}, inner[32];
  std::memcpy(ipad, key, key_len);
  std::memcpy(opad, key, key_len);
  for (int i = 0; i < 64; ++i) ipad[i] ^= 0x36, opad[i] ^= 0x5c;
  return sha256(ipad, 64, msg, len, inner) && sha256(opad, 64, inner, 32, out);
}

void putKey(uint8_t* p, const FlowKey& k) {
  std::memcpy(p, k.a, 16);
  std::memcpy(p + 16, k.b, 16);
  put16(p + 32, k.port_a);
  put16(p + 34, k.port_b);
  p[36] = k.proto;
  p[37] = k.family;
  p[38] = k.listener;
  p[39] = uint8_t(k.kind);
}

void getKey(const uint8_t* p, FlowKey& k) {
  std::memset(&k, 0, sizeof k);
  std::memcpy(k.a, p, 16);
  std::memcpy(k.b, p + 16, 16);
  k.port_a = get16(p + 32);
  k.port_b = get16(p + 34);
  k.proto = p[36];
  k.family = p[37];
  k.listener = p[38];
  k.kind = KeyKind(p[39]);
}

void putRecord(uint8_t* p, const Record& r) {
  putKey(p, r.key);
  put32(p + 40, r.flow_hash);
  put32(p + 44, r.appliance);
  put32(p + 48, r.cookie);
  put32(p + 52, r.prev_appliance);
  put32(p + 56, r.prev_cookie);
  put16(p + 60, r.moves);
  p[62] = r.move_reason;
  p[63] = r.first_dir;
  p[64] = uint8_t(r.kind);
  p[65] = uint8_t(r.bypass | (r.opened ? kRecordOpened : 0));
  put32(p + 66, r.idle_for_ms);
  put32(p + 70, r.age_ms);
  put16(p + 74, r.bypass_timed() ? r.bypass_left_s : 0);
}

// A wide record: the 76 bytes, then the two IPv6 addresses.
void putRecord6(uint8_t* p, const Record& r) {
  putRecord(p, r);
  std::memcpy(p + kRecordSize, r.appliance6.data(), 16);
  std::memcpy(p + kRecordSize + 16, r.prev_appliance6.data(), 16);
}

bool zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i]) return false;
  return true;
}

// A record as a flow record of a known kind, or false.
bool getRecord(const uint8_t* p, Record& r) {
  getKey(p, r.key);
  r.appliance6 = {};
  r.prev_appliance6 = {};
  if (p[39] != uint8_t(KeyKind::kFlow)) return false;  // fragment entries are never synced
  if (r.key.family == 4) {
    if (!zero(p + 4, 12) || !zero(p + 20, 12)) return false;
  } else if (r.key.family != 6) {
    return false;
  }
  r.flow_hash = get32(p + 40);
  r.appliance = get32(p + 44);
  r.cookie = get32(p + 48);
  r.prev_appliance = get32(p + 52);
  r.prev_cookie = get32(p + 56);
  r.moves = get16(p + 60);
  r.move_reason = p[62];
  r.first_dir = p[63];
  r.kind = RecordKind(p[64]);
  r.idle_for_ms = get32(p + 66);
  r.age_ms = get32(p + 70);
  r.bypass = p[65];
  r.bypass_left_s = get16(p + 74);
  if (p[64] < uint8_t(RecordKind::kNew) || p[64] > uint8_t(RecordKind::kTransfer)) return false;
  if (r.first_dir > 1) return false;
  // Flags: the bypass bits (timed only with bypassed, seconds left only when
  // timed) and kRecordOpened; no other bit.
  if ((p[65] & ~(kRecordBypassed | kRecordBypassTimed | kRecordOpened)) != 0) return false;
  r.bypass = p[65] & (kRecordBypassed | kRecordBypassTimed);
  r.opened = (p[65] & kRecordOpened) != 0;
  if (r.bypass == kRecordBypassTimed) return false;
  if (r.bypass_timed() ? r.bypass_left_s == 0 : r.bypass_left_s != 0) return false;
  return r.appliance != 0 && r.cookie != 0;
}

// A wide record: one family names the appliance, at most one the previous.
bool getRecord6(const uint8_t* p, Record& r) {
  const bool v6 = !zero(p + kRecordSize, 16), prev6 = !zero(p + kRecordSize + 16, 16);
  if (v6 == (get32(p + 44) != 0) || (prev6 && get32(p + 52) != 0)) return false;
  // getRecord's checks, a stand-in IPv4 field for an IPv6 appliance.
  uint8_t narrow[kRecordSize];
  std::memcpy(narrow, p, kRecordSize);
  if (v6) put32(narrow + 44, 1);
  if (!getRecord(narrow, r)) return false;
  if (v6) r.appliance = 0;
  std::memcpy(r.appliance6.data(), p + kRecordSize, 16);
  std::memcpy(r.prev_appliance6.data(), p + kRecordSize + 16, 16);
  return true;
}

size_t bodySize(MsgType t, size_t count) {
  switch (t) {
    case MsgType::kRecords:
    case MsgType::kTransfer: return count * kRecordSize;
    case MsgType::kWarmEnd: return kWarmEndBody;
    case MsgType::kWarmRequest: return 0;
    case MsgType::kHealth: return count * kHealthEntrySize;
    case MsgType::kConfigDigest: return count * kDigestEntrySize;
    case MsgType::kRecords6:
    case MsgType::kTransfer6: return count * kRecord6Size;
  }
  return 0;
}

bool knownType(uint8_t t) { return t >= 1 && t <= 8; }

bool wideType(MsgType t) { return t == MsgType::kRecords6 || t == MsgType::kTransfer6; }

size_t maxCount(MsgType t) {
  switch (t) {
    case MsgType::kRecords:
    case MsgType::kTransfer: return kMaxRecords;
    case MsgType::kRecords6:
    case MsgType::kTransfer6: return kMaxRecords6;
    case MsgType::kHealth: return kMaxHealthEntries;
    case MsgType::kConfigDigest: return kMaxDigestEntries;
    default: return 0;
  }
}

bool getHealth(const uint8_t* p, HealthEntry& e) {
  e.appliance = get32(p);
  e.state = p[4];
  e.in_service = p[5] == 1;
  return e.appliance != 0 && e.state <= kMaxHealthState && p[5] <= 1 && p[6] == 0 && p[7] == 0;
}

bool getDigest(const uint8_t* p, DigestEntry& e) {
  e.section = p[0];
  e.digest = get64(p + 4);
  return e.section != 0 && p[1] == 0 && p[2] == 0 && p[3] == 0;
}

}  // namespace

const char* toString(RecordKind k) {
  switch (k) {
    case RecordKind::kNew: return "new";
    case RecordKind::kChanged: return "changed";
    case RecordKind::kRefresh: return "refresh";
    case RecordKind::kTransfer: return "transfer";
  }
  return "?";
}

const char* toString(Status s) {
  switch (s) {
    case Status::kOk: return "ok";
    case Status::kMalformed: return "malformed";
    case Status::kAuthFailed: return "auth_failed";
  }
  return "?";
}

const char* toString(ReplayWindow::Verdict v) {
  switch (v) {
    case ReplayWindow::Verdict::kOk: return "ok";
    case ReplayWindow::Verdict::kReplayed: return "replayed";
    case ReplayWindow::Verdict::kStale: return "stale";
  }
  return "?";
}

SyncKey::SyncKey(const uint8_t secret[16]) {
  uint8_t k[32];
  if (!hmac(secret, 16, reinterpret_cast<const uint8_t*>(kKeyLabel), sizeof kKeyLabel - 1, k))
    throw std::runtime_error("fleet sync: OpenSSL SHA-256 failed");
  uint8_t ipad[64], opad[64];
  std::memset(ipad, 0x36, 64);
  std::memset(opad, 0x5c, 64);
  for (int i = 0; i < 32; ++i) ipad[i] ^= k[i], opad[i] ^= k[i];
  // The states after the padded key's block, copied for every message.
  auto prepared = [](const uint8_t* pad) {
    std::shared_ptr<EVP_MD_CTX> c(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!c || EVP_DigestInit_ex(c.get(), EVP_sha256(), nullptr) != 1 ||
        EVP_DigestUpdate(c.get(), pad, 64) != 1)
      throw std::runtime_error("fleet sync: OpenSSL SHA-256 failed");
    return c;
  };
  inner_ = prepared(ipad);
  outer_ = prepared(opad);
}

SyncKey SyncKey::fromHashKey(uint64_t k0, uint64_t k1) {
  uint8_t s[16];
  for (int i = 0; i < 8; ++i) {
    s[i] = uint8_t(k0 >> (56 - 8 * i));
    s[8 + i] = uint8_t(k1 >> (56 - 8 * i));
  }
  return SyncKey(s);
}

namespace {
thread_local bool tl_fail_macs = false;
}

void test_hooks::failMacs(bool on) { tl_fail_macs = on; }

std::optional<std::array<uint8_t, kMacSize>> SyncKey::mac(const uint8_t* data, size_t len) const {
  if (!inner_ || tl_fail_macs) return std::nullopt;
  // One scratch context per thread, reused (no allocation per message).
  thread_local MdCtx work(EVP_MD_CTX_new());
  uint8_t inner[32], full[32];
  unsigned n = 0;
  // A failure is no MAC at all: never a fixed value a forger could send.
  if (!work || EVP_MD_CTX_copy_ex(work.get(), inner_.get()) != 1 ||
      EVP_DigestUpdate(work.get(), data, len) != 1 ||
      EVP_DigestFinal_ex(work.get(), inner, &n) != 1 ||
      EVP_MD_CTX_copy_ex(work.get(), outer_.get()) != 1 ||
      EVP_DigestUpdate(work.get(), inner, 32) != 1 ||
      EVP_DigestFinal_ex(work.get(), full, &n) != 1)
    return std::nullopt;
  std::array<uint8_t, kMacSize> out;
  std::memcpy(out.data(), full, kMacSize);
  return out;
}

Sender senderOf(const Header& h, uint64_t self_node, uint64_t self_epoch) {
  if (h.node != self_node) return Sender::kPeer;
  return h.epoch == self_epoch ? Sender::kThisNode : Sender::kSameName;
}

const char* toString(Sender s) {
  switch (s) {
    case Sender::kPeer: return "peer";
    case Sender::kThisNode: return "this node";
    case Sender::kSameName: return "another node with this node's name";
  }
  return "?";
}

bool fits(const Record* recs, size_t n, const Record& next) {
  const bool wide = next.wide() || std::any_of(recs, recs + n, [](const Record& r) { return r.wide(); });
  return n < (wide ? kMaxRecords6 : kMaxRecords);
}

uint64_t nodeId(const std::string& node_name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : node_name) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

namespace {
void putHeader(uint8_t* out, const Header& h) {
  put32(out, kMagic);
  out[4] = kVersion;
  out[5] = uint8_t(h.type);
  put16(out + 6, h.count);
  put64(out + 8, h.node);
  put64(out + 16, h.epoch);
  put64(out + 24, h.seq);
  put64(out + 32, h.time_ms);
  put64(out + 40, h.nonce);
}

// Writes the MAC of [out, end) at end. False (nothing to send) when no MAC
// can be computed: a message is never sent with a tag that is not its MAC.
bool seal(const SyncKey& key, uint8_t* out, uint8_t* end) {
  auto m = key.mac(out, size_t(end - out));
  if (!m) return false;
  std::memcpy(end, m->data(), kMacSize);
  return true;
}

// The frame of a message of n fixed-size entries: header, entries written
// by put(p, i), MAC. Its size, or 0 when it does not fit cap or cannot be sealed.
template <class Put>
size_t frame(const SyncKey& key, Header h, size_t n, size_t entry_size, uint8_t* out, size_t cap,
             Put put) {
  size_t total = kHeaderSize + n * entry_size + kMacSize;
  if (total > cap) return 0;
  h.count = uint16_t(n);
  putHeader(out, h);
  uint8_t* p = out + kHeaderSize;
  for (size_t i = 0; i < n; ++i, p += entry_size) put(p, i);
  return seal(key, out, p) ? total : 0;
}
}  // namespace

size_t encodeHealth(const SyncKey& key, Header h, const HealthEntry* e, size_t n, uint8_t* out,
                    size_t cap) {
  if (n > kMaxHealthEntries) return 0;
  h.type = MsgType::kHealth;
  return frame(key, h, n, kHealthEntrySize, out, cap, [e](uint8_t* p, size_t i) {
    put32(p, e[i].appliance);
    p[4] = e[i].state;
    p[5] = e[i].in_service ? 1 : 0;
    p[6] = p[7] = 0;
  });
}

size_t encodeConfigDigest(const SyncKey& key, Header h, const DigestEntry* e, size_t n,
                          uint8_t* out, size_t cap) {
  if (n > kMaxDigestEntries) return 0;
  h.type = MsgType::kConfigDigest;
  return frame(key, h, n, kDigestEntrySize, out, cap, [e](uint8_t* p, size_t i) {
    p[0] = e[i].section;
    p[1] = p[2] = p[3] = 0;
    put64(p + 4, e[i].digest);
  });
}

size_t encode(const SyncKey& key, Header h, const Record* recs, size_t n, uint8_t* out, size_t cap,
              uint64_t end_total) {
  bool has_records = isRecords(h.type) || isTransfer(h.type);
  if (!has_records) n = 0;
  if (has_records && std::any_of(recs, recs + n, [](const Record& r) { return r.wide(); }))
    h.type = isRecords(h.type) ? MsgType::kRecords6 : MsgType::kTransfer6;
  const bool wide = wideType(h.type);
  if (n > maxCount(h.type) && has_records) return 0;
  size_t body = bodySize(h.type, n);
  size_t total = kHeaderSize + body + kMacSize;
  if (total > cap) return 0;
  h.count = uint16_t(n);
  putHeader(out, h);
  uint8_t* p = out + kHeaderSize;
  for (size_t i = 0; i < n; ++i, p += wide ? kRecord6Size : kRecordSize)
    wide ? putRecord6(p, recs[i]) : putRecord(p, recs[i]);
  if (h.type == MsgType::kWarmEnd) put64(p, end_total), p += kWarmEndBody;
  return seal(key, out, p) ? total : 0;
}

Status decode(const SyncKey& key, const uint8_t* d, size_t len, Header& h, Record* recs,
              uint64_t* end_total, HealthEntry* health, DigestEntry* digests) {
  if (len < kHeaderSize + kMacSize || len > kMaxMessage) return Status::kMalformed;
  if (get32(d) != kMagic || d[4] != kVersion || !knownType(d[5])) return Status::kMalformed;
  h.type = MsgType(d[5]);
  h.count = get16(d + 6);
  if (h.count > maxCount(h.type)) return Status::kMalformed;
  size_t body = bodySize(h.type, h.count);
  if (len != kHeaderSize + body + kMacSize) return Status::kMalformed;
  auto m = key.mac(d, kHeaderSize + body);
  if (!m || CRYPTO_memcmp(m->data(), d + kHeaderSize + body, kMacSize) != 0)
    return Status::kAuthFailed;
  h.node = get64(d + 8);
  h.epoch = get64(d + 16);
  h.seq = get64(d + 24);
  h.time_ms = get64(d + 32);
  h.nonce = get64(d + 40);
  const uint8_t* p = d + kHeaderSize;
  if (h.type == MsgType::kHealth) {
    for (size_t i = 0; i < h.count; ++i, p += kHealthEntrySize) {
      HealthEntry e;
      if (!getHealth(p, e)) return Status::kMalformed;
      if (health) health[i] = e;
    }
    return Status::kOk;
  }
  if (h.type == MsgType::kConfigDigest) {
    for (size_t i = 0; i < h.count; ++i, p += kDigestEntrySize) {
      DigestEntry e;
      if (!getDigest(p, e)) return Status::kMalformed;
      if (digests) digests[i] = e;
    }
    return Status::kOk;
  }
  const bool wide = wideType(h.type);
  for (size_t i = 0; i < h.count; ++i, p += wide ? kRecord6Size : kRecordSize)
    if (!(wide ? getRecord6(p, recs[i]) : getRecord(p, recs[i]))) return Status::kMalformed;
  if (h.type == MsgType::kWarmEnd && end_total) *end_total = get64(p);
  return Status::kOk;
}

ReplayWindow::Verdict ReplayWindow::check(const Header& h, uint64_t now_ms) const {
  int64_t skew = int64_t(h.time_ms - now_ms);
  if (skew > kMaxClockSkewMs || skew < -kMaxClockSkewMs) return Verdict::kStale;
  if (h.seq == 0) return Verdict::kReplayed;  // senders count from 1
  if (!have_) return Verdict::kOk;
  if (h.epoch != epoch_) {
    for (size_t i = 0; i < n_retired_; ++i)
      if (retired_[i] == h.epoch) return Verdict::kReplayed;
    // Another epoch older than what we have: a replay from before a restart.
    return h.time_ms >= newest_ms_ ? Verdict::kOk : Verdict::kReplayed;
  }
  if (h.seq > top_) return Verdict::kOk;
  uint64_t back = top_ - h.seq;
  if (back >= 64) return Verdict::kReplayed;
  return (bits_ >> back) & 1 ? Verdict::kReplayed : Verdict::kOk;
}

void ReplayWindow::accept(const Header& h) {
  if (!have_ || h.epoch != epoch_) {
    if (have_) {
      retired_[next_retired_++ % kRetired] = epoch_;
      if (n_retired_ < kRetired) ++n_retired_;
    }
    have_ = true;
    epoch_ = h.epoch;
    top_ = h.seq;
    bits_ = 1;
    newest_ms_ = h.time_ms;
    return;
  }
  if (h.seq > top_) {
    uint64_t shift = h.seq - top_;
    bits_ = shift >= 64 ? 1 : (bits_ << shift) | 1;
    top_ = h.seq;
  } else {
    bits_ |= 1ULL << (top_ - h.seq);
  }
  if (h.time_ms > newest_ms_) newest_ms_ = h.time_ms;
}

bool NonceHistory::remember(uint64_t nonce) {
  if (!set_.insert(nonce).second) return false;
  order_.push_back(nonce);
  if (order_.size() > kCapacity) {
    set_.erase(order_.front());
    order_.pop_front();
  }
  return true;
}

}  // namespace gwlb::sync
