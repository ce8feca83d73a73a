#!/usr/bin/python3
"""Generates docs/counters.md from common/counters.def (the single list).

usage: gen_counters_doc.py [--check]   --check: exit 1 if the doc is stale
"""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
defs = (root / "common/counters.def").read_text()
rows = re.findall(r'^GWLB_(COUNTER|DROP)\((\w+),\s*"((?:[^"\\]|\\.)*)"\)', defs, re.M)
out = ["# Counters and drop reasons", "",
       "Generated from `common/counters.def` by `tools/gen_counters_doc.py`; do not edit.",
       "Every worker keeps its own copy (single writer); totals are sums over workers.",
       "Every received frame ends in exactly one of `encapsulated`, `returned`, `icmp_sent`,",
       "`tcp_resets_sent`, `punted`, `bypassed` or one `drop_*` counter:", "",
       "    rx_packets == encapsulated + returned + icmp_sent + tcp_resets_sent + punted + bypassed",
       "                  + sum(drop_*)", "",
       "and `tcp_resets_sent == tcp_resets_unhealthy + tcp_resets_deregistered + tcp_resets_idle",
       "+ tcp_resets_fleet_view_incomplete`.", "",
       "| counter | kind | meaning |", "|---|---|---|"]
for kind, name, text in rows:
    n = ("drop_" + name) if kind == "DROP" else name
    out.append(f"| `{n}` | {'drop' if kind == 'DROP' else 'event'} | {text} |")
doc = "\n".join(out) + "\n"
path = root / "docs/counters.md"
if "--check" in sys.argv:
    if not path.exists() or path.read_text() != doc:
        print("docs/counters.md is stale: run tools/gen_counters_doc.py", file=sys.stderr)
        sys.exit(1)
    print(f"docs/counters.md matches counters.def ({len(rows)} counters)")
else:
    path.write_text(doc)
    print(f"wrote {path} ({len(rows)} counters)")
