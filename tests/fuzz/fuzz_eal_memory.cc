// Fuzz target 13: the EAL arguments and the memory plan of gwlbd
// --check-config (control/daemon/memory_plan.cc) and its lcore count (eal_lcores.cc): ealBudget over any argument list,
// planMemory over any dataplane sizes in their config ranges, then
// checkFits, formatPlan, mbufWarning and allocationHint. Input: bytes 0-7
// the sizes (workers 1..64, mbufs 1024..2^24, underlay MTU 576..9216, flow
// table 1024..2^27), then EAL arguments separated by '\n'. Hugepages are read
// from a directory that does not exist (none free), so runs are repeatable.
// Invariants (docs/fuzzing.md):
//  - nothing throws;
//  - an argument error is what checkFits reports; otherwise checkFits is ""
//    exactly when the EAL part fits, and a refusal is one line;
//  - --no-huge with neither -m nor --socket-mem gets DPDK's 64 MiB;
//  - the EAL part holds the mbuf pool, which is mbufs x one object;
//  - a --no-huge refusal names "-m", "N", and with exactly that -m the same
//    plan fits (the advice is enough);
//  - the lcore count of -l / --lcores / -c (control/config/eal_lcores.cc) is at most
//    1024, and checkLcores refuses exactly when a counted number is below
//    workers + 1, in one line.
#include <string>
#include <vector>

#include "control/daemon/memory_plan.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb::ctl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  Config c;
  c.dataplane.workers = 1 + data[0] % 64;
  c.dataplane.mbufs = std::min<uint32_t>(1u << 24, 1024 + ((uint32_t(data[1]) << 8 | data[2]) << 8));
  c.node.underlay_mtu = 576 + ((uint32_t(data[3]) << 8 | data[4]) % (9216 - 576 + 1));
  c.dataplane.flow_table_size =
      std::min<uint32_t>(1u << 27, 1024 + ((uint32_t(data[5]) << 16 | uint32_t(data[6]) << 8 | data[7]) << 3));
  std::vector<std::string> args(1);
  for (size_t i = 8; i < size; ++i) {
    if (data[i] == '\n') args.emplace_back();
    else args.back() += char(data[i]);
  }
  const std::string dir = "/nonexistent-gwlb-fuzz-hugepages";
  EalBudget b = ealBudget(args, dir);
  MemoryPlan p = planMemory(c, b.pci_ports);
  std::string misfit = checkFits(p, b);
  if (!b.error.empty()) {
    FUZZ_CHECK(misfit == b.error, "checkFits '%s' is not the argument error '%s'", misfit.c_str(),
               b.error.c_str());
  } else {
    FUZZ_CHECK(misfit.empty() == (p.ealBytes() <= b.bytes), "fits %d but need %llu of %llu",
               int(misfit.empty()), (unsigned long long)p.ealBytes(), (unsigned long long)b.bytes);
  }
  FUZZ_CHECK(misfit.find('\n') == std::string::npos, "a refusal of more than one line: %s",
             misfit.c_str());
  bool m_given = false;
  for (const std::string& a : args)
    if (a.rfind("-m", 0) == 0 || a.rfind("--socket-mem", 0) == 0) m_given = true;
  if (b.no_huge && !m_given && b.error.empty())
    FUZZ_CHECK(b.bytes == 64ull << 20, "--no-huge without -m: %llu bytes", (unsigned long long)b.bytes);
  const MemoryPart* pool = p.find("mbuf pool");
  FUZZ_CHECK(pool && pool->eal && p.ealBytes() >= pool->bytes, "the EAL part lacks the mbuf pool");
  FUZZ_CHECK(pool->bytes == uint64_t(c.dataplane.mbufs) * mbufObjectBytes(mbufDataRoom(c)),
             "mbuf pool %llu bytes", (unsigned long long)pool->bytes);
  FUZZ_CHECK(flowTableIpv4Bytes(c.dataplane.flow_table_size) < flowTableBytes(c.dataplane.flow_table_size),
             "IPv4 part not below the whole flow table");
  if (b.no_huge && b.error.empty() && !misfit.empty()) {
    size_t at = misfit.find("\"-m\", \"");
    FUZZ_CHECK(at != std::string::npos, "a --no-huge refusal without the -m to give: %s", misfit.c_str());
    std::string n = misfit.substr(at + 7, misfit.find('"', at + 7) - at - 7);
    EalBudget enough = ealBudget({"--no-huge", "-m", n}, dir);
    FUZZ_CHECK(enough.error.empty() && checkFits(p, enough).empty(), "-m %s (as advised) does not fit",
               n.c_str());
  }
  unsigned lcores = ealLcoreCount(args);
  std::string short_of = checkLcores(c, args);
  FUZZ_CHECK(lcores <= 1024, "%u lcores", lcores);
  FUZZ_CHECK(short_of.empty() == (lcores == 0 || lcores >= c.dataplane.workers + 1),
             "%u lcores for %u workers: '%s'", lcores, c.dataplane.workers, short_of.c_str());
  FUZZ_CHECK(short_of.find('\n') == std::string::npos, "a refusal of more than one line");
  FUZZ_CHECK(!formatPlan(p, b).empty(), "empty report");
  (void)mbufWarning(c, b.pci_ports);
  FUZZ_CHECK(!allocationHint(c, "mbuf pool").empty(), "empty hint");
  return 0;
}
