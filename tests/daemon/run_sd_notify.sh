#!/usr/bin/env bash
# gwlbd under a stand-in for systemd: READY=1, WATCHDOG=1, RELOADING=1,
# STOPPING=1 on $NOTIFY_SOCKET (tests/daemon/sd_notify_e2e.py).
#   run_sd_notify.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: fw
    geneve: { format: aws, endpoint_id: 7, attachment_id: 9 }
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 } ]
dataplane: { workers: 2, mbufs: 4096, flow_table_size: 8192 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "128",
      "--lcores=0@(0-1),1@(0-1),2@(0-1)", "--log-level=*:warning", "--vdev", "net_null0,no-rx=1"]
YAML
exec /usr/bin/python3 "$src/tests/daemon/sd_notify_e2e.py" "$gwlbd" "$work/gwlbd.yaml" \
  "$work/notify.sock" "$work/gwlbd.log" "$work/gwlbd.sock"
