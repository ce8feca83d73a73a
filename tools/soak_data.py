"""The soak's run as tools/soak_check.py reads it (docs/testing.md "Soak"):
DIR/run.json, events.jsonl, samples.csv, traffic.jsonl, appliance_flows.jsonl
and schedule.json, times in seconds from traffic start; and what the samples
cover: every gateway the run names must have a sample at least every
MAX_GAP seconds from the traffic's start to the run's end, or nothing the
samples say can be trusted; and what the invariants read from the samples
(a counter's increases per process, the processes, counters never read).
"""
import csv
import json
import os

MAX_GAP = 5.0  # s between two samples of one gateway (the sampler takes one a second)
LAB_GATEWAYS = (1, 2, 3)  # a run.json from before it named its gateways: the lab's three


class Data:
    """A run's files, times in seconds from traffic start."""

    def __init__(self, run=None, events=None, samples=None, traffic=None, rounds=None, schedule=None):
        self.run = run or {}
        self.events = events or []
        self.samples = samples or {}   # gw -> [row dict], numbers as float where numeric
        self.traffic = traffic or []
        self.rounds = rounds or []
        self.schedule = schedule or {"events": []}
        self.flows_left = None         # flows_left.json: the tables at the run's end, if written

    @property
    def finished(self):
        return "t_end" in self.run

    @classmethod
    def load(cls, d):
        def jl(name):
            p = os.path.join(d, name)
            if not os.path.exists(p):
                return []
            out = []
            for line in open(p):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line being written
            return out
        run = json.load(open(os.path.join(d, "run.json")))
        t0 = run["t0"]
        traffic = []
        for r in jl("traffic.jsonl"):
            for k in ("t", "t_open", "t_close", "stall_at", "first_rx", "t_break"):
                if r.get(k) is not None:
                    r[k] = r[k] - t0
            traffic.append(r)
        samples = {}
        p = os.path.join(d, "samples.csv")
        if os.path.exists(p):
            for row in csv.DictReader(open(p)):
                samples.setdefault(int(row["gw"]), []).append({k: _num(v) for k, v in row.items()})
        sched = json.load(open(os.path.join(d, "schedule.json"))) if os.path.exists(
            os.path.join(d, "schedule.json")) else {"events": []}
        # An event is logged when it starts (outcome "running") and again when
        # it ends: the last line wins. One still running has no end yet: its
        # window stays open (a run in progress) or it never ended (a failure).
        events = {}
        for e in jl("events.jsonl"):
            events[e["id"]] = e
        for e in events.values():
            if e.get("outcome") == "running":
                e["end"] = float("inf") if "t_end" not in run else e["start"]
                if "t_end" in run:
                    e["outcome"] = "error: never ended (the driver stopped while it ran)"
        data = cls(run, sorted(events.values(), key=lambda e: e["start"]), samples, traffic,
                   jl("appliance_flows.jsonl"), sched)
        if os.path.exists(os.path.join(d, "flows_left.json")):
            data.flows_left = json.load(open(os.path.join(d, "flows_left.json")))
        return data


def _num(v):
    if v is None or v == "":
        return None
    try:
        return float(v)
    except ValueError:
        return v


def gateways(data):
    """The gateways the run had (run.json "gateways")."""
    return [int(g) for g in data.run.get("gateways", LAB_GATEWAYS)]


def sample_gaps(data):
    """[(gw, from, to)]: stretches longer than MAX_GAP with no sample of a
    gateway of the run, from the traffic's start (0) to the run's end (its
    last sample while it goes on); from None: no sample at all."""
    times = {gw: sorted(row["t"] for row in data.samples.get(gw, [])) for gw in gateways(data)}
    last = [ts[-1] for ts in times.values() if ts]
    end = data.run.get("total_s", 0) if data.finished else max(last, default=0)
    out = []
    for gw, ts in sorted(times.items()):
        if not ts:
            out.append((gw, None, None))
            continue
        edges = [0.0] + [t for t in ts if 0 < t < end] + [end]
        out += [(gw, a, b) for a, b in zip(edges, edges[1:]) if b - a > MAX_GAP]
    return out


def deltas(rows, col):
    """[(t, increase)] of a counter between consecutive samples of one process."""
    out = []
    prev = None
    for row in rows:
        if row.get("up") != 1 or row.get(col) is None:
            prev = None if row.get("pid") is None else prev
            continue
        if prev is not None and prev["pid"] == row["pid"] and row[col] > prev[col]:
            out.append((row["t"], row[col] - prev[col]))
        prev = row
    return out


def instances(rows):
    """{pid: [rows]} of one gateway's samples with a process that answered."""
    out = {}
    for row in rows:
        if row.get("up") == 1 and row.get("pid") is not None:
            out.setdefault(row["pid"], []).append(row)
    return out


def not_read(data, r, prefix):
    """Marks r not judged when a gateway of the run never answered with its
    counters named prefix* (they were never read); True then."""
    unread = [gw for gw in gateways(data) if not any(
        row.get("up") == 1 and any(v is not None for c, v in row.items() if c.startswith(prefix))
        for row in data.samples.get(gw, []))]
    if unread:
        r.judged = False
        r.note(f"not judged: {', '.join(f'gw{g}' for g in unread)} never answered with its counters")
    return bool(unread)


def path_gateways(data, key, t0, t1):
    """The gateways the router sent flow `key` through (either direction) in
    the rounds ending in [t0, t1]; None when no round recorded paths."""
    rounds = [rd for rd in data.rounds if "paths" in rd and t0 <= rd["t1"] <= t1]
    if not rounds:
        return None
    return {g for rd in rounds for g in rd["paths"].get(key, []) if g}


def carriers(data, key, t0, t1):
    """The gateways whose own entry for flow `key` forwarded packets in the
    rounds ending in [t0, t1] (its packet count rose since the round before,
    or a new entry, after a restart, has some): what the gateways did, where
    the sampled path (`ip route get`) is only what the router's hash of the
    5-tuple would do.
    None when no round recorded the gateways' entries."""
    out, seen, last = set(), False, {}
    for rd in data.rounds:
        ent = rd.get("gw_entries")
        if ent is None:
            continue
        for g, flows in ent.items():
            if not isinstance(flows, dict) or "error" in flows:
                continue
            now = flows.get(key)
            n = now[0] if now else 0
            if t0 <= rd["t1"] <= t1:
                seen = True
                if n and n != last.get(g):  # more packets, or a new entry (a restart) with some
                    out.add(int(g))
            last[g] = n
    return out if seen else None
