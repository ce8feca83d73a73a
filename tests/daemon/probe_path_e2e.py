#!/usr/bin/python3
"""Where health probes travel: the checks of run_probe_path.sh (which builds
the namespaces and writes the configs). Each step says what a user would see.

Environment: GWLBD, WORK, GW_NS (gwlbd's namespace), APP_NS (the appliance's).
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import api_call  # noqa: E402

GWLBD, WORK, GW, APP = os.environ["GWLBD"], os.environ["WORK"], os.environ["GW_NS"], os.environ["APP_NS"]
SOCK, CONF = f"{WORK}/gwlbd.sock", f"{WORK}/gwlbd.yaml"
ADDR = "10.88.0.11"


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def gw(*cmd, check=True):
    return sh("ip", "netns", "exec", GW, *cmd, check=check)


def api(method, **params):
    return api_call(SOCK, method, **params)


def state():
    return api("health", address=ADDR)["result"]


def wait_state(want, limit, why):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        s = state()
        if s["state"] == want:
            print(f"  {why}: {want} after {time.monotonic() - t0:.2f} s (last result: {s['last_result']})")
            return
        time.sleep(0.05)
    raise AssertionError(f"{why}: {ADDR} not {want} after {limit} s: {state()}")


def decoy_answers():
    r = gw("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2",
           f"http://{ADDR}:8080/", check=False)
    assert r.stdout == "200", f"the decoy should still answer the host's kernel: {r.stdout!r} {r.stderr}"


def start(config_name):
    shutil.copy(f"{WORK}/{config_name}.yaml", CONF)
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    log = open(f"{WORK}/gwlbd-{config_name}.log", "w")
    p = subprocess.Popen(["ip", "netns", "exec", GW, GWLBD, "--config", CONF], stdout=log,
                         stderr=subprocess.STDOUT)
    for _ in range(200):
        if os.path.exists(SOCK) or p.poll() is not None:
            break
        time.sleep(0.05)
    return p


def stop(p):
    p.terminate()
    rc = p.wait(timeout=30)
    assert rc == 0, f"gwlbd exit status {rc}"


def refused_at_start(config_name, words, want_rc=1):
    """want_rc: 2 for a config error, 1 for a start-up failure (the kernel's answer)."""
    p = start(config_name)
    rc = p.wait(timeout=30)
    text = open(f"{WORK}/gwlbd-{config_name}.log").read()
    assert rc == want_rc, f"gwlbd should refuse to start with {config_name}.yaml (rc {rc}):\n{text}"
    for w in words:
        assert w in text, f"start with {config_name}.yaml: {w!r} not in:\n{text}"
    line = [l for l in text.splitlines() if "startup failed" in l or "invalid configuration" in l]
    print(f"  {config_name}.yaml refused at start: {line[0] if line else text.strip()[-200:]}")


def pins():
    """The permanent neighbours on gwlbd's tap: {address: MAC}."""
    out = {}
    for line in gw("ip", "neigh", "show", "dev", "pp0", "nud", "permanent").stdout.splitlines():
        f = line.split()
        if "lladdr" in f:
            out[f[0]] = f[f.index("lladdr") + 1]
    return out


def reload_to(config_name):
    shutil.copy(f"{WORK}/{config_name}.yaml", CONF)
    return api("reload")


# 1. No path: health checks without an interface need the exception path.
r = sh(GWLBD, "--check-config", f"{WORK}/nopath.yaml", check=False)
assert r.returncode == 2, f"--check-config should refuse nopath.yaml: rc {r.returncode}\n{r.stdout}{r.stderr}"
assert "server_groups[0].health_check" in r.stderr and "node.exception_path.enabled" in r.stderr, r.stderr
print("1. --check-config refuses health checks with no probe path:\n  " + r.stderr.strip().splitlines()[-1])
refused_at_start("nopath", ["its probes have no path"], want_rc=2)

# 2. The data path: probes leave by gwlbd's port (through its tap), not by the host's route.
p = start("data")
try:
    assert os.path.exists(SOCK), open(f"{WORK}/gwlbd-data.log").read()
    check = state()["check"]
    assert check["probe_path"] == "data" and check["interface"] == "pp0" and check["source"] == "10.88.0.1", check
    addrs = gw("ip", "-4", "-o", "addr", "show", "dev", "pp0").stdout
    assert "10.88.0.1/32" in addrs, addrs
    neigh = gw("ip", "neigh", "show", "dev", "pp0").stdout
    assert f"{ADDR} lladdr 02:00:00:00:00:11 PERMANENT" in neigh, neigh
    print("2. data path: probes bound to pp0 from 10.88.0.1; the appliance's MAC pinned there")
    wait_state("healthy", 10, "appliance reached through gwlbd's port")

    # 3. The appliance's link goes down: the data cannot reach it, nor may the probes.
    sh("ip", "-n", APP, "link", "set", "eth0", "down")
    decoy_answers()
    wait_state("unhealthy", 5, "3. appliance link down (the decoy still answers the host's route)")
    sh("ip", "-n", APP, "link", "set", "eth0", "up")
    wait_state("healthy", 10, "   link up again")

    # 4. A wrong MAC in the config: the data would go nowhere, so do the probes.
    r = reload_to("wrongmac")
    assert r["ok"], r
    neigh = gw("ip", "neigh", "show", "dev", "pp0").stdout
    assert "02:00:00:00:00:99" in neigh, neigh
    wait_state("unhealthy", 5, "4. reload with a wrong appliance MAC")
    assert reload_to("data")["ok"]
    wait_state("healthy", 10, "   the right MAC again")

    # 4b. A refused change leaves the kernel alone: the tap keeps the MAC the
    # data uses, and the appliance stays healthy.
    before = pins()
    r = reload_to("refused")
    assert not r["ok"] and r["error"]["code"] == "invalid_config", r
    assert "no interface pp-missing" in r["error"]["details"][0]["message"], r
    assert pins() == before == {ADDR: "02:00:00:00:00:11"}, \
        f"a refused reload changed the tap's pinned neighbours: {before} -> {pins()}"
    time.sleep(0.5)  # a few probe intervals with the refused MAC, were it pinned
    assert state()["state"] == "healthy", state()
    print(f"4b. refused reload (new MAC and a missing interface): pins still {pins()}")

    # 4c. An accepted change that drops an appliance removes its pin.
    assert reload_to("two")["ok"]
    assert pins() == {ADDR: "02:00:00:00:00:11", "10.88.0.12": "02:00:00:00:00:12"}, pins()
    assert reload_to("data")["ok"]
    assert pins() == {ADDR: "02:00:00:00:00:11"}, \
        f"the pin of 10.88.0.12 outlived its appliance: {pins()}"
    print(f"4c. 10.88.0.12 added then removed by reload: pinned {pins()}")

    # 5. A management path whose interface is down, or missing: the reload is refused.
    r = reload_to("mgmt")
    assert not r["ok"] and r["error"]["code"] == "invalid_config", r
    msg = r["error"]["details"][0]["message"]
    assert "pp-mgmt" in msg and "no route" in msg, r
    print(f"5. reload to an interface that is down refused: {msg}")
    r = reload_to("missing")
    assert not r["ok"] and "no interface pp-missing" in r["error"]["details"][0]["message"], r
    print(f"   reload to a missing interface refused: {r['error']['details'][0]['message']}")
    assert state()["check"]["probe_path"] == "data"
    # Up, it is a path: the probes leave by it only (its veth peer is down: nothing answers).
    gw("ip", "link", "set", "pp-mgmt", "up")
    r = reload_to("mgmt")
    assert r["ok"], r
    assert state()["check"]["interface"] == "pp-mgmt"
    assert pins() == {}, f"no probe takes the data path now, yet the tap keeps pins: {pins()}"
    wait_state("unhealthy", 5, "   management path pp-mgmt (nothing behind it), although the host routes to the decoy")
finally:
    stop(p)

# 6. Start-up refusals: a missing interface; strict reverse-path filtering that
# would drop the answers arriving on the tap (the host routes the appliance by pp-dec).
refused_at_start("missing", ["no interface pp-missing"])
gw("sysctl", "-qw", "net.ipv4.conf.all.rp_filter=1")
refused_at_start("data", ["strict reverse-path filtering", "pp-dec"])
gw("sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0")
print("probe paths: all checks passed")
