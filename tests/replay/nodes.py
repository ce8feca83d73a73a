#!/usr/bin/python3
"""gwlb-replay --node K/N: a fleet of N gateways behind a router's ECMP agrees on
every flow's appliance and cookie (issue 16 item 1, docs/fleet.md).

usage: nodes.py GWLB_REPLAY WORKDIR

Uses events.py's capture (long-lived TCP flows, both directions, cohorts that
start at 0 s, 5 s and 9 s) and, per scenario, replays it once as a single gateway
and once per node K = 1..N with --node K/N: each node is fed only the packets a
5-tuple hash (not symmetric, as ECMP) sends it, so most flows have their two
directions on different nodes, each node with its own flow table and its own
control core applying the same --events at the same capture times. Checks, from
the to-appliances.pcap files (decoded here with struct):

  - every input packet reached an appliance exactly once, on exactly one node;
  - at least a quarter of the flows had their directions on different nodes;
  - per flow, every node that saw it went through the same (appliance, cookie)
    states in the same order as the single gateway did: the same appliance and
    the same cookie before and after each event, whichever node it was.
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import events as ev  # noqa: E402

SECRET = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

# name: (N, failover_mode, [events])
SCENARIOS = {
    "failed-rebalance-2": (2, "rebalance", ["at: 4s, server: %s, health: unhealthy" % ev.S,
                                            "at: 8s, server: %s, health: healthy" % ev.S]),
    "removed-readded-3": (3, "rebalance", ["at: 4s, server: %s, remove: true" % ev.S,
                                           "at: 9s, server: %s, add: fw" % ev.S]),
    "no-rebalance-weight-4": (4, "no_rebalance", ["at: 3s, server: %s, health: unhealthy" % ev.S,
                                                  "at: 6s, server: %s, weight: 0" % ev.W]),
}


def cookie_of(b):
    """The flow cookie of an aws-format Geneve frame (option 0x0108/3 at offset 24)."""
    opt = 42 + 8 + 24
    assert b[opt:opt + 3] == b"\x01\x08\x03", "no cookie option where expected"
    return int.from_bytes(b[opt + 4:opt + 8], "big")


def replay(exe, workdir, name, cfg, evfile, node=None):
    out = os.path.join(workdir, name, "single" if node is None else "node%d-of-%d" % node)
    shutil.rmtree(out, ignore_errors=True)
    cmd = [exe, "--config", cfg, "--in", os.path.join(workdir, "flows.pcap"), "--out-dir", out,
           "--reflect", "--events", evfile]
    if node:
        cmd += ["--node", "%d/%d" % node]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout)
    if p.returncode != 0:
        raise SystemExit("%s: gwlb-replay exited %d:\n%s" % (name, p.returncode, p.stdout))
    seen = {}  # (flow, k) -> (appliance, cookie)
    dups = 0
    for b in ev.read_pcap(os.path.join(out, "to-appliances.pcap")):
        dst, ip = ev.inner_of_geneve(b)
        pid = ev.packet_id(ip)
        dups += pid in seen
        seen[pid] = (dst, cookie_of(b))
    return seen, dups


def states(seen, times, f):
    """Flow f's (appliance, cookie) states in packet order, repeats folded."""
    out, k = [], 0
    while (f, k) in times:
        s = seen.get((f, k))
        if s is not None and (not out or out[-1] != s):
            out.append(s)
        k += 1
    return out


def scenario(exe, workdir, times, name, n, mode, events):
    errors = []
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "config.yaml")
    text = ev.config_text("aws", mode, False)
    text += "fleet: { node_name: gw, secret: %s }\n" % SECRET
    open(cfg, "w").write(text)
    evfile = os.path.join(d, "events.yaml")
    open(evfile, "w").write("".join("- { %s }\n" % e for e in events))

    single, dups = replay(exe, workdir, name, cfg, evfile)
    if dups or len(single) != len(times):
        errors.append("single gateway: %d of %d packets reached an appliance, %d twice"
                      % (len(single), len(times), dups))
    nodes = [replay(exe, workdir, name, cfg, evfile, (k, n)) for k in range(1, n + 1)]

    owner = {}  # (flow, k) -> node index
    for i, (seen, dups) in enumerate(nodes):
        if dups:
            errors.append("node %d: %d packets reached an appliance twice" % (i + 1, dups))
        for pid in seen:
            if pid in owner:
                errors.append("packet %s reached an appliance on nodes %d and %d"
                              % (pid, owner[pid] + 1, i + 1))
            owner[pid] = i
    missing = [pid for pid in times if pid not in owner]
    if missing:
        errors.append("%d input packets reached no appliance on any node (e.g. %s)"
                      % (len(missing), missing[:3]))

    flows = sorted({f for f, _ in times})
    split = 0
    disagree = []
    for f in flows:
        by_dir = [{owner.get((f, k)) for k in range(d_, 10**6, 2) if (f, k) in times}
                  for d_ in (0, 1)]
        split += by_dir[0] != by_dir[1]
        want = states(single, times, f)
        for i, (seen, _) in enumerate(nodes):
            got = states(seen, times, f)
            if got and got != want:
                disagree.append("flow %d: node %d went %s, a single gateway %s" % (f, i + 1, got, want))
    if n > 1 and split < len(flows) // 4:
        errors.append("only %d of %d flows had their directions on different nodes" % (split, len(flows)))
    if disagree:
        errors.append("%d flow/node disagreements, e.g.:\n    %s" % (len(disagree), "\n    ".join(disagree[:5])))
    moved = sum(len(states(single, times, f)) > 1 for f in flows)
    print("%s: %d nodes, %d flows (%d with directions on two nodes, %d changed appliance), %s"
          % (name, n, len(flows), split, moved, "ok" if not errors else "FAILED"))
    for e in errors:
        print("  " + e)
    return not errors


def main():
    exe, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    times = ev.write_capture(os.path.join(workdir, "flows.pcap"))
    t0 = time.monotonic()
    ok = True
    for name, (n, mode, events) in SCENARIOS.items():
        ok = scenario(exe, workdir, times, name, n, mode, events) and ok
    print("%s in %.1f s" % ("all agree" if ok else "FAILED", time.monotonic() - t0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
