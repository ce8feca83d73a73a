#!/usr/bin/python3
"""gwlbd at its real server-id limit (run_server_ids.sh writes the config:
16,384 appliances, 16 groups of 1024, no_rebalance without draining).

1. The capture's flows land on appliances of fw0; one of them, A, is removed:
   its flows stay, so its id stays held (16,384 held: 16,383 configured + A).
2. server.add of a never seen address is refused with limit_reached; nothing
   is applied: the snapshot generation, the group's appliances and the held
   ids are as before; gwlbd still answers.
3. An appliance without flows is removed: once gwlbd has seen it has none, its
   id is released and reclaimed, and the same server.add succeeds.

usage: server_ids_e2e.py SOCK METRICS_PORT GWLBD_PID
"""
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import api_call  # noqa: E402

sock, metrics_port, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
NEW = "10.200.0.1"


def api(method, **params):
    r = api_call(sock, method, **params)
    assert r.get("ok"), (method, params, r)
    return r["result"]


def metric(name):
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30) as r:
        text = r.read().decode()
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert m, f"{name} not exported"
    return float(m.group(1))


def wait(pred, limit, what):
    deadline = time.time() + limit
    while not pred():
        assert time.time() < deadline, f"timed out: {what}"
        time.sleep(0.1)


def addresses(group):
    return {s["address"] for s in api("servers", group=group)["servers"]}


wait(lambda: api("status")["flows"] >= 20, 60, "the capture's 20 flows")
flows = api("flows", limit=100)["flows"]
loaded = {f["appliance"] for f in flows}
a = flows[0]["appliance"]
group = flows[0]["group"]
assert metric("gwlb_server_ids_held") == 16384, metric("gwlb_server_ids_held")
api("server.remove", address=a)
print(f"removed {a} of {group}; its {sum(f['appliance'] == a for f in flows)} flow(s) stay on it")
time.sleep(2.5)  # two flow counts: A is counted with flows, not forgotten
assert any(s["address"] == a for s in api("servers", group=group)["servers"]), "A still listed (removed, with flows)"
assert metric("gwlb_server_ids_held") == 16384

gen = api("status")["snapshot_generation"]
before = addresses("fw3")
r = api_call(sock, "server.add", group="fw3", address=NEW)
assert r.get("ok") is False and r["error"]["code"] == "limit_reached", r
d = r["error"]["details"]
assert d["needed"] == 1 and d["free"] == 0 and d["limit"] == 16384, d
assert d["configured"] == 16383 and d["removed_with_flows"] == 1, d
print(f"server.add {NEW}: refused: {r['error']['message']}")
assert api("status")["snapshot_generation"] == gen, "a snapshot was published"
assert addresses("fw3") == before, "the group changed"
assert metric("gwlb_server_ids_held") == 16384
assert os.path.exists(f"/proc/{pid}"), "gwlbd exited"
print("nothing was applied; gwlbd answers")

# An appliance without flows leaves: its id comes back, and the add fits.
idle = next(f"10.{g}.0.{i}" for g in range(1, 16) for i in range(1, 200)
            if f"10.{g}.0.{i}" not in loaded)
api("server.remove", address=idle)
t0 = time.time()
deadline = t0 + 60
while True:
    r = api_call(sock, "server.add", group="fw3", address=NEW)
    if r.get("ok"):
        break
    assert r["error"]["code"] == "limit_reached", r
    assert time.time() < deadline, "the removed appliance's id never came back"
    time.sleep(0.2)
print(f"removed {idle} (no flows): its id was reclaimed and server.add {NEW} succeeded "
      f"after {time.time() - t0:.1f} s")
assert NEW in addresses("fw3")
assert metric("gwlb_server_ids_reclaimed_total") >= 1
assert metric("gwlb_server_ids_held") == 16384
assert metric('gwlb_control_handler_errors_total{where="loop"}') == 0
