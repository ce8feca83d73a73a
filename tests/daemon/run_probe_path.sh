#!/usr/bin/env bash
# Where health probes travel (issue 24 item 11; docs/deploy.md "Where probes
# travel"). gwlbd in a namespace of its own, its only port a net_af_packet on
# a veth to the appliance (10.88.0.11, TCP :8080). The gateway's kernel also
# has a route to 10.88.0.0/24 through another veth, to a decoy that answers
# at the same address: probes that follow the host's routes reach the decoy.
# The checks (probe_path_e2e.py): data-path probes pass through gwlbd's port,
# fail when the appliance's link goes down or the configured MAC is wrong
# although the decoy still answers; gwlbd refuses probe paths that cannot
# work (no path, a missing or down interface, strict reverse-path filtering)
# at --check-config, at start and at reload; a refused reload leaves the
# tap's neighbours as they were, an accepted one removes the pins of the
# appliances it drops. Needs root.
#   run_probe_path.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
source "$src/tests/daemon/gwlbd_lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (network namespaces, tap devices)"; exit 77; }
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }

gw="gwlbpp-gw$$" app="gwlbpp-app$$" decoy="gwlbpp-dec$$"
cleanup_ns() { for n in "$gw" "$app" "$decoy"; do ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null; ip netns del "$n" 2>/dev/null || true; done; }
gwlbd_extra_cleanup=cleanup_ns
trap gwlbd_cleanup EXIT
for n in "$gw" "$app" "$decoy"; do
  ip netns add "$n"
  ip -n "$n" link set lo up
  ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
    net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
done
# gwlbd's port (pp-port) to the appliance; the kernel's decoy route (pp-dec).
ip -n "$gw" link add pp-port type veth peer name eth0 netns "$app" address 02:00:00:00:00:11
ip -n "$gw" link add pp-dec type veth peer name eth0 netns "$decoy" address 02:00:00:00:00:22
ip -n "$gw" link add pp-mgmt type veth peer name pp-mgmt-peer  # the peer stays down: nothing answers
ip -n "$gw" addr add 10.88.0.2/24 dev pp-dec
ip -n "$gw" addr add 10.99.0.1/24 dev pp-mgmt
for l in pp-port pp-dec; do ip -n "$gw" link set "$l" up; done
# No checksum offload on the appliance's veth: net_af_packet must see (and the
# gateway's kernel get) frames with real checksums, as from a NIC.
ip netns exec "$app" ethtool -K eth0 tx off rx off >/dev/null
ip netns exec "$gw" ethtool -K pp-port tx off rx off >/dev/null
# The kernel still sees a net_af_packet port: it must not answer ARP there for
# the underlay address gwlbd puts on its tap (gwlbd answers it itself).
ip netns exec "$gw" sysctl -qw net.ipv4.conf.all.arp_ignore=1
for n in "$app" "$decoy"; do
  ip -n "$n" addr add 10.88.0.11/24 dev eth0
  ip -n "$n" link set eth0 up
  ip netns exec "$n" setsid /usr/bin/python3 -m http.server 8080 --bind 10.88.0.11 \
    > "$work/http-$n.log" 2>&1 < /dev/null &
done
# gwlbd answers ARP for its underlay address itself; pinned here so the test
# does not wait on it.
ip -n "$app" neigh replace 10.88.0.1 lladdr 02:00:00:00:00:01 dev eth0 nud permanent
for _ in $(seq 1 50); do ip netns exec "$gw" curl -s -o /dev/null --max-time 1 http://10.88.0.11:8080/ && break; sleep 0.1; done
echo "the gateway's kernel reaches 10.88.0.11:8080 by its own route (the decoy): $(ip -n "$gw" route get 10.88.0.11 | head -1)"

# config NAME HEALTH_EXTRA NODE_EXTRA SERVER_MAC [MORE_SERVERS [MORE_GROUPS]]
config() {
  cat > "$work/$1.yaml" <<YAML
node: { underlay_ip: 10.88.0.1, underlay_mac: 02:00:00:00:00:01, underlay_mtu: 1500$3 }
server_groups:
  - name: firewalls
    health_check: { protocol: tcp, port: 8080, interval: 100ms, timeout: 200ms,
                    healthy_threshold: 2, unhealthy_threshold: 2$2 }
    servers: [ { address: 10.88.0.11, mac: $4 }${5:-} ]
${6:-}dataplane: { workers: 1, mbufs: 8192, flow_table_size: 4096 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "-m", "256", "--no-telemetry",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_af_packet0,iface=pp-port,qpairs=1,framecnt=512,framesz=2048,blocksz=4096"]
YAML
}
EP=", exception_path: { enabled: true, name_prefix: pp }"
config data "" "$EP" 02:00:00:00:00:11
config nopath "" "" 02:00:00:00:00:11
config missing ", interface: pp-missing" "" 02:00:00:00:00:11
config mgmt ", interface: pp-mgmt" "" 02:00:00:00:00:11
config wrongmac "" "$EP" 02:00:00:00:00:99
# A second appliance on the data path (nothing answers at 10.88.0.12).
config two "" "$EP" 02:00:00:00:00:11 ", { address: 10.88.0.12, mac: 02:00:00:00:00:12 }"
# A new MAC for the appliance, and a second group whose probe path is
# missing: the whole change is refused, the new MAC must not reach the kernel.
config refused "" "$EP" 02:00:00:00:00:77 "" "  - name: others
    health_check: { protocol: tcp, port: 8080, interface: pp-missing }
    servers: [ { address: 10.88.0.13, mac: 02:00:00:00:00:13 } ]
"

export GWLBD="$gwlbd" WORK="$work" GW_NS="$gw" APP_NS="$app"
/usr/bin/python3 "$src/tests/daemon/probe_path_e2e.py"
