// Benchmark (never pass/fail, except --check): the traffic-class table
// (common/traffic_class.h, ClassTable) beside DPDK's classifiers, in one
// process, on the same rules and the same packets (to choose
// the structure by measurement).
//
// Rule sets (ordered, first match wins, as gwlbd compiles them):
//   mixed-N      bench/bench_net.h benchClasses(N), converted by
//                ctl::classRule as the snapshot builder does: a quarter each
//                VLAN+UDP, IPv4 /24+L4 port, TCP+port range, VLAN+IPv6 /48,
//                and the last a /16+UDP+port 53+untagged (N = 10, 100, 1000)
//   vlan-1000    1,000 tenants, one VLAN each (VLANs 1..1000)
//   prefix-1000  1,000 IPv4 /24s (172.16.0.0/24, 172.16.1.0/24, ...), one
//                per rule; a prefix matches either endpoint, and the packets
//                that match one carry it as their source or their
//                destination address in equal shares
//
// Structures:
//   cross_product  ClassTable(rules): equivalence classes, a cross product
//                  per address family (what gwlbd uses)
//   bit_vectors    ClassTable(rules, 0): the same classes AND-ed as bit
//                  vectors (gwlbd's fallback for very large products)
//   rte_acl        DPDK's multi-field classifier. Fields (one input buffer
//                  per packet, network byte order): protocol (1 byte,
//                  bitmask), IPv4 source and destination (masks), source and
//                  destination port (ranges), ingress port and VLAN (ranges).
//                  rte_acl matches a field against one value, mask or range,
//                  so a class becomes several ACL rules: one per ingress-port
//                  run x VLAN run x protocol x (prefix as source, prefix as
//                  destination) x (port range as source port, as destination
//                  port); every ACL rule of class i has priority N - i and
//                  userdata i + 1, so the highest priority match is the first
//                  class. IPv4 only: classes whose prefixes are all IPv6 are
//                  left out (they cannot match an IPv4 packet) and the
//                  packets are IPv4. Classified in bursts of 32
//                  (rte_acl_classify, its intended use) and one packet at a
//                  time.
//   rte_lpm        (prefix-1000 only) DPDK's longest-prefix match, prefix ->
//                  class index, two lookups per packet (source and
//                  destination), the smaller index wins; a prefix's entry
//                  holds the first class whose prefix covers it, so overlaps
//                  keep first-match order. Only for rule sets of prefixes alone.
//
// Figures per rule set and structure: build time (the thread's CPU time
// around the compilation from the rule list: the ACL expansion, create, add,
// build; the LPM create and adds; wall-clock time beside it in the JSON),
// median of --builds (5); memory (ClassTable::
// memoryBytes(); rte_acl and rte_lpm: the DPDK heap's allocated bytes
// before and after, rte_malloc_get_socket_stats, split into the rule store and
// the run-time tables rte_acl_build adds; rte_lpm also as its config implies:
// tbl24 + tbl8s x 256 entries + the rule array); cycles per classification:
// TSC (rte_rdtsc_precise) around --passes (1) loops over a fixed mix of 4,096
// packets (a quarter each: made to match a class among the first tenth,
// among the last tenth, any class, and random fields), median of --reps (11)
// repetitions; the structures take turns within a repetition, each after an
// untimed loop (warm), and a repetition during which the thread was switched
// out is measured again (see timeAll). Packets are pre-parsed (ClassTable:
// port, VLAN and an L4Tuple; rte_acl: its 20-byte input buffer), as a worker
// has them; building rte_acl's buffer from a parsed packet is not counted.
//
//   class_bench [--sets a,b,...] [--builds K] [--reps R] [--passes P] [--cpu C]
//               [--seed X]
//   class_bench --check [--packets N] [--break dst-addr|dport]
// Prints a table, then one JSON line (last line of stdout). --check
// classifies N (20,000) random packets per rule set with every structure and
// exits 1 on the first disagreement with the cross product's answer (the
// first matching class); --break drops one of the ACL expansion's variants,
// for the self-test that shows the check fails.
#include <arpa/inet.h>
#include <fcntl.h>
#include <rte_acl.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_net.h"
#include "bench/bench_util.h"
#include "bench/class_bench_dpdk.h"
#include "bench/class_bench_packets.h"
#include "common/traffic_class.h"
#include "dataplane/eal.h"

namespace gwlb::bench {
namespace {

struct Options {
  std::vector<std::string> sets = {"mixed-10", "mixed-100", "mixed-1000", "vlan-1000", "prefix-1000"};
  unsigned builds = 5, reps = 11, passes = 1;
  int cpu = -1;
  uint64_t seed = 0x6777'6c62'0027ULL;
  bool check = false;
  uint32_t check_packets = 20000;
  std::string break_variant;  // "", "dst-addr" or "dport"
};

// ---- measurement --------------------------------------------------------------

// Build times, median of the builds: the building thread's CPU time (what a
// build costs, whatever else the shared machine runs meanwhile) and the
// wall-clock time beside it.
struct BuildTimes {
  std::vector<double> cpu, wall;
  template <typename F>
  void time(F&& f) {
    timespec c0{}, c1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    const auto w0 = std::chrono::steady_clock::now();
    f();
    const auto w1 = std::chrono::steady_clock::now();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    cpu.push_back(double(c1.tv_sec - c0.tv_sec) * 1e3 + double(c1.tv_nsec - c0.tv_nsec) / 1e6);
    wall.push_back(std::chrono::duration<double, std::milli>(w1 - w0).count());
  }
  double cpuMs() const { return stats(cpu).median; }
  double wallMs() const { return stats(wall).median; }
};

volatile uint64_t g_sink;

struct Row {
  std::string set, structure, note;
  double build_ms = 0;  // CPU time
  uint64_t memory = 0;
  double build_wall_ms = 0;
  Stats cycles;
  std::string extra_json;  // further fields, starting with ','
};

// One structure's pass over the mix (returns a checksum of its answers) and
// the row its cycles go to.
struct Timed {
  size_t row;
  std::function<uint64_t()> pass;
  std::vector<double> cycles;
};

// Timeslices this thread has run (/proc/thread-self/schedstat, third
// field): unchanged across a measurement = it was never switched out.
uint64_t timeslices() {
  static const int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  char b[128];
  const ssize_t n = fd >= 0 ? pread(fd, b, sizeof b - 1, 0) : -1;
  if (n <= 0) return 0;
  b[n] = '\0';
  unsigned long long run = 0, wait = 0, slices = 0;
  return std::sscanf(b, "%llu %llu %llu", &run, &wait, &slices) == 3 ? slices : 0;
}

uint64_t g_redone = 0;  // repetitions measured again: the thread was switched out

// Cycles per packet: every structure of a rule set in turn within each
// repetition (a disturbance of the shared machine hits them alike), each
// timed warm (one untimed pass first: the previous structure's tables have
// displaced its own from the caches), TSC around `passes` passes over the
// mix. A repetition during which the thread was switched out (another
// process took the cpu) is measured again, up to 20 times. Median of the
// repetitions.
void timeAll(const Options& o, std::vector<Timed>& ts, std::vector<Row>& rows) {
  for (unsigned r = 0; r < o.reps; ++r)
    for (Timed& t : ts) {
      double c = 0;
      for (int attempt = 0; attempt < 20; ++attempt) {
        g_sink = g_sink + t.pass();
        uint64_t acc = 0;
        const uint64_t s0 = timeslices();
        const uint64_t t0 = rte_rdtsc_precise();
        for (unsigned p = 0; p < o.passes; ++p) acc += t.pass();
        const uint64_t t1 = rte_rdtsc_precise();
        const uint64_t s1 = timeslices();
        g_sink = g_sink + acc;
        c = double(t1 - t0) / (double(o.passes) * kMix);
        if (s0 == s1) break;
        ++g_redone;
      }
      t.cycles.push_back(c);
    }
  for (Timed& t : ts) rows[t.row].cycles = stats(t.cycles);
}

std::string statsJson(const Stats& s) {
  return "{\"median\":" + fmt("%.2f", s.median) + ",\"min\":" + fmt("%.2f", s.min) +
         ",\"p10\":" + fmt("%.2f", s.p10) + ",\"p90\":" + fmt("%.2f", s.p90) +
         ",\"max\":" + fmt("%.2f", s.max) + "}";
}

std::string bytesText(uint64_t b) {
  if (b >= (uint64_t(1) << 20)) return fmt("%.1f MiB", double(b) / (1 << 20));
  if (b >= 1024) return fmt("%.1f KiB", double(b) / 1024);
  return std::to_string(b) + " B";
}

void benchSet(const Options& o, const std::string& set, std::vector<Row>& rows, std::string& mix_json) {
  const std::vector<ClassRule> rules = ruleSet(set);
  const std::vector<Packet> mix = timingMix(rules, o.seed);
  std::vector<const uint8_t*> keys;
  for (const Packet& p : mix) keys.push_back(reinterpret_cast<const uint8_t*>(&p.key));
  std::vector<Timed> timed;

  // ClassTable, both ways.
  ClassTable tables[2];
  for (int k = 0; k < 2; ++k) {
    const bool cross = k == 0;
    ClassTable& t = tables[k];
    BuildTimes bt;
    for (unsigned b = 0; b < o.builds; ++b)
      bt.time([&] { t = ClassTable(rules, cross ? ClassTable::kDefaultCellLimit : 0); });
    if (cross != t.crossProduct()) die(set + ": ClassTable did not build what was asked");
    Row r{set, cross ? "cross_product" : "bit_vectors", "", bt.cpuMs(), t.memoryBytes(), bt.wallMs(), {}, ""};
    if (cross) {
      // Where the mix's packets end up (by the cross product's answer).
      const size_t n = rules.size(), tenth = std::max<size_t>(1, n / 10);
      size_t first = 0, last = 0, none = 0;
      for (const Packet& p : mix) {
        const uint16_t c = t.classify(p.port, p.vlan, p.t);
        if (c == kNoClass) ++none;
        else if (c < tenth) ++first;
        else if (c >= n - tenth) ++last;
      }
      mix_json += std::string(mix_json.empty() ? "" : ",") + "\"" + set + "\":{\"packets\":" +
                  std::to_string(kMix) + ",\"first_tenth\":" + std::to_string(first) +
                  ",\"last_tenth\":" + std::to_string(last) + ",\"no_class\":" + std::to_string(none) + "}";
      r.note = "mix: " + std::to_string(first) + " first tenth, " + std::to_string(last) + " last tenth, " +
               std::to_string(none) + " none";
    }
    rows.push_back(r);
    timed.push_back({rows.size() - 1, [&t, &mix] {
                       uint64_t acc = 0;
                       for (const Packet& p : mix) acc += t.classify(p.port, p.vlan, p.t);
                       return acc;
                     }, {}});
  }
  // rte_acl.
  std::unique_ptr<Acl> acl;
  std::vector<uint32_t> res(kMix);
  {
    BuildTimes bt;
    for (unsigned b = 0; b < o.builds; ++b) {
      acl.reset();
      bt.time([&] { acl = buildAcl(rules, ""); });
    }
    const Acl& a = *acl;
    const std::string alg = algName(aclDumpField(a.ctx, "alg")), tries = aclDumpField(a.ctx, "num_tries");
    Row burst{set, "rte_acl (bursts of 32)", "", bt.cpuMs(), a.rule_bytes + a.runtime_bytes, bt.wallMs(), {}, ""};
    burst.note = std::to_string(a.acl_rules) + " ACL rules (" + std::to_string(a.left_out) +
                 " IPv6-only classes left out), " + tries + " tries, " + alg + "; run-time " +
                 bytesText(a.runtime_bytes) + " + rules " + bytesText(a.rule_bytes);
    burst.extra_json = ",\"acl_rules\":" + std::to_string(a.acl_rules) + ",\"classes_left_out\":" +
                       std::to_string(a.left_out) + ",\"num_tries\":\"" + tries + "\",\"alg\":\"" + alg +
                       "\",\"runtime_bytes\":" + std::to_string(a.runtime_bytes) +
                       ",\"rule_bytes\":" + std::to_string(a.rule_bytes);
    Row single = burst;
    single.structure = "rte_acl (one packet)";
    single.note = "the same context, rte_acl_classify(num 1) per packet";
    rows.push_back(burst);
    timed.push_back({rows.size() - 1, [ctx = a.ctx, &keys, &res] {
                       for (uint32_t i = 0; i < kMix; i += kBurst)
                         rte_acl_classify(ctx, keys.data() + i, res.data() + i, kBurst, 1);
                       uint64_t acc = 0;
                       for (uint32_t x : res) acc += x;
                       return acc;
                     }, {}});
    rows.push_back(single);
    timed.push_back({rows.size() - 1, [ctx = a.ctx, &keys] {
                       uint64_t acc = 0;
                       for (uint32_t i = 0; i < kMix; ++i) {
                         uint32_t x = 0;
                         rte_acl_classify(ctx, &keys[i], &x, 1, 1);
                         acc += x;
                       }
                       return acc;
                     }, {}});
  }
  // rte_lpm, for prefixes alone.
  std::unique_ptr<Lpm> lpm;
  if (prefixOnly(rules)) {
    BuildTimes bt;
    for (unsigned b = 0; b < o.builds; ++b) {
      lpm.reset();
      bt.time([&] { lpm = buildLpm(rules); });
    }
    Row r{set, "rte_lpm (src, dst)", "", bt.cpuMs(), lpm->heap_bytes, bt.wallMs(), {}, ""};
    r.note = "config: " + bytesText(lpm->config_bytes) + " (tbl24 64 MiB, " + std::to_string(kTbl8s) + " tbl8s)";
    r.extra_json = ",\"config_bytes\":" + std::to_string(lpm->config_bytes);
    rows.push_back(r);
    timed.push_back({rows.size() - 1, [l = lpm->lpm, &mix] {
                       uint64_t acc = 0;
                       for (const Packet& p : mix) acc += lpmClassify(l, p);
                       return acc;
                     }, {}});
  }
  timeAll(o, timed, rows);
}

int runBench(const Options& o) {
  std::vector<Row> rows;
  std::string mix_json;
  for (const std::string& s : o.sets) benchSet(o, s, rows, mix_json);
  std::printf("%-12s %-24s %10s %12s %10s %8s  %s\n", "rule set", "structure", "build ms", "memory", "cyc/pkt",
              "(min)", "notes");
  for (const Row& r : rows)
    std::printf("%-12s %-24s %10.3f %12s %10.2f %8.2f  %s\n", r.set.c_str(), r.structure.c_str(), r.build_ms,
                bytesText(r.memory).c_str(), r.cycles.median, r.cycles.min, r.note.c_str());
  std::string j = "{\"bench\":\"class_bench\",\"cpu\":" + std::to_string(o.cpu) + ",\"tsc_hz\":" +
                  std::to_string(rte_get_tsc_hz()) + ",\"builds\":" + std::to_string(o.builds) +
                  ",\"reps\":" + std::to_string(o.reps) + ",\"passes\":" + std::to_string(o.passes) + ",\"reps_redone\":" + std::to_string(g_redone) +
                  ",\"mix_packets\":" + std::to_string(kMix) + ",\"burst\":" + std::to_string(kBurst) +
                  ",\"mix\":{" + mix_json + "},\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    j += std::string(i ? "," : "") + "{\"set\":\"" + r.set + "\",\"structure\":\"" + r.structure +
         "\",\"build_ms\":" + fmt("%.4f", r.build_ms) + ",\"build_wall_ms\":" + fmt("%.4f", r.build_wall_ms) + ",\"memory_bytes\":" + std::to_string(r.memory) +
         ",\"cycles\":" + statsJson(r.cycles) + r.extra_json + "}";
  }
  j += "]}";
  std::printf("%s\n", j.c_str());
  return 0;
}

// ---- --check ----------------------------------------------------------------

int runCheck(const Options& o) {
  size_t bad_total = 0;
  for (const std::string& set : o.sets) {
    const std::vector<ClassRule> rules = ruleSet(set);
    const ClassTable cross(rules), bits(rules, 0);
    if (!cross.crossProduct()) die(set + ": the cross product was not built");
    if (bits.crossProduct()) die(set + ": cell limit 0 still built a cross product");
    std::unique_ptr<Acl> acl = buildAcl(rules, o.break_variant);
    std::unique_ptr<Lpm> lpm = prefixOnly(rules) ? buildLpm(rules) : nullptr;
    PacketGen g(rules, o.seed ^ std::hash<std::string>{}(set), true);
    std::vector<Packet> pkts;
    for (uint32_t i = 0; i < o.check_packets; ++i)
      pkts.push_back(i % 2 ? g.random() : g.towards(g.pick(rules.size())));
    std::vector<const uint8_t*> keys;
    for (const Packet& p : pkts) keys.push_back(reinterpret_cast<const uint8_t*>(&p.key));
    std::vector<uint32_t> burst(pkts.size());
    for (size_t i = 0; i < pkts.size(); i += kBurst)
      rte_acl_classify(acl->ctx, keys.data() + i, burst.data() + i, uint32_t(std::min<size_t>(kBurst, pkts.size() - i)), 1);
    size_t bad = 0, matched = 0;
    for (size_t i = 0; i < pkts.size(); ++i) {
      const Packet& p = pkts[i];
      const uint16_t want = cross.classify(p.port, p.vlan, p.t);
      matched += want != kNoClass;
      uint32_t one = 0;
      rte_acl_classify(acl->ctx, &keys[i], &one, 1, 1);
      const std::pair<const char*, uint16_t> got[] = {
          {"bit_vectors", bits.classify(p.port, p.vlan, p.t)},
          {"rte_acl (burst)", aclAnswer(burst[i])},
          {"rte_acl (one)", aclAnswer(one)},
          {"rte_lpm", lpm ? lpmClassify(lpm->lpm, p) : want},
      };
      for (const auto& [who, c] : got) {
        if (c == want) continue;
        if (++bad <= 5)
          std::fprintf(stderr,
                       "%s: %s says %d, cross product %d: port %u vlan %u proto %u %s:%u -> %s:%u\n",
                       set.c_str(), who, c == kNoClass ? -1 : int(c), want == kNoClass ? -1 : int(want),
                       p.port, p.vlan, p.t.proto, p.t.src.str().c_str(), p.t.sport,
                       p.t.dst.str().c_str(), p.t.dport);
      }
    }
    std::printf("%-12s %zu packets (%zu matching a class), %zu ACL rules, %s: %zu disagreements\n",
                set.c_str(), pkts.size(), matched, acl->acl_rules, lpm ? "ClassTable x2, rte_acl x2, rte_lpm"
                                                                       : "ClassTable x2, rte_acl x2",
                bad);
    bad_total += bad;
  }
  if (bad_total) {
    std::printf("FAIL: %zu disagreements with the cross product\n", bad_total);
    return 1;
  }
  std::printf("ok: every structure agrees with the cross product\n");
  return 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t c = s.find(',', at);
    if (c == std::string::npos) c = s.size();
    if (c > at) out.push_back(s.substr(at, c - at));
    at = c + 1;
  }
  return out;
}

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using gwlb::bench::die;
  gwlb::bench::Options o;
  o.cpu = gwlb::bench::defaultCpu();
  const char* usage =
      "usage: class_bench [--sets a,b,...] [--builds K] [--reps R] [--passes P] [--cpu C] [--seed X]\n"
      "       class_bench --check [--packets N] [--break dst-addr|dport] [--sets ...]";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--sets") o.sets = gwlb::bench::split(val());
    else if (a == "--builds") o.builds = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--reps") o.reps = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--passes") o.passes = unsigned(std::strtoul(val(), nullptr, 10));
    else if (a == "--cpu") o.cpu = std::atoi(val());
    else if (a == "--seed") o.seed = std::strtoull(val(), nullptr, 0);
    else if (a == "--check") o.check = true;
    else if (a == "--packets") o.check_packets = uint32_t(std::strtoul(val(), nullptr, 10));
    else if (a == "--break") o.break_variant = val();
    else die(usage);
  }
  if (o.builds == 0 || o.reps == 0 || o.passes == 0 || o.check_packets == 0)
    die("--builds, --reps, --passes and --packets must be positive");
  if (!o.break_variant.empty() && o.break_variant != "dst-addr" && o.break_variant != "dport")
    die("--break takes dst-addr or dport");
  try {
    // rte_lpm's tbl24 alone is 64 MiB; --no-huge memory is touched only as used.
    gwlb::dp::initEal("gwlb-class-bench", {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "512",
                                           "--log-level=*:warning", "--lcores=0@" + std::to_string(o.cpu)});
    return o.check ? gwlb::bench::runCheck(o) : gwlb::bench::runBench(o);
  } catch (const std::exception& e) {
    die(e.what());
  }
}
