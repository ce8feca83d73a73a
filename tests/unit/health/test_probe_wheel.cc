// The timing wheel of the health checker's schedule: entries come out at
// their due time, in time order, also when due rounds later; nextDue says
// when to wake; nothing is lost when the caller wakes late. And a fleet's
// probes start spread over the interval, not in bursts: 10,000 appliances on
// the checker's schedule (first probe after firstProbeDelayMs, each next one
// an interval after its result) fill every 10 ms of a second about equally.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/health.h"
#include "control/health/probe_wheel.h"

namespace gwlb::ctl {
namespace {

std::vector<uint32_t> keys(const std::vector<ProbeWheel::Entry>& v) {
  std::vector<uint32_t> k;
  for (const auto& e : v) k.push_back(e.key);
  return k;
}

TEST(ProbeWheel, EntriesComeOutAtTheirTimeInOrder) {
  ProbeWheel w(1000);
  w.add(1005, 2, 1);
  w.add(1003, 1, 1);
  w.add(1005, 3, 1);
  EXPECT_EQ(w.nextDue(), 1003u);
  std::vector<ProbeWheel::Entry> out;
  EXPECT_EQ(w.expire(1002, out), 0u);
  EXPECT_EQ(w.expire(1004, out), 1u);
  EXPECT_EQ(keys(out), (std::vector<uint32_t>{1}));
  EXPECT_EQ(w.nextDue(), 1005u);
  out.clear();
  EXPECT_EQ(w.expire(1005, out), 2u);
  EXPECT_EQ(keys(out), (std::vector<uint32_t>{2, 3})) << "one slot: in the order added";
  EXPECT_EQ(w.size(), 0u);
  EXPECT_FALSE(w.nextDue());
}

TEST(ProbeWheel, LaterRoundsWaitForTheirOwnTime) {
  ProbeWheel w(0);
  const uint64_t far = 3 * ProbeWheel::kSlots + 7;  // the same slot as 7, three rounds on
  w.add(far, 9, 4);
  w.add(7, 8, 1);
  std::vector<ProbeWheel::Entry> out;
  EXPECT_EQ(w.expire(7, out), 1u);
  EXPECT_EQ(out.at(0).key, 8u);
  out.clear();
  for (uint64_t t = 8; t < far; t += 1000) EXPECT_EQ(w.expire(t, out), 0u) << t;
  EXPECT_EQ(w.expire(far, out), 1u);
  EXPECT_EQ(out.at(0).key, 9u);
  EXPECT_EQ(out.at(0).seq, 4u);
}

TEST(ProbeWheel, AWakeUpLateTakesEverythingDue) {
  ProbeWheel w(0);
  for (uint32_t k = 0; k < 100; ++k) w.add(k * 97, k, 1);  // up to 9.6 s: past two rounds
  std::vector<ProbeWheel::Entry> out;
  // The caller slept 20 s: one call returns every entry, each once.
  EXPECT_EQ(w.expire(20000, out), 100u);
  std::vector<uint32_t> k = keys(out);
  std::sort(k.begin(), k.end());
  for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(k.at(i), i);
  // And one due in the past is due at once.
  w.add(5, 7, 2);
  EXPECT_EQ(w.nextDue(), 20001u);
  out.clear();
  EXPECT_EQ(w.expire(20001, out), 1u);
}

// Starts per 10 ms of one interval, for `n` appliances at consecutive
// addresses from 10.0.0.1, scheduled as HealthChecker does: the first probe
// firstProbeDelayMs (jitter on or off) after the configuration, each next one
// interval_ms after its result; the checker wakes every millisecond and each
// probe's result comes 1-8 ms after its start (an answering appliance on a
// LAN). The interval counted is the fourth: three rounds of results have
// shifted every start by its latencies.
std::vector<uint32_t> startsPer10ms(uint32_t n, bool jitter) {
  HealthParams p;
  p.interval_ms = 1000;
  ProbeWheel w(0);
  for (uint32_t i = 0; i < n; ++i) w.add(firstProbeDelayMs(p, 0x0A000001u + i, jitter), i, 1);
  std::vector<uint32_t> bins(p.interval_ms / 10, 0);
  std::vector<ProbeWheel::Entry> due;
  uint32_t round = 0;
  for (uint64_t now = 0; now < 4 * p.interval_ms; ++now) {
    due.clear();
    w.expire(now, due);
    for (const ProbeWheel::Entry& e : due) {
      if (now >= 3 * p.interval_ms) ++bins[(now - 3 * p.interval_ms) / 10];
      const uint64_t latency = 1 + (e.key * 2654435761u + ++round) % 8;
      w.add(now + latency + p.interval_ms, e.key, e.seq);
    }
  }
  return bins;
}

TEST(ProbeWheel, TenThousandAppliancesStartSpreadOverTheInterval) {
  const uint32_t n = 10000;
  const std::vector<uint32_t> bins = startsPer10ms(n, true);
  uint32_t total = 0, lo = ~0u, hi = 0;
  for (uint32_t b : bins) total += b, lo = std::min(lo, b), hi = std::max(hi, b);
  // Each appliance starts about once a second (a bit less: its latency adds
  // to the interval), so ~99 a bin; binomial noise puts the busiest of 100
  // bins near 125 and the quietest near 75.
  EXPECT_GE(total, n * 98 / 100);
  EXPECT_LE(total, n);
  const double mean = double(total) / double(bins.size());
  EXPECT_LE(hi, 1.5 * mean) << "a burst: " << hi << " starts in one 10 ms against a mean of " << mean;
  EXPECT_GE(lo, 0.5 * mean) << "a gap: " << lo << " starts in one 10 ms against a mean of " << mean;
}

// What the test above would see if the probes were not spread: every start
// in one 10 ms (so the bound above can fail).
TEST(ProbeWheel, WithoutJitterTheFleetStartsInOneBurst) {
  const std::vector<uint32_t> bins = startsPer10ms(10000, false);
  EXPECT_GT(*std::max_element(bins.begin(), bins.end()), 5000u);
}

}  // namespace
}  // namespace gwlb::ctl
