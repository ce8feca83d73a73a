#!/usr/bin/python3
"""keep_alive health checks against nginx (run by run_nginx_probes.sh).

Appliances 127.0.0.21 (HTTP) and 127.0.0.22 (HTTPS) are served by nginx with
a 60 s keepalive_timeout, 127.0.0.23 (HTTP) with 50 ms, shorter than the
checks' 200 ms interval; 127.0.0.24 (HTTPS) is checked without keep_alive.
Checks, on nginx's access log ($server_addr $connection $connection_requests
$request_uri $status $ssl_session_reused) and stub_status, and on gwlbd's
/metrics:
  - all four appliances turn active;
  - .21 and .22: the requests come on one kept connection (nginx counts them
    on it), though every probe connects afresh (nginx accepted at least one
    connection per request);
  - .23: nginx closed each connection before the next probe; every request
    is the first on its connection, and gwlbd saw each closed connection
    before sending into it (event closed, no stale);
  - .24: a connection and a TLS handshake per probe, each after the first
    resuming the session (nginx's $ssl_session_reused), and gwlbd counting
    them (gwlb_probe_tls_handshakes_total: two full ones in all);
  - the same per appliance in the API (health.connections);
  - promtool check metrics.

usage: nginx_probes_e2e.py --sock S --metrics HOST:PORT --status HOST:PORT --access-log F
"""
import argparse
import collections
import re
import subprocess
import sys
import time
import urllib.request
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402

KEPT, TLS, SHORT, EACH = "127.0.0.21", "127.0.0.22", "127.0.0.23", "127.0.0.24"
ALL = (KEPT, TLS, SHORT, EACH)
DEADLINE = 60  # seconds: CI's 2 shared cores, and ASan

ap = argparse.ArgumentParser()
for a in ["sock", "metrics", "status", "access-log"]:
    ap.add_argument("--" + a, required=True)
args = ap.parse_args()


def metric(s, name, **labels):
    want = set(labels.items())
    hits = [v for (n, l), v in s.items() if n == name and want <= set(l)]
    assert len(hits) == 1, f"{name}{labels}: {len(hits)} series"
    return hits[0]


def active(s, addr):
    return metric(s, "gwlb_server_state", address=addr, state="active") == 1


t0 = time.monotonic()
while True:
    s = checklib.samples(checklib.scrape(args.metrics))
    if all(active(s, a) for a in ALL):
        break
    assert time.monotonic() - t0 < DEADLINE, "not all active: " + ", ".join(
        f"{a} {[dict(l)['state'] for (n, l), v in s.items() if n == 'gwlb_server_state' and dict(l)['address'] == a and v == 1]}"
        for a in ALL)
    time.sleep(0.2)
print(f"all four appliances active after {time.monotonic() - t0:.1f} s")
time.sleep(3)  # some 15 probes of each

# nginx's view first, then its counters (which only grow meanwhile).
by_addr = collections.defaultdict(list)  # addr -> [(connection, its request number)]
resumed = []  # EACH's requests: on a resumed TLS session
with open(args.access_log) as f:
    for line in f:
        addr, conn, nreq, uri, status, reused = line.split()
        assert (uri, status) == ("/health", "200"), line
        by_addr[addr].append((int(conn), int(nreq)))
        if addr == EACH:
            resumed.append(reused == "r")
status = urllib.request.urlopen(f"http://{args.status}/status", timeout=10).read().decode()
accepts, handled, requests = map(int, re.search(r"\n\s*(\d+) (\d+) (\d+)", status).groups())

logged = sum(len(v) for v in by_addr.values())
for addr, what in ((KEPT, "HTTP"), (TLS, "HTTPS")):
    reqs = by_addr[addr]
    conns = {c for c, _ in reqs}
    assert len(reqs) >= 8, f"{addr}: only {len(reqs)} requests"
    assert len(conns) <= 2, f"{addr}: requests on {len(conns)} connections: {reqs}"
    assert max(n for _, n in reqs) >= len(reqs) - 1, f"{addr}: {reqs}"
    print(f"{what} {addr}: {len(reqs)} requests on {len(conns)} connection(s), nginx's count on it up to "
          f"{max(n for _, n in reqs)}")
short = by_addr[SHORT]
assert len(short) >= 8, f"{SHORT}: only {len(short)} requests"
assert all(n == 1 for _, n in short), f"{SHORT}: a request on a connection nginx had closed: {short}"
assert len({c for c, _ in short}) == len(short), short
print(f"HTTP {SHORT} (keepalive_timeout 50 ms): {len(short)} requests, each the first on its connection")
each = by_addr[EACH]
assert len(each) >= 8 and all(n == 1 for _, n in each), f"{EACH}: {each}"
assert not resumed[0] and all(resumed[1:]), f"{EACH}: sessions resumed {resumed}"
print(f"HTTPS {EACH} without keep_alive: {len(each)} requests, each on its own connection; "
      f"every handshake after the first resumed the session ({sum(resumed)} of {len(resumed)})")
# Every probe connects afresh, a reused one too: nginx accepted a connection
# per request at least (stub_status's own request is one more of each).
assert accepts >= logged + 1, f"nginx accepted {accepts} connections for {logged} probe requests"
print(f"nginx accepted {accepts} connections for {logged} probe requests (+1 stub_status): "
      "every probe connected afresh")

body = checklib.scrape(args.metrics)
s = checklib.samples(body)
ev = {e: metric(s, "gwlb_probe_kept_connection_events_total", event=e)
      for e in ("reused", "closed", "stale", "expired", "refused")}
kept_now = metric(s, "gwlb_probe_kept_connections")
reused_logged = sum(1 for a in (KEPT, TLS) for _, n in by_addr[a] if n > 1)
assert ev["reused"] >= reused_logged, (ev, reused_logged)
assert ev["closed"] >= len(short) - 2, (ev, len(short))
assert ev["stale"] == 0, f"a request was sent into a connection nginx had closed: {ev}"
assert ev["refused"] == 0 and ev["expired"] == 0, ev
assert 2 <= kept_now <= 3, kept_now
tls = {k: metric(s, "gwlb_probe_tls_handshakes_total", kind=k) for k in ("full", "resumed")}
# One full handshake each for .22 (then its kept connection) and .24 (then
# resumed ones); nginx logged .24's requests on resumed sessions before.
assert tls["full"] == 2, tls
assert tls["resumed"] >= sum(resumed), (tls, sum(resumed))
print("gwlbd: kept connections " + f"{kept_now:.0f}, events " + ", ".join(f"{k} {v:.0f}" for k, v in ev.items())
      + f"; TLS handshakes full {tls['full']:.0f}, resumed {tls['resumed']:.0f}")
# The same per appliance, in the API (gwlbctl --json servers: health.connections).
servers = {v["address"]: v for v in checklib.api_call(args.sock, "servers")["result"]["servers"]}
conn = {a: servers[a]["health"]["connections"] for a in ALL}
for a in (KEPT, TLS):
    assert conn[a]["answered_on_kept"] >= len(by_addr[a]) - 1, (a, conn[a], len(by_addr[a]))
assert conn[SHORT]["answered_on_kept"] == 0 and conn[EACH]["answered_on_kept"] == 0, conn
assert conn[TLS]["tls_full_handshakes"] == 1 and conn[EACH]["tls_full_handshakes"] == 1, conn
assert conn[EACH]["tls_resumed_handshakes"] >= sum(resumed), (conn[EACH], sum(resumed))
assert conn[KEPT]["tls_full_handshakes"] == 0 and conn[KEPT]["tls_resumed_handshakes"] == 0, conn
print("per appliance (API health.connections): " + "; ".join(
    f"{a} answered on kept {c['answered_on_kept']}, TLS full {c['tls_full_handshakes']} resumed "
    f"{c['tls_resumed_handshakes']}" for a, c in conn.items()))
r = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True)
assert r.returncode == 0, r.stdout + r.stderr
print("promtool check metrics: ok")
