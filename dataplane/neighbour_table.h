// Interned L2 neighbours: where a flow direction's packets came from (ingress
// port, VLAN ID, the neighbour's MAC, our MAC). A flow entry keeps, per
// direction, a 16-bit index into this table instead of the 16 bytes of L2
// (a flow entry stays one cache line); a gateway sees few distinct neighbours, so every flow behind
// one router shares one entry.
//
// Anything on a router-facing segment can send frames to our MAC with made-up
// source MACs: every distinct (MAC, VLAN ID, port) it forwards
// takes a slot. So the table is bounded three ways: a port holds at most
// kPortLimit neighbours (a flood on one port leaves the rest to the others),
// intern() looks at most kMaxProbe slots from an L2's home (its work per
// packet is bounded, and the home is a keyed hash the sender cannot aim), and
// a neighbour no flow refers to any more is freed by the control thread
// (sweepBegin/mark/sweepEnd, run with every flow expiry pass), behind two
// grace periods of the workers' RCU variable. docs/architecture.md
// "Flow entries: concurrency rules" (R2) gives the states and why a flow's
// index never names a freed or reused slot.
//
// Threads: workers intern (lock-free) and read; the control thread sweeps.
// The words of a slot are immutable while it is live (ready, retiring,
// freeing), so a reader needs no sequence lock.
#pragma once

#include <sys/mman.h>
#include <sys/random.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/net_types.h"

struct rte_rcu_qsbr;

namespace gwlb::dp {

// Where a direction's packets last came from, decoded (NeighbourTable::read).
struct DirL2 {
  uint16_t port = 0;
  bool has_vlan = false;
  uint16_t vlan_tci = 0;  // the VLAN ID only: returns leave with priority 0
  uint16_t vlan_tpid = 0;
  MacAddr peer_mac;  // source MAC of the frame as it arrived
  MacAddr our_mac;   // destination MAC of the frame as it arrived
};

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "neighbours pack MACs little-endian");

class NeighbourTable {
 public:
  // Slots; indexes handed out are 1..kSlots (0 = none), so they fit 16 bits.
  static constexpr uint32_t kSlots = 1u << 15;
  // Neighbours one ingress port may hold (a 4094-VLAN trunk with two routers
  // needs 8188); four flooded ports cannot fill the table.
  static constexpr uint32_t kPortLimit = 8192;
  // Slots intern() looks at from an L2's home slot.
  static constexpr uint32_t kMaxProbe = 64;
  static constexpr int kVlanShift = 56;

  // Anonymous zero pages (throws std::runtime_error when they cannot be
  // mapped; startup only): a table costs memory only for the neighbours seen.
  NeighbourTable() {
    map_ = mmap(nullptr, kMapBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map_ == MAP_FAILED) throw std::runtime_error("neighbour table: mmap failed");
    auto* base = static_cast<uint8_t*>(map_);
    peer_ = reinterpret_cast<uint64_t*>(base);
    self_ = reinterpret_cast<uint64_t*>(base + kSlots * 8);
    state_ = reinterpret_cast<std::atomic<uint8_t>*>(base + kSlots * 16);
    uint64_t seed[2] = {0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL};
    if (getrandom(seed, sizeof seed, 0) != ssize_t(sizeof seed)) {
      // Not fatal: the bounds above hold whatever the hash.
    }
    seed_[0] = seed[0];
    seed_[1] = seed[1];
  }
  ~NeighbourTable() { munmap(map_, kMapBytes); }
  NeighbourTable(const NeighbourTable&) = delete;
  NeighbourTable& operator=(const NeighbourTable&) = delete;

  // Packs a frame's L2 (frame: at least its 14-byte Ethernet header).
  // peer = peer MAC (bits 0..47) | VLAN ID (48..59; the priority bits of the
  //        tag, PCP and DEI, are not part of a neighbour)
  // self = our MAC (0..47) | ingress port (48..55) | VLAN kind (56..57: none, 802.1Q, 802.1ad)
  // False when the port or the TPID does not fit.
  static bool pack(const uint8_t* frame, uint16_t port, uint16_t vlan_tpid, uint16_t vlan_tci,
                   uint64_t& peer_word, uint64_t& self_word) noexcept {
    constexpr uint64_t kMac = (1ULL << 48) - 1;
    uint64_t dst, src;
    std::memcpy(&dst, frame, 8);
    // Bytes 4..11: the source MAC in the top six; shifted down, the top
    // bits are zero (as cheap as masking).
    std::memcpy(&src, frame + 4, 8);
    uint64_t kind = vlan_tpid == 0 ? 0 : vlan_tpid == 0x8100 ? 1 : vlan_tpid == 0x88A8 ? 2 : 3;
    if (kind == 3 || port > 0xFF) [[unlikely]]
      return false;
    peer_word = (src >> 16) | uint64_t(vlan_tci & 0x0FFF) << 48;
    self_word = (dst & kMac) | uint64_t(port) << 48 | kind << kVlanShift;
    return true;
  }

  // pack() for a frame without a tag (the common case: no TPID to classify).
  [[gnu::always_inline]] static bool packUntagged(const uint8_t* frame, uint16_t port, uint64_t& peer_word,
                                                  uint64_t& self_word) noexcept {
    constexpr uint64_t kMac = (1ULL << 48) - 1;
    uint64_t dst, src;
    std::memcpy(&dst, frame, 8);
    std::memcpy(&src, frame + 4, 8);
    if (port > 0xFF) [[unlikely]]
      return false;
    peer_word = src >> 16;
    self_word = (dst & kMac) | uint64_t(port) << 48;
    return true;
  }
  // Worker: true when index `idx` holds exactly this L2 (the common case of
  // a known direction: two loads and compares). `idx` is one a flow entry
  // holds: its slot is live (R2).
  bool holds(uint16_t idx, uint64_t peer_word, uint64_t self_word) const noexcept {
    if (idx == 0) return false;
    uint32_t s = uint32_t(idx) - 1;
    return peer_[s] == peer_word && self_[s] == self_word;
  }

  // Worker: true when `idx` is a ready slot (what intern() returns at once
  // for a match): a worker that interned an L2 earlier in its burst reuses
  // the index while this holds (R2: the words are those it interned).
  bool ready(uint16_t idx) const noexcept {
    return idx != 0 && idx <= kSlots && state_[idx - 1].load(std::memory_order_acquire) == kReady;
  }
  // Why intern() gave no index.
  enum class Refusal : uint8_t { kNone, kFull, kPortLimit };

  // Worker: the index of this L2, adding it when new; 0 when it cannot be
  // recorded (`why`: no free slot within kMaxProbe of its home, or its port
  // holds kPortLimit neighbours).
  // Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
  // the probe goes from the home slot past used slots to the first never-used
  // one; a match that is ready is returned, one that is retiring is revived
  // by a CAS (the sweep's CAS to freeing and this one exclude each other).
  // Without a match the first free or never-used slot seen is claimed by
  // CAS; a worker that loses that CAS starts again and finds the winner's
  // slot, so two workers interning one L2 agree on one index. A slot another
  // worker keeps busy past a short wait (preempted between its claim and its
  // ready store) is passed over: at worst the same L2 is interned twice (two
  // indexes that read alike; holds() compares the L2, not the index).
  uint16_t intern(uint64_t peer_word, uint64_t self_word, Refusal& why) noexcept {
    why = Refusal::kNone;
    const uint32_t home = homeSlot(peer_word, self_word);
    for (int attempt = 0; attempt < 4; ++attempt) {
      uint32_t claim = kNoSlot;
      uint8_t claim_state = kEmpty;
      for (uint32_t n = 0; n < kMaxProbe; ++n) {
        const uint32_t at = (home + n) & (kSlots - 1);
        uint8_t st = state_[at].load(std::memory_order_acquire);
        for (int spin = 0; st == kBusy && spin < kBusyWait; ++spin) {
          __builtin_ia32_pause();
          st = state_[at].load(std::memory_order_acquire);
        }
        if (st == kReady || st == kRetiring) {
          if (peer_[at] != peer_word || self_[at] != self_word) continue;
          if (st == kReady) return uint16_t(at + 1);
          if (state_[at].compare_exchange_strong(st, kReady, std::memory_order_acquire) ||
              st == kReady)
            return uint16_t(at + 1);
          continue;  // the sweep took it first (freeing): not this one
        }
        if ((st == kEmpty || st == kFree) && claim == kNoSlot) {
          claim = at;
          claim_state = st;
        }
        if (st == kEmpty) break;  // never used: the L2 is not further on
      }
      if (claim == kNoSlot) {
        why = Refusal::kFull;
        return 0;
      }
      std::atomic<uint32_t>& held = port_count_[(self_word >> 48) & 0xFF];
      if (held.load(std::memory_order_relaxed) >= kPortLimit) {
        why = Refusal::kPortLimit;
        return 0;
      }
      if (state_[claim].compare_exchange_strong(claim_state, kBusy, std::memory_order_acquire)) {
        held.fetch_add(1, std::memory_order_relaxed);
        peer_[claim] = peer_word;
        self_[claim] = self_word;
        state_[claim].store(kReady, std::memory_order_release);
        return uint16_t(claim + 1);
      }
      // Another worker claimed it (perhaps for this L2): look again.
    }
    why = Refusal::kFull;
    return 0;
  }

  // Any thread: the L2 at `idx` (an index read from a flow entry, whose
  // writer interned it with an acquire of its state). False for 0.
  // Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
  // the words are immutable while the slot is live; acquire the state, then read them.
  bool read(uint16_t idx, DirL2& out) const noexcept {
    uint64_t p, w;
    if (!words(idx, p, w)) return false;
    std::memcpy(out.peer_mac.b.data(), &p, 6);
    std::memcpy(out.our_mac.b.data(), &w, 6);
    out.vlan_tci = uint16_t(p >> 48);
    out.port = uint16_t((w >> 48) & 0xFF);
    uint64_t kind = (w >> kVlanShift) & 3;
    out.has_vlan = kind != 0;
    out.vlan_tpid = kind == 1 ? 0x8100 : kind == 2 ? 0x88A8 : 0;
    return true;
  }

  // Any thread: read() without the decoding, pack()'s two words (the return
  // path writes its Ethernet header from them).
  bool words(uint16_t idx, uint64_t& peer_word, uint64_t& self_word) const noexcept {
    if (idx == 0 || idx > kSlots) return false;
    uint32_t s = uint32_t(idx) - 1;
    if (!(state_[s].load(std::memory_order_acquire) & kLiveBit)) return false;
    peer_word = peer_[s];
    self_word = self_[s];
    return true;
  }
  // Control thread: how many neighbours are recorded (live slots).
  uint32_t count() const noexcept {
    uint32_t n = 0;
    for (uint32_t i = 0; i < kSlots; ++i)
      n += (state_[i].load(std::memory_order_relaxed) & kLiveBit) != 0;
    return n;
  }
  // Any thread: neighbours recorded for an ingress port (freed ones leave
  // this count when their slot is free again).
  uint32_t portCount(uint16_t port) const noexcept {
    return port < 256 ? port_count_[port].load(std::memory_order_relaxed) : 0;
  }
  // Control thread: neighbours freed since the table was made.
  uint64_t freed() const noexcept { return freed_; }

  // Control thread: one collection, around a walk of every used flow slot
  // (FlowTable::expire). sweepBegin() notes whether the grace periods of
  // the last batches have ended (before the walk reads an index); mark()
  // takes each index an entry holds; sweepEnd() then frees what the last
  // batch left unreferenced and retires what no entry holds now.
  void sweepBegin(rte_rcu_qsbr* qsbr) noexcept;
  void mark(uint16_t idx) noexcept {
    if (idx != 0 && idx <= kSlots) marks_[(idx - 1) >> 6] |= 1ULL << ((idx - 1) & 63);
  }
  void sweepEnd(rte_rcu_qsbr* qsbr) noexcept;

 private:
  // Tests set up and read slot states (tests/dp/dataplane/neighbour_table_test_access.h).
  friend struct NeighbourTableTestAccess;

  // Slot states. Live ones (ready, retiring, freeing) have kLiveBit.
  static constexpr uint8_t kEmpty = 0;      // never used: ends a probe
  static constexpr uint8_t kBusy = 1;       // claimed; its worker writes the words
  static constexpr uint8_t kLiveBit = 2;
  static constexpr uint8_t kReady = 2;      // live
  static constexpr uint8_t kFree = 4;       // freed: claimable, a probe goes on past it
  static constexpr uint8_t kRetiring = 6;   // no entry held it at a sweep; intern() may revive it
  static constexpr uint8_t kFreeing = 10;   // unreferenced after a grace period; read until the next
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  static constexpr int kBusyWait = 256;  // pauses (a few microseconds)
  uint32_t homeSlot(uint64_t peer_word, uint64_t self_word) const noexcept {
    uint64_t h = (peer_word ^ seed_[0]) * 0x9E3779B97F4A7C15ULL;
    h ^= (self_word ^ seed_[1]) * 0xC2B2AE3D27D4EB4FULL;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    return uint32_t(h >> 40) & (kSlots - 1);
  }
  static constexpr size_t kMapBytes = size_t(kSlots) * 17;
  void* map_ = nullptr;
  uint64_t* peer_ = nullptr;
  uint64_t* self_ = nullptr;
  std::atomic<uint8_t>* state_ = nullptr;  // zero pages: kEmpty
  uint64_t seed_[2] = {};
  alignas(64) std::atomic<uint32_t> port_count_[256] = {};
  // Control thread only.
  alignas(64) uint64_t marks_[kSlots / 64] = {};
  uint64_t retire_token_ = 0, free_token_ = 0;
  bool retiring_ = false, freeing_ = false;          // a batch is waiting
  bool retire_over_ = false, free_over_ = false;     // its grace period ended before the walk
  uint64_t freed_ = 0;
};

}  // namespace gwlb::dp
