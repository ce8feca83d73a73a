// A reload's plan (control/engine/reload_plan.h) and validate-once: the plan
// reads, checks and compiles apart; the control thread's part (the preview
// and Engine::applyConfig with the plan) and every snapshot build after it
// validate nothing again; ReloadWorker runs one plan at a time on a thread of
// its own and hands it over from there.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "control/config/valid_config.h"
#include "control/engine/engine.h"
#include "control/engine/reload_plan.h"
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

class ReloadPlan : public ::testing::Test {
 protected:
  void SetUp() override {
    const Net& n = net();
    devices_ = {n.our_a, n.our_b, n.our_v, MacAddr{}};
    ctl::Config c = h_.config();
    c.traffic_classes = {cls("dns", kProtoUdp, ctl::ClassAction::kInspect), cls("rest", 0, ctl::ClassAction::kInspect)};
    h_.dataplane().snapshot.store(nullptr);
    ctl::EngineInputs in;
    in.devices = &devices_;
    in.compile_classes_apart = true;  // as gwlbd
    engine_ = std::make_unique<ctl::Engine>(c, h_.flows(), h_.dataplane(), h_.qsbr(), in);
    engine_->start(h_.now);
    char tmpl[] = "/tmp/gwlb-reload-plan-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override {
    h_.quiescent();
    engine_.reset();
    unlink(path_.c_str());
  }
  // The running config as a file, with `edit` applied to it first.
  void writeFile(const std::function<void(ctl::Config&)>& edit) {
    ctl::Config c = engine_->config();
    edit(c);
    std::ofstream(path_) << ctl::dumpConfig(c, {true});
  }
  ctl::ReloadRequest request() {
    ctl::ReloadRequest r;
    r.load = [p = path_](std::optional<ctl::ValidConfig>& out, std::vector<ctl::ConfigError>& errors,
                         FlowHashKey& key, bool& keyed) {
      return ctl::loadRunnableConfig(p, out, errors, &key, &keyed);
    };
    r.running = engine_->sharedConfig();
    r.running_key = flowHashKey();
    return r;
  }
  Harness h_;
  ctl::PortMacs devices_;
  std::unique_ptr<ctl::Engine> engine_;
  std::string path_;
};

TEST_F(ReloadPlan, SnapshotBuildsAndAValidatedChangeValidateNothingAgain) {
  const uint64_t v = ctl::validationsRun();
  for (int i = 0; i < 3; ++i) engine_->rebuild("health", h_.now);
  EXPECT_EQ(ctl::validationsRun(), v) << "a health rebuild validated the running config again";
  ctl::Config c = engine_->config();
  c.server_groups[0].appliances[0].weight = 9;
  engine_->applyConfig(c, "test", h_.now, true);
  EXPECT_EQ(ctl::validationsRun(), v + 1) << "a change from a Config is validated once, in all";
  std::vector<ctl::ConfigError> errors;
  c.server_groups[0].appliances[0].weight = 8;
  std::optional<ctl::ValidConfig> valid = ctl::validConfig(c, errors);
  ASSERT_TRUE(valid);
  engine_->applyConfig(std::move(*valid), "test", h_.now, true);
  EXPECT_EQ(ctl::validationsRun(), v + 2) << "a ValidConfig was validated again";
  EXPECT_EQ(engine_->config().server_groups[0].appliances[0].weight, 8u);
}

TEST_F(ReloadPlan, APlanCompilesChangedClassesAndHoldsRestartKeys) {
  const uint32_t workers = engine_->config().dataplane.workers;
  writeFile([&](ctl::Config& c) {
    c.traffic_classes[0].action = ctl::ClassAction::kDrop;
    c.server_groups[0].appliances[0].weight = 7;
    c.dataplane.workers = workers + 1;  // needs a restart
  });
  const uint64_t v = ctl::validationsRun();
  ctl::ReloadPlan p = ctl::planReload(request());
  ASSERT_TRUE(p.errors.empty()) << ctl::formatErrors(p.errors);
  ASSERT_TRUE(p.next);
  ASSERT_TRUE(p.classes) << "changed classes were not compiled in the plan";
  EXPECT_EQ(p.restart_needed, std::vector<std::string>{"dataplane"});
  EXPECT_EQ(p.next->get().dataplane.workers, workers) << "a restart key took the file's value";
  // The parser checked the file; the config with the restart key held is
  // validated once more, in the plan too.
  EXPECT_EQ(ctl::validationsRun(), v + 1);
  // The control thread's part checks nothing again, and applies at once.
  const uint64_t gen = engine_->generation();
  const uint64_t after_plan = ctl::validationsRun();
  ctl::ReloadPreview pv = ctl::previewReload(engine_->config(), engine_->config(), engine_->lifecycle(),
                                             engine_->health(), *p.next, h_.now, "removed by reload");
  EXPECT_TRUE(pv.losses.empty());
  ASSERT_EQ(pv.changes.size(), 1u);
  EXPECT_EQ(pv.changes[0].running_weight, 7);
  ctl::ReloadOutcome o = engine_->applyReload(std::move(p), h_.now, false);
  EXPECT_FALSE(o.refused);
  EXPECT_GT(o.generation, gen);
  EXPECT_EQ(o.restart_needed, std::vector<std::string>{"dataplane"});
  EXPECT_FALSE(engine_->pending());
  EXPECT_EQ(ctl::validationsRun(), after_plan);
  EXPECT_EQ(engine_->current()->classes.action(0), ClassVerdict::kDrop);
  EXPECT_EQ(engine_->config().server_groups[0].appliances[0].weight, 7u);
}

TEST_F(ReloadPlan, TheSameClassesAreNotCompiledAgainAndAnInvalidFileIsRefused) {
  writeFile([](ctl::Config& c) { c.server_groups[0].appliances[0].weight = 3; });
  ctl::ReloadPlan p = ctl::planReload(request());
  ASSERT_TRUE(p.errors.empty()) << ctl::formatErrors(p.errors);
  EXPECT_FALSE(p.classes);
  EXPECT_TRUE(p.restart_needed.empty());
  std::ofstream(path_) << "node: {underlay_ip: 192.0.2.1}\nserver_groups: []\n";
  p = ctl::planReload(request());
  EXPECT_FALSE(p.errors.empty());
  EXPECT_FALSE(p.next);
}

TEST_F(ReloadPlan, TheWorkerRunsOnePlanAtATimeOnAThreadOfItsOwn) {
  writeFile([](ctl::Config& c) { c.server_groups[0].appliances[0].weight = 4; });
  std::mutex mu;
  std::condition_variable cv;
  bool gate = false, done = false;
  std::thread::id ran_on;
  ctl::ReloadRequest r = request();
  auto load = r.load;
  // The load waits for the test: the plan is under way meanwhile.
  r.load = [&, load](std::optional<ctl::ValidConfig>& out, std::vector<ctl::ConfigError>& errors,
                     FlowHashKey& key, bool& keyed) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return gate; });
    return load(out, errors, key, keyed);
  };
  ctl::ReloadWorker w;
  ctl::ReloadPlan got;
  ASSERT_TRUE(w.start(std::move(r), [&](ctl::ReloadPlan p) {
    std::lock_guard lock(mu);
    got = std::move(p);
    ran_on = std::this_thread::get_id();
    done = true;
    cv.notify_all();
  }));
  EXPECT_TRUE(w.busy());
  EXPECT_FALSE(w.start(request(), [](ctl::ReloadPlan) {})) << "a second plan started beside the first";
  {
    std::unique_lock lock(mu);
    gate = true;
    cv.notify_all();
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done; }));
  }
  EXPECT_NE(ran_on, std::this_thread::get_id());
  ASSERT_TRUE(got.errors.empty()) << ctl::formatErrors(got.errors);
  EXPECT_EQ(got.next->get().server_groups[0].appliances[0].weight, 4u);
  for (int i = 0; i < 1000 && w.busy(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(w.busy());
  EXPECT_EQ(w.planned(), 1u);
}

}  // namespace
}  // namespace gwlb::dptest
