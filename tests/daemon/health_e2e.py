#!/usr/bin/python3
"""gwlbd health checks end to end, with real TCP listeners on loopback.

Appliances 127.0.0.11-13 answer TCP health checks on PORT (listeners run
here). gwlbd forwards an endless capture meanwhile. We stop and restart one
listener and watch gwlbd take the appliance out of service within its failure
window and back within its success window; new flows (asked with `explain`)
follow. Then every listener stops: fail_open keeps spreading new flows; after a
reload with when_all_unhealthy: drop, new flows have no appliance.

usage: health_e2e.py SOCK PORT CONFIG LOG
"""
import os.path
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import Listener, api_call  # noqa: E402

sock_path, port, config_path, log_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
APPS = ["127.0.0.11", "127.0.0.12", "127.0.0.13"]
INTERVAL, TIMEOUT, N = 0.1, 0.2, 3
FAIL_WINDOW = TIMEOUT * N + INTERVAL * (N - 1)   # if probes time out; refusals fail faster


def api(method, **params):
    return api_call(sock_path, method, **params)


def health(addr):
    for sv in api("servers")["result"]["servers"]:
        if sv["address"] == addr:
            return sv
    raise AssertionError(addr)


def wait_state(addr, state, limit):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        sv = health(addr)
        if sv["health"]["state"] == state:
            return time.monotonic() - t0, sv
        time.sleep(0.01)
    raise AssertionError(f"{addr} not {state} after {limit} s: {health(addr)}")


def fresh_choices(n=300):
    rnd = random.Random(len(sys.argv))
    seen = {}
    for _ in range(n):
        r = api("explain", src=f"198.51.100.{rnd.randrange(1, 250)}", dst="203.0.113.7", proto="tcp",
                sport=rnd.randrange(1024, 65535), dport=443)["result"]
        assert not r["existing"], r
        seen[r["appliance"]] = seen.get(r["appliance"], 0) + 1
    return seen


listeners = {a: Listener(a, port) for a in APPS}
for l in listeners.values():
    l.start()

for a in APPS:
    dt, sv = wait_state(a, "healthy", 10)
assert all(health(a)["state"] == "active" for a in APPS)
print("all appliances healthy:", {a: health(a)["health"]["failure_window_s"] for a in APPS})
before = fresh_choices()
assert set(before) == set(APPS), before
print("new flows before:", before)

# Appliance .12 stops answering (connections refused).
listeners["127.0.0.12"].close()
dt, sv = wait_state("127.0.0.12", "unhealthy", FAIL_WINDOW + INTERVAL + 2.0)
print(f"127.0.0.12 unhealthy {dt * 1000:.0f} ms after its listener stopped "
      f"(failure window {FAIL_WINDOW * 1000:.0f} ms with timeouts; refusals are faster)")
assert sv["state"] == "unhealthy" and "connect_refused" in sv["reason"], sv
assert sv["health"]["consecutive"] >= N and not sv["health"]["last_ok"], sv
during = fresh_choices()
assert "127.0.0.12" not in during and set(during) == {"127.0.0.11", "127.0.0.13"}, during
print("new flows while .12 is unhealthy:", during)
h = api("health", address="127.0.0.12")["result"]
assert any(e.get("transition", {}).get("to") == "unhealthy" for e in h["history"]), h["history"]
assert any(e.get("ok") is False and "connect_refused" in e["reason"] for e in h["history"]), h["history"]

# It comes back.
listeners["127.0.0.12"].start()
dt, sv = wait_state("127.0.0.12", "healthy", INTERVAL * N + 2.0)
print(f"127.0.0.12 healthy again {dt * 1000:.0f} ms after its listener returned "
      f"(success window {sv['health']['success_window_s'] * 1000:.0f} ms + response times)")
after = fresh_choices()
assert set(after) == set(APPS), after

# Every appliance fails: fail_open keeps new flows spread over all of them.
for l in listeners.values():
    l.close()
for a in APPS:
    wait_state(a, "unhealthy", FAIL_WINDOW + INTERVAL + 2.0)
open_choice = fresh_choices()
assert set(open_choice) == set(APPS), open_choice
print("all unhealthy, fail_open:", open_choice)

# when_all_unhealthy: drop, by reload: new flows get no appliance.
cfg = open(config_path).read().replace("when_all_unhealthy: fail_open", "when_all_unhealthy: drop")
open(config_path, "w").write(cfg)
r = api("reload")
assert r["ok"], r
drop_choice = fresh_choices(20)
assert drop_choice == {None: 20}, drop_choice
print("all unhealthy, drop: new flows have no appliance")

log = open(log_path).read()
assert "127.0.0.12 (firewalls): healthy -> unhealthy" in log and "failure window 800 ms" in log, log[-2000:]
print("transitions logged with their windows")
