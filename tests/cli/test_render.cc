// gwlbctl rendering of control API results (shapes from docs/control-api.md).
#include <gtest/gtest.h>

#include <algorithm>

#include "cli/args.h"
#include "cli/class_render.h"
#include "cli/flow_sort.h"
#include "cli/render.h"
#include "cli/appliance_rates.h"

using namespace gwlb::cli;

namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(Render, Servers) {
  Json r = Json::parse(R"J({"servers": [
    {"address": "192.0.2.10", "group": "firewalls", "weight": 100, "state": "active",
     "mac": "02:00:00:00:00:fe", "since": 1000.0, "reason": "configured", "active_flows": 12,
     "health": {"state": "healthy", "consecutive": 12, "last_ok": true, "last_result": "ok",
                "since": 1000.0, "failure_window_s": 19.0, "success_window_s": 4.0},
     "packets": 123456, "bytes": 1572864},
    {"address": "192.0.2.11", "group": "firewalls", "weight": 100, "state": "unhealthy",
     "mac": null, "since": 1300, "reason": "failed health checks", "active_flows": 0,
     "health": {"state": "unhealthy", "consecutive": 3, "last_ok": false,
                "last_result": "bad_status: HTTP 503 (expected 200-399)", "since": 1300,
                "failure_window_s": 0.25, "success_window_s": 1.5},
     "packets": 0, "bytes": 0},
    {"address": "192.0.2.12", "group": "firewalls", "weight": 0, "state": "idle",
     "mac": null, "since": 1300, "reason": "weight 0", "active_flows": 0,
     "health": {"state": "disabled"}, "packets": 0, "bytes": 0}]})J");
  std::string t = renderAppliances(r, 1312.0);
  EXPECT_EQ(t,
            "ADDRESS     GROUP      WEIGHT  STATE      SINCE      HEALTH     CONSEC  LAST RESULT"
            "     WINDOWS               FLOWS  PACKETS    BYTES\n"
            "192.0.2.10  firewalls     100  active     5m12s ago  healthy       12✓  ok         "
            "     fail 19s / ok 4s         12     123k  1.5 MiB\n"
            "192.0.2.11  firewalls     100  unhealthy  12s ago    unhealthy      3✗  bad_status 503"
            "  fail 250ms / ok 1.5s      0        0      0 B\n"
            "192.0.2.12  firewalls       0  idle       12s ago    disabled        -  -          "
            "     -                         0        0      0 B\n");
  std::string w = renderAppliances(r, 1312.0, true);
  EXPECT_TRUE(has(w, "  REASON  ")) << w;
  EXPECT_TRUE(has(w, "  MAC\n")) << w;
  EXPECT_TRUE(has(w, "bad_status: HTTP 503 (expected 200-399)")) << w;
  EXPECT_TRUE(has(w, "02:00:00:00:00:fe")) << w;
  // An older gwlbd without health objects: dashes.
  Json old = Json::parse(R"({"servers": [{"address": "192.0.2.10", "group": "fw", "weight": 1,
    "state": "active", "since": 1000, "active_flows": 1, "packets": 1, "bytes": 1}]})");
  EXPECT_TRUE(has(renderAppliances(old, 1312.0), "active  5m12s ago  -            -  -            -  "))
      << renderAppliances(old, 1312.0);
  EXPECT_EQ(renderAppliances(Json::parse(R"({"servers": []})"), 0), "no servers\n");
}

// With traffic classes: a CLASS column, "-" for a flow created without one
// (a peer's, synced before classes were configured).
TEST(Render, FlowsWithTheirClass) {
  Json flows = Json::parse(R"([
    {"src": "198.51.100.1", "dst": "203.0.113.8", "sport": 20000, "dport": 80, "proto": "tcp",
     "class": "tenant-a", "group": "firewalls-a", "appliance": "192.0.2.11",
     "cookie": "0x1a2b3c4d", "kind": "flow", "age_s": 2.5, "idle_s": 0.5, "packets": 9},
    {"src": "198.51.100.2", "dst": "203.0.113.8", "sport": 20001, "dport": 80, "proto": "tcp",
     "group": "firewalls-a", "appliance": "192.0.2.11", "cookie": "0x1a2b3c4e", "kind": "flow",
     "age_s": 2.5, "idle_s": 0.5, "packets": 9}])");
  std::string t = renderFlows(flows);
  EXPECT_TRUE(has(t, "PROTO  CLASS     GROUP")) << t;
  EXPECT_TRUE(has(t, "tcp    tenant-a  firewalls-a")) << t;
  EXPECT_TRUE(has(t, "tcp    -         firewalls-a")) << t;
}

TEST(Render, FlowsAndCount) {
  Json flows = Json::parse(R"([
    {"src": "198.51.100.1", "dst": "203.0.113.8", "sport": 20000, "dport": 80, "proto": "tcp",
     "group": "firewalls", "appliance": "192.0.2.11", "cookie": "0x1a2b3c4d", "kind": "flow",
     "age_s": 2.5, "idle_s": 0.5, "packets": 9},
    {"src": "2001:db8::1", "dst": "2001:db8::2", "sport": 7, "dport": 0, "proto": 58,
     "group": "firewalls", "appliance": "192.0.2.10", "cookie": "0x00000001", "kind": "flow",
     "age_s": 75, "idle_s": 61, "packets": 1234567},
    {"src": "198.51.100.60", "dst": "203.0.113.96", "sport": 0, "dport": 0, "proto": "udp",
     "group": "firewalls", "appliance": "192.0.2.11", "cookie": "0x01dfd2ed", "kind": "fragment",
     "age_s": 1, "idle_s": 1, "packets": 4}])");
  std::string t = renderFlows(flows);
  EXPECT_TRUE(has(t, "198.51.100.1:20000")) << t;
  EXPECT_TRUE(has(t, "[2001:db8::1]:7")) << t;
  EXPECT_TRUE(has(t, "icmpv6")) << t;
  // One packet count per flow (both directions; issue 17 dropped per-flow bytes).
  EXPECT_TRUE(has(t, "PACKETS")) << t;
  EXPECT_FALSE(has(t, "BYTES")) << t;
  EXPECT_TRUE(has(t, "1.2M")) << t;
  EXPECT_TRUE(has(t, "1m15s")) << t;
  EXPECT_TRUE(has(t, "198.51.100.60   ")) << t;  // fragment: no ports
  EXPECT_FALSE(has(t, "198.51.100.60:")) << t;
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 4);
  EXPECT_FALSE(has(t, "CLASS")) << t;  // gwlbd without traffic classes reports none
  EXPECT_EQ(renderFlows(Json::array()), "no matching flows\n");
  EXPECT_EQ(renderFlowCount(Json{{"count", 42}, {"scanned", 100}}),
            "42 matching flows (100 entries scanned)\n");
}

TEST(Render, StatsWithRates) {
  Json prev = Json::parse(R"({"taken_at": 100.0,
    "workers": [{"id": 0, "counters": {"rx_packets": 10, "encapsulated": 10, "drop_too_big": 0}},
                {"id": 1, "counters": {"rx_packets": 0, "encapsulated": 0, "drop_too_big": 0}}],
    "totals": {"rx_packets": 10, "encapsulated": 10, "rx_bytes": 2048, "drop_too_big": 0},
    "drops": [{"name": "too_big", "count": 0, "help": "packet too big for the underlay"}],
    "ports": [{"id": 0, "name": "net_pcap0", "rx_packets": 10, "tx_packets": 10, "rx_bytes": 1000,
               "tx_bytes": 1500}]})");
  Json cur = prev;
  cur["taken_at"] = 102.0;
  cur["totals"]["rx_packets"] = 30;
  cur["totals"]["drop_too_big"] = 4;
  cur["drops"][0]["count"] = 4;
  cur["ports"][0]["rx_packets"] = 30;
  cur["ports"][0]["rx_bytes"] = 5096;
  Json rates = statsRates(cur, prev, 1.0);
  EXPECT_DOUBLE_EQ(rates["interval_s"].get<double>(), 2.0);  // from taken_at, not the interval
  EXPECT_DOUBLE_EQ(rates["totals"]["rx_packets"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(rates["drops"]["too_big"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(rates["ports"][0]["rx_bytes_per_s"].get<double>(), 2048.0);

  std::string t = renderStats(cur, &prev, 1.0);
  EXPECT_TRUE(has(t, "PER SEC")) << t;
  EXPECT_TRUE(has(t, "WORKER 1")) << t;
  EXPECT_TRUE(has(t, "packet too big for the underlay")) << t;
  EXPECT_TRUE(has(t, "2.0 KiB/s")) << t;
  EXPECT_TRUE(has(t, "2.0 KiB")) << t;  // rx_bytes total in IEC units
  // drop counters only in the drops table
  EXPECT_FALSE(has(t, "drop_too_big")) << t;
  // counters keep the daemon's order, not alphabetical
  EXPECT_LT(t.find("rx_packets"), t.find("encapsulated")) << t;

  std::string plain = renderStats(cur, nullptr, 0);
  EXPECT_FALSE(has(plain, "PER SEC"));
  EXPECT_TRUE(has(plain, "too_big"));
}

TEST(Render, StatusGroupsExplain) {
  Json st = Json::parse(R"({"version": "0.1.0", "uptime_s": 312.5, "started_at": 1700000000,
    "config_file": "/etc/gwlbd.yaml", "config_loaded_at": 1700000000, "snapshot_generation": 3,
    "flows": 50, "flow_capacity": 1000, "rx_pps": 12, "tx_pps": 12,
    "workers": [{"id": 0, "lcore": 1, "rx_queues": ["0/0", "0/1"]}],
    "ports": [{"id": 0, "name": "net_pcap0", "link_up": true, "speed_mbps": 10000,
               "rx_queues": 2, "tx_queues": 2, "rx_packets": 1, "tx_packets": 1, "rx_bytes": 64,
               "tx_bytes": 64, "rx_missed": 0, "rx_errors": 0, "tx_errors": 0}]})");
  std::string t = renderStatus(st, 1700000312.0);
  EXPECT_TRUE(has(t, "5m12s (started 2023-11-14 22:13:20Z)")) << t;
  EXPECT_TRUE(has(t, "50 of 1000 (5.0%)")) << t;
  EXPECT_TRUE(has(t, "0/0 0/1")) << t;
  EXPECT_TRUE(has(t, "10G")) << t;
  EXPECT_FALSE(has(t, "capture")) << "a gwlbd without capture support shows no capture row\n" << t;
  st["capture"] = Json::parse(R"({"available": true, "started": 3, "stopped": 2, "refused": 0,
    "sessions": [{"port": 0, "queue": 0, "direction": "rx"}, {"port": 0, "queue": 0, "direction": "tx"}]})");
  EXPECT_TRUE(has(renderStatus(st, 0), "capture   2 queue(s) being captured")) << renderStatus(st, 0);
  st["capture"] = Json::parse(R"({"available": false, "why_not": "the EAL runs without hugepages"})");
  EXPECT_TRUE(has(renderStatus(st, 0), "capture   off: the EAL runs without hugepages")) << renderStatus(st, 0);
  EXPECT_FALSE(has(renderStatus(st, 0), "underlay")) << "a gwlbd that does not say shows no underlay row";
  st["underlay"] = Json::parse(R"({"ipv4": "192.0.2.1", "ipv6": "2001:db8::1"})");
  EXPECT_TRUE(has(renderStatus(st, 0), "underlay  IPv4 192.0.2.1, IPv6 2001:db8::1\n")) << renderStatus(st, 0);
  st["underlay"] = Json::parse(R"({"ipv4": null, "ipv6": "2001:db8::1"})");
  EXPECT_TRUE(has(renderStatus(st, 0), "underlay  IPv6 2001:db8::1 (no IPv4 address)\n")) << renderStatus(st, 0);

  Json g = Json::parse(R"({"groups": [{"name": "firewalls", "stickiness": "5-tuple",
    "geneve": {"format": "aws", "vni": 0, "endpoint_id": "0x0123456789abcdef", "attachment_id": 1},
    "maglev_table_size": 65537, "tcp_idle_timeout_s": 350, "other_idle_timeout_s": 120,
    "servers": {"total": 3, "active": 2, "idle": 1, "unresolved": 0}}]})");
  t = renderGroups(g);
  EXPECT_TRUE(has(t, "0x0123456789abcdef")) << t;
  EXPECT_TRUE(has(t, "5m50s")) << t;
  EXPECT_TRUE(has(t, "3  2 active, 1 idle\n")) << t;  // states with none are left out
  g["groups"][0]["servers"] = Json::parse(R"({"total": 4, "active": 1, "idle": 0, "unresolved": 0,
    "unhealthy": 2, "initializing": 0, "draining": 1, "drained": 0, "removed": 1})");
  t = renderGroups(g);
  EXPECT_TRUE(has(t, "4  1 active, 2 unhealthy, 1 draining, 1 removed\n")) << t;
  // A VXLAN group: format vxlan, the external/internal VNIs, no Geneve IDs.
  g["groups"][0]["encapsulation"] = "vxlan";
  g["groups"][0]["vxlan"] = Json::parse(R"({"internal": {"port": 10800, "vni": 800},
    "external": {"port": 10801, "vni": 801}})");
  t = renderGroups(g);
  EXPECT_TRUE(has(t, "5-tuple     vxlan   801/800")) << t;
  EXPECT_FALSE(has(t, "0x0123456789abcdef")) << t;

  Json e = Json::parse(R"({"group": "firewalls", "stickiness": "5-tuple", "key": "tcp a <-> b",
    "hash": "0xdeadbeef", "existing": true, "appliance": "192.0.2.11", "cookie": "0x01",
    "age_s": 3, "reason": "the flow exists", "maglev": {"slot": 5, "table_size": 65537,
    "appliance": "192.0.2.12"}})");
  t = renderExplain(e);
  EXPECT_TRUE(has(t, "appliance  192.0.2.11")) << t;
  EXPECT_TRUE(has(t, "slot 5 of 65537 -> 192.0.2.12")) << t;
  EXPECT_FALSE(has(t, "bypass")) << "a flow nobody handed back has no bypass line\n" << t;
  // A flow its appliance handed back: a bypass line, for its life or until when.
  e["bypass"] = Json::parse(R"({"by": "192.0.2.11", "until_s": null})");
  t = renderExplain(e);
  EXPECT_TRUE(has(t, "\nbypass     BYPASSED BY 192.0.2.11, for the flow's life\n")) << t;
  e["bypass"]["until_s"] = 42;
  t = renderExplain(e);
  EXPECT_TRUE(has(t, "\nbypass     BYPASSED BY 192.0.2.11, until +42s\n")) << t;
}

// Issue 27: gwlbctl classes, and explain's class lines.
TEST(Render, ClassesAndExplainedClass) {
  Json r = Json::parse(R"({"configured": true, "unclassified": {"packets": 12},
    "classes": [
      {"index": 0, "name": "backups", "match_summary": "protocols tcp; l4_ports 873", "action": "bypass",
       "listener": null, "packets": 7, "bytes": 1078},
      {"index": 1, "name": "tenant-a", "match_summary": "vlans 100,200", "action": "inspect",
       "listener": "firewalls-a", "packets": 123456, "bytes": 10485760}]})");
  std::string t = renderClasses(r);
  EXPECT_EQ(t,
            "#  NAME      MATCH                        ACTION   LISTENER     PACKETS     BYTES\n"
            "0  backups   protocols tcp; l4_ports 873  bypass   -                  7   1.1 KiB\n"
            "1  tenant-a  vlans 100,200                inspect  firewalls-a     123k  10.0 MiB\n"
            "-  (none)    no class matches             drop     -                 12         -\n"
            "first match wins; (none): dropped as unclassified (drop_unclassified)\n");
  r["compiled"] = Json::parse(R"({"rules": 2, "structure": "cross_product", "bytes": 1500000})");
  EXPECT_TRUE(has(renderClasses(r), "\ncompiled for the workers: 2 rules, cross product (one cost per packet "
                                    "whatever the rules), 1.4 MiB\n"))
      << renderClasses(r);
  r["compiled"]["structure"] = "bit_vectors";
  EXPECT_TRUE(has(renderClasses(r), "2 rules, bit vectors (the cross product would be too large")) << renderClasses(r);
  // Past the IPv4 trie's budget, and a change waiting for its compile.
  r["compiled"]["ipv4"] = "intervals";
  r["compiling"] = true;
  EXPECT_TRUE(has(renderClasses(r), ", IPv4 addresses by binary search (too many for the trie), 1.4 MiB\n"))
      << renderClasses(r);
  EXPECT_TRUE(has(renderClasses(r), "\ncompiling: a config change waits for its traffic classes; the classes above "
                                    "serve until it is published\n"))
      << renderClasses(r);
  EXPECT_EQ(renderClasses(Json::parse(R"({"configured": false, "classes": [], "default_listener": "web"})")),
            "no traffic_classes: every packet is inspected by listener 'web'\n");

  Json e = Json::parse(R"j({"group": "fw-a", "stickiness": "5-tuple", "key": "k", "hash": "0x1",
    "existing": false, "appliance": "192.0.2.10", "reason": "no flow entry",
    "class": {"index": 2, "name": "web", "action": "inspect", "listener": "tenant-a",
      "matched": ["vlans: vlan 100 is in 100"],
      "skipped": [{"index": 0, "name": "backups", "why": "l4_ports: neither port 1 nor 2 is in 873"},
                  {"index": 1, "name": "blocked", "why": "prefixes: neither a nor b is in 203.0.113.0/24"}],
      "note": "classes that list ingress_ports were taken as not matching: give the ingress port (--port)"}})j");
  t = renderExplain(e);
  EXPECT_TRUE(has(t, "class        web (traffic_classes[2]): inspect, listener tenant-a\n"
                     "matched      vlans: vlan 100 is in 100\n"
                     "not matched  backups (traffic_classes[0]): l4_ports: neither port 1 nor 2 is in 873\n"
                     "             blocked (traffic_classes[1]): prefixes: neither a nor b is in 203.0.113.0/24\n"
                     "note         classes that list ingress_ports"))
      << t;
  e["class"] = Json::parse(R"({"name": null, "index": null, "action": "drop", "matched": [], "skipped": []})");
  t = renderExplain(e);
  EXPECT_TRUE(has(t, "class      none matches: dropped as unclassified (drop_unclassified)\n")) << t;
  e.erase("class");
  EXPECT_FALSE(has(renderExplain(e), "class")) << renderExplain(e);
}

// A class's tag and mirror: lines under the table (`gwlbctl classes`) and in `explain`.
TEST(Render, ClassTagAndMirror) {
  Json r = Json::parse(R"({"configured": true, "unclassified": {"packets": 0}, "classes": [
      {"index": 0, "id": 3, "name": "tenant-a", "match_summary": "vlans 100", "action": "inspect",
       "listener": "fw", "tag": "tenant-a", "tag_value": 4242,
       "mirror": "copies to server group 'tools', first 128 bytes, 1 packet in 10", "packets": 1, "bytes": 60},
      {"index": 1, "id": 4, "name": "tenant-b", "match_summary": "vlans 200", "action": "inspect",
       "listener": "fw", "tag": "16", "tag_value": 16, "mirror": null, "packets": 1, "bytes": 60},
      {"index": 2, "id": 5, "name": "rest", "match_summary": "every packet", "action": "drop",
       "listener": null, "tag": null, "tag_value": null, "mirror": null, "packets": 0, "bytes": 0}]})");
  const std::string t = renderClasses(r);
  EXPECT_TRUE(has(t, "(drop_unclassified)\n"
                     "tag: tenant-a: tenant-a = 4242 in every packet to its appliances\n"
                     "mirror: tenant-a (class id 3 in the copies): copies to server group 'tools', first 128 "
                     "bytes, 1 packet in 10\n"
                     "tag: tenant-b: 16 in every packet to its appliances\n"))
      << t;
  EXPECT_FALSE(has(t, "rest:")) << t;
  Json e = Json::parse(R"j({"class": {"index": 0, "name": "tenant-a", "action": "inspect", "listener": "fw",
      "matched": ["vlans: vlan 100 is in 100"], "skipped": [], "tag": "tenant-a",
      "mirror": "copies to server group 'tools'"}})j");
  const std::string x = renderExplain(e);
  EXPECT_TRUE(has(x, "\nmirror ") && has(x, " copies to server group 'tools'\n") && has(x, "\ntag ") &&
              has(x, " tenant-a\n"))
      << x;
}

TEST(Render, ChangesAndErrors) {
  EXPECT_EQ(renderChange("server.add", Json{{"group", "fw"}, {"address", "192.0.2.20"}},
                         Json{{"snapshot_generation", 4}}),
            "added 192.0.2.20 to group fw; snapshot generation 4\n");
  EXPECT_TRUE(has(renderChange("reload", Json::object(),
                               Json{{"snapshot_generation", 5}, {"restart_needed", {"eal"}}}),
                  "next restart: eal"));
  // gwlbd answers a reload once it is applied: the generation is the new snapshot's.
  EXPECT_EQ(renderChange("reload", Json::object(), Json{{"snapshot_generation", 5}}),
            "reloaded; snapshot generation 5\n");
  Json err = Json::parse(R"({"code": "invalid_config", "message": "change rejected",
    "details": [{"path": "server_groups[0].servers", "message": "at least one server"}]})");
  EXPECT_EQ(renderError(err),
            "change rejected (invalid_config)\n  server_groups[0].servers: at least one server\n");
  // Issue 14 item 13: a forced change prints its warning; a refusal prints its
  // message (which says what would happen) and not its structured details.
  EXPECT_TRUE(has(renderChange("server.drain", Json{{"address", "192.0.2.11"}},
                               Json{{"snapshot_generation", 6},
                                    {"drain", {{"timeout_s", 30}, {"existing_flows", "stay"}}},
                                    {"warnings", {"forced: server group 'fw' has no appliance in service"}}}),
                  "\nwarning: forced: server group 'fw' has no appliance in service\n"));
  Json refused = Json::parse(R"({"code": "would_leave_no_service",
    "message": "server.drain 192.0.2.11 refused: server group 'fw' would have no appliance in service",
    "details": [{"group": "fw", "taken_out": ["192.0.2.11"], "left": [], "new_flows": "x",
                 "existing_flows": "y"}]})");
  EXPECT_EQ(renderError(refused),
            "server.drain 192.0.2.11 refused: server group 'fw' would have no appliance in service "
            "(would_leave_no_service)\n");
  EXPECT_EQ(protoName(Json(17)), "udp");
  EXPECT_EQ(protoName(Json("tcp")), "tcp");
  EXPECT_EQ(protoName(Json(47)), "47");
}

// Issue 18 item 10: flows --sort, servers --watch rates, stats without zeros.
namespace {

std::vector<std::string> column(const Json& flows, const char* key) {
  std::vector<std::string> v;
  for (const auto& f : flows) v.push_back(fieldText(f, key));
  return v;
}

}  // namespace

TEST(FlowSort, EachFieldAscendingAndDescending) {
  Json flows = Json::parse(R"J([
    {"src": "10.0.0.9",    "sport": 80,   "dst": "203.0.113.1", "dport": 443, "appliance": "192.0.2.11",
     "age_s": 5.0, "idle_s": 0.5, "packets": 40},
    {"src": "9.0.0.1",     "sport": 1000, "dst": "2001:db8::1", "dport": 80, "appliance": "192.0.2.9",
     "age_s": 50.0, "idle_s": 2.0, "packets": 3},
    {"src": "2001:db8::2", "sport": 5,    "dst": "203.0.113.1", "dport": 22, "appliance": null,
     "age_s": 0.5, "idle_s": 0.1, "packets": [7, 8]},
    {"src": "10.0.0.9",    "sport": 9,    "dst": "198.51.100.7", "dport": 443, "appliance": "192.0.2.10",
     "age_s": 7.0, "idle_s": 9.0, "packets": 12}
  ])J");
  auto sorted = [&](const char* spec, bool reverse = false) {
    Json f = flows;
    sortFlows(f, parseFlowSort(spec, reverse));
    return f;
  };
  // Addresses numerically (9.x before 10.x), IPv4 before IPv6, then ports.
  EXPECT_EQ(column(sorted("src"), "src"),
            (std::vector<std::string>{"9.0.0.1", "10.0.0.9", "10.0.0.9", "2001:db8::2"}));
  EXPECT_EQ(column(sorted("src"), "sport"), (std::vector<std::string>{"1000", "9", "80", "5"}));
  EXPECT_EQ(column(sorted("-src"), "sport"), (std::vector<std::string>{"5", "80", "9", "1000"}));
  EXPECT_EQ(column(sorted("dst"), "dst"),
            (std::vector<std::string>{"198.51.100.7", "203.0.113.1", "203.0.113.1", "2001:db8::1"}));
  EXPECT_EQ(column(sorted("dst"), "dport"), (std::vector<std::string>{"443", "22", "443", "80"}));
  EXPECT_EQ(column(sorted("age"), "age_s"), (std::vector<std::string>{"0.5", "5.0", "7.0", "50.0"}));
  EXPECT_EQ(column(sorted("age", true), "age_s"), column(sorted("-age"), "age_s"));
  EXPECT_EQ(column(sorted("-age"), "age_s"), (std::vector<std::string>{"50.0", "7.0", "5.0", "0.5"}));
  EXPECT_EQ(column(sorted("idle"), "idle_s"), (std::vector<std::string>{"0.1", "0.5", "2.0", "9.0"}));
  // A [orig, reply] pair counts as its sum (15).
  EXPECT_EQ(column(sorted("-packets"), "sport"), (std::vector<std::string>{"80", "5", "9", "1000"}));
  // No appliance: last, ascending or descending.
  EXPECT_EQ(column(sorted("appliance"), "appliance"),
            (std::vector<std::string>{"192.0.2.9", "192.0.2.10", "192.0.2.11", "-"}));
  EXPECT_EQ(column(sorted("-appliance"), "appliance"),
            (std::vector<std::string>{"192.0.2.11", "192.0.2.10", "192.0.2.9", "-"}));
  EXPECT_THROW(parseFlowSort("cookie", false), UsageError);
  EXPECT_THROW(parseFlowSort("-", false), UsageError);
}

TEST(ApplianceRates, FromTwoSamples) {
  Json prev = Json::parse(R"J({"servers": [
    {"address": "192.0.2.10", "packets": 1000, "bytes": 100000, "returned_packets": 900, "returned_bytes": 90000},
    {"address": "192.0.2.11", "packets": 5000, "bytes": 500, "returned_packets": 10, "returned_bytes": 10}]})J");
  Json cur = Json::parse(R"J({"servers": [
    {"address": "192.0.2.10", "group": "fw", "state": "active", "health": {"state": "healthy"},
     "active_flows": 12, "packets": 3000, "bytes": 2200000, "returned_packets": 2900, "returned_bytes": 190000},
    {"address": "192.0.2.11", "group": "fw", "state": "active", "packets": 10, "bytes": 1,
     "returned_packets": 10, "returned_bytes": 10},
    {"address": "192.0.2.12", "group": "fw", "state": "initializing", "packets": 7, "bytes": 7}]})J");
  Json r = applianceRates(cur, prev, 2.0);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], (Json{{"address", "192.0.2.10"}, {"packets_per_s", 1000.0}, {"bytes_per_s", 1050000.0},
                        {"returned_packets_per_s", 1000.0}, {"returned_bytes_per_s", 50000.0}}));
  // Counters that went down (a restart) and a new appliance: no rate yet.
  EXPECT_TRUE(r[1]["packets_per_s"].is_null());
  EXPECT_EQ(r[1]["returned_packets_per_s"], 0.0);
  EXPECT_TRUE(r[2]["packets_per_s"].is_null());
  std::string out = renderApplianceRates(cur, r, 2.0, 1700000000.0);
  EXPECT_TRUE(has(out, "rates over the last 2.0 s")) << out;
  EXPECT_TRUE(has(out, "ADDRESS     GROUP  STATE         HEALTH   FLOWS  SENT/S   SENT B/S  RETURNED/S  RETURNED B/S"))
      << out;
  EXPECT_TRUE(has(out, "192.0.2.10  fw     active        healthy     12    1.0k  1.0 MiB/s        1.0k    48.8 KiB/s"))
      << out;
  EXPECT_TRUE(has(out, "192.0.2.11  fw     active        -            -       -          -           0         0 B/s")) << out;
}

TEST(Render, StatsHidesZerosUnlessAll) {
  Json s = Json::parse(R"J({"taken_at": 1700000000.0,
    "totals": {"rx_packets": 10, "tx_packets": 0, "punted": 0, "drop_too_big": 0, "drop_bad_vni": 3},
    "workers": [{"id": 0, "counters": {"rx_packets": 10, "tx_packets": 0, "punted": 0}}],
    "drops": [{"name": "drop_too_big", "count": 0, "help": "too big"},
              {"name": "drop_bad_vni", "count": 3, "help": "bad VNI"}],
    "ports": []})J");
  std::string out = renderStats(s, nullptr, 0);
  EXPECT_TRUE(has(out, "rx_packets")) << out;
  EXPECT_TRUE(has(out, "drop_bad_vni")) << out;
  EXPECT_FALSE(has(out, "tx_packets")) << out;
  EXPECT_FALSE(has(out, "punted")) << out;
  EXPECT_FALSE(has(out, "drop_too_big")) << out;
  EXPECT_TRUE(has(out, "not shown, at zero: 2 counters, 1 drop reason (--all shows them)")) << out;
  std::string all = renderStats(s, nullptr, 0, true);
  for (const char* c : {"rx_packets", "tx_packets", "punted", "drop_too_big", "drop_bad_vni"})
    EXPECT_TRUE(has(all, c)) << c << "\n" << all;
  EXPECT_FALSE(has(all, "not shown")) << all;
  EXPECT_EQ(protoName(Json(132)), "sctp");
}
