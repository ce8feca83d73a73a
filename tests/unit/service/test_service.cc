// The control API's handlers without gwlbd's Daemon (control/service/): the
// method table over a real engine on a fixed clock, a flow table in
// anonymous memory, two workers' counters set by hand and no health checker.
// One test per topic: status and stats, servers and groups, the runtime
// changes (server.add, remove, set) and drains, flows and explain, classes,
// health and destinations, config, and the table itself. No EAL.
#include <gtest/gtest.h>
#include <rte_rcu_qsbr.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "control/engine/engine.h"
#include "control/engine/scripted_events.h"
#include "control/service/appliance_view.h"
#include "control/service/handlers.h"
#include "control/service/service.h"
#include "dataplane/flow_table.h"
#include "tests/unit/small_config.h"

namespace gwlb {
namespace {

using nlohmann::json;
constexpr uint64_t kS = 1'000'000'000ULL;

struct Qsbr {
  rte_rcu_qsbr* v = nullptr;
  Qsbr() {
    size_t sz = (rte_rcu_qsbr_get_memsize(1) + 63) / 64 * 64;
    v = static_cast<rte_rcu_qsbr*>(std::aligned_alloc(64, sz));
    if (!v || rte_rcu_qsbr_init(v, 1) != 0) std::abort();
  }
  ~Qsbr() { std::free(v); }
};

// Everything a handler reads, built as gwlbd's daemon builds it, minus the
// daemon: ports, capture and probe paths are hooks the tests set.
struct Rig {
  Qsbr q;
  dp::FlowTable ft;
  dp::Dataplane dp;
  std::vector<std::unique_ptr<dp::WorkerState>> states;
  std::vector<std::unique_ptr<dp::WorkerRun>> runs;
  std::vector<unsigned> lcores;
  std::unique_ptr<ctl::HealthChecker> checker;  // none: no health checks run
  ctl::PassiveMonitor passive;
  ctl::WorkerStats workers{states, runs, lcores};
  ctl::HealthView health{checker, passive};
  std::unique_ptr<ctl::Engine> engine;
  std::unique_ptr<ctl::ApplianceView> appliances;
  ctl::ProcessFacts facts;
  bool reloading = false;
  uint64_t clock = 3 * kS;  // the handlers' monotonic clock: fixed, moved by the tests
  int probe_checks = 0, probe_applies = 0;
  std::unique_ptr<ctl::ServiceContext> ctx;
  ctl::ServiceTable table;

  explicit Rig(ctl::Config c = ctl::testing::smallConfig()) : ft("svc", 4096, q.v, 0) {
    dp.flows = &ft;
    for (uint16_t i = 0; i < 2; ++i) {
      states.push_back(std::make_unique<dp::WorkerState>());
      states.back()->id = i;
    }
    ctl::Engine::Inputs in;
    in.class_counts = [this](uint16_t slot) { return workers.classSlot(slot); };
    ctl::Engine::Hooks h;
    h.built = [this](const dp::Snapshot& s) { appliances->update(s, 1000.0); };
    h.ids_freed = [this](const std::vector<uint16_t>& ids) { appliances->idsFreed(ids); };
    engine = std::make_unique<ctl::Engine>(std::move(c), ft, dp, q.v, std::move(in), std::move(h));
    appliances = std::make_unique<ctl::ApplianceView>(*engine, health, workers);
    facts.started_ns = 1 * kS;
    facts.started_at = 1000.0;
    facts.config_loaded_at = 1000.0;
    facts.file_cfg = engine->sharedConfig();
    ctx.reset(new ctl::ServiceContext{
        *engine, health, workers, *appliances, facts, [] { return json::array({{{"id", 0}}}); },
        [] { return json{{"available", false}}; }, [this] { return reloading; },
        [this](const ctl::ValidConfig&) { ++probe_checks; }, [this] { ++probe_applies; },
        [this] { return clock; }});
    ctl::addServiceMethods(table, *ctx);
    engine->start(2 * kS);
  }
  json call(const std::string& m, const json& p = json::object()) { return table.call(m, p); }
  json ok(const std::string& m, const json& p = json::object()) {
    json r = call(m, p);
    EXPECT_TRUE(r.value("ok", false)) << m << ": " << r.dump();
    return r.value("result", json());
  }
  std::string error(const std::string& m, const json& p) {
    json r = call(m, p);
    EXPECT_FALSE(r.value("ok", true)) << m << ": " << r.dump();
    return r.contains("error") ? r["error"].value("code", "") : "";
  }
  uint16_t idOf(const char* a) { return engine->registry().find(IpAddr::parse(a)->v4HostOrder()); }
  // A TCP flow from client i to 203.0.113.1:443 routed to server id `server`
  // (bypassed: the appliance asked for a bypass for the flow's life).
  void addFlow(uint32_t i, uint16_t server, bool bypassed = false) {
    L4Tuple t{};
    t.proto = kProtoTcp;
    t.src = *IpAddr::parse("198.18.0." + std::to_string(i));
    t.dst = *IpAddr::parse("203.0.113.1");
    t.sport = uint16_t(40000 + i);
    t.dport = 443;
    KeyedPacket kp = makeFlowKey(t, StickinessMode::kFiveTuple, 0);
    uint32_t h = flowHash(kp.key);
    int32_t pos = ft.insert(kp.key, h);
    ASSERT_GE(pos, 0);
    dp::FlowEntry& e = ft.entry(pos);
    e.flow_hash.store(h);
    e.route.store(bypassed ? dp::withBypass(dp::packRoute(server, h), false, 0) : dp::packRoute(server, h));
    e.created.store(2 * kS);
    e.last_seen.store(2 * kS);
    e.idle_timeout.store(350 * kS);
  }
};

TEST(ServiceTable, UnknownMethodIsABadRequestNamingEveryMethodAndFailuresKeepTheirDetails) {
  Rig r;
  json reply = r.call("rm -rf");
  ASSERT_FALSE(reply["ok"].get<bool>());
  EXPECT_EQ(reply["error"]["code"], "bad_request");
  const std::string msg = reply["error"]["message"];
  for (const char* m : {"status", "servers", "groups", "flows", "explain", "classes", "stats", "server.add",
                        "server.remove", "server.set", "server.drain", "server.undrain", "config",
                        "health", "destinations"})
    EXPECT_NE(msg.find(m), std::string::npos) << m << " missing from: " << msg;
  EXPECT_EQ(r.error("status", {{"bogus", 1}}), "bad_request");
  EXPECT_THROW(r.table.add("status", [](const json&) { return json(); }), std::logic_error);
}

TEST(ServiceStatus, StatusAndStatsReportTheEngineTheFlowsAndTheWorkersSummed) {
  Rig r;
  r.addFlow(1, r.idOf("10.0.0.11"));
  r.addFlow(2, r.idOf("10.0.0.12"));
  r.states[0]->counters.inc(Counter::rx_packets, 5);
  r.states[1]->counters.inc(Counter::rx_packets, 7);
  json s = r.ok("status");
  EXPECT_EQ(s["flows"], 2);
  EXPECT_EQ(s["flow_capacity"], r.ft.capacity());
  EXPECT_EQ(s["snapshot_generation"], r.engine->generation());
  EXPECT_EQ(s["runtime_changes"], 0);
  EXPECT_EQ(s["started_at"], 1000.0);
  EXPECT_EQ(s["ports"], json::array({{{"id", 0}}}));
  EXPECT_EQ(s["capture"], json({{"available", false}}));
  json st = r.ok("stats");
  EXPECT_EQ(st["totals"]["rx_packets"], 12);
  ASSERT_EQ(st["workers"].size(), 2u);
  EXPECT_EQ(st["workers"][1]["counters"]["rx_packets"], 7);
  EXPECT_EQ(st["flows"], 2);
  EXPECT_EQ(st["lifecycle"]["drains_started"], 0);
}

TEST(ServiceServers, ServersAndGroupsShowEachApplianceWithItsStateAndTraffic) {
  Rig r;
  const uint16_t id = r.idOf("10.0.0.12");
  r.states[0]->countSent(id, 100);
  r.states[1]->countSent(id, 60);
  r.states[1]->countReturned(id, 50);
  json s = r.ok("servers");
  ASSERT_EQ(s["servers"].size(), 3u);
  const json& a = s["servers"][1];
  EXPECT_EQ(a["address"], "10.0.0.12");
  EXPECT_EQ(a["group"], "fw");
  EXPECT_EQ(a["state"], "active");
  EXPECT_EQ(a["packets"], 2);
  EXPECT_EQ(a["bytes"], 160);
  EXPECT_EQ(a["returned_packets"], 1);
  EXPECT_EQ(a["health"]["state"], "disabled");
  EXPECT_EQ(r.error("servers", {{"group", "nope"}}), "not_found");
  json g = r.ok("groups");
  ASSERT_EQ(g["groups"].size(), 1u);
  EXPECT_EQ(g["groups"][0]["servers"]["total"], 3);
  EXPECT_EQ(g["groups"][0]["servers"]["active"], 3);
}

TEST(ServiceServers, RuntimeChangesGoThroughTheProbePathsAndTheServiceGuard) {
  Rig r(ctl::testing::smallConfig({"10.0.0.11"}));
  json add = r.ok("server.add", {{"group", "fw"}, {"address", "10.0.0.12"}});
  EXPECT_EQ(add["snapshot_generation"], r.engine->generation());
  EXPECT_EQ(r.probe_checks, 1);
  EXPECT_EQ(r.probe_applies, 1);
  EXPECT_EQ(r.ok("status")["runtime_changes"], 1);
  EXPECT_EQ(r.ok("servers")["servers"].size(), 2u);
  // One draining, then removing the other would leave the group with no
  // appliance in service: refused, then forced.
  r.ok("server.drain", {{"address", "10.0.0.12"}});
  EXPECT_EQ(r.error("server.remove", {{"address", "10.0.0.11"}}), "would_leave_no_service");
  EXPECT_EQ(r.ok("servers")["servers"].size(), 2u) << "a refused change changes nothing";
  json forced = r.ok("server.remove", {{"address", "10.0.0.11"}, {"force", true}});
  ASSERT_TRUE(forced.contains("warnings"));
  EXPECT_NE(forced["warnings"][0].get<std::string>().find("forced"), std::string::npos);
  // While a reload runs, a change is refused (busy): it would undo it.
  r.reloading = true;
  EXPECT_EQ(r.error("server.set", {{"address", "10.0.0.12"}, {"weight", 5}}), "busy");
  EXPECT_EQ(r.probe_checks, 2) << "a refused change never reaches the probe paths";
}

TEST(ServiceServers, DrainAndUndrainAnswerWithTheDrainAndRefuseWhatIsWrong) {
  Rig r;
  json d = r.ok("server.drain", {{"address", "10.0.0.11"}, {"timeout_s", 30}});
  EXPECT_EQ(d["drain"]["phase"], "draining");
  EXPECT_EQ(d["drain"]["timeout_s"], 30.0);
  EXPECT_EQ(r.ok("servers")["servers"][0]["state"], "draining");
  EXPECT_EQ(r.error("server.drain", {{"address", "10.0.0.11"}}), "conflict");
  EXPECT_EQ(r.error("server.drain", {{"address", "10.9.9.9"}}), "not_found");
  r.ok("server.undrain", {{"address", "10.0.0.11"}});
  EXPECT_EQ(r.ok("servers")["servers"][0]["state"], "active");
}

// An IPv6 appliance is drained, undrained and named by its own address;
// another IPv6 address that folds to the same 32-bit key is nobody.
TEST(ServiceServers, Ipv6AppliancesAreDrainedAndShownByTheirAddress) {
  ctl::Config c = ctl::testing::smallConfig({"10.0.0.11", "2001:db8:f::a", "2001:db8:f::b"});
  c.node.underlay_ipv6 = *IpAddr::parse("2001:db8:f::1");
  c.server_groups[0].health_check.enabled = false;
  Rig r(std::move(c));
  // 2001:db8:f::1:0:b folds to 2001:db8:f::a's key: its last two 32-bit
  // words (0x1, 0xb) XOR to 0xa as (0x0, 0xa) do.
  const IpAddr alias = *IpAddr::parse("2001:db8:f:0:0:1:0:b");
  ASSERT_EQ(applianceKey(alias), applianceKey(*IpAddr::parse("2001:db8:f::a")));
  EXPECT_EQ(r.error("server.drain", {{"address", "2001:db8:f:0:0:1:0:b"}}), "not_found");
  EXPECT_EQ(r.error("server.drain", {{"address", "2001:db8:f::99"}}), "not_found");
  json d = r.ok("server.drain", {{"address", "2001:db8:f::a"}, {"timeout_s", 30}});
  EXPECT_EQ(d["drain"]["phase"], "draining");
  json servers = r.ok("servers")["servers"];
  EXPECT_EQ(servers[1]["address"], "2001:db8:f::a");
  EXPECT_EQ(servers[1]["state"], "draining");
  EXPECT_EQ(servers[2]["state"], "active");
  EXPECT_EQ(r.error("server.undrain", {{"address", "2001:db8:f:0:0:1:0:b"}}), "not_found");
  r.ok("server.undrain", {{"address", "2001:db8:f::a"}});
  EXPECT_EQ(r.ok("servers")["servers"][1]["state"], "active");

  // Flows on it: listed by its address, and an appliance's bypass names it.
  const uint16_t id = r.engine->registry().find(applianceKey(*IpAddr::parse("2001:db8:f::b")));
  r.addFlow(1, id, /*bypassed=*/true);
  r.addFlow(2, id, /*bypassed=*/true);
  json page = r.ok("flows", {{"server", "2001:db8:f::b"}});
  ASSERT_EQ(page["flows"].size(), 2u);
  EXPECT_EQ(page["flows"][0]["appliance"], "2001:db8:f::b");
  EXPECT_EQ(page["flows"][0]["bypass"]["by"], "2001:db8:f::b");
  EXPECT_EQ(r.error("flows", {{"server", "2001:db8:f:0:0:1:0:b"}}), "not_found");
}

TEST(ServiceFlows, FlowsListsAndCountsAndExplainFindsTheEntry) {
  Rig r;
  const uint16_t id = r.idOf("10.0.0.13");
  for (uint32_t i = 1; i <= 5; ++i) r.addFlow(i, id);
  json all = r.ok("flows", {{"count", true}});
  EXPECT_EQ(all["count"], 5);
  json page = r.ok("flows", {{"server", "10.0.0.13"}, {"limit", 2}});
  EXPECT_EQ(page["flows"].size(), 2u);
  EXPECT_EQ(page["flows"][0]["appliance"], "10.0.0.13");
  EXPECT_EQ(r.error("flows", {{"server", "10.9.9.9"}}), "not_found");
  json e = r.ok("explain", {{"src", "198.18.0.3"}, {"dst", "203.0.113.1"}, {"proto", "tcp"},
                            {"sport", 40003}, {"dport", 443}});
  EXPECT_EQ(e["existing"], true);
  EXPECT_EQ(e["appliance"], "10.0.0.13");
  EXPECT_EQ(e["group"], "fw");
}

TEST(ServiceClasses, ClassesSaysWhetherConfiguredAndCountsUnclassified) {
  Rig r;
  r.states[1]->counters.inc(Counter::drop_unclassified, 4);
  json c = r.ok("classes");
  EXPECT_EQ(c["configured"], false);
  EXPECT_EQ(c["classes"].size(), 0u);
  EXPECT_EQ(c["unclassified"]["packets"], 4);
  EXPECT_EQ(c["compiling"], false);
  r.reloading = true;
  EXPECT_EQ(r.ok("classes")["compiling"], true);
}

TEST(ServiceHealth, HealthAndDestinationsWithoutAChecker) {
  Rig r;
  json h = r.ok("health", {{"address", "10.0.0.12"}});
  EXPECT_EQ(h["state"], "disabled");
  EXPECT_EQ(h["group"], "fw");
  EXPECT_EQ(h["history"], json::array());
  EXPECT_EQ(r.error("health", {{"address", "10.9.9.9"}}), "not_found");
  json d = r.ok("destinations");
  ASSERT_EQ(d["destinations"].size(), 1u);
  EXPECT_EQ(d["destinations"][0]["active_group"], "fw");
  EXPECT_EQ(r.error("destinations", {{"name", "nope"}}), "not_found");
  ctl::HttpReply http = ctl::healthEndpoint(r.engine->regions(), "/destinations");
  EXPECT_EQ(http.status, 200);
}

TEST(ServiceConfig, ConfigDumpsTheRunningConfigAndItsRuntimeChanges) {
  Rig r;
  EXPECT_EQ(r.ok("config")["runtime_changes"], json::array());
  r.ok("server.set", {{"address", "10.0.0.12"}, {"weight", 7}});
  json c = r.ok("config");
  ASSERT_EQ(c["runtime_changes"].size(), 1u);
  EXPECT_EQ(c["runtime_changes"][0]["address"], "10.0.0.12");
  EXPECT_EQ(c["runtime_changes"][0]["running_weight"], 7);
  EXPECT_NE(c["yaml"].get<std::string>().find("10.0.0.12"), std::string::npos);
}

// gwlb-replay's drain event and gwlbd's server.drain on twin engines at the
// same times, step by step: the same refusals, the same warnings, the same
// snapshots (digest) after each step.
TEST(ServiceEquivalence, ReplayAndGwlbdDecideDrainsAlike) {
  struct Step {
    const char* address;
    std::optional<uint32_t> timeout_s;
    bool force;
    const char* api_error;  // the API's error code, "" when done
  };
  const Step steps[] = {
      {"10.0.0.11", 60, false, ""},
      {"10.0.0.11", 60, false, "conflict"},  // already draining
      {"10.0.0.12", std::nullopt, false, ""},
      {"10.0.0.13", 30, false, "would_leave_no_service"},  // the last one in service
      {"10.0.0.13", 30, true, ""},                         // forced: done, with a warning
      {"10.0.0.99", 60, false, "not_found"},
  };
  auto cfg = [] {
    ctl::Config c = ctl::testing::smallConfig();
    c.server_groups[0].connection_draining.enabled = true;
    return c;
  };
  Rig api(cfg()), replay(cfg());
  ctl::Config file = cfg();
  uint64_t now = 10 * kS;
  for (const Step& st : steps) {
    SCOPED_TRACE(std::string("drain ") + st.address);
    now += kS / 10;  // within the drains' first housekeeping: they stay draining
    api.clock = now;
    ctl::ScriptedEvent e;
    e.action = ctl::ScriptedEvent::Action::kDrain;
    e.server = *IpAddr::parse(st.address);
    e.timeout_s = st.timeout_s;
    e.force = st.force;
    // The replay event: an address outside the config is the events file's
    // error there, gwlbd's not_found; the engine decides alike otherwise.
    ctl::EventOutcome ev = ctl::applyEvent(e, *replay.engine, file, now);
    json p = {{"address", st.address}, {"force", st.force}};
    if (st.timeout_s) p["timeout_s"] = *st.timeout_s;
    json reply = api.call("server.drain", p);
    const std::string code = reply["ok"].get<bool>() ? "" : reply["error"]["code"].get<std::string>();
    EXPECT_EQ(code, st.api_error) << reply.dump();
    const bool replay_refused = !ev.error.empty() || !ev.refused.empty();
    EXPECT_EQ(replay_refused, !code.empty()) << ev.error << ev.refused;
    if (code == "would_leave_no_service") {
      EXPECT_FALSE(ev.refused.empty());
    } else if (!code.empty()) {
      EXPECT_FALSE(ev.error.empty());
    }
    json warnings = reply["ok"].get<bool>() ? reply["result"].value("warnings", json::array()) : json::array();
    EXPECT_EQ(warnings, json(ev.warnings));
    EXPECT_EQ(ctl::snapshotDigest(*api.engine->current()), ctl::snapshotDigest(*replay.engine->current()));
    EXPECT_EQ(api.engine->lifecycle().entries().size(), replay.engine->lifecycle().entries().size());
  }
}

}  // namespace
}  // namespace gwlb
