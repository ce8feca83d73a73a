#!/usr/bin/env python3
"""Tables rendered from recorded quiet bench runs (bench/records/, written from
scripts/bench.sh's out/bench.json), and the check that docs/performance.md
quotes each as rendered: cycles per packet for each encapsulation format and
underlay family (pipeline_formats.json), the health checker's cost at
10,000 appliances (probe_fleet.json), and one whole scripts/bench.sh run
(bench_run.json): the headline figures (ratios to 5tswap, classes,
instructions, churn, warm start, probes) against their targets, and its
own formats and probes tables.

Usage: formats_doc.py render [formats|probes|run|run-formats|run-probes]   print a table
       formats_doc.py record OUT_BENCH_JSON COMMIT LOAD   write bench_run.json from a run
       formats_doc.py check SOURCE_ROOT          docs/performance.md holds every table,
                                                 docs/deploy.md the run's churn figure
"""
import datetime
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(HERE, "records", "pipeline_formats.json")
PROBES = os.path.join(HERE, "records", "probe_fleet.json")
RUN = os.path.join(HERE, "records", "bench_run.json")
# The sections of out/bench.json a whole-run record keeps (the others are
# quoted in their own sections of performance.md, with their own conditions).
RUN_SECTIONS = ("pipeline", "churn", "sync", "probe_fleet")
NAMES = {("geneve", "aws"): "Geneve aws", ("geneve", "ethernet"): "Geneve ethernet", ("vxlan", "aws"): "VXLAN"}


def name(c):
    fmt = NAMES[(c.get("encapsulation", "geneve"), c.get("geneve_format", "aws") if c.get("encapsulation", "geneve") == "geneve" else "aws")]
    return f"{fmt} over {'IPv6' if c.get('underlay') == 'ipv6' else 'IPv4'}"


def render(rec):
    tp = statistics.median(t["cycles_per_packet"] for t in rec["testpmd"] if t["mode"] == "5tswap")
    rows = [c for c in rec["cases"] if c["mode"] in ("established", "return") and c["flows"] == 1024
            and c["size"] == 64 and c["proto"] == "udp"
            and not c.get("hugepages") and not c.get("tx_offload") and not c.get("classes")]
    base = {c["mode"]: c for c in rows if name(c) == "Geneve aws over IPv4"}
    out = [f"| format and family | established: cycles (reps) | vs Geneve aws over IPv4 | return: cycles (reps) | vs Geneve aws over IPv4 |",
           "|---|---|---|---|---|"]
    order = sorted({name(c) for c in rows}, key=lambda n: (n != "Geneve aws over IPv4", "IPv6" in n, n))
    for n in order:
        cells = [n]
        for mode in ("established", "return"):
            c = next(c for c in rows if name(c) == n and c["mode"] == mode)
            cells.append(f"{c['cycles_per_packet']:.1f} ({c['spread'][0]:.1f}-{c['spread'][1]:.1f})")
            cells.append("-" if n == "Geneve aws over IPv4" else
                         f"{100 * (c['cycles_per_packet'] / base[mode]['cycles_per_packet'] - 1):+.1f} %")
        out.append("| " + " | ".join(cells) + " |")
    out.append(f"| testpmd 5tswap (median of {sum(t['mode'] == '5tswap' for t in rec['testpmd'])} runs) | {tp:.1f} | | | |")
    return "\n".join(out)


def probe_name(r):
    """A run's protocol, with +keep_alive when health_check.keep_alive was on."""
    return r["protocol"] + ("+keep_alive" if r.get("keep_alive") else "")


def render_probes(rec):
    p = rec["probe_fleet"]
    instr = {i["protocol"]: i["per_probe"] for i in p.get("instructions", [])}
    steady = any("steady_user_us_per_probe" in r for r in p["runs"])
    out = ["| protocol, appliances | probes/s | gwlbd (user) per probe | kernel (sys) per probe "
           "| user at 10,000 probes/s | instructions per probe | starts per 10 ms: min / median / max (ideal) |"
           + (" steady state: user / sys per probe (from) |" if steady else ""),
           "|---|---|---|---|---|---|---|" + ("---|" if steady else "")]
    for r in p["runs"]:
        a = r["arrivals_per_10ms"]
        ins = f"{instr[probe_name(r)]:,}" if probe_name(r) in instr else "-"
        row = (f"| {probe_name(r)}, {r['targets']:,} | {r['probes_per_s']:,.0f} | {r['user_us_per_probe']:.1f} µs "
               f"| {r['sys_us_per_probe']:.1f} µs | {r['user_us_per_probe']:.1f} % of a core | {ins} "
               f"| {a['min']} / {a['median']} / {a['max']} ({a['ideal']:g}) |")
        if steady:
            row += (f" {r['steady_user_us_per_probe']:.1f} / {r['steady_sys_us_per_probe']:.1f} µs "
                    f"({r.get('warm_s', 2):g} s) |" if "steady_user_us_per_probe" in r else " - |")
        out.append(row)
    return "\n".join(out)


def plain_case(rec, mode, flows, classes=0):
    """The 64 B UDP row of MODE at FLOWS flows: 4 KiB pages, Geneve aws over
    IPv4, software checksum, CLASSES classes (0: none)."""
    for c in rec["cases"]:
        if (c["mode"] == mode and c["flows"] == flows and c["size"] == 64 and c["proto"] == "udp"
                and not c.get("hugepages") and not c.get("tx_offload") and not c.get("underlay") == "ipv6"
                and c.get("encapsulation", "geneve") == "geneve" and (c.get("geneve_format") or "aws") == "aws"
                and (c.get("classes") or 0) == classes):
            return c
    raise KeyError(f"no {mode} row at {flows} flows with {classes} classes in the record")


def render_run(rec):
    """The headline figures of one whole run, each against its target."""
    pl = rec["pipeline"]
    tp = statistics.median(t["cycles_per_packet"] for t in pl["testpmd"] if t["mode"] == "5tswap")
    big = max(c["flows"] for c in pl["cases"] if c["mode"] == "established")
    out = ["| figure | this run | target | met |", "|---|---|---|---|"]

    def row(what, value, target, met):
        out.append(f"| {what} | {value} | {target} | {'-' if met is None else 'yes' if met else 'no'} |")

    def cyc(c):
        return f"{c['cycles_per_packet']:.1f} cycles ({c['spread'][0]:.1f}-{c['spread'][1]:.1f})"
    bigname = f"{big / 2**20:g} M" if big >= 2**20 else f"{big:,}"
    for mode, flows, tgt in (("established", 1024, 2.0), ("established", big, 3.0),
                             ("return", 1024, None), ("return", big, 3.0),
                             ("new", 1024, 3.0), ("new", big, 4.5)):
        c = plain_case(pl, mode, flows)
        ratio = c["cycles_per_packet"] / tp
        fl = "1,024" if flows == 1024 else bigname
        what = "new flow" if mode == "new" else mode
        row(f"{what}, {fl} flows, x 5tswap", f"{ratio:.2f}x: {cyc(c)}",
            f"<= {tgt:g}x" if tgt else "(none)", None if tgt is None else ratio <= tgt)
    base, cl = plain_case(pl, "established", 1024), plain_case(pl, "established", 1024, 1000)
    add = 100 * (cl["cycles_per_packet"] / base["cycles_per_packet"] - 1)
    lo = 100 * (cl["spread"][0] / base["spread"][1] - 1)
    hi = 100 * (cl["spread"][1] / base["spread"][0] - 1)
    row("established with 1,000 classes vs without", f"{add:+.1f} % ({cyc(cl)} vs {cyc(base)}; "
        f"reps against reps {lo:+.1f} to {hi:+.1f} %)", "<= +8 %", add <= 8)
    ins = {r["case"]: r for r in pl.get("instructions", []) if "per_packet" in r}
    for case, tgt in (("established", 520), ("new", 900), ("return", 520)):
        if case in ins:
            r = ins[case]
            row(f"instructions, {case} (callgrind, {r['build']} build)", f"{r['per_packet']:.1f}",
                f"<= {tgt}", r["per_packet"] <= tgt)
    if "established, 1,000 classes" in ins and "established" in ins:
        a, b = ins["established, 1,000 classes"]["per_packet"], ins["established"]["per_packet"]
        row("instructions, 1,000 classes vs without", f"{100 * (a / b - 1):+.1f} % ({a:.1f} vs {b:.1f})",
            "<= +8 %", a <= 1.08 * b)
    if "churn" in rec:
        d = rec["churn"]
        row(f"connection churn, table held at {d['flows'] / 2**20:g} M flows, one worker",
            f"{d['new_flows_per_s'] / 1e6:.2f} M new flows/s ({d['cycles_per_new_flow']:.1f} cycles each); "
            f"{d['sustained_new_flows_per_s'] / 1e6:.2f} M/s wall with the expiry", "(measured)", None)
    sy = rec.get("sync", {})
    for key in ("warm_start", "warm_start_2x", "warm_start_3_peers", "warm_start_2x_3_peers"):
        if key in sy:
            w = sy[key]
            peers = f"{w['peers']} peer{'s' if w['peers'] > 1 else ''}"
            row(f"warm start, {w['flows_a'] / 1e6:g} M flows from {peers}",
                f"{w['elapsed_s']:.2f} s ({w['s_per_million']:.2f} s per million; {w['received']:,} received)",
                "<= 1 s per million", w["s_per_million"] <= 1.0)
    for r in rec.get("probe_fleet", {}).get("runs", []):
        user = 100 * r["user_s"] / max(1, r["completed"]) * 1e4  # % of a core at 10,000 probes/s
        sysp = 100 * r["sys_s"] / max(1, r["completed"]) * 1e4
        when = ""
        if r.get("keep_alive"):  # its first round is full handshakes: the steady state
            user, sysp = r["steady_user_us_per_probe"], r["steady_sys_us_per_probe"]
            when = f" (after the first {r['warm_s']:.0f} s)"
        row(f"probes, {probe_name(r)}, {r['targets']:,} appliances at 1 s: the checker at 10,000 probes/s",
            f"gwlbd (user) {user:.1f} % of a core, the kernel (sys) {sysp:.1f} % beside it{when}",
            "user <= 10 %", user <= 10)
    out.append(f"| testpmd 5tswap, the baseline | {tp:.1f} cycles (runs "
               f"{min(t['cycles_per_packet'] for t in pl['testpmd'] if t['mode'] == '5tswap'):.1f}-"
               f"{max(t['cycles_per_packet'] for t in pl['testpmd'] if t['mode'] == '5tswap'):.1f}) | | |")
    return "\n".join(out)


def record(bench_json, commit, load):
    """bench_run.json from a whole run's out/bench.json (its sections RUN_SECTIONS)."""
    j = json.load(open(bench_json))
    missing = [s for s in RUN_SECTIONS if s not in j]
    if missing:
        raise SystemExit(f"{bench_json} lacks the sections {', '.join(missing)}: run scripts/bench.sh whole")
    rec = {"about": "One whole scripts/bench.sh run (release build) on a quiet machine: the sections "
                    "the headline figures come from (performance.md's targets), as out/bench.json held "
                    "them. bench/formats_doc.py "
                    "renders its tables; perf_formats_doc checks docs/performance.md quotes them.",
           "commit": commit, "date": datetime.date.today().isoformat(),
           "machine": j.get("machine", ""), "load": load,
           "conditions": {s: j.get("conditions", {}).get(s, "") for s in RUN_SECTIONS}}
    for s in RUN_SECTIONS:
        rec[s] = j[s]
    json.dump(rec, open(RUN, "w"), indent=1)
    print(f"written: {RUN}")


def tables():
    """(record name, rendered table) for every table performance.md quotes."""
    out = [("pipeline_formats.json", render(json.load(open(RECORD)))),
           ("probe_fleet.json", render_probes(json.load(open(PROBES))))]
    if os.path.exists(RUN):
        run = json.load(open(RUN))
        out += [("bench_run.json", render_run(run)), ("bench_run.json (formats)", render(run["pipeline"])),
                ("bench_run.json (probes)", render_probes(run))]
    return out


def main(argv):
    if len(argv) >= 2 and argv[1] == "render":
        what = argv[2] if len(argv) > 2 else "formats"
        if what.startswith("run"):
            run = json.load(open(RUN))
            print({"run": render_run, "run-formats": lambda r: render(r["pipeline"]),
                   "run-probes": render_probes}[what](run))
        else:
            print(render_probes(json.load(open(PROBES))) if what == "probes" else render(json.load(open(RECORD))))
        return 0
    if len(argv) == 5 and argv[1] == "record":
        record(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 3 and argv[1] == "check":
        doc = open(os.path.join(argv[2], "docs", "performance.md"), encoding="utf-8").read()
        bad = 0
        for what, table in tables():
            if table not in doc:
                print(f"docs/performance.md does not quote bench/records/{what} as bench/formats_doc.py "
                      "renders it; expected:\n" + table)
                bad = 1
        if os.path.exists(RUN):
            # deploy.md's sizing quotes the run's connection churn.
            d = json.load(open(RUN))["churn"]
            want = (f"One worker took {d['new_flows_per_s'] / 1e6:.2f} M new flows a second",
                    f"{d['cycles_per_new_flow']:.1f} cycles at")
            dep = open(os.path.join(argv[2], "docs", "deploy.md"), encoding="utf-8").read()
            for w in want:
                if w not in dep:
                    print(f"docs/deploy.md does not quote bench/records/bench_run.json's churn: expected '{w}'")
                    bad = 1
        if not bad:
            print(f"docs/performance.md quotes every recorded table as rendered ({len(tables())}), "
                  "docs/deploy.md the run's new flows per second")
        return bad
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
