#!/usr/bin/env bash
# gwlbd with TCP health checks against listeners on loopback, during traffic.
#   run_health.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows 2000 >/dev/null
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: firewalls
    when_all_unhealthy: fail_open
    health_check: { protocol: tcp, port: $port, interval: 100ms, timeout: 200ms, interface: lo,
                    healthy_threshold: 3, unhealthy_threshold: 3 }
    servers: [ { address: 127.0.0.11 }, { address: 127.0.0.12 }, { address: 127.0.0.13 } ]
dataplane: { workers: 1, mbufs: 16384, flow_table_size: 8192 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/flows.pcap,infinite_rx=1"]
YAML
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
/usr/bin/python3 "$src/tests/daemon/health_e2e.py" "$work/gwlbd.sock" "$port" "$work/gwlbd.yaml" "$work/gwlbd.log" \
  || { tail -30 "$work/gwlbd.log"; exit 1; }
stop_gwlbd
grep -m5 "health:" "$work/gwlbd.log"  # -m: `| head` could SIGPIPE grep under pipefail
