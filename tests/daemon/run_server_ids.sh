#!/usr/bin/env bash
# gwlbd at its real server-id limit (issue 14 item 2): 16,384 appliances
# configured (the most a config may have), one removed while flows are still on
# it (its id stays held), then server.add of a new address must be refused
# cleanly (limit_reached, nothing applied) and gwlbd must go on; once an
# appliance without flows is removed, its id is reclaimed and the same add
# succeeds. Checks in tests/daemon/server_ids_e2e.py.
#   run_server_ids.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
$py "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows 20 >/dev/null
free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
metrics=$(free_port)
prefix="gwlbids$$"
{
  cat <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
metrics: { listen: "127.0.0.1:$metrics" }
dataplane: { workers: 1, mbufs: 4096, flow_table_size: 4096 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--file-prefix", "$prefix", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/flows.pcap,tx_pcap=$work/out.pcap"]
server_groups:
YAML
  # 16 groups x 1024 appliances = 16,384 (10.g.i.j); flows stay on an appliance
  # that leaves (no_rebalance, no draining) for the whole test.
  $py - <<'PY'
for g in range(16):
    print(f"  - name: fw{g}")
    print("    maglev_table_size: 2053")
    print("    other_idle_timeout: 6000")
    print("    connection_draining: { enabled: false }")
    print("    servers: [" + ", ".join(f"{{address: 10.{g}.{i // 256}.{i % 256}}}" for i in range(1024)) + "]")
PY
} > "$work/gwlbd.yaml"
gwlbd_extra_cleanup="rm -rf /var/run/dpdk/$prefix"
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
$py "$src/tests/daemon/server_ids_e2e.py" "$work/gwlbd.sock" "$metrics" "$gwlbd_pid" \
  || { tail -30 "$work/gwlbd.log"; echo "FAIL: server ids"; exit 1; }
rc=0; stop_gwlbd || rc=$?
[ "$rc" -eq 0 ] || { tail -30 "$work/gwlbd.log"; echo "FAIL: gwlbd exit $rc on SIGTERM"; exit 1; }
echo "gwlbd stopped cleanly"
