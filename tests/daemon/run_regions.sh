#!/usr/bin/env bash
# gwlbd failing over between two regions on aggregated health, with real TCP
# health checks against listeners on loopback, during traffic; the HTTP health
# endpoint is read with a real HTTP client (tests/daemon/regions_e2e.py).
#   run_regions.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows 2000 >/dev/null
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port) http=$(free_port) metrics=$(free_port)
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: fw-east
    failover_mode: rebalance
    health_check: { protocol: tcp, port: $port, interval: 100ms, timeout: 200ms, interface: lo,
                    healthy_threshold: 2, unhealthy_threshold: 2, jitter: false }
    servers: [ { address: 127.0.0.21 }, { address: 127.0.0.22 }, { address: 127.0.0.23 },
               { address: 127.0.0.24 }, { address: 127.0.0.25 } ]
  - name: fw-west
    failover_mode: rebalance
    health_check: { protocol: tcp, port: $port, interval: 100ms, timeout: 200ms, interface: lo,
                    healthy_threshold: 2, unhealthy_threshold: 2, jitter: false }
    servers: [ { address: 127.0.0.31 }, { address: 127.0.0.32 }, { address: 127.0.0.33 } ]
health_aggregation_policies:
  - { name: strict, min_healthy_percent: 60, min_healthy_count: 2 }
health_sources:
  - { name: src-east, server_group: fw-east, policy: strict }
composite_health_checks:
  - { name: inspect-east, sources: [src-east], destination: inspect, dry_run: false }
listeners:
  - { name: inspect, server_groups: [fw-east, fw-west], failback_hold: 0 }
health_endpoint: { listen: "127.0.0.1:$http" }
metrics: { listen: "127.0.0.1:$metrics" }
dataplane: { workers: 1, mbufs: 16384, flow_table_size: 8192 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/flows.pcap,infinite_rx=1"]
YAML
# regions_e2e.py starts the appliances' health-check listeners first, then
# gwlbd (so no appliance starts unhealthy), and stops gwlbd at the end.
/usr/bin/python3 "$src/tests/daemon/regions_e2e.py" "$work/gwlbd.sock" "$port" "$http" "$metrics" \
  "$work/gwlbd.log" "$work/gwlbd.yaml" "$gwlbd" \
  || { tail -30 "$work/gwlbd.log"; exit 1; }
grep -m8 "regions:" "$work/gwlbd.log"  # -m: `| head` could SIGPIPE grep under pipefail
