#!/usr/bin/python3
"""gwlb-replay --events: slow start and flap dampening (docs/product-rules.md
"Slow start", "Flap dampening"), from the capture's new flows.

usage: shaping.py GWLB_REPLAY WORKDIR

A capture of 200 new TCP flows a second (one SYN each) over 14 s, four
appliances of weight 100, replayed with --reflect and an events file:

  slow-start   slow_start 10 s; 192.0.2.10 unhealthy at 0.5 s, healthy at 1 s:
               its share of the new flows ramps from 1/31 (steps k/10 against
               the others' 10/10) to 1/4 at 11 s
  dampening    health_check.dampening on (half_life 4 s, max_hold 30 s): four
               changes of 192.0.2.10 within 1.5 s hold it down until the
               penalty has decayed below reuse; no new flow reaches it meanwhile

Each run twice: the decisions (summary.json's service_changes) must be the same.
"""
import json
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from events import (SEC, APPS, CONFIG, GENEVE, Check, frame, write_pcap, read_pcap,  # noqa: E402
                    inner_of_geneve, packet_id)

S = APPS[0]
RATE, SPAN = 200, 14  # new flows a second, seconds


def client(f):
    return bytes([10, 1 + (f >> 8), f & 0xFF, 1])


def config(extra_group, health):
    servers = "\n".join("      - { address: %s }" % a for a in APPS)
    text = CONFIG.format(geneve=GENEVE["aws"], mode="no_rebalance", draining="false",
                         drain_timeout="3s", idle="350s", servers=servers)
    return text.replace("    servers:\n", extra_group + health + "    servers:\n", 1)


def run(exe, workdir, name, cfg, events):
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    open(os.path.join(d, "config.yaml"), "w").write(cfg)
    open(os.path.join(d, "events.yaml"), "w").write("".join("- { %s }\n" % e for e in events))
    cmd = [exe, "--config", os.path.join(d, "config.yaml"), "--in", os.path.join(workdir, "flows.pcap"),
           "--out-dir", os.path.join(d, "out"), "--reflect", "--events", os.path.join(d, "events.yaml")]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(os.path.join(d, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout)
    if p.returncode != 0:
        raise SystemExit("%s: gwlb-replay exited %d:\n%s" % (name, p.returncode, p.stdout))
    summary = json.load(open(os.path.join(d, "out", "summary.json")))
    where = {}
    for b in read_pcap(os.path.join(d, "out", "to-appliances.pcap")):
        dst, ip = inner_of_geneve(b)
        where[packet_id(ip)[0]] = dst
    return summary, where


def share(where, times, lo, hi):
    """S's share of the flows that start in [lo, hi) s, and how many started."""
    fl = [f for f, t in times.items() if lo * SEC <= t < hi * SEC]
    return sum(where.get(f) == S for f in fl) / len(fl), len(fl)


def main():
    exe, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    n = RATE * SPAN
    pkts = [(f * SEC // RATE, f, 0) for f in range(n)]
    times = {f: t for (f, _k), t in write_pcap(os.path.join(workdir, "flows.pcap"), pkts,
                                                lambda f, k: frame(f, k, client=client(f))).items()}
    chk = Check()
    hc = "    health_check: { protocol: tcp, port: 80%s }\n"

    # Slow start.
    cfg = config("    slow_start: 10s\n", hc % "")
    ev = ["at: 0.5s, server: %s, health: unhealthy" % S, "at: 1s, server: %s, health: healthy" % S]
    summary, where = run(exe, workdir, "slow-start", cfg, ev)
    again, _ = run(exe, workdir, "slow-start-again", cfg, ev)
    lines = summary.get("service_changes", [])
    chk(lines == again.get("service_changes"), "slow-start: the two runs decided alike")
    chk(lines and lines[0]["line"] == S + " slow start: 1/10 of its share of new flows, full after 10 s"
        and abs(lines[0]["at_s"] - 1.0) < 1e-6, "slow-start: the ramp begins at 1 s: %s" % lines)
    print("slow-start: S's share of new flows by second after it recovered at 1 s (expected k/(k+30)):")
    prev = -1.0
    for lo in range(1, 13):
        k = 10 if lo >= 11 else max(1, lo - 1)
        got, cnt = share(where, times, lo, lo + 1)
        want = k / (k + 30)
        print("  %2d-%2d s: %5.1f %% of %d (expected %4.1f %%)" % (lo, lo + 1, 100 * got, cnt, 100 * want))
        # 200 flows a second: a binomial's spread, about 3 standard deviations.
        sd = math.sqrt(want * (1 - want) / cnt)
        chk(abs(got - want) <= 3 * sd + 0.01, "slow-start: second %d share %.3f, expected %.3f" % (lo, got, want))
        prev = got
    got0, _ = share(where, times, 0, 0.5)
    chk(abs(got0 - 0.25) < 0.1, "slow-start: before the failure S had a quarter (%.3f)" % got0)

    # Flap dampening (and the slow start after its release).
    cfg = config("    slow_start: 2s\n", hc % ", dampening: { enabled: true, half_life: 4s, max_hold: 30s }")
    ev = ["at: %gs, server: %s, health: %s" % (t, S, h)
          for t, h in ((0.5, "unhealthy"), (1.0, "healthy"), (1.5, "unhealthy"), (2.0, "healthy"))]
    summary, where = run(exe, workdir, "dampening", cfg, ev)
    again, _ = run(exe, workdir, "dampening-again", cfg, ev)
    lines = summary.get("service_changes", [])
    chk(lines == again.get("service_changes"), "dampening: the two runs decided alike")
    for l in lines:
        print("  %.3f s: %s" % (l["at_s"], l["line"]))
    held = [l for l in lines if " dampened: 4 state changes" in l["line"]]
    over = [l for l in lines if " hold-down over" in l["line"]]
    chk(len(held) == 1 and abs(held[0]["at_s"] - 2.0) < 1e-6, "dampening: held down at 2 s: %s" % lines)
    # Penalty at 2 s: 1000 x (1 + 2^-1/8 + 2^-2/8 + 2^-3/8); held until it decays to 750.
    pen = sum(1000 * 2 ** (-i * 0.5 / 4) for i in range(4))
    release = 2.0 + 4 * math.log2(pen / 750)
    chk(len(over) == 1 and abs(over[0]["at_s"] - release) < 0.01,
        "dampening: released at %.3f s (expected %.3f): %s" % (over[0]["at_s"] if over else -1, release, over))
    during, cnt = share(where, times, 2.0, release)
    print("dampening: held %.3f s; S took %d of %d new flows meanwhile; then slow start" %
          (release - 2.0, round(during * cnt), cnt))
    chk(during == 0, "dampening: no new flow on S while held")
    after, _ = share(where, times, math.ceil(release) + 2, SPAN)
    chk(abs(after - 0.25) < 0.06, "dampening: a quarter again after the hold and the ramp (%.3f)" % after)

    for e in chk.errors:
        print("FAIL: " + e)
    print("PASS" if not chk.errors else "FAILED (%d)" % len(chk.errors))
    return 1 if chk.errors else 0


if __name__ == "__main__":
    sys.exit(main())
