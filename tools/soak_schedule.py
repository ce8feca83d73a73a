#!/usr/bin/python3
"""The soak's fault schedule (scripts/soak.sh, docs/testing.md "Soak"): made
from a seed alone, so a seed names one schedule and `--print` shows it before
anything runs; a schedule file replays it exactly (soak.sh --schedule FILE).

  soak_schedule.py --seed S --minutes N [--json FILE]   print (and write) the schedule

Events run on five lanes, one event at a time per lane and the lanes at once,
so faults of different kinds overlap (a gateway killed during a drain during a
reload): appliance (health fail, drain, weight, remove), gateway (SIGTERM,
SIGKILL, restart, BIRD restart), config (valid and invalid reloads), network
(a gateway's management link, which carries the fleet sync: the sync traffic
congested by a slow queue, delay and tail drops, or the link down) and hostile
(malformed frames, API floods, sync junk). Per lane only one event at a time,
so at most one appliance is out of service and at most one gateway down;
gateway 1 is never stopped (the run's long-lived witness for the leak checks).
"""
import argparse
import json
import random
import sys

QUIET_S = 75        # the tail with no traffic: flow idle timeout (60 s) + sweep
WARMUP_S = 10       # traffic only, before the first event (the baseline)
EVENTS_END_S = 12   # no event runs in the last seconds of traffic (streams finish clean)
IDLE_TIMEOUT_S = 60  # tcp_idle_timeout and other_idle_timeout set for the run

APPS = ["app1", "app2", "app3", "app4"]  # tenant A's two, tenant B's two (lab.sh --listeners 2)
GATEWAYS = ["gw1", "gw2", "gw3"]
STOPPABLE = ["gw2", "gw3"]  # gw1 runs the whole soak

# lane -> [(kind, weight)]
LANES = {
    "appliance": [("app_fail", 3), ("drain", 3), ("weight", 2), ("remove", 2)],
    "gateway": [("gw_term", 2), ("gw_kill", 2), ("gw_restart", 2), ("bird_restart", 2)],
    "config": [("reload_valid", 3), ("reload_invalid", 2)],
    "network": [("sync_congest", 3), ("mgmt_down", 2)],
    "hostile": [("frames", 3), ("api_flood", 2), ("sync_junk", 1)],
}
# lane -> (shortest, longest) gap between one event's end and the next's start (s)
# The gateway lane's gaps include a stopped gateway's way back (grace period,
# start, warm start, route at the router: about 8 s here).
GAPS = {"appliance": (1, 5), "gateway": (8, 16), "config": (3, 12), "network": (2, 10), "hostile": (3, 15)}
KINDS = {k: lane for lane, ks in LANES.items() for k, _ in ks}


def phases(minutes):
    """(traffic seconds, total seconds) of a run of MINUTES."""
    total = int(round(minutes * 60))
    return total - QUIET_S, total


def _event(rng, kind):
    """One event's target, duration (s) and parameters."""
    if kind == "app_fail":
        return rng.choice(APPS), rng.uniform(4, 12), {}
    if kind == "drain":
        dur = rng.uniform(4, 12)
        # Half the drains outlast their timeout (the flows then move), half not.
        timeout = rng.choice([int(dur) + 30, max(2, int(dur) - 3)])
        return rng.choice(APPS), dur, {"timeout": timeout}
    if kind == "weight":
        return rng.choice(APPS), rng.uniform(4, 12), {"weight": rng.choice([0, 1, 10, 50, 200, 1000])}
    if kind == "remove":
        return rng.choice(APPS), rng.uniform(4, 12), {}
    if kind in ("gw_term", "gw_kill"):
        return rng.choice(STOPPABLE), rng.uniform(1, 8), {}
    if kind == "gw_restart":
        return rng.choice(STOPPABLE), 0.0, {}
    if kind == "bird_restart":
        return rng.choice(GATEWAYS), rng.uniform(0, 3), {}
    if kind == "reload_valid":
        return "all", 0.0, {}
    if kind == "reload_invalid":
        return rng.choice(GATEWAYS), 0.0, {"error": rng.choice(["unknown_key", "bad_value", "yaml", "no_servers"])}
    if kind == "sync_congest":
        return rng.choice(GATEWAYS), rng.uniform(5, 20), {"rate_kbit": rng.choice([16, 32, 64, 128]),
                                                           "queue": rng.choice([5, 10, 30])}
    if kind == "mgmt_down":
        return rng.choice(GATEWAYS), rng.uniform(2, 8), {}
    if kind == "frames":
        return rng.choice(GATEWAYS), 0.0, {"count": rng.choice([2000, 5000, 10000]), "seed": rng.randrange(1 << 30)}
    if kind == "api_flood":
        return rng.choice(GATEWAYS), 0.0, {"connections": rng.choice([40, 64, 100]),
                                           "requests": rng.choice([500, 1000, 2000])}
    if kind == "sync_junk":
        return rng.choice(GATEWAYS), 0.0, {"datagrams": rng.choice([200, 500, 1000]), "seed": rng.randrange(1 << 30)}
    raise ValueError(kind)


def make_schedule(seed, minutes):
    traffic_s, total_s = phases(minutes)
    if traffic_s < WARMUP_S + EVENTS_END_S + 20:
        raise ValueError(f"{minutes} minutes leave no time for events (at least {(QUIET_S + WARMUP_S + EVENTS_END_S + 20) / 60:.1f})")
    end = traffic_s - EVENTS_END_S
    events = []
    for lane, kinds in LANES.items():
        # Each lane its own generator, seeded from the run's seed and its name:
        # a change to one lane leaves the others' events where they were.
        rng = random.Random(f"{seed}/{lane}")
        t = WARMUP_S + rng.uniform(0, GAPS[lane][1])
        names, weights = zip(*kinds)
        while True:
            kind = rng.choices(names, weights)[0]
            target, dur, params = _event(rng, kind)
            if t + dur > end:
                break
            events.append({"t": round(t, 2), "lane": lane, "kind": kind, "target": target,
                           "dur": round(dur, 2), "params": params})
            t += dur + rng.uniform(*GAPS[lane])
    events.sort(key=lambda e: (e["t"], e["lane"]))
    for i, e in enumerate(events):
        e["id"] = i
    return {"seed": seed, "minutes": minutes, "traffic_s": traffic_s, "total_s": total_s,
            "quiet_s": QUIET_S, "warmup_s": WARMUP_S, "idle_timeout_s": IDLE_TIMEOUT_S, "events": events}


def describe(e):
    p = " ".join(f"{k}={v}" for k, v in e["params"].items() if k != "seed")
    dur = f"{e['dur']:5.1f}s" if e["dur"] else "     -"
    return f"{e['id']:4d} {e['t']:8.1f} {dur}  {e['lane']:<9} {e['kind']:<14} {e['target']:<5} {p}"


def print_schedule(s, out=sys.stdout):
    print(f"soak schedule: seed {s['seed']}, {s['minutes']} min: traffic {s['traffic_s']} s "
          f"(events from {s['warmup_s']} s), then {s['quiet_s']} s quiet; {len(s['events'])} events", file=out)
    print("  id   start s    dur  lane      kind           target params", file=out)
    for e in s["events"]:
        print(describe(e), file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--json", help="write the schedule here too")
    a = ap.parse_args()
    s = make_schedule(a.seed, a.minutes)
    print_schedule(s)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(s, f, indent=1)


if __name__ == "__main__":
    main()
