// The timing wheel of the health checker's schedule: entries come out at
// their due time, in time order, also when due rounds later; nextDue says
// when to wake; nothing is lost when the caller wakes late.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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

}  // namespace
}  // namespace gwlb::ctl
