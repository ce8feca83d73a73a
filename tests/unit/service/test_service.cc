// The control API's handlers without gwlbd's Daemon (control/service/): the
// method table over a real engine on a fixed clock, a flow table in
// anonymous memory, two workers' counters set by hand and no health checker.
// One test per topic: status and stats, servers and groups, the runtime
// changes (server.add, remove, set) and drains, flows and explain, classes,
// health and destinations, config, reload, the fleet, captures, metrics and
// telemetry, and the table itself; and replay's events against the same handlers. No EAL.
#include <gtest/gtest.h>
#include <rte_rcu_qsbr.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <algorithm>
#include <string>
#include <vector>

#include "common/flow_key.h"
#include "control/engine/engine.h"
#include "control/engine/scripted_events.h"
#include "control/service/appliance_view.h"
#include "control/service/handlers.h"
#include "control/service/metrics.h"
#include "control/service/process_methods.h"
#include "control/service/reloader.h"
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
  boost::asio::io_context io;  // the reload's plan comes back through it
  std::unique_ptr<ctl::Reloader> reloader;
  ctl::ServiceTable table;

  explicit Rig(ctl::Config c = ctl::testing::smallConfig()) : ft("svc", 4096, q.v, 0) {
    dp.flows = &ft;
    for (uint16_t i = 0; i < 2; ++i) {
      states.push_back(std::make_unique<dp::WorkerState>());
      states.back()->id = i;
    }
    ctl::Engine::Inputs in;
    in.class_counts = [this](uint16_t slot) { return workers.classSlot(slot); };
    // The probe paths a config change must keep, as gwlbd's daemon gives them.
    in.can_follow = [this](const ctl::ValidConfig&) -> std::optional<ctl::Refusal> {
      ++probe_checks;
      return std::nullopt;
    };
    ctl::Engine::Hooks h;
    h.config_changed = [this](const ctl::Config&) { ++probe_applies; };
    h.built = [this](const dp::Snapshot& s) { appliances->update(s, 1000.0); };
    h.ids_freed = [this](const std::vector<uint16_t>& ids) { appliances->idsFreed(ids); };
    engine = std::make_unique<ctl::Engine>(std::move(c), ft, dp, q.v, std::move(in), std::move(h));
    appliances = std::make_unique<ctl::ApplianceView>(*engine, health, workers);
    facts.started_ns = 1 * kS;
    facts.started_at = 1000.0;
    facts.config_loaded_at = 1000.0;
    ctx.reset(new ctl::ServiceContext{
        *engine, health, workers, *appliances, facts, [] { return json::array({{{"id", 0}}}); },
        [] { return json{{"available", false}}; }, [this] { return reloading; },
        [this] { return clock; }});
    ctl::addServiceMethods(table, *ctx);
    ctl::Reloader::Hooks rh;
    rh.clock = [this] { return clock; };
    reloader = std::make_unique<ctl::Reloader>(io, *engine, facts, 0, std::move(rh));
    table.addDeferred("reload", [this](const json& p, ctl::ApiReply reply) {
      return ctl::reloadMethod(*reloader, *engine, p, std::move(reply));
    });
    engine->start(2 * kS);
  }
  // The API's `reload`: its reply once the plan, made on its own thread,
  // has been applied on this one.
  json reload(const json& p = json::object()) {
    json got;
    auto work = boost::asio::make_work_guard(io);
    table.deferred().at(0).start(p, [&](json r) {
      got = std::move(r);
      work.reset();
    });
    io.restart();
    io.run();
    return got;
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
  void addFlow(uint32_t i, uint16_t appliance, bool bypassed = false) {
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
    e.route.store(bypassed ? dp::withBypass(dp::packRoute(appliance, h), false, 0) : dp::packRoute(appliance, h));
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

// An appliance's bypass in explain: who handed the flow back, for how long,
// and that its packets are not inspected (gwlbctl explain's bypass line).
TEST(ServiceFlows, ExplainOfABypassedFlowSaysWhichApplianceHandedItBack) {
  Rig r;
  const uint16_t id = r.idOf("10.0.0.13");
  r.addFlow(1, id);
  r.addFlow(2, id, /*bypassed=*/true);
  json e = r.ok("explain", {{"src", "198.18.0.2"}, {"dst", "203.0.113.1"}, {"proto", "tcp"},
                            {"sport", 40002}, {"dport", 443}});
  EXPECT_EQ(e["existing"], true);
  ASSERT_TRUE(e["bypass"].is_object()) << e.dump();
  EXPECT_EQ(e["bypass"]["by"], "10.0.0.13");
  EXPECT_TRUE(e["bypass"]["until_s"].is_null()) << "for the flow's life";
  EXPECT_NE(e["reason"].get<std::string>().find(
                "; BYPASSED BY 10.0.0.13 for the flow's life: its packets go straight back to the router, "
                "uninspected"),
            std::string::npos)
      << e["reason"];
  json plain = r.ok("explain", {{"src", "198.18.0.1"}, {"dst", "203.0.113.1"}, {"proto", "tcp"},
                                {"sport", 40001}, {"dport", 443}});
  EXPECT_TRUE(plain["bypass"].is_null()) << plain.dump();
  EXPECT_EQ(plain["reason"].get<std::string>().find("BYPASSED"), std::string::npos) << plain["reason"];
}

// A class's mirror and tag, as `gwlbctl classes` and `explain` show them:
// the classes API and the class an explained packet matches carry both.
TEST(ServiceClasses, ClassesAndExplainShowAClassesMirrorAndTag) {
  ctl::Config c = ctl::testing::smallConfig();
  ctl::ApplianceGroupConfig tools;
  tools.name = "tools";
  tools.maglev_table_size = 251;
  ctl::ApplianceConfig tool;
  tool.address = *IpAddr::parse("10.0.0.21");
  tools.appliances.push_back(tool);
  c.server_groups.push_back(tools);
  c.tags.push_back({"tenant-a", 4242});
  ctl::TrafficClassConfig a;
  a.name = "tenant-a";
  a.match.l4_ports = {{443, 443}};
  a.mirror.group = "tools";
  a.mirror.truncate = 128;
  a.mirror.sample = 10;
  a.tag = "tenant-a";
  ctl::TrafficClassConfig rest;
  rest.name = "rest";
  c.traffic_classes = {a, rest};
  Rig r(c);
  json cl = r.ok("classes");
  ASSERT_EQ(cl["classes"].size(), 2u) << cl.dump();
  EXPECT_EQ(cl["classes"][0]["mirror"], "copies to server group 'tools', first 128 bytes, 1 packet in 10");
  EXPECT_EQ(cl["classes"][0]["tag"], "tenant-a");
  EXPECT_EQ(cl["classes"][0]["tag_value"], 4242);
  EXPECT_TRUE(cl["classes"][1]["mirror"].is_null() && cl["classes"][1]["tag"].is_null()) << cl.dump();
  json e = r.ok("explain", {{"src", "198.18.0.9"}, {"dst", "203.0.113.1"}, {"proto", "tcp"},
                            {"sport", 40009}, {"dport", 443}});
  ASSERT_TRUE(e["class"].is_object()) << e.dump();
  EXPECT_EQ(e["class"]["name"], "tenant-a");
  EXPECT_EQ(e["class"]["mirror"], "copies to server group 'tools', first 128 bytes, 1 packet in 10");
  EXPECT_EQ(e["class"]["tag"], "tenant-a");
  e = r.ok("explain", {{"src", "198.18.0.9"}, {"dst", "203.0.113.1"}, {"proto", "tcp"},
                       {"sport", 40009}, {"dport", 22}});
  EXPECT_EQ(e["class"]["name"], "rest");
  EXPECT_FALSE(e["class"].contains("mirror") || e["class"].contains("tag")) << e.dump();
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

TEST(ServiceMetrics, PassiveDampeningAndSlowStartFamiliesPerAppliance) {
  ctl::Config c = ctl::testing::smallConfig({"10.0.0.11"});
  c.server_groups[0].slow_start_s = 30;
  Rig r(c);
  std::ostringstream o;
  ctl::serviceMetrics(o, *r.engine, r.health);
  const std::string m = o.str();
  EXPECT_NE(m.find("# TYPE gwlb_server_no_returns_ejections_total counter"), std::string::npos) << m;
  EXPECT_NE(m.find("gwlb_server_slow_start_share{group=\"fw\",address=\"10.0.0.11\"} "), std::string::npos) << m;
  // No health checks: no passive detection or dampening rows.
  EXPECT_EQ(m.find("gwlb_server_no_returns_ejections_total{"), std::string::npos) << m;
  EXPECT_EQ(m.find("gwlb_server_flap_penalty{"), std::string::npos) << m;
}

// The whole /metrics page from the views alone: each family once, its
// samples together, the figures of the engine, the workers, the ports
// (status's figures) and the clock.
TEST(ServiceMetrics, ThePageShowsEveryFamilyOnceFromTheViews) {
  Rig r;
  r.addFlow(1, r.idOf("10.0.0.11"));
  r.addFlow(2, r.idOf("10.0.0.12"));
  r.states[0]->counters.inc(Counter::rx_packets, 5);
  r.states[1]->counters.inc(Counter::rx_packets, 7);
  r.states[0]->counters.inc(Counter::drop_unclassified, 4);
  r.states[1]->countSent(r.idOf("10.0.0.12"), 100);
  json ports = json::array({{{"id", 0}, {"rx_packets", 9}, {"tx_bytes", 1500}},
                            {{"id", 1}, {"rx_missed", 2},
                             {"exception_path", {{"tap", "gw1"}, {"to_kernel", 3}, {"from_kernel", 1},
                                                 {"dropped_tap", 0}, {"dropped_wire", 6}}}}});
  ctl::ServiceContext c{*r.engine, r.health, r.workers, *r.appliances, r.facts,
                        [&] { return ports; }, nullptr, nullptr, [&] { return r.clock; }};
  std::shared_ptr<ctl::BirdClient> bird;
  ctl::AnnounceState announce;
  std::unique_ptr<ctl::FleetSync> sync;
  bool stopping = false, left = false;
  ctl::FleetApiView fleet{*r.engine, bird, announce, sync, stopping, left, [] {}};
  ctl::MetricsView v{c, fleet, [] { return std::vector<const ctl::HttpServer*>{nullptr}; }};
  const std::string m = ctl::metricsText(v);
  auto has = [&](const std::string& line) {
    EXPECT_NE(m.find("\n" + line + "\n"), std::string::npos) << line << " missing";
  };
  has("gwlb_rx_packets_total{worker=\"1\"} 7");
  has("gwlb_dropped_packets_total{worker=\"0\",reason=\"unclassified\"} 4");
  has("gwlb_flows 2");
  has("gwlb_flow_table_capacity " + std::to_string(r.ft.capacity()));
  has("gwlb_server_state{group=\"fw\",address=\"10.0.0.12\",state=\"active\"} 1");
  has("gwlb_server_state{group=\"fw\",address=\"10.0.0.12\",state=\"unhealthy\"} 0");
  has("gwlb_server_sent_packets_total{group=\"fw\",address=\"10.0.0.12\"} 1");
  has("gwlb_server_sent_bytes_total{group=\"fw\",address=\"10.0.0.12\"} 100");
  has("gwlb_port_rx_packets_total{port=\"0\"} 9");
  has("gwlb_port_tx_bytes_total{port=\"0\"} 1500");
  has("gwlb_port_rx_missed_total{port=\"1\"} 2");
  has("gwlb_exception_path_packets_total{port=\"1\",tap=\"gw1\",direction=\"to_kernel\"} 3");
  has("gwlb_exception_path_dropped_total{port=\"1\",tap=\"gw1\",reason=\"wire\"} 6");
  EXPECT_EQ(m.find("gwlb_exception_path_packets_total{port=\"0\""), std::string::npos) << "port 0 has no tap";
  has("gwlb_snapshot_generation " + std::to_string(r.engine->generation()));
  has("gwlb_server_ids_held 3");
  has("gwlb_destination_healthy{destination=\"" + r.engine->regions().listeners().at(0).name + "\"} 1");
  has("gwlb_control_handler_errors_total{where=\"http\"} 0");
  has("gwlb_uptime_seconds 2");  // the fixed clock (3 s) since the start (1 s)
  EXPECT_EQ(m.find("gwlb_http_connections{"), std::string::npos) << "no listener runs";
  EXPECT_EQ(m.find("gwlb_fleet_"), std::string::npos) << "no fleet section, no fleet families";
  // Prometheus's rule: one HELP and TYPE per family, each family's samples
  // together (a histogram's _bucket, _sum and _count are its family's).
  std::set<std::string> done;
  std::string current;
  std::istringstream lines(m);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(done.insert(name).second) << name << " declared twice";
      current = name;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name.rfind(current, 0), 0u) << name << " outside its family (after " << current << ")";
  }
  EXPECT_GT(done.size(), 60u);
  // A port without the exception path anywhere: no such family at all.
  ports = json::array({{{"id", 0}}});
  EXPECT_EQ(ctl::metricsText(v).find("gwlb_exception_path_"), std::string::npos);
}

// What the /gwlb/ telemetry commands answer from: the same views, copied.
TEST(ServiceMetrics, TelemetryCopiesTheCountersAppliancesAndFlows) {
  Rig r;
  r.addFlow(1, r.idOf("10.0.0.11"));
  r.states[1]->counters.inc(Counter::rx_packets, 7);
  r.states[0]->countReturned(r.idOf("10.0.0.11"), 80);
  ctl::TelemetryFigures f = ctl::telemetryFigures(*r.ctx);
  auto rx = std::find_if(f.counters.begin(), f.counters.end(), [](const auto& kv) { return kv.first == "rx_packets"; });
  ASSERT_NE(rx, f.counters.end());
  EXPECT_EQ(rx->second, 7u);
  EXPECT_EQ(f.counters.size(), kNumCounters);
  ASSERT_EQ(f.appliances.size(), 3u);
  EXPECT_EQ(f.appliances[0].address, "10.0.0.11");
  EXPECT_EQ(f.appliances[0].group, "fw");
  EXPECT_EQ(f.appliances[0].state, "active");
  EXPECT_EQ(f.appliances[0].traffic.returned_packets, 1u);
  EXPECT_EQ(f.appliances[0].traffic.returned_bytes, 80u);
  EXPECT_FALSE(f.appliances[0].probed) << "no health checks";
  EXPECT_TRUE(f.classes.empty());
  EXPECT_EQ(f.flows, 1u);
  EXPECT_EQ(f.capacity, r.ft.capacity());
  EXPECT_EQ(f.generation, r.engine->generation());
}

// A config file the tests write and reload: `c` as YAML.
struct ConfigFile {
  std::string path;
  ConfigFile() {
    char tmpl[] = "/tmp/gwlb-service-reload-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) std::abort();
    close(fd);
    path = tmpl;
  }
  ~ConfigFile() { unlink(path.c_str()); }
  void write(const ctl::Config& c) const { std::ofstream(path) << ctl::dumpConfig(c, {true}); }
  void garble() const { std::ofstream(path) << "server_groups: 5\n"; }
};

ctl::Config fromFile(const ConfigFile& f, ctl::Config c = ctl::testing::smallConfig()) {
  c.source_path = f.path;
  c.server_groups[0].connection_draining.enabled = true;
  return c;
}

TEST(ServiceReload, ReloadAnswersWhenItsPlanIsAppliedAndRefusesBadRequests) {
  ConfigFile f;
  const ctl::Config c = fromFile(f);
  Rig r(c);
  EXPECT_EQ(r.reload({{"bogus", true}})["error"]["code"], "bad_request");
  // A runtime change, then the file as it was: the reload reverts it.
  r.ok("server.set", {{"address", "10.0.0.12"}, {"weight", 5}});
  f.write(c);
  r.facts.config_loaded_at = 0;
  const uint64_t gen = r.engine->generation();
  json rep = r.reload({{"timeout_s", 30}});
  ASSERT_TRUE(rep.value("ok", false)) << rep.dump();
  EXPECT_GT(rep["result"]["snapshot_generation"].get<uint64_t>(), gen);
  ASSERT_EQ(rep["result"]["reverted"].size(), 1u);
  EXPECT_EQ(rep["result"]["reverted"][0]["address"], "10.0.0.12");
  EXPECT_EQ(rep["result"]["reverted"][0]["after_reload"], 100) << "the file's weight";
  EXPECT_EQ(rep["result"]["restart_needed"], json::array());
  EXPECT_GT(r.facts.config_loaded_at, 0) << "status's config_loaded_at";
  EXPECT_EQ(r.ok("config")["runtime_changes"], json::array());
  EXPECT_FALSE(r.reloader->running());
  // A file that is not a config: refused with every error, nothing changed.
  f.garble();
  const uint64_t before = r.engine->generation();
  rep = r.reload();
  EXPECT_EQ(rep["error"]["code"], "invalid_config");
  EXPECT_FALSE(rep["error"]["details"].empty());
  EXPECT_EQ(r.engine->generation(), before);
  // Without a file to read there is nothing to reload.
  Rig bare;
  EXPECT_EQ(bare.reload()["error"]["code"], "bad_request");
}

TEST(ServiceFleet, FleetMethodsWithoutAFleetAndWithBirdsRoutes) {
  Rig r;
  std::shared_ptr<ctl::BirdClient> bird;
  ctl::AnnounceState announce;
  std::unique_ptr<ctl::FleetSync> sync;
  bool stopping = false, left = false;
  int updates = 0;
  ctl::FleetApiView view{*r.engine, bird, announce, sync, stopping, left, [&] { ++updates; }};
  std::string why;
  std::unique_ptr<dp::CaptureServer> none;
  ctl::CaptureView off{none, why};
  ctl::ServiceTable t;
  ctl::addProcessMethods(t, view, off);
  json f = t.call("fleet", json::object())["result"];
  EXPECT_EQ(f["node_name"], nullptr);
  EXPECT_EQ(f["announce"]["state"], "off");
  EXPECT_EQ(f["announce"]["reason"], "no fleet section: a single gateway");
  EXPECT_EQ(f["peers"], json::array());
  EXPECT_EQ(t.call("fleet.leave", json::object())["error"]["code"], "not_configured");
  EXPECT_EQ(t.call("fleet_sync", json::object())["result"]["enabled"], false);
  // With BIRD's client (never started: nothing is sent), leave and join
  // change the operator's flag and ask the announcement to follow.
  bird = std::make_shared<ctl::BirdClient>(r.io, "/nonexistent/bird.ctl", std::vector<std::string>{"bgp1"});
  json left_reply = t.call("fleet.leave", json::object());
  ASSERT_TRUE(left_reply["ok"].get<bool>()) << left_reply.dump();
  EXPECT_EQ(left_reply["result"]["changed"], true);
  EXPECT_EQ(left_reply["result"]["announce"]["left_by_operator"], true);
  EXPECT_EQ(left_reply["result"]["announce"]["bird"]["socket"], "/nonexistent/bird.ctl");
  EXPECT_TRUE(left);
  EXPECT_EQ(t.call("fleet.leave", json::object())["result"]["changed"], false);
  EXPECT_EQ(t.call("fleet.join", json::object())["result"]["changed"], true);
  EXPECT_FALSE(left);
  EXPECT_EQ(updates, 3);
  std::ostringstream metrics;
  ctl::fleetMetrics(metrics, view);
  EXPECT_NE(metrics.str().find("gwlb_fleet_announced 0"), std::string::npos) << metrics.str();
}

TEST(ServiceCapture, CapturesOffSayWhyAndStopIsNotFound) {
  std::unique_ptr<dp::CaptureServer> none;
  const std::string why = "the EAL runs without hugepages (--no-huge): no secondary process can attach";
  ctl::CaptureView off{none, why};
  json c = ctl::captureJson(off);
  EXPECT_EQ(c["available"], false);
  EXPECT_EQ(c["why_not"], why);
  EXPECT_EQ(c["sessions"], json::array());
  try {
    ctl::captureStopMethod(off, {{"device", "net_pcap0"}});
    ADD_FAILURE() << "capture.stop with captures off answered";
  } catch (const ctl::ApiFailure& f) {
    EXPECT_EQ(f.code, "not_found");
    EXPECT_NE(std::string(f.what()).find(why), std::string::npos) << f.what();
  }
  EXPECT_THROW(ctl::captureStopMethod(off, {{"queue", "x"}}), ctl::ApiFailure) << "a bad parameter";
}

// gwlb-replay's reload event and gwlbd's `reload` (the same Reloader that
// SIGHUP asks) on twin engines at the same times, with runtime changes and
// drains between: the same refusals, warnings, restart keys, reverted
// changes and snapshots.
TEST(ServiceEquivalence, ReplayAndGwlbdDecideReloadsAlike) {
  ConfigFile f;
  const ctl::Config c = fromFile(f);
  Rig api(c), replay(c);
  uint64_t now = 10 * kS;
  auto at = [&] {
    now += kS / 10;  // within the drains' first housekeeping: they stay draining
    api.clock = now;
  };
  auto event = [&](ctl::ScriptedEvent e) {
    ctl::EventOutcome o = ctl::applyEvent(e, *replay.engine, now);
    EXPECT_TRUE(o.error.empty()) << o.error;
    EXPECT_TRUE(o.refused.empty()) << o.refused;
  };
  auto same = [&](const char* step) {
    SCOPED_TRACE(step);
    EXPECT_EQ(ctl::snapshotDigest(*api.engine->current()), ctl::snapshotDigest(*replay.engine->current()));
    EXPECT_EQ(api.engine->lifecycle().entries().size(), replay.engine->lifecycle().entries().size());
    EXPECT_EQ(api.ok("config")["runtime_changes"], replay.ok("config")["runtime_changes"]);
  };
  // Each reload, asked of both; the API's reply and the event's outcome.
  auto reload = [&](bool force, const char* code) {
    at();
    ctl::ScriptedEvent e;
    e.action = ctl::ScriptedEvent::Action::kReload;
    e.file = f.path;
    e.force = force;
    ctl::EventOutcome ev = ctl::applyEvent(e, *replay.engine, now);
    json rep = api.reload({{"force", force}});
    const bool ok = rep.value("ok", false);
    EXPECT_EQ(ok ? "" : rep["error"]["code"].get<std::string>(), code) << rep.dump();
    if (!ok) {
      if (std::string(code) == "would_leave_no_service") EXPECT_FALSE(ev.refused.empty()) << ev.error;
      else EXPECT_FALSE(ev.error.empty());
      return;
    }
    EXPECT_TRUE(ev.error.empty() && ev.refused.empty()) << ev.error << ev.refused;
    const json& res = rep["result"];
    EXPECT_EQ(res.value("warnings", json::array()), json(ev.warnings));
    EXPECT_EQ(res["restart_needed"], json(ev.restart_needed));
    ASSERT_EQ(res["reverted"].size(), ev.reverted.size());
    for (size_t i = 0; i < ev.reverted.size(); ++i)
      EXPECT_EQ(res["reverted"][i]["address"], ev.reverted[i].address.str());
  };
  // A runtime change on both, then the file with a setting that waits for a
  // restart: the change is reverted, the setting held, the config's warnings told.
  at();
  api.ok("server.set", {{"address", "10.0.0.12"}, {"weight", 5}});
  ctl::ScriptedEvent w;
  w.action = ctl::ScriptedEvent::Action::kWeight;
  w.appliance = *IpAddr::parse("10.0.0.12");
  w.weight = 5;
  event(w);
  same("weight");
  ctl::Config next = c;
  next.dataplane.workers = c.dataplane.workers + 1;
  f.write(next);
  reload(false, "");
  same("reload with a restart key");
  // One appliance draining, then a file with only it: the group would have
  // none in service. Refused unless forced.
  at();
  api.ok("server.drain", {{"address", "10.0.0.11"}, {"timeout_s", 60}});
  ctl::ScriptedEvent d;
  d.action = ctl::ScriptedEvent::Action::kDrain;
  d.appliance = *IpAddr::parse("10.0.0.11");
  d.timeout_s = 60;
  event(d);
  same("drain");
  next.server_groups[0].appliances.resize(1);
  f.write(next);
  reload(false, "would_leave_no_service");
  same("refused reload");
  reload(true, "");
  same("forced reload");
  // A file that is no config changes nothing on either.
  f.garble();
  reload(false, "invalid_config");
  same("invalid file");
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
  uint64_t now = 10 * kS;
  for (const Step& st : steps) {
    SCOPED_TRACE(std::string("drain ") + st.address);
    now += kS / 10;  // within the drains' first housekeeping: they stay draining
    api.clock = now;
    ctl::ScriptedEvent e;
    e.action = ctl::ScriptedEvent::Action::kDrain;
    e.appliance = *IpAddr::parse(st.address);
    e.timeout_s = st.timeout_s;
    e.force = st.force;
    // The replay event: an address outside the config is the events file's
    // error there, gwlbd's not_found; the engine decides alike otherwise.
    ctl::EventOutcome ev = ctl::applyEvent(e, *replay.engine, now);
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
