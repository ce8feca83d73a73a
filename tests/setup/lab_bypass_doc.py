#!/usr/bin/python3
"""docs/lab.md "What a bypass saves the appliance" quotes the run recorded in
tests/e2e/bypass_saving.json, as e2e_bypass renders it.

  lab_bypass_doc.py SRCROOT

- the record's derived figures (shares, bytes spared, packets per second)
  are what e2e_bypass's saving() computes from its counts: a figure edited by
  hand fails;
- docs/lab.md holds saving_lines(record), line for line, in that section.
Record a new run with E2E_BYPASS_RECORD=$PWD/tests/e2e/bypass_saving.json
(tests/e2e/e2e_bypass.py), then paste its printed lines into the docs.
Prints what differs; exit 1 then.
"""
import json
import os
import re
import sys

src = sys.argv[1]
sys.path.insert(0, os.path.join(src, "tests", "e2e"))
import e2e_bypass  # noqa: E402

failures = []
rec = json.load(open(os.path.join(src, "tests/e2e/bypass_saving.json"), encoding="utf-8"))
again = e2e_bypass.saving(rec["stream_bytes_each_way"], rec["seconds"], rec["packets"], rec["appliance_packets"],
                          rec["appliance_bytes"],
                          rec["spared_packets"], rec["spared_bytes"] + e2e_bypass.ETH_HEADER * rec["spared_packets"])
for k, v in again.items():
    if rec.get(k) != v:
        failures.append(f"tests/e2e/bypass_saving.json: {k} is {rec.get(k)!r}, the counts give {v!r}")

doc = open(os.path.join(src, "docs/lab.md"), encoding="utf-8").read()
m = re.search(r"^### What a bypass saves the appliance\n(.*?)(?=^#)", doc, re.S | re.M)
if not m:
    failures.append('docs/lab.md: no section "### What a bypass saves the appliance"')
else:
    want = "\n".join(e2e_bypass.saving_lines(rec))
    if want not in m.group(1):
        failures.append("docs/lab.md's bypass figures are not the recorded run's; they should read:\n" + want)

for f in failures:
    print("FAIL: " + f)
if not failures:
    print("ok: docs/lab.md quotes the recorded bypass run (tests/e2e/bypass_saving.json)")
sys.exit(1 if failures else 0)
