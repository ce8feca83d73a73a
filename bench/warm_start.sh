#!/usr/bin/env bash
# Benchmark (never pass/fail): warm start of a gwlbd whose peer holds N flows
# (issue 16 item 2). Node A replays a capture of N new UDP flows (net_pcap),
# then node B starts with A as its peer and asks it for its table over TCP on
# loopback; the time is B's own measure (API fleet_sync: warm_start.elapsed_s,
# from B's sync start to the end message, all records installed), and B's
# flow count is compared with A's.
#   bench/warm_start.sh GWLBD [FLOWS]      (default 1,000,000)
# Prints a summary, then one JSON line.
set -euo pipefail
gwlbd="$1" flows="${2:-1000000}"
src=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
work=$(mktemp -d /tmp/gwlb-warm-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work" /var/run/dpdk/gwlbwarm?$$' EXIT
$py "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows "$flows" >/dev/null
$py "$src/tools/gen_flows_pcap.py" "$work/empty.pcap" --flows 0 >/dev/null
port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pa=$(port) pb=$(port)
size=$((1 << 21)); while [ $size -lt $((flows * 2)) ]; do size=$((size * 2)); done
config() {  # NAME PCAP SYNC PEER
  cat <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
dataplane: { workers: 1, mbufs: 8192, flow_table_size: $size }
control: { socket: $work/$1.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--file-prefix", "gwlbwarm$1$$", "-m", "2048",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning", "--vdev", "net_pcap0,rx_pcap=$2,tx_pcap=/dev/null"]
server_groups:
  - { name: fw, other_idle_timeout: 6000, servers: [ { address: 10.0.0.1 }, { address: 10.0.0.2 }, { address: 10.0.0.3 }, { address: 10.0.0.4 } ] }
fleet: { node_name: gw-$1, secret: 00112233445566778899aabbccddeeff, sync_listen: "127.0.0.1:$3", peers: ["127.0.0.1:$4"], warm_start_timeout: 60s }
YAML
}
config a "$work/flows.pcap" "$pa" "$pb" > "$work/a.yaml"
config b "$work/empty.pcap" "$pb" "$pa" > "$work/b.yaml"
api() {  # SOCK METHOD [PARAMS-JSON]
  $py - "$1" "$2" "${3:-{\}}" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(json.dumps({"method": sys.argv[2], "params": json.loads(sys.argv[3])}).encode() + b"\n")
print(json.dumps(json.loads(s.makefile().readline())["result"]))
PY
}
"$gwlbd" --config "$work/a.yaml" > "$work/a.log" 2>&1 &
for _ in $(seq 1 240); do [ -S "$work/a.sock" ] && break; sleep 0.25; done
# A's warm start gives up (B is not up yet); wait for every flow on A.
for _ in $(seq 1 600); do
  n=$(api "$work/a.sock" flows '{"count":true}' | $py -c 'import json,sys; print(json.load(sys.stdin)["count"])')
  [ "$n" -ge "$flows" ] && break; sleep 0.5
done
"$gwlbd" --config "$work/b.yaml" > "$work/b.log" 2>&1 &
for _ in $(seq 1 240); do [ -S "$work/b.sock" ] && break; sleep 0.25; done
for _ in $(seq 1 600); do
  w=$(api "$work/b.sock" fleet_sync | $py -c 'import json,sys; w=json.load(sys.stdin)["warm_start"]; print(json.dumps(w) if w["done"] else "")')
  [ -n "$w" ] && break; sleep 0.2
done
nb=$(api "$work/b.sock" flows '{"count":true}' | $py -c 'import json,sys; print(json.load(sys.stdin)["count"])')
$py - "$w" "$n" "$nb" "$(nproc)" <<'PY'
import json, sys
w, na, nb, cpus = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
print(f"warm start: {w['state']}, {w['flows_received']} of A's {na} flows received, B holds {nb}, "
      f"in {w['elapsed_s']:.2f} s ({w['flows_received'] / max(w['elapsed_s'], 1e-9):.0f} flows/s); "
      f"two gwlbd on loopback, {cpus} shared cpus")
print(json.dumps({"flows_a": na, "flows_b": nb, "received": w["flows_received"],
                  "state": w["state"], "elapsed_s": w["elapsed_s"]}))
PY
grep -h "warm start done\|sent .* flows" "$work/a.log" "$work/b.log" || true
