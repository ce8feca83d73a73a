#!/usr/bin/python3
"""gwlb-replay --events decides as gwlbd's control API does (docs/replay.md "Refused changes").

usage: events_guard.py GWLB_REPLAY WORKDIR [--doc docs/replay.md]

Replays events.py's capture (80 long-lived TCP flows, four appliances S, A, B, C
in group fw) with --reflect and, per case, an events file:

  refused   A, B and C unhealthy at 1 s, then at 4 s a drain of S and at 5 s a
            remove of S and a weight 0 on S: each would leave fw with no
            appliance in service, which gwlbd refuses without --force. Each
            must be refused (applied false, `refused` worded as gwlbd's
            refusal), nothing changes: every flow stays on S, the new flows of
            5 s and 9 s go to S, no drain or removal is counted.
  forced    the same drain with force: true: applied, with gwlbd's "forced:"
            warning; S drains (drains_started 1) and takes no new flow.
  reload    S removed at 4 s, then at 8 s a reload of the file the replay
            started from (it still lists S): as gwlbd's reload, the file wins
            and S is back (new flows of 9 s reach it), and the reload reports
            the runtime change it reverted, as `gwlbctl reload` prints it.

In every case returned.pcap and to-appliances.pcap are in time order. With
--doc, the two blocks docs/replay.md quotes from these runs are what they printed.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import events as ev  # noqa: E402

S, A, B, C = ev.APPS
SEC = ev.SEC


def replay(exe, workdir, name, events):
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "config.yaml")
    # Health checks configured (not probed by the replay): gwlbd only ever has
    # unhealthy appliances in a group that is checked, and judges so.
    text = ev.config_text("aws", "rebalance", True).replace(
        "    servers:\n", "    health_check: { protocol: tcp, port: 80, interval: 2s, timeout: 1s }\n    servers:\n", 1)
    open(cfg, "w").write(text)
    evf = os.path.join(d, "events.yaml")
    open(evf, "w").write("".join("- { %s }\n" % e for e in events))
    out = os.path.join(d, "out")
    cmd = [exe, "--config", cfg, "--in", os.path.join(workdir, "flows.pcap"), "--out-dir", out,
           "--reflect", "--workers", "2", "--quiet", "--events", evf]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    open(os.path.join(d, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    if p.returncode != 0:
        raise SystemExit("%s: gwlb-replay exited %d:\n%s%s" % (name, p.returncode, p.stdout, p.stderr))
    where = {}
    for b in ev.read_pcap(os.path.join(out, "to-appliances.pcap")):
        dst, ip = ev.inner_of_geneve(b)
        where[ev.packet_id(ip)] = dst
    return p.stdout, json.load(open(os.path.join(out, "summary.json"))), where, out, cfg


def time_ordered(chk, out):
    for name in ("returned.pcap", "to-appliances.pcap"):
        ts = ev.read_pcap_times(os.path.join(out, name))
        bad = next((i for i in range(1, len(ts)) if ts[i] < ts[i - 1]), None)
        chk(bad is None, "%s is not in time order: frame %s at %s after one at %s" %
            (name, bad, ts[bad] if bad else None, ts[bad - 1] if bad else None))


def new_flows_on(where, times, cohort, addr):
    """Flows of `cohort` whose first packet went to addr."""
    return [f for f, c, _ in ev.flows() if c == cohort and where.get((f, 0)) == addr and (f, 0) in times]


GWLBD_REFUSAL = "refused: server group 'fw' would have no appliance in service (left: "


def case_refused(exe, workdir, times, stdouts):
    chk = ev.Check()
    events = ["at: 1s, server: %s, health: unhealthy" % a for a in (A, B, C)] + [
        "at: 4s, server: %s, drain: true" % S,
        "at: 5s, server: %s, remove: true" % S,
        "at: 5s, server: %s, weight: 0" % S]
    stdout, s, where, out, _ = replay(exe, workdir, "refused", events)
    stdouts.append(stdout)
    evs = s["events"]
    for i, what in ((3, "server.drain " + S), (4, "server.remove " + S), (5, "server.set %s weight 0" % S)):
        e = evs[i]
        chk(e["applied"] is False and (what + " " + GWLBD_REFUSAL) in e.get("refused", ""),
            "events[%d] (%s): applied %s, refused %r; gwlbd refuses it" % (i, what, e["applied"], e.get("refused")))
        line = "event %d at %s: %s %s: %s %s" % (i, "4 s" if i == 3 else "5 s", e["action"], S, what,
                                                 GWLBD_REFUSAL)
        chk(any(ln.startswith(line) for ln in stdout.splitlines()), "stdout has no line starting %r" % line)
    for i in range(3):
        chk(evs[i]["applied"] is True, "events[%d] (health) not applied" % i)
    lc = s["lifecycle"]
    chk(lc["drains_started"] == 0 and lc["removals"] == 0, "lifecycle %s: nothing may change" % lc)
    on_s = [f for f, c, _ in ev.flows() if c == "A" and where.get((f, 0)) == S]
    moved = [f for f in on_s for k in range(200) if (f, k) in where and where[(f, k)] != S]
    chk(len(on_s) >= 5 and not moved, "%d flows on S, %d packets of them elsewhere" % (len(on_s), len(moved)))
    for cohort in "BC":
        n = sum(1 for f, c, _ in ev.flows() if c == cohort)
        got = new_flows_on(where, times, cohort, S)
        chk(len(got) == n, "cohort %s: %d of %d new flows on S, the only appliance in service" % (cohort, len(got), n))
    phase = {x["address"]: x["phase"] for x in s["servers"]}
    chk(phase.get(S) == "active", "S ends %s, expected active" % phase.get(S))
    time_ordered(chk, out)
    return chk.errors


def case_forced(exe, workdir, times, stdouts):
    chk = ev.Check()
    events = ["at: 1s, server: %s, health: unhealthy" % a for a in (A, B, C)] + [
        "at: 4s, server: %s, drain: true, force: true" % S]
    stdout, s, where, out, _ = replay(exe, workdir, "forced", events)
    stdouts.append(stdout)
    e = s["events"][3]
    warn = "forced: server group 'fw' has no appliance in service (left: "
    chk(e["applied"] is True and "refused" not in e and e.get("force") is True and
        any(w.startswith(warn) for w in e.get("warnings", [])),
        "events[3]: %s; a forced drain applies with gwlbd's warning" % json.dumps(e)[:300])
    chk(("  warning: " + warn) in stdout, "stdout has no line '  warning: %s...'" % warn)
    chk(s["lifecycle"]["drains_started"] == 1, "lifecycle %s: drains_started must be 1" % s["lifecycle"])
    got = new_flows_on(where, times, "B", S)
    chk(not got, "%d new flows of 5 s went to the drained S" % len(got))
    time_ordered(chk, out)
    return chk.errors


def case_reload(exe, workdir, times, stdouts):
    chk = ev.Check()
    events = ["at: 4s, server: %s, remove: true" % S, "at: 8s, reload: config.yaml"]
    stdout, s, where, out, cfg = replay(exe, workdir, "reload", events)
    stdouts.append(stdout)
    e = s["events"][1]
    want = [{"group": "fw", "address": S, "change": "removed", "file_weight": 100, "after_reload": 100}]
    chk(e["applied"] is True and e.get("reverted") == want,
        "events[1] (reload) reverted %s, expected %s (gwlbd's reload reverts and lists it)" % (e.get("reverted"), want))
    for line in ("  reverted 1 runtime change the file does not carry:",
                 "    %s (group fw): removed at runtime, still in the file" % S):
        chk(line in stdout.splitlines(), "stdout has no line %r:\n%s" % (line, stdout))
    chk(not new_flows_on(where, times, "B", S), "a new flow of 5 s went to S, removed at 4 s")
    chk(new_flows_on(where, times, "C", S), "no new flow of 9 s went to S, back after the reload at 8 s")
    app = next((a for a in s["appliances"] if a["address"] == S), None)
    chk(app is not None and app.get("in_config") is True, "appliances entry of S: %s" % app)
    time_ordered(chk, out)
    return chk.errors


DOC_MARK = "<!-- checked by tests/replay/events_guard.py (replay test events-guard) -->"


def check_doc(doc, stdouts):
    """Each fenced block docs/replay.md quotes after DOC_MARK is lines one of
    the runs printed, in a row."""
    errors = []
    parts = open(doc).read().split(DOC_MARK)[1:]
    if len(parts) != 2:
        return ["%s: %d blocks marked %s, expected 2" % (doc, len(parts), DOC_MARK)]
    for part in parts:
        block = part.split("```", 2)[1].strip("\n").splitlines()
        found = False
        for out in stdouts:
            lines = out.splitlines()
            found = found or any(lines[i:i + len(block)] == block for i in range(len(lines)))
        if not found:
            errors.append("%s quotes lines no run printed:\n  %s" % (doc, "\n  ".join(block)))
    return errors


def main():
    args = sys.argv[1:]
    doc = None
    if "--doc" in args:
        i = args.index("--doc")
        doc = args[i + 1]
        del args[i:i + 2]
    exe, workdir = args[0], args[1]
    os.makedirs(workdir, exist_ok=True)
    times = ev.write_capture(os.path.join(workdir, "flows.pcap"))
    t0 = time.monotonic()
    ok = True
    stdouts = []
    for name, case in (("refused", case_refused), ("forced", case_forced), ("reload", case_reload)):
        errors = case(exe, workdir, times, stdouts)
        print("%-10s %s" % (name, "ok" if not errors else "FAIL"))
        for e in errors[:20]:
            print("    " + e)
        ok = ok and not errors
    if doc:
        errors = check_doc(doc, stdouts)
        print("%-10s %s" % ("doc", "ok" if not errors else "FAIL"))
        for e in errors:
            print("    " + e)
        ok = ok and not errors
    return ev.finish(ok, t0)


if __name__ == "__main__":
    sys.exit(main())
