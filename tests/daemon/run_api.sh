#!/usr/bin/env bash
# Runs gwlbd over a capture with the control API, Prometheus and telemetry on,
# then tests/daemon/api_hostile.py against it.  run_api.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$src/tools/gen_sample_pcap.py" "$work/in.pcap" --flows 100 --seed 3 >/dev/null
n_in=$(tshark -r "$work/in.pcap" 2>/dev/null | wc -l)
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
prefix="gwlbapi$$"
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: firewalls
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 }, { address: 192.0.2.12 } ]
dataplane: { workers: 1, mbufs: 4096, flow_table_size: 65536 }
control: { socket: $work/run/gwlbd.sock }
metrics: { listen: "127.0.0.1:$port" }
eal: ["--no-huge", "--no-pci", "--file-prefix", "$prefix", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/in.pcap,tx_pcap=$work/out.pcap"]
YAML
source "$src/tests/daemon/gwlbd_lib.sh"
gwlbd_extra_cleanup="rm -rf /var/run/dpdk/$prefix"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/run/gwlbd.sock"
[ "$(stat -c %a "$work/run/gwlbd.sock")" = "660" ] || { echo "FAIL: socket mode"; exit 1; }
# Wait until the capture went through.
for _ in $(seq 1 80); do
  echo '{"method":"stats"}' | /usr/bin/python3 -c "
import json,socket,sys
s=socket.socket(socket.AF_UNIX); s.connect('$work/run/gwlbd.sock'); s.sendall(sys.stdin.buffer.read())
r=json.loads(s.makefile().readline()); sys.exit(0 if r['result']['totals']['rx_packets']==$n_in else 1)" && break
  sleep 0.25
done
/usr/bin/python3 "$src/tests/daemon/api_hostile.py" "$work/run/gwlbd.sock" "127.0.0.1:$port" "$prefix" "$n_in"
rc=0; stop_gwlbd || rc=$?
[ $rc -eq 0 ] || { cat "$work/gwlbd.log"; echo "FAIL: gwlbd exit $rc"; exit 1; }
[ ! -e "$work/run/gwlbd.sock" ] || { echo "FAIL: socket left behind"; exit 1; }
echo "gwlbd stopped cleanly and removed its socket"
