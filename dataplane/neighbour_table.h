// Interned L2 neighbours: where a flow direction's packets came from (ingress
// port, VLAN, the neighbour's MAC, our MAC). A flow entry keeps, per
// direction, a 16-bit index into this table instead of the 16 bytes of L2
// (issue 17); a gateway sees few distinct neighbours, so every flow behind
// one router shares one entry.
//
// Threads: workers intern (lock-free) and read; nothing is ever removed, and an
// entry is immutable once ready, so a reader needs no sequence lock.
// Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
// a slot goes empty -> busy (CAS) -> ready (release store), never back.
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "common/net_types.h"

namespace gwlb::dp {

// Where a direction's packets last came from, decoded (NeighbourTable::read).
struct DirL2 {
  uint16_t port = 0;
  bool has_vlan = false;
  uint16_t vlan_tci = 0;
  uint16_t vlan_tpid = 0;
  MacAddr peer_mac;  // source MAC of the frame as it arrived
  MacAddr our_mac;   // destination MAC of the frame as it arrived
};

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "neighbours pack MACs little-endian");

class NeighbourTable {
 public:
  // Slots; indexes handed out are 1..kSlots (0 = none), so they fit 16 bits.
  static constexpr uint32_t kSlots = 1u << 15;
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
  }
  ~NeighbourTable() { munmap(map_, kMapBytes); }
  NeighbourTable(const NeighbourTable&) = delete;
  NeighbourTable& operator=(const NeighbourTable&) = delete;

  // Packs a frame's L2 (frame: at least its 14-byte Ethernet header).
  // peer = peer MAC (bits 0..47) | VLAN TCI (48..63)
  // self = our MAC (0..47) | ingress port (48..55) | VLAN kind (56..57: none, 802.1Q, 802.1ad)
  // False when the port or the TPID does not fit.
  static bool pack(const uint8_t* frame, uint16_t port, uint16_t vlan_tpid, uint16_t vlan_tci,
                   uint64_t& peer_word, uint64_t& self_word) noexcept {
    constexpr uint64_t kMac = (1ULL << 48) - 1;
    uint64_t dst, src;
    std::memcpy(&dst, frame, 8);
    std::memcpy(&src, frame + 6, 8);
    uint64_t kind = vlan_tpid == 0 ? 0 : vlan_tpid == 0x8100 ? 1 : vlan_tpid == 0x88A8 ? 2 : 3;
    if (kind == 3 || port > 0xFF) [[unlikely]]
      return false;
    peer_word = (src & kMac) | uint64_t(vlan_tci) << 48;
    self_word = (dst & kMac) | uint64_t(port) << 48 | kind << kVlanShift;
    return true;
  }

  // Worker: true when index `idx` holds exactly this L2 (the common case of
  // a known direction: two loads and compares).
  bool holds(uint16_t idx, uint64_t peer_word, uint64_t self_word) const noexcept {
    if (idx == 0) return false;
    uint32_t s = uint32_t(idx) - 1;
    // Ready was seen when `idx` was handed out (by intern(), acquire).
    return peer_[s] == peer_word && self_[s] == self_word;
  }

  // Worker: the index of this L2, adding it when new; 0 when the table is
  // full.
  // Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
  // linear probing from the hash; the first empty slot is claimed by CAS, and
  // since no slot ever empties again, two workers interning the same L2
  // reach the same slot and agree on one index. A slot another worker keeps
  // busy past a short wait (it was preempted between its claim and its
  // ready store) is passed over: the probe goes on, and at worst the same L2
  // is interned twice (two indexes that read alike; holds() compares the
  // L2, not the index). A worker never waits long here.
  uint16_t intern(uint64_t peer_word, uint64_t self_word) noexcept {
    uint32_t at = homeSlot(peer_word, self_word);
    for (uint32_t n = 0; n < kSlots; ++n, at = (at + 1) & (kSlots - 1)) {
      uint8_t st = state_[at].load(std::memory_order_acquire);
      if (st == kEmpty) {
        if (state_[at].compare_exchange_strong(st, kBusy, std::memory_order_acquire)) {
          peer_[at] = peer_word;
          self_[at] = self_word;
          state_[at].store(kReady, std::memory_order_release);
          return uint16_t(at + 1);
        }
      }
      for (int spin = 0; st == kBusy && spin < kBusyWait; ++spin) {
        __builtin_ia32_pause();
        st = state_[at].load(std::memory_order_acquire);
      }
      if (st != kReady) continue;  // still busy: probe on
      if (peer_[at] == peer_word && self_[at] == self_word) return uint16_t(at + 1);
    }
    return 0;
  }

  // Tests: claims this L2's home slot and leaves it busy, as a worker
  // preempted between its claim and its ready store would.
  void holdHomeSlotBusyForTest(uint64_t peer_word, uint64_t self_word) noexcept {
    state_[homeSlot(peer_word, self_word)].store(kBusy, std::memory_order_release);
  }

  // Any thread: the L2 at `idx` (an index read from a flow entry, whose
  // writer interned it with an acquire of ready). False for 0.
  // Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):
  // the entry is immutable once ready; acquire the state, then read it.
  bool read(uint16_t idx, DirL2& out) const noexcept {
    if (idx == 0 || idx > kSlots) return false;
    uint32_t s = uint32_t(idx) - 1;
    if (state_[s].load(std::memory_order_acquire) != kReady) return false;
    uint64_t p = peer_[s], w = self_[s];
    std::memcpy(out.peer_mac.b.data(), &p, 6);
    std::memcpy(out.our_mac.b.data(), &w, 6);
    out.vlan_tci = uint16_t(p >> 48);
    out.port = uint16_t((w >> 48) & 0xFF);
    uint64_t kind = (w >> kVlanShift) & 3;
    out.has_vlan = kind != 0;
    out.vlan_tpid = kind == 1 ? 0x8100 : kind == 2 ? 0x88A8 : 0;
    return true;
  }

  // Control thread: how many neighbours are interned.
  uint32_t count() const noexcept {
    uint32_t n = 0;
    for (uint32_t i = 0; i < kSlots; ++i) n += state_[i].load(std::memory_order_relaxed) == kReady;
    return n;
  }

 private:
  static constexpr uint8_t kEmpty = 0, kBusy = 1, kReady = 2;
  static constexpr int kBusyWait = 256;  // pauses (a few microseconds)
  static uint32_t homeSlot(uint64_t peer_word, uint64_t self_word) noexcept {
    uint64_t h = (peer_word * 0x9E3779B97F4A7C15ULL) ^ (self_word * 0xC2B2AE3D27D4EB4FULL);
    return uint32_t(h >> 40) & (kSlots - 1);
  }
  static constexpr size_t kMapBytes = size_t(kSlots) * 17;
  void* map_ = nullptr;
  uint64_t* peer_ = nullptr;
  uint64_t* self_ = nullptr;
  std::atomic<uint8_t>* state_ = nullptr;  // zero pages: kEmpty
};

}  // namespace gwlb::dp
