#!/usr/bin/env bash
# Figure 1 (called by scripts/bench.sh, section `pipeline`): the
# worker pipeline on one lcore through a net_ring port (bench/pipeline_bench),
# beside dpdk-testpmd's io, macswap and 5tswap forwarding over a net_ring port on the
# same lcore in the same run, plus instructions per packet under callgrind
# (bench/instruction_budget.py's cases, with their budgets). The
# established case with the outer checksum offloaded, and established, new and
# return at 64 B UDP on hugepages as well as on 4 KiB pages (root reserves the
# pages for the run and gives them back; without root the rows say why not).
#   bench/run_pipeline.sh BUILD_DIR OUT_DIR MACHINE_TEXT [--quick]
# GWLB_PIPELINE_ONLY=formats (e.g. `GWLB_PIPELINE_ONLY=formats scripts/bench.sh
# --only pipeline`): only testpmd, the harness row, the format and family rows
# and the Geneve aws over IPv4 rows they are compared with (established and
# return, 1,024 flows, 64 B UDP); no hugepage rows.
set -euo pipefail
build="$1" out="$2" machine="$3" quick="${4:-}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cpu=1                   # the worker lcore (core 0 keeps the rest of the machine)
reps=5 rep_packets=2000000 tp_s=3 tp_runs=3 big=1048576
if [ "$quick" = "--quick" ]; then reps=3 rep_packets=500000 tp_s=2 tp_runs=2 big=262144; fi
log="$out/bench-pipeline.log"
: >"$log"
results=()
only="${GWLB_PIPELINE_ONLY:-}"
case "$only" in ""|formats) ;; *) echo "bench: GWLB_PIPELINE_ONLY takes 'formats'" >&2; exit 2 ;; esac
case_run() {  # mode flows size proto [pipeline_bench options (--tx-offload, --huge-dir)]
  local j la0 la1
  if [ "$only" = formats ] && [ "$1" != ring ] && [[ " ${*:5} " != *" --underlay "* ]] &&
     ! { [ $# -eq 4 ] && [ "$2/$3/$4" = 1024/64/udp ] && [[ $1 == established || $1 == return ]]; }; then
    return 0
  fi
  la0=$(cut -d' ' -f1 /proc/loadavg)
  j=$("$build/bench/pipeline_bench" --mode "$1" --flows "$2" --size "$3" --proto "$4" \
      --reps "$reps" --rep-packets "$rep_packets" --cpu "$cpu" "${@:5}" 2>>"$log" | tail -1)
  la1=$(cut -d' ' -f1 /proc/loadavg)
  results+=("$(printf '%s' "$j" | sed "s/}\$/,\"load_avg_1m\":[$la0,$la1]}/")")
}

# testpmd: one forwarding lcore (cpu 1), main lcore on cpu 0, one net_ring
# port whose TX ring is its RX ring (net_ring0 without arguments): --tx-first
# puts one burst in flight and the forwarding keeps it circulating.
# --record-core-cycles reports cycles per packet over non-empty bursts.
# Modes: io (no header touched), macswap (L2 swapped), 5tswap (L2, L3 and L4
# addresses and ports swapped: the closest no-table baseline to our work).
# The baseline is part of the figure: without it the run fails.
if ! command -v dpdk-testpmd >/dev/null; then
  echo "bench: dpdk-testpmd not found: install Debian's dpdk-dev (scripts/setup.sh does); the pipeline figure needs its baseline" >&2
  exit 1
fi
testpmd=()
for mode in io macswap 5tswap; do
  for r in $(seq "$tp_runs"); do
    t=$( (sleep "$tp_s"; echo) | timeout $((tp_s + 30)) dpdk-testpmd -l 0,$cpu --no-huge --no-pci \
         --no-shconf -m 512 --vdev=net_ring0 --log-level=lib.eal:error -- \
         --forward-mode=$mode --record-core-cycles --auto-start --tx-first --nb-cores=1 \
         --burst=32 --txpkts=64 --total-num-mbufs=8192 2>>"$log" |
         sed -n 's/.*CPU cycles\/packet=\([0-9.]*\).*/\1/p' | tail -1)
    [ -n "$t" ] && testpmd+=("{\"mode\":\"$mode\",\"cycles_per_packet\":$t}")
  done
  if ! printf '%s\n' "${testpmd[@]}" | grep -q "\"mode\":\"$mode\""; then
    echo "bench: dpdk-testpmd --forward-mode=$mode gave no cycles/packet in $tp_runs runs (see $log)" >&2
    exit 1
  fi
done

case_run ring 1024 64 udp
for mode in established new return; do
  for flows in 1024 "$big"; do
    for size in 64 512; do
      for proto in udp tcp; do
        case_run "$mode" "$flows" "$size" "$proto"
      done
    done
  done
done

# The outer IPv4/UDP checksum offloaded (mbuf flags and the
# pseudo-header sum, no software sum), as on a NIC that offers it.
case_run established 1024 64 udp --tx-offload

# 1,000 traffic classes of mixed fields (bench/bench_net.h
# benchClasses; the packets match the last class): what classification adds
# to an established packet, against the row without classes of this run.
case_run established 1024 64 udp --classes 1000

# Appliance-requested bypass: established flows their appliance handed back
# (sent straight back, no Geneve), against the established row of this run.
case_run bypassed 1024 64 udp

# Each encapsulation format and underlay family: Geneve aws (the rows above
# over IPv4) and ethernet format, VXLAN (Azure's), over IPv4 and IPv6;
# established and return at 1,024 flows, 64 B UDP, each against the Geneve
# aws over IPv4 row of this run (and 5tswap).
for family in ipv4 ipv6; do
  for format in "--geneve-format ethernet" "--vxlan" "--geneve-format aws"; do
    [ "$family/$format" = "ipv4/--geneve-format aws" ] && continue  # the rows above
    for mode in established return; do
      # shellcheck disable=SC2086  # $format is two words or one
      case_run "$mode" 1024 64 udp --underlay "$family" $format
    done
  done
done

# The same cases on hugepages (as a production gateway runs),
# the flow table in hugepage memory. Root reserves 2 MiB pages beside any
# already reserved and mounts a hugetlbfs of its own; both are given back.
huge_why=""
huge_pages=/proc/sys/vm/nr_hugepages huge_dir="$out/bench-huge" huge_old=""
huge_back() {
  if mountpoint -q "$huge_dir" 2>/dev/null; then rm -f "$huge_dir"/* 2>/dev/null || true; umount "$huge_dir" || true; fi
  [ -z "$huge_old" ] || echo "$huge_old" > "$huge_pages" 2>/dev/null || true
  huge_old=""
}
trap huge_back EXIT
if [ "$only" = formats ]; then
  huge_why="GWLB_PIPELINE_ONLY=formats"
elif [ "$(id -u)" -ne 0 ]; then
  huge_why="needs root to reserve hugepages"
else
  huge_old=$(cat "$huge_pages")
  echo $((huge_old + 384)) > "$huge_pages" 2>/dev/null || true
  if [ "$(cat "$huge_pages")" -lt $((huge_old + 384)) ]; then
    huge_why="the kernel gave $(( $(cat "$huge_pages") - huge_old )) of 384 2 MiB pages"
  else
    mkdir -p "$huge_dir"
    mount -t hugetlbfs -o pagesize=2M none "$huge_dir" || huge_why="cannot mount hugetlbfs"
  fi
fi
if [ -z "$huge_why" ]; then
  for mode in established new return; do
    for flows in 1024 "$big"; do
      case_run "$mode" "$flows" 64 udp --huge-dir "$huge_dir"
    done
  done
else
  echo "bench: no hugepage rows: $huge_why" >&2
fi
huge_back

# Instructions per packet (deterministic): the instruction budget's cases
# (bench/instruction_budget.py, the test instruction_budget's script) under
# callgrind, counted inside processBurst only, on this (release) build.
ins="[]"
if command -v valgrind >/dev/null; then
  ins=$(/usr/bin/python3 "$root/bench/instruction_budget.py" --build "$build" report 2>>"$log" | tail -1) || ins="[]"
fi

BUILDTYPE="$(/usr/bin/python3 -c 'import json,sys; print(next(o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "buildtype"))' "$build/meson-info/intro-buildoptions.json" 2>/dev/null || echo unknown)" \
  ROOT="$root" INS="$ins" HUGE_WHY="$huge_why" /usr/bin/python3 - "$out/bench.json" "$machine" "$(nproc)" "${results[@]}" \
  "--testpmd" "${testpmd[@]}" <<'PY'
import json, os, statistics, sys
sys.path.insert(0, os.path.join(os.environ["ROOT"], "bench"))
from report import emit
args = sys.argv[4:]
i_tp = args.index("--testpmd")
cases = [json.loads(a) for a in args[:i_tp]]
tp = [json.loads(a) for a in args[i_tp + 1:]]
ins = json.loads(os.environ["INS"])
med = statistics.median
hz = cases[0]["tsc_hz"]
tp_by = {}
for t in tp:
    tp_by.setdefault(t["mode"], []).append(t["cycles_per_packet"])
tp_io = med(tp_by["io"]) if "io" in tp_by else None
tp_ms = med(tp_by["macswap"]) if "macswap" in tp_by else None
tp_5t = med(tp_by["5tswap"]) if "5tswap" in tp_by else None
rows = []
for mode, vals in sorted(tp_by.items()):
    m = med(vals)
    rows.append((f"testpmd {mode}, 64 B", f"{m:.1f} cyc/pkt",
                 f"{hz / m / 1e6:.0f} Mpps; runs {min(vals):.1f}-{max(vals):.1f}"))
targets = {"established": 80, "new": 300, "return": 100}
# The format and family of a row (pipeline_bench's encapsulation,
# geneve_format and underlay); rows without them are Geneve aws over IPv4.
def fmt_name(c):
    enc = "VXLAN" if c.get("encapsulation") == "vxlan" else f"Geneve {c.get('geneve_format') or 'aws'}"
    return f"{enc} over {'IPv6' if c.get('underlay') == 'ipv6' else 'IPv4'}"
def fmt_row(c):
    return fmt_name(c) != "Geneve aws over IPv4"
for c in cases:
    cyc = c["cycles_per_packet"]
    if c["mode"] == "ring":
        name = "our harness, rx+tx only (io), 64 B"
    else:
        name = (f"{c['mode']}, {c['flows']:,} flows, {c['size']} B {c['proto'].upper()}")
        # the page size of every row; the offload row
        name += ", hugepages" if c.get("hugepages") else ", 4 KiB pages"
        if c.get("hugepages") and not c.get("flow_table_hugepage_bytes"):
            name += " (flow table not in them)"
        if c.get("tx_offload"):
            name += ", outer checksum offloaded"
        if c.get("classes"):
            name += f", {c['classes']:,} classes"
        if fmt_row(c):
            name += f", {fmt_name(c)}"
    extra = ""
    if tp_io:
        extra = f"; testpmd io/ours {tp_io / cyc:.3f}"
    if tp_ms:
        extra += f", macswap/ours {tp_ms / cyc:.3f}"
    if tp_5t and c["mode"] != "ring":
        extra += f"; ours/5tswap {cyc / tp_5t:.2f}x"
    tgt = targets.get(c["mode"])
    if tgt:
        extra += f"; target <= {tgt}"
    rows.append((name, f"{cyc:.1f} cyc/pkt",
                 f"{c['mpps']:.2f} Mpps; reps {c['spread'][0]:.1f}-{c['spread'][1]:.1f}; "
                 f"load {c['load_avg_1m'][0]}-{c['load_avg_1m'][1]}{extra}"))
# The classes' share of the established packet's cycles (target <= 15 %).
def plain(c):
    return (c["mode"], c["flows"], c["size"], c["proto"], bool(c.get("hugepages")), bool(c.get("tx_offload")))
for c in cases:
    if c.get("classes"):
        base = next((b for b in cases if not b.get("classes") and not fmt_row(b) and plain(b) == plain(c)), None)
        if base:
            rows.append((f"{c['mode']}, {c['flows']:,} flows: {c['classes']:,} classes add",
                         f"{100 * (c['cycles_per_packet'] / base['cycles_per_packet'] - 1):+.1f} %",
                         f"{c['cycles_per_packet']:.1f} vs {base['cycles_per_packet']:.1f} cyc/pkt "
                         f"(medians, same run); target <= +15 %"))
# Each format and family against Geneve aws over IPv4 in the same run (the
# 10 % the IPv6 underlay and VXLAN are held to, for established packets).
for c in cases:
    if fmt_row(c) and not c.get("classes"):
        base = next((b for b in cases if not fmt_row(b) and not b.get("classes") and plain(b) == plain(c)), None)
        if base:
            ratio = f"; ours/5tswap {c['cycles_per_packet'] / tp_5t:.2f}x" if tp_5t else ""
            rows.append((f"{c['mode']}, {c['flows']:,} flows: {fmt_name(c)} vs Geneve aws over IPv4",
                         f"{100 * (c['cycles_per_packet'] / base['cycles_per_packet'] - 1):+.1f} %",
                         f"{c['cycles_per_packet']:.1f} vs {base['cycles_per_packet']:.1f} cyc/pkt "
                         f"(medians, same run){ratio}"
                         + ("; target <= +10 %" if c["mode"] == "established" else "")))
for r in ins:
    if "skipped" in r:
        rows.append((f"{r['case']}: instructions/packet", "-", r["skipped"]))
        continue
    rows.append((f"{r['case']}: instructions/packet", f"{r['per_packet']:.0f}",
                 f"callgrind inside processBurst, 4,096 flows, 64 B UDP, {r['packets']:,} packets, "
                 f"{r['build']} build; budget {r['budget']} (bench/instruction_budget.json)"))
if os.environ.get("HUGE_WHY"):
    rows.append(("hugepage rows", "-", f"not run: {os.environ['HUGE_WHY']}"))
c0 = cases[0]
cond = (f"bench/pipeline_bench, {os.environ['BUILDTYPE']} build; worker = main lcore pinned to cpu {c0['cpu']} "
        f"(EAL --no-huge --no-pci: 4 KiB pages; rows marked hugepages: EAL on 2 MiB "
        f"hugepages reserved for the run, the flow table's tags and IPv4 slots in them; "
        f"'outer checksum offloaded': --tx-offload, the mbuf offload flags and pseudo-header "
        f"sum instead of the software sum, as with a NIC that offers it); a net_ring port (rte_eth_from_rings, own RX and TX rings); "
        f"per burst of {c0['burst']}: untimed = allocate mbufs, write the next flows' frames "
        f"(per-flow header templates), enqueue on the RX ring; timed (rte_rdtsc) = rx_burst + "
        f"dp::processBurst + tx_burst; untimed = drain the TX ring, check every packet came out, "
        f"free. Flows visited in a fixed shuffled order; established/return: the flows exist "
        f"(untimed warm pass), {c0['rep_packets']:,} packets per repetition, {c0['reps']} "
        f"repetitions in one process (median, min-max); new: every packet a new flow, each "
        f"repetition fills an empty table (capacity 2 x flows) with `flows` new flows. aws Geneve "
        f"to 3 appliances (Maglev 65537); rows naming a format and family: the group in Geneve's "
        f"ethernet format (--geneve-format ethernet) or VXLAN (--vxlan), the appliances at IPv4 "
        f"or IPv6 addresses (--underlay ipv6: Geneve or VXLAN over IPv6); return = the "
        f"appliance's reply (outer addresses "
        f"swapped) for each flow, decapsulated back to the router. Mpps = TSC {hz / 1e6:.0f} MHz "
        f"/ cycles (one worker, compute only, rings included). testpmd: dpdk-testpmd io/macswap/5tswap, "
        f"1 forwarding lcore on cpu {c0['cpu']}, net_ring0 (TX ring = RX ring), --tx-first, "
        f"burst 32, 64 B, --record-core-cycles, {len(tp) // max(1, len(tp_by))} runs; ratio = "
        f"testpmd cycles / our cycles (= our rate / testpmd's rate). Machine: {sys.argv[3]} "
        f"cores shared with whatever else runs (load averages given per case). testpmd 5tswap "
        f"swaps L2, L3 and L4 addresses and ports (no table): ours/5tswap = our cycles / "
        f"its cycles (target <= 2x for established, 1k flows)")
emit("pipeline", {"cases": cases, "testpmd": tp, "instructions": ins}, rows, cond,
     sys.argv[1], sys.argv[2], width=46, value_width=15)
PY
