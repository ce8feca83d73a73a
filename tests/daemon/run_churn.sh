#!/usr/bin/env bash
# gwlbd forwarding live traffic while its appliances churn at ~100 changes a
# second (tests/daemon/churn_driver.py says what is changed and checked).
#   run_churn.sh GWLBD WORKDIR SRCROOT
# Runs in a network namespace of its own (unshare -n): a veth pair carries the
# traffic into gwlbd's router-side port 0 (net_af_packet: its 8192-frame ring
# rides out ~400 ms without a poll at the test's 20k packets/s, where a
# net_pcap live capture holds ~60 ms), gwlbd's underlay port 1 (net_pcap)
# writes what it sends to a pcap file, and the health-check listeners live on
# the namespace's loopback. Skipped (exit 77) where no network namespace or
# veth pair can be made.
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
if [ -z "${GWLB_CHURN_NETNS:-}" ]; then
  if ! unshare -n true 2>/dev/null; then
    echo "SKIP: cannot create a network namespace (needs root or CAP_SYS_ADMIN)"
    exit 77
  fi
  exec unshare -n env GWLB_CHURN_NETNS=1 bash "$0" "$@"
fi
t_start=$(date +%s%N)
rm -rf "$work" && mkdir -p "$work"

# The namespace: loopback for health checks and metrics, a veth pair for the
# traffic, and no IPv6 (no router solicitations or MLD reports from the
# kernel: every frame gwlbd receives is one the driver sent).
ip link set lo up
sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
# gwlbd takes in only frames to its port's own MAC (the device's: gw0's); the
# driver sends to 02:00:00:00:00:01, so gw0 gets that address.
ip link add gw0 address 02:00:00:00:00:01 type veth peer name tg0 \
  || { echo "SKIP: cannot create a veth pair"; exit 77; }
ip link set gw0 up
ip link set tg0 up

cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe,
        underlay_port: 1 }
server_groups:
  - name: firewalls
    # Every change rebuilds the group's Maglev table: ~3 ms at the default
    # 65537 slots, ~0.2 ms at 4093 (plenty for 8 appliances), which leaves the
    # control thread time to spare at 100 changes/s on two shared cores.
    maglev_table_size: 4093
    failover_mode: rebalance
    connection_draining: { enabled: true, timeout: 1s }
    health_check: { protocol: tcp, port: 8081, interval: 50ms, timeout: 100ms, interface: lo,
                    healthy_threshold: 2, unhealthy_threshold: 2 }
    servers: [ { address: 127.0.0.11 }, { address: 127.0.0.12 }, { address: 127.0.0.13 },
               { address: 127.0.0.14 }, { address: 127.0.0.15 }, { address: 127.0.0.16 },
               { address: 127.0.0.17 }, { address: 127.0.0.18 } ]
dataplane: { workers: 1, mbufs: 16384, flow_table_size: 8192 }
control: { socket: $work/gwlbd.sock }
metrics: { listen: 127.0.0.1:9109 }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_af_packet0,iface=gw0,qpairs=1,framecnt=8192,framesz=2048,blocksz=4096",
      "--vdev", "net_pcap1,tx_pcap=$work/out.pcap"]
YAML
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
/usr/bin/python3 "$src/tests/daemon/churn_driver.py" run "$work/gwlbd.sock" "$work" tg0 "$gwlbd_pid" \
  || { tail -40 "$work/gwlbd.log"; exit 1; }
# The daemon still answers and stops cleanly (net_pcap flushes out.pcap on close).
rc=0; stop_gwlbd || rc=$?
[ "$rc" -eq 0 ] || { tail -40 "$work/gwlbd.log"; echo "FAIL: gwlbd exit $rc on SIGTERM"; exit 1; }
grep "final:" "$work/gwlbd.log"
/usr/bin/python3 "$src/tests/daemon/churn_driver.py" check "$work" "$work/out.pcap"
echo "wall time $(( ($(date +%s%N) - t_start) / 1000000 )) ms"
