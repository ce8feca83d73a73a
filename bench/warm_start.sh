#!/usr/bin/env bash
# Benchmark (never pass/fail): warm start of a gwlbd whose peers hold N flows.
# PEERS nodes A1..Ap each replay the same capture of N new
# UDP flows (net_pcap), then node B starts with them as its peers and asks
# the first for its table over TCP on loopback; the time is B's own measure
# (API fleet_sync: warm_start.elapsed_s, from B's sync start to the end
# message, all records installed), and B's flow count is compared with A1's.
# CPU: user and system seconds of each gwlbd's control thread (its main
# thread, /proc/PID/task/PID/stat) over the warm start, read from B's
# control socket's appearance (the warm start begins then) to its end (A1's
# other work in that time included: its ticks walk its table); and the phases the two gwlbd measure themselves (B:
# warm_start.cpu in fleet_sync; the peer: its "sent ... flows" log line).
# Workers sleep 200 us when a poll finds nothing (node.idle_sleep_us): on a
# shared machine busy-polling workers would measure the contention for the
# cores, not the warm start.
#   bench/warm_start.sh GWLBD [FLOWS] [PEERS]   (defaults 1,000,000 and 1)
# Prints a summary, then one JSON line.
set -euo pipefail
gwlbd="$1" flows="${2:-1000000}" npeers="${3:-1}"
src=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
work=$(mktemp -d /tmp/gwlb-warm-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work" /var/run/dpdk/gwlbwarm*$$' EXIT
$py "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows "$flows" >/dev/null
$py "$src/tools/gen_flows_pcap.py" "$work/empty.pcap" --flows 0 >/dev/null
port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pb=$(port)
size=$((1 << 21)); while [ $size -lt $((flows * 2)) ]; do size=$((size * 2)); done
config() {  # NAME PCAP SYNC PEERS(yaml list)
  cat <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe, idle_sleep_us: 200 }
dataplane: { workers: 1, mbufs: 8192, flow_table_size: $size }
control: { socket: $work/$1.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--file-prefix", "gwlbwarm$1$$", "-m", "2048",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning", "--vdev", "net_pcap0,rx_pcap=$2,tx_pcap=/dev/null"]
server_groups:
  - { name: fw, other_idle_timeout: 6000, servers: [ { address: 10.0.0.1 }, { address: 10.0.0.2 }, { address: 10.0.0.3 }, { address: 10.0.0.4 } ] }
fleet: { node_name: gw-$1, secret: 00112233445566778899aabbccddeeff, sync_listen: "127.0.0.1:$3", peers: $4, warm_start_timeout: 60s }
YAML
}
api() {  # SOCK METHOD [PARAMS-JSON]
  $py - "$1" "$2" "${3:-{\}}" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(json.dumps({"method": sys.argv[2], "params": json.loads(sys.argv[3])}).encode() + b"\n")
print(json.dumps(json.loads(s.makefile().readline())["result"]))
PY
}
# The table's flow count (stats; the flows method's count is one page's).
count() { api "$1" stats | $py -c 'import json,sys; print(json.load(sys.stdin)["flows"])'; }
# The control thread's (the main thread's) user and system clock ticks.
cputicks() { awk '{ sub(/.*\) /, ""); print $12, $13 }' "/proc/$1/task/$1/stat"; }
peer_list=() pids=()
for i in $(seq 1 "$npeers"); do
  pa=$(port)
  peer_list+=("\"127.0.0.1:$pa\"")
  config "a$i" "$work/flows.pcap" "$pa" "[\"127.0.0.1:$pb\"]" > "$work/a$i.yaml"
  "$gwlbd" --config "$work/a$i.yaml" > "$work/a$i.log" 2>&1 &
  pids+=($!)
done
config b "$work/empty.pcap" "$pb" "[$(IFS=,; echo "${peer_list[*]}")]" > "$work/b.yaml"
for i in $(seq 1 "$npeers"); do
  for _ in $(seq 1 240); do [ -S "$work/a$i.sock" ] && break; sleep 0.25; done
done
# Each A's warm start gives up (B is not up yet); wait for every flow on each.
for i in $(seq 1 "$npeers"); do
  for _ in $(seq 1 1200); do
    n=$(count "$work/a$i.sock"); [ "$n" -ge "$flows" ] && break; sleep 0.5
  done
done
na=$(count "$work/a1.sock")
load=$(cut -d' ' -f1-3 /proc/loadavg)
"$gwlbd" --config "$work/b.yaml" > "$work/b.log" 2>&1 &
pid_b=$!
for _ in $(seq 1 3000); do [ -S "$work/b.sock" ] && break; sleep 0.02; done
b_cpu0=$(cputicks $pid_b) a_cpu0=$(cputicks "${pids[0]}")
t0=$(date +%s.%N)
for _ in $(seq 1 3000); do
  w=$(api "$work/b.sock" fleet_sync | $py -c 'import json,sys; w=json.load(sys.stdin)["warm_start"]; print(json.dumps(w) if w["done"] else "")')
  [ -n "$w" ] && break; sleep 0.1
done
b_cpu1=$(cputicks $pid_b) a_cpu1=$(cputicks "${pids[0]}")
window=$(echo "$(date +%s.%N) - $t0" | bc)
nb=$(count "$work/b.sock")
sent=$(grep -h "sent .* flows to" "$work"/a*.log | tail -1 || true)
$py - "$w" "$na" "$nb" "$(nproc)" "$npeers" "$a_cpu0 $a_cpu1" "$b_cpu0 $b_cpu1" "$load" "$sent" "$(getconf CLK_TCK)" "$window" <<'PY'
import json, re, sys
w, na, nb, cpus, npeers = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
hz = float(sys.argv[10])
def cpu(s):
    u0, s0, u1, s1 = map(int, s.split())
    return {"user_s": (u1 - u0) / hz, "sys_s": (s1 - s0) / hz}
a, b, load, sent = cpu(sys.argv[6]), cpu(sys.argv[7]), sys.argv[8], sys.argv[9]
window = float(sys.argv[11])
m = re.search(r"sent (\d+) flows to \S+ in ([\d.]+) s(.*)", sent)
served = {"flows": int(m.group(1)), "elapsed_s": float(m.group(2)), "note": m.group(3).strip(" ()")} if m else None
per_m = w["elapsed_s"] / max(w["flows_received"], 1) * 1e6
print(f"warm start from {npeers} peer(s): {w['state']}, {w['flows_received']} of A1's {na} flows received, "
      f"B holds {nb}, in {w['elapsed_s']:.2f} s ({per_m:.2f} s per million); two-plus gwlbd on loopback, "
      f"{cpus} shared cpus, load average before B started {load}")
print(f"  B's control thread: user {b['user_s']:.2f} s, sys {b['sys_s']:.2f} s; "
      f"A1's: user {a['user_s']:.2f} s, sys {a['sys_s']:.2f} s over {window:.2f} s (its ticks' "
      f"work included)")
if "cpu" in w:
    print(f"  B's phases (thread cpu): {json.dumps(w['cpu'])}")
if served:
    print(f"  A1: sent {served['flows']} flows in {served['elapsed_s']:.3f} s {served['note']}")
print(json.dumps({"flows_a": na, "flows_b": nb, "received": w["flows_received"], "peers": npeers,
                  "state": w["state"], "elapsed_s": w["elapsed_s"], "s_per_million": per_m,
                  "b_cpu": b, "a_cpu": a, "b_phases": w.get("cpu"), "served": served, "load": load}))
PY
