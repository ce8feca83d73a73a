#!/usr/bin/python3
"""A stand-in for gwlbd's control socket, for gwlbctl's error-path tests.

usage: fake_gwlbd.py SOCKET REQUEST_LOG [PROBE_PORT]

Answers each request line with a canned reply chosen by method, and appends
every request it received to REQUEST_LOG (one JSON object per line):
  status        never answers (gwlbctl's --timeout)
  groups        answers with a line that is not JSON
  servers       three appliances with health objects; not_found for another group.
                Each call, 192.0.2.10's counters grow: packets +1000, bytes +100,
                returned_packets +900, returned_bytes +90 (servers --watch rates)
  health        192.0.2.10: unhealthy with history; 192.0.2.11: checks off;
                127.0.0.1: a tcp check on PROBE_PORT (for `gwlbctl probe 127.0.0.1`);
                others: not_found
  server.add    invalid_config with details
  server.remove ok
  flows         two pages of one flow each (cursor "1"), or {count} with count;
                with proto udp: an empty page then one flow (cursor "5"), and a
                count in two pages (cursor "9");
                flow n has 5 n packets
  stats         a sample whose counters grow by 10 per call
  reload        ok, restart_needed ["eal"]
  destinations  two listeners: "inspect" failed over from fw-east to fw-west (a
                dry-run composite would disagree), "web" healthy; {"name": N}
                filters, not_found for another name
  fleet         node gw-2 announced through BIRD, three peers (one unreachable, one this node)
  fleet.leave   ok: withdrawn, left by operator
  fleet.join    not_configured (as a gwlbd without fleet.bird answers)
  capture.stop  net_pcap0: detached 2 (1 with a queue); no device: 2; another device: not_found
"""
import json
import os
import socketserver
import sys
import threading
import time

sock_path, log_path = sys.argv[1], sys.argv[2]
probe_port = int(sys.argv[3]) if len(sys.argv) > 3 else 9
lock = threading.Lock()
stats_calls = [0]
servers_calls = [0]


def flow(n):
    return {"src": "198.51.100.%d" % n, "dst": "203.0.113.1", "sport": 1000 + n, "dport": 80,
            "proto": "tcp", "group": "firewalls", "appliance": "192.0.2.10",
            "cookie": "0x0000000%d" % n, "kind": "flow", "age_s": 1.5, "idle_s": 0.5,
            "packets": 5 * n}


NOW = time.time()
HEALTH_10 = {"state": "unhealthy", "consecutive": 3, "last_ok": False,
             "last_result": "connect_timeout: no answer to SYN within 5000 ms",
             "since": NOW - 72, "failure_window_s": 19.0, "success_window_s": 4.0}
SERVERS = [
    {"address": "192.0.2.10", "group": "firewalls", "weight": 100, "state": "unhealthy",
     "reason": "failed health checks (3 consecutive failures (connect_timeout: no answer to SYN "
               "within 5000 ms)): no new flows",
     "since": NOW - 72, "mac": "02:00:00:00:00:fe", "active_flows": 12,
     "health": HEALTH_10, "packets": 123456, "bytes": 1572864},
    {"address": "192.0.2.11", "group": "firewalls", "weight": 100, "state": "active",
     "reason": "in the Maglev table", "since": NOW - 300, "mac": "02:00:00:00:00:fe",
     "active_flows": 7, "health": {"state": "healthy", "consecutive": 12, "last_ok": True,
     "last_result": "ok", "since": NOW - 290, "failure_window_s": 19.0, "success_window_s": 4.0},
     "packets": 10, "bytes": 1000},
    {"address": "192.0.2.12", "group": "firewalls", "weight": 0, "state": "idle",
     "reason": "weight 0: keeps its flows, receives no new ones", "since": NOW - 5, "mac": None,
     "active_flows": 0, "health": {"state": "disabled"}, "packets": 0, "bytes": 0},
]
CHECK = {"configured": True, "enabled": True, "protocol": "http", "port": 80, "path": "/healthz",
         "domain": "fw.example", "http_codes": ["http_2xx", "302"], "interval_ms": 2000,
         "timeout_ms": 5000, "healthy_threshold": 3, "unhealthy_threshold": 3}
HISTORY_10 = [
    {"ago_s": 95.25, "transition": {"from": "unused", "to": "initializing"},
     "reason": "weight set, probing starts"},
    {"ago_s": 93.0, "ok": True, "reason": "ok", "response_ms": 3},
    {"ago_s": 91.0, "ok": True, "reason": "ok", "response_ms": 2},
    {"ago_s": 89.0, "ok": True, "reason": "ok", "response_ms": 2},
    {"ago_s": 89.0, "transition": {"from": "initializing", "to": "healthy"},
     "reason": "3 consecutive successes"},
    {"ago_s": 12.3, "ok": False, "reason": "bad_status: HTTP 503 (expected 200-299,302)",
     "response_ms": 4},
    {"ago_s": 7.2, "ok": False, "reason": "connect_timeout: no answer to SYN within 5000 ms",
     "response_ms": 5000},
    {"ago_s": 0.2, "ok": False, "reason": "connect_timeout: no answer to SYN within 5000 ms",
     "response_ms": 5000},
    {"ago_s": 0.2, "transition": {"from": "healthy", "to": "unhealthy"},
     "reason": "3 consecutive failures (connect_timeout: no answer to SYN within 5000 ms)"},
]


def source(name, group, policy, pct, cnt, servers, healthy):
    need = max((servers * pct + 99) // 100, cnt)
    return {"name": name, "group": group, "policy": policy, "min_healthy_percent": pct,
            "min_healthy_count": cnt, "servers": servers, "healthy_servers": healthy,
            "healthy": servers > 0 and healthy >= need,
            "why": "%d of %d healthy; needs %d (%d %% and at least %d)" % (healthy, servers, need, pct, cnt)}


# Ages of an hour or more: they read the same for a minute (the checks take seconds).
DESTINATIONS = [
    {"name": "inspect", "implicit": False, "healthy": False, "healthy_with_dry_run": True,
     "active_group": "fw-west", "would_be_active_group": "fw-east", "since": NOW - 5400,
     "reason": "every region before it is unhealthy", "failback_hold_s": 300,
     "when_all_unhealthy": "fail_open",
     "regions": [
         {"group": "fw-east", "healthy": False, "healthy_with_dry_run": True, "healthy_since": None,
          "composites": ["inspect-east", "inspect-east-lenient"], "judged_by": "composites"},
         {"group": "fw-west", "healthy": True, "healthy_with_dry_run": True,
          "healthy_since": NOW - 3600, "composites": [],
          "judged_by": "any healthy appliance (no acting composite)",
          "own_appliances": source("(any healthy appliance)", "fw-west", "(default)", 0, 1, 3, 3)}],
     "composites": [
         {"name": "inspect-east", "dry_run": False, "healthy": False, "since": NOW - 5400, "changes": 1,
          "sources": [source("src-east", "fw-east", "strict", 60, 2, 5, 2)]},
         {"name": "inspect-east-lenient", "dry_run": True, "healthy": True, "since": NOW - 3600,
          "changes": 0, "sources": [source("src-east-any", "fw-east", "lenient", 20, 1, 5, 2)]}]},
    {"name": "web", "implicit": False, "healthy": True, "healthy_with_dry_run": True,
     "active_group": "web-a", "would_be_active_group": "web-a", "since": NOW - 7200,
     "reason": "the preferred region is healthy", "failback_hold_s": 0,
     "when_all_unhealthy": "drop",
     "regions": [
         {"group": "web-a", "healthy": True, "healthy_with_dry_run": True,
          "healthy_since": NOW - 7200, "composites": [],
          "judged_by": "any healthy appliance (no acting composite)",
          "own_appliances": source("(any healthy appliance)", "web-a", "(default)", 0, 1, 2, 1)}],
     "composites": []},
]


def health(addr):
    if addr == "192.0.2.10":
        return dict(HEALTH_10, address=addr, group="firewalls", check=CHECK, history=HISTORY_10)
    if addr == "192.0.2.11":
        return {"state": "disabled", "address": addr, "group": "firewalls",
                "check": dict(CHECK, enabled=False), "history": []}
    if addr == "127.0.0.1":
        return {"state": "initializing", "consecutive": 0, "last_ok": False, "last_result": "",
                "since": NOW, "failure_window_s": 1.1, "success_window_s": 0.2,
                "address": addr, "group": "local",
                "check": dict(CHECK, protocol="tcp", port=probe_port, timeout_ms=500,
                              interval_ms=100),
                "history": []}
    return None


FLEET = {
    "node_name": "gw-2",
    "announce": {"state": "announced", "reason": "ready: dataplane running, appliances in service, "
                 "warm start done", "since_s": 312.5, "changes": 3, "left_by_operator": False,
                 "stopping": False, "grace_period_s": 5,
                 "bird": {"socket": "/run/bird/bird.ctl", "connected": True, "wanted": "enabled",
                          "error": "", "commands_sent": 4,
                          "protocols": [{"name": "gwlb_routes", "state": "up"},
                                        {"name": "gwlb_routes6", "state": "up"}]}},
    "warm_start": {"done": True, "state": "done", "peer": "10.0.0.1:7946", "flows_installed": 118002},
    "view": {"complete": True, "why": "", "records_lost_matter_for_s": 0.0, "horizon_s": 700.0},
    "peers": [{"address": "10.0.0.1:7946", "reachable": True, "last_sync_s": 0.4, "flows_received": 120345,
               "flows_sent": 118002, "auth_failures": 0, "replayed": 0, "malformed": 0,
               "config": {"state": "differs", "differing_sections": ["weights", "timeouts"]},
               "health_disagreements": [{"appliance": "10.0.1.12", "here": "healthy", "there": "unhealthy",
                                         "new_flows_here": True, "new_flows_there": False}]},
              {"address": "10.0.0.3:7946", "reachable": False, "last_sync_s": None, "flows_received": 0,
               "flows_sent": 0, "auth_failures": 7, "replayed": 1, "malformed": 2,
               "config": {"state": "unknown", "differing_sections": []}},
              {"address": "10.0.0.2:7946", "this_node": True,
               "this_node_why": "10.0.0.2 is an address of this host, and fleet.sync_listen 0.0.0.0:7946 takes it",
               "reachable": False, "last_sync_s": None, "flows_received": 0, "flows_sent": 0,
               "auth_failures": 0, "replayed": 0, "malformed": 0,
               "config": {"state": "unknown", "differing_sections": []}}],
}


def reply(req):
    m, p = req.get("method"), req.get("params", {})
    if m == "groups":
        return "this is not json"
    if m == "servers":
        if p.get("group", "firewalls") == "firewalls":
            with lock:
                servers_calls[0] += 1
                k = servers_calls[0]
            servers = [dict(x) for x in SERVERS]
            s10 = servers[0]
            s10["packets"] += 1000 * k
            s10["bytes"] += 100 * k
            s10["returned_packets"] = 100000 + 900 * k
            s10["returned_bytes"] = 1000000 + 90 * k
            return {"ok": True, "result": {"servers": servers}}
        return {"ok": False, "error": {"code": "not_found", "message": "no server group '%s'" % p.get("group")}}
    if m == "health":
        h = health(p.get("address"))
        if h is None:
            return {"ok": False, "error": {"code": "not_found", "message": "no appliance %s" % p.get("address")}}
        return {"ok": True, "result": h}
    if m == "destinations":
        if "name" not in p:
            return {"ok": True, "result": {"destinations": DESTINATIONS}}
        ds = [d for d in DESTINATIONS if d["name"] == p["name"]]
        if not ds:
            return {"ok": False, "error": {"code": "not_found",
                                           "message": "no destination (listener) '%s'" % p["name"]}}
        return {"ok": True, "result": {"destinations": ds}}
    if m == "fleet":
        return {"ok": True, "result": FLEET}
    if m == "fleet.leave":
        left = json.loads(json.dumps(FLEET))
        left["announce"].update(state="withdrawn", reason="left by operator (gwlbctl fleet join to return)",
                                since_s=0.01, left_by_operator=True)
        left["announce"]["bird"]["wanted"] = "disabled"
        left["changed"] = True
        return {"ok": True, "result": left}
    if m == "capture.stop":
        dev = p.get("device", "net_pcap0")
        if dev != "net_pcap0":
            return {"ok": False, "error": {"code": "not_found", "message": "no port named '%s'" % dev}}
        n = 1 if "queue" in p else 2
        return {"ok": True, "result": {"detached": n, "capture": {"available": True, "sessions": []}}}
    if m == "fleet.join":
        return {"ok": False, "error": {"code": "not_configured", "message":
                "this node announces no routes: the config has no fleet.bird section"}}
    if m == "server.add":
        return {"ok": False, "error": {"code": "invalid_config", "message": "1 error",
                "details": [{"path": "server_groups[0].servers[3].address",
                             "message": "duplicate address 192.0.2.10"}]}}
    if m == "server.remove":
        return {"ok": True, "result": {"snapshot_generation": 2}}
    if m == "reload":
        return {"ok": True, "result": {"snapshot_generation": 3, "restart_needed": ["eal"]}}
    if m == "flows":
        # gwlbd walks a bounded stretch of the table per request: a count,
        # and a page with fewer rows than asked (none), go on by cursor.
        if p.get("count") and p.get("proto") == "udp":
            if p.get("cursor") == "9":
                return {"ok": True, "result": {"count": 1, "scanned": 4, "next_cursor": None}}
            return {"ok": True, "result": {"count": 2, "scanned": 5, "next_cursor": "9"}}
        if p.get("count"):
            return {"ok": True, "result": {"count": 2, "scanned": 5}}
        if p.get("proto") == "udp":
            if p.get("cursor") == "5":
                return {"ok": True, "result": {"flows": [flow(2)], "next_cursor": None, "scanned": 1}}
            return {"ok": True, "result": {"flows": [], "next_cursor": "5", "scanned": 0}}
        if p.get("cursor") == "1":
            return {"ok": True, "result": {"flows": [flow(2)], "next_cursor": None, "scanned": 3}}
        return {"ok": True, "result": {"flows": [flow(1)], "next_cursor": "1", "scanned": 2}}
    if m == "stats":
        with lock:
            stats_calls[0] += 1
            n = stats_calls[0] * 10
        return {"ok": True, "result": {
            "workers": [{"id": 0, "counters": {"rx_packets": n, "drop_too_big": 0}}],
            "totals": {"rx_packets": n, "drop_too_big": 0},
            "drops": [{"name": "drop_too_big", "count": 0, "help": "packet too big"}],
            "ports": [], "taken_at": time.time()}}
    return {"ok": False, "error": {"code": "bad_request", "message": "unknown method '%s'" % m}}


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            req = json.loads(line)
            with lock, open(log_path, "a") as f:
                f.write(json.dumps(req) + "\n")
            if req.get("method") == "status":
                time.sleep(30)
                return
            r = reply(req)
            if isinstance(r, dict):
                r["id"] = req.get("id")
                r = json.dumps(r)
            self.wfile.write((r + "\n").encode())
            self.wfile.flush()


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


if os.path.exists(sock_path):
    os.unlink(sock_path)
Server(sock_path, Handler).serve_forever()
