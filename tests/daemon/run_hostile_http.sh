#!/usr/bin/env bash
# gwlbd's HTTP listeners (health endpoint and /metrics) against hostile clients
# while it forwards an endless capture (issue 14, items 1 and 3; the phases are
# in tests/daemon/hostile_http.py). Clients use 127.0.0.1 only.
#   run_hostile_http.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
command -v prlimit >/dev/null || { echo "FAIL: needs prlimit (util-linux)"; exit 1; }
$py "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows 200 >/dev/null
free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
http=$(free_port) metrics=$(free_port)
prefix="gwlbhttp$$"
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: firewalls
    maglev_table_size: 4093
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 }, { address: 192.0.2.12 } ]
listeners:
  - { name: inspect, server_groups: [firewalls] }
health_endpoint: { listen: "127.0.0.1:$http" }
metrics: { listen: "127.0.0.1:$metrics" }
dataplane: { workers: 1, mbufs: 8192, flow_table_size: 8192 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--file-prefix", "$prefix", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/flows.pcap,infinite_rx=1"]
YAML
gwlbd_extra_cleanup="rm -rf /var/run/dpdk/$prefix"
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
t0=$(date +%s)
$py "$src/tests/daemon/hostile_http.py" "$work/gwlbd.sock" "$http" "$metrics" "$gwlbd_pid" \
  || { tail -40 "$work/gwlbd.log"; echo "FAIL: hostile HTTP"; exit 1; }
if grep -q "startup failed\|threw" "$work/gwlbd.log"; then
  grep "startup failed\|threw" "$work/gwlbd.log" | head; echo "FAIL: see the log lines above"; exit 1
fi
rc=0; stop_gwlbd || rc=$?
[ "$rc" -eq 0 ] || { tail -40 "$work/gwlbd.log"; echo "FAIL: gwlbd exit $rc on SIGTERM"; exit 1; }
echo "gwlbd stopped cleanly; hostile phases took $(( $(date +%s) - t0 )) s"
