#!/usr/bin/env bash
# The soak (docs/testing.md, "Soak"): the fleet lab (scripts/lab.sh up --gateways 3
# --listeners 2: three gwlbd + BIRD behind the router's ECMP with BFD, two tenants'
# listeners of two appliances each, a bypass class) under traffic and a seeded
# schedule of faults for N minutes, a sample of every gwlbd each second, then the checker.
# Partners: tenant-b's appliances hand flows back past a stream depth (app3 for the
# flow's life: a stateful firewall loses a TCP window it stops seeing; app4 for 20 s,
# renewed), and a fifth appliance, app5, is a mirror group's passive tool getting
# every 4th packet of tenant-a (LAB_TOOL=1, LAB_BYPASS=0; SOAK_BYPASS_DEPTH bytes, 32768:
# two seconds of a stream, within one 5 s round of the appliances' counters).
#   scripts/soak.sh [--minutes N] [--seed S] [--out DIR] [--schedule FILE] [--appliances KIND]
#     --minutes N    length of the run (default 3): traffic and faults, then a
#                    quiet tail of 75 s (the flow idle timeout, 60 s, and the sweep)
#     --seed S       the schedule's seed (default 1); the schedule is printed
#                    first and written to DIR/schedule.json
#     --schedule F   replay a schedule file (a run's DIR/schedule.json) instead
#     --out DIR      results (default out/soak-SEED-DATE): report.md, samples.csv,
#                    *.svg, events.jsonl, traffic.jsonl, appliance_flows.jsonl,
#                    the lab's logs (DIR/lab)
#     --appliances K mixed (default: app1 and app3, one per group, are stateful:
#                    nftables conntrack firewalls) | stateful (all four) | plain
#                    (none); LAB_APPLIANCE for scripts/lab.sh (docs/lab.md)
# Every group has send_tcp_reset on_unhealthy and on_deregistration (LAB_TCP_RESET=1,
# the default here; LAB_TCP_RESET=0 turns them off: a TCP flow moved to a stateful
# appliance then hangs, and the checker fails the stream); the traffic's streams
# reconnect after a reset, and the checker's `resets` judges each reset.
# Traffic settings (environment): SOAK_STREAMS (24), SOAK_STREAM_RATE (16000
# bytes/s each), SOAK_CONN_RATE (200 new connections/s), SOAK_UDP_FLOWS (8),
# SOAK_PING_RATE (5/s); lab settings as scripts/lab.sh reads them (LAB_BFD_MULT, ...).
# Namespaces: ${GWLB_E2E_PREFIX:-e2e}-soak-*. Exit: 0 every invariant held,
# 1 one did not (DIR/report.md), 2 usage, 77 no root or no namespaces (skip).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
minutes=3 seed=1 out="" schedule="" appliances="${LAB_APPLIANCE:-mixed}"
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="${2:?--minutes N}"; shift 2 ;;
    --seed) seed="${2:?--seed S}"; shift 2 ;;
    --out) out="${2:?--out DIR}"; shift 2 ;;
    --schedule) schedule="${2:?--schedule FILE}"; shift 2 ;;
    --appliances) appliances="${2:?--appliances plain|mixed|stateful}"; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "soak: unknown argument $1 (--minutes N --seed S --out DIR --schedule FILE --appliances KIND)" >&2; exit 2 ;;
  esac
done
case "$appliances" in plain|mixed|stateful) ;; *) echo "soak: --appliances: '$appliances' is not plain, mixed or stateful" >&2; exit 2 ;; esac
export LAB_APPLIANCE="$appliances" LAB_TCP_RESET="${LAB_TCP_RESET:-1}"
if [ "$(id -u)" != 0 ]; then echo "SKIP: the soak needs root (network namespaces)"; exit 77; fi
export GWLB_BUILD="${GWLB_BUILD:-$ROOT/build}"
out="${out:-$ROOT/out/soak-$seed-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out/lab"
rm -f "$out"/{events.jsonl,samples.csv,traffic.jsonl,appliance_flows.jsonl,run.json,report.md,summary.json} "$out"/*.svg
export LAB_PREFIX="${GWLB_E2E_PREFIX:-e2e}-soak" LAB_DIR="$out/lab"
export LAB_APP_ARGS="${LAB_APP_ARGS:---quiet}"
export LAB_TOOL=1 LAB_BYPASS="${LAB_BYPASS:-0}"
depth="${SOAK_BYPASS_DEPTH:-32768}"
export LAB_APP3_ARGS="${LAB_APP3_ARGS:---bypass-after-bytes $depth}"
export LAB_APP4_ARGS="${LAB_APP4_ARGS:---bypass-after-bytes $depth --bypass-seconds 20}"
PY=/usr/bin/python3
t_start=$SECONDS

if [ -n "$schedule" ]; then
  cp "$schedule" "$out/schedule.json" || exit 2
  $PY -c "import json, sys; sys.path.insert(0, '$ROOT/tools'); import soak_schedule as s; s.print_schedule(json.load(open('$out/schedule.json')))" \
    | tee "$out/schedule.txt"
else
  $PY "$ROOT/tools/soak_schedule.py" --seed "$seed" --minutes "$minutes" --json "$out/schedule.json" \
    | tee "$out/schedule.txt" || exit 2
fi

lab() { "$ROOT/scripts/lab.sh" "$@"; }
lab up --gateways 3 --listeners 2
rc=$?
if [ "$rc" = 3 ]; then echo "SKIP: network namespaces cannot be created here"; exit 77; fi
if [ "$rc" != 0 ]; then echo "soak: the fleet lab did not come up"; lab down; exit 1; fi
driver=""
cleanup() { [ -n "$driver" ] && kill "$driver" 2>/dev/null; lab down >/dev/null 2>&1; rm -f "$LAB_DIR/www/blob.bin"; }
trap cleanup EXIT
trap 'echo "soak: interrupted"; exit 1' INT TERM   # (meson's timeout) the EXIT trap tears the lab down
echo "soak: lab up in $((SECONDS - t_start)) s; running $minutes min (out: $out; appliances $appliances; send_tcp_reset $([ "$LAB_TCP_RESET" = 1 ] && echo on || echo off); load $(cut -d' ' -f1-3 /proc/loadavg))"

$PY "$ROOT/tools/soak_run.py" --out "$out" --schedule "$out/schedule.json" --src "$ROOT" \
  --build "$GWLB_BUILD" --prefix "$LAB_PREFIX" --lab-dir "$LAB_DIR" \
  --streams "${SOAK_STREAMS:-24}" --stream-rate "${SOAK_STREAM_RATE:-16000}" \
  --conn-rate "${SOAK_CONN_RATE:-200}" --udp-flows "${SOAK_UDP_FLOWS:-8}" --ping-rate "${SOAK_PING_RATE:-5}" &
driver=$!
wait "$driver"
run_rc=$?
driver=""
lab down >/dev/null 2>&1
rm -f "$LAB_DIR/www/blob.bin"
trap - EXIT
[ "$run_rc" = 0 ] || echo "soak: the driver failed (exit $run_rc); checking what it wrote"

$PY "$ROOT/tools/soak_check.py" "$out"
rc=$?
[ "$run_rc" = 0 ] || rc=1
echo "soak: $((SECONDS - t_start)) s in all; report: $out/report.md"
exit $rc
