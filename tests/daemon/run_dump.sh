#!/usr/bin/env bash
# gwlbd forwarding an endless capture of FLOWS flows while full flow-table dumps run.
#   run_dump.sh GWLBD WORKDIR SRCROOT FLOWS [--bench]
set -euo pipefail
gwlbd="$1" work="$2" src="$3" flows="$4"; shift 4
rm -rf "$work" && mkdir -p "$work"
/usr/bin/python3 "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows "$flows" >/dev/null
table=1024; while [ $table -lt $((flows * 2)) ]; do table=$((table * 2)); done
mbufs=$((flows + 8192))
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: firewalls
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 }, { address: 192.0.2.12 } ]
dataplane: { workers: 1, mbufs: $mbufs, flow_table_size: $table }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "$((mbufs / 300 + 512))",
      "--lcores=0@0,1@1", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/flows.pcap,infinite_rx=1"]
YAML
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
/usr/bin/python3 "$src/tests/daemon/dump_under_load.py" "$work/gwlbd.sock" "$flows" "$@"
stop_gwlbd
