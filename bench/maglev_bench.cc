// Benchmark (never pass/fail): the Maglev table build (common/maglev.h), as the
// control thread runs it for every snapshot.
//
// Build time: gwlb::buildMaglevTable for S servers (default 1,000) at each
// table size M (default 65,537 and 655,373), equal weights and spread weights
// (1 + (37 i mod 100): 1..100). Every round builds each (M, weights) case once,
// in turn, so machine noise hits them alike; a few untimed rounds first warm
// the allocator and caches. Reported: median, min, p10, p90, max over rounds
// (steady_clock around the call, which includes allocating the table).
//
// Disruption: 10 servers; each in turn is removed (as gwlbd does when one
// fails: weight 0, which gives the same table as leaving it out) and the
// share of slots whose owner changed is counted, together with the share of
// slots of the servers that stayed which moved (ideal 0). Equal weights
// (ideal share moved 1/10) and weights 1..10 (ideal w_k / 55).
//
//   maglev_bench [--servers S] [--sizes M1,M2] [--rounds R]
// Prints a summary, then one JSON line (last line of stdout).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "common/maglev.h"

namespace gwlb::bench {
namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "maglev_bench: %s\n", what.c_str());
  std::exit(1);
}


std::string statsJson(const Stats& s, const char* f = "%.4f") {
  return "{\"median\":" + fmt(f, s.median) + ",\"min\":" + fmt(f, s.min) + ",\"p10\":" +
         fmt(f, s.p10) + ",\"p90\":" + fmt(f, s.p90) + ",\"max\":" + fmt(f, s.max) + "}";
}

// Names as gwlbd gives them: the appliance's address as text.
std::string serverName(size_t i) {
  return "10." + std::to_string(i / 65536 % 256) + "." + std::to_string(i / 256 % 256) + "." +
         std::to_string(i % 256);
}

std::vector<MaglevBackend> appliances(size_t n, bool spread) {
  std::vector<MaglevBackend> v;
  for (size_t i = 0; i < n; ++i)
    v.push_back({serverName(i), spread ? uint32_t(1 + (37 * i) % 100) : 1u});
  return v;
}

struct BuildCase {
  uint32_t size;
  bool spread;
  std::vector<MaglevBackend> backends;
  std::vector<double> ms;
};

struct Removal {
  double moved;       // share of all slots whose owner changed
  double ideal;       // the removed server's weight share
  double kept_moved;  // share of the surviving servers' slots that moved
};

// Removes each server in turn (weight 0) and compares with the full table.
std::vector<Removal> removals(const std::vector<MaglevBackend>& full, uint32_t m) {
  const auto before = buildMaglevTable(full, m);
  double total_w = 0;
  for (const auto& b : full) total_w += b.weight;
  std::vector<Removal> out;
  for (size_t k = 0; k < full.size(); ++k) {
    auto less = full;
    less[k].weight = 0;
    const auto after = buildMaglevTable(less, m);
    // The same as leaving it out of the list (names decide the permutation).
    auto without = full;
    without.erase(without.begin() + std::ptrdiff_t(k));
    const auto after2 = buildMaglevTable(without, m);
    for (size_t s = 0; s < m; ++s)
      if (after2[s] + (after2[s] >= k ? 1 : 0) != after[s])
        die("weight 0 and removal give different tables");
    size_t changed = 0, kept = 0, kept_changed = 0;
    for (size_t s = 0; s < m; ++s) {
      if (after[s] == k || after[s] >= full.size()) die("a slot still names the removed server");
      changed += before[s] != after[s];
      if (before[s] != k) {
        ++kept;
        kept_changed += before[s] != after[s];
      }
    }
    out.push_back({double(changed) / m, full[k].weight / total_w,
                   kept ? double(kept_changed) / double(kept) : 0});
  }
  return out;
}

int run(size_t n_appliances, const std::vector<uint32_t>& sizes, unsigned rounds) {
  std::vector<BuildCase> cases;
  for (uint32_t m : sizes)
    for (bool spread : {false, true}) cases.push_back({m, spread, appliances(n_appliances, spread), {}});
  // Warm-up: allocator, page faults, caches.
  for (unsigned r = 0; r < 3; ++r)
    for (auto& c : cases) (void)buildMaglevTable(c.backends, c.size);
  for (unsigned r = 0; r < rounds; ++r)
    for (auto& c : cases) {
      auto t0 = std::chrono::steady_clock::now();
      auto t = buildMaglevTable(c.backends, c.size);
      auto t1 = std::chrono::steady_clock::now();
      if (t.size() != c.size || t[0] >= n_appliances) die("unexpected table");
      c.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }

  std::printf("maglev_bench: %zu servers, %u timed rounds (each case once per round)\n", n_appliances,
              rounds);
  std::string j = "{\"servers\":" + std::to_string(n_appliances) + ",\"rounds\":" +
                  std::to_string(rounds) + ",\"build\":[";
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    Stats s = stats(c.ms);
    const char* w = c.spread ? "weights 1..100" : "equal weights";
    std::printf("  build M=%-7u %-15s median %8.3f ms  min %.3f  p10-p90 %.3f-%.3f  max %.3f\n",
                c.size, w, s.median, s.min, s.p10, s.p90, s.max);
    j += std::string(i ? "," : "") + "{\"size\":" + std::to_string(c.size) + ",\"weights\":\"" +
         (c.spread ? "spread" : "equal") + "\",\"ms\":" + statsJson(s) + "}";
  }
  j += "],\"removal\":[";
  bool first = true;
  for (uint32_t m : sizes)
    for (bool weighted : {false, true}) {
      std::vector<MaglevBackend> ten;
      for (size_t i = 0; i < 10; ++i) ten.push_back({serverName(i), weighted ? uint32_t(i + 1) : 1u});
      auto rs = removals(ten, m);
      std::vector<double> moved, excess, kept;
      std::string per = "[";
      for (size_t k = 0; k < rs.size(); ++k) {
        moved.push_back(rs[k].moved);
        excess.push_back(rs[k].moved - rs[k].ideal);
        kept.push_back(rs[k].kept_moved);
        per += std::string(k ? "," : "") + "{\"moved\":" + fmt("%.6f", rs[k].moved) +
               ",\"ideal\":" + fmt("%.6f", rs[k].ideal) + ",\"kept_moved\":" +
               fmt("%.6f", rs[k].kept_moved) + "}";
      }
      per += "]";
      Stats sm = stats(moved), se = stats(excess), sk = stats(kept);
      const char* w = weighted ? "weights 1..10" : "equal weights";
      std::printf("  remove 1 of 10, M=%-7u %-13s moved median %.4f (min %.4f max %.4f)  "
                  "moved - ideal median %+.4f (max %+.4f)  survivors' slots moved median %.4f "
                  "(max %.4f)\n",
                  m, w, sm.median, sm.min, sm.max, se.median, se.max, sk.median, sk.max);
      j += std::string(first ? "" : ",") + "{\"size\":" + std::to_string(m) + ",\"weights\":\"" +
           (weighted ? "1..10" : "equal") + "\",\"moved\":" + statsJson(sm, "%.6f") +
           ",\"excess\":" + statsJson(se, "%.6f") + ",\"kept_moved\":" +
           statsJson(sk, "%.6f") + ",\"per_server\":" + per + "}";
      first = false;
    }
  j += "]}";
  std::printf("%s\n", j.c_str());
  return 0;
}

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  size_t n = 1000;
  std::vector<uint32_t> sizes = {65537, 655373};
  unsigned rounds = 51;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) gwlb::bench::die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--servers") n = std::strtoul(val().c_str(), nullptr, 10);
    else if (a == "--rounds") rounds = unsigned(std::strtoul(val().c_str(), nullptr, 10));
    else if (a == "--sizes") {
      sizes.clear();
      std::string v = val();
      for (size_t at = 0; at <= v.size();) {
        size_t comma = std::min(v.find(',', at), v.size());
        sizes.push_back(uint32_t(std::strtoul(v.substr(at, comma - at).c_str(), nullptr, 10)));
        at = comma + 1;
      }
    } else
      gwlb::bench::die("usage: maglev_bench [--servers S] [--sizes M1,M2] [--rounds R]");
  }
  if (n < 10 || rounds < 1) gwlb::bench::die("--servers must be >= 10 and --rounds >= 1");
  for (uint32_t m : sizes)
    if (!gwlb::isPrime(m) || m <= n) gwlb::bench::die("table sizes must be primes > servers");
  try {
    return gwlb::bench::run(n, sizes, rounds);
  } catch (const std::exception& e) {
    gwlb::bench::die(e.what());
  }
}
