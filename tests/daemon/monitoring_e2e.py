#!/usr/bin/python3
"""Per-appliance monitoring end to end (run by run_monitoring.sh).

Appliances 127.0.0.11 and .12 answer TCP health checks (listeners here);
127.0.0.13 has none and turns unhealthy. The capture sends FLOWS flows and
every appliance's Geneve return of each (only the flow's own appliance's
return counts). Checks, on gwlbd's real output:
  - gwlb_server_state: every state a series, exactly one at 1 per appliance,
    .13 unhealthy; consecutive failures; the probe latency histogram
  - packets/bytes sent to and returned from each appliance (and the API's)
  - DPDK telemetry /gwlb/servers (every state) and /gwlb/server,ADDRESS
  - promtool check metrics; every metric the dashboard and alert rules use
    exists; promtool check rules
  - a real Prometheus server scrapes gwlbd: a series read back through
    /api/v1/query, and the appliance-down alert pending or firing.

usage: monitoring_e2e.py --sock S --metrics HOST:PORT --health-port P --prefix PFX
                         --flows N --src SRCROOT --work DIR
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402
from checklib import Listener, api_call  # noqa: E402

STATES = ["initializing", "active", "unresolved", "unhealthy", "dampened", "idle", "draining", "drained", "removed"]
UP, DOWN = ["127.0.0.11", "127.0.0.12"], "127.0.0.13"
DEADLINE = 90  # seconds, generous: CI runs on 2 shared cores and under ASan

ap = argparse.ArgumentParser()
for a in ["sock", "metrics", "health-port", "prefix", "flows", "src", "work"]:
    ap.add_argument("--" + a, required=True)
args = ap.parse_args()


def scrape():
    return checklib.scrape(args.metrics)


samples = checklib.samples


def value(s, name, **labels):
    want = set(labels.items())
    hits = [v for (n, l), v in s.items() if n == name and want <= set(l)]
    assert len(hits) == 1, f"{name}{labels}: {len(hits)} series"
    return hits[0]


def total(s, name, **labels):
    want = set(labels.items())
    return sum(v for (n, l), v in s.items() if n == name and want <= set(l))


def poll(what, check):
    t0, last = time.monotonic(), None
    while time.monotonic() - t0 < DEADLINE:
        try:
            r = check()
            if r:
                return r
        except (AssertionError, OSError, ValueError, KeyError, StopIteration) as e:
            last = e
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {DEADLINE} s (last: {last!r})")


listeners = [Listener(a, int(args.health_port)) for a in UP]
for listener in listeners:
    listener.start()
flows = int(args.flows)

# 1. States: every state a series for every appliance, exactly one at 1.
def states_settled():
    s = samples(scrape())
    for addr, want in [(UP[0], "active"), (UP[1], "active"), (DOWN, "unhealthy")]:
        got = {st: value(s, "gwlb_server_state", address=addr, state=st) for st in STATES}
        assert sum(got.values()) == 1, (addr, got)
        if got[want] != 1:
            return None
    return s
s = poll("127.0.0.13 unhealthy, .11 and .12 active in gwlb_server_state", states_settled)
print(f"gwlb_server_state: {DOWN} unhealthy=1 (the 7 other states 0), {UP} active=1")

# Consecutive failures and the probe latency histogram.
assert value(s, "gwlb_server_consecutive_failures", address=DOWN) >= 3, s
for a in UP:
    assert value(s, "gwlb_server_consecutive_failures", address=a) == 0
for a in UP + [DOWN]:
    buckets = sorted(((float("inf") if dict(l)["le"] == "+Inf" else float(dict(l)["le"])), v)
                     for (n, l), v in s.items()
                     if n == "gwlb_server_probe_duration_seconds_bucket" and dict(l)["address"] == a)
    count = value(s, "gwlb_server_probe_duration_seconds_count", address=a)
    assert len(buckets) == 11 and buckets[-1] == (float("inf"), count) and count >= 2, (a, buckets)
    assert all(x[1] <= y[1] for x, y in zip(buckets, buckets[1:])), buckets
    assert value(s, "gwlb_server_probe_duration_seconds_sum", address=a) >= 0
print(f"probes: consecutive failures {DOWN}: {value(s, 'gwlb_server_consecutive_failures', address=DOWN):.0f}; "
      f"histogram count {UP[0]}: {value(s, 'gwlb_server_probe_duration_seconds_count', address=UP[0]):.0f}")

# 2. Traffic both ways: the capture's flows went out, and each came back once
# from its own appliance (the other appliances' returns are dropped).
def traffic_done():
    s = samples(scrape())
    if total(s, "gwlb_server_returned_packets_total") < flows:
        return None
    return s
s = poll(f"{flows} packets returned", traffic_done)
sent = {a: value(s, "gwlb_server_sent_packets_total", address=a) for a in UP + [DOWN]}
ret = {a: value(s, "gwlb_server_returned_packets_total", address=a) for a in UP + [DOWN]}
assert sum(sent.values()) == flows == total(s, "gwlb_encapsulated_total"), (sent, s)
assert sum(ret.values()) == flows == total(s, "gwlb_returned_total"), ret
assert ret == sent, (sent, ret)  # one return per flow, from the flow's appliance
assert total(s, "gwlb_dropped_packets_total", reason="return_wrong_appliance") == 2 * flows
for a in UP + [DOWN]:
    assert value(s, "gwlb_server_returned_bytes_total", address=a) > 60 * ret[a], a
    assert value(s, "gwlb_server_sent_bytes_total", address=a) > 60 * sent[a], a
api = {sv["address"]: sv for sv in api_call(args.sock, "servers")["result"]["servers"]}
for a in UP + [DOWN]:
    assert api[a]["packets"] == sent[a] and api[a]["returned_packets"] == ret[a], api[a]
assert api[DOWN]["state"] == "unhealthy", api[DOWN]
print(f"traffic: sent {sent}, returned {ret} (metrics and API agree)")
# The groups summary counts every state: before, the unhealthy appliance was
# in no column (total 3, active 2, idle 0, unresolved 0).
grp = api_call(args.sock, "groups")["result"]["groups"][0]["servers"]
want = {"total": 3, "active": 2, "unhealthy": 1}
assert all(grp[k] == want.get(k, 0) for k in ["total"] + STATES), grp
print(f"groups: {grp}")

# 3. DPDK telemetry, with DPDK's own client (refreshed every second).
def telemetry():
    out = subprocess.run(["dpdk-telemetry.py", "-f", args.prefix],
                         input=f"/gwlb/servers\n/gwlb/server,{DOWN}\n/gwlb/server,{UP[0]}\n",
                         capture_output=True, text=True, timeout=30).stdout
    docs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    servers = next(d["/gwlb/servers"] for d in docs if "/gwlb/servers" in d)
    one = [d["/gwlb/server"] for d in docs if "/gwlb/server" in d]
    assert sorted(servers) == sorted(STATES), servers
    if servers["unhealthy"] != [DOWN] or sorted(servers["active"]) != UP:
        return None
    down = next(x for x in one if x["address"] == DOWN)
    if down["returned_packets"] != ret[DOWN]:
        return None
    return servers, down
servers, down = poll("telemetry /gwlb/servers and /gwlb/server", telemetry)
assert down["state"] == "unhealthy" and down["consecutive_failures"] >= 3, down
assert down["sent_packets"] == sent[DOWN] and down["group"] == "firewalls", down
print(f"telemetry: /gwlb/servers {servers}; /gwlb/server,{DOWN} {down}")

# 4. promtool on the real output; the dashboard and rules use only real metrics.
body = scrape()
r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True)
assert r.returncode == 0, r.stdout + r.stderr
print("promtool check metrics: ok")
# Sample names, and the families gwlbd declares even when this config gives
# them no series (e.g. health sources without composites).
names = {n for (n, _) in samples(body)} | set(re.findall(r"^# TYPE (\S+) ", body, re.M))
alerts = os.path.join(args.src, "monitoring/alerts.yml")
dash = os.path.join(args.src, "monitoring/grafana-dashboard.json")
r = subprocess.run(["promtool", "check", "rules", alerts], capture_output=True, text=True)
assert r.returncode == 0, r.stdout + r.stderr
used = {}
for path in (alerts, dash):
    with open(path) as f:
        for n in re.findall(r"\bgwlb_[a-z0-9_]+", f.read()):
            used.setdefault(n, path)
missing = {n: p for n, p in used.items() if n not in names}
assert not missing, f"metrics used but not in gwlbd's output: {missing}"
d = json.load(open(dash))
exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
assert len(exprs) >= 15 and all("gwlb_" in e for e in exprs), exprs
print(f"monitoring/: {len(used)} metric names, all in gwlbd's output; promtool check rules: ok")

# 5. A real Prometheus server scrapes gwlbd and evaluates the rules.
prom = shutil.which("prometheus")
if not prom:
    print("SKIP: no prometheus binary (Debian package prometheus; scripts/setup.sh installs it)")
    sys.exit(77)
s = socket.socket()
s.bind(("127.0.0.1", 0))
prom_port = s.getsockname()[1]
s.close()
pdir = os.path.join(args.work, "prometheus")
os.makedirs(pdir, exist_ok=True)
with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
    f.write(f"""global: {{ scrape_interval: 1s, evaluation_interval: 1s }}
rule_files: ["{alerts}"]
scrape_configs:
  - job_name: gwlb
    static_configs: [ {{ targets: ["{args.metrics}"] }} ]
""")
log = open(os.path.join(pdir, "prometheus.log"), "w")
proc = subprocess.Popen([prom, f"--config.file={pdir}/prometheus.yml", f"--storage.tsdb.path={pdir}/data",
                         f"--web.listen-address=127.0.0.1:{prom_port}"], stdout=log, stderr=subprocess.STDOUT)


def prom_api(path, **q):
    url = f"http://127.0.0.1:{prom_port}/api/v1/{path}?" + urllib.parse.urlencode(q)
    r = json.load(urllib.request.urlopen(url, timeout=10))
    assert r["status"] == "success", r
    return r["data"]


try:
    def down_series():
        res = prom_api("query", query=f'gwlb_server_state{{address="{DOWN}",state="unhealthy"}}')["result"]
        return res if res and res[0]["value"][1] == "1" else None
    res = poll("Prometheus: gwlb_server_state of the unhealthy appliance", down_series)
    print(f"prometheus: {res[0]['metric']} = {res[0]['value'][1]}")
    q = "sum by (address) (gwlb_server_sent_packets_total - gwlb_server_returned_packets_total)"
    kept = prom_api("query", query=q)["result"]
    assert {r["metric"]["address"]: r["value"][1] for r in kept} == {a: "0" for a in UP + [DOWN]}, kept

    def alert_down():
        al = prom_api("alerts")["alerts"]
        hit = [a for a in al if a["labels"]["alertname"] == "GwlbApplianceDown"]
        return hit if hit and hit[0]["labels"]["address"] == DOWN else None
    hit = poll("Prometheus: alert GwlbApplianceDown for 127.0.0.13", alert_down)
    assert len(hit) == 1 and hit[0]["state"] in ("pending", "firing"), hit
    print(f"prometheus: alert GwlbApplianceDown {hit[0]['state']} for {DOWN}")
finally:
    proc.terminate()
    proc.wait(timeout=30)
for listener in listeners:
    listener.close()
print("monitoring: ok")
