"""e2e_fleet_upgrade: docs/upgrade.md's rolling upgrade of a fleet, run on the
fleet lab (3 gateways with BIRD, ECMP at the router, flow state sync;
docs/lab.md "The fleet lab") by e2e.py, under running, verified TCP streams.

Appliance 1 is drained on every gateway while 40 TCP streams (echoed, checked
byte by byte) start, so all of them start on appliance 2; it is undrained, so
today's Maglev choice of about half of them is appliance 1: a gateway that
forgot them would move those (the warm start is what keeps them). Then each
gateway in turn, as docs/upgrade.md says:
  1. checks: its routes announced, every peer reachable, the same config;
  2. `gwlbctl fleet leave`: its route leaves the router's kernel table;
  3. is stopped (SIGTERM: the grace period, then exit);
  4. is "upgraded": `gwlbd --check-config` of the new binary on its config
     (the same binary here: the procedure is what is tested, not a change
     of version);
  5. is started: its warm start is done, with flows, before its route is back
     at the router (the restart forgot the leave: it rejoins by itself);
     every peer reachable again, configs the same.
Then every stream completed intact, and each stream, both directions, crossed
exactly one appliance, appliance 2, from start to end (the appliances' own
per-flow counters): no stream broke or moved while the fleet was upgraded.
"""
import json
import os
import subprocess
import time
from datetime import datetime

from e2e import APPS, CLIENT, SERVER, flow_on, wait_for
from e2e_fleet import ctl, explain, gw_entries, gw_pid, nexthops, streams_intact, time_until

GWS = (1, 2, 3)
# 40 x 20 kB/s each way; the streams must outlast three rounds of leave,
# stop, start (about 8 s each here, longer under the sanitizers).
STREAMS, RATE = 40, 20000
SECONDS = 110 if os.environ.get("GWLB_SANITIZE") else 60


def gw_addr(k):
    return f"10.77.9.{k}"


def log_time(line):
    return datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S.%f").timestamp()


def fleet_ready(lab, k):
    """Gateway k's `gwlbctl fleet`, when its routes are announced, every peer
    reachable and every peer's config the same; else None."""
    f = ctl(lab, k, "fleet")
    if f["announce"]["state"] != "announced":
        return None
    if any(not p["reachable"] or p["config"]["state"] != "same" for p in f["peers"]):
        return None
    return f


def upgrade_one(lab, k):
    """docs/upgrade.md "A fleet", for gateway k. Returns what was measured."""
    others = {gw_addr(j) for j in GWS if j != k}
    # 1. Before: the whole fleet in the router's route, this node ready.
    wait_for("every gateway at the router", lambda: nexthops(lab) == others | {gw_addr(k)}, 30, 0.05)
    wait_for(f"gw{k} announced, peers reachable, configs the same", lambda: fleet_ready(lab, k), 30, 0.2)
    # 2. Leave: the route is withdrawn; gwlbd keeps forwarding what still comes.
    t0 = time.monotonic()
    left = ctl(lab, k, "fleet", "leave")
    assert left["announce"]["state"] == "withdrawn" and left["announce"]["left_by_operator"], left
    t_out = time_until(lambda: gw_addr(k) not in nexthops(lab), 10)
    assert t_out is not None, f"gw{k}'s route still at the router after fleet leave: {nexthops(lab)}"
    assert nexthops(lab) == others, nexthops(lab)
    # 3. Stop: SIGTERM; gwlbd forwards for its grace period, then exits.
    pid = gw_pid(lab, k)
    t1 = time.monotonic()
    lab.sh("gw-stop", str(k))
    t_exit = time_until(lambda: not os.path.exists(f"/proc/{pid}"), 30, 0.02)
    assert t_exit is not None, f"gw{k} (pid {pid}) still running after gw-stop"
    t_stop = time.monotonic() - t1
    # 4. The upgrade: the new binary must accept the config (the unit's
    # ExecStartPre runs the same check). Same binary here.
    conf = os.path.join(lab.dir, f"gw{k}", "gwlbd.yaml")
    r = subprocess.run([os.path.join(lab.build, "control/gwlbd"), "--check-config", conf],
                       text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    assert r.returncode == 0, f"gwlbd --check-config {conf}: exit {r.returncode}: {r.stdout}"
    # 5. Start: warm start from a peer, then the routes by themselves.
    t2, w2 = time.monotonic(), time.time()
    lab.sh("gw-start", str(k))
    back = time_until(lambda: gw_addr(k) in nexthops(lab), 30, 0.02)
    w_back = time.time()
    assert back is not None, f"gw{k} not back at the router: {nexthops(lab)}"
    warm = ctl(lab, k, "fleet")["warm_start"]
    assert warm["state"] == "done" and warm["flows_received"] > 0, f"gw{k}'s warm start: {warm}"
    done = [l for l in open(os.path.join(lab.dir, f"gwlbd{k}.log"), errors="replace")
            if "fleet sync: warm start done" in l]
    assert done, f"gw{k} logged no warm start done"
    w_done = log_time(done[-1])
    assert w2 <= w_done <= w_back, f"gw{k}: warm start done at {w_done}, route back at {w_back}"
    f = wait_for(f"gw{k} back: announced, peers reachable, configs the same", lambda: fleet_ready(lab, k), 30, 0.2)
    assert not f["announce"]["left_by_operator"], "a restart forgets the leave"
    return {"withdrawn_ms": round(t_out * 1000), "stopped_s": round(t_stop, 2),
            "out_of_route_s": round((t2 + back) - (t0 + t_out), 2),
            "warm_flows": warm["flows_received"], "warm_from": warm["peer"],
            "warm_s": round(warm["elapsed_s"], 3), "route_back_s": round(back, 2)}


def test_fleet_upgrade(lab, args):
    gws = {gw_addr(k) for k in GWS}
    wait_for("every gateway at the router", lambda: nexthops(lab) == gws, 30, 0.05)
    lab.serve("tcp-echo-server", SERVER, 7000)
    for a in APPS:
        lab.app_reset(a)
    a1, a2 = APPS["app1"], APPS["app2"]
    for k in GWS:
        ctl(lab, k, "server", "drain", a1, "--timeout", "600")
    streams = lab.spawn("client", *lab.peer("tcp-streams", SERVER, "7000", str(STREAMS), str(SECONDS),
                                            str(RATE)), stdout=subprocess.PIPE)
    sports = json.loads(streams.stdout.readline())["sports"]
    t_start = time.monotonic()
    # Every gateway holds every stream, on appliance 2 (its own or a peer's record).
    wait_for("every stream in every gateway's flow table",
             lambda: all(set(sports) <= set(gw_entries(lab, k)) for k in GWS), 20, 0.2)
    for k in GWS:
        ctl(lab, k, "server", "undrain", a1)
    differ = {p for p in sports if explain(lab, 1, p)[0] == a1}
    print(f"{len(differ)} of {STREAMS} streams on {a2} while today's Maglev choice is {a1}")
    assert len(differ) >= 5, f"only {len(differ)} streams whose Maglev choice is {a1}"

    for k in GWS:
        m = upgrade_one(lab, k)
        print(f"gw{k} upgraded: {m}")
        # The streams it had, whose Maglev choice is appliance 1, are still on 2 there.
        held = gw_entries(lab, k)
        off = {p: held[p][0] for p in differ if p in held and held[p][0] != a2}
        assert not off, f"gw{k} after its restart holds streams off {a2}: {off}"
        assert time.monotonic() - t_start < SECONDS - 2, "the procedure took longer than the streams"
    print(f"three gateways upgraded one at a time in {time.monotonic() - t_start:.1f} s under {STREAMS} streams")

    streams_intact(streams, STREAMS)
    stats = {a: lab.app_stats(a) for a in APPS}
    for p in sports:
        on = [(a, f) for a in APPS for f in [flow_on(stats[a], 6, f"{CLIENT}:{p}", f"{SERVER}:7000")] if f]
        assert len(on) == 1, f"stream {p}: on {[a for a, _ in on]} (expected exactly one appliance)"
        a, f = on[0]
        assert a == "app2", f"stream {p} on {a} (it started on app2)"
        assert f["a_to_b"] > 0 and f["b_to_a"] > 0 and f["dropped"] == 0, f"stream {p} on {a}: {f}"
    print("every stream on app2, both directions, start to end")
