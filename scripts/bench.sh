#!/usr/bin/env bash
# Benchmarks (never pass/fail): builds a release tree in build-release/, runs each
# benchmark, prints one table (figure, value, conditions) per benchmark and writes
# out/bench.json (each section replaces its own entries; others are kept).
#   scripts/bench.sh [--quick] [--only flow_dump|probes|move_check]
set -euo pipefail
GWLB_BUILD="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-release"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
gwlb_build --buildtype=release >/dev/null

flows=500000 rounds=3 probe_s=10 mc_s=6 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) flows=100000 rounds=2 probe_s=5 mc_s=3 ;;
    --only) [ $# -ge 2 ] || { echo "bench: --only needs a section" >&2; exit 2; }; only="$2"; shift ;;
    *) echo "usage: scripts/bench.sh [--quick] [--only flow_dump|probes|move_check]" >&2; exit 2 ;;
  esac
  shift
done
case "$only" in ""|flow_dump|probes|move_check) ;; *) echo "bench: unknown section '$only'" >&2; exit 2 ;; esac
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

# 3. The lazy move check (issue 5) on the fast path: processBurst with the check
#    compiled out vs in, steady state and with an appliance shedding its flows,
#    plus the one-time cost of a move. Both pipeline copies in one process,
#    alternating windows; `rounds` processes per flow count.
if [ -z "$only" ] || [ "$only" = move_check ]; then
mc_runs=()
for mc_flows in 4096 262144; do
  for r in $(seq "$rounds"); do
    mc_runs+=("$("$GWLB_BUILD/bench/move_check" --flows "$mc_flows" --seconds "$mc_s" \
      2>>"$out/bench-move-check.log" | tail -1)")
  done
done

# Instructions per packet (deterministic): the same phases under callgrind,
# counting only inside the processBurst copies, one dump per phase.
mc_cg="$out/bench-move-check-cg"
rm -rf "$mc_cg"
mc_ins=""
if command -v valgrind >/dev/null; then
  mkdir -p "$mc_cg"
  mc_ins=$(valgrind --tool=callgrind --callgrind-out-file="$mc_cg/mc.%p" \
    --toggle-collect='*processBurst*' "$GWLB_BUILD/bench/move_check" --flows 4096 \
    --instructions 2>>"$out/bench-move-check.log" | tail -1) || mc_ins=""
fi

GWLB_ROOT="$GWLB_ROOT" MC_CG="$mc_cg" MC_INS="$mc_ins" /usr/bin/python3 - "$out/bench.json" "$cpu" "${mc_runs[@]}" <<'PY'
import glob, json, os, statistics, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
runs = [json.loads(a) for a in sys.argv[3:]]
by_flows = {}
for r in runs:
    by_flows.setdefault(r["flows"], []).append(r)
med = statistics.median
rows, data = [], {"runs": runs, "summary": {}}
for flows, rs in sorted(by_flows.items()):
    tag = f"{flows} flows"
    summ = {}
    for v in ("base", "check", "check-copy", "shedding"):
        ns = [r["variants"][v]["ns_per_pkt"] for r in rs]
        ratio = [r["variants"][v]["ratio"] for r in rs]
        summ[v] = {"ns_per_pkt": med(ns), "mpps": 1e3 / med(ns), "ratio": med(ratio),
                   "ns_spread": [min(ns), max(ns)], "ratio_spread": [min(ratio), max(ratio)]}
        p10 = med([r["variants"][v]["ns_p10"] for r in rs])
        p90 = med([r["variants"][v]["ns_p90"] for r in rs])
        rows.append((f"{v}: ns/packet ({tag})", f"{med(ns):.2f} ns",
                     f"{1e3/med(ns):.2f} Mpps; runs {min(ns):.2f}-{max(ns):.2f}; "
                     f"windows p10-p90 {p10:.2f}-{p90:.2f}; {rs[0]['variants'][v]['what']}"))
        if v != "base":
            rp10 = med([r["variants"][v]["ratio_p10"] for r in rs])
            rp90 = med([r["variants"][v]["ratio_p90"] for r in rs])
            rows.append((f"{v} / base ({tag})", f"{med(ratio):.4f}",
                         f"runs {min(ratio):.4f}-{max(ratio):.4f}; windows p10-p90 "
                         f"{rp10:.4f}-{rp90:.4f}; 1.0000 = no cost"))
    cc = [r["variants"]["check-copy"]["ns_per_pkt"] / r["variants"]["check"]["ns_per_pkt"] for r in rs]
    summ["copy_vs_check"] = med(cc)
    rows.append((f"check-copy / check, A/A ({tag})", f"{med(cc):.4f}",
                 f"runs {min(cc):.4f}-{max(cc):.4f}; identical code, second copy: the noise floor"))
    pm = [r["move_once"]["ns_per_move"] for r in rs]
    mv = [r["move_once"]["ns_first_moving"] for r in rs]
    st = [r["move_once"]["ns_first_staying"] for r in rs]
    summ["move_once"] = {"ns_per_move": med(pm), "ns_first_moving": med(mv),
                         "ns_first_staying": med(st), "spread": [min(pm), max(pm)]}
    rows.append((f"one-time cost per moved flow ({tag})", f"{med(pm):.1f} ns",
                 f"first packet {med(mv):.1f} ns moving vs {med(st):.1f} ns staying; runs "
                 f"{min(pm):.1f}-{max(pm):.1f}; {rs[0]['move_once']['flows_each_way']} flows each "
                 f"way x {rs[0]['move_once']['rounds']} rounds per run"))
    data["summary"][str(flows)] = summ
if os.environ.get("MC_INS"):
    meta = json.loads(os.environ["MC_INS"])
    ir = {}
    for f in glob.glob(os.path.join(os.environ["MC_CG"], "mc.*")):
        name = total = None
        for line in open(f):
            tag = "desc: Trigger: Client Request: "
            if line.startswith(tag):
                name = line[len(tag):].strip()
            elif line.startswith("summary: "):
                total = int(line.split()[1])
        if name and total is not None:
            ir[name] = total
    per = {v: ir[v] / meta["packets_per_variant"] for v in meta["variants"] if v in ir}
    k = meta["first_packets"]
    ins = {"per_packet": per, "first_move": ir.get("first_move", 0) / k,
           "first_stay": ir.get("first_stay", 0) / k}
    ins["per_move"] = ins["first_move"] - ins["first_stay"]
    data["instructions"] = ins
    b = per.get("base", 0)
    for v in meta["variants"]:
        if v in per:
            extra = "" if v == "base" else f"; {per[v] - b:+.2f} vs base ({100 * (per[v] / b - 1):+.2f} %)"
            rows.append((f"{v}: instructions/packet (4096 flows)", f"{per[v]:.2f}",
                         f"callgrind, inside processBurst{extra}"))
    rows.append(("instructions per moved flow (4096 flows)", f"{ins['per_move']:.1f}",
                 f"first packet {ins['first_move']:.1f} moving vs {ins['first_stay']:.1f} staying "
                 f"({k} flows each way)"))
r0 = runs[0]
cond = (f"bench/move_check: dp::processBurst with the move check compiled out "
        f"(-DGWLB_BENCH_NO_MOVE_CHECK) and in (two identical copies: A/A control), all copies in "
        f"one process, alternating windows "
        f"of {r0['window_packets']} packets (each window the next flows in turn); release build; 1 worker (main "
        f"lcore) pinned to cpu {r0['cpu']}, EAL --no-huge; established flows (table warmed), "
        f"one {r0['frame_bytes']} B UDP/IPv4 packet per flow in turn, bursts of {r0['burst']}, aws "
        f"Geneve to 3 appliances (Maglev 65537); mbufs re-used, frames copied back before each "
        f"burst outside the timed region, only processBurst timed (TSC); shedding = 1 of 3 "
        f"appliances unhealthy with failover_mode rebalance, its flows already moved; medians "
        f"over windows per run, then over {len(runs) // len(by_flows)} runs per flow count; "
        f"instructions: the same phases under valgrind --tool=callgrind (4 windows per variant, "
        f"Ir counted inside processBurst only)")
emit("move_check", data, rows, cond, sys.argv[1], sys.argv[2], width=44, value_width=10)
PY
fi
