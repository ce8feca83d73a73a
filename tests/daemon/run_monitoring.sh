#!/usr/bin/env bash
# Per-appliance monitoring end to end (issue 18 items 6-7): gwlbd with TCP
# health checks on loopback (one appliance has no listener: unhealthy), a
# capture with traffic to and back from the appliances, fleet sync to a peer
# that never answers; then /metrics, DPDK telemetry, promtool, the monitoring/
# dashboard and alert rules, and a real Prometheus server scraping gwlbd.
# Checks in tests/daemon/monitoring_e2e.py.
#   run_monitoring.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
apps=127.0.0.11,127.0.0.12,127.0.0.13
$py "$src/tests/daemon/gen_return_pcap.py" "$work/a.pcap" --flows 60 --appliances $apps --seed 1
$py "$src/tests/daemon/gen_return_pcap.py" "$work/b.pcap" --flows 40 --appliances $apps --seed 2
free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
health_port=$(free_port) metrics_port=$(free_port) sync_port=$(free_port) dead_peer=$(free_port)
prefix="gwlbmon$$"
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
metrics: { listen: "127.0.0.1:$metrics_port" }
server_groups:
  - name: firewalls
    geneve: { format: ethernet }
    when_all_unhealthy: fail_open
    health_check: { protocol: tcp, port: $health_port, interval: 100ms, timeout: 200ms, interface: lo,
                    healthy_threshold: 2, unhealthy_threshold: 3 }
    servers: [ { address: 127.0.0.11 }, { address: 127.0.0.12 }, { address: 127.0.0.13 } ]
dataplane: { workers: 2, mbufs: 8192, flow_table_size: 4096 }
control: { socket: $work/gwlbd.sock }
fleet: { node_name: gw-mon, secret: 00112233445566778899aabbccddeeff,
         sync_listen: "127.0.0.1:$sync_port", peers: ["127.0.0.1:$dead_peer"], warm_start_timeout: 1s }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--file-prefix", "$prefix", "-m", "256",
      "--lcores=0@(0-1),1@(0-1),2@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/a.pcap,rx_pcap=$work/b.pcap,tx_pcap=$work/out0.pcap,tx_pcap=$work/out1.pcap"]
YAML
gwlbd_extra_cleanup="rm -rf /var/run/dpdk/$prefix"
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
$py "$src/tests/daemon/monitoring_e2e.py" --sock "$work/gwlbd.sock" --metrics "127.0.0.1:$metrics_port" \
    --health-port "$health_port" --prefix "$prefix" --flows 100 --src "$src" --work "$work" \
  || { tail -30 "$work/gwlbd.log"; exit 1; }
stop_gwlbd
