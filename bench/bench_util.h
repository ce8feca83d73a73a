// Small helpers the benchmarks share: a distribution summary, printf-style
// formatting of one number, the cpu a pinned benchmark defaults to, pinning,
// and the value of a command-line option.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace gwlb::bench {

struct Stats {
  double median = 0, min = 0, p10 = 0, p90 = 0, max = 0;
};

// Median, extremes and the 10th/90th percentiles (nearest rank) of v.
inline Stats stats(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  auto q = [&](double f) { return v[size_t(f * double(v.size() - 1) + 0.5)]; };
  size_t n = v.size();
  double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {med, v.front(), q(0.1), q(0.9), v.back()};
}

inline std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// The highest-numbered cpu this process may run on (benchmarks pin their
// worker there, away from cpu 0 where the rest of the machine tends to run).
inline int defaultCpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int last = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) last = c;
  return last;
}

// Pins the calling thread, and the threads it starts afterwards, to `cpu`
// (a negative cpu: defaultCpu()). Returns the cpu pinned to.
inline int pinToCpu(int cpu) {
  if (cpu < 0) cpu = defaultCpu();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
  return cpu;
}

// The value after option argv[i] (i moves past it); exits 2 naming the
// option when there is none.
inline const char* optionValue(int argc, char** argv, int& i) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "%s needs a value\n", argv[i]);
    std::exit(2);
  }
  return argv[++i];
}

}  // namespace gwlb::bench
