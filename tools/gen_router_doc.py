#!/usr/bin/python3
"""Writes the router configs quoted in docs/fleet.md ("The router side") from
the fleet lab's own generator, so the doc shows exactly what the lab (and so
e2e_fleet / e2e_fleet_frr) runs.

usage: gen_router_doc.py [--check]   --check: exit 1 if a quoted config is stale

Each quoted block is a fenced code block right after a marker line
  <!-- router-config ARGS: ... -->
and is replaced by the output of `scripts/lab.sh router-config ARGS` (no root
needed: it only prints). The doc must quote BIRD's, FRR's and the kernel's.
"""
import os
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
path = root / "docs/fleet.md"
MARKER = re.compile(r"^<!-- router-config ([a-z0-9 ]+?):[^\n]*-->\n```[a-z]*\n(.*?)^```\n", re.M | re.S)
REQUIRED = {"bird", "frr", "kernel"}


def generate(args):
    # The lab's defaults, not the caller's LAB_* settings (LAB_BFD_MULT, ...).
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAB_")}
    r = subprocess.run(["bash", str(root / "scripts/lab.sh"), "router-config", *args.split()],
                       env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit(f"lab.sh router-config {args}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def main():
    text = path.read_text()
    found, stale = set(), []

    def fill(m):
        args, body = m.group(1), m.group(2)
        found.add(args.split()[0])
        want = generate(args)
        if body != want:
            stale.append(args)
        g = m.group(0)
        return g[:m.start(2) - m.start(0)] + want + g[m.end(2) - m.start(0):]

    new = MARKER.sub(fill, text)
    missing = REQUIRED - found
    if missing:
        sys.exit(f"docs/fleet.md quotes no router-config block for {', '.join(sorted(missing))} "
                 "(a fenced block after <!-- router-config ARGS: ... -->)")
    if "--check" in sys.argv:
        if stale:
            sys.exit(f"docs/fleet.md: the quoted router-config {', '.join(stale)} differs from what "
                     "scripts/lab.sh generates: run tools/gen_router_doc.py")
        print(f"docs/fleet.md quotes the lab's router configs ({', '.join(sorted(found))})")
        return
    path.write_text(new)
    print(f"wrote {path} ({len(found)} router configs, {len(stale)} changed)")


if __name__ == "__main__":
    main()
