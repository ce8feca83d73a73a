"""e2e_classes: traffic classes on the lab (`lab.sh up --listeners 2`, docs/lab.md
"Two listeners"): two tenants, each inspected only by its own listener's
appliances, and a bypassed stream no appliance ever sees; one tenant's
appliance fails and the other tenant's flows are untouched.

Tenant A is the client's 10.77.1.2 (class tenant-a, listener tenant-a: app1,
app2), tenant B its 10.77.1.130 (tenant-b: app3, app4); TCP port 873 is
bypassed (class backups). Checked against the appliances' own per-flow
counters (gwlb-appliance /stats) and gwlbd's counters.
"""
import json
import os
import subprocess
import time

SERVER = "10.77.2.2"
TENANT_A, TENANT_B = "10.77.1.2", "10.77.1.130"
APPS = {"app1": "10.77.9.11", "app2": "10.77.9.12", "app3": "10.77.9.13", "app4": "10.77.9.14"}
OWN = {TENANT_A: ("app1", "app2"), TENANT_B: ("app3", "app4")}


def snapshot(lab, skip=()):
    """{appliance: its per-flow counters} of every running appliance."""
    out = {}
    for a in APPS:
        if a in skip:
            continue
        r = lab.run(lab.mgmt, "curl", "-s", "--max-time", "3", f"http://{APPS[a]}:8080/stats")
        out[a] = json.loads(r.stdout)["flows"]
    return out


def where(lab, c, s, snap=None, skip=()):
    """{appliance: its flow entry} for every appliance that has seen TCP c <-> s."""
    out = {}
    for a, flows in (snap or snapshot(lab, skip)).items():
        for f in flows:
            if f["proto"] == 6 and {f["a"], f["b"]} == {c, s}:
                out[a] = f
    return out


def wait_for(what, fn, timeout=10.0):
    t_end = time.time() + timeout
    while time.time() < t_end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def stream(lab, src, port, seconds, rate):
    """A byte-checked TCP stream from src to SERVER:port (netpeer tcp-stream);
    returns (process, "src:sport")."""
    env = dict(os.environ, NETPEER_SRC=src)
    p = lab.spawn("client", *lab.peer("tcp-stream", SERVER, str(port), str(seconds), str(rate)),
                  stdout=subprocess.PIPE, env=env)
    ev = json.loads(p.stdout.readline())
    return p, f"{src}:{ev['sport']}"


def finish(p, label):
    p.wait(60)
    res = json.loads(p.stdout.readline())
    assert res["ok"], f"{label}: stream broken or corrupted: {res}"
    return res


def counters(lab):
    return json.loads(lab.gwlbctl("--json", "stats"))["totals"]


def test_classes(lab, args):
    lab.serve("tcp-echo-server", SERVER, 7000)
    lab.serve("tcp-echo-server", SERVER, 873)
    c0 = counters(lab)
    # Two tenants' streams, and a bypassed one (port 873), all at once.
    pa, ca = stream(lab, TENANT_A, 7000, 10, 400000)
    pb, cb = stream(lab, TENANT_B, 7000, 10, 400000)
    px, cx = stream(lab, TENANT_A, 873, 10, 400000)
    sa, sb, sx = f"{SERVER}:7000", f"{SERVER}:7000", f"{SERVER}:873"
    both = lambda f: f["a_to_b"] > 0 and f["b_to_a"] > 0  # noqa: E731
    on_a = wait_for(f"tenant A's stream {ca} on an appliance both ways",
                    lambda: (lambda w: len(w) == 1 and all(both(f) for f in w.values()) and w)(where(lab, ca, sa)))
    on_b = wait_for(f"tenant B's stream {cb} on an appliance both ways",
                    lambda: (lambda w: len(w) == 1 and all(both(f) for f in w.values()) and w)(where(lab, cb, sb)))
    (app_a,), (app_b,) = on_a.keys(), on_b.keys()
    assert app_a in OWN[TENANT_A], f"tenant A's stream is on {app_a}, not on its own appliances {OWN[TENANT_A]}"
    assert app_b in OWN[TENANT_B], f"tenant B's stream is on {app_b}, not on its own appliances {OWN[TENANT_B]}"
    print(f"tenant A {ca} on {app_a}, tenant B {cb} on {app_b}")
    assert not where(lab, cx, sx), f"the bypassed stream {cx} reached {sorted(where(lab, cx, sx))}"
    # Short connections of each tenant: each on its own tenant's appliances only.
    short = []
    for src in (TENANT_A, TENANT_B) * 3:
        r = lab.run("client", "curl", "-s", "--interface", src, "-w", " %{local_port}", "--max-time", "5",
                    f"http://{SERVER}/index.html")
        body, port = r.stdout.rsplit(" ", 1)
        assert body.startswith("hello through the gateway"), f"curl from {src}: {r.stdout!r} {r.stderr}"
        short.append((src, f"{src}:{port}"))
    snap = snapshot(lab)
    for src, c in short:
        w = where(lab, c, f"{SERVER}:80", snap)
        assert len(w) == 1 and set(w) <= set(OWN[src]) and all(both(f) for f in w.values()), \
            f"connection {c}: seen on {sorted(w)}, expected one of {OWN[src]} both ways"
    print(f"{len(short)} short connections, each on one of its own tenant's appliances both ways")

    # Fail tenant A's appliance: its stream moves to app A's other appliance;
    # tenant B's stays where it was, and nothing of B shows up anywhere else.
    b_before = where(lab, cb, sb)[app_b]
    lab.sh("app-stop", app_a[-1])
    victim_ip = APPS[app_a]
    wait_for(f"{app_a} unhealthy", lambda: lab.servers()[victim_ip]["health"]["state"] == "unhealthy")
    other_a = [a for a in OWN[TENANT_A] if a != app_a][0]
    down = (app_a,)
    wait_for(f"tenant A's stream on {other_a}", lambda: other_a in where(lab, ca, sa, skip=down))
    time.sleep(1.0)
    wb = where(lab, cb, sb, skip=down)
    assert list(wb) == [app_b], f"tenant B's stream is now on {sorted(wb)}, was on {app_b} only"
    assert wb[app_b]["a_to_b"] > b_before["a_to_b"] and wb[app_b]["b_to_a"] > b_before["b_to_a"], \
        f"tenant B's stream stopped on {app_b} after {app_a} failed: {b_before} -> {wb[app_b]}"

    ra, rb, rx = finish(pa, "tenant A"), finish(pb, "tenant B"), finish(px, "bypassed")
    print(f"tenant A: {ra['sent']} bytes intact, moved {app_a} -> {other_a} (longest stall {ra['max_stall']} s)")
    print(f"tenant B: {rb['sent']} bytes intact on {app_b} throughout (longest stall {rb['max_stall']} s)")
    # The bypassed stream: intact, and no appliance ever saw it (nor anything on port 873).
    # (The stopped appliance's counters went with it; its log has them, and
    # the check before the failure covered it.)
    snap = snapshot(lab, skip=down)
    assert not where(lab, cx, sx, snap), f"the bypassed stream {cx} reached {sorted(where(lab, cx, sx, snap))}"
    for a, flows in snap.items():
        for f in flows:
            assert not f["a"].endswith(":873") and not f["b"].endswith(":873"), f"{a} saw port 873: {f}"
    c1 = counters(lab)
    bypassed = c1.get("bypassed", 0) - c0.get("bypassed", 0)
    assert bypassed > 0, f"gwlbd's bypassed counter did not move: {c0.get('bypassed')} -> {c1.get('bypassed')}"
    for k in ("drop_unclassified", "drop_class_drop"):
        assert c1.get(k, 0) == c0.get(k, 0), f"{k} moved: {c0.get(k)} -> {c1.get(k)}"
    print(f"bypassed stream: {rx['sent']} bytes intact, on no appliance; gwlbd bypassed {bypassed} packets")
