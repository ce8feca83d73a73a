#!/usr/bin/env bash
# gwlbctl against a real gwlbd: start the daemon over net_pcap (as
# tests/daemon/run_gwlbd.sh does) with a control socket, wait until it has
# read the whole capture, then check every command (e2e_check.py).
# The input is the generated router traffic with 120 malformed frames of 15
# kinds mixed in (gen_bad_frames.py writes how many must hit each drop reason);
# what gwlbd transmits goes to out0/out1.pcap, which e2e_check.py decodes to
# compare `explain` with where the flows really went.
# gwlbd is stopped with SIGTERM at the end, whatever happens.
#   e2e.sh GWLBD GWLBCTL SRCROOT WORKDIR
set -euo pipefail
gwlbd="$1" ctl="$2" src="$3" work="$4"
rm -rf "$work" && mkdir -p "$work"
sockdir=$(mktemp -d /tmp/gwlbctl-e2e.XXXXXX)   # short: sun_path holds 107 bytes
sock="$sockdir/gwlbd.sock"
pid=""
stop() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$sockdir"
}
trap stop EXIT

/usr/bin/python3 "$src/tools/gen_sample_pcap.py" "$work/a.pcap" --flows 100 --seed 7 >/dev/null
/usr/bin/python3 "$src/tools/gen_sample_pcap.py" "$work/b.pcap" --flows 100 --seed 8 >/dev/null
/usr/bin/python3 "$src/tests/cli/gen_bad_frames.py" "$work/expected-drops.json" \
  "$work/a.pcap" "$work/rx0.pcap" "$work/b.pcap" "$work/rx1.pcap"
/usr/bin/python3 "$src/tests/cli/add_sctp_frames.py" "$work/rx1.pcap" "$work/sctp-flows.json"
n_in=$(/usr/bin/python3 -c 'import sys
from scapy.all import RawPcapReader
print(sum(sum(1 for _ in RawPcapReader(f)) for f in sys.argv[1:]))' "$work/rx0.pcap" "$work/rx1.pcap")
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: firewalls
    geneve: { format: aws, endpoint_id: 7, attachment_id: 9 }
    # The capture's flows go idle once it is read; the checks must find them
    # however long a slow machine takes (they test no expiry).
    tcp_idle_timeout: 6000s
    other_idle_timeout: 6000s
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 }, { address: 192.0.2.12 } ]
dataplane: { workers: 2, mbufs: 8192, flow_table_size: 65536 }
control: { socket: $sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "-m", "256", "--no-telemetry",
      "--lcores=0@(0-1),1@(0-1),2@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/rx0.pcap,rx_pcap=$work/rx1.pcap,tx_pcap=$work/out0.pcap,tx_pcap=$work/out1.pcap"]
YAML
"$ctl" config check "$work/gwlbd.yaml"

"$gwlbd" --config "$work/gwlbd.yaml" > "$work/gwlbd.log" 2>&1 &
pid=$!
up=0
for _ in $(seq 1 120); do
  kill -0 "$pid" 2>/dev/null || break
  if [ -S "$sock" ] && "$ctl" --socket "$sock" status > /dev/null 2>&1; then up=1; break; fi
  sleep 0.25
done
if [ "$up" -ne 1 ]; then
  echo "FAIL: gwlbd did not answer on $sock"; cat "$work/gwlbd.log"; exit 1
fi

set +e
/usr/bin/python3 "$src/tests/cli/e2e_check.py" --gwlbctl "$ctl" --socket "$sock" \
  --input-packets "$n_in" --expected-drops "$work/expected-drops.json" \
  --tx-pcap "$work/out0.pcap" --tx-pcap "$work/out1.pcap" --workdir "$work"
rc=$?
set -e

kill -TERM "$pid"
set +e
wait "$pid"; grc=$?
set -e
pid=""
if [ "$rc" -ne 0 ]; then echo "--- gwlbd log"; cat "$work/gwlbd.log"; exit 1; fi
[ "$grc" -eq 0 ] || { echo "FAIL: gwlbd exit $grc after SIGTERM"; cat "$work/gwlbd.log"; exit 1; }
[ ! -e "$sock" ] || echo "note: gwlbd left its socket file behind"
echo "gwlbctl end-to-end checks passed"
