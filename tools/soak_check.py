#!/usr/bin/python3
"""The soak's invariant checker (docs/testing.md, "Soak"): reads what
scripts/soak.sh wrote to DIR and judges it, apart from the run that made it.

  soak_check.py DIR [--no-plots]

Writes DIR/report.md (the schedule as run, each invariant with PASS or FAIL and
its evidence), DIR/summary.json (the figures) and, with matplotlib, DIR/*.svg
(tools/soak_plot.py). Exit 0 when every invariant held, 1 otherwise. On a run
still going (no end time in run.json yet) the end-of-run invariants (idle
table, leaks) are not judged; on a finished run an invariant that could not
be judged fails (it proved nothing), and so does a gateway whose samples do
not cover the run (tools/soak_data.py) or a traffic client that did not end
well.

The invariants (each a function below, tested on synthetic data by
tests/soak/test_soak_check.py):
  streams      every long-lived stream's connection is intact or ended by an
               RST (judged by `resets`), unless the router sent it through a
               gateway at the moment that gateway was SIGKILLed: one through a
               stateful appliance that moved mid-stream breaks without an RST
               and fails; on a finished run every stream closed and the client
               exited 0
  resets       every stream reset (an RST from gwlbd's send_tcp_reset) was on
               an appliance that failed, was drained or removed, or on a flow a
               gateway without its record had to place, and its slot reconnected
               (first verified byte) within RECONNECT_MAX_S through an appliance
               in service; the gateways' RST counters move only then
  appliance    a stream or UDP flow keeps its appliance (the appliances' own
               per-flow counters) unless that appliance failed, was drained or
               removed meanwhile, through sync faults too; a TCP stream never
               moves where send_tcp_reset covers the cause (it is reset), and
               never to a gateway's pick: only a UDP flow carried by a gateway
               that came back without the fleet's table may change
  classes      no flow ever reaches an appliance of another traffic class's
               listener, and no bypassed flow reaches any appliance (run.json
               "classes": each class's appliances; the lab's two listeners)
  partners     the appliances started with --bypass-after-bytes asked for bypasses
               and the gateways granted them, refusing none as not allowed or
               malformed; the mirror group's passive tool got copies of its one
               class, no more than the gateways sent, none lost for want of an
               mbuf or for size (tools/soak_partners.py)
  agree        the gateways hold each long-lived flow on the same appliance,
               but for a refresh interval after a sync fault
  losses       every failed short connection, lost datagram and lost echo falls
               in the window of a fault that disrupts forwarding
  drops        every drop counter that moved is explained by a fault of a class
               that causes it (DROP_CAUSES) while it moved, or is background
  sync         the sync's failure counters move only with junk sent to that port
  nexthops     a gateway leaves the router's ECMP route only when stopped or its
               BIRD restarted (no BFD or BGP flap of a healthy gateway)
  alive        no gwlbd died that was not stopped on purpose; each answered its API;
               every gateway of the run sampled at least every 5 s to the end
  events       every event ran and did what it should (a valid reload applied, an
               invalid one refused, a stopped gateway back at the router)
  leaks        second half: RSS grows < 1 %, open fds, threads and server ids unchanged
  idle         once traffic stopped and the idle timeout passed, every flow table
               is back at its level before traffic, no fragment entry left
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_classes  # noqa: E402
import soak_partners  # noqa: E402
from soak_flows import (RECONNECT_MAX_S, appliance_timeline, check_appliance, check_resets,  # noqa: E402,F401
                        check_streams, is_reset)
from soak_data import (MAX_GAP, Data, carriers, deltas, gateways, instances, not_read,  # noqa: E402,F401
                       path_gateways, sample_gaps)
# (Data: the tests build runs with it; instances: tools/soak_report.py)

# How long after an event (its end) its effects may still show, by kind (s).
# Windows open 1.5 s before the event's start (samples are 1 s apart).
AFTER = {"gw_term": 10, "gw_kill": 10, "gw_restart": 10, "bird_restart": 10, "app_fail": 5, "drain": 5,
         "remove": 15, "weight": 5, "reload_valid": 5, "reload_invalid": 5, "sync_congest": 10,
         "mgmt_down": 10, "frames": 3, "api_flood": 3, "sync_junk": 3}
BEFORE = 1.5
GATEWAY_KINDS = {"gw_term", "gw_kill", "gw_restart", "bird_restart"}
# Events that move flows between appliances or between gateways, or cut a
# path for a moment: a failed short connection or lost datagram must fall in one.
DISRUPTS = GATEWAY_KINDS | {"app_fail", "drain", "remove", "frames"}
# Counters that move without any fault in this lab, and why.
BACKGROUND = {
    "drop_l2_broadcast": "ARP broadcasts on the shared appliance segment (appliances, gateway kernels)",
    "drop_not_our_mac": "the shared appliance segment is a Linux bridge: it floods unicast frames for "
                        "MACs it has not learnt (yet, or any more) to every port, other gateways' included",
}
HOSTILE_FRAMES = {
    "drop_truncated_l2", "drop_unsupported_ethertype", "drop_nested_vlan", "drop_truncated_l3",
    "drop_bad_ip_version", "drop_bad_ihl", "drop_bad_ip_length", "drop_ipv6_ext_header_chain",
    "drop_truncated_l4", "drop_bad_udp_length", "drop_bad_fragment", "drop_icmp_error_truncated",
    "drop_fragment_unknown_flow", "drop_geneve_truncated", "drop_geneve_bad_version", "drop_geneve_control",
    "drop_geneve_bad_option", "drop_geneve_unknown_critical_option", "drop_geneve_bad_protocol",
    "drop_geneve_missing_cookie", "drop_geneve_bad_vni", "drop_geneve_unknown_appliance",
    "drop_return_inner_malformed", "drop_not_for_us", "drop_l2_multicast", "drop_arp_not_for_us",
    "drop_nd_not_for_us", "drop_geneve_on_router_port", "drop_appliance_port_not_return"}
MOVES = {"app_fail", "drain", "remove"}
# drop counter -> the fault kinds that explain it (on the gateway they target;
# appliance and gateway faults count on every gateway). A counter not here and
# not background is unexplained whenever it moves (flow_table_full, tx_full, ...).
DROP_CAUSES = {c: {"frames"} for c in HOSTILE_FRAMES}
DROP_CAUSES.update({
    "drop_return_no_flow": {"frames"} | GATEWAY_KINDS,
    "drop_return_after_move": MOVES | GATEWAY_KINDS,
    "drop_return_wrong_appliance": MOVES | GATEWAY_KINDS,
    "drop_return_cookie_mismatch": MOVES | GATEWAY_KINDS | {"frames"},
    "drop_return_no_l2": GATEWAY_KINDS,
    "drop_neighbour_unresolved": {"remove"} | GATEWAY_KINDS,
    "drop_exception_queue_full": {"frames"},
    # send_tcp_reset: an RST of a flow that cannot continue (the other end's
    # kernel answering a segment after its socket was reset) is dropped
    # unanswered; past the RST budget a segment is dropped without one.
    "drop_tcp_reset_not_answered": MOVES | GATEWAY_KINDS,
    "drop_tcp_reset_rate_limited": MOVES | GATEWAY_KINDS,
    "drop_punt_queue_full": {"frames"},
})
ANY_GATEWAY = MOVES | GATEWAY_KINDS | {"weight", "reload_valid"}  # kinds whose effects show on every gateway
SYNC_CAUSES = {"sync_auth_failures": {"sync_junk"}, "sync_malformed": {"sync_junk"},
               "sync_unknown_sender": {"sync_junk"},
               "sync_send_errors": {"mgmt_down"} | GATEWAY_KINDS,
               # A peer's datagrams the kernel queued while the link was down
               # (address resolution pending) arrive after newer ones: more than
               # 64 below the highest seen, they count as replayed (measured: 79
               # at once after a 6 s mgmt_down). Anything else is a real replay.
               "sync_replayed": {"mgmt_down"}, "sync_stale": set(), "sync_bad_records": set(), "sync_table_full": set()}
RSS_GROWTH_MAX = 0.01


class Result:
    def __init__(self, name, title):
        self.name, self.title = name, title
        self.ok, self.judged = True, True
        self.evidence, self.failures = [], []

    def fail(self, line):
        self.ok = False
        self.failures.append(line)

    def note(self, line):
        self.evidence.append(line)


def window(e):
    return e["start"] - BEFORE, e["end"] + AFTER.get(e["kind"], 5)


# The likeliest cause first: what injects the very thing counted, then what
# stops a gateway, then what moves flows, then the rest.
PRIORITY = {"frames": 0, "sync_junk": 0, "api_flood": 0, "gw_kill": 1, "gw_term": 1, "gw_restart": 1,
            "bird_restart": 1, "app_fail": 2, "drain": 2, "remove": 2}


def explaining(data, t, kinds, gw=None, app=None):
    """Events of these kinds whose window holds t (on gateway gw / appliance
    app when given), the likeliest cause first."""
    out = []
    for e in data.events:
        if e["kind"] not in kinds or e.get("outcome", "").startswith("skipped"):
            continue
        lo, hi = window(e)
        if not lo <= t <= hi:
            continue
        tgt = e.get("target", "")
        if gw is not None and tgt.startswith("gw") and e["kind"] not in ANY_GATEWAY and tgt != f"gw{gw}":
            continue
        if app is not None and tgt.startswith("app") and tgt != app:
            continue
        out.append(e)
    return sorted(out, key=lambda e: (PRIORITY.get(e["kind"], 3), abs(t - e["start"])))



def appliance_at(tl, key, t):
    """The appliance(s) a flow was seen on in the collection round holding t."""
    for t0, t1, apps in tl.get(key, []):
        if t0 - 1 <= t <= t1 + 1:
            return apps
    return set()


# ---------------------------------------------------------------- invariants


def check_classes(data):
    r = Result("classes", "no flow ever reaches another class's appliances, and no bypassed flow any")
    soak_classes.judge(data, r)
    return r


def check_partners(data):
    r = Result("partners", "appliances that hand flows back get their bypass; the mirror group's tool gets its copies")
    soak_partners.judge(data, r)
    return r


SYNC_FAULTS = {"mgmt_down", "sync_congest", "gw_term", "gw_kill", "gw_restart"}


def check_agree(data):
    r = Result("agree", "the gateways agree on each flow's appliance, but for a refresh interval after a sync fault")
    idle = data.schedule.get("idle_timeout_s", 60)
    limit = idle / 3 + 15  # a peer's copy is refreshed every third of the idle timeout while the flow has packets
    rounds = [rd for rd in data.rounds if "gws" in rd]
    if not rounds:
        r.judged = False
        r.note("not judged: no gateway's view of the flows was recorded (a run before this check)")
        return r
    open_ep, episodes = {}, []
    for i, rd in enumerate(rounds):
        views = {gw: v for gw, v in rd["gws"].items() if "error" not in v}
        keys = set().union(*[set(v) for v in views.values()]) if views else set()
        diverged = set()
        for key in keys:
            apps = {v[key] for v in views.values() if key in v and v[key] != "?"}
            if len(apps) > 1:
                diverged.add(key)
                if key not in open_ep:
                    open_ep[key] = [rd["t0"], rd["t1"], {g: v.get(key) for g, v in views.items()}]
                else:
                    open_ep[key][1] = rd["t1"]
        for key in list(open_ep):
            if key not in diverged:
                episodes.append((key, *open_ep.pop(key)))
    episodes += [(k, *v) for k, v in open_ep.items()]
    worst = 0.0
    # Refreshes need packets: after the traffic, nothing heals a copy (soak seed 3).
    traffic_end = data.run.get("traffic_s")
    for key, a, b, seen in episodes:
        if traffic_end is not None:
            b = min(b, float(traffic_end))
        faults = [e for e in data.events if e["kind"] in SYNC_FAULTS and window(e)[0] <= b and a <= window(e)[1]]
        since = max([a] + [min(e["end"], b) for e in faults])
        worst = max(worst, b - since)
        if b - since > limit:
            r.fail(f"flow {key}: the gateways held it on different appliances from {a:.0f} to {b:.0f} s "
                   f"({', '.join(f'gw{g} {x}' for g, x in sorted(seen.items()))}), {b - since:.0f} s after the "
                   f"last sync fault ended (a refresh should have healed it within {limit:.0f} s)")
    r.note(f"{len(rounds)} rounds of every gateway's entries for the long-lived flows; {len(episodes)} times "
           f"the gateways disagreed on a flow's appliance; longest after the sync was whole again "
           f"{worst:.0f} s (allowed {limit:.0f} s: a third of the idle timeout, and 15 s)")
    return r


def check_losses(data):
    r = Result("losses", "every failed connection or lost datagram falls in a fault that disrupts forwarding")
    fails = [x for x in data.traffic if x.get("ev") == "fail"]
    ticks = [x for x in data.traffic if x.get("ev") == "tick"]
    done = next((x for x in data.traffic if x.get("ev") == "done"), {})
    if not done and data.finished:
        r.judged = False
        r.note("not judged: the traffic client wrote no totals (it died or was killed)")
    if done:
        r.note(f"short connections: {done.get('short_ok', 0)} ok, {done.get('short_fail', 0)} failed; UDP "
               f"{done.get('udp_received', 0)}/{done.get('udp_sent', 0)} echoed; ICMP "
               f"{done.get('ping_received', 0)}/{done.get('ping_sent', 0)}")
    if ticks:
        secs = max(1, len(ticks))
        rate = sum(t.get("short_started", 0) for t in ticks) / secs
        r.note(f"new connections: {rate:.0f}/s on average over {secs} s")
    by_kind = {}
    unexplained = []
    tl = appliance_timeline(data)
    for f in fails:
        if f["what"] == "udp":
            # A UDP flow's path is known: the gateways the router sent it
            # through at a stop (affected), the appliance it was on.
            apps = appliance_at(tl, f"17:{f['sport']}", f["t"])
            ex = [e for e in explaining(data, f["t"], DISRUPTS)
                  if e["kind"] == "frames" or (e["kind"] in MOVES and e["target"] in apps)
                  or f["sport"] in e.get("affected", {}).get("udp", [])]
        else:
            ex = explaining(data, f["t"], DISRUPTS)
        if ex:
            k = ex[0]["kind"]
            by_kind[k] = by_kind.get(k, 0) + 1
        else:
            unexplained.append(f)
    if by_kind:
        r.note("explained: " + ", ".join(f"{n} during {k}" for k, n in sorted(by_kind.items())))
    for f in unexplained[:20]:
        r.fail(f"{f['what']} at {f['t']:.1f} s ({f.get('reason')}, port {f.get('sport')}): no disrupting fault then")
    if len(unexplained) > 20:
        r.fail(f"... and {len(unexplained) - 20} more")
    per_sec = sum(t.get("short_fail", 0) + t.get("udp_lost", 0) + t.get("ping_lost", 0) for t in ticks)
    if per_sec > len(fails) + 50:
        r.note(f"{per_sec - len(fails)} failures were counted but not logged one by one (over 200 a second)")
    return r


# Replies from the appliance a flow left. Beyond the windows, a peer's record
# that moves a flow here explains them: a copy this gateway created itself
# while it missed a peer's record (a sync cut; a stop or a restart anywhere)
# is settled, or a missed move healed, by the peer's next refresh of the flow,
# up to a third of the idle timeout later, and what the appliance it left
# still had in flight comes back to a flow that moved (docs/fleet.md).
SETTLED = {"drop_return_after_move", "drop_return_wrong_appliance", "drop_return_cookie_mismatch"}
SYNC_CUTS = {"mgmt_down", "sync_congest", "gw_term", "gw_kill", "gw_restart"}


def settled(data, gw, t):
    """A peer's record moved a flow on gw in the sample of t or the one
    before, within a refresh interval and 15 s after a sync cut or stop ended."""
    heal = data.schedule.get("idle_timeout_s", 60) / 3 + 15
    rows = data.samples.get(gw, [])
    moved = any(t - 1.5 <= tm <= t for col in ("sync_moved", "sync_conflicts") for tm, _ in deltas(rows, col))
    return moved and any(e["kind"] in SYNC_CUTS and not e.get("outcome", "").startswith("skipped")
                         and e["start"] - BEFORE <= t <= e["end"] + heal for e in data.events)


def check_drops(data):
    r = Result("drops", "every drop counter that moved is explained by a fault of its class")
    cols = sorted({c for rows in data.samples.values() for row in rows[:1] for c in row if c.startswith("drop_")})
    if not_read(data, r, "drop_"):
        return r
    table = {}
    for gw, rows in sorted(data.samples.items()):
        for c in cols:
            for t, n in deltas(rows, c):
                ent = table.setdefault(c, {"total": 0, "by": {}, "bad": []})
                ent["total"] += n
                if c in BACKGROUND:
                    ent["by"]["background"] = ent["by"].get("background", 0) + n
                    continue
                ex = explaining(data, t, DROP_CAUSES.get(c, set()), gw=gw)
                if ex:
                    ent["by"][ex[0]["kind"]] = ent["by"].get(ex[0]["kind"], 0) + n
                elif c in SETTLED and settled(data, gw, t):
                    ent["by"]["a later settlement or heal"] = ent["by"].get("a later settlement or heal", 0) + n
                else:
                    ent["bad"].append((gw, t, n))
    for c, ent in sorted(table.items()):
        by = ", ".join(f"{k} {v}" for k, v in sorted(ent["by"].items()))
        r.note(f"{c}: {ent['total']:.0f}" + (f" ({by})" if by else ""))
        for gw, t, n in ent["bad"][:10]:
            r.fail(f"{c} +{n:.0f} on gw{gw} at {t:.0f} s: no fault of a class that causes it "
                   f"({', '.join(sorted(DROP_CAUSES.get(c, set()))) or 'none does'})")
        if len(ent["bad"]) > 10:
            r.fail(f"{c}: ... and {len(ent['bad']) - 10} more unexplained moves")
    for c, why in BACKGROUND.items():
        if c in table:
            r.note(f"background, {c}: {why}")
    if not table:
        r.note("no drop counter moved")
    return r


def check_sync(data):
    r = Result("sync", "the fleet sync's failure counters move only with junk sent to it")
    if not_read(data, r, "sync_"):
        return r
    for col, kinds in SYNC_CAUSES.items():
        total, bad = 0, []
        for gw, rows in sorted(data.samples.items()):
            for t, n in deltas(rows, col):
                total += n
                if not explaining(data, t, kinds, gw=gw):
                    bad.append((gw, t, n))
        if total:
            r.note(f"{col}: {total:.0f}")
        for gw, t, n in bad[:10]:
            r.fail(f"{col} +{n:.0f} on gw{gw} at {t:.0f} s with no {'/'.join(sorted(kinds)) or 'fault that explains it'}")
    sent = sum(max((row.get("sync_flows_sent") or 0) for row in rows) for rows in data.samples.values())
    r.note(f"flow records sent (largest count of each gateway's last process): {sent:.0f}")
    return r


def check_nexthops(data):
    r = Result("nexthops", "a gateway leaves the router's ECMP route only when stopped or its BIRD restarted")
    # The router's table, sampled with every gateway's row: the first gateway's rows.
    rows = next((data.samples[g] for g in gateways(data) if data.samples.get(g)), [])
    if not rows:
        r.judged = False
        r.note("not judged: no sample of the router's table")
        return r
    full = set(gateways(data))
    outs = 0
    for row in rows:
        hops = {int(c) for c in str(row.get("nexthops") or "").replace(".0", "") if c.isdigit()}
        for k in full - hops:
            outs += 1
            if not explaining(data, row["t"], GATEWAY_KINDS, gw=k):
                r.fail(f"gw{k} missing from the router's ECMP route at {row['t']:.0f} s with no stop or BIRD "
                       f"restart of it (a BFD or BGP flap)")
    r.note(f"{len(rows)} samples of the router's table 100; a gateway missing in {outs} (gateway, second) pairs")
    return r


def check_alive(data):
    r = Result("alive", "no gwlbd died unasked; every running one answered its API")
    for gw, a, b in sample_gaps(data):
        r.fail(f"gw{gw}: no sample at all" if a is None else
               f"gw{gw}: no sample from {a:.0f} to {b:.0f} s (at most {MAX_GAP:.0f} s between two)")
    worst = (0, None, None)
    for gw, rows in sorted(data.samples.items()):
        for row in rows:
            down_on_purpose = explaining(data, row["t"], {"gw_term", "gw_kill", "gw_restart"}, gw=gw)
            if row.get("pid") is None and not down_on_purpose:
                r.fail(f"gw{gw}: no gwlbd process at {row['t']:.0f} s and no stop asked")
            elif row.get("pid") is not None and row.get("up") != 1 and not down_on_purpose:
                r.fail(f"gw{gw}: gwlbd (pid {row['pid']:.0f}) did not answer its API within 2 s at {row['t']:.0f} s")
            ms = row.get("api_ms") or 0
            if ms > worst[0]:
                worst = (ms, gw, row["t"])
    if worst[1]:
        r.note(f"longest API answer (a status call: the control thread's longest stall seen): {worst[0]:.0f} ms "
               f"(gw{worst[1]} at {worst[2]:.0f} s)")
    gaps = [(row.get("loop_gap_ms") or 0, gw, row["t"]) for gw, rows in data.samples.items() for row in rows]
    if gaps:
        g = max(gaps)
        r.note(f"longest worker loop gap (recent_max_loop_gap): {g[0]:.1f} ms (gw{g[1]} at {g[2]:.0f} s)")
    return r


def check_events(data):
    r = Result("events", "every event ran and did what it should")
    by = {}
    for e in data.events:
        k = e["kind"]
        by.setdefault(k, [0, 0])
        if e.get("outcome", "").startswith("skipped"):
            by[k][1] += 1
            continue
        by[k][0] += 1
        if e.get("outcome") == "running":  # a run in progress (a finished run has none left)
            continue
        if e.get("outcome") != "ok":
            r.fail(f"event {e['id']} {k} {e['target']} at {e['start']:.1f} s: {e['outcome']}")
    r.note("run (skipped): " + ", ".join(f"{k} {n}" + (f" ({s})" if s else "") for k, (n, s) in sorted(by.items())))
    planned = len(data.schedule.get("events", []))
    if planned and len(data.events) < planned and data.finished:
        r.fail(f"{planned - len(data.events)} planned events never ran")
    warm = [e for e in data.events if isinstance(e.get("warm_start"), dict)]
    cold = [e for e in warm if e["warm_start"].get("state") != "done"]
    for e in cold:
        cut = [x for x in data.events if x["kind"] in ("mgmt_down", "sync_congest")
               and window(x)[0] <= e["end"] and e["start"] <= window(x)[1]]
        if cut:
            r.note(f"event {e['id']}: gw{e['target'][2:]} started without a warm start "
                   f"({e['warm_start'].get('state')}) while the sync was cut ({cut[0]['kind']} on {cut[0]['target']})")
        else:
            r.fail(f"event {e['id']}: gw{e['target'][2:]}'s warm start ended {e['warm_start'].get('state')} "
                   f"with the sync intact")
    if warm:
        got = [e["warm_start"].get("flows_received") or 0 for e in warm if e not in cold]
        r.note(f"{len(warm)} restarts: {len(warm) - len(cold)} warm starts done"
               + (f" ({min(got)}-{max(got)} flows from a peer)" if got else "")
               + f", {len(cold)} without")
    backs = [e["route_back_s"] for e in data.events if e.get("route_back_s") is not None and e["kind"] != "bird_restart"]
    if backs:
        r.note(f"stopped gateways back in the router's route {min(backs):.1f}-{max(backs):.1f} s after their start")
    gone = [e["route_gone_s"] for e in data.events if e["kind"] == "gw_kill" and e.get("route_gone_s") is not None]
    if gone:
        r.note(f"SIGKILL to route gone at the router (BFD): {min(gone):.2f}-{max(gone):.2f} s")
    return r


def check_leaks(data, half=None):
    r = Result("leaks", "second half: RSS grows < 1 %; fds, threads, server ids and live snapshots unchanged")
    if not data.finished:
        r.judged = False
        r.note("not judged: the run is still going")
        return r
    half = half if half is not None else data.run.get("total_s", 0) / 2
    end = data.run.get("total_s", 0)
    judged = 0
    for gw, rows in sorted(data.samples.items()):
        for pid, inst in instances(rows).items():
            span = [x for x in inst if x["t"] >= max(half, inst[0]["t"] + 30)]
            if len(span) < 20 or span[-1]["t"] - span[0]["t"] < (end - half) / 2:
                continue
            judged += 1
            a = statistics.median(x["rss_kb"] for x in span[:10])
            b = statistics.median(x["rss_kb"] for x in span[-10:])
            growth = (b - a) / a
            line = (f"gw{gw} (pid {pid:.0f}), {span[0]['t']:.0f}-{span[-1]['t']:.0f} s: RSS {a / 1024:.1f} -> "
                    f"{b / 1024:.1f} MiB ({growth * 100:+.2f} %)")
            parts = []
            for col, what in (("rss_anon_kb", "heap and stacks"), ("rss_shmem_kb", "EAL memory")):
                if all(x.get(col) is not None for x in span[:10] + span[-10:]):
                    pa = statistics.median(x[col] for x in span[:10])
                    pb = statistics.median(x[col] for x in span[-10:])
                    parts.append(f"{what} {pb - pa:+.0f} KiB")
            if parts:
                line += f" ({', '.join(parts)})"
            if growth >= RSS_GROWTH_MAX:
                r.fail(line + " — grows")
            for col in ("fds", "threads", "server_ids", "snaps_live"):
                ok = lambda x: col != "fds" or not any(e["kind"] == "bird_restart" and e["target"] == f"gw{gw}" and window(e)[0] <= x["t"] <= window(e)[1] for e in data.events)  # noqa: E501,E731
                first = [x[col] for x in span if x["t"] <= span[0]["t"] + 10 and x.get(col) is not None and ok(x)]
                last = [x[col] for x in span if x["t"] >= span[-1]["t"] - 10 and x.get(col) is not None and ok(x)]
                if not first or not last: continue  # noqa: E701
                v0, v1 = min(first), min(last)
                line += f"; {col} {v0:.0f} -> {v1:.0f}"
                if v1 != v0:
                    r.fail(f"gw{gw} (pid {pid:.0f}): {col} {v0:.0f} at {span[0]['t']:.0f} s, {v1:.0f} at the end "
                           f"(the least of the first and last 10 s)")
            r.note(line)
    if not judged:
        r.judged = False
        r.note("not judged: no gwlbd process lived through half of the second half")
    return r


def check_idle(data):
    r = Result("idle", "after traffic and the idle timeout, every flow table is back at its idle level")
    if not data.finished:
        r.judged = False
        r.note("not judged: the run is still going")
        return r
    for gw in gateways(data):
        up = [x for x in data.samples.get(gw, []) if x.get("up") == 1 and x.get("flows") is not None]
        if not up:
            r.fail(f"gw{gw}: no sample")
            continue
        before = [x["flows"] for x in up if x["t"] < 0] or [up[0]["flows"]]
        base = max(before)
        peak = max(x["flows"] for x in up)
        last = up[-3:]
        endv = max(x["flows"] for x in last)
        frag = max((x.get("frag_entries") or 0) for x in up[-10:])
        line = f"gw{gw}: {base:.0f} flows before traffic, peak {peak:.0f}, {endv:.0f} at the end ({last[-1]['t']:.0f} s)"
        if endv > base or frag:
            left = ((data.flows_left or {}).get("gws") or {}).get(str(gw))
            what = "; left: " + ", ".join(
                f"{x.get('proto')} {x.get('src')}:{x.get('sport')} > {x.get('dst')}:{x.get('dport')} on "
                f"{x.get('appliance')} ({x.get('packets')} packets, idle {x.get('idle_s', 0):.0f} s)"
                for x in left[:5]) if isinstance(left, list) and left else ""
            r.fail(line + (f", {frag:.0f} fragment entries" if frag else "") + " — not back to idle" + what)
        else:
            r.note(line)
    return r


CHECKS = [check_streams, check_resets, check_appliance, check_classes, check_partners, check_agree, check_losses, check_drops, check_sync, check_nexthops, check_alive,
          check_events, check_leaks, check_idle]


def check_all(data):
    results = [c(data) for c in CHECKS]
    for r in results:
        # A finished run has all its evidence: an invariant it could not judge
        # proved nothing, and the run must not pass on it.
        if data.finished and not r.judged:
            r.fail("not judged on a finished run: " + "; ".join(x for x in r.evidence if x.startswith("not judged")))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    data = Data.load(a.dir)
    results = check_all(data)
    if not a.no_plots:
        try:
            import soak_plot
            soak_plot.plot_all(data, a.dir)
        except ImportError as e:
            print(f"soak_check: no plots ({e})")
    import soak_report
    soak_report.report(data, results, os.path.join(a.dir, "report.md"))
    fig = soak_report.figures(data, results)
    json.dump(fig, open(os.path.join(a.dir, "summary.json"), "w"), indent=1)
    for x in results:
        st = "PASS" if x.ok and x.judged else ("FAIL" if not x.ok else "not judged")
        print(f"{st:10} {x.name}: {x.title}")
        for line in x.failures[:5]:
            print(f"           {line}")
    print(f"events {fig['events_total']}, stream connections {fig['streams']} ({fig['streams_intact']} intact, "
          f"{fig['streams_reset']} reset, {fig['reconnects']} reconnected), "
          f"{(fig['bytes_verified'] or 0) / 1e6:.0f} MB verified; report {os.path.join(a.dir, 'report.md')}")
    return 0 if all(x.ok for x in results) else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
