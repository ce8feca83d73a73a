// multi_worker_bench --check (test `multi_worker`): the shared flow table's
// correctness under two workers, as multi_worker_bench.cc's comment says.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/multi_worker_bench.h"

namespace gwlb::bench {

int Bench::runCheck() {
  std::vector<std::string> fail;
  t_start_ = dp::monotonicNs();
  // 1. Both directions of every new flow at once: worker 0 client to server,
  //    worker 1 server to client, the same flows burst by burst.
  std::vector<uint32_t> l[2];
  for (uint32_t f : order_)
    for (unsigned d = 0; d < 2; ++d) l[d].push_back(item(f, false, d));
  for (unsigned i = 0; i < 2; ++i) {
    w_[i].items = &l[i];
    w_[i].cursor = 0;
    w_[i].lockstep = w_[i].capture = true;
  }
  runTogether(3, 0);
  uint64_t c0 = w_[0].st->counters.get(Counter::flows_created);
  uint64_t c1 = w_[1].st->counters.get(Counter::flows_created);
  std::fprintf(stderr, "new flows, both directions at once: flows_created %llu (worker 0) + %llu "
               "(worker 1) = %llu for %u flows; table holds %u\n", (unsigned long long)c0,
               (unsigned long long)c1, (unsigned long long)(c0 + c1), o_.flows, table_->count());
  if (c0 + c1 != o_.flows)
    fail.push_back("flows_created " + std::to_string(c0 + c1) + " for " + std::to_string(o_.flows) + " flows");
  if (table_->count() != o_.flows)
    fail.push_back("the table holds " + std::to_string(table_->count()) + " keys");
  uint32_t split = 0;
  for (uint32_t f = 0; f < o_.flows; ++f) {
    const Seen& a = seen_[size_t(f) * 2];
    const Seen& b = seen_[size_t(f) * 2 + 1];
    if (!a.fwd || !b.fwd || a.appliance != b.appliance || a.sport != b.sport ||
        std::memcmp(a.opts, b.opts, kOptsLen) != 0)
      ++split;
  }
  if (split) fail.push_back(std::to_string(split) + " flows not on one appliance/cookie both ways");
  // 2. The returns, each on the other worker than its forward.
  for (unsigned i = 0; i < 2; ++i) {
    l[i].clear();
    for (uint32_t f : order_) l[i].push_back(item(f, true, 1 - i));
    w_[i].cursor = 0;
  }
  runTogether(3, 0);
  uint32_t unreturned = 0;
  for (const Seen& s : seen_) unreturned += !s.ret;
  if (unreturned) fail.push_back(std::to_string(unreturned) + " returns did not come back");
  // 3. The 2w-asym mix (forward and return of each flow on different workers), free-running.
  for (unsigned i = 0; i < 2; ++i) {
    l[i].clear();
    for (uint32_t f : order_) {
      unsigned q = rssQueue(client(f).v4HostOrder(), kBenchServer.v4HostOrder(), clientPort(f), 53, 2);
      if (q == i) l[i].push_back(item(f, false, 0));
      else l[i].push_back(item(f, true, 0));
    }
    w_[i].cursor = 0;
    w_[i].lockstep = w_[i].capture = false;
  }
  runTogether(3, 0);
  uint64_t created = w_[0].st->counters.get(Counter::flows_created) +
                     w_[1].st->counters.get(Counter::flows_created);
  if (created != o_.flows) fail.push_back("established flows created again: " + std::to_string(created));
  for (const Worker& w : w_) {
    if (w.lost) fail.push_back("worker " + std::to_string(w.id) + ": " + drops(w));
    if (w.bad_l2) fail.push_back("worker " + std::to_string(w.id) + ": " + std::to_string(w.bad_l2) +
                                 " returns to the wrong router");
    if (w.unknown) fail.push_back("worker " + std::to_string(w.id) + ": unknown outputs");
  }
  uint64_t packets = 0;
  for (const Seen& s : seen_) packets += 2 * (s.fwd + s.ret);
  std::printf("{\"check\":%s,\"flows\":%u,\"flows_created\":[%llu,%llu],\"table_count\":%u}\n",
              fail.empty() ? "true" : "false", o_.flows, (unsigned long long)c0,
              (unsigned long long)c1, table_->count());
  for (const std::string& f : fail) std::fprintf(stderr, "check FAILED: %s\n", f.c_str());
  if (fail.empty())
    std::fprintf(stderr, "check ok: %u flows, both directions created at once on two workers, "
                 "returns on the other worker, no packet lost\n", o_.flows);
  return fail.empty() ? 0 : 1;
}

}  // namespace gwlb::bench
