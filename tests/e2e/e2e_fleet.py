"""e2e_fleet: the fleet lab (scripts/lab.sh up --gateways 3; docs/lab.md, "The
fleet lab"), run by e2e.py: 3 gateways (gwlbd + BIRD each) behind the
router's ECMP (BGP + BFD), 2 appliances on a shared segment, flow state
sync between the gateways (docs/fleet.md, "Flow state sync"). The router runs
BIRD (e2e_fleet) or FRR (e2e_fleet_frr, LAB_ROUTER=frr), configured as
docs/fleet.md's "The router side" says; the table 100 route must be the one
that router installed (`proto bird`, `proto bgp`).

Idle, each gwlbd (node.idle_sleep_us: 200) uses well under half a core.
Appliance 1 is drained on every gateway; then 50 TCP streams (echoed, checked
byte by byte) start, all on appliance 2, and appliance 1 is undrained: for
about half of the streams today's Maglev choice is appliance 1, and they stay
on appliance 2 as existing flows. While they run:
  1. they are spread over the gateways (each gateway's flow table), and every
     gateway received flow records from its peers (fleet_sync);
  2. gateway 2 is stopped gracefully (SIGTERM): its route leaves the router's
     kernel table before gwlbd exits (measured: withdraw, exit);
  3. gateway 3 is killed (SIGKILL): BFD removes it from the router's kernel
     table in < 1 s (measured);
  4. gateway 2 is started again: it takes gateway 1's flow table (warm start,
     done with > 0 flows before its route is back at the router), ECMP puts
     it back, and streams whose Maglev choice is appliance 1 cross it while
     its table keeps them on appliance 2 (`explain`).
Then every stream completed intact, and each stream's packets, both
directions, crossed exactly one appliance from start to end (the
appliances' own per-flow counters): whichever gateways carried it, before and
after the moves — including the restarted one — it kept its appliance.
"""
import json
import os
import signal
import subprocess
import time
from datetime import datetime

from e2e import APPS, CLIENT, SERVER, flow_on, wait_for

# 50 x 20 kB/s: 1 MB/s in all, each way. The streams must outlast every event
# (stop, kill, restart and the look at the restarted gateway): about 15 s
# here, 30 s under the sanitizers (slower start-ups and exits), so longer there.
STREAMS, RATE = 50, 20000
SECONDS = 45 if os.environ.get("GWLB_SANITIZE") else 25


def nexthops(lab):
    """Gateway addresses in the router's kernel table 100 (BIRD's ECMP route)."""
    out = lab.run("router", "ip", "-4", "route", "show", "table", "100").stdout
    return {w.strip() for w in out.replace("\n", " ").split("via ")[1:] for w in [w.split()[0]]}


def gw_pid(lab, k):
    return int(open(os.path.join(lab.dir, f"gwlbd{k}.pid")).read())


def ctl(lab, k, *a, check=True):
    """gwlbctl --json on gateway k; the parsed result."""
    r = subprocess.run([os.path.join(lab.build, "cli/gwlbctl"), "--socket",
                        os.path.join(lab.dir, f"gw{k}", "gwlbd.sock"), "--json", *a],
                       text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
    if check:
        assert r.returncode == 0, f"gw{k}: gwlbctl {' '.join(a)}: exit {r.returncode}: {r.stdout}"
    return json.loads(r.stdout) if r.stdout.strip().startswith("{") else r.stdout


def gw_entries(lab, k):
    """{client source port: (appliance, packets through gateway k's own
    dataplane)} of the streams in gateway k's flow table (an entry learnt from
    a peer has no packets until ECMP sends one here)."""
    r = ctl(lab, k, "flows", "--all", "--port", "7000")
    return {f["sport"] if f["src"] == CLIENT else f["dport"]: (f["appliance"], f["packets"])
            for f in r["flows"] if f["kind"] == "flow"}


def gw_busy(lab, k):
    """Client source ports of the streams with packets through gateway k."""
    return {p for p, (_, n) in gw_entries(lab, k).items() if n > 0}


def explain(lab, k, sport):
    """(today's Maglev choice, the flow entry's appliance) on gateway k."""
    r = ctl(lab, k, "explain", CLIENT, SERVER, "tcp", str(sport), "7000")
    return r["maglev"]["appliance"], r.get("appliance")


def sync_received(lab, k):
    """Flow records gateway k received from each peer (UDP sync and warm start)."""
    return {p["address"]: p["flows_received"] for p in ctl(lab, k, "fleet")["peers"]}


def log_time(line):
    """The wall-clock time of a gwlbd log line ([YYYY-mm-dd HH:MM:SS.mmm] ...)."""
    return datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S.%f").timestamp()


def streams_intact(streams, count):
    """Waits for the stream driver's last line: every stream intact, or the
    test fails naming the broken ones; prints the bytes and the pauses."""
    fin = json.loads(streams.stdout.readline())
    streams.wait(60)
    bad = [s for s in fin["streams"] if not s["ok"]]
    assert not bad, f"{len(bad)} of {count} streams broken: {bad[:5]}"
    stalls = sorted(s["max_stall"] for s in fin["streams"])
    print(f"{count} streams intact ({sum(s['sent'] for s in fin['streams'])} bytes each way); "
          f"longest pause: median {stalls[len(stalls) // 2]} s, max {stalls[-1]} s")


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


def router_downs(lab):
    """Session-down lines of the router's routing daemon's log."""
    if lab.env.get("LAB_ROUTER", "bird") == "frr":
        log = open(os.path.join(lab.dir, "frr-bgpd.log"), errors="replace").read()
        return [l.split("] ", 1)[-1] for l in log.splitlines() if "%ADJCHANGE" in l and " Down " in l]
    log = open(os.path.join(lab.dir, "bird-router.log"), errors="replace").read()
    return [l.split("> ", 1)[-1] for l in log.splitlines()
            if "State changed to down" in l or "BFD session down" in l]


def test_fleet(lab, args):
    gws = {"10.77.9.1", "10.77.9.2", "10.77.9.3"}
    assert nexthops(lab) == gws, f"router table 100: {nexthops(lab)}"
    # The ECMP route is the one the router's daemon installed: BIRD writes
    # `proto bird`, FRR's zebra `proto bgp`.
    router = lab.env.get("LAB_ROUTER", "bird")
    route = lab.run("router", "ip", "-4", "route", "show", "table", "100").stdout
    proto = {"bird": "proto bird", "frr": "proto bgp"}[router]
    assert proto in route.split("\n")[0], f"router table 100 not installed by {router} ({proto}): {route}"
    print(f"router ({router}) table 100:", " ".join(route.split()))
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
    # Appliance 1 drained on every gateway (a timeout longer than the test):
    # the streams all start on appliance 2.
    a1, a2 = APPS["app1"], APPS["app2"]
    for k in (1, 2, 3):
        ctl(lab, k, "server", "drain", a1, "--timeout", "600")
    streams = lab.spawn("client", *lab.peer("tcp-streams", SERVER, "7000", str(STREAMS), str(SECONDS),
                                            str(RATE)), stdout=subprocess.PIPE)
    sports = json.loads(streams.stdout.readline())["sports"]
    t_start = time.monotonic()

    # 1. Spread: every stream has crossed some gateway, over >= 2 gateways
    # (with sync every gateway has every flow: only its own packets tell).
    def spread():
        per = {k: gw_busy(lab, k) for k in (1, 2, 3)}
        seen = set().union(*per.values())
        return per if all(p in seen for p in sports) else None
    per = wait_for("every stream through a gateway", spread, 30)
    used = [k for k, p in per.items() if p & set(sports)]
    print("streams per gateway (a stream's two directions may be on two):",
          {f"gw{k}": len(p & set(sports)) for k, p in per.items()})
    assert len(used) >= 2, f"all streams on one gateway: {per}"
    # Every gateway learnt flows from its peers (records of the flows they created).
    rec = wait_for("flow records received on every gateway",
                   lambda: (lambda r: r if all(sum(v.values()) > 0 for v in r.values()) else None)(
                       {k: sync_received(lab, k) for k in (1, 2, 3)}), 15, 0.2)
    print("flow records received (fleet_sync peers flows_received):",
          {f"gw{k}": sum(v.values()) for k, v in rec.items()})
    # ... so every gateway holds every stream, on appliance 2, whether it has
    # seen its packets or not.
    def all_held():
        t = {k: gw_entries(lab, k) for k in (1, 2, 3)}
        return t if all(set(sports) <= set(e) for e in t.values()) else None
    held = wait_for("every stream in every gateway's flow table", all_held, 15, 0.2)
    off = {(k, p): e[p][0] for k, e in held.items() for p in sports if e[p][0] != a2}
    assert not off, f"streams not on {a2}: {off}"
    print("every stream in the flow table of each gateway, on appliance 2; learnt from peers:",
          {f"gw{k}": sum(1 for p in sports if e[p][1] == 0) for k, e in held.items()})
    # Undrain: today's Maglev choice is appliance 1 for about half the streams,
    # which stay on appliance 2 (existing flows keep their appliance).
    for k in (1, 2, 3):
        ctl(lab, k, "server", "undrain", a1)
    picks = {p: explain(lab, 1, p) for p in sports}
    assert all(app == a2 for _, app in picks.values()), f"streams not all on {a2} on gw1: {picks}"
    differ = {p for p, (mag, _) in picks.items() if mag == a1}
    print(f"{len(differ)} of {STREAMS} streams on {a2} while today's Maglev choice is {a1}")
    assert len(differ) >= 5, f"only {len(differ)} streams whose Maglev choice is {a1}"

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

    # 4. Gateway 2 starts again: warm start from gw1 (its first peer; gw3 is
    # dead), then its route; ECMP moves streams onto it and they keep appliance 2.
    t0, w0 = time.monotonic(), time.time()
    lab.sh("gw-start", "2")
    back = time_until(lambda: "10.77.9.2" in nexthops(lab), 30, 0.02)
    t_back, w_back = time.monotonic() - t0, time.time()  # the route was at the router by then
    assert back is not None, f"gw2 not back at the router: {nexthops(lab)}"
    warm = ctl(lab, 2, "fleet")["warm_start"]
    assert warm["state"] == "done" and warm["flows_received"] > 0, f"gw2's warm start: {warm}"
    done = [l for l in open(os.path.join(lab.dir, "gwlbd2.log"), errors="replace")
            if "fleet sync: warm start done" in l]
    assert done, "gw2 logged no warm start done"
    w_done = log_time(done[-1])
    assert w_done <= w_back, f"gw2's route at the router before its warm start was done ({w_done} > {w_back})"
    print(f"gw2 restarted: warm start done {w_done - w0:.2f} s after the start "
          f"({warm['flows_received']} flows from {warm['peer']} in {warm['elapsed_s']:.3f} s); "
          f"in the router's ECMP route {t_back:.2f} s after the start")
    left = SECONDS - (time.monotonic() - t_start)
    assert left > 3, f"the events took longer than the streams ({SECONDS} s): {left:.1f} s left"
    # Streams whose Maglev choice is appliance 1 now cross gw2, which keeps
    # them on appliance 2: the entries came from gw1, not from its table.
    moved = wait_for("streams off today's Maglev choice crossing the restarted gw2",
                     lambda: gw_busy(lab, 2) & differ or None, 10, 0.1)
    for p in moved:
        mag, app = explain(lab, 2, p)
        assert mag == a1 and app == a2, f"stream {p} on gw2: Maglev {mag}, entry {app}"
    print(f"{len(moved)} streams whose Maglev choice is {a1} crossed the restarted gw2 on {a2} (first look)")
    assert time.monotonic() - t_start < SECONDS, "the events took longer than the streams"

    streams_intact(streams, STREAMS)

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
    assert all(x == "app2" for x in where.values()), "a stream left appliance 2 (drained at its start)"
    downs = router_downs(lab)
    print(f"router's {router}: {len(downs)} session downs (expected: gw2 stop, gw3 kill):", downs)


def test_fleet_cold(lab, args):
    """A gateway that cannot know a flow's appliance resets it (docs/fleet.md
    "A segment with no record"); fleet lab, stateful appliances
    (LAB_APPLIANCE=stateful: nftables conntrack drops a segment of a
    connection whose SYN it did not see). Appliance 1 is drained on every
    gateway while STREAMS verified TCP streams start (all on appliance 2), then
    undrained: today's Maglev choice is appliance 1 for about half of them.
    Gateway 2 is stopped, its sync link (mgmt) cut, and started again: its
    warm start gets no table. Gateways 1 and 3 then leave (`fleet leave`), so
    the router sends every stream to gateway 2, which holds no record of any.
    Each client (tcp-watch with reconnect, as an application that reconnects
    on ECONNRESET) must get an RST and have its new connection echoed within
    a few seconds; none may hang. Before, gateway 2 picked from its own table:
    the streams it sent to appliance 1 hung there (its firewall dropped every
    segment) until the client's own timeout."""
    n, secs = 10, 40 if os.environ.get("GWLB_SANITIZE") else 30
    lab.serve("tcp-echo-server", SERVER, 7000)
    a1, a2 = APPS["app1"], APPS["app2"]
    for k in (1, 2, 3):
        ctl(lab, k, "server", "drain", a1, "--timeout", "600")
    # A reconnection may itself be reset: opened through gw1 or gw3 just before
    # they leave, its next segments reach gw2, which has no record of it (its
    # sync link is down), as the rule says. The client tries again, as an
    # application does (up to 3 tries).
    watchers = [lab.spawn("client", *lab.peer("tcp-watch", SERVER, "7000", str(secs), "20000", str(secs + 10),
                                              "reconnect-retry"), stdout=subprocess.PIPE) for _ in range(n)]
    sports = [json.loads(w.stdout.readline())["sport"] for w in watchers]

    def all_held():
        t = {k: gw_entries(lab, k) for k in (1, 2, 3)}
        return t if all(set(sports) <= set(e) for e in t.values()) else None
    held = wait_for("every stream in every gateway's flow table", all_held, 15, 0.2)
    assert all(e[p][0] == a2 for e in held.values() for p in sports), f"streams not all on {a2}: {held}"
    for k in (1, 2, 3):
        ctl(lab, k, "server", "undrain", a1)
    differ = {p for p in sports if explain(lab, 1, p)[0] == a1}
    print(f"{len(differ)} of {n} streams on {a2} while today's Maglev choice is {a1}")
    assert differ, f"no stream whose Maglev choice is {a1}"

    # Gateway 2 restarted with its sync link down: no warm start table.
    pid = gw_pid(lab, 2)
    os.kill(pid, signal.SIGTERM)
    assert time_until(lambda: not os.path.exists(f"/proc/{pid}"), 30, 0.02) is not None, "gw2 did not exit"
    r = lab.run("gw2", "ip", "link", "set", "mgmt", "down")
    assert r.returncode == 0, r.stderr
    lab.sh("gw-start", "2")
    assert time_until(lambda: "10.77.9.2" in nexthops(lab), 30, 0.02) is not None, f"gw2 not back: {nexthops(lab)}"
    t_back = time.time()  # ECMP sends gw2 its share of the streams from now
    fl = ctl(lab, 2, "fleet")
    assert fl["warm_start"]["state"] == "timed_out", f"gw2's warm start: {fl['warm_start']}"
    print(f"gw2 back with its sync link down: warm start {fl['warm_start']['state']}; flow records: {fl.get('view')}")
    # Gateways 1 and 3 leave: every stream now reaches gw2 only.
    for k in (1, 3):
        ctl(lab, k, "fleet", "leave")
    wait_for("gw2 alone at the router", lambda: nexthops(lab) == {"10.77.9.2"}, 15, 0.05)
    t_alone = time.time() - t_back

    results = [json.loads(w.stdout.readline()) for w in watchers]
    for w in watchers:
        w.wait(30)
    by = {s["sport"]: s for s in results}
    hung, reset = [], []
    for p, s in sorted(by.items()):
        re = s.get("reconnect")
        if s["error"] is None:
            if not s["complete"]:  # no reset, no end: it hung until the watch's limit
                hung.append((p, p in differ, round(s["end"] - s["last_rx"], 1)))
            assert s["intact"], f"stream {p}: {s}"
            continue
        assert s["error"] == "ECONNRESET", f"stream {p} ended with {s['error']}: {s}"
        assert re and "error" not in re, f"stream {p}: reset, but no reconnect: {re}"
        reset.append((p, s["error_at"] - t_back, re["first_byte_at"] - t_back))
        if re.get("errors"):
            print(f"stream {p}: its reconnection needed {re['attempts']} tries (before: {re['errors']})")
    totals = json.loads(subprocess.run(
        [os.path.join(lab.build, "cli/gwlbctl"), "--socket", os.path.join(lab.dir, "gw2", "gwlbd.sock"),
         "--json", "stats"], text=True, stdout=subprocess.PIPE, timeout=30).stdout)["totals"]
    print(f"streams reset by gw2: {len(reset)} of {n} (of them {len(differ & {p for p, _, _ in reset})} of the "
          f"{len(differ)} whose Maglev choice is {a1}); RST and reconnect's first byte, seconds after gw2's "
          f"route was back (gw2 alone at the router after {t_alone:.2f} s): "
          f"{[(p, round(a, 2), round(b, 2)) for p, a, b in reset]}; "
          f"tcp_resets_fleet_view_incomplete {totals.get('tcp_resets_fleet_view_incomplete')}; "
          f"load {os.getloadavg()[0]:.1f}")
    assert not hung, f"streams hung (sport, Maglev choice {a1}, seconds without a byte; no reset): {hung}"
    assert differ <= {p for p, _, _ in reset}, \
        f"streams whose Maglev choice is {a1} not reset: {sorted(differ - {p for p, _, _ in reset})}"
    assert totals.get("tcp_resets_fleet_view_incomplete", 0) >= len(differ), totals
    assert all(b < t_alone + 10 for _, _, b in reset), f"a reconnect's first byte came late: {reset}"
