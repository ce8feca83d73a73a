#!/usr/bin/env bash
# Benchmarks (never pass/fail): builds a release tree in build-release/, runs each
# benchmark, prints one table (figure, value, conditions) per benchmark and writes
# out/bench.json (each section replaces its own entries; others are kept).
#   scripts/bench.sh [--quick] [--only SECTION]
# Sections (in the order they run): see `sections` below. Each prints rows
# through bench/report.py's emit(). The machine is shared: sections that time
# the fast path record the load average they ran under.
set -euo pipefail
# Every section's name; --only takes one of them.
sections="flow_dump probes probe_fleet move_check pipeline flow_table maglev snapshot classes class_check sync churn walks workers"
usage="usage: scripts/bench.sh [--quick] [--only $(echo "$sections" | tr ' ' '|')]"
flows=500000 rounds=3 probe_s=10 mc_s=6 only=""
ft_sizes="65536 1000000 10000000" ft_s=10 ft_sweeps=3 mg_rounds=51 sb_s=10
sync_flows=1000000 sync_rounds=7 cb_builds=5 cb_reps=11 cc_reps=5
mw_sizes="4096 1048576" mw_reps=7 mw_s=0.5
wk_flows=4000000 wk_s=6 churn_flows=1048576 churn_new=8000000
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) flows=100000 rounds=2 probe_s=5 mc_s=3
             ft_sizes="65536 1000000" ft_s=4 ft_sweeps=2 mg_rounds=15 sb_s=3
             sync_flows=100000 sync_rounds=3 cb_builds=3 cb_reps=5 cc_reps=3
             mw_sizes="4096 262144" mw_reps=3 mw_s=0.3
             wk_flows=1000000 wk_s=3 churn_flows=262144 churn_new=2000000 ;;
    --only) [ $# -ge 2 ] || { echo "bench: --only needs a section" >&2; exit 2; }; only="$2"; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$only" ] && ! printf '%s\n' $sections | grep -qx -- "$only"; then
  echo "bench: unknown section '$only'" >&2; echo "$usage" >&2; exit 2
fi
# runs SECTION: true when SECTION is to run.
runs() { [ -z "$only" ] || [ "$only" = "$1" ]; }

# GWLB_BENCH_BUILD: another release build directory to use (default build-release/).
GWLB_BUILD="${GWLB_BENCH_BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-release}"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
gwlb_build --buildtype=release >/dev/null
out="$GWLB_ROOT/out"
mkdir -p "$out"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
echo "machine: $(nproc) cores, $cpu, $(free -g | awk '/Mem:/{print $2}') GiB"

# 1. Full flow-table dumps (gwlbctl flows --all) against a worker forwarding at full rate.
if runs flow_dump; then
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
if runs probes; then
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
       f"{r['load_avg_1m'][0]:.1f}-{r['load_avg_1m'][1]:.1f}"
       + ("; target <= 10 %core at 10 k targets" if r["targets"] == 10000 else "")),
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

# 2b. The same through gwlbd's own HealthChecker (its wheel, trackers and
#     reports): 10,000 appliances, one 127.x address each, TCP, HTTP and HTTPS
#     (sessions resumed: probe_fleet fails when none was); then the checker
#     thread's instructions per probe under callgrind (bench/probe_instructions.py).
if runs probe_fleet; then
fleet_json=$("$GWLB_BUILD/bench/probe_fleet" --targets 10000 --protocols tcp,http \
  --duration "$probe_s" --interval-ms 1000 --timeout-ms 1000 2>"$out/bench-probe-fleet.log" | tail -1)
# HTTPS at 500 appliances: each handshake (resumed or not) costs the checker
# some 100-200 us, so 10,000 first handshakes a second do not fit in a 1 s
# timeout on a shared 2-core machine, and failed ones are never resumed.
https_json=$("$GWLB_BUILD/bench/probe_fleet" --targets 500 --protocols https \
  --duration "$probe_s" --interval-ms 1000 --timeout-ms 1000 2>>"$out/bench-probe-fleet.log" | tail -1)
# HTTPS with health_check.keep_alive: a fresh connect per probe, the request
# on the kept TLS connection. At 8,000 appliances: both ends live in this one
# process, and each kept connection holds a descriptor at each end (the hard
# open-file limit here is 20,000). The first round's 8,000 full handshakes
# take several seconds of the checker here: a 5 s timeout lets them finish,
# and the steady state is taken after 15 s (of 25).
ka_json=$("$GWLB_BUILD/bench/probe_fleet" --targets 8000 --protocols https --keep-alive \
  --duration $((probe_s + 15)) --warm 15 --interval-ms 1000 --timeout-ms 5000 \
  2>>"$out/bench-probe-fleet.log" | tail -1)
fleet_json=$(/usr/bin/python3 -c 'import json, sys; a = json.loads(sys.argv[1]); [a["runs"].extend(json.loads(x)["runs"]) for x in sys.argv[2:]]; print(json.dumps(a))' "$fleet_json" "$https_json" "$ka_json")

instr_json=$(/usr/bin/python3 "$GWLB_ROOT/bench/probe_instructions.py" --build "$GWLB_BUILD" \
  --duration 8 --protocols tcp,http,https,https+keep_alive 2>>"$out/bench-probe-fleet.log" | tail -1)

GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$fleet_json" "$out/bench.json" "$cpu" "$(nproc)" "$instr_json" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
d = json.loads(sys.argv[1])
instr = {r["protocol"]: r for r in json.loads(sys.argv[5])["runs"]}
d["instructions"] = list(instr.values())
cond = (f"bench/probe_fleet: gwlbd's HealthChecker, one 127.x address per appliance, one listener "
        f"thread (tcp: accept; http: 200 OK; https: the same over TLS, sessions resumed), interval {d['interval_ms']} ms, timeout "
        f"{d['timeout_ms']} ms, {d['duration_s']:.0f} s per run, not pinned, {sys.argv[4]} cores; "
        f"CPU = getrusage(RUSAGE_THREAD) of the checker thread: user = gwlbd's work, sys = the "
        f"kernel's (on loopback it holds the listener's half of each handshake); arrivals = "
        f"connections the listener accepted per 10 ms after the first interval")
rows = []
for r in d["runs"]:
    name = r["protocol"] + ("+keep_alive" if r.get("keep_alive") else "")
    tag = f"{r['targets']} appliances, {name}"
    per = 1e6 * (r["user_s"] + r["sys_s"]) / max(1, r["completed"])
    user = 1e6 * r["user_s"] / max(1, r["completed"])
    a = r["arrivals_per_10ms"]
    rows += [
      (f"checker CPU ({tag})", f"{r['cpu_pct_of_core']:.1f} %core",
       f"user {r['user_pct_of_core']:.1f} + sys {r['sys_pct_of_core']:.1f}; {per:.1f} us/probe of "
       f"which user {user:.1f}; at 10,000 probes/s user = {user:.1f} %core (target <= 10); "
       f"after the first two intervals user {r['steady_user_us_per_probe']:.1f} + sys "
       f"{r['steady_sys_us_per_probe']:.1f} us/probe; "
       f"load avg {r['load_avg_1m'][0]:.1f}-{r['load_avg_1m'][1]:.1f}"),
      (f"probes completed/s ({tag})", f"{r['probes_per_s']:.0f}",
       f"healthy at the end {r['healthy']}; preempted {r['preempted']/r['wall_s']:.0f}/s"),
      (f"arrivals per 10 ms min-median-max ({tag})", f"{a['min']}-{a['median']}-{a['max']}",
       f"ideal {a['ideal']:.0f}"),
    ]
    if r["protocol"] == "https":
        rows.append((f"TLS handshakes resumed ({tag})", f"{r['tls_resumed']}/{r['tls_handshakes']}",
                     "at the listener; each appliance's first handshake is a full one"))
    if r.get("keep_alive"):
        rows.append((f"connections kept at the end ({tag})", f"{r['kept']}",
                     f"one per appliance; this run: timeout {r['timeout_ms']} ms, steady state after "
                     f"{r['warm_s']:.0f} s of {r['wall_s']:.0f}"))
    if name in instr:
        i = instr[name]
        rows.append((f"checker instructions per probe ({name})", f"{i['per_probe']}",
                     f"callgrind, user space, steady state; {i['targets']} appliances, {i['probes']} probes"))
emit("probe_fleet", d, rows, cond, sys.argv[2], sys.argv[3], width=52, value_width=18)
PY
fi

# 3. The lazy move check on the fast path: processBurst with the check
#    compiled out vs in, steady state and with an appliance shedding its flows,
#    plus the one-time cost of a move. Both pipeline copies in one process,
#    alternating windows; `rounds` processes per flow count.
if runs move_check; then
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

# ---- Against DPDK's baseline: figures 1 to 4 ----------------------------
# Figure 1. Pipeline throughput on one worker lcore through a net_ring port,
#    beside dpdk-testpmd io/macswap on the same lcore in the same run
#    (bench/run_pipeline.sh: cases, conditions, instructions per packet).
if runs pipeline; then
  quick_arg=""
  [ "$rounds" = 2 ] && quick_arg="--quick"
  bash "$GWLB_ROOT/bench/run_pipeline.sh" "$GWLB_BUILD" "$out" "$cpu" $quick_arg
fi


# Figure 2. The flow table beside DPDK's rte_hash at 1 M and 10 M flows: bytes
#    per flow (resident set), bulk lookup cycles per key, insert rate, expiry
#    sweep. One process per run, never two at once (10 M flows take ~5 GB
#    with the baselines); `rounds` runs per size.
if runs flow_table; then
ft_runs=()
for ft_n in $ft_sizes; do
  for r in $(seq "$rounds"); do
    la0=$(cut -d' ' -f1 /proc/loadavg)
    j=$("$GWLB_BUILD/bench/flow_table_bench" --flows "$ft_n" --seconds "$ft_s" --sweeps "$ft_sweeps" \
      --lf-baseline 2>>"$out/bench-flow-table.log" | tail -1)
    la1=$(cut -d' ' -f1 /proc/loadavg)
    ft_runs+=("$(printf '%s' "$j" | sed "s/}\$/,\"load_avg_1m\":[$la0,$la1]}/")")
  done
done

GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$out/bench.json" "$cpu" "${ft_runs[@]}" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
runs = [json.loads(a) for a in sys.argv[3:]]
med = statistics.median
by = {}
for r in runs:
    by.setdefault(r["flows"], []).append(r)
rows, summary = [], {}
def spread(v, f="{:.1f}"):
    return f"runs {f.format(min(v))}-{f.format(max(v))}"
for n, rs in sorted(by.items()):
    tag = f"{n / 1e6:g} M flows" if n >= 1000000 else f"{n:,} flows"
    la = [x for r in rs for x in r["load_avg_1m"]]
    s = {}
    for t in ("ours", "rte_hash", "rte_hash_lf"):
        if t not in rs[0]["bytes_per_flow"]:
            continue
        b = [r["bytes_per_flow"][t]["rss"] for r in rs]
        rte = med([r["bytes_per_flow"][t]["rte_heap"] for r in rs])
        cxx = med([r["bytes_per_flow"][t]["cxx_heap"] for r in rs])
        s[f"bytes_{t}"] = med(b)
        what = {"ours": f"dp::FlowTable: 64 B slot per IPv4 flow (16 B key + "
                        f"{rs[0]['flow_entry_bytes']} B FlowEntry) + 4 B tag, "
                        f"{rs[0]['positions'] // 2} slots",
                "rte_hash": f"plain rte_hash (no flags), capacity {rs[0]['rte_hash_capacity']}",
                "rte_hash_lf": "rte_hash with the flags FlowTable used before it had its own table (LF, multi-writer, ext)"}[t]
        rows.append((f"bytes/flow {t} ({tag})", f"{med(b):.1f} B",
                     f"resident set delta / flows; {spread(b)}; allocated: DPDK heap {rte:.1f}, "
                     f"C++ heap {cxx:.1f}; {what}" + ("; target <= 64 B at 10 M" if t == "ours" else "")))
    for t in rs[0]["lookup_cycles"]:
        v = [r["lookup_cycles"][t]["median"] for r in rs]
        p10 = med([r["lookup_cycles"][t]["p10"] for r in rs])
        p90 = med([r["lookup_cycles"][t]["p90"] for r in rs])
        s[f"lookup_{t}"] = med(v)
        api = rs[0]["ours_api"] if t == "ours" else ""
        rows.append((f"lookup {t} ({tag})", f"{med(v):.1f} cyc/key",
                     f"{spread(v)}; windows p10-p90 {p10:.1f}-{p90:.1f}" + (f"; {api}" if api else "")))
    rat = [r["ratio_ours_rte_hash"]["median"] for r in rs]
    s["ratio"] = med(rat)
    rows.append((f"lookup ours / rte_hash ({tag})", f"{med(rat):.3f}",
                 f"{spread(rat, '{:.3f}')}; per rotation, vs rte_hash_lookup_with_hash_bulk on the "
                 f"plain rte_hash; target <= 1.0"))
    for t in rs[0]["insert_keys_per_s"]:
        v = [r["insert_keys_per_s"][t] / 1e6 for r in rs]
        s[f"insert_{t}"] = med(v)
        rows.append((f"insert {t} ({tag})", f"{med(v):.2f} Mkey/s", f"{spread(v, '{:.2f}')}; one thread, "
                     f"every key once into an empty table sized for all"))
    ms = [r["expiry"]["ms"]["median"] for r in rs]
    ns = [r["expiry"]["ns_per_entry"]["median"] for r in rs]
    rc = [r["expiry"]["reclaim_ms"]["median"] for r in rs]
    s["expiry_ms"], s["expiry_ns_per_entry"] = med(ms), med(ns)
    rows.append((f"expiry sweep ({tag})", f"{med(ms):.0f} ms",
                 f"{med(ns):.1f} ns/entry scanned ({spread(ns)}); FlowTable::expire, full table, 10 % "
                 f"idle past timeout; reclaim after {med(rc):.0f} ms; {rs[0]['expiry']['sweeps']} sweeps/run"))
    s["load_avg_1m"] = [min(la), max(la)]
    rows.append((f"load average during runs ({tag})", f"{min(la):.1f}-{max(la):.1f}",
                 "1-minute load average on this shared 2-core machine"))
    summary[str(n)] = s
r0 = runs[0]
cond = (f"bench/flow_table_bench: IPv4 5-tuple keys (random addresses/ports, TCP or UDP, seed "
        f"{r0['seed']}) made by gwlb::makeFlowKey (40 B), hashes by gwlb::flowHash; every table "
        f"sized for exactly the flows it holds (capacity = flows) and filled; release build, EAL "
        f"--no-huge (4 KiB pages), main lcore pinned to cpu {r0['cpu']}, TSC {r0['tsc_hz'] / 1e9:.2f} "
        f"GHz (cycles are TSC cycles); lookups: existing keys in random order, bursts of "
        f"{r0['burst']}, windows of {r0['window_keys']} keys staged in a small array, variants "
        f"rotating window by window, each window new keys, every lookup must hit; medians over "
        f"windows per run, then over {len(runs) // len(by)} runs per size")
emit("flow_table", {"runs": runs, "summary": summary}, rows, cond, sys.argv[1], sys.argv[2],
     width=44, value_width=14)
PY
fi

# Figure 3. Maglev: table build time for 1,000 servers at M = 65537 and
#    655373 (equal and spread weights), and the share of slots moved when one
#    server of 10 is removed.
if runs maglev; then
mg_la=$(cut -d' ' -f1 /proc/loadavg)
mg_json=$("$GWLB_BUILD/bench/maglev_bench" --servers 1000 --sizes 65537,655373 --rounds "$mg_rounds" \
  2>>"$out/bench-maglev.log" | tail -1)
mg_la="$mg_la-$(cut -d' ' -f1 /proc/loadavg)"
GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$mg_json" "$out/bench.json" "$cpu" "$mg_la" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
d = json.loads(sys.argv[1])
d["load_avg_1m"] = sys.argv[4]
rows = []
for b in d["build"]:
    w = "equal weights" if b["weights"] == "equal" else "weights 1..100"
    ms = b["ms"]
    target = "; target <= 1.8 ms" if b["size"] == 65537 and b["weights"] == "equal" else ""
    rows.append((f"build {d['servers']} servers, M={b['size']}, {w}", f"{ms['median']:.3f} ms",
                 f"min {ms['min']:.3f}, p10-p90 {ms['p10']:.3f}-{ms['p90']:.3f}, max {ms['max']:.3f}{target}"))
for r in d["removal"]:
    w = "equal weights" if r["weights"] == "equal" else "weights 1..10"
    ideal = "ideal 0.1000" if r["weights"] == "equal" else "ideal = its weight / 55"
    rows.append((f"1 of 10 removed, M={r['size']}, {w}: moved", f"{r['moved']['median']:.4f}",
                 f"share of all slots, median over the 10 choices (min {r['moved']['min']:.4f}, max "
                 f"{r['moved']['max']:.4f}); {ideal}; above ideal by {r['excess']['median']:.4f} "
                 f"(max {r['excess']['max']:.4f})"))
    rows.append(("  ... of the 9 others' slots, moved", f"{r['kept_moved']['median']:.4f}",
                 f"max {r['kept_moved']['max']:.4f}; ideal 0"))
cond = (f"bench/maglev_bench: gwlb::buildMaglevTable, names = addresses as text (as gwlbd), "
        f"{d['rounds']} timed rounds after 3 untimed, each round builds every case once in turn "
        f"(steady_clock around the call, table allocation included); one thread, not pinned; "
        f"removal = weight 0 (checked equal to leaving it out); 1-minute load average {sys.argv[4]}")
emit("maglev", d, rows, cond, sys.argv[2], sys.argv[3], width=48, value_width=10)
PY
fi

# Figure 4. Snapshot publication under load: dp::workerLoop on lcore 1 between
#    two net_ring ports, the main lcore publishing 1,000 snapshots/s; time until
#    every worker has seen each, and packets lost. `rounds` runs.
if runs snapshot; then
sb_runs=()
for r in $(seq "$rounds"); do
  la0=$(cut -d' ' -f1 /proc/loadavg)
  j=$("$GWLB_BUILD/bench/snapshot_bench" --seconds "$sb_s" --idle-seconds 2 --rate 1000 \
    2>>"$out/bench-snapshot.log" | tail -1)
  la1=$(cut -d' ' -f1 /proc/loadavg)
  sb_runs+=("$(printf '%s' "$j" | sed "s/}\$/,\"load_avg_1m\":[$la0,$la1]}/")")
done
GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$out/bench.json" "$cpu" "${sb_runs[@]}" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
runs = [json.loads(a) for a in sys.argv[3:]]
med = statistics.median
rows = []
def us(v):
    return f"{v / 1e3:.2f}"
for ph in ("loaded", "idle"):
    for kind, label in (("seen_ns", "all"), ("undisturbed_ns", "undisturbed")):
        ds = [r[ph][kind] for r in runs if r[ph][kind] and r[ph][kind]["n"]]
        if not ds:
            continue
        p50 = [d["p50"] for d in ds]
        p99 = [d["p99"] for d in ds]
        mx = [d["max"] for d in ds]
        n = sum(d["n"] for d in ds)
        tot = sum(r[ph]["publications"] for r in runs)
        over = sum(d["over_10us"] for d in ds)
        rows.append((f"seen by all, {ph}, {label}: p50/p99", f"{us(med(p50))}/{us(med(p99))} us",
                     f"p99 runs {us(min(p99))}-{us(max(p99))}; max {us(max(mx))} us; {n} of {tot} "
                     f"publications; {over} over 10 us" + ("; target p99 <= 10 us" if ph == "loaded" else "")))
for ph in ("loaded", "idle"):
    rate = [r[ph]["publications"] / r[ph]["seconds"] for r in runs]
    late = sum(r[ph]["late"] for r in runs)
    rows.append((f"publications/s achieved, {ph}", f"{med(rate):.0f}",
                 f"runs {min(rate):.0f}-{max(rate):.0f}; asked {runs[0]['rate']}; {late} behind schedule"))
mpps = [r["loaded"]["mpps"] for r in runs]
rows.append(("worker forwarded during updates", f"{med(mpps):.3f} Mpps",
             f"runs {min(mpps):.3f}-{max(mpps):.3f}; bounded by the control thread feeding the ring"))
b = [r["build_ns"]["p50"] for r in runs]
rows.append(("snapshot build (buildSnapshot)", f"{us(med(b))} us",
             f"median per run, runs {us(min(b))}-{us(max(b))}; p99 {us(med([r['build_ns']['p99'] for r in runs]))} us"))
gap = [r["max_loop_gap_ns"] for r in runs]
rows.append(("worker longest poll-loop gap", f"{us(max(gap))} us",
             "max over runs (heartbeat): the longest time the worker did not run its loop"))
fed = sum(r["fed"] for r in runs)
out = sum(r["out"] for r in runs)
drops = sum(r["drops"] for r in runs)
lost = sum(r["lost"] for r in runs)
names = {}
for r in runs:
    for k, v in r["drops_by_counter"].items():
        names[k] = names.get(k, 0) + v
rows.append(("packets lost", f"{lost}", f"fed {fed}, out {out}, dropped by named counters {drops} "
             f"{names if names else ''}; target 0"))
la = [x for r in runs for x in r["load_avg_1m"]]
rows.append(("load average during runs", f"{min(la):.1f}-{max(la):.1f}",
             "1-minute load average, shared 2-core machine"))
r0 = runs[0]
cond = (f"bench/snapshot_bench: dp::workerLoop (1 worker, lcore {r0['worker_lcore']} on cpu 1) polling "
        f"two net_ring ports (rte_eth_from_rings), control = main lcore {r0['main_lcore']} on cpu 0; "
        f"{r0['flows']} established flows, {r0['frame_bytes']} B UDP/IPv4 -> aws Geneve to 3 "
        f"appliances, bursts of {r0['burst']}; the control thread keeps 3,072+ packets queued on "
        f"the feed ring, drains the TX rings and publishes {r0['rate']} snapshots/s "
        f"(buildSnapshot from the config, alternating one appliance healthy/unhealthy in a "
        f"no_rebalance group; swap; rte_rcu_qsbr_start; poll rte_rcu_qsbr_check non-blocking; "
        f"free the old one); seen = TSC from just before the swap until the check succeeds; "
        f"undisturbed = publications during which neither thread was switched out "
        f"(/proc/self/task/*/schedstat timeslices unchanged); loaded {r0['loaded']['seconds']:.0f} s "
        f"then idle {r0['idle']['seconds']:.0f} s per run, {len(runs)} runs; medians of per-run "
        f"percentiles; lost = fed - out - named drops")
emit("snapshot", {"runs": runs}, rows, cond, sys.argv[1], sys.argv[2], width=44, value_width=16)
PY
fi

# ---- traffic classes, the structure by measurement ------
# ClassTable (cross product; bit vectors) beside DPDK's rte_acl and rte_lpm on
# the same rules and packets: build time, memory, cycles per classification.
if runs classes; then
cb_la=$(cut -d' ' -f1 /proc/loadavg)
cb_json=$("$GWLB_BUILD/bench/class_bench" --builds "$cb_builds" --reps "$cb_reps" \
  2>>"$out/bench-classes.log" | tail -1)
cb_la="$cb_la-$(cut -d' ' -f1 /proc/loadavg)"
GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$cb_json" "$out/bench.json" "$cpu" "$cb_la" "$(nproc)" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
d = json.loads(sys.argv[1])
d["load_avg_1m"] = sys.argv[4]
def mem(b):
    return f"{b / 2**20:.1f} MiB" if b >= 2**20 else f"{b / 1024:.1f} KiB"
print(f"\n{'rule set':12} {'structure':24} {'build ms':>10} {'memory':>11} {'cycles/packet':>14}")
for r in d["rows"]:
    print(f"{r['set']:12} {r['structure']:24} {r['build_ms']:10.3f} {mem(r['memory_bytes']):>11} "
          f"{r['cycles']['median']:14.1f}")
by = {(r["set"], r["structure"]): r for r in d["rows"]}
rows = []
for s in dict.fromkeys(r["set"] for r in d["rows"]):
    cp = by[(s, "cross_product")]
    acl = by[(s, "rte_acl (bursts of 32)")]
    for name in ("bit_vectors", "rte_acl (bursts of 32)", "rte_acl (one packet)", "rte_lpm (src, dst)"):
        if (s, name) in by:
            r = by[(s, name)]
            rows.append((f"{s}: {name} / cross product", f"{r['cycles']['median'] / cp['cycles']['median']:.2f}",
                         f"cycles/packet {r['cycles']['median']:.1f} vs {cp['cycles']['median']:.1f}; build "
                         f"{r['build_ms']:.1f} vs {cp['build_ms']:.1f} ms; memory {mem(r['memory_bytes'])} vs "
                         f"{mem(cp['memory_bytes'])}"))
    rows.append((f"{s}: ACL rules", f"{acl['acl_rules']}",
                 f"classes expanded (src/dst variants, sets as runs), {acl['classes_left_out']} IPv6-only "
                 f"classes left out; {acl['num_tries']} tries, {acl['alg']}"))
m = d["mix"]["mixed-1000"] if "mixed-1000" in d["mix"] else next(iter(d["mix"].values()))
cond = (f"bench/class_bench: rule sets mixed-N = bench_net.h benchClasses(N), vlan-1000 = one VLAN per "
        f"class, prefix-1000 = one IPv4 /24 per class; IPv4 packets only (rte_acl: IPv4 fields; classes "
        f"whose prefixes are all IPv6 left out); build = median of {d['builds']} compilations from the "
        f"rule list (CPU time of the building thread; wall-clock in the JSON); memory = "
        f"ClassTable::memoryBytes(), DPDK heap delta for rte_acl "
        f"(rules + run-time tables) and rte_lpm; cycles = TSC around {d['passes']} passes over "
        f"{d['mix_packets']} pre-parsed packets (a quarter each towards a class in the first tenth, the "
        f"last tenth, anywhere, random; mixed-1000: {m['no_class']} match none), median of {d['reps']} "
        f"reps; rte_acl_classify in bursts of {d['burst']} and one packet per call; one thread pinned to "
        f"cpu {d['cpu']}, EAL --no-huge; {sys.argv[5]} cores shared, 1-minute load average {sys.argv[4]}")
emit("classes", d, rows, cond, sys.argv[2], sys.argv[3], width=52, value_width=8)
PY
fi

# ---- checking traffic classes ---------------------------
# bench/class_check_bench: parse, validate, warnings (the shadow check) and
# compile on the costliest class sets the schema accepts; the bar is 1 s.
if runs class_check; then
cc_la=$(cut -d' ' -f1 /proc/loadavg)
cc_json=$("$GWLB_BUILD/bench/class_check_bench" --reps "$cc_reps" 2>>"$out/bench-class-check.log" | tail -1)
cc_la="$cc_la-$(cut -d' ' -f1 /proc/loadavg)"
GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$cc_json" "$out/bench.json" "$cpu" "$cc_la" "$(nproc)" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
d = json.loads(sys.argv[1])
d["load_avg_1m"] = sys.argv[4]
def ms(t):
    return "-" if t is None else f"{t['cpu_ms']:.1f} ms"
rows = []
for r in d["rows"]:
    what = "parse" if r["file"] else "validate (no file holds it)"
    first = r["parse"] if r["file"] else r["validate"]
    rows.append((f"{r['shape']}: check", f"{r['check_cpu_ms']:.1f} ms",
                 f"{what} {ms(first)} + warnings {ms(r['warnings'])} (shadow check "
                 f"{'computed' if r['shadow_check_computed'] else 'NOT computed: its bound'}, "
                 f"{r['warning_count']} warnings); {r['classes']} classes, {r['prefixes']} prefixes, "
                 f"{r['bytes'] / 2**20:.2f} MiB of YAML and {r['prefix_files']} prefix files"))
    if r["compile"] is not None:
        rows.append((f"{r['shape']}: compile", f"{r['compile']['cpu_ms']:.1f} ms",
                     f"ClassTable, {r['structure']}, {r['table_bytes'] / 2**20:.1f} MiB (memoryBytes)"))
        rows.append((f"{r['shape']}: check + compile", f"{r['total_cpu_ms']:.1f} ms", "the 1 s bar"))
cond = (f"bench/class_check_bench: CPU time of the thread, median of {d['reps']} reps (wall-clock in the JSON); "
        f"check = parse (parseConfig: YAML to a validated Config) + configWarnings (prefix files read "
        f"from the page cache); compile = ClassTable from the classes as the snapshot "
        f"builder makes it (--compile {d['compile']}); {sys.argv[5]} cores shared, 1-minute load average "
        f"{sys.argv[4]}")
emit("class_check", d, rows, cond, sys.argv[2], sys.argv[3], width=28, value_width=10)
PY
fi

# ---- flow state sync ------------------------------------
# The codec (encode + HMAC, verify + decode, bytes per flow, the rate needed at
# 100 k new flows/s) and warm starts of a 1 M-flow table (from one peer and from
# three) and of a 2 M-flow table, with the control threads' CPU time.
if runs sync; then
# The JSON line each prints (gwlbd's log lines can come after warm_start's).
sync_json=$("$GWLB_BUILD/bench/sync_bench" --records 1000000 --rounds "$sync_rounds" | grep '^{' | tail -1)
# Warm starts: N flows from one peer, 2 N from one, N from three (B asks the first).
warm_json=$(bash "$GWLB_ROOT/bench/warm_start.sh" "$GWLB_BUILD/control/gwlbd" "$sync_flows" | grep '^{' | tail -1)
warm2_json=$(bash "$GWLB_ROOT/bench/warm_start.sh" "$GWLB_BUILD/control/gwlbd" $((2 * sync_flows)) | grep '^{' | tail -1)
warm3_json=$(bash "$GWLB_ROOT/bench/warm_start.sh" "$GWLB_BUILD/control/gwlbd" "$sync_flows" 3 | grep '^{' | tail -1)
warm4_json=$(bash "$GWLB_ROOT/bench/warm_start.sh" "$GWLB_BUILD/control/gwlbd" $((2 * sync_flows)) 3 | grep '^{' | tail -1)
GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$sync_json" "$warm_json" "$out/bench.json" "$cpu" "$(nproc)" \
    "$warm2_json" "$warm3_json" "$(cut -d' ' -f1-3 /proc/loadavg)" "$warm4_json" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
s, w = json.loads(sys.argv[1]), json.loads(sys.argv[2])
w2, w3, w4 = json.loads(sys.argv[6]), json.loads(sys.argv[7]), json.loads(sys.argv[9])
def warm_rows(w):
    # Wall time, then what the two control threads spent (user + sys): B's in
    # all and its phases, the peer's walking the table and encoding.
    b, ph, sv = w["b_cpu"], w.get("b_phases") or {}, w.get("served") or {}
    case = f"warm start, {w['received'] / 1e6:g} M from {w['peers']} peer{'s' if w['peers'] > 1 else ''}"
    return [(case, f"{w['elapsed_s']:.2f} s", f"{w['s_per_million']:.2f} s per million; {w['received']} of "
             f"{w['flows_a']} flows, B holds {w['flows_b']} ({w['state']})"),
            ("  B's control thread cpu", f"{b['user_s'] + b['sys_s']:.2f} s",
             f"user {b['user_s']:.2f}, sys {b['sys_s']:.2f}; verify + decode {ph.get('verify_s', 0):.3f} s, "
             f"install {ph.get('install_s', 0):.3f} s"),
            ("  the peer's", f"{w['a_cpu']['user_s'] + w['a_cpu']['sys_s']:.2f} s",
             f"its ticks included; it says: {sv.get('note', '')}")]
rows = [
    ("record / datagram", f"{s['per_datagram']} x 76 B", f"{s['datagram_bytes']} B datagrams"),
    ("bytes per flow", f"{s['bytes_per_flow']:.1f}", f"UDP payload; {s['frame_bytes_per_flow']:.1f} with Ethernet/IPv4/UDP"),
    ("encode + HMAC", f"{s['encode_records_per_s'] / 1e6:.2f} M rec/s", f"{s['encode_ns_per_record']:.0f} ns/record, one pinned thread"),
    ("verify + decode", f"{s['decode_records_per_s'] / 1e6:.2f} M rec/s", f"{s['decode_ns_per_record']:.0f} ns/record"),
    ("needed at 100 k new flows/s", f"{s['need_datagrams_per_s_at_100k']} dg/s", f"{s['need_mbit_per_s_at_100k']:.1f} Mbit/s per peer on the wire"),
] + warm_rows(w) + warm_rows(w2) + warm_rows(w3) + warm_rows(w4)
cond = (f"bench/sync_bench ({s['records']} records, median of rounds) and bench/warm_start.sh "
        f"(gwlbd on loopback, TCP, --no-huge, workers sleeping 200 us when idle); {sys.argv[5]} cores, "
        f"{sys.argv[4]}; load average {sys.argv[8]}")
emit("sync", {"codec": s, "warm_start": w, "warm_start_2x": w2, "warm_start_3_peers": w3,
              "warm_start_2x_3_peers": w4}, rows, cond,
     sys.argv[3], sys.argv[4])
PY
fi

# ---- Connection churn: new flows per second on one worker -----------------
# bench/churn_bench: every packet a new flow's first, the table held at a
# steady churn_flows flows by the engine's expiry walk running on another cpu
# (virtual clock: each new flow advances it by the idle timeout / flows).
if runs churn; then
churn_json=$("$GWLB_BUILD/bench/churn_bench" --flows "$churn_flows" --new "$churn_new" | grep '^{' | tail -1)
GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$churn_json" "$out/bench.json" "$cpu" "$(nproc)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
d = json.loads(sys.argv[1])
rows = [
    ("cycles per new flow (processBurst)", f"{d['cycles_per_new_flow']:.1f}",
     f"median of {d['windows']} windows, spread {d['spread'][0]:.1f}-{d['spread'][1]:.1f}"),
    ("new flows per second per worker", f"{d['new_flows_per_s'] / 1e6:.2f} M",
     f"TSC {d['tsc_hz'] / 1e6:.0f} MHz / cycles; {d['lcus']:.0f} LCUs' worth (600 new flows/s each)"),
    ("sustained with the expiry (wall)", f"{d['sustained_new_flows_per_s'] / 1e6:.2f} M",
     f"the bench's frame writing included; worker waited for the expiry before {d['bursts_waited']} bursts"),
    ("table held at", f"{d['table_count'][0]}-{d['table_count'][1]}",
     f"capacity {d['capacity']}; {d['expired']} expired while measured, {d['refused_full']} refused"),
    ("expiry thread cpu", f"{d['control_cpu_s']:.2f} s", f"{d['passes']} passes over the table"),
]
cond = (f"bench/churn_bench --flows {d['flows']} --new {d['new_flows']} (UDP/IPv4 64 B, burst {d['burst']}, "
        f"--no-huge, worker and expiry pinned to different cpus); {sys.argv[4]} cores shared, {sys.argv[3]}; "
        f"load average {sys.argv[5]}")
emit("churn", d, rows, cond, sys.argv[2], sys.argv[3], width=36)
PY
fi

# ---- The control thread's walks of the flow table -------------------------
# bench/control_walk_stall on a 16 M-flow table: the engine's housekeeping
# walk (expiry, flow counts, sweep, server-id reclaim), a drain deadline's
# walk and the flows API's pages and counts, each call timed beside a 1 ms
# timer; in slices (gwlbd) and as one call each (--whole: the shape before).
if runs walks; then
wk_run() {
  "$GWLB_BUILD/bench/control_walk_stall" --capacity 16777216 --flows "$wk_flows" --seconds "$wk_s" "$@" \
    | tee -a "$out/bench-walks.log" | grep '^{' | tail -1
}
: >"$out/bench-walks.log"
wk_sliced=$(wk_run)
wk_whole=$(wk_run --whole)
GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 - "$wk_sliced" "$wk_whole" "$out/bench.json" "$cpu" "$(nproc)" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.join(os.environ["GWLB_ROOT"], "bench"))
from report import emit
s, w = json.loads(sys.argv[1]), json.loads(sys.argv[2])
ms = lambda us: f"{us / 1000:.2f} ms"
rows = []
for tag, d in (("slices", s), ("one call, before", w)):
    for ph, what in (("engine", "engine turn"), ("pages", "flows page"), ("counts", "flows count")):
        p = d[ph]
        c = p["calls_us"]
        rows += [
            (f"{what} CPU max ({tag})", ms(c["cpu_max"]),
             f"median {ms(c['cpu_median'])}; wall max {ms(c['max'])}; {c['n']} calls"),
            (f"1 ms timer late max, {what}s ({tag})", ms(p["late_us"]["max"]),
             f"p99 {ms(p['late_us']['p99'])}; load avg {d['load_avg_1m']}"),
        ]
cond = (f"bench/control_walk_stall: capacity {s['capacity']} ({s['slots']} slots), {s['flows']} IPv4 flows "
        f"(an eighth expired), a phase of {s['seconds']} s for each kind of walk on one pinned cpu: one io_context "
        f"running it (the engine with walk budget 1, or 0 with --whole; the flows API's pages or counts back to "
        f"back) beside a 1 ms timer; {sys.argv[5]} cores shared")
emit("walks", {"sliced": s, "whole": w}, rows, cond, sys.argv[3], sys.argv[4], width=54, value_width=10)
PY
fi

# ---- two workers sharing one flow table -----------------
# bench/multi_worker_bench: 1 worker alone, 2 workers with symmetric RSS, 2
# with each flow's returns on the other worker (asymmetric), 2 while a
# control thread beside worker 0 publishes 100 and 1,000 snapshots/s; per
# flow count, plus the asymmetric cost with bursts of 1 (no prefetch overlap).
if runs workers; then
mw_runs=()
mw_run() {
  local la0 la1 j
  la0=$(cut -d' ' -f1 /proc/loadavg)
  j=$("$GWLB_BUILD/bench/multi_worker_bench" --reps "$mw_reps" --seconds "$mw_s" "$@" \
    2>>"$out/bench-workers.log" | tail -1)
  la1=$(cut -d' ' -f1 /proc/loadavg)
  mw_runs+=("$(printf '%s' "$j" | sed "s/}\$/,\"load_avg_1m\":[$la0,$la1]}/")")
}
: >"$out/bench-workers.log"
for mw_n in $mw_sizes; do mw_run --flows "$mw_n"; done
mw_run --flows 4096 --burst 1 --rates ""
GWLB_ROOT="$GWLB_ROOT" /usr/bin/python3 "$GWLB_ROOT/bench/workers_report.py" "$out/bench.json" "$cpu" \
  "$(nproc)" "${mw_runs[@]}"
fi
