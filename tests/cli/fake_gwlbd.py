#!/usr/bin/python3
"""A stand-in for gwlbd's control socket, for gwlbctl's error-path tests.

usage: fake_gwlbd.py SOCKET REQUEST_LOG

Answers each request line with a canned reply chosen by method, and appends
every request it received to REQUEST_LOG (one JSON object per line):
  status        never answers (gwlbctl's --timeout)
  groups        answers with a line that is not JSON
  servers       not_found
  server.add    invalid_config with details
  server.remove ok
  flows         two pages of one flow each (cursor "1"), or {count} with count
  stats         a sample whose counters grow by 10 per call
  reload        ok, restart_needed ["eal"]
"""
import json
import os
import socketserver
import sys
import threading
import time

sock_path, log_path = sys.argv[1], sys.argv[2]
lock = threading.Lock()
stats_calls = [0]


def flow(n):
    return {"src": "198.51.100.%d" % n, "dst": "203.0.113.1", "sport": 1000 + n, "dport": 80,
            "proto": "tcp", "group": "firewalls", "appliance": "192.0.2.10",
            "cookie": "0x0000000%d" % n, "kind": "flow", "age_s": 1.5, "idle_s": 0.5,
            "packets": [3, 2], "bytes": [300, 200]}


def reply(req):
    m, p = req.get("method"), req.get("params", {})
    if m == "groups":
        return "this is not json"
    if m == "servers":
        return {"ok": False, "error": {"code": "not_found", "message": "no server group '%s'" % p.get("group")}}
    if m == "server.add":
        return {"ok": False, "error": {"code": "invalid_config", "message": "1 error",
                "details": [{"path": "server_groups[0].servers[3].address",
                             "message": "duplicate address 192.0.2.10"}]}}
    if m == "server.remove":
        return {"ok": True, "result": {"snapshot_generation": 2}}
    if m == "reload":
        return {"ok": True, "result": {"snapshot_generation": 3, "restart_needed": ["eal"]}}
    if m == "flows":
        if p.get("count"):
            return {"ok": True, "result": {"count": 2, "scanned": 5}}
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
