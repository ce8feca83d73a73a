// The dp suite's main: one EAL per process, set up by a GoogleTest Environment
// before any test runs. No hugepages, no PCI, no shared config; two lcores
// (the main one runs every test, the second one is the extra worker of the
// two-worker test).
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <sched.h>

#include <exception>
#include <string>
#include <vector>

#include "dataplane/eal.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

rte_mempool* g_pool = nullptr;
unsigned g_worker_lcore = RTE_MAX_LCORE;

// --lcores: lcore 0 and lcore 1 on two different CPUs of this process's
// affinity when it has two (so the two-worker test really runs in parallel:
// the scheduler cannot stack both on one CPU), else both on the one CPU.
std::string lcoresArg() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty()) cpus.push_back(0);
  if (cpus.size() == 1) cpus.push_back(cpus[0]);
  return "--lcores=0@" + std::to_string(cpus[0]) + ",1@" + std::to_string(cpus[1]);
}

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    try {
      dp::initEal("gwlb-dp-tests", {"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
                                    "-m", "512", "--log-level=*:warning", lcoresArg()});
      g_pool = dp::createMbufPool("dpt_pool", 4095, 4096);
    } catch (const std::exception& e) {
      FAIL() << "EAL set-up failed: " << e.what();
    }
    g_worker_lcore = rte_get_next_lcore(-1, 1, 0);
  }
  void TearDown() override {
    // The pool lives as long as EAL; rte_eal_cleanup releases both.
    rte_eal_cleanup();
  }
};

}  // namespace

rte_mempool* testPool() { return g_pool; }
unsigned workerLcore() { return g_worker_lcore; }

}  // namespace gwlb::dptest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new gwlb::dptest::EalEnvironment);
  return RUN_ALL_TESTS();
}
