#!/usr/bin/env bash
# Flow state sync between two gwlbd on loopback (issue 16 item 2): node A
# replays a capture of new flows, node B (no traffic of its own) must hold
# every one of them with A's appliance and cookie, also where B's own table
# picks otherwise (an appliance drained on B); forged and replayed datagrams
# are counted and change nothing; B restarted gets A's table by warm start
# before it reports warm start done. Checks in tests/daemon/fleet_sync_e2e.py.
#   run_fleet_sync.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
$py "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows 200 >/dev/null
$py "$src/tools/gen_flows_pcap.py" "$work/empty.pcap" --flows 0 >/dev/null
free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
free_udp_tcp() {
  $py - <<'PY'
import socket
while True:
    t = socket.socket(); t.bind(("127.0.0.1", 0)); p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p))
    except OSError:
        continue
    print(p); break
PY
}
port_a=$(free_udp_tcp) port_b=$(free_udp_tcp)
metrics_a=$(free_port) metrics_b=$(free_port)
secret=00112233445566778899aabbccddeeff
config() {  # NAME RX_PCAP SYNC_PORT PEER_PORT METRICS
  cat <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
metrics: { listen: "127.0.0.1:$5" }
dataplane: { workers: 1, mbufs: 4096, flow_table_size: 4096 }
control: { socket: $work/$1.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--file-prefix", "gwlbsync$1$$", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$2,tx_pcap=$work/$1-out.pcap"]
server_groups:
  - name: fw
    other_idle_timeout: 6000
    failover_mode: rebalance
    connection_draining: { enabled: true, timeout: 3600 }
    servers: [ { address: 10.0.0.1 }, { address: 10.0.0.2 }, { address: 10.0.0.3 }, { address: 10.0.0.4 } ]
fleet: { node_name: gw-$1, secret: $secret, sync_listen: "127.0.0.1:$3", peers: ["127.0.0.1:$4"],
         warm_start_timeout: 3s }
YAML
}
config a "$work/flows.pcap" "$port_a" "$port_b" "$metrics_a" > "$work/a.yaml"
config b "$work/empty.pcap" "$port_b" "$port_a" "$metrics_b" > "$work/b.yaml"

cleanup() { rm -rf /var/run/dpdk/gwlbsynca$$ /var/run/dpdk/gwlbsyncb$$; }
trap cleanup EXIT
# The script starts and stops both gwlbd itself (B alone first, then A with
# traffic, then B again) and stops them with SIGTERM (exit status 0 checked).
$py "$src/tests/daemon/fleet_sync_e2e.py" --gwlbd "$gwlbd" --work "$work" --secret "$secret" \
    --sync-b "$port_b" --metrics-a "$metrics_a" --flows 200 || {
  echo "--- a.log"; tail -40 "$work/a.log" || true; echo "--- b.log"; tail -60 "$work/b.log" || true
  echo "FAIL: fleet sync"; exit 1; }
