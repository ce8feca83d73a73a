// Traffic classes compiled apart from the control thread (EngineInputs::
// compile_classes_apart, control/engine/class_compiler.h): a config change
// with new classes waits, whole, for its compile while the running snapshot
// and its classes serve; overlapping changes: the latest wins; an engine
// destroyed mid-compile joins the compiler's thread.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "control/engine/engine.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

ctl::TrafficClassConfig cls(const std::string& name, uint8_t proto, ctl::ClassAction a) {
  ctl::TrafficClassConfig t;
  t.name = name;
  if (proto) t.match.protocols = {proto};
  t.action = a;
  return t;
}

// `n` classes of 1,000 scattered host routes each (compiles for a while,
// past the IPv4 trie's budget), then a catch-all.
std::vector<ctl::TrafficClassConfig> scattered(size_t n, uint32_t seed) {
  std::vector<ctl::TrafficClassConfig> out;
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    ctl::TrafficClassConfig t = cls("hosts" + std::to_string(i), 0, ctl::ClassAction::kBypass);
    for (int k = 0; k < 1000; ++k) {
      x = x * 1664525u + 1013904223u;
      const uint8_t b[4] = {uint8_t(11 + x % 200), uint8_t(x >> 8), uint8_t(x >> 16), uint8_t(x >> 24)};
      t.match.prefixes.push_back({IpAddr::v4(b), 32});
    }
    out.push_back(std::move(t));
  }
  out.push_back(cls("rest", 0, ctl::ClassAction::kInspect));
  return out;
}

class ClassCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    const Net& n = net();
    devices_ = {n.our_a, n.our_b, n.our_v, MacAddr{}};
    ctl::Config c = h_.config();
    c.traffic_classes = {cls("dns", kProtoUdp, ctl::ClassAction::kInspect),
                         cls("rest", 0, ctl::ClassAction::kInspect)};
    h_.dataplane().snapshot.store(nullptr);
    ctl::EngineInputs in;
    in.devices = &devices_;
    in.compile_classes_apart = true;
    ctl::EngineHooks hooks;
    hooks.decided = [this](const ctl::Decision& d) {
      if (d.kind == ctl::Decision::Kind::kSnapshot && d.text.find("(config)") != std::string::npos) ++configs_;
    };
    engine_ = std::make_unique<ctl::Engine>(c, h_.flows(), h_.dataplane(), h_.qsbr(), in, hooks);
    // Only settle() lets time pass: a change's own catch-up would otherwise
    // publish a compile that finished before it (right, but the tests would
    // then depend on how fast the compiler is).
    engine_->setCatchUp(false);
    engine_->start(h_.now);
  }
  void TearDown() override {
    h_.quiescent();
    engine_.reset();
  }
  uint64_t change(std::vector<ctl::TrafficClassConfig> classes, uint32_t weight = 100) {
    ctl::Config c = engine_->config();
    c.traffic_classes = std::move(classes);
    c.server_groups[0].appliances[0].weight = weight;
    return engine_->applyConfig(c, "test", h_.now, true).generation;
  }
  // Ticks as gwlbd's driver does until no change is pending (at most 60 s).
  void settle() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (engine_->pending() && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      engine_->advance(h_.now);
      h_.quiescent();
    }
    ASSERT_FALSE(engine_->pending()) << "the compile did not finish";
  }
  // A new flow each time (a flow keeps the class it began with).
  Verdict sendUdp() {
    const Net& n = net();
    const uint16_t sport = next_sport_++;
    Result r = h_.send(Frame{n.fromA(), kEthIpv4, ipv4(n.client4, n.server4, kProtoUdp, udp(n.client4, n.server4, sport, 53))});
    h_.quiescent();
    return r.verdict;
  }

  Harness h_;
  ctl::PortMacs devices_;
  std::unique_ptr<ctl::Engine> engine_;
  int configs_ = 0;  // snapshots published for a config change
  uint16_t next_sport_ = 5000;
};

TEST_F(ClassCompile, NewClassesWaitForTheirCompileWhileTheRunningOnesServe) {
  const uint64_t gen = engine_->generation();
  const ClassTable before = engine_->current()->classes;
  const uint64_t got = change({cls("dns", kProtoUdp, ctl::ClassAction::kDrop), cls("rest", 0, ctl::ClassAction::kInspect)}, 7);
  // Nothing of the change is applied yet: not the classes, not the weight.
  EXPECT_EQ(got, gen);
  ASSERT_TRUE(engine_->pending());
  EXPECT_TRUE(engine_->current()->classes.sameCompilation(before));
  EXPECT_EQ(engine_->config().server_groups[0].appliances[0].weight, 100u);
  EXPECT_EQ(sendUdp(), Verdict::kAppliance);
  settle();
  EXPECT_GT(engine_->generation(), gen);
  EXPECT_FALSE(engine_->current()->classes.sameCompilation(before));
  EXPECT_EQ(engine_->config().server_groups[0].appliances[0].weight, 7u);
  EXPECT_EQ(engine_->current()->classes.action(0), ClassVerdict::kDrop);
  EXPECT_EQ(sendUdp(), Verdict::kDrop);
  EXPECT_EQ(configs_, 1);
}

TEST_F(ClassCompile, OverlappingChangesTheLatestWins) {
  change(scattered(100, 1));  // compiles for a while
  change(scattered(60, 2), 5);
  change({cls("dns", kProtoUdp, ctl::ClassAction::kDrop), cls("rest", 0, ctl::ClassAction::kInspect)}, 9);
  settle();
  EXPECT_EQ(configs_, 1);  // only the last was published
  EXPECT_EQ(engine_->config().traffic_classes.size(), 2u);
  EXPECT_EQ(engine_->config().server_groups[0].appliances[0].weight, 9u);
  EXPECT_EQ(sendUdp(), Verdict::kDrop);
}

TEST_F(ClassCompile, AChangeWithTheRunningClassesDropsAPendingOne) {
  change(scattered(100, 3));
  ASSERT_TRUE(engine_->pending());
  // The running classes (only a weight changes): applied at once.
  change(engine_->config().traffic_classes, 3);
  EXPECT_FALSE(engine_->pending());
  EXPECT_EQ(engine_->config().server_groups[0].appliances[0].weight, 3u);
  EXPECT_EQ(configs_, 1);
  // The dropped compile never lands.
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    engine_->advance(h_.now);
  }
  EXPECT_EQ(engine_->config().traffic_classes.size(), 2u);
  EXPECT_EQ(configs_, 1);
}

TEST_F(ClassCompile, AChangeWithThePendingClassesReplacesItsConfigOnly) {
  change(scattered(40, 4), 4);
  change(scattered(40, 4), 6);
  settle();
  EXPECT_EQ(configs_, 1);
  EXPECT_EQ(engine_->config().server_groups[0].appliances[0].weight, 6u);
  EXPECT_EQ(engine_->current()->classes.size(), 41u);
  EXPECT_FALSE(engine_->current()->classes.ipv4Trie());
}

TEST_F(ClassCompile, AnEngineDestroyedMidCompileJoinsItsCompiler) {
  change(scattered(100, 5));
  ASSERT_TRUE(engine_->pending());
  h_.quiescent();
  engine_.reset();  // waits for the compile, frees it, joins: no leak or use after free (ASan)
  SUCCEED();
}

}  // namespace
}  // namespace gwlb::dptest
