#!/usr/bin/python3
"""Cross-region failover end to end (docs/product-rules.md section 3), with real TCP
health-check listeners on loopback and a real HTTP client on the health
endpoint, while gwlbd forwards an endless capture.

Region fw-east (127.0.0.21-25, policy 60 % and at least 2) is preferred over
fw-west (127.0.0.31-33); both rebalance. We stop east's listeners one by one:
the endpoint stays 200 while 3 of 5 are healthy and turns 503 exactly when the
third fails; new flows then go west and existing east flows move west on their
next packet. East comes back: new flows return, moved flows stay. With a
failback hold, new flows return only after it. With the composite in dry run,
nothing moves but the endpoint body, the API and the metrics say it would.

usage: regions_e2e.py SOCK PROBE_PORT HTTP_PORT METRICS_PORT LOG CONFIG GWLBD
"""
import atexit
import json
import os
import random
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import Listener, api_call  # noqa: E402

sock_path, port, http_port, metrics_port, log_path, config_path, gwlbd_bin = \
    sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], \
    sys.argv[7]
EAST = [f"127.0.0.{i}" for i in range(21, 26)]
WEST = [f"127.0.0.{i}" for i in range(31, 34)]
INTERVAL, TIMEOUT, N = 0.1, 0.2, 2


def api(method, **params):
    r = api_call(sock_path, method, **params)
    assert r.get("ok"), r
    return r["result"]


def endpoint(path="/destinations/inspect"):
    """(status, json body) from the health endpoint, via urllib."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}{path}", timeout=5) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def metric(name, **labels):
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    lab = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(rf"^{name}{{{re.escape(lab)}}} (\S+)$", text, re.M)
    assert m, f"{name}{{{lab}}} not exported"
    return float(m.group(1))


def wait(pred, limit, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        v = pred()
        if v:
            return time.monotonic() - t0
        time.sleep(0.01)
    raise AssertionError(f"not {what} after {limit} s")


def state(addr):
    for sv in api("servers")["servers"]:
        if sv["address"] == addr:
            return sv["health"]["state"]
    raise AssertionError(addr)


FRESH = [(f"198.51.100.{random.Random(i).randrange(1, 250)}", 40000 + i) for i in range(200)]


def new_flow_targets():
    """Where 200 fresh tuples would go now: {appliance: count}."""
    out = {}
    for src, sp in FRESH:
        e = api("explain", src=src, dst="203.0.113.77", proto="tcp", sport=sp, dport=443)
        assert not e["existing"], e
        out[e["appliance"]] = out.get(e["appliance"], 0) + 1
    return out


def flows_by_app():
    rows, cursor = [], None
    while True:
        p = {"limit": 10000}
        if cursor:
            p["cursor"] = cursor
        r = api("flows", **p)
        rows += [f for f in r["flows"] if f["kind"] == "flow"]
        cursor = r["next_cursor"]
        if not cursor:
            return rows


def in_region(targets, region):
    return set(targets) <= set(region)


listeners = {a: Listener(a, port) for a in EAST + WEST}
for l in listeners.values():
    l.start()
gwlbd = subprocess.Popen([gwlbd_bin, "--config", config_path], stdout=open(log_path, "w"),
                         stderr=subprocess.STDOUT)
atexit.register(lambda: gwlbd.poll() is None and gwlbd.kill())  # never left behind
wait(lambda: os.path.exists(sock_path), 30, "gwlbd's control socket")
for a in EAST + WEST:  # start-up: a generous deadline (2 shared cores, ASan)
    wait(lambda: state(a) == "healthy", 30, f"{a} healthy")

# 1. All healthy: 200, new flows east.
st, body = endpoint()
assert st == 200 and body["healthy"] and body["active_group"] == "fw-east", (st, body)
assert in_region(new_flow_targets(), EAST)
st, allb = endpoint("/destinations")
assert st == 200 and [d["name"] for d in allb["destinations"]] == ["inspect"], allb
assert endpoint("/destinations/nope")[0] == 404
assert metric("gwlb_destination_healthy", destination="inspect") == 1
wait(lambda: len([f for f in flows_by_app() if f["appliance"] in EAST]) > 500, 60,
     "more than 500 flows on east appliances")
east_flows = [f for f in flows_by_app() if f["appliance"] in EAST]
print(f"1. healthy: 200, new flows east, {len(east_flows)} flows on east appliances")

# 2. East loses appliances one by one: 4/5 and 3/5 meet 60 % and 2.
for a in EAST[:2]:
    listeners[a].close()
    wait(lambda: state(a) == "unhealthy", 3, f"{a} unhealthy")
    st, body = endpoint()
    assert st == 200 and body["active_group"] == "fw-east", (a, st, body)
    src = body["composites"][0]["sources"][0]
    print(f"   {a} down: {src['healthy_servers']}/{src['servers']} healthy, endpoint {st}")
assert in_region(new_flow_targets(), EAST[2:])

# The third failure breaks the policy: 503 at the same moment new flows go west.
listeners[EAST[2]].close()
t_down = time.monotonic()
wait(lambda: state(EAST[2]) == "unhealthy", 3, f"{EAST[2]} unhealthy")
t_unhealthy = time.monotonic() - t_down
st, body = endpoint()
assert st == 503 and not body["healthy"] and body["active_group"] == "fw-west", (st, body)
src = body["composites"][0]["sources"][0]
assert (src["healthy_servers"], src["servers"], src["healthy"]) == (2, 5, False), src
assert in_region(new_flow_targets(), WEST)
assert metric("gwlb_destination_healthy", destination="inspect") == 0
assert metric("gwlb_listener_active_group", listener="inspect", group="fw-west") == 1
print(f"3. {EAST[2]} down ({t_unhealthy*1000:.0f} ms): 2/5 healthy, endpoint 503, new flows west")

# Existing flows on east (even on its healthy appliances) move west on their next packet.
def east_left():
    rows = flows_by_app()
    return sum(f["appliance"] in EAST for f in rows) == 0 and rows
rows = None
wait(lambda: east_left(), 5, "east flows moved west")
rows = flows_by_app()
moved = [f for f in rows if f["moved"]]
reasons = {f["moved"]["reason"] for f in moved}
assert reasons <= {"region_failover", "unhealthy"} and "region_failover" in reasons, reasons
assert all(f["appliance"] in WEST for f in moved)
moved_keys = {(f["src"], f["sport"], f["dst"], f["dport"], f["proto"]): f["appliance"] for f in moved}
print(f"   {len(moved)} flows moved west ({sorted(reasons)})")

# 3. East comes back: new flows return, moved flows stay west.
for a in EAST[:3]:
    listeners[a].start()
wait(lambda: endpoint()[0] == 200, 5, "destination healthy again")
st, body = endpoint()
assert body["active_group"] == "fw-east", body
assert in_region(new_flow_targets(), EAST)
time.sleep(0.3)
still = {(f["src"], f["sport"], f["dst"], f["dport"], f["proto"]): f["appliance"] for f in flows_by_app()}
stayed = sum(1 for k, a in moved_keys.items() if still.get(k) == a)
assert stayed == sum(1 for k in moved_keys if k in still), "a moved flow moved back"
print(f"4. east healthy: 200, new flows east, {stayed} moved flows stay west")

# 4. Failback hold 2 s: new flows return only after it.
text = open(config_path).read().replace("failback_hold: 0", "failback_hold: 2")
open(config_path, "w").write(text)
api("reload")
for a in EAST[:3]:
    listeners[a].close()
wait(lambda: endpoint()[1]["active_group"] == "fw-west", 5, "failed over again")
for a in EAST[:3]:
    listeners[a].start()
t0 = time.monotonic()
wait(lambda: endpoint()[0] == 200, 5, "east healthy again")
t_healthy = time.monotonic() - t0
assert endpoint()[1]["active_group"] == "fw-west", "failed back before the hold"
assert in_region(new_flow_targets(), WEST)
wait(lambda: endpoint()[1]["active_group"] == "fw-east", 4, "failed back after the hold")
t_back = time.monotonic() - t0
assert t_back - t_healthy >= 1.8, (t_healthy, t_back)
print(f"5. failback hold 2 s: east healthy after {t_healthy:.2f} s, new flows back after {t_back:.2f} s")

# 5. Dry run: the composite fails, nothing moves, everyone is told it would.
text = open(config_path).read().replace("dry_run: false", "dry_run: true")
open(config_path, "w").write(text)
api("reload")
for a in EAST[:3]:
    listeners[a].close()
for a in EAST[:3]:
    wait(lambda: state(a) == "unhealthy", 3, f"{a} unhealthy")
st, body = endpoint()
assert st == 200 and body["healthy"] and not body["healthy_with_dry_run"], (st, body)
assert body["active_group"] == "fw-east" and body["would_be_active_group"] == "fw-west", body
assert not body["composites"][0]["healthy"] and body["composites"][0]["dry_run"]
assert in_region(new_flow_targets(), EAST[3:])
assert metric("gwlb_destination_healthy_with_dry_run", destination="inspect") == 0
assert metric("gwlb_listener_would_be_active_group", listener="inspect", group="fw-west") == 1
print("6. dry run: composite unhealthy, endpoint 200, new flows stay east, would fail over west")

log = open(log_path).read()
for want in ["regions: composite inspect-east: healthy -> unhealthy (src-east: 2 of 5 healthy",
             "regions: listener inspect: new flows fw-east -> fw-west",
             "regions: listener inspect: new flows fw-west -> fw-east (failed back",
             "regions: listener inspect (dry run): would send new flows fw-east -> fw-west"]:
    assert want in log, f"log lacks: {want}"
gwlbd.terminate()
rc = gwlbd.wait(timeout=30)
assert rc == 0, f"gwlbd exit status {rc}"
for l in listeners.values():
    try:
        l.close()
    except OSError:
        pass
print("regions end to end: ok")
