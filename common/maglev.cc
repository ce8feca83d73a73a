// Maglev consistent hashing (Eisenbud et al., NSDI'16) with weights.
#include "common/maglev.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace gwlb {

namespace {

// The permutation must depend only on the backend's name, never on its index
// or on the other backends: that independence is what keeps most slots in
// place when the backend set changes. offset and skip need two hashes that are
// independent of each other, or backends whose offsets collide would also
// share skips and walk the table in lockstep. FNV-1a alone mixes its high bits
// poorly for short, similar strings (addresses differing in one digit), so a
// splitmix64 finaliser spreads every input bit over the whole word before we
// reduce modulo the table size.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

uint64_t hashName(const std::string& name, uint64_t seed) {
  uint64_t h = 0xCBF29CE484222325ULL ^ seed;  // FNV-1a offset basis, perturbed by seed
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001B3ULL;  // FNV-1a 64-bit prime
  }
  return splitmix64(h ^ seed);
}

constexpr uint64_t kOffsetSeed = 0x6A09E667F3BCC908ULL;
constexpr uint64_t kSkipSeed = 0xBB67AE8584CAA73BULL;

// A scheduled turn packed as (round << 16) | backend index, so that plain
// integer order is "earlier round first, then lower index" - the paper's loop
// order - and heap comparisons are single integer compares. Fits in 64 bits:
// a max-weight backend fills a slot every round, so the build ends by round
// table_size < 2^32; a backend's next turn is at most ~2^32 rounds after its
// last one, so round < 2^33 and the packed value < 2^49.
using Turn = uint64_t;
constexpr Turn makeTurn(uint64_t round, uint16_t index) { return (round << 16) | index; }
constexpr uint16_t turnIndex(Turn t) { return static_cast<uint16_t>(t & 0xFFFF); }

}  // namespace

bool isPrime(uint32_t n) {
  if (n < 2) return false;
  if (n < 4) return true;
  if (n % 2 == 0 || n % 3 == 0) return false;
  // 64-bit i so that i * i cannot overflow near UINT32_MAX.
  for (uint64_t i = 5; i * i <= n; i += 6) {
    if (n % i == 0 || n % (i + 2) == 0) return false;
  }
  return true;
}

std::vector<uint16_t> buildMaglevTable(const std::vector<MaglevBackend>& backends,
                                       uint32_t table_size) {
  const size_t n = backends.size();
  if (n >= kMaglevNoBackend) {
    throw std::invalid_argument("maglev: too many backends (" + std::to_string(n) +
                                "), at most " + std::to_string(kMaglevNoBackend - 1));
  }
  if (!isPrime(table_size)) {
    throw std::invalid_argument("maglev: table size " + std::to_string(table_size) +
                                " is not prime");
  }
  if (table_size <= n) {
    throw std::invalid_argument("maglev: table size " + std::to_string(table_size) +
                                " must be greater than the number of backends (" +
                                std::to_string(n) + ")");
  }

  const uint64_t m = table_size;
  std::vector<uint16_t> table(table_size, kMaglevNoBackend);

  uint32_t max_weight = 0;
  for (const auto& b : backends) max_weight = std::max(max_weight, b.weight);
  if (max_weight == 0) return table;

  // Each backend walks its own permutation (offset, offset+skip, ...) mod m.
  // m is prime and 1 <= skip < m, so the walk visits every slot, which
  // guarantees a backend always finds an empty slot while one remains.
  std::vector<uint64_t> next(n), skip(n);
  for (size_t i = 0; i < n; ++i) {
    next[i] = hashName(backends[i].name, kOffsetSeed) % m;
    skip[i] = hashName(backends[i].name, kSkipSeed) % (m - 1) + 1;
  }

  // Which slots are taken, one bit each: the walks probe this bitmap (8 KiB
  // at the default size, so it stays in L1) rather than the 16-bit table,
  // which is only written, once per slot.
  std::vector<uint64_t> taken((m + 63) / 64, 0);
  // Backend i takes its next turn: the first free slot on its walk.
  auto fill = [&](size_t i) {
    uint64_t pos = next[i];
    const uint64_t s = skip[i];
    while (taken[pos >> 6] & (uint64_t{1} << (pos & 63))) {
      pos += s;
      if (pos >= m) pos -= m;
    }
    taken[pos >> 6] |= uint64_t{1} << (pos & 63);
    table[pos] = static_cast<uint16_t>(i);
    // Resume after the slot just taken; it is full now, no point re-probing it.
    pos += s;
    if (pos >= m) pos -= m;
    next[i] = pos;
  };

  // Weighting: conceptually the paper's round-robin loop, where in every round
  // each backend gains `weight` credit and fills a slot whenever its credit
  // reaches max_weight. Backend i therefore takes its k-th turn in round
  // ceil(k * max_weight / w_i), so slot counts are proportional to weight to
  // within one slot. Within a round, lower indices go first.
  std::vector<uint32_t> active;
  active.reserve(n);
  bool equal = true;
  for (size_t i = 0; i < n; ++i) {
    if (backends[i].weight == 0) continue;
    active.push_back(static_cast<uint32_t>(i));
    equal = equal && backends[i].weight == max_weight;
  }

  if (equal) {
    // Every backend with weight > 0 has the same weight: each takes exactly
    // one turn per round, in index order - the paper's plain loop.
    for (uint64_t filled = 0;;) {
      for (uint32_t i : active) {
        fill(i);
        if (++filled == m) return table;
      }
    }
  }

  // Unequal weights: we schedule the turns with a min-heap instead of
  // looping over all backends every round: with skewed weights (say one
  // backend at 1000 and the rest at 1) nearly every round would be a no-op
  // for most backends and the loop would degrade to O(M * N). The heap costs
  // O(log N) per filled slot regardless of the weight spread. Its keys are
  // unique (they hold the index), so any correct heap yields the same order.
  //
  // Backend i's k-th turn is in round ceil(k * W / w) (W = max_weight, w its
  // weight), kept without a division per turn as k * W = q * w + r: each turn
  // adds W = qstep * w + rstep. Rounds stay small (see Turn): a backend only
  // takes turns in rounds <= m, and its next one is at most W / w + 1 <= 2^32
  // rounds later.
  struct Pace {
    uint64_t q = 0, r = 0, qstep = 0, rstep = 0, w = 1;
  };
  std::vector<Pace> pace(n);
  auto advance = [&](size_t i) {  // next turn's round
    Pace& p = pace[i];
    p.q += p.qstep;
    p.r += p.rstep;
    if (p.r >= p.w) {
      p.r -= p.w;
      ++p.q;
    }
    return p.q + (p.r != 0);
  };

  // A binary min-heap over `heap`; the top is replaced in place after each
  // turn. The new key is the next round of the backend just served, which
  // mostly belongs near the bottom, so the hole left at the top is first
  // moved down along the smaller children to a leaf (one comparison per
  // level, made without a branch) and the key then sifted up from there.
  std::vector<Turn> heap;
  heap.reserve(active.size());
  for (uint32_t i : active) {
    Pace& p = pace[i];
    p.w = backends[i].weight;
    p.qstep = max_weight / p.w;
    p.rstep = max_weight % p.w;
    heap.push_back(makeTurn(advance(i), static_cast<uint16_t>(i)));
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<Turn>());
  const size_t h = heap.size();
  for (uint64_t filled = 0; filled < m; ++filled) {
    const uint16_t i = turnIndex(heap[0]);
    fill(i);
    const Turn t = makeTurn(advance(i), i);
    size_t at = 0;
    for (size_t c = 1; c < h; c = 2 * at + 1) {
      if (c + 1 < h) c += heap[c + 1] < heap[c];
      heap[at] = heap[c];
      at = c;
    }
    while (at > 0) {
      const size_t parent = (at - 1) / 2;
      if (heap[parent] < t) break;
      heap[at] = heap[parent];
      at = parent;
    }
    heap[at] = t;
  }
  return table;
}

}  // namespace gwlb
