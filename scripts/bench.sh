#!/usr/bin/env bash
# Benchmarks (never pass/fail): builds a release tree in build-release/, runs each
# benchmark, prints one table (figure, value, conditions) per benchmark and writes
# out/bench.json (each section replaces its own entries; others are kept).
#   scripts/bench.sh [--quick] [--only flow_dump|probes]
set -euo pipefail
GWLB_BUILD="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-release"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
gwlb_build --buildtype=release >/dev/null

flows=500000 rounds=3 probe_s=10 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) flows=100000 rounds=2 probe_s=5 ;;
    --only) [ $# -ge 2 ] || { echo "bench: --only needs a section" >&2; exit 2; }; only="$2"; shift ;;
    *) echo "usage: scripts/bench.sh [--quick] [--only flow_dump|probes]" >&2; exit 2 ;;
  esac
  shift
done
case "$only" in ""|flow_dump|probes) ;; *) echo "bench: unknown section '$only'" >&2; exit 2 ;; esac
out="$GWLB_ROOT/out"
mkdir -p "$out"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "machine: $(nproc) cores, $cpu, $(free -g | awk '/Mem:/{print $2}') GiB"

# 1. Full flow-table dumps (gwlbctl flows --all) against a worker forwarding at full rate.
if [ -z "$only" ] || [ "$only" = flow_dump ]; then
dump_json=$(bash "$GWLB_ROOT/tests/daemon/run_dump.sh" "$GWLB_BUILD/control/gwlbd" \
  "$out/bench-dump" "$GWLB_ROOT" "$flows" --bench --rounds "$rounds" | tail -1)

GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$dump_json" "$out/bench.json" "$cpu" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
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
emit("flow_dump", d, rows, cond, sys.argv[2], sys.argv[3])
PY
fi

# 2. Health probes at scale: N TCP targets on loopback probed from one control thread
#    with gwlbd's schedule (jittered first probe, then result + interval).
if [ -z "$only" ] || [ "$only" = probes ]; then
probe_json=$("$GWLB_BUILD/bench/probe_scale" --targets 1000,10000 --modes accept,refused \
  --duration "$probe_s" --interval-ms 1000 --timeout-ms 1000 2>"$out/bench-probes.log" | tail -1)

GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$probe_json" "$out/bench.json" "$cpu" "$(nproc)" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
d = json.loads(sys.argv[1])
cond = (f"bench/probe_scale: TCP probes to 127.0.0.1-{d['listeners']} only, interval "
        f"{d['interval_ms']} ms, timeout {d['timeout_ms']} ms, {d['duration_s']:.0f} s per run, "
        f"schedule as gwlbd's HealthChecker (first probe jittered over one interval, then result "
        f"+ interval; results fed to HealthTracker); one prober thread (io_context), not pinned, "
        f"{sys.argv[4]} cores shared with the listener thread (SCHED_BATCH) and whatever else "
        f"runs; accept = listener accepts and keeps the connection until the prober resets it, "
        f"refused = closed port (RST); CPU = "
        f"getrusage(RUSAGE_THREAD) user+sys of the prober thread as % of one core (sys includes "
        f"the kernel's loopback handling of the listener's side of each handshake); lateness = "
        f"actual start - scheduled start of every probe; starts/100 ms over the whole run")
rows = []
for r in d["runs"]:
    tag = f"{r['targets']} targets, {r['mode']}"
    lat = r["late_ms"]
    w = r["starts_per_100ms"]
    rows += [
      (f"prober CPU ({tag})", f"{r['cpu_pct_of_core']:.1f} %core",
       f"user {100*r['user_s']/r['wall_s']:.1f} + sys {100*r['sys_s']/r['wall_s']:.1f}; "
       f"{r['cpu_us_per_probe']:.0f} us/probe; preempted {r['preempted']/r['wall_s']:.0f}/s; "
       f"listener {r['listener_cpu_pct_of_core']:.0f} %core; load avg "
       f"{r['load_avg_1m'][0]:.1f}-{r['load_avg_1m'][1]:.1f}"),
      (f"probes completed/s ({tag})", f"{r['probes_per_s']:.0f}",
       f"ceiling {r['targets']*1000/d['interval_ms']:.0f} (targets / interval; each period also "
       f"holds the response time); ok {r['ok']}, failed {r['failed']}"),
      (f"start lateness p50/p99/max ({tag})",
       f"{lat['p50']:.2f}/{lat['p99']:.2f}/{lat['max']:.2f} ms", "ideal 0/0/0 ms"),
      (f"starts per 100 ms min-max ({tag})", f"{w['min']}-{w['max']}",
       f"ideal {w['ideal']:.0f}; jittered schedule itself {w['scheduled_min']}-{w['scheduled_max']}"),
    ]
emit("probes", d, rows, cond, sys.argv[2], sys.argv[3], width=52, value_width=18)
PY
fi
