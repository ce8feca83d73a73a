#!/usr/bin/env bash
# The demo. By default: the namespace lab (scripts/lab.sh, docs/lab.md) with
# stateful appliances (nftables conntrack firewalls, LAB_APPLIANCE=stateful) and
# send_tcp_reset on (LAB_TCP_RESET=1) — a real HTTP download and a long-lived
# TCP stream from a client to a server through gwlbd and two appliances; the
# stream's appliance fails its health check, gwlbd resets the connection (the
# other firewall would drop it), the client reconnects through the other
# appliance; then the lab is torn down.
# Where network namespaces cannot be created it says so and runs the replay demo.
#   scripts/demo.sh [--keep]                    the lab demo (--keep: leave the lab up)
#   scripts/demo.sh --replay [--flows N] [--workers N] [--out DIR]
#       a generated capture replayed through the real dataplane (gwlb-replay)
#       with three reflecting appliances: per-appliance distribution, output captures
set -euo pipefail
# Only the programs the demo runs (about a third of the build; scripts/test.sh
# builds the rest, the tests).
GWLB_BUILD_TARGETS=(control/gwlbd cli/gwlbctl tools/gwlb-appliance tools/gwlb-replay)
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

mode=lab keep=0 flows=300 workers=1 out="$GWLB_ROOT/out/demo"
while [ $# -gt 0 ]; do
  case "$1" in
    --replay) mode=replay; shift ;;
    --keep) keep=1; shift ;;
    --flows) flows="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

replay_demo() {
  mkdir -p "$out"
  /usr/bin/python3 "$GWLB_ROOT/tools/gen_sample_pcap.py" "$out/traffic.pcap" --flows "$flows"
  echo "config: $GWLB_ROOT/examples/replay.yaml (3 appliances, aws Geneve format)"
  "$GWLB_BUILD/tools/gwlb-replay" --config "$GWLB_ROOT/examples/replay.yaml" \
    --in "$out/traffic.pcap" --out-dir "$out" --reflect --workers "$workers"
  echo
  echo "input:               $out/traffic.pcap"
  echo "sent to appliances:  $out/to-appliances.pcap   (tshark -r ... -V shows the Geneve options)"
  echo "returned to routers: $out/returned.pcap"
  echo "summary:             $out/summary.json"
}

if [ "$mode" = replay ]; then replay_demo; exit 0; fi

lab="$GWLB_ROOT/scripts/lab.sh"
export GWLB_BUILD
if [ "$(id -u)" -ne 0 ] || ! ip netns add gwlab-demo-probe 2>/dev/null; then
  echo "demo: cannot create network namespaces here (needs root or CAP_SYS_ADMIN);"
  echo "demo: running the capture-replay demo instead (scripts/demo.sh --replay)"
  echo
  replay_demo
  exit 0
fi
ip netns del gwlab-demo-probe

D="${LAB_DIR:-$GWLB_ROOT/out/lab}"
P="${LAB_PREFIX:-gwlab}"
export LAB_APPLIANCE=stateful LAB_TCP_RESET=1 LAB_FAILOVER=rebalance
peer="$GWLB_ROOT/tests/e2e/netpeer.py"
stream_pid="" echo_pid=""
cleanup() {
  [ -n "$stream_pid" ] && kill "$stream_pid" 2>/dev/null || true
  [ -n "$echo_pid" ] && kill "$echo_pid" 2>/dev/null || true
  if [ "$keep" = 1 ]; then echo "demo: lab left up (scripts/lab.sh down removes it)"; else "$lab" down; fi
}
trap cleanup EXIT
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
ctl() { echo "\$ gwlbctl $*"; "$lab" gwlbctl "$@"; }

step "1. the lab: client -> router -> gateway (gwlbd) -> appliances -> server (docs/lab.md)"
"$lab" down >/dev/null
"$lab" up
ctl servers
echo
echo "each appliance is gwlb-appliance --tun feeding its kernel, which forwards through this firewall"
echo "(scripts/lab_stateful.nft): a TCP segment of a connection whose SYN it never saw is dropped"
echo "\$ scripts/lab.sh exec app1 nft list chain inet gwlb_appliance forward"
"$lab" exec app1 nft list chain inet gwlb_appliance forward | grep -v '^\s*$'

step "2. a real HTTP download: curl in the client namespace, Python http.server in the server namespace"
ip netns exec "$P-client" curl -s -o "$D/download.bin" \
  -w 'downloaded %{size_download} bytes in %{time_total} s (%{speed_download} B/s)\n' "http://10.77.2.2/blob.bin"
if cmp -s "$D/download.bin" "$D/www/blob.bin"; then echo "the 16 MiB file arrived intact"; else echo "DOWNLOAD CORRUPTED"; exit 1; fi

step "3. a long-lived TCP stream (500 kB/s for 10 s, every byte echoed by the server and checked)"
ip netns exec "$P-server" /usr/bin/python3 "$peer" tcp-echo-server 10.77.2.2 7000 >/dev/null 2>&1 &
echo_pid=$!
ip netns exec "$P-server" /usr/bin/python3 "$peer" wait-ready tcp 10.77.2.2 7000 30
# tcp-watch ... reconnect: a client that opens a new connection when its own is reset
ip netns exec "$P-client" /usr/bin/python3 "$peer" tcp-watch 10.77.2.2 7000 10 500000 12 reconnect \
  > "$D/stream.out" &
stream_pid=$!
app=""
for _ in $(seq 1 300); do  # until the stream is in gwlbd's flow table (30 s at most)
  app=$("$lab" gwlbctl --json flows --proto tcp --port 7000 | /usr/bin/python3 -c '
import json, sys
f = json.load(sys.stdin)["flows"]
print(f[0]["appliance"] if f else "")')
  [ -n "$app" ] && break
  sleep 0.1
done
[ -n "$app" ] || { echo "demo: the stream is not in the flow table"; exit 1; }
ctl flows --proto tcp
echo "the stream goes through appliance $app"
sleep 1

step "4. appliance $app fails its HTTP health check (GET /health now answers 503)"
t0=$(date +%s%N)
ip netns exec "$P-gw" curl -s -XPOST "http://$app:8080/health/fail"
for _ in $(seq 1 100); do
  "$lab" gwlbctl --json servers | grep -q '"state": "unhealthy"' && break; sleep 0.05
done
echo "declared unhealthy after $(( ($(date +%s%N) - t0) / 1000000 )) ms (failure window: gwlbctl servers, WINDOWS column)"
ctl servers
echo "(send_tcp_reset.on_unhealthy is on. Without it, rebalance would move the stream to the other"
echo " appliance, whose conntrack never saw its SYN: every segment dropped, the client hanging for minutes)"

step "5. the client is reset and reconnects through the other appliance"
wait "$stream_pid" || true
stream_pid=""
/usr/bin/python3 - "$D/stream.out" "$t0" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
t0 = int(sys.argv[2]) / 1e9
print(f"client: {r['received']} of {r['sent']} bytes echoed, intact: {r['intact']}; then {r['error']} "
      f"{r['error_at'] - t0:.2f} s after the fault" if r["error"] else f"client: no error: {r}")
re = r["reconnect"] or {}
if "first_byte_at" not in re:
    sys.exit(f"the client did not reconnect: {re}")
print(f"reconnected from port {re['sport']}: first byte echoed {re['first_byte_at'] - t0:.2f} s after the fault")
PY
echo "\$ gwlbctl stats | grep tcp_resets"
"$lab" gwlbctl stats | grep tcp_resets
invalid=0
for a in app1 app2; do
  fw=$("$lab" exec $a nft -j list counters table inet gwlb_appliance | /usr/bin/python3 -c '
import json, sys
c = {o["counter"]["name"]: o["counter"]["packets"] for o in json.load(sys.stdin)["nftables"] if "counter" in o}
print(", ".join(f"{k} {c[k]}" for k in ("new_tcp_syn", "established", "drop_invalid")))')
  echo "$a's firewall: $fw"
  invalid=$((invalid + ${fw##*drop_invalid }))
done
echo "(the new connection's SYN passed the other firewall as new_tcp_syn; $invalid segment(s) dropped as invalid)"

step "6. the appliance recovers"
ip netns exec "$P-gw" curl -s -XPOST "http://$app:8080/health/ok"
for _ in $(seq 1 100); do
  "$lab" gwlbctl --json servers | grep -q '"state": "unhealthy"' || break; sleep 0.05
done
ctl servers

step "7. tear down"
