#!/usr/bin/python3
"""gwlb-replay --events with listeners and regions (docs/product-rules.md section 3), per flow.

usage: regions.py GWLB_REPLAY WORKDIR [--all | --only NAME ...]

Two regions serve one listener `web`: server groups fw-east (192.0.2.10-14, aws
format) and fw-west (192.0.2.20-24, ethernet format), both failover_mode:
rebalance, listed in that order of preference. Each region has a health source
(policy: 60 % and at least 2 healthy, so 3 of 5 are needed) and a composite
health check whose destination is `web`. The capture (written here) holds 50
long-lived TCP flows (a packet every 200 ms over the whole 13 s) and a new
flow every 100 ms (each 15 packets over 3 s), so every window between events
shows where new flows go and what existing flows do.

Scenarios (E0..E4 are east's appliances, W0..W4 west's):

  failover         E0, E1, E2 unhealthy at 2, 3, 4 s; E2 healthy at 7 s; E0, E1
                   at 9 s. The third failure breaks the policy: new flows go
                   west from 4 s and existing east flows move to west
                   appliances on their next packet; from 7 s new flows return
                   east while existing flows stay on west (no flapping).
  failback-hold    the same failures, failback_hold 3s; E2 healthy at 6 s,
                   unhealthy again at 7 s, healthy at 7.5 s: new flows keep
                   going west until 10.5 s (the hold ends in capture time, no
                   event there), then east.
  all-down-fail-open   east fails at 4 s as above; W0, W1, W2 unhealthy at 6, 7,
                   8 s: no region is healthy from 8 s and when_all_unhealthy:
                   fail_open sends new flows to east (the preferred region), to
                   its two appliances in service. Existing flows on the healthy
                   W3, W4 stay; those on W2 (failed at 8 s) move to east.
  all-down-drop    the same with when_all_unhealthy: drop: new flows from 8 s
                   are dropped (drop_no_healthy_server, per packet) and every
                   existing flow keeps its appliance, even the failed W2; W2
                   healthy at 10 s makes west healthy again: new flows (also
                   those whose first packets were dropped) go west.
  dry-run          east's composite is dry_run with a stricter policy (80 %, 4
                   of 5); E0, E1 unhealthy at 2, 3 s, E0 healthy at 5 s. The
                   composite turns unhealthy at 3 s and the log and summary
                   say new flows would go west, but traffic stays in east (the
                   region is judged by the default policy, 60 %, which holds).

  implicit-drop    (known bug, run only with --all or --only) no listeners, one
                   group with when_all_unhealthy: drop, 3 of 5 fail: new flows
                   must keep going to the 2 in service (docs/config.md).

From to-appliances.pcap and returned.pcap (decoded here with struct) every
packet of every flow is checked against an independent model of the scenario
(which group takes new flows when, which regions are down when, which
appliances are unhealthy when): a new flow lands in the active group on an
appliance in service; an existing flow stays on its appliance unless that
appliance sheds its flows at that moment (unhealthy, with somewhere to go; or
its region is down while the active region is healthy), and then it moves on
that very packet to an appliance in service of the active group; dropped
packets are exactly the predicted ones. summary.json must agree: per event
`listeners_after` (active group, would-be group, destination health) and
`region_changes`, top-level `region_changes` (time and line), per event
flows_moved/stayed, and the rebalance and drop counters.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from events import frame as events_frame, finish, inner_of_geneve, read_pcap, run_scenarios, write_pcap  # noqa: E402  (same directory)

SEC = 1_000_000_000
MS = 1_000_000
BASE = 1_700_000_000 * SEC
END = 13 * SEC
EAST = ["192.0.2.1%d" % i for i in range(5)]
WEST = ["192.0.2.2%d" % i for i in range(5)]
GROUP_OF = {**{a: "fw-east" for a in EAST}, **{a: "fw-west" for a in WEST}}
MEMBERS = {"fw-east": EAST, "fw-west": WEST}

# Long-lived flows 0..49: packet k at k * 200 ms + f * 3 ms (+ 0.3 ms for f > 0,
# so only flow 0 ever sends exactly at an event time: it meets the new state).
# New flows 100..: flow 100 + i starts at 50 ms + i * 100 ms, 15 packets 200 ms apart.
LONG = list(range(50))
NEW = [100 + i for i in range(int((END - 50 * MS) // (100 * MS)))]


def packet_times(f):
    if f < 100:
        off = f * 3 * MS + (300_000 if f else 0)
        return [k * 200 * MS + off for k in range(END // (200 * MS)) if k * 200 * MS + off < END]
    start = 50 * MS + (f - 100) * 100 * MS
    return [t for t in (start + k * 200 * MS for k in range(15)) if t < END]


def frame(f, k):
    """Packet k of flow f: even k client -> server, odd k server -> client."""
    return events_frame(f, k, client=bytes([198, 51, 100, 1 + f % 200]), reps=16)


def write_capture(path):
    """Returns {(flow, k): capture time relative to the first packet (ns)}."""
    return write_pcap(path, [(t, f, k) for f in LONG + NEW for k, t in enumerate(packet_times(f))],
                      frame)


def packet_id(ip):
    ihl = (ip[0] & 0xF) * 4
    sport, dport, seq = struct.unpack("!HHI", ip[ihl:ihl + 8])
    return (sport if dport == 443 else dport) - 20000, seq


# --- config and scenarios ---------------------------------------------------------------------

CONFIG = """node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:aa
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: fw-east
    stickiness: 5-tuple
    geneve: {{ format: aws, vni: 0x123456, endpoint_id: 0x8877665544332211, attachment_id: 7 }}
    failover_mode: rebalance
    servers:
{east}
  - name: fw-west
    stickiness: 5-tuple
    geneve: {{ format: ethernet, vni: 4660 }}
    failover_mode: rebalance
    servers:
{west}
health_aggregation_policies:
  - {{ name: regional, min_healthy_percent: 60, min_healthy_count: 2 }}
  - {{ name: strict, min_healthy_percent: 80, min_healthy_count: 2 }}
health_sources:
  - {{ name: east-src, server_group: fw-east, policy: {east_policy} }}
  - {{ name: west-src, server_group: fw-west, policy: regional }}
composite_health_checks:
  - {{ name: east-health, sources: [east-src], destination: web, dry_run: {dry} }}
  - {{ name: west-health, sources: [west-src], destination: web }}
listeners:
  - name: web
    server_groups: [fw-east, fw-west]
    failback_hold: {hold}
    when_all_unhealthy: {when}
dataplane:
  flow_table_size: 65536
"""


# No listener, no composite: one group, when_all_unhealthy: drop at the group.
IMPLICIT_CONFIG = """node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:aa
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: fw-east
    stickiness: 5-tuple
    geneve: {{ format: aws, vni: 0x123456, endpoint_id: 0x8877665544332211, attachment_id: 7 }}
    failover_mode: rebalance
    when_all_unhealthy: drop
    servers:
{east}
dataplane:
  flow_table_size: 65536
"""


def config_text(sc):
    lines = lambda addrs: "\n".join("      - { address: %s }" % a for a in addrs)
    if sc.get("implicit"):
        return IMPLICIT_CONFIG.format(east=lines(EAST))
    dry = sc.get("dry_run", False)
    return CONFIG.format(east=lines(EAST), west=lines(WEST), east_policy=sc.get("east_policy", "strict" if dry else "regional"),
                         dry="true" if dry else "false", hold=sc.get("hold", "0s"),
                         when=sc.get("when", "fail_open"))


E, W = EAST, WEST
EAST_FAILS = [(2 * SEC, E[0], "unhealthy"), (3 * SEC, E[1], "unhealthy"), (4 * SEC, E[2], "unhealthy")]
L = "listener web: new flows "

# events: (ns, server, action) in the events file's order.
# active: [(from ns, group or None = drop)]; down: {group: [(from, to)]} when its
#   region is unhealthy for traffic (acting composites).
# after: per event (active_group, would_be_active_group, destination healthy,
#   healthy with dry run) in summary.json's listeners_after.web.
# lines: every region log line expected after the start: (at_s, text); listener
#   lines must match exactly (text is a prefix), the others must be present.
SCENARIOS = {
    "failover": dict(
        workers=2,
        events=EAST_FAILS + [(7 * SEC, E[2], "healthy"), (9 * SEC, E[0], "healthy"),
                             (9 * SEC, E[1], "healthy")],
        active=[(0, "fw-east"), (4 * SEC, "fw-west"), (7 * SEC, "fw-east")],
        down={"fw-east": [(4 * SEC, 7 * SEC)]},
        after=[("fw-east", "fw-east", True, True)] * 2 + [("fw-west", "fw-west", False, False)] +
              [("fw-east", "fw-east", True, True)] * 3,
        lines=[(4.0, L + "fw-east -> fw-west (every region before it is unhealthy)"),
               (4.0, "composite east-health: healthy -> unhealthy (east-src: 2 of 5 healthy; needs 3"),
               (4.0, "destination web: unhealthy"),
               (7.0, L + "fw-west -> fw-east (failed back: healthy for the whole failback hold)"),
               (7.0, "composite east-health: unhealthy -> healthy"),
               (7.0, "destination web: healthy")]),
    "failback-hold": dict(
        workers=1, hold="3s",
        events=EAST_FAILS + [(6 * SEC, E[2], "healthy"), (7 * SEC, E[2], "unhealthy"),
                             (7500 * MS, E[2], "healthy")],
        active=[(0, "fw-east"), (4 * SEC, "fw-west"), (10500 * MS, "fw-east")],
        down={"fw-east": [(4 * SEC, 6 * SEC), (7 * SEC, 7500 * MS)]},
        after=[("fw-east", "fw-east", True, True)] * 2 + [("fw-west", "fw-west", False, False)] +
              [("fw-west", "fw-west", True, True), ("fw-west", "fw-west", False, False),
               ("fw-west", "fw-west", True, True)],
        lines=[(4.0, L + "fw-east -> fw-west"),
               (10.5, L + "fw-west -> fw-east (failed back: healthy for the whole failback hold)"),
               (6.0, "composite east-health: unhealthy -> healthy"),
               (7.0, "composite east-health: healthy -> unhealthy"),
               (7.5, "composite east-health: unhealthy -> healthy")]),
    "all-down-fail-open": dict(
        workers=2,
        events=EAST_FAILS + [(6 * SEC, W[0], "unhealthy"), (7 * SEC, W[1], "unhealthy"),
                             (8 * SEC, W[2], "unhealthy")],
        active=[(0, "fw-east"), (4 * SEC, "fw-west"), (8 * SEC, "fw-east")],
        down={"fw-east": [(4 * SEC, END)], "fw-west": [(8 * SEC, END)]},
        after=[("fw-east", "fw-east", True, True)] * 2 + [("fw-west", "fw-west", False, False)] * 3 +
              [("fw-east", "fw-east", False, False)],
        lines=[(4.0, L + "fw-east -> fw-west"),
               (8.0, L + "fw-west -> fw-east (no region is healthy: when_all_unhealthy fail_open"),
               (8.0, "composite west-health: healthy -> unhealthy")]),
    "all-down-drop": dict(
        workers=1, when="drop",
        events=EAST_FAILS + [(6 * SEC, W[0], "unhealthy"), (7 * SEC, W[1], "unhealthy"),
                             (8 * SEC, W[2], "unhealthy"), (10 * SEC, W[2], "healthy")],
        active=[(0, "fw-east"), (4 * SEC, "fw-west"), (8 * SEC, None), (10 * SEC, "fw-west")],
        down={"fw-east": [(4 * SEC, END)], "fw-west": [(8 * SEC, 10 * SEC)]},
        after=[("fw-east", "fw-east", True, True)] * 2 + [("fw-west", "fw-west", False, False)] * 3 +
              [(None, None, False, False), ("fw-west", "fw-west", False, False)],
        lines=[(4.0, L + "fw-east -> fw-west"),
               (8.0, L + "fw-west -> (drop) (no region is healthy: when_all_unhealthy drop)"),
               (10.0, L + "(drop) -> fw-west (every region before it is unhealthy)")]),
    "dry-run": dict(
        workers=2, dry_run=True,
        events=[(2 * SEC, E[0], "unhealthy"), (3 * SEC, E[1], "unhealthy"), (5 * SEC, E[0], "healthy")],
        active=[(0, "fw-east")],
        down={},
        after=[("fw-east", "fw-east", True, True), ("fw-east", "fw-west", True, False),
               ("fw-east", "fw-east", True, True)],
        lines=[(3.0, "composite east-health (dry run): healthy -> unhealthy (east-src: 3 of 5 healthy; needs 4"),
               (3.0, "listener web (dry run): would send new flows fw-east -> fw-west"),
               (3.0, "destination web: healthy (would be unhealthy without dry run)"),
               (5.0, "composite east-health (dry run): unhealthy -> healthy"),
               (5.0, "listener web (dry run): would send new flows fw-west -> fw-east"),
               (5.0, "destination web: healthy")]),
    # No listeners configured, one group with when_all_unhealthy: drop: with 2
    # of 5 healthy, new flows still go to those two (drop applies only when no
    # appliance of the group is in service; the implicit listener's only group
    # is always its region).
    "implicit-drop": dict(
        workers=1, implicit=True, listener="default", groups=["fw-east"],
        events=EAST_FAILS,
        active=[(0, "fw-east")],
        down={},
        after=[("fw-east", "fw-east", "*", "*")] * 3,
        lines=[]),
}
KNOWN_BUGS: set = set()  # scenarios of known, unfixed bugs (none)


# --- the model ----------------------------------------------------------------------------------

class Model:
    """What the scenario says holds at capture time t (events with at <= t apply)."""

    def __init__(self, sc):
        self.sc = sc

    def active(self, t):
        g = None
        for at, grp in self.sc["active"]:
            if at <= t:
                g = grp
        return g

    def down(self, group, t):
        return any(a <= t < b for a, b in self.sc["down"].get(group, []))

    def unhealthy(self, addr, t):
        state = False
        for at, a, act in self.sc["events"]:
            if at <= t and a == addr:
                state = act == "unhealthy"
        return state

    def in_service(self, group, t):
        return [a for a in MEMBERS[group] if not self.unhealthy(a, t)]

    def sheds(self, addr, t):
        """Why a flow on addr moves on a packet at t ("unhealthy", "region") or None."""
        act = self.active(t)
        if act is None:
            return None  # no group for new flows: nowhere to move to
        if self.unhealthy(addr, t) and self.in_service(act, t):
            return "unhealthy"
        g = GROUP_OF[addr]
        if g != act and self.down(g, t) and not self.down(act, t):
            return "region"
        return None


class Failures:
    def __init__(self):
        self.errors = []

    def check(self, ok, what):
        if not ok:
            self.errors.append(what)
        return ok


class Run:
    def __init__(self, exe, workdir, name, sc, times):
        self.dir = os.path.join(workdir, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        cfg = os.path.join(self.dir, "config.yaml")
        open(cfg, "w").write(config_text(sc))
        ev = os.path.join(self.dir, "events.yaml")
        open(ev, "w").write("".join("- { at: %dms, server: %s, health: %s }\n" % (t // MS, a, act)
                                    for t, a, act in sc["events"]))
        cmd = [exe, "--config", cfg, "--in", os.path.join(workdir, "regions.pcap"), "--out-dir",
               os.path.join(self.dir, "out"), "--reflect", "--workers", str(sc["workers"]), "--events", ev]
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.seconds = time.monotonic() - t0
        self.stderr = p.stderr
        open(os.path.join(self.dir, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
        if p.returncode != 0:
            raise SystemExit("%s: gwlb-replay exited %d:\n%s%s" % (name, p.returncode, p.stdout, p.stderr))
        out = os.path.join(self.dir, "out")
        self.summary = json.load(open(os.path.join(out, "summary.json")))
        self.where, self.dups = {}, 0
        for b in read_pcap(os.path.join(out, "to-appliances.pcap")):
            dst, ip = inner_of_geneve(b)
            pid = packet_id(ip)
            self.dups += pid in self.where
            self.where[pid] = dst
        self.returned = [packet_id(b[14:]) for b in read_pcap(os.path.join(out, "returned.pcap"))]
        self.times = times

    def path(self, f):
        """[(time, appliance or None when dropped)] of flow f's packets."""
        return [(t, self.where.get((f, k))) for k, t in enumerate(packet_times(f))]

    def at(self, f, t):
        """Appliance of flow f's last forwarded packet before t (None: none yet)."""
        last = None
        for ts, a in self.path(f):
            if ts >= t:
                break
            if a is not None:
                last = a
        return last


def check_flows(r, run, model):
    """Every packet of every flow against the model. Returns statistics."""
    st = {"moves": {"unhealthy": 0, "region": 0}, "dropped": 0, "new_by_window": {}}
    win_edges = sorted({t for t, _, _ in model.sc["events"]} |
                       {t for t, _ in model.sc["active"] if t})
    for f in LONG + NEW:
        cur = None
        for k, (t, a) in enumerate(run.path(f)):
            where = "flow %d packet %d at %.3f s" % (f, k, t / SEC)
            act = model.active(t)
            if cur is None:
                if act is None:
                    r.check(a is None, "%s: went to %s; no group takes new flows then (drop)" % (where, a))
                    st["dropped"] += 1
                    continue
                ok = a is not None and GROUP_OF.get(a) == act and a in model.in_service(act, t)
                r.check(ok, "%s (first of the flow): went to %s, expected an appliance in service of %s (%s)"
                        % (where, a, act, model.in_service(act, t)))
                w = sum(1 for e in win_edges if e <= t)
                key = "%s" % (win_edges[w - 1] / SEC if w else 0.0)
                st["new_by_window"].setdefault(key, {}).setdefault(GROUP_OF.get(a), 0)
                st["new_by_window"][key][GROUP_OF.get(a)] += 1
                cur = a
                continue
            why = model.sheds(cur, t)
            if why is None:
                r.check(a == cur, "%s: went to %s, expected to stay on %s (%s)" % (where, a, cur, GROUP_OF[cur]))
            else:
                ok = a is not None and a != cur and GROUP_OF.get(a) == act and a in model.in_service(act, t)
                r.check(ok, "%s: went to %s; %s sheds its flows then (%s): expected an appliance in "
                        "service of %s" % (where, a, cur, why, act))
                st["moves"][why] += 1
            if a is not None:
                cur = a
    return st


def common_checks(r, run, dropped):
    s = run.summary
    n_in = len(run.times)
    sent = n_in - dropped
    r.check(run.dups == 0, "%d input packets reached an appliance twice" % run.dups)
    r.check(len(run.where) == sent, "%d packets reached an appliance, expected %d (%d dropped)"
            % (len(run.where), sent, dropped))
    r.check(s["input_packets"] == n_in and s["to_appliances_packets"] == sent,
            "summary input %d / to appliances %d, expected %d / %d"
            % (s["input_packets"], s["to_appliances_packets"], n_in, sent))
    r.check(sorted(run.returned) == sorted(run.where),
            "returned.pcap (%d) does not hold exactly the packets sent to appliances (%d)"
            % (len(run.returned), len(run.where)))
    want_drops = {"no_healthy_server": dropped} if dropped else {}
    r.check(s["drops"] == want_drops, "drops %s, expected %s" % (s["drops"], want_drops))


def same(got, want):
    """Tuples equal, "*" in `want` matching anything."""
    return len(got) == len(want) and all(w == "*" or g == w for g, w in zip(got, want))


def summary_checks(r, run, sc, st):
    s = run.summary
    lname = sc.get("listener", "web")
    groups = sc.get("groups", ["fw-east", "fw-west"])
    lprefix = "listener %s: " % lname
    evs = s["events"]
    r.check(len(evs) == len(sc["events"]), "summary has %d events, expected %d" % (len(evs), len(sc["events"])))
    times = [t for t, _, _ in sc["events"]]
    for i, (e, (t, a, act), want) in enumerate(zip(evs, sc["events"], sc["after"])):
        r.check(e["applied"] and e["server"] == a and e["action"] == act,
                "events[%d]: %s %s applied %s" % (i, e["server"], e["action"], e["applied"]))
        la = e.get("listeners_after", {}).get(lname)
        if not r.check(la is not None, "events[%d] has no listeners_after.%s" % (i, lname)):
            continue
        got = (la["active_group"], la["would_be_active_group"], la["healthy"], la["healthy_with_dry_run"])
        r.check(same(got, want), "events[%d] (%s %s at %.1f s) listeners_after.%s (active, would be, "
                "healthy, with dry run) %s, expected %s" % (i, a, act, t / SEC, lname, got, tuple(want)))
        r.check([x["group"] for x in la["regions"]] == groups, "events[%d] regions %s" % (i, la["regions"]))
        # The event's own region lines are those of the top-level list at its time
        # (events at one time: the lines go to the event that caused them).
        # Flows moved in the event's window, from the capture.
        ends = [x for x in times[i + 1:]] + [1 << 62]
        end = ends[0]
        moved, stayed, existing = {}, 0, 0
        for f in LONG + NEW:
            x = run.at(f, t)
            if x is None:
                continue
            existing += 1
            y = run.at(f, end)
            if x == y:
                stayed += 1
            else:
                moved["%s->%s" % (x, y)] = moved.get("%s->%s" % (x, y), 0) + 1
        r.check(e["flows_at_event"] == existing, "events[%d].flows_at_event %s, capture shows %d" % (i, e["flows_at_event"], existing))
        r.check(e["flows_moved"] == moved, "events[%d].flows_moved %s, capture shows %s" % (i, e["flows_moved"], moved))
        r.check(e["flows_stayed"] == stayed, "events[%d].flows_stayed %s, capture shows %d" % (i, e["flows_stayed"], stayed))

    # Region log lines: every listener line exactly, the others present.
    got = [(c["at_s"], c["line"]) for c in s["region_changes"]]
    got_l = [(t, ln) for t, ln in got if ln.startswith(lprefix)]
    want_l = [(t, ln) for t, ln in sc["lines"] if ln.startswith(lprefix)]
    ok = len(got_l) == len(want_l) and all(abs(g[0] - w[0]) < 1e-9 and g[1].startswith(w[1])
                                           for g, w in zip(got_l, want_l))
    r.check(ok, "listener lines in region_changes %s, expected %s" % (got_l, want_l))
    for t, ln in sc["lines"]:
        r.check(any(abs(g[0] - t) < 1e-9 and g[1].startswith(ln) for g in got),
                "region_changes lacks (%s s, %r...): %s" % (t, ln, got))
        r.check(ln in run.stderr, "stderr lacks the region line %r" % ln)
    per_event = [x for e in evs for x in e.get("region_changes", [])]
    from_events = [ln for t, ln in got if any(abs(t - x / SEC) < 1e-9 for x in times)]
    r.check(per_event == from_events, "events[].region_changes %s differ from the top-level lines at "
            "event times %s" % (per_event, from_events))
    fin = s["listeners"][lname]
    want_final = sc["after"][-1]
    if sc.get("hold"):  # the hold ended after the last event
        want_final = (sc["active"][-1][1],) * 2 + tuple(sc["after"][-1][2:])
    r.check(same((fin["active_group"], fin["would_be_active_group"], fin["healthy"], fin["healthy_with_dry_run"]),
                 want_final), "final listeners.%s %s, expected %s" % (lname, fin, want_final))
    want_c = set() if sc.get("implicit") else {"east-health", "west-health"}
    r.check({c["name"] for c in s["composites"]} == want_c, "composites %s" % s["composites"])

    c = s["counters"]
    n_moves = st["moves"]["unhealthy"] + st["moves"]["region"]
    r.check(c["flows_rebalanced"] == n_moves, "flows_rebalanced %d, the capture shows %d moves"
            % (c["flows_rebalanced"], n_moves))
    r.check(c["flows_rebalanced_unhealthy"] == st["moves"]["unhealthy"],
            "flows_rebalanced_unhealthy %d, the capture shows %d moves off unhealthy appliances"
            % (c["flows_rebalanced_unhealthy"], st["moves"]["unhealthy"]))
    r.check(c["flows_rebalanced_region"] == st["moves"]["region"],
            "flows_rebalanced_region %d, the capture shows %d region failover moves"
            % (c["flows_rebalanced_region"], st["moves"]["region"]))
    r.check(s["lifecycle"]["flows_swept"] == 0, "flows_swept %s" % s["lifecycle"]["flows_swept"])


def headline_checks(r, run, name, sc, st):
    """The statements of each scenario, spelled out (the model implies them)."""
    nw = st["new_by_window"]
    def new_in(key):
        return nw.get(key, {})
    if name == "failover":
        r.check(set(new_in("3.0")) == {"fw-east"} and set(new_in("4.0")) == {"fw-west"} and
                set(new_in("7.0")) == {"fw-east"}, "new flows by window: %s" % nw)
        on_east = [f for f in LONG if GROUP_OF[run.at(f, 4 * SEC)] == "fw-east"]
        r.check(len(on_east) == len(LONG), "%d of %d long flows in east before 4 s" % (len(on_east), len(LONG)))
        for f in on_east:
            after = {a for t, a in run.path(f) if t >= 4 * SEC}
            r.check(len(after) == 1 and GROUP_OF[after.pop()] == "fw-west",
                    "long flow %d: from 4 s on %s, expected one west appliance to the end"
                    % (f, sorted({a for t, a in run.path(f) if t >= 4 * SEC})))
        untouched = [f for f in LONG if run.at(f, 2 * SEC) not in (E[0], E[1]) and
                     len({a for t, a in run.path(f) if t < 4 * SEC}) != 1]
        r.check(not untouched, "flows not on E0/E1 changed appliance before 4 s: %s" % untouched)
    elif name == "failback-hold":
        r.check(set(new_in("6.0")) == {"fw-west"} and set(new_in("7.5")) == {"fw-west"} and
                set(new_in("10.5")) == {"fw-east"}, "new flows by window: %s" % nw)
    elif name == "all-down-fail-open":
        r.check(set(new_in("8.0")) == {"fw-east"}, "new flows from 8 s: %s" % nw)
        on_w2 = [f for f in LONG + NEW if run.at(f, 8 * SEC) == W[2]]
        on_w34 = [f for f in LONG + NEW if run.at(f, 8 * SEC) in (W[3], W[4]) and run.at(f, END) is not None
                  and any(t >= 8 * SEC for t, _ in run.path(f))]
        r.check(on_w2 and all(run.at(f, END) in (E[3], E[4]) for f in on_w2 if run.path(f)[-1][0] >= 8 * SEC),
                "flows on %s at 8 s: expected to move to %s/%s" % (W[2], E[3], E[4]))
        r.check(on_w34 and all(run.at(f, END) == run.at(f, 8 * SEC) for f in on_w34),
                "flows on W3/W4 at 8 s must stay there")
    elif name == "all-down-drop":
        r.check(not new_in("8.0") and set(new_in("10.0")) == {"fw-west"}, "new flows by window: %s" % nw)
        existing = [f for f in LONG + NEW if run.at(f, 8 * SEC) is not None]
        for f in existing:
            during = {a for t, a in run.path(f) if 8 * SEC <= t < 10 * SEC}
            r.check(during <= {run.at(f, 8 * SEC)}, "flow %d: during the drop it went to %s, expected %s"
                    % (f, during, run.at(f, 8 * SEC)))
        kept_w2 = [f for f in existing if run.at(f, 8 * SEC) == W[2] and run.at(f, 10 * SEC) == W[2]
                   and any(8 * SEC <= t < 10 * SEC for t, _ in run.path(f))]
        r.check(kept_w2, "no flow kept sending to the failed %s during the drop" % W[2])
        st["kept_on_failed"] = len(kept_w2)
    elif name == "dry-run":
        r.check(set(nw) <= {"0.0", "2.0", "3.0", "5.0"} and
                all(set(v) == {"fw-east"} for v in nw.values()), "new flows by window: %s" % nw)
        west = [f for f in LONG + NEW if any(GROUP_OF.get(a) == "fw-west" for _, a in run.path(f))]
        r.check(not west, "%d flows went west in a dry run" % len(west))
        r.check("(dry run): would send new flows fw-east -> fw-west" in run.stderr, "stderr lacks the dry-run line")


def scenario(exe, workdir, name, times):
    sc = SCENARIOS[name]
    r = Failures()
    run = Run(exe, workdir, name, sc, times)
    model = Model(sc)
    st = check_flows(r, run, model)
    common_checks(r, run, st["dropped"])
    summary_checks(r, run, sc, st)
    headline_checks(r, run, name, sc, st)
    new_by = ", ".join("%s s: %s" % (k, "/".join("%s %d" % (g or "drop", n) for g, n in sorted(v.items())))
                       for k, v in sorted(st["new_by_window"].items(), key=lambda kv: float(kv[0])))
    print("%-20s %s  (moves: %d off unhealthy, %d region; dropped %d; replay %.1f s)"
          % (name, "ok" if not r.errors else "FAIL", st["moves"]["unhealthy"], st["moves"]["region"],
             st["dropped"], run.seconds))
    print("    new flows from: " + new_by)
    for e in r.errors[:20]:
        print("    " + e)
    if len(r.errors) > 20:
        print("    ... and %d more" % (len(r.errors) - 20))
    return not r.errors


def main():
    exe, workdir = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    os.makedirs(workdir, exist_ok=True)
    pcap = os.path.join(workdir, "regions.pcap")
    times = write_capture(pcap)
    print("capture: %d flows (%d long-lived), %d packets over %.1f s"
          % (len(LONG) + len(NEW), len(LONG), len(times), max(times.values()) / SEC))
    names = (rest[rest.index("--only") + 1:] if "--only" in rest
             else list(SCENARIOS) if "--all" in rest else [n for n in SCENARIOS if n not in KNOWN_BUGS])
    t0 = time.monotonic()
    return finish(run_scenarios(lambda name: scenario(exe, workdir, name, times), names), t0)


if __name__ == "__main__":
    sys.exit(main())
