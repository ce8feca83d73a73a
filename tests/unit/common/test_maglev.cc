// Behaviour of the Maglev table as a user of the load balancer sees it:
// balance, weights, disruption on backend changes, determinism, errors.
#include "common/maglev.h"
#include "common/snapshot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace gwlb {
namespace {

constexpr uint32_t kBigTable = 655373;  // prime, > 100 * 1000 backends

std::string backendName(size_t i) {
  return "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ":6081";
}

std::vector<MaglevBackend> equalBackends(size_t n, uint32_t weight = 1) {
  std::vector<MaglevBackend> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.push_back({backendName(i), weight});
  return v;
}

std::vector<size_t> slotCounts(const std::vector<uint16_t>& table, size_t n) {
  std::vector<size_t> counts(n, 0);
  for (uint16_t e : table) {
    EXPECT_LT(e, n) << "slot not owned by a valid backend";
    if (e < n) ++counts[e];
  }
  return counts;
}

// Every backend's slot count within 1% of its weight-proportional share.
void expectProportional(const std::vector<MaglevBackend>& backends,
                        const std::vector<uint16_t>& table) {
  ASSERT_FALSE(backends.empty());
  double total_weight = 0;
  for (const auto& b : backends) total_weight += b.weight;
  const auto counts = slotCounts(table, backends.size());
  for (size_t i = 0; i < backends.size(); ++i) {
    const double ideal = static_cast<double>(table.size()) * backends[i].weight / total_weight;
    EXPECT_LE(std::abs(static_cast<double>(counts[i]) - ideal), 0.01 * ideal)
        << "backend " << backends[i].name << " weight " << backends[i].weight << " has "
        << counts[i] << " slots, ideal " << ideal;
  }
}

// Compares two tables by backend NAME (indices shift when the vector changes).
struct Change {
  size_t kept_slots = 0;   // slots whose old owner is present in both sets
  size_t moved_kept = 0;   // ... of those, how many changed owner
  size_t changed_total = 0;
};

Change compareTables(const std::vector<MaglevBackend>& before,
                     const std::vector<uint16_t>& t_before,
                     const std::vector<MaglevBackend>& after,
                     const std::vector<uint16_t>& t_after) {
  EXPECT_EQ(t_before.size(), t_after.size());
  auto inAfter = [&](const std::string& name) {
    return std::any_of(after.begin(), after.end(),
                       [&](const MaglevBackend& b) { return b.name == name; });
  };
  std::vector<bool> old_survives(before.size());
  for (size_t i = 0; i < before.size(); ++i) old_survives[i] = inAfter(before[i].name);

  Change c;
  for (size_t s = 0; s < t_before.size(); ++s) {
    const std::string& old_name = before.at(t_before[s]).name;
    const std::string& new_name = after.at(t_after[s]).name;
    if (old_name != new_name) ++c.changed_total;
    if (old_survives[t_before[s]]) {
      ++c.kept_slots;
      if (old_name != new_name) ++c.moved_kept;
    }
  }
  return c;
}

// ---- 1. Balance -------------------------------------------------------------

TEST(MaglevBalance, EqualWeightsDefaultSize) {
  for (size_t n : {3, 10, 100}) {
    SCOPED_TRACE("N=" + std::to_string(n));
    const auto backends = equalBackends(n);
    const auto table = buildMaglevTable(backends, kMaglevDefaultSize);
    ASSERT_EQ(table.size(), kMaglevDefaultSize);
    expectProportional(backends, table);
  }
}

TEST(MaglevBalance, ThousandBackendsLargeTable) {
  const auto backends = equalBackends(1000);
  const auto table = buildMaglevTable(backends, kBigTable);
  ASSERT_EQ(table.size(), kBigTable);
  expectProportional(backends, table);
}

TEST(MaglevBalance, SingleBackendOwnsEverything) {
  const auto table = buildMaglevTable(equalBackends(1), 7);
  EXPECT_EQ(table, std::vector<uint16_t>(7, 0));
}

TEST(MaglevBalance, EqualNonUnitWeightsBalanceLikeUnitWeights) {
  const auto table = buildMaglevTable(equalBackends(10, 1000), kMaglevDefaultSize);
  EXPECT_EQ(table, buildMaglevTable(equalBackends(10, 1), kMaglevDefaultSize));
}

// ---- 2. Weights -------------------------------------------------------------

TEST(MaglevWeights, ProportionalToWeight) {
  const std::vector<MaglevBackend> backends = {
      {"10.0.0.1:6081", 100}, {"10.0.0.2:6081", 50}, {"10.0.0.3:6081", 50}};
  expectProportional(backends, buildMaglevTable(backends, kMaglevDefaultSize));
}

TEST(MaglevWeights, ManyDistinctWeights) {
  std::vector<MaglevBackend> backends;
  for (uint32_t i = 0; i < 20; ++i) backends.push_back({backendName(i), 1 + i * 7});
  // The weight-1 backend's share is ~1/1350 of the table; the big table keeps
  // the one-slot rounding error below 1% of that share.
  expectProportional(backends, buildMaglevTable(backends, kBigTable));
}

TEST(MaglevWeights, HugeWeightsDoNotOverflow) {
  const std::vector<MaglevBackend> backends = {
      {"a", UINT32_MAX}, {"b", UINT32_MAX / 2}, {"c", UINT32_MAX / 4}};
  expectProportional(backends, buildMaglevTable(backends, kMaglevDefaultSize));
}

TEST(MaglevWeights, ZeroWeightBackendGetsNoSlots) {
  const std::vector<MaglevBackend> backends = {
      {"10.0.0.1:6081", 1}, {"10.0.0.2:6081", 0}, {"10.0.0.3:6081", 1}};
  const auto table = buildMaglevTable(backends, kMaglevDefaultSize);
  const auto counts = slotCounts(table, backends.size());
  EXPECT_EQ(counts[1], 0u);
  EXPECT_EQ(counts[0] + counts[2], kMaglevDefaultSize);
  const double ideal = kMaglevDefaultSize / 2.0;
  EXPECT_LE(std::abs(static_cast<double>(counts[0]) - ideal), 0.01 * ideal);
  EXPECT_LE(std::abs(static_cast<double>(counts[2]) - ideal), 0.01 * ideal);
}

TEST(MaglevWeights, ZeroWeightIsLikeAbsent) {
  // Draining a backend by weight 0 gives the same name->slot mapping as
  // removing it from the list.
  auto drained = equalBackends(10);
  drained[4].weight = 0;
  auto removed = equalBackends(10);
  removed.erase(removed.begin() + 4);
  const auto c = compareTables(drained, buildMaglevTable(drained, kMaglevDefaultSize), removed,
                               buildMaglevTable(removed, kMaglevDefaultSize));
  EXPECT_EQ(c.changed_total, 0u);
}

// ---- 3. Disruption ----------------------------------------------------------

void checkRemoveAndAddBack(size_t n) {
  SCOPED_TRACE("N=" + std::to_string(n));
  const auto full = equalBackends(n);
  const auto t_full = buildMaglevTable(full, kMaglevDefaultSize);
  // Remove a few different backends in turn (first, middle, last).
  for (size_t victim : {size_t{0}, n / 2, n - 1}) {
    SCOPED_TRACE("removed " + full[victim].name);
    auto fewer = full;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(victim));
    const auto t_fewer = buildMaglevTable(fewer, kMaglevDefaultSize);

    // Removal: the victim's slots all go to remaining backends (compareTables
    // would throw on an invalid index), others keep all but <= 1% of theirs.
    for (uint16_t e : t_fewer) ASSERT_LT(e, fewer.size());
    const auto rm = compareTables(full, t_full, fewer, t_fewer);
    EXPECT_GT(rm.kept_slots, 0u);
    EXPECT_LE(rm.moved_kept, 0.01 * rm.kept_slots)
        << rm.moved_kept << " of " << rm.kept_slots << " surviving slots moved";

    // Adding it back: slots of the existing backends stay put except <= 1%;
    // overall about 1/N of the table changes hands.
    const auto add = compareTables(fewer, t_fewer, full, t_full);
    EXPECT_EQ(add.kept_slots, kMaglevDefaultSize);
    EXPECT_LE(add.moved_kept, static_cast<size_t>(kMaglevDefaultSize / n) + 0.01 * kMaglevDefaultSize);
    const size_t new_owner_slots = slotCounts(t_full, n)[victim];
    EXPECT_LE(add.moved_kept - new_owner_slots, 0.01 * (kMaglevDefaultSize - new_owner_slots));
  }
}

TEST(MaglevDisruption, RemoveAndAddBackTen) { checkRemoveAndAddBack(10); }
TEST(MaglevDisruption, RemoveAndAddBackHundred) { checkRemoveAndAddBack(100); }

// ---- 4. Determinism ---------------------------------------------------------

TEST(MaglevDeterminism, SameInputSameTable) {
  for (size_t n : {1, 10, 100}) {
    const auto backends = equalBackends(n);
    EXPECT_EQ(buildMaglevTable(backends, kMaglevDefaultSize),
              buildMaglevTable(backends, kMaglevDefaultSize));
  }
  const std::vector<MaglevBackend> weighted = {{"x", 3}, {"y", 1}, {"z", 0}, {"w", 7}};
  EXPECT_EQ(buildMaglevTable(weighted, 10007), buildMaglevTable(weighted, 10007));
}

TEST(MaglevDeterminism, BackendOrderChangesFewSlots) {
  // The permutation depends only on names; vector order only breaks ties when
  // two backends want the same empty slot in the same round.
  for (size_t n : {10, 100}) {
    SCOPED_TRACE("N=" + std::to_string(n));
    const auto backends = equalBackends(n);
    const auto table = buildMaglevTable(backends, kMaglevDefaultSize);

    auto reversed = backends;
    std::reverse(reversed.begin(), reversed.end());
    auto rotated = backends;
    std::rotate(rotated.begin(), rotated.begin() + static_cast<std::ptrdiff_t>(n / 3),
                rotated.end());
    for (const auto* other : {&reversed, &rotated}) {
      const auto c =
          compareTables(backends, table, *other, buildMaglevTable(*other, kMaglevDefaultSize));
      EXPECT_LE(c.changed_total, 0.01 * kMaglevDefaultSize);
    }
  }
}

// The tables themselves, pinned: checksums (64-bit FNV-1a over each entry's
// two bytes, low byte first) of tables built by the original heap-scheduled
// build, captured before it was optimised (issue 8). Any change to the
// permutation, the turn order or the tie-breaking changes them: every
// gwlbd would then send existing flows elsewhere after an upgrade.
uint64_t tableChecksum(const std::vector<uint16_t>& table) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (uint16_t e : table) {
    for (int b = 0; b < 2; ++b) {
      h ^= (e >> (8 * b)) & 0xFF;
      h *= 0x100000001B3ULL;
    }
  }
  return h;
}

TEST(MaglevDeterminism, TablesMatchThoseOfTheOriginalBuild) {
  struct Case {
    const char* what;
    std::vector<MaglevBackend> backends;
    uint32_t size;
    uint64_t checksum;
  };
  std::vector<MaglevBackend> steps, spread;
  for (uint32_t i = 0; i < 20; ++i) steps.push_back({backendName(i), 1 + i * 7});
  for (uint32_t i = 0; i < 1000; ++i) spread.push_back({backendName(i), 1 + (i * 37) % 100});
  const std::vector<Case> cases = {
      {"3 equal", equalBackends(3), kMaglevDefaultSize, 0xfb1641a1399ba49fULL},
      {"10 equal", equalBackends(10), kMaglevDefaultSize, 0x77915f073346420bULL},
      {"1000 equal", equalBackends(1000), kMaglevDefaultSize, 0x975d9f99b3c9705bULL},
      {"1000 equal, big table", equalBackends(1000), kBigTable, 0x357434263d3dba9aULL},
      {"20 weights 1+7i, big table", steps, kBigTable, 0x1f40c6f7f5878d6bULL},
      {"x3 y1 z0 w7", {{"x", 3}, {"y", 1}, {"z", 0}, {"w", 7}}, 10007, 0x74ad1458a949a167ULL},
      {"1000 weights 1+(37i mod 100)", spread, kMaglevDefaultSize, 0x16291fd37249aa6bULL},
      {"huge weights", {{"a", UINT32_MAX}, {"b", UINT32_MAX / 2}, {"c", UINT32_MAX / 4}},
       kMaglevDefaultSize, 0x90b73bd960828c85ULL},
  };
  for (const Case& c : cases) {
    const auto table = buildMaglevTable(c.backends, c.size);
    ASSERT_EQ(table.size(), c.size) << c.what;
    EXPECT_EQ(tableChecksum(table), c.checksum) << c.what;
  }
}

// ---- 5. Errors and empty input ----------------------------------------------

TEST(MaglevErrors, NonPrimeSizeThrows) {
  const auto backends = equalBackends(3);
  for (uint32_t size : {0u, 1u, 4u, 65536u, 100u, 65535u}) {
    EXPECT_THROW(buildMaglevTable(backends, size), std::invalid_argument) << size;
  }
  EXPECT_THROW(buildMaglevTable({}, 65536), std::invalid_argument);
}

TEST(MaglevErrors, SizeNotGreaterThanBackendCountThrows) {
  EXPECT_THROW(buildMaglevTable(equalBackends(3), 3), std::invalid_argument);
  EXPECT_THROW(buildMaglevTable(equalBackends(5), 5), std::invalid_argument);
  EXPECT_THROW(buildMaglevTable(equalBackends(5), 3), std::invalid_argument);
  EXPECT_NO_THROW(buildMaglevTable(equalBackends(4), 5));
}

TEST(MaglevErrors, TooManyBackendsThrows) {
  EXPECT_THROW(buildMaglevTable(equalBackends(0xFFFF), kBigTable), std::invalid_argument);
}

TEST(MaglevErrors, MaxBackendCountWorks) {
  // 0xFFFE backends is the most that fits below the kMaglevNoBackend marker;
  // with equal weights every one of them gets at least one slot.
  const size_t n = 0xFFFE;
  const auto table = buildMaglevTable(equalBackends(n), kMaglevDefaultSize);
  const auto counts = slotCounts(table, n);
  EXPECT_EQ(*std::min_element(counts.begin(), counts.end()), 1u);
}

TEST(MaglevErrors, MessageIsClear) {
  try {
    buildMaglevTable(equalBackends(3), 65536);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("prime"), std::string::npos) << e.what();
  }
}

TEST(MaglevEmpty, NoBackendsGivesEmptyTable) {
  EXPECT_EQ(buildMaglevTable({}, kMaglevDefaultSize),
            std::vector<uint16_t>(kMaglevDefaultSize, kMaglevNoBackend));
}

TEST(MaglevEmpty, AllZeroWeightsGivesEmptyTable) {
  EXPECT_EQ(buildMaglevTable(equalBackends(5, 0), 101),
            std::vector<uint16_t>(101, kMaglevNoBackend));
}

// ---- 6. isPrime -------------------------------------------------------------

TEST(MaglevIsPrime, KnownValues) {
  EXPECT_FALSE(isPrime(0));
  EXPECT_FALSE(isPrime(1));
  EXPECT_TRUE(isPrime(2));
  EXPECT_TRUE(isPrime(3));
  EXPECT_FALSE(isPrime(4));
  EXPECT_TRUE(isPrime(5));
  EXPECT_FALSE(isPrime(25));
  EXPECT_FALSE(isPrime(49));
  EXPECT_TRUE(isPrime(65537));
  EXPECT_TRUE(isPrime(655373));
  EXPECT_FALSE(isPrime(65536));
  EXPECT_FALSE(isPrime(65535));
  EXPECT_FALSE(isPrime(4294836225u));  // 65535^2
  EXPECT_FALSE(isPrime(4293001441u));  // 65521^2: catches an off-by-one sqrt bound
  EXPECT_FALSE(isPrime(4292870399u));  // 65519 * 65521
  EXPECT_TRUE(isPrime(4294967279u));
  EXPECT_TRUE(isPrime(4294967291u));   // largest 32-bit prime
  EXPECT_FALSE(isPrime(4294967295u));  // 3 * 5 * 17 * 257 * 65537
}

TEST(MaglevIsPrime, MatchesSieveBelow100000) {
  const uint32_t limit = 100000;
  std::vector<bool> composite(limit, false);
  for (uint32_t i = 2; i * i < limit; ++i) {
    if (!composite[i]) {
      for (uint32_t j = i * i; j < limit; j += i) composite[j] = true;
    }
  }
  for (uint32_t i = 0; i < limit; ++i) {
    ASSERT_EQ(isPrime(i), i >= 2 && !composite[i]) << i;
  }
}

// The workers pick a new flow's slot without a division (maglevSlot): it
// must be exactly hash % size, or the gateways of a fleet running it and
// explain (which divides) would disagree on a flow's appliance.
TEST(MaglevSlot, EqualsTheRemainderForEveryTableSize) {
  std::mt19937 rng(7);
  std::vector<uint32_t> sizes = {1, 2, 3, 251, 65537, 65536, 131071, 655373, 1u << 20, 16777213};
  for (int i = 0; i < 20; ++i) sizes.push_back(1 + rng() % (1u << 24));
  for (uint32_t size : sizes) {
    dp::GroupView g;
    std::vector<uint16_t> t(size);
    for (uint32_t j = 0; j < size; ++j) t[j] = uint16_t(j % 7);
    g.setMaglev(std::move(t));
    std::vector<uint32_t> hashes = {0, 1, size - 1, size, size + 1, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu,
                                    0xFFFFFFFFu};
    for (int j = 0; j < 2000; ++j) hashes.push_back(uint32_t(rng()));
    for (uint32_t h : hashes) {
      ASSERT_EQ(g.maglevSlot(h), h % size) << "size " << size << " hash " << h;
      ASSERT_EQ(g.maglevPick(h), uint16_t((h % size) % 7));
    }
  }
  dp::GroupView empty;
  EXPECT_EQ(empty.maglevPick(12345), dp::kNoAppliance);
}

}  // namespace
}  // namespace gwlb

// The return path finds an appliance by its address in Snapshot::ip_index
// (open addressing): every address the sorted by_ip holds, and no other,
// at every size from one appliance to far more than a gateway has, with
// addresses that collide in the table (one /24, and a stride of its size).
TEST(SnapshotServerByIp, IndexAnswersAsTheSortedList) {
  std::mt19937 rng(5);
  for (size_t n : {0, 1, 2, 3, 7, 64, 1000}) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      gwlb::dp::Snapshot s;
      for (size_t i = 0; i < n; ++i) {
        uint32_t ip = pattern == 0 ? 0x0A000000u + uint32_t(i)
                    : pattern == 1 ? 0x0A000000u + uint32_t(i) * 4096u
                                   : uint32_t(rng());
        s.by_ip.emplace_back(ip, uint16_t(i));
      }
      std::sort(s.by_ip.begin(), s.by_ip.end());
      s.by_ip.erase(std::unique(s.by_ip.begin(), s.by_ip.end(),
                                [](auto& a, auto& b) { return a.first == b.first; }),
                    s.by_ip.end());
      std::vector<uint32_t> probe;
      for (auto& [ip, id] : s.by_ip) probe.insert(probe.end(), {ip, ip + 1, ip - 1});
      for (int i = 0; i < 200; ++i) probe.push_back(uint32_t(rng()));
      std::vector<uint16_t> want;
      for (uint32_t ip : probe) want.push_back(s.applianceByIp(ip));  // binary search: no index yet
      s.indexByIp();
      ASSERT_FALSE(s.ip_index.empty());
      EXPECT_GE(s.ip_index.size(), 2 * s.by_ip.size());
      for (size_t i = 0; i < probe.size(); ++i)
        ASSERT_EQ(s.applianceByIp(probe[i]), want[i]) << "n " << n << " pattern " << pattern << " ip " << probe[i];
    }
  }
}
