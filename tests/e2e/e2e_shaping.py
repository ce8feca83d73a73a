"""e2e dampening and slow_start: what happens between an appliance's health
and the new flows it is given (docs/product-rules.md "Flap dampening" and
"Slow start"), measured with real flows through the lab.

dampening: app2's HTTP check flaps (POST /health/fail, then /health/ok). The
  second change pushes its penalty above `suppress`: it is held down, state
  `dampened` with its reason in `gwlbctl servers`, `dampening.held` and
  `holds` in the API; no new flow reaches it while held, and it is released
  (active, new flows again) when the penalty has decayed below `reuse`,
  half_life x log2(penalty / reuse) after its last change.
settling: both appliances fail their checks at once, as a fault on the
  gateway's side fails them (a rebalance group), and app1 passes again first:
  app2's flows stay on app2 while the group settles (`health.settling` in the
  API, the reason in `gwlbctl servers`, gwlbd's log), and move to app1 only
  once the settle time (2 x interval + timeout) has passed with app2 still
  failing.
slow_start: app2 recovers in a group with slow_start; new UDP flows are
  opened every second and counted per appliance (the appliances' own flow
  tables): app2's part of them starts far below its full half and grows
  with the share gwlbd reports, reaching about half once slow_start passed.
"""
import json
import math
import re
import time

from e2e import APPS, CLIENT, SERVER, wait_for, wait_health

# The lab's health check (e2e.py TESTS: LAB_HC_*): 500 ms interval,
# thresholds 2. Dampening: two changes in a few seconds go above suppress.
DAMPENING = {"penalty": 1000, "suppress": 1500, "reuse": 750, "half_life": 4, "max_hold": 30}
SLOW_START = 8  # seconds: 8 steps of 1 s


def set_health(lab, app, ok):
    r = lab.run(lab.mgmt, "curl", "-s", "-XPOST", "--max-time", "3",
                f"http://{APPS[app]}:8080/health/{'ok' if ok else 'fail'}")
    assert r.returncode == 0, f"{app}: {r.stderr}"


class Flows:
    """New UDP flows from the client (a fresh source port each), and which
    appliance each crossed, from the appliances' /stats flow tables."""

    def __init__(self, lab):
        self.lab = lab
        self.next_port = 20000

    def open(self, n):
        ports = list(range(self.next_port, self.next_port + n))
        self.next_port += n
        return self.send(ports)

    def send(self, ports):
        """One datagram from each of `ports` (consecutive) to the server."""
        code = ("import socket,sys\n"
                "for p in range(int(sys.argv[1]), int(sys.argv[2])):\n"
                "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                "    s.bind(('%s', p)); s.sendto(b'x', ('%s', 9)); s.close()\n" % (CLIENT, SERVER))
        r = self.lab.run("client", "/usr/bin/python3", "-c", code, str(ports[0]), str(ports[-1] + 1))
        assert r.returncode == 0, r.stderr
        return ports

    def where(self, ports):
        """{app: count} of `ports`' flows, once every one is seen on an appliance."""
        want = {f"{CLIENT}:{p}" for p in ports}

        def once():
            seen = {}
            for a in APPS:
                n = sum(1 for f in self.lab.app_stats(a)["flows"] if f["proto"] == 17 and
                        (f["a"] in want or f["b"] in want))
                seen[a] = n
            return seen if sum(seen.values()) >= len(ports) else None
        return wait_for(f"{len(ports)} UDP flows seen on the appliances", once, timeout=10)


def test_dampening(lab, args):
    app2 = APPS["app2"]
    for a in APPS.values():
        wait_health(lab, a, "healthy", 15)
    flows = Flows(lab)
    # Out of service (change 1: penalty 1000, not above 1500) and back in
    # (change 2: above it): held down at the recovery.
    set_health(lab, "app2", False)
    wait_health(lab, app2, "unhealthy", 10)
    t_fail = time.time()
    set_health(lab, "app2", True)
    srv = wait_for("app2 dampened", lambda: (lambda s: s if s["state"] == "dampened" else None)(
        lab.servers()[app2]), timeout=10, step=0.05)
    t_held = time.time()
    d = srv["health"]["dampening"]
    print(f"app2 flapped (unhealthy, then healthy {t_held - t_fail:.1f} s later): state {srv['state']}, "
          f"health {srv['health']['state']}, penalty {d['penalty']:.0f}, holds {d['holds']}, "
          f"held for {d['held_for_s']:.1f} s more")
    assert srv["health"]["state"] == "healthy", "dampening holds a healthy appliance down, not its health"
    assert d["held"] is True and d["holds"] == 1 and d["changes"] >= 2, d
    assert d["penalty"] > DAMPENING["suppress"], d
    # The hold lasts until the penalty decays below reuse: half_life x log2(penalty / reuse).
    expect = DAMPENING["half_life"] * math.log2(d["penalty"] / DAMPENING["reuse"])
    assert abs(d["held_for_s"] - expect) < 1.0, (d, expect)
    text = lab.gwlbctl("servers", "--wide")
    line = [ln for ln in text.splitlines() if app2 in ln][0]
    print("gwlbctl servers: " + " ".join(line.split()))
    assert "dampened" in line and "held down (flap dampening)" in line, line
    # Held: its checks pass, yet no new flow goes to it.
    got = flows.where(flows.open(40))
    print(f"40 new flows while app2 is held: {got}")
    assert got["app2"] == 0 and got["app1"] == 40, got
    # Released once the penalty has decayed.
    srv = wait_for("app2 released", lambda: (lambda s: s if s["state"] == "active" else None)(
        lab.servers()[app2]), timeout=expect + 5, step=0.1)
    held = time.time() - t_held
    print(f"app2 released after {held:.1f} s held (predicted {d['held_for_s']:.1f} s at the hold's start); "
          f"penalty {srv['health']['dampening']['penalty']:.0f}")
    assert srv["health"]["dampening"]["held"] is False
    assert held <= d["held_for_s"] + 2.0, f"held {held:.1f} s"
    got = flows.where(flows.open(40))
    print(f"40 new flows after the release: {got}")
    assert got["app2"] > 0, got


def test_slow_start(lab, args):
    app2 = APPS["app2"]
    for a in APPS.values():
        wait_health(lab, a, "healthy", 15)
    cfg = open(f"{lab.dir}/gwlbd.yaml").read()
    on, k = re.subn(r"(\n    failover_mode: \w+)", r"\1\n    slow_start: %ds" % SLOW_START, cfg)
    assert k >= 1, "no failover_mode line in the lab's config"
    open(f"{lab.dir}/gwlbd.yaml", "w").write(on)
    out = lab.gwlbctl("reload")
    assert "error" not in out.lower(), out
    flows = Flows(lab)
    set_health(lab, "app2", False)
    wait_health(lab, app2, "unhealthy", 10)
    got = flows.where(flows.open(30))
    assert got["app2"] == 0, f"new flows to an unhealthy appliance: {got}"
    set_health(lab, "app2", True)
    wait_health(lab, app2, "healthy", 10)
    t0 = time.time()
    samples = []  # (seconds since recovery, gwlbd's share, app2's part of new flows)
    while time.time() - t0 < SLOW_START + 2:
        share = lab.servers()[app2]["health"]["slow_start"]["share"]
        got = flows.where(flows.open(60))
        samples.append((time.time() - t0, share, got["app2"] / 60))
        time.sleep(max(0.0, 1.0 - (time.time() - t0) % 1.0))
    for t, share, part in samples:
        print(f"  {t:4.1f} s after recovery: share {share:.2f} of its weight, "
              f"{part * 100:3.0f} % of 60 new flows to app2")
    first, last = samples[0], samples[-1]
    # Maglev with weights 1 x share and 1: app2's part is about share / (1 + share).
    assert first[1] <= 0.25 and first[2] <= 0.25, f"app2 took its full share at once: {first}"
    assert last[1] == 1.0, f"share not full after slow_start: {last}"
    assert last[2] >= 0.3, f"app2's part did not grow to about half: {last}"
    early = sum(p for _, _, p in samples[:2]) / 2
    late = sum(p for _, _, p in samples[-2:]) / 2
    assert late > early + 0.15, f"no ramp: {early:.2f} -> {late:.2f}"
    shares = [s for _, s, _ in samples]
    assert shares == sorted(shares), f"share went down during the ramp: {shares}"
    print(f"app2's part of new flows: {early * 100:.0f} % over the first 2 s, {late * 100:.0f} % over the "
          f"last 2 s (slow_start {SLOW_START} s)")


def packets_on(lab, app, ports):
    """{port: packets} of the UDP flows from `ports` that `app` has seen."""
    want = {f"{CLIENT}:{p}": p for p in ports}
    out = {}
    for f in lab.app_stats(app)["flows"]:
        if f["proto"] != 17:
            continue
        p = want.get(f["a"]) or want.get(f["b"])
        if p:
            out[p] = f["a_to_b"] + f["b_to_a"]
    return out


def test_settling(lab, args):
    a1, a2 = APPS["app1"], APPS["app2"]
    for a in APPS.values():
        wait_health(lab, a, "healthy", 15)
    flows = Flows(lab)
    ports = flows.open(40)
    flows.where(ports)
    on2 = sorted(packets_on(lab, "app2", ports))
    assert 4 <= len(on2) <= 36, f"Maglev gave app2 {len(on2)} of 40 flows"
    # A fault on the gateway's side fails every appliance at once.
    set_health(lab, "app1", False)
    set_health(lab, "app2", False)
    wait_health(lab, a1, "unhealthy", 10)
    wait_health(lab, a2, "unhealthy", 10)
    before = packets_on(lab, "app2", on2)
    set_health(lab, "app1", True)
    wait_health(lab, a1, "healthy", 10)
    srv = lab.servers()[a2]
    st = srv["health"].get("settling")
    assert st and st["keeps_flows_for_s"] > 0.5, f"app2 not settling after app1 came back: {srv['health']}"
    print(f"app1 back first; app2 still failing keeps its flows for {st['keeps_flows_for_s']:.1f} s more "
          f"(settle time 2 x 1 s + 0.5 s); reason: {srv['reason']}")
    assert "its flows stay while its group settles" in srv["reason"], srv["reason"]
    text = lab.gwlbctl("health", a2)
    assert re.search(r"\nsettling +keeps its flows [0-9.]+m?s more: its group settles after every appliance failed\n",
                     text), text
    flows.send(on2)
    still = lab.servers()[a2]["health"].get("settling")
    assert still, "the settle time ended before the datagrams were sent: the check proves nothing"

    def all_counted():
        now = packets_on(lab, "app2", on2)
        return now if all(now.get(p, 0) > before.get(p, 0) for p in on2) else None
    wait_for(f"{len(on2)} flows' datagrams on app2 while settling", all_counted, timeout=10)
    moved = packets_on(lab, "app1", on2)
    assert not moved, f"flows of app2 went to app1 while the group settled: {moved}"
    print(f"while settling: each of app2's {len(on2)} flows sent a datagram; all reached app2, none app1")
    # Settled with app2 still failing: its flows shed, as rebalance says.
    wait_for("the group settled", lambda: lab.servers()[a2]["health"].get("settling") is None or None,
             timeout=st["keeps_flows_for_s"] + 5, step=0.1)
    flows.send(on2)

    def on_app1():
        got = packets_on(lab, "app1", on2)
        return got if len(got) == len(on2) else None
    wait_for(f"app2's {len(on2)} flows on app1 after the group settled", on_app1, timeout=10)
    log = open(f"{lab.dir}/gwlbd.log").read()
    # docs/product-rules.md quotes both lines.
    start = re.findall(r"group appliances: 1 of 2 appliances pass again after all failed; the 1 still failing keep "
                       r"their flows for 2\.5 s while the group settles", log)
    end = re.findall(r"group appliances settled: 1 of 2 appliances in service; the 1 still failing shed their flows now",
                     log)
    assert len(start) == 1 and len(end) == 1, (start, end)
    print(f"settled: app2's {len(on2)} flows moved to app1; gwlbd logged: {start[0]!r} and {end[0]!r}")
    set_health(lab, "app2", True)
