#!/usr/bin/env bash
# The kernel exception path (node.exception_path) end to end: gwlbd in a
# network namespace of its own, port 0 on a veth (net_pcap rx_iface_in and
# tx_iface; the checks sniff its peer), port 1 replaying a flood from a pcap; the checks
# are in exception_e2e.py. Needs root (namespaces, /dev/net/tun).
#   run_exception.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
source "$src/tests/daemon/gwlbd_lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces, tap devices)"; exit 77; }
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }

gw="gwlbx-gw$$" k="gwlbx-k$$"
flood=20000
cleanup_ns() { ip netns del "$gw" 2>/dev/null || true; ip netns del "$k" 2>/dev/null || true; }
gwlbd_extra_cleanup=cleanup_ns
trap gwlbd_cleanup EXIT
ip netns add "$gw"
ip netns add "$k"
ip -n "$gw" link add gwlbx-p0 type veth peer name gwlbx-r0
ip netns exec "$gw" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
ip -n "$gw" link set gwlbx-p0 up
ip -n "$gw" link set gwlbx-r0 up
ip -n "$gw" link set lo up

/usr/bin/python3 - "$work/flood.pcap" "$flood" <<'PY'
import struct, sys
from scapy.all import ICMP, IP, Ether, Raw
frame = bytes(Ether(src="02:00:00:00:00:98", dst="02:00:00:00:00:02") /
              IP(src="192.0.2.98", dst="192.0.2.1") / ICMP(type=8, id=7) / Raw(b"f" * 32))
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    rec = struct.pack("<IIII", 1700000000, 0, len(frame), len(frame)) + frame
    f.write(rec * int(sys.argv[2]))
PY

cat > "$work/gwlbd.yaml" <<YAML
node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:01
  gateway_mac: 02:00:00:00:00:fe
  underlay_mtu: 1600
  ports: [ { id: 0, role: both }, { id: 1, role: both, mac: 02:00:00:00:00:02 } ]
  exception_path: { enabled: true, name_prefix: gwlbx-t }
server_groups:
  - name: firewalls
    geneve: { format: aws, endpoint_id: 7, attachment_id: 9 }
    servers: [ { address: 192.0.2.10 } ]
dataplane: { workers: 1, mbufs: 8192, flow_table_size: 4096 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "-m", "256", "--no-telemetry",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_iface_in=gwlbx-p0,tx_iface=gwlbx-p0",
      "--vdev", "net_pcap1,rx_pcap=$work/flood.pcap,tx_pcap=$work/tx1.pcap"]
YAML
"$gwlbd" --check-config "$work/gwlbd.yaml"

# gwlbd runs inside the namespace: its taps appear there.
ip netns exec "$gw" "$gwlbd" --config "$work/gwlbd.yaml" > "$work/gwlbd.log" 2>&1 &
gwlbd_pid=$!
for _ in $(seq 1 120); do [ -S "$work/gwlbd.sock" ] && break; sleep 0.25; done
[ -S "$work/gwlbd.sock" ] || { cat "$work/gwlbd.log"; echo "FAIL: gwlbd did not start"; exit 1; }

set +e
ip netns exec "$gw" /usr/bin/python3 "$src/tests/daemon/exception_e2e.py" \
  "$work/gwlbd.sock" "$work" "$gw" "$k" "$flood"
rc=$?
set -e
if [ "$rc" -ne 0 ]; then tail -30 "$work/gwlbd.log"; exit "$rc"; fi
stop_gwlbd || { echo "FAIL: gwlbd exit status $?"; tail -30 "$work/gwlbd.log"; exit 1; }
# The taps leave with gwlbd (the one moved to $k too).
if ip -n "$k" link show gwlbx-t0 >/dev/null 2>&1 || ip -n "$gw" link show gwlbx-t1 >/dev/null 2>&1; then
  echo "FAIL: a tap outlived gwlbd"; exit 1
fi
echo "taps removed at exit"
