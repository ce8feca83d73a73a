"""e2e_fleet: the fleet lab (scripts/lab.sh up --gateways 3; docs/lab.md, "The
fleet lab"), run by e2e.py: 3 gateways (gwlbd + BIRD each) behind the
router's ECMP (BIRD, BGP + BFD), 2 appliances on a shared segment.

Idle, each gwlbd (node.idle_sleep_us: 200) uses well under half a core. Then
50 TCP streams (echoed, checked byte by byte) run while:
  1. they are spread over the gateways (each gateway's flow table);
  2. gateway 2 is stopped gracefully (SIGTERM): its route leaves the router's
     kernel table before gwlbd exits (measured: withdraw, exit);
  3. gateway 3 is killed (SIGKILL): BFD removes it from the router's kernel
     table in < 1 s (measured);
  4. gateway 2 is started again and ECMP puts it back (measured).
Then every stream completed intact, and each stream's packets, both
directions, crossed exactly one appliance from start to end (the
appliances' own per-flow counters): whichever gateways carried it, before and
after the moves, picked the same appliance.
"""
import json
import os
import signal
import subprocess
import time

from e2e import APPS, CLIENT, SERVER, flow_on, wait_for

STREAMS, SECONDS, RATE = 50, 16, 20000  # 50 x 20 kB/s: 1 MB/s in all, each way


def nexthops(lab):
    """Gateway addresses in the router's kernel table 100 (BIRD's ECMP route)."""
    out = lab.run("router", "ip", "-4", "route", "show", "table", "100").stdout
    return {w.strip() for w in out.replace("\n", " ").split("via ")[1:] for w in [w.split()[0]]}


def gw_pid(lab, k):
    return int(open(os.path.join(lab.dir, f"gwlbd{k}.pid")).read())


def gw_flows(lab, k):
    """Client source ports of the streams gateway k has in its flow table."""
    r = subprocess.run([os.path.join(lab.build, "cli/gwlbctl"), "--socket",
                        os.path.join(lab.dir, f"gw{k}", "gwlbd.sock"), "--json", "flows", "--all",
                        "--port", "7000"], text=True, stdout=subprocess.PIPE, timeout=30)
    ports = set()
    for f in json.loads(r.stdout)["flows"]:
        if f["kind"] == "flow":
            ports.add(f["sport"] if f["src"] == CLIENT else f["dport"])
    return ports


def time_until(cond, limit, step=0.005):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if cond():
            return time.monotonic() - t0
        time.sleep(step)
    return None


def cpu_seconds(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_fleet(lab, args):
    gws = {"10.77.9.1", "10.77.9.2", "10.77.9.3"}
    assert nexthops(lab) == gws, f"router table 100: {nexthops(lab)}"
    # node.idle_sleep_us (the lab sets 200): an idle gwlbd leaves the cores to
    # BIRD, BFD and the others; busy polling would take a whole core each.
    pids = [gw_pid(lab, k) for k in (1, 2, 3)]
    c0, t0 = [cpu_seconds(p) for p in pids], time.monotonic()
    time.sleep(2)
    use = [(cpu_seconds(p) - c) / (time.monotonic() - t0) for p, c in zip(pids, c0)]
    print("idle gwlbd CPU (node.idle_sleep_us 200):", [f"{u * 100:.0f} %" for u in use])
    assert all(u < 0.4 for u in use), f"an idle gwlbd used {max(use) * 100:.0f} % of a core"
    lab.serve("tcp-echo-server", SERVER, 7000)
    for a in APPS:
        lab.app_reset(a)
    streams = lab.spawn("client", *lab.peer("tcp-streams", SERVER, "7000", str(STREAMS), str(SECONDS),
                                            str(RATE)), stdout=subprocess.PIPE)
    sports = json.loads(streams.stdout.readline())["sports"]
    t_start = time.monotonic()

    # 1. Spread: every stream is in some gateway's table, over >= 2 gateways.
    def spread():
        per = {k: gw_flows(lab, k) for k in (1, 2, 3)}
        seen = set().union(*per.values())
        return per if all(p in seen for p in sports) else None
    per = wait_for("every stream in a gateway's flow table", spread, 30)
    used = [k for k, p in per.items() if p & set(sports)]
    print("streams per gateway (a stream's two directions may be on two):",
          {f"gw{k}": len(p & set(sports)) for k, p in per.items()})
    assert len(used) >= 2, f"all streams on one gateway: {per}"

    # 2. Graceful stop of gateway 2: withdrawn first, exits after its grace period.
    pid = gw_pid(lab, 2)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    t_withdrawn = time_until(lambda: "10.77.9.2" not in nexthops(lab), 10)
    alive_then = os.path.exists(f"/proc/{pid}")
    t_exit = time_until(lambda: not os.path.exists(f"/proc/{pid}"), 30, 0.02)
    assert t_withdrawn is not None, f"gw2's route still at the router after SIGTERM: {nexthops(lab)}"
    assert alive_then and t_exit is not None and t_withdrawn < t_exit, (t_withdrawn, t_exit)
    # The others stay (a BFD session can flap on a starved 2-core machine: it
    # comes back within its BGP retry; the log's flap count is printed below).
    wait_for("gw1 and gw3 at the router", lambda: nexthops(lab) == {"10.77.9.1", "10.77.9.3"}, 15, 0.05)
    print(f"gw2 SIGTERM: route gone from the router's kernel after {t_withdrawn * 1000:.0f} ms; "
          f"gwlbd exited after {t_exit:.2f} s (grace period 3 s)")

    # 3. SIGKILL of gateway 3: its exception tap (BGP, BFD) vanishes with it;
    # the router's BFD (100 ms x 3) takes the route down.
    pid = gw_pid(lab, 3)
    t0 = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    t_gone = time_until(lambda: "10.77.9.3" not in nexthops(lab), 10)
    assert t_gone is not None, f"gw3's route still at the router 10 s after SIGKILL: {nexthops(lab)}"
    print(f"gw3 SIGKILL: route gone from the router's kernel after {t_gone * 1000:.0f} ms")
    assert t_gone < 1.0, f"BFD took {t_gone:.3f} s (want < 1 s)"
    wait_for("gw1 alone at the router", lambda: nexthops(lab) == {"10.77.9.1"}, 15, 0.05)
    os.unlink(os.path.join(lab.dir, "gwlbd3.pid"))

    # 4. Gateway 2 starts again and is back in ECMP: streams move onto it.
    t0 = time.monotonic()
    lab.sh("gw-start", "2")
    t_back = time_until(lambda: "10.77.9.2" in nexthops(lab), 30, 0.02)
    assert t_back is not None, f"gw2 not back at the router: {nexthops(lab)}"
    print(f"gw2 restarted: in the router's ECMP route {t_back:.2f} s after the start")
    # TODO(warm start, issue 16 item 2): with flow state sync, gw2 asks a peer
    # for the flow table before announcing; then assert here that a stream whose
    # appliance differs from the Maglev choice (e.g. after `server drain` of its
    # appliance with failover_mode no_rebalance) keeps that appliance once ECMP
    # moves it onto the restarted gw2 (its flow was learnt by sync, not picked).
    assert time.monotonic() - t_start < SECONDS, "the events took longer than the streams"

    done = json.loads(streams.stdout.readline())
    streams.wait(60)
    bad = [s for s in done["streams"] if not s["ok"]]
    assert not bad, f"{len(bad)} of {STREAMS} streams broken: {bad[:5]}"
    stalls = sorted(s["max_stall"] for s in done["streams"])
    print(f"{STREAMS} streams intact ({sum(s['sent'] for s in done['streams'])} bytes each way); "
          f"longest pause: median {stalls[len(stalls) // 2]} s, max {stalls[-1]} s")

    # Each stream on exactly one appliance, both directions, start to end.
    stats = {a: lab.app_stats(a) for a in APPS}
    where = {}
    for p in sports:
        on = [(a, f) for a in APPS for f in [flow_on(stats[a], 6, f"{CLIENT}:{p}", f"{SERVER}:7000")] if f]
        assert len(on) == 1, f"stream {p}: on {[a for a, _ in on]} (expected exactly one appliance)"
        a, f = on[0]
        assert f["a_to_b"] > 0 and f["b_to_a"] > 0 and f["dropped"] == 0, f"stream {p} on {a}: {f}"
        where[p] = a
    print("streams per appliance:", {a: sum(1 for x in where.values() if x == a) for a in APPS})
    log = open(os.path.join(lab.dir, "bird-router.log"), errors="replace").read()
    downs = [l for l in log.splitlines() if "State changed to down" in l or "BFD session down" in l]
    print(f"router's BIRD: {len(downs)} session downs (expected: gw2 stop, gw3 kill):",
          [l.split("> ", 1)[-1] for l in downs])
