// The memory a config needs and what the EAL gets (control/daemon/memory_plan.h,
// gwlbd --check-config): sizes from the same layouts the code allocates, the
// EAL's arguments and hugepages read as DPDK reads them. No EAL needed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <rte_mbuf.h>

#include <filesystem>
#include <fstream>

#include "control/daemon/memory_plan.h"
#include "control/engine/snapshot_builder.h"
#include "control/fleet/sync_sent_log.h"
#include "dataplane/flow_table.h"
#include "tests/unit/small_config.h"

namespace gwlb::ctl {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// The plan's flow-table size is what dp::FlowTable really maps.
TEST(MemoryPlan, FlowTableMatchesTheTable) {
  for (uint32_t cap : {1024u, 65536u, 1000000u, 4194304u}) {
    dp::FlowTable t("t", cap, nullptr, 0);
    EXPECT_EQ(flowTableBytes(cap), t.reservedBytes()) << cap;
    EXPECT_EQ(flowTableMarkerBytes(cap), t.markerBytes()) << cap;
    EXPECT_LT(flowTableIpv4Bytes(cap), flowTableBytes(cap));
    // ~1.1 slots per flow, 64 B per IPv4 slot and 4 B of tag: ~74.8 B per flow
    // (small tables: rounded up to whole pages).
    if (cap >= 65536) {
      EXPECT_NEAR(double(flowTableIpv4Bytes(cap)) / cap, 1.1 * 68, 1) << cap;
    }
  }
}

// Issue 24 item 5: with fleet sync on, what it remembers per table position
// (control/fleet/sync_sent_log.h: when each flow was last sent) is counted, as the
// process memory FleetSync maps: 8 B per position, the IPv4 half apart.
TEST(MemoryPlan, FleetSyncCountsItsSentLog) {
  Config c = testing::smallConfig();
  c.dataplane.flow_table_size = 1000000;
  MemoryPlan without = planMemory(c, 0);
  EXPECT_EQ(without.find("fleet sync"), nullptr) << "no sync, no sent log";
  c.fleet.configured = true;
  c.fleet.node_name = "gw-a";
  c.fleet.sync_listen = "192.0.2.1:7400";
  c.fleet.peers = {"192.0.2.2:7400"};
  MemoryPlan p = planMemory(c, 0);
  const MemoryPart* f = p.find("fleet sync");
  ASSERT_NE(f, nullptr) << "--check-config does not count the sync's sent log";
  EXPECT_FALSE(f->eal);
  dp::FlowTable t("t", 1000000, nullptr, 0);
  SentLog log(t.slots());
  EXPECT_EQ(f->bytes, log.reservedBytes());
  EXPECT_EQ(f->bytes, sentLogBytes(1000000));
  EXPECT_LE(f->bytes, 8 * t.slots() + 4095) << "at most 8 B per table position";
  EXPECT_EQ(sentLogIpv4Bytes(1000000), 8 * (t.slots() / 2));
  EXPECT_EQ(p.processBytes(), without.processBytes() + f->bytes);
  EXPECT_NE(formatPlan(p, EalBudget{}).find("fleet sync"), std::string::npos);
}

// The compiled traffic classes are process memory, counted twice (a reload
// holds the running and the new table): scattered host routes past the
// IPv4 trie's budget compile to the interval search, and the report says so.
TEST(MemoryPlan, TrafficClassesCountTheirCompiledTables) {
  Config c = testing::smallConfig();
  MemoryPlan without = planMemory(c, 0);
  EXPECT_EQ(without.find("traffic classes"), nullptr);
  uint32_t x = 7;
  for (int i = 0; i < 60; ++i) {
    TrafficClassConfig t;
    t.name = "hosts" + std::to_string(i);
    t.action = ClassAction::kBypass;
    for (int k = 0; k < 1000; ++k) {
      x = x * 1664525u + 1013904223u;
      t.match.prefixes.push_back({IpAddr::v4(0x0B000000u + x % 0xC0000000u), 32});
    }
    c.traffic_classes.push_back(std::move(t));
  }
  MemoryPlan p = planMemory(c, 0);
  const MemoryPart* tc = p.find("traffic classes");
  ASSERT_NE(tc, nullptr) << "--check-config does not count the compiled classes";
  EXPECT_FALSE(tc->eal);
  const ClassTable t = compiledClasses(classRules(c));
  EXPECT_FALSE(t.ipv4Trie());
  EXPECT_EQ(tc->bytes, 2 * t.memoryBytes());
  EXPECT_GT(t.memoryBytes(), 60000u * 8) << "at least the intervals";
  EXPECT_LT(t.memoryBytes(), 16 * kMiB);
  EXPECT_EQ(p.processBytes(), without.processBytes() + tc->bytes);
  const std::string report = formatPlan(p, EalBudget{});
  EXPECT_NE(report.find("traffic classes"), std::string::npos) << report;
  EXPECT_NE(report.find("60 classes compiled (cross product, IPv4 interval search)"), std::string::npos) << report;
}

// The sent log's pages become resident only where written: positions of
// the IPv4 half leave the IPv6 half (the second) untouched.
TEST(MemoryPlan, TheSentLogIsResidentOnlyWhereWritten) {
  const size_t n = 1u << 20;  // positions: 8 MiB mapped
  SentLog log(n);
  EXPECT_EQ(log.reservedBytes(), n * 8);
  EXPECT_EQ(log.residentBytes(), 0u);
  uint64_t at = 0;
  uint16_t moves = 0;
  EXPECT_FALSE(log.get(5, 1'000'000'000'000ULL, at, moves)) << "never sent";
  log.mark(5, 1'000'000'000'000ULL, 3);
  log.mark(n / 2 - 1, 1'000'000'000'000ULL, 0);
  EXPECT_EQ(log.residentBytes(), 2 * 4096u);
  EXPECT_EQ(log.residentBytes(n / 2), 0u) << "the IPv6 half";
  ASSERT_TRUE(log.get(5, 1'000'500'000'000ULL, at, moves));
  EXPECT_EQ(moves, 3);
  EXPECT_LE(at, 1'000'000'000'000ULL);
  EXPECT_GT(at + dp::kTickNs, 1'000'000'000'000ULL) << "the send's time, to its tick";
  log.mark(n / 2, 1'000'000'000'000ULL, 0);
  EXPECT_EQ(log.residentBytes(n / 2), 4096u);
  // Beyond the horizon (12.4 days) a send reads as never: its tick may have wrapped.
  uint64_t later = 1'000'000'000'000ULL + (uint64_t(SentLog::kHorizonTicks) << dp::kTickShift);
  EXPECT_FALSE(log.get(5, later, at, moves));
}

TEST(MemoryPlan, MbufPoolBySizeAndMtu) {
  Config c = testing::smallConfig();
  c.dataplane.mbufs = 65535;
  c.node.underlay_mtu = 9000;
  EXPECT_EQ(mbufDataRoom(c), 9064u);
  uint64_t obj = mbufObjectBytes(9064);
  EXPECT_GE(obj, 9064u + RTE_PKTMBUF_HEADROOM + sizeof(rte_mbuf));
  EXPECT_LT(obj, 9064u + RTE_PKTMBUF_HEADROOM + sizeof(rte_mbuf) + 256);
  MemoryPlan p = planMemory(c, 0);
  ASSERT_NE(p.find("mbuf pool"), nullptr);
  EXPECT_EQ(p.find("mbuf pool")->bytes, 65535 * obj);
  EXPECT_TRUE(p.find("mbuf pool")->eal);
  EXPECT_FALSE(p.find("flow table")->eal);  // anonymous memory, not hugepages
  EXPECT_EQ(p.find("NIC descriptor rings"), nullptr);  // virtual devices only
  // Measured (tests/daemon/run_memory.sh): this config starts with -m 594 and not 590.
  EXPECT_GT(p.ealBytes(), 590 * kMiB);
  EXPECT_LT(p.ealBytes(), 600 * kMiB);
  MemoryPlan pci = planMemory(c, 2);
  ASSERT_NE(pci.find("NIC descriptor rings"), nullptr);
  EXPECT_GT(pci.ealBytes(), p.ealBytes());
}

// Issue 28 item 4: with the EAL on hugepages the flow table's tags and IPv4
// slots are hugepage memory (dp::FlowTable takes them from the EAL's heap),
// counted against what the EAL gets; the IPv6 slots stay process memory.
// Under --no-huge all of it is process memory, and the report still says how
// much hugepage memory it would take.
TEST(MemoryPlan, FlowTableInHugepagesWhenTheEalHasThem) {
  Config c = testing::smallConfig();
  c.dataplane.flow_table_size = 1000000;
  MemoryPlan small = planMemory(c, 0, false);
  MemoryPlan huge = planMemory(c, 0, true);
  uint64_t ft4 = flowTableIpv4Bytes(1000000), ft = flowTableBytes(1000000);
  ASSERT_NE(huge.find("flow table"), nullptr);
  EXPECT_TRUE(huge.find("flow table")->eal);
  EXPECT_EQ(huge.find("flow table")->bytes, ft4);
  ASSERT_NE(huge.find("flow table, IPv6 slots"), nullptr);
  EXPECT_FALSE(huge.find("flow table, IPv6 slots")->eal);
  EXPECT_EQ(huge.find("flow table, IPv6 slots")->bytes, ft - ft4);
  EXPECT_EQ(huge.ealBytes(), small.ealBytes() + ft4);
  EXPECT_EQ(huge.processBytes() + ft4, small.processBytes());
  std::string report = formatPlan(huge, EalBudget{});
  EXPECT_NE(report.find("tags and IPv4 slots in hugepages"), std::string::npos) << report;
  EXPECT_NE(report.find(mib(ft4)), std::string::npos) << report;
  EXPECT_FALSE(small.find("flow table")->eal);
  EXPECT_EQ(small.find("flow table, IPv6 slots"), nullptr);
  EXPECT_NE(small.find("flow table")->detail.find(mib(ft4) + " of hugepages when the EAL has them"),
            std::string::npos) << small.find("flow table")->detail;
  // The hugepages the check asks for include the flow table.
  EalBudget b{};
  b.bytes = small.ealBytes();
  b.source = "test";
  EXPECT_EQ(checkFits(small, b), "");
  std::string e = checkFits(huge, b);
  EXPECT_NE(e.find("reserve at least"), std::string::npos) << e;
}

TEST(MemoryPlan, EalArguments) {
  EalBudget b = ealBudget({"--no-huge", "--no-pci", "-m", "1024"});
  EXPECT_TRUE(b.error.empty());
  EXPECT_EQ(b.bytes, 1024 * kMiB);
  EXPECT_EQ(b.pci_ports, 0u);
  b = ealBudget({"--no-huge", "-m512", "-a", "0000:3b:00.0", "--allow=0000:3b:00.1"});
  EXPECT_EQ(b.bytes, 512 * kMiB);
  EXPECT_EQ(b.pci_ports, 2u);
  // DPDK 22.11 gives 64 MiB with --no-huge and no -m (MEMSIZE_IF_NO_HUGE_PAGE).
  b = ealBudget({"--no-huge", "--no-pci"});
  EXPECT_EQ(b.bytes, 64 * kMiB);
  EXPECT_NE(b.source.find("default"), std::string::npos);
  EXPECT_NE(ealBudget({"--no-huge", "--socket-mem", "512"}).error.find("--socket-mem"),
            std::string::npos);
  EXPECT_NE(ealBudget({"-m", "lots"}).error.find("-m lots"), std::string::npos);
  EXPECT_NE(ealBudget({"-m", "64", "--socket-mem=64"}).error, "");
}

class Hugepages : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gwlb-hp-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void pages(const std::string& size, unsigned free) {
    std::filesystem::create_directories(dir_ / ("hugepages-" + size));
    std::ofstream(dir_ / ("hugepages-" + size) / "free_hugepages") << free << "\n";
  }
  std::filesystem::path dir_;
};

TEST_F(Hugepages, FreePagesOfEverySize) {
  pages("2048kB", 512);    // 1 GiB
  pages("1048576kB", 2);   // 2 GiB
  EalBudget b = ealBudget({"-l", "0-2"}, dir_.string());
  EXPECT_TRUE(b.error.empty()) << b.error;
  EXPECT_EQ(b.bytes, 3072 * kMiB);
  EXPECT_EQ(b.pci_ports, 1u);  // no allow-list: at least one PCI port
  // -m within the free pages: the EAL may grow to all of them (dynamic memory).
  EXPECT_EQ(ealBudget({"-m", "1024"}, dir_.string()).bytes, 3072 * kMiB);
  // ... but with --legacy-mem it keeps what -m / --socket-mem took.
  EXPECT_EQ(ealBudget({"--socket-mem=256,256", "--legacy-mem"}, dir_.string()).bytes,
            512 * kMiB);
  // More than is free: DPDK fails at start, and so does the check.
  std::string e = ealBudget({"-m", "4096"}, dir_.string()).error;
  EXPECT_NE(e.find("-m 4096"), std::string::npos) << e;
  EXPECT_NE(e.find("3072.0 MiB"), std::string::npos) << e;
}

TEST_F(Hugepages, NoneFreeFailsWithWhatToDo) {
  pages("2048kB", 0);
  Config c = testing::smallConfig();
  EalBudget b = ealBudget({}, dir_.string());
  EXPECT_EQ(b.bytes, 0u);
  std::string e = checkFits(planMemory(c, b.pci_ports), b);
  EXPECT_NE(e.find("reserve at least"), std::string::npos) << e;
  EXPECT_NE(e.find("hugepages"), std::string::npos) << e;
  EXPECT_NE(e.find("dataplane.mbufs"), std::string::npos) << e;
}

// Checking the next config of a running gateway: the hugepages the running
// gwlbd holds come back when it stops (a restart), so they count as the
// EAL's, and the report says where they come from. Other processes' do not.
TEST_F(Hugepages, ThoseTheRunningGwlbdHoldsCount) {
  pages("2048kB", 128);  // 256 MiB free
  const std::filesystem::path proc = dir_ / "proc";
  auto process = [&](const std::string& pid, const std::string& name, uint64_t hugetlb_kb) {
    std::filesystem::create_directories(proc / pid);
    std::ofstream(proc / pid / "comm") << name << "\n";
    std::ofstream(proc / pid / "status") << "Name:\t" << name << "\nVmRSS:\t  1000 kB\n"
                                         << "HugetlbPages:\t  " << hugetlb_kb << " kB\n";
  };
  process("4242", "gwlbd", 600 * 1024);  // 600 MiB
  process("4343", "other-dpdk-app", 400 * 1024);
  process(std::to_string(::getpid()), "gwlbd", 100 * 1024);  // this process: not counted
  EalBudget b = ealBudget({"-m", "512"}, dir_.string(), proc.string());
  EXPECT_TRUE(b.error.empty()) << b.error;
  EXPECT_EQ(b.bytes, 856 * kMiB);
  EXPECT_NE(b.source.find("600.0 MiB the running gwlbd (pid 4242) holds until it stops"),
            std::string::npos) << b.source;
  Config c = testing::smallConfig();
  EXPECT_EQ(checkFits(planMemory(c, b.pci_ports, true), b), "");
  // Beyond both: the error names the free pages and the held ones.
  std::string e = ealBudget({"-m", "1024"}, dir_.string(), proc.string()).error;
  EXPECT_NE(e.find("256.0 MiB are free and the running gwlbd (pid 4242) holds 600.0 MiB"),
            std::string::npos) << e;
  // No gwlbd running: the free pages alone.
  std::filesystem::remove_all(proc / "4242");
  EXPECT_EQ(ealBudget({"-l", "0"}, dir_.string(), proc.string()).bytes, 256 * kMiB);
  EXPECT_NE(ealBudget({"-m", "512"}, dir_.string(), proc.string()).error, "");
}

TEST(MemoryPlan, TooSmallSaysWhichKeyAndHowMuch) {
  Config c = testing::smallConfig();
  c.dataplane.mbufs = 65535;
  c.node.underlay_mtu = 9000;
  MemoryPlan p = planMemory(c, 0);
  EalBudget b = ealBudget({"--no-huge", "--no-pci", "-m", "256"});
  std::string e = checkFits(p, b);
  uint64_t need_mib = (p.ealBytes() + kMiB - 1) / kMiB;
  EXPECT_NE(e.find("\"-m\", \"" + std::to_string(need_mib) + "\""), std::string::npos) << e;
  EXPECT_NE(e.find("dataplane.mbufs"), std::string::npos) << e;
  EXPECT_NE(e.find("-m 256"), std::string::npos) << e;
  b = ealBudget({"--no-huge", "--no-pci", "-m", std::to_string(need_mib)});
  EXPECT_EQ(checkFits(p, b), "");
  std::string report = formatPlan(p, b);
  for (const char* part : {"mbuf pool", "flow table", "rings", "worker state", "EAL memory needed",
                           "process memory"})
    EXPECT_NE(report.find(part), std::string::npos) << part << "\n" << report;
}

}  // namespace
}  // namespace gwlb::ctl

namespace gwlb::ctl {
namespace {

// Every RX descriptor of a PCI port holds an mbuf from the start: too few and
// the port fails to start. Virtual devices (no PCI ports) are not judged.
TEST(MemoryPlan, MbufsForTheRxRings) {
  Config c = testing::smallConfig();
  c.dataplane.workers = 4;
  c.dataplane.mbufs = 4096;  // 2 ports x 4 queues x 1024 descriptors = 8192
  std::string w = mbufWarning(c, 2);
  EXPECT_NE(w.find("cannot fill"), std::string::npos) << w;
  EXPECT_NE(w.find("8192 descriptors"), std::string::npos) << w;
  EXPECT_NE(w.find("dataplane.mbufs"), std::string::npos) << w;
  c.dataplane.mbufs = 10000;  // fills them, little beside
  EXPECT_NE(mbufWarning(c, 2).find("barely fill"), std::string::npos);
  c.dataplane.mbufs = 65535;
  EXPECT_EQ(mbufWarning(c, 2), "");
  c.dataplane.mbufs = 4096;
  EXPECT_EQ(mbufWarning(c, 0), "");
}

}  // namespace
}  // namespace gwlb::ctl

namespace gwlb::ctl {
namespace {

// A start-up failure says what to change: the EAL's memory for the pool, the
// process's address space for the flow table (anonymous memory).
TEST(MemoryPlan, AllocationHints) {
  Config c = testing::smallConfig();
  std::string pool = allocationHint(c, "mbuf pool");
  EXPECT_NE(pool.find("give the EAL more memory"), std::string::npos) << pool;
  EXPECT_NE(pool.find("lower dataplane.mbufs"), std::string::npos) << pool;
  std::string flows = allocationHint(c, "flow table");
  EXPECT_NE(flows.find("process memory, not hugepages"), std::string::npos) << flows;
  EXPECT_NE(flows.find("lower dataplane.flow_table_size"), std::string::npos) << flows;
}

}  // namespace
}  // namespace gwlb::ctl
