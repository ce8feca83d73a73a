#!/usr/bin/python3
"""docs/lab.md "The stateful appliance" says what the lab really loads and counts.

  lab_stateful_doc.py SRCROOT

- its ```nft block is scripts/lab_stateful.nft (the file `lab.sh` loads with
  `nft -f`), without the file's leading comment;
- its table of the tun path's counters has one row per counter of
  GWLB_APPLIANCE_TUN_COUNTERS (tools/appliance_tun_flows.h), each beginning
  with that counter's help text, and no row for a counter that is not there.
Prints what differs; exit 1 then.
"""
import re
import sys

src = sys.argv[1]
doc = open(f"{src}/docs/lab.md", encoding="utf-8").read()
failures = []

rules = open(f"{src}/scripts/lab_stateful.nft", encoding="utf-8").read().split("\n")
while rules and rules[0].startswith("#"):
    rules.pop(0)
rules = "\n".join(rules)
m = re.search(r"^## The stateful appliance.*?^```nft\n(.*?)^```$", doc, re.S | re.M)
if not m:
    failures.append('docs/lab.md: no ```nft block in "## The stateful appliance"')
elif m.group(1) != rules:
    import difflib
    diff = "".join(difflib.unified_diff(m.group(1).splitlines(True), rules.splitlines(True),
                                        "docs/lab.md", "scripts/lab_stateful.nft"))
    failures.append("docs/lab.md's ruleset is not scripts/lab_stateful.nft:\n" + diff)

header = open(f"{src}/tools/appliance_tun_flows.h", encoding="utf-8").read()
counters = dict(re.findall(r'X\((\w+), "([^"]*)"\)', header))
if len(counters) < 5:
    failures.append(f"tools/appliance_tun_flows.h: found only {len(counters)} counters in GWLB_APPLIANCE_TUN_COUNTERS")
rows = dict(re.findall(r"^\| `(\w+)` \| (.*?) \|$", doc, re.M))
for name, help_text in counters.items():
    if name not in rows:
        failures.append(f"docs/lab.md: no row for the tun counter `{name}` ({help_text})")
    elif not rows[name].startswith(help_text):
        failures.append(f"docs/lab.md: the row of `{name}` says {rows[name]!r}, the code {help_text!r}")
tun_rows = re.search(r"^\| counter \| what it counts \|\n\|---\|---\|\n((?:\|.*\n)+)", doc, re.M)
for name in re.findall(r"^\| `(\w+)` \|", tun_rows.group(1) if tun_rows else "", re.M):
    if name not in counters:
        failures.append(f"docs/lab.md: row `{name}` names no counter of tools/appliance_tun_flows.h")

for f in failures:
    print("FAIL:", f)
print(f"ruleset: {len(rules.splitlines())} lines compared; tun counters: {len(counters)} checked")
sys.exit(1 if failures else 0)
