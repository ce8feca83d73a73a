#!/usr/bin/env bash
# Benchmarks (never pass/fail): builds a release tree in build-release/, runs each
# benchmark, prints one table (figure, value, conditions) and writes out/bench.json.
#   scripts/bench.sh [--quick]
set -euo pipefail
GWLB_BUILD="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-release"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
gwlb_build --buildtype=release >/dev/null

flows=500000 rounds=3
[ "${1:-}" = "--quick" ] && flows=100000 rounds=2
out="$GWLB_ROOT/out"
mkdir -p "$out"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "machine: $(nproc) cores, $cpu, $(free -g | awk '/Mem:/{print $2}') GiB"

# 1. Full flow-table dumps (gwlbctl flows --all) against a worker forwarding at full rate.
dump_json=$(bash "$GWLB_ROOT/tests/daemon/run_dump.sh" "$GWLB_BUILD/control/gwlbd" \
  "$out/bench-dump" "$GWLB_ROOT" "$flows" --bench --rounds "$rounds" | tail -1)

/usr/bin/python3 - "$dump_json" "$out/bench.json" "$cpu" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
cond = (f"{d['flows']} flows (1 UDP packet each, 64 B) replayed endlessly by net_pcap "
        f"infinite_rx; 1 worker lcore on core 1, control on core 0; dump = pages of 10000 "
        f"over the control API; medians of 0.25 s windows, {d['rounds']} dumps")
rows = [
  ("worker pps, no dump (median)", f"{d['pps_idle_median']/1e6:.2f} Mpps",
   f"spread {d['pps_idle_spread'][0]/1e6:.2f}-{d['pps_idle_spread'][1]/1e6:.2f}"),
  ("worker pps during full dump (median)", f"{d['pps_during_dump_median']/1e6:.2f} Mpps",
   f"spread {d['pps_during_spread'][0]/1e6:.2f}-{d['pps_during_spread'][1]/1e6:.2f}"),
  ("during / without dump", f"{d['ratio']:.3f}", "1.000 = no slow-down"),
  ("full dump time (median)", f"{d['dump_s_median']:.2f} s", f"{d['flows']/d['dump_s_median']/1e3:.0f} k flows/s"),
]
print(f"\n{'figure':40} {'value':>12}  conditions")
for f, v, c in rows:
    print(f"{f:40} {v:>12}  {c}")
print(f"conditions: {cond}")
json.dump({"machine": sys.argv[3], "flow_dump": d, "conditions": {"flow_dump": cond}},
          open(sys.argv[2], "w"), indent=2)
print(f"\nwritten: {sys.argv[2]}")
PY
