#!/usr/bin/env python3
"""Tables rendered from recorded quiet bench runs (bench/records/, written from
scripts/bench.sh's out/bench.json), and the check that docs/performance.md
quotes each as rendered: cycles per packet for each encapsulation format and
underlay family (pipeline_formats.json), and the health checker's cost at
10,000 appliances (probe_fleet.json).

Usage: formats_doc.py render [formats|probes]   print a table
       formats_doc.py check SOURCE_ROOT          docs/performance.md holds both
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(HERE, "records", "pipeline_formats.json")
PROBES = os.path.join(HERE, "records", "probe_fleet.json")
NAMES = {("geneve", "aws"): "Geneve aws", ("geneve", "ethernet"): "Geneve ethernet", ("vxlan", "aws"): "VXLAN"}


def name(c):
    fmt = NAMES[(c.get("encapsulation", "geneve"), c.get("geneve_format", "aws") if c.get("encapsulation", "geneve") == "geneve" else "aws")]
    return f"{fmt} over {'IPv6' if c.get('underlay') == 'ipv6' else 'IPv4'}"


def render(rec):
    tp = statistics.median(t["cycles_per_packet"] for t in rec["testpmd"] if t["mode"] == "5tswap")
    rows = [c for c in rec["cases"] if c["mode"] in ("established", "return") and c["flows"] == 1024
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


def render_probes(rec):
    p = rec["probe_fleet"]
    instr = {i["protocol"]: i["per_probe"] for i in p.get("instructions", [])}
    out = ["| protocol, appliances | probes/s | gwlbd (user) per probe | kernel (sys) per probe "
           "| user at 10,000 probes/s | instructions per probe | starts per 10 ms: min / median / max (ideal) |",
           "|---|---|---|---|---|---|---|"]
    for r in p["runs"]:
        a = r["arrivals_per_10ms"]
        ins = f"{instr[r['protocol']]:,}" if r["protocol"] in instr else "-"
        out.append(f"| {r['protocol']}, {r['targets']:,} | {r['probes_per_s']:,.0f} | {r['user_us_per_probe']:.1f} µs "
                   f"| {r['sys_us_per_probe']:.1f} µs | {r['user_us_per_probe']:.1f} % of a core | {ins} "
                   f"| {a['min']} / {a['median']} / {a['max']} ({a['ideal']:g}) |")
    return "\n".join(out)


def main(argv):
    if len(argv) >= 2 and argv[1] == "render":
        probes = len(argv) > 2 and argv[2] == "probes"
        print(render_probes(json.load(open(PROBES))) if probes else render(json.load(open(RECORD))))
        return 0
    if len(argv) == 3 and argv[1] == "check":
        doc = open(os.path.join(argv[2], "docs", "performance.md"), encoding="utf-8").read()
        bad = 0
        for what, table in (("pipeline_formats.json", render(json.load(open(RECORD)))),
                            ("probe_fleet.json", render_probes(json.load(open(PROBES))))):
            if table not in doc:
                print(f"docs/performance.md does not quote bench/records/{what} as bench/formats_doc.py "
                      "renders it; expected:\n" + table)
                bad = 1
        if not bad:
            print("docs/performance.md quotes both recorded runs as rendered")
        return bad
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
