#!/usr/bin/env bash
# A lab of network namespaces: real hosts, a router, gwlbd on net_af_packet
# ports and two reference appliances (docs/lab.md has the drawing).
#   scripts/lab.sh up [--gateways N] [--listeners L]   build the lab (safe to re-run: a
#                       complete, running lab is kept). N = 1 (default): one gwlbd, static routes.
#                       N = 2..4: the fleet lab, N gateways each with gwlbd and BIRD, ECMP through
#                       the router's BIRD (or FRR: LAB_ROUTER=frr). L = 1 (default): one listener,
#                       appliances app1 and app2. L = 2: traffic classes (docs/lab.md "Two
#                       listeners"): tenant A (client 10.77.1.2) to app1/app2, tenant B (client
#                       10.77.1.130) to app3/app4, TCP port 873 bypassed
#   scripts/lab.sh down      remove every namespace, process and device of the lab
#   scripts/lab.sh status    namespaces, processes, gwlbctl servers
#   scripts/lab.sh app-stop N | app-start N   kill / restart appliance N (1..2, or 1..4 with L = 2)
#   scripts/lab.sh gw-stop | gw-start         stop gwlbd (SIGTERM) / start it again, same config
#   scripts/lab.sh gw-stop K | gw-kill K | gw-start K   fleet lab: gateway K's gwlbd, SIGTERM
#                       (withdraw, grace period, exit) / SIGKILL / start
#   scripts/lab.sh gwlbctl ARGS...            build/cli/gwlbctl on the lab's socket (fleet lab:
#                       gateway $LAB_GW, default 1)
#   scripts/lab.sh birdc router|gwK ARGS...   birdc on the router's or gateway K's BIRD (fleet lab)
#   scripts/lab.sh vtysh ARGS...              vtysh on the router's FRR (fleet lab, LAB_ROUTER=frr)
#   scripts/lab.sh router-config bird|frr|kernel [N]   print the fleet lab's router config for N
#                       gateways (default 2): BIRD's, FRR's, or the router's kernel commands
#   scripts/lab.sh exec NS CMD...             run CMD in namespace NS (client, server, ...)
# Settings (environment, read by `up`):
#   LAB_PREFIX (gwlab)  namespace names are PREFIX-client, PREFIX-server, ...
#   LAB_DIR (out/lab)   configs, logs, pid files, the control socket
#   GWLB_BUILD (build)  where gwlbd, gwlbctl and gwlb-appliance are
#   LAB_FORMAT aws|ethernet   LAB_FAILOVER rebalance|no_rebalance   LAB_DRAIN (10s)
#   LAB_TCP_RESET 1     send_tcp_reset on_unhealthy and on_deregistration in every group
#   LAB_HC http|tcp   LAB_HC_INTERVAL (500ms)   LAB_HC_TIMEOUT (300ms)
#   LAB_HC_HEALTHY (2)   LAB_HC_UNHEALTHY (2)   LAB_HC_EXTRA: more health_check keys ("passive: {...}")
#   LAB_HC_FORWARDING true: forwarding checks (a probe through each appliance) too
#   LAB_APP_ARGS, LAB_APP1_ARGS, LAB_APP2_ARGS   extra gwlb-appliance arguments
#   LAB_BYPASS MAX_S    one listener over the group that allows appliance bypass of at most
#                       MAX_S seconds (0: as asked; docs/product-rules.md "Appliance-requested
#                       bypass") and traffic classes `tcp` and `other` it inspects; with
#                       LAB_APP_ARGS="--bypass-after-bytes N" an IDS's stream depth
#   LAB_APPLIANCE plain|stateful|mixed (plain)   stateful: every appliance forwards through its
#                       namespace's kernel and an nftables conntrack firewall (gwlb-appliance --tun,
#                       scripts/lab_stateful.nft); mixed: app1 and app3 stateful, app2 and app4 plain
#                       (one of each per server group); vxlan: every appliance is made of kernel
#                       parts only, as Azure's Linux NVA guides build one: two VXLAN devices (Azure's
#                       tunnels, external 10801/801 and internal 10800/800) bridged together, the
#                       same nftables conntrack firewall on the bridge (br_netfilter), and the
#                       groups use encapsulation: vxlan (docs/lab.md "The kernel VXLAN appliance")
#   LAB_RT_PORT af_packet|tap   gwlbd's router-side port: net_af_packet on gw-rt (default;
#                       the kernel reassembles IPv4 fragments before gwlbd sees them) or
#                       net_tap bridged to gw-rt (gwlbd gets every frame as sent: real fragments)
#   LAB_IPV6 (0)        1: IPv6 between client, router and server as well (fd77:1::/64, fd77:2::/64)
#   LAB_UNDERLAY ipv4|ipv6 (ipv4)  ipv6: the appliance network is IPv6 only (fd77:9::/64): gwlbd
#                       sends Geneve over IPv6 from node.underlay_ipv6 fd77:9::1 to app1..appN at
#                       fd77:9::11.., finds their MACs by neighbor discovery (no `mac` in the config)
#                       and probes them over IPv6 (docs/lab.md "An IPv6 underlay"). With
#                       --gateways N the routers' links, BGP, BFD and flow sync are IPv6 too
#                       (scripts/lab_fleet.sh; BIRD on the router only; with LAB_IPV6=1 the
#                       gateways announce ::/0 as well)
#                       With LAB_APPLIANCE=vxlan the kernel's VXLAN devices tunnel over IPv6
#                       (their HTTP checks over IPv6 too)
#   LAB_MIRROR (0)      1, with --listeners 2: app3 and app4 are a mirror group of passive tools
#                       (gwlb-appliance --mirror-sink DIR/appN-sink.pcap) receiving copies of
#                       tenant-a's packets; tenant-b goes to listener tenant-a too
#   LAB_TOOL (0)        1, with --listeners 2 (not LAB_MIRROR): a fifth appliance, app5
#                       10.77.9.15, alone in group tools, a passive tool (--mirror-sink
#                       DIR/app5-sink.pcap) getting every 4th packet of tenant-a (128 bytes);
#                       LAB_BYPASS MAX_S with --listeners 2: tenant-b's listener allows bypass
#   LAB_PROBES data|mgmt  health probes through gwlbd's appliance port (its exception tap gwlb1,
#                       the default) or by the gateway kernel's own interface on the appliance network
#   Fleet lab only: LAB_GRACE (3s) fleet.grace_period; LAB_IDLE_SLEEP_US (200) node.idle_sleep_us;
#                       LAB_BFD_MULT (5) BFD detect multiplier at 100 ms (detection 0.5 s)
#                       (3 busy-polling gwlbd would starve BIRD and BFD on 2 cores);
#                       LAB_ROUTER bird|frr (bird) the router's routing daemons: BIRD 2, or
#                       FRR's zebra + bfdd + bgpd (scripts/lab_router.sh, docs/fleet.md)
# Exit 3 from `up` means network namespaces cannot be created here.
set -euo pipefail

GWLB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GWLB_BUILD="${GWLB_BUILD:-$GWLB_ROOT/build}"
P="${LAB_PREFIX:-gwlab}"
D="${LAB_DIR:-$GWLB_ROOT/out/lab}"
ALL_NS=(client server router gw app1 app2 app3 app4 app5 sw gw1 gw2 gw3 gw4)  # what `down` removes (any lab)
ALL_PROCS=(http gwlbd app1 app2 app3 app4 app5 gwlbd1 gwlbd2 gwlbd3 gwlbd4 bird-gw1 bird-gw2 bird-gw3 bird-gw4 bird-router
           frr-zebra frr-bfdd frr-bgpd)

# Addresses: all of them live only inside the lab's namespaces.
CLIENT_IP=10.77.1.2 CLIENT_GW=10.77.1.1
SERVER_IP=10.77.2.2 SERVER_GW=10.77.2.1
ROUTER_GW_IP=10.77.0.1 GW_NEXTHOP=10.77.0.2           # the gateway as the router sees it
ROUTER_GW_MAC=02:77:00:00:00:01 GW_RT_MAC=02:77:00:00:00:02
UNDERLAY_IP=10.77.9.1 UNDERLAY_MAC=02:77:00:00:09:01  # gwlbd's appliance-side port
GW_APP_KERNEL_MAC=02:77:00:00:09:f1                   # the veth under it, as the kernel knows it
MGMT_IP=10.77.9.2                                     # gateway kernel on the appliance bridge
PROBES="${LAB_PROBES:-data}"                          # data: through gwlbd's port; mgmt: br-app
case "$PROBES" in data|mgmt) ;; *) echo "lab: LAB_PROBES must be data or mgmt, not '$PROBES'" >&2; exit 2 ;; esac
APPLIANCE="${LAB_APPLIANCE:-plain}"                   # plain | stateful | mixed (app_stateful)
case "$APPLIANCE" in plain|stateful|mixed|vxlan) ;; *) echo "lab: LAB_APPLIANCE must be plain, stateful, mixed or vxlan, not '$APPLIANCE'" >&2; exit 2 ;; esac
APP_IPS=(10.77.9.11 10.77.9.12 10.77.9.13 10.77.9.14 10.77.9.15)   # app5: LAB_TOOL's passive tool
UNDERLAY_FAMILY="${LAB_UNDERLAY:-ipv4}"
UNDERLAY_IP6=fd77:9::1 MGMT_IP6=fd77:9::2             # LAB_UNDERLAY=ipv6: gwlbd's and br-app's
case "$UNDERLAY_FAMILY" in
  ipv4) ;;
  ipv6) APP_IPS=(fd77:9::11 fd77:9::12 fd77:9::13 fd77:9::14 fd77:9::15)  # the appliances: IPv6 only
        ;;
  *) echo "lab: LAB_UNDERLAY must be ipv4 or ipv6, not '$UNDERLAY_FAMILY'" >&2; exit 2 ;;
esac
url_host() { case "$1" in *:*) echo "[$1]" ;; *) echo "$1" ;; esac; }  # an address in a URL
APP_MACS=(02:77:00:00:09:11 02:77:00:00:09:12 02:77:00:00:09:13 02:77:00:00:09:14 02:77:00:00:09:15)
CLIENT_B_IP=10.77.1.130 CLIENT_B_IP6=fd77:1::82       # tenant B's client (--listeners 2)
APP_MTU=1600
RT_PORT="${LAB_RT_PORT:-af_packet}"
GW_RT_VETH_MAC=02:77:00:00:00:03                      # gw-rt when it is a bridge port (tap mode)
TAP_KERNEL_MAC=02:77:00:00:00:04 BR_RT_MAC=02:77:00:00:00:05  # tap mode: kernel side of tap-rt, br-rt
CLIENT_IP6=fd77:1::2 CLIENT_GW6=fd77:1::1 SERVER_IP6=fd77:2::2 SERVER_GW6=fd77:2::1
ROUTER_GW_IP6=fd77::1 GW_NEXTHOP6=fd77::2

ns() { echo "$P-$1"; }
lab_listeners() { cat "$D/listeners" 2>/dev/null || echo 1; }
lab_appliance() { cat "$D/appliance" 2>/dev/null || echo plain; }  # the kind `up` made
lab_tool() { cat "$D/tool" 2>/dev/null || echo 0; }  # 1: app5 is a mirror group's passive tool (LAB_TOOL)
app_ids() {   # the lab's appliances: 1 2, or 1 2 3 4 (and 5 with LAB_TOOL)
  seq 1 $(($(lab_listeners) * 2))
  [ "$(lab_tool)" = 1 ] && echo 5
  return 0
}
app_names() { app_ids | sed 's/^/app/'; }
# The lab's server groups, as every gateway's config has them: one group of
# app1 and app2; with --listeners 2 a group per tenant, a listener each and
# the traffic classes that split the client's two addresses between them
# (and bypass TCP port 873). Health checks take the data path (the exception
# tap of gwlbd's appliance port) unless given EXTRA keys (LAB_PROBES=mgmt).
appliance_groups_yaml() {  # appliance_groups_yaml [EXTRA_HEALTH_CHECK_KEYS]
  echo "server_groups:"
  if [ "$(lab_listeners)" = 2 ] && [ "${LAB_MIRROR:-0}" = 1 ]; then
    server_group_yaml fw-a 0 1 "${1:-}"
    server_group_yaml tools 2 3 "${1:-}"
    cat <<YAML
listeners:
  - { name: tenant-a, server_groups: [fw-a] }
traffic_classes:
  - name: backups
    match: { protocols: [tcp], l4_ports: [873] }
    action: bypass
  - name: tenant-a
    match: { prefixes: [10.77.1.0/25, "fd77:1::/121"] }
    listener: tenant-a
    mirror: { group: tools }
  - name: tenant-b
    match: { prefixes: [10.77.1.128/25, "fd77:1::80/121"] }
    listener: tenant-a
YAML
  elif [ "$(lab_listeners)" = 2 ]; then
    server_group_yaml fw-a 0 1 "${1:-}"
    server_group_yaml fw-b 2 3 "${1:-}"
    # LAB_TOOL: app5 alone in group tools, a passive tool that gets a copy of
    # tenant-a's packets (every 4th, its first 128 bytes); LAB_BYPASS:
    # tenant-b's appliances may hand flows back.
    local mirror="" bypass=""
    if [ "$(lab_tool)" = 1 ]; then
      server_group_yaml tools 4 4 "${1:-}" | sed '$d'
      mirror=$'\n    mirror: { group: tools, truncate: 128, sample: 4 }'
    fi
    [ -n "${LAB_BYPASS:-}" ] && bypass=", appliance_bypass: { allow: true, max_seconds: $LAB_BYPASS }"
    cat <<YAML
listeners:
  - { name: tenant-a, server_groups: [fw-a] }
  - { name: tenant-b, server_groups: [fw-b]$bypass }
traffic_classes:
  - name: backups
    match: { protocols: [tcp], l4_ports: [873] }
    action: bypass
  - name: tenant-a
    match: { prefixes: [10.77.1.0/25, "fd77:1::/121"] }
    listener: tenant-a$mirror
  - name: tenant-b
    match: { prefixes: [10.77.1.128/25, "fd77:1::80/121"] }
    listener: tenant-b
YAML
  else
    server_group_yaml appliances 0 1 "${1:-}"
    if [ -n "${LAB_BYPASS:-}" ]; then
      cat <<YAML
listeners:
  - { name: appliances, server_groups: [appliances],
      appliance_bypass: { allow: true, max_seconds: $LAB_BYPASS } }
traffic_classes:   # both inspected: what bypasses take out counts per class
  - { name: tcp, match: { protocols: [tcp] }, listener: appliances }
  - { name: other, listener: appliances }
YAML
    fi
  fi
}
server_group_yaml() {  # server_group_yaml NAME I J EXTRA: a group of appliances I and J (0-based)
  local hc="${LAB_HC:-http}" path_line="" extra="${4:-}${LAB_HC_EXTRA:+, $LAB_HC_EXTRA}" rst=""
  [ "${LAB_TCP_RESET:-0}" = 1 ] && rst=$'\n    send_tcp_reset: { on_unhealthy: true, on_deregistration: true }'
  [ "$hc" = http ] && path_line=", path: /health"
  local encap=""
  [ "$APPLIANCE" = vxlan ] && encap=$'\n    encapsulation: vxlan'
  cat <<YAML
  - name: $1
    geneve: { format: ${LAB_FORMAT:-aws}, vni: 77 }$encap
    maglev_table_size: 4093
    failover_mode: ${LAB_FAILOVER:-rebalance}$rst
    connection_draining: { enabled: true, timeout: ${LAB_DRAIN:-10s} }
    health_check: { protocol: $hc, port: 8080$path_line, interval: ${LAB_HC_INTERVAL:-500ms},
                    timeout: ${LAB_HC_TIMEOUT:-300ms}, healthy_threshold: ${LAB_HC_HEALTHY:-2},
                    unhealthy_threshold: ${LAB_HC_UNHEALTHY:-2}${LAB_HC_FORWARDING:+, forwarding: $LAB_HC_FORWARDING}$extra }
YAML
  if [ "$UNDERLAY_FAMILY" = ipv6 ]; then
    # No MACs: gwlbd finds them by neighbor discovery.
    cat <<YAML
    servers:
      - { address: "${APP_IPS[$2]}" }
      - { address: "${APP_IPS[$3]}" }
YAML
  else
    cat <<YAML
    servers:
      - { address: ${APP_IPS[$2]}, mac: ${APP_MACS[$2]} }
      - { address: ${APP_IPS[$3]}, mac: ${APP_MACS[$3]} }
YAML
  fi
}

# client <-> router <-> server (IPv4 addresses), as both labs have them.
link_client_server() {
  ip link add c0 netns "$(ns client)" type veth peer name r-cli netns "$(ns router)"
  ip link add s0 netns "$(ns server)" type veth peer name r-srv netns "$(ns router)"
  nx client ip addr add "$CLIENT_IP/24" dev c0
  if [ "$(lab_listeners)" = 2 ]; then nx client ip addr add "$CLIENT_B_IP/24" dev c0; fi
  nx server ip addr add "$SERVER_IP/24" dev s0
  nx router ip addr add "$CLIENT_GW/24" dev r-cli
  nx router ip addr add "$SERVER_GW/24" dev r-srv
}

# shellcheck source=scripts/lab_fleet.sh
source "$GWLB_ROOT/scripts/lab_fleet.sh"
# shellcheck source=scripts/lab_router.sh
source "$GWLB_ROOT/scripts/lab_router.sh"
nx() { local n="$1"; shift; ip netns exec "$(ns "$n")" "$@"; }
log() { echo "lab: $*"; }

quiet_links() {  # no offloads (af_packet must see real frames with real checksums), no IPv6
  local n="$1"; shift
  for dev in "$@"; do
    nx "$n" ethtool -K "$dev" tx off rx off tso off gso off gro off >/dev/null 2>&1 || true
  done
}

ns_setup() {  # ns_setup NAME: create, lo up, no IPv6, no rp_filter
  local n="$1"
  ip netns add "$(ns "$n")"
  nx "$n" ip link set lo up
  nx "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 \
    net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 >/dev/null
}

pid_alive() { local f="$D/$1.pid"; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }

start_bg() {  # start_bg NAME NS CMD...: run CMD in namespace NS in its own session, pid in $D/NAME.pid
  local name="$1" n="$2"; shift 2
  ip netns exec "$(ns "$n")" setsid "$@" >"$D/$name.log" 2>&1 < /dev/null &
  echo $! > "$D/$name.pid"
}

http_start() {  # http_start: Python's http.server on $SERVER_IP:80 serving $D/www, up when it answers
  # Python's HTTPServer.server_bind asks DNS for the address's name
  # (socket.getfqdn) before it listens; the lab's namespaces have no DNS, and
  # a resolver that does not answer held the port closed for 10 s (measured
  # 2026-12-03: curl got "connection refused"). This server skips that lookup.
  start_bg http server /usr/bin/python3 -c '
import functools, http.server, socketserver, sys
class Server(http.server.ThreadingHTTPServer):
    def server_bind(self):  # no getfqdn: no DNS in the lab
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[2])
Server((sys.argv[1], 80), handler).serve_forever()
' "$SERVER_IP" "$D/www"
  local _
  for _ in $(seq 1 100); do nx server curl -s -o /dev/null --max-time 1 "http://$SERVER_IP/" && return 0; sleep 0.1; done
  log "the HTTP server on $SERVER_IP:80 did not answer within 10 s ($D/http.log)"
  return 1
}

stop_pid() {  # stop_pid NAME: TERM, wait up to 5 s, then KILL; only the recorded pid
  local f="$D/$1.pid" pid
  [ -f "$f" ] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

app_start() {
  if [ "$(lab_appliance)" = vxlan ]; then vxlan_app_start "$1"; return; fi
  local i="$1" extra_var="LAB_APP${1}_ARGS"
  local ip="${APP_IPS[$((i - 1))]}" tun=()
  if app_stateful "$i"; then stateful_setup "$i"; tun=(--tun "$STATEFUL_TUN"); fi
  # LAB_MIRROR: app3 and app4 are passive tools writing the copies they get.
  if [ "${LAB_MIRROR:-0}" = 1 ] && [ "$i" -ge 3 ]; then tun=(--mirror-sink "$D/app$i-sink.pcap"); fi
  [ "$i" = 5 ] && tun=(--mirror-sink "$D/app5-sink.pcap")   # LAB_TOOL's tool
  # shellcheck disable=SC2086
  local http_any="0.0.0.0"
  [ "$UNDERLAY_FAMILY" = ipv6 ] && http_any="[::]"
  start_bg "app$i" "app$i" "$GWLB_BUILD/tools/gwlb-appliance" --name "app$i" --listen "$ip" \
    --http "$http_any:8080" "${tun[@]}" ${LAB_APP_ARGS:-} ${!extra_var:-}
  for _ in $(seq 1 50); do
    nx "app$i" curl -s -o /dev/null --max-time 1 "http://$(url_host "$ip"):8080/stats" && return 0
    pid_alive "app$i" || break
    sleep 0.1
  done
  cat "$D/app$i.log" >&2; log "appliance $i did not start"; return 1
}

app_stop() {
  stop_pid "app$1"
  # The kernel appliance dies whole: its data path goes with its HTTP check.
  if [ "$(lab_appliance)" = vxlan ]; then nx "app$1" ip link set "$VXLAN_BR" down 2>/dev/null || true; fi
}

# The kernel VXLAN appliance (LAB_APPLIANCE=vxlan): no gwlb code at all. Two
# VXLAN devices with Azure's default tunnels, each sending to gwlbd's underlay
# address, bridged together: a frame gwlbd sends on one tunnel leaves on the
# other (the bridge floods it: the inner destination MAC, gwlbd's router
# port's, is never a source it learns). br_netfilter hands the bridged IPv4
# and IPv6 packets to the inet forward hook, where scripts/lab_stateful.nft
# keeps conntrack's state. Its HTTP check (port 8080, /health) is Python's
# http.server: the appliance is "up" while it and the bridge are.
# LAB_UNDERLAY=ipv6: the devices tunnel between the appliance's IPv6 address
# and node.underlay_ipv6 (the kernel's VXLAN over IPv6 sends and requires UDP
# checksums, as gwlbd does); gwlbd's address is pinned, as the IPv4 one is.
VXLAN_BR=br-nva
vxlan_setup() {  # vxlan_setup I: appliance I's devices, bridge and firewall (once per namespace)
  local n="app$1" ip="${APP_IPS[$(($1 - 1))]}" gw="$UNDERLAY_IP"
  [ "$UNDERLAY_FAMILY" = ipv6 ] && gw="$UNDERLAY_IP6"
  if ! nx "$n" ip link show "$VXLAN_BR" >/dev/null 2>&1; then
    if [ "$UNDERLAY_FAMILY" = ipv6 ]; then
      nx "$n" ip -6 neigh replace "$gw" lladdr "$UNDERLAY_MAC" dev eth0 nud permanent
    fi
    nx "$n" ip link add vx-ext type vxlan id 801 dstport 10801 local "$ip" remote "$gw" dev eth0
    nx "$n" ip link add vx-int type vxlan id 800 dstport 10800 local "$ip" remote "$gw" dev eth0
    nx "$n" ip link add "$VXLAN_BR" type bridge stp_state 0
    for dev in vx-ext vx-int; do
      nx "$n" ip link set "$dev" master "$VXLAN_BR"
      nx "$n" ip link set "$dev" up
    done
    nx "$n" sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1 >/dev/null
    conntrack_firewall "$n"
    mkdir -p "$D/nva-www"
    echo ok > "$D/nva-www/health"
  fi
  nx "$n" ip link set "$VXLAN_BR" up
}
vxlan_app_start() {
  local i="$1" ip="${APP_IPS[$(($1 - 1))]}"
  vxlan_setup "$i"
  start_bg "app$i" "app$i" /usr/bin/python3 -m http.server 8080 --bind "$ip" --directory "$D/nva-www"
  for _ in $(seq 1 50); do
    nx "app$i" curl -s -o /dev/null --max-time 1 "http://$(url_host "$ip"):8080/health" && return 0
    pid_alive "app$i" || break
    sleep 0.1
  done
  cat "$D/app$i.log" >&2; log "appliance $i (kernel VXLAN) did not start"; return 1
}

# The stateful appliance (docs/lab.md "The stateful appliance"): gwlb-appliance
# --tun writes each inner packet into the tun device st0; the namespace's kernel
# forwards it back out of st0 through scripts/lab_stateful.nft (conntrack, new
# TCP only with a SYN), and what comes out is wrapped again for the gateway.
STATEFUL_TUN=st0
app_stateful() {  # app_stateful I: is appliance I stateful in this lab?
  case "$(lab_appliance)" in
    stateful) return 0 ;;
    mixed) [ $(($1 % 2)) = 1 ] && [ "$1" != 5 ] ;;
    *) return 1 ;;
  esac
}

stateful_setup() {  # stateful_setup I: appliance I's kernel as a stateful firewall (once per namespace)
  local n="app$1"
  nx "$n" ip link show "$STATEFUL_TUN" >/dev/null 2>&1 && return 0
  # A persistent tun: it outlives app-stop, as the kernel's conntrack table does.
  nx "$n" ip tuntap add dev "$STATEFUL_TUN" mode tun
  nx "$n" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.send_redirects=0 \
    "net.ipv4.conf.$STATEFUL_TUN.rp_filter=0" "net.ipv4.conf.$STATEFUL_TUN.send_redirects=0" \
    "net.ipv6.conf.$STATEFUL_TUN.disable_ipv6=0" net.ipv6.conf.all.forwarding=1 >/dev/null
  nx "$n" ip link set "$STATEFUL_TUN" up
  # Inner traffic goes back out of the tun (eth0's 10.77.9.0/24 stays on eth0).
  nx "$n" ip route add default dev "$STATEFUL_TUN"
  nx "$n" ip -6 route add default dev "$STATEFUL_TUN"
  conntrack_firewall "$n"
}

# Both stateful appliances' firewall: scripts/lab_stateful.nft, and no TCP
# connection picked up mid-stream (new only with a SYN).
conntrack_firewall() {  # conntrack_firewall NS
  nx "$1" nft -f "$GWLB_ROOT/scripts/lab_stateful.nft"
  # After the ruleset: its ct expressions load conntrack, which makes the key.
  nx "$1" sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 >/dev/null
}

active_count() {  # appliances in state active, by gwlbctl --json servers
  "$GWLB_BUILD/cli/gwlbctl" --socket "$D/gwlbd.sock" --json servers 2>/dev/null | /usr/bin/python3 -c '
import json, sys
try: d = json.load(sys.stdin)
except Exception: print(0); sys.exit()
rows = d.get("servers", d) if isinstance(d, dict) else d
print(sum(1 for r in rows if isinstance(r, dict) and str(r.get("state", "")).startswith("active")
          and (r.get("health") or {}).get("state") in ("healthy", "disabled")))'
}

stateful_summary() {  # which appliances are stateful, for `up` and `status`
  local i out=""
  for i in $(app_ids); do
    if [ "$(lab_appliance)" = vxlan ]; then out="$out app$i kernel VXLAN (vx-ext 10801/801 + vx-int 10800/800 on $VXLAN_BR, nftables conntrack, over $UNDERLAY_FAMILY),"
    elif app_stateful "$i"; then out="$out app$i stateful (tun $STATEFUL_TUN + nftables conntrack),"
    else out="$out app$i plain,"; fi
  done
  echo "${out# }" | sed 's/,$//'
}

lab_complete() {
  [ "$(lab_appliance)" = "$APPLIANCE" ] || return 1
  [ "$(cat "$D/underlay" 2>/dev/null || echo ipv4)" = "$UNDERLAY_FAMILY" ] || return 1
  for n in client server router gw $(app_names); do ip netns list | grep -qw "$(ns "$n")" || return 1; done
  for p in gwlbd $(app_names) http; do pid_alive "$p" || return 1; done
  [ -S "$D/gwlbd.sock" ]
}

rt_vdev() {  # gwlbd's port 0
  if [ "$RT_PORT" = tap ]; then
    echo "net_tap0,iface=tap-rt,mac=$GW_RT_MAC"
  else
    echo "net_af_packet0,iface=gw-rt,qpairs=1,framecnt=4096,framesz=2048,blocksz=4096"
  fi
}

probe_keys() {  # probe_keys IFACE ADDR: the health_check keys of LAB_PROBES=mgmt, else nothing
  case "$PROBES" in
    data) ;;
    # health_check.source is IPv4: probes to IPv6 appliances take the kernel's choice.
    mgmt) if [ "$UNDERLAY_FAMILY" = ipv6 ]; then echo ", interface: $1"; else echo ", interface: $1, source: $2"; fi ;;
  esac
}
underlay_keys() {  # node.underlay_ip; LAB_UNDERLAY=ipv6: node.underlay_ipv6 alone (an IPv6-only node)
  if [ "$UNDERLAY_FAMILY" = ipv6 ]; then echo "underlay_ipv6: \"$UNDERLAY_IP6\","; else echo "underlay_ip: $UNDERLAY_IP,"; fi
}

write_config() {
  cat > "$D/gwlbd.yaml" <<YAML
# Generated by scripts/lab.sh: gwlbd in namespace $(ns gw).
# Port 0 (gw-rt) faces the router, port 1 (gw-app) the appliance network.
# Health probes: $PROBES path (docs/lab.md, "Health checks").
node: { $(underlay_keys) underlay_mac: $UNDERLAY_MAC, underlay_port: 1, underlay_mtu: $APP_MTU,
        exception_path: { enabled: true, name_prefix: gwlb } }
$(appliance_groups_yaml "$(probe_keys br-app "$MGMT_IP")")
dataplane: { workers: 1, mbufs: 16384, flow_table_size: 16384 }
control: { socket: $D/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "$(rt_vdev)",
      "--vdev", "net_af_packet1,iface=gw-app,qpairs=1,framecnt=4096,framesz=2048,blocksz=4096"]
YAML
}

gw_start() {  # gwlbd in the gateway namespace; waits for its control socket
  rm -f "$D/gwlbd.sock"
  [ -f "$D/gwlbd.log" ] && cat "$D/gwlbd.log" >> "$D/gwlbd.log.old"
  start_bg gwlbd gw "$GWLB_BUILD/control/gwlbd" --config "$D/gwlbd.yaml"
  for _ in $(seq 1 120); do [ -S "$D/gwlbd.sock" ] && break; pid_alive gwlbd || break; sleep 0.05; done
  [ -S "$D/gwlbd.sock" ] || { tail -30 "$D/gwlbd.log" >&2; log "gwlbd did not start"; return 1; }
  if [ "$RT_PORT" = tap ]; then
    # net_tap made tap-rt when gwlbd started (and removes it when it stops):
    # put it on the bridge with the router's veth.
    nx gw ip link show tap-rt >/dev/null 2>&1 || { log "gwlbd made no tap-rt"; return 1; }
    # net_tap gives the kernel side gwlbd's MAC too; a bridge keeps frames for
    # its ports' own MACs, so the kernel side gets another one.
    nx gw ip link set tap-rt address "$TAP_KERNEL_MAC"
    nx gw ip link set tap-rt master br-rt
    quiet_links gw tap-rt
    nx gw ip link set tap-rt up
  fi
}

ipv6_up() {  # the same paths over IPv6: client, router, server (the appliance network stays IPv4)
  for n in client router server; do
    nx "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0 \
      net.ipv6.conf.all.accept_ra=0 net.ipv6.conf.default.accept_ra=0 >/dev/null
  done
  nx client ip -6 addr add "$CLIENT_IP6/64" dev c0 nodad
  if [ "$(lab_listeners)" = 2 ]; then nx client ip -6 addr add "$CLIENT_B_IP6/64" dev c0 nodad; fi
  nx server ip -6 addr add "$SERVER_IP6/64" dev s0 nodad
  nx router ip -6 addr add "$CLIENT_GW6/64" dev r-cli nodad
  nx router ip -6 addr add "$SERVER_GW6/64" dev r-srv nodad
  nx router ip -6 addr add "$ROUTER_GW_IP6/126" dev r-gw nodad
  nx client ip -6 route add default via "$CLIENT_GW6"
  nx server ip -6 route add default via "$SERVER_GW6"
  nx router sysctl -qw net.ipv6.conf.all.forwarding=1 >/dev/null
  nx router ip -6 route add default via "$GW_NEXTHOP6" dev r-gw table 100
  nx router ip -6 rule add iif r-cli lookup 100 pref 100
  nx router ip -6 rule add iif r-srv lookup 100 pref 101
  nx router ip -6 neigh replace "$GW_NEXTHOP6" lladdr "$GW_RT_MAC" dev r-gw nud permanent
  # Hosts and router know each other statically: no neighbour discovery to wait for.
  nx client ip -6 neigh replace "$CLIENT_GW6" lladdr "$(nx router cat /sys/class/net/r-cli/address)" dev c0 nud permanent
  nx server ip -6 neigh replace "$SERVER_GW6" lladdr "$(nx router cat /sys/class/net/r-srv/address)" dev s0 nud permanent
  nx router ip -6 neigh replace "$CLIENT_IP6" lladdr "$(nx client cat /sys/class/net/c0/address)" dev r-cli nud permanent
  nx router ip -6 neigh replace "$SERVER_IP6" lladdr "$(nx server cat /sys/class/net/s0/address)" dev r-srv nud permanent
}

lab_down() {
  # TERM to all at once (gateways in the fleet lab withdraw and wait their
  # grace period in parallel), then stop_pid each (KILL after 5 s).
  for p in "${ALL_PROCS[@]}"; do pid_alive "$p" && kill -TERM "$(cat "$D/$p.pid")" 2>/dev/null; done
  for p in "${ALL_PROCS[@]}"; do stop_pid "$p"; done
  for n in "${ALL_NS[@]}"; do
    local name; name="$(ns "$n")"
    ip netns list 2>/dev/null | grep -qw "$name" || continue
    # Anything still running in our namespace was started by this lab.
    for pid in $(ip netns pids "$name" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$name" 2>/dev/null || true
  done
  rm -f "$D/gwlbd.sock" "$D/gateways" "$D/listeners" "$D/tool" "$D/appliance" "$D/underlay" "$D/router/kind"
}

lab_up() {
  local gateways=1 listeners=1
  while [ $# -gt 0 ]; do
    case "$1" in
      --gateways) gateways="${2:?--gateways N}"; shift 2 ;;
      --gateways=*) gateways="${1#*=}"; shift ;;
      --listeners) listeners="${2:?--listeners L}"; shift 2 ;;
      --listeners=*) listeners="${1#*=}"; shift ;;
      *) log "up: unknown argument $1 (--gateways N, --listeners L)"; return 2 ;;
    esac
  done
  case "$gateways" in 1|2|3|4) ;; *) log "--gateways: $gateways is not 1..4"; return 2 ;; esac
  case "$listeners" in 1|2) ;; *) log "--listeners: $listeners is not 1 or 2"; return 2 ;; esac
  if [ "$UNDERLAY_FAMILY" = ipv6 ] && [ "$gateways" -gt 1 ] && [ "${LAB_ROUTER:-bird}" = frr ]; then
    log "LAB_UNDERLAY=ipv6 with --gateways: the router is BIRD (LAB_ROUTER=frr runs over IPv4)"; return 2
  fi
  for b in control/gwlbd cli/gwlbctl tools/gwlb-appliance; do
    [ -x "$GWLB_BUILD/$b" ] || { log "missing $GWLB_BUILD/$b (build it first)"; return 1; }
  done
  if [ "$gateways" -gt 1 ]; then
    command -v bird >/dev/null || { log "the fleet lab needs BIRD 2 (bird2; scripts/setup.sh)"; return 1; }
    case "${LAB_ROUTER:-bird}" in
      bird) ;;
      frr) [ -x "$FRR_LIB/bgpd" ] || { log "LAB_ROUTER=frr needs FRR (frr; scripts/setup.sh)"; return 1; } ;;
      *) log "LAB_ROUTER: ${LAB_ROUTER} is not bird or frr"; return 2 ;;
    esac
  fi
  if [ "$(lab_listeners)" = "$listeners" ] && [ "$gateways" = 1 ] && [ "$(fleet_n)" = 1 ] && lab_complete; then
    log "already up ($D)"; return 0
  fi
  if [ "$(lab_listeners)" = "$listeners" ] && [ "$gateways" -gt 1 ] && [ "$(fleet_n)" = "$gateways" ] && fleet_complete; then
    log "already up ($D, $gateways gateways)"; return 0
  fi
  if ! ip netns add "$P-probe" 2>/dev/null; then
    log "cannot create network namespaces here (needs root or CAP_SYS_ADMIN)"; return 3
  fi
  ip netns del "$P-probe"
  lab_down
  mkdir -p "$D"
  echo "$listeners" > "$D/listeners"
  local tool=0
  [ "$listeners" = 2 ] && [ "${LAB_TOOL:-0}" = 1 ] && [ "${LAB_MIRROR:-0}" != 1 ] && tool=1
  echo "$tool" > "$D/tool"
  echo "$APPLIANCE" > "$D/appliance"
  echo "$UNDERLAY_FAMILY" > "$D/underlay"
  trap 'log "up failed; tearing down"; lab_down' ERR
  if [ "$gateways" -gt 1 ]; then
    fleet_up "$gateways" || { log "up failed; tearing down"; lab_down; return 1; }
    trap - ERR
    return 0
  fi
  for n in client server router gw $(app_names); do ns_setup "$n"; done

  link_client_server
  # router <-> gateway (gwlbd port 0; no kernel address on gw-rt). In tap mode
  # gw-rt is a port of bridge br-rt, whose other port is gwlbd's tap (tap-rt,
  # MAC $GW_RT_MAC): the router's frames reach gwlbd exactly as sent.
  local rt_mac="$GW_RT_MAC"
  [ "$RT_PORT" = tap ] && rt_mac="$GW_RT_VETH_MAC"
  ip link add r-gw netns "$(ns router)" address "$ROUTER_GW_MAC" type veth \
    peer name gw-rt netns "$(ns gw)" address "$rt_mac"
  nx router ip addr add "$ROUTER_GW_IP/30" dev r-gw
  if [ "$RT_PORT" = tap ]; then
    nx gw ip link add br-rt address "$BR_RT_MAC" type bridge stp_state 0
    nx gw ip link set gw-rt master br-rt
    nx gw ip link set br-rt up
  fi
  # appliance network: a bridge in the gateway namespace; gwlbd's port 1 (gw-app),
  # the gateway kernel's management address (br-app) and the two appliances on it.
  nx gw ip link add br-app type bridge
  nx gw ip link set br-app mtu "$APP_MTU"
  nx gw sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.default.arp_ignore=1 >/dev/null
  # gw-app's own (kernel) MAC is not gwlbd's: like a NIC bound to vfio-pci, the
  # gateway's kernel never takes gwlbd's frames as its own (the underlay
  # address is local, on gwlbd's tap gwlb1, for the probes).
  nx gw ip link add gw-app address "$GW_APP_KERNEL_MAC" mtu "$APP_MTU" type veth peer name gw-app-br mtu "$APP_MTU"
  nx gw ip link set gw-app-br master br-app
  for i in $(app_ids); do
    ip link add "a$i-br" netns "$(ns gw)" mtu "$APP_MTU" type veth \
      peer name eth0 netns "$(ns "app$i")" address "${APP_MACS[$((i - 1))]}" mtu "$APP_MTU"
    nx gw ip link set "a$i-br" master br-app
    if [ "$UNDERLAY_FAMILY" = ipv6 ]; then
      # IPv6 only; gwlbd answers the appliance's neighbor solicitations for
      # its underlay address, and solicits the appliance's MAC itself.
      nx "app$i" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.eth0.disable_ipv6=0 \
        net.ipv6.conf.eth0.accept_ra=0 >/dev/null
      nx "app$i" ip -6 addr add "${APP_IPS[$((i - 1))]}/64" dev eth0 nodad
      nx "app$i" ip link set eth0 up
    else
      nx "app$i" ip addr add "${APP_IPS[$((i - 1))]}/24" dev eth0
      nx "app$i" ip link set eth0 up
      # gwlbd's underlay address answers no ARP from the kernel: pin it.
      nx "app$i" ip neigh replace "$UNDERLAY_IP" lladdr "$UNDERLAY_MAC" dev eth0 nud permanent
    fi
    nx gw ip link set "a$i-br" up
    quiet_links "app$i" eth0
    quiet_links gw "a$i-br"
  done
  nx gw ip addr add "$MGMT_IP/24" dev br-app
  if [ "$UNDERLAY_FAMILY" = ipv6 ]; then  # the appliances' HTTP from the gateway kernel (LAB_PROBES=mgmt, tests)
    nx gw sysctl -qw net.ipv6.conf.br-app.disable_ipv6=0 net.ipv6.conf.br-app.accept_ra=0 >/dev/null
    nx gw ip -6 addr add "$MGMT_IP6/64" dev br-app nodad
  fi
  for dev in br-app gw-app gw-app-br gw-rt; do nx gw ip link set "$dev" up; done
  quiet_links gw gw-app gw-app-br gw-rt br-app

  nx client ip link set c0 up
  nx server ip link set s0 up
  for dev in r-cli r-srv r-gw; do nx router ip link set "$dev" up; done
  quiet_links client c0
  quiet_links server s0
  quiet_links router r-cli r-srv r-gw
  nx client ip route add default via "$CLIENT_GW"
  nx server ip route add default via "$SERVER_GW"

  # The GWLB endpoint pattern: what arrives from the hosts goes to the gateway,
  # what comes back from the gateway is routed normally.
  nx router sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.send_redirects=0 \
    net.ipv4.conf.default.send_redirects=0 >/dev/null
  for dev in r-cli r-srv r-gw; do
    nx router sysctl -qw "net.ipv4.conf.$dev.rp_filter=0" "net.ipv4.conf.$dev.send_redirects=0" >/dev/null
  done
  nx router ip route add default via "$GW_NEXTHOP" dev r-gw table 100
  nx router ip rule add iif r-cli lookup 100 pref 100
  nx router ip rule add iif r-srv lookup 100 pref 101
  nx router ip neigh replace "$GW_NEXTHOP" lladdr "$GW_RT_MAC" dev r-gw nud permanent
  if [ "${LAB_IPV6:-0}" = 1 ]; then ipv6_up; fi

  # Processes: the appliances, gwlbd, an HTTP server with a 16 MiB file.
  for i in $(app_ids); do app_start "$i"; done
  write_config
  "$GWLB_BUILD/control/gwlbd" --check-config "$D/gwlbd.yaml" >/dev/null
  gw_start
  mkdir -p "$D/www"
  [ -s "$D/www/blob.bin" ] || head -c $((16 << 20)) /dev/urandom > "$D/www/blob.bin"
  echo "hello through the gateway" > "$D/www/index.html"
  http_start
  # Every appliance healthy before we call the lab up.
  for _ in $(seq 1 100); do [ "$(active_count)" -ge "$(app_ids | wc -l)" ] && break; sleep 0.1; done
  trap - ERR
  log "up: client $CLIENT_IP -> router -> gateway (gwlbd) -> app1 ${APP_IPS[0]} / app2 ${APP_IPS[1]} -> server $SERVER_IP"
  [ "$UNDERLAY_FAMILY" = ipv4 ] || log "IPv6 underlay: Geneve over IPv6 from $UNDERLAY_IP6, appliances resolved by neighbor discovery"
  [ "$APPLIANCE" = plain ] || log "appliances: $(stateful_summary)"
  if [ "$listeners" = 2 ] && [ "${LAB_MIRROR:-0}" = 1 ]; then
    log "mirror group: both tenants -> app1/app2 (listener tenant-a); copies of tenant-a's packets -> app3 ${APP_IPS[2]} / app4 ${APP_IPS[3]} (--mirror-sink $D/appN-sink.pcap)"
  elif [ "$listeners" = 2 ]; then
    log "two listeners: tenant-a (client $CLIENT_IP) -> app1/app2, tenant-b (client $CLIENT_B_IP) -> app3 ${APP_IPS[2]} / app4 ${APP_IPS[3]}; TCP port 873 bypassed"
  fi
  log "control socket $D/gwlbd.sock; logs in $D"
}

lab_status() {
  [ "$(fleet_n)" -gt 1 ] && { fleet_status; return; }
  local rc=0
  for n in client server router gw $(app_names); do
    if ip netns list | grep -qw "$(ns "$n")"; then echo "namespace $(ns "$n"): present"; else echo "namespace $(ns "$n"): absent"; rc=1; fi
  done
  for p in gwlbd $(app_names) http; do
    if pid_alive "$p"; then echo "process $p: running (pid $(cat "$D/$p.pid"))"; else echo "process $p: not running"; rc=1; fi
  done
  echo "appliances: $(stateful_summary)"
  if [ -S "$D/gwlbd.sock" ]; then "$GWLB_BUILD/cli/gwlbctl" --socket "$D/gwlbd.sock" servers || rc=1; fi
  return $rc
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  up) lab_up "$@" ;;
  down) lab_down; log "down" ;;
  status) lab_status ;;
  app-stop) app_stop "${1:?app-stop N}" ;;
  app-start) app_start "${1:?app-start N}" ;;
  gw-stop|gw-start|gw-kill)
    if [ "$(fleet_n)" -gt 1 ]; then
      k="${1:?$cmd K (the fleet lab has gateways 1..$(fleet_n))}"
      [ "$k" -ge 1 ] && [ "$k" -le "$(fleet_n)" ] || { log "no gateway $k (1..$(fleet_n))"; exit 2; }
      case "$cmd" in gw-stop) fleet_gw_stop "$k" ;; gw-kill) fleet_gw_kill "$k" ;; gw-start) fleet_gw_start "$k" ;; esac
    else
      case "$cmd" in gw-stop) stop_pid gwlbd ;; gw-start) gw_start ;;
        gw-kill) [ -f "$D/gwlbd.pid" ] && kill -KILL "$(cat "$D/gwlbd.pid")" 2>/dev/null; rm -f "$D/gwlbd.pid" ;; esac
    fi ;;
  gwlbctl)
    sock="$D/gwlbd.sock"
    [ "$(fleet_n)" -gt 1 ] && sock="$D/gw${LAB_GW:-1}/gwlbd.sock"
    exec "$GWLB_BUILD/cli/gwlbctl" --socket "$sock" "$@" ;;
  birdc)
    n="${1:?birdc router|gwK ARGS...}"; shift
    exec ip netns exec "$(ns "$n")" birdc -s "$D/$n/bird.ctl" "$@" ;;
  vtysh) exec ip netns exec "$(ns router)" vtysh --vty_socket "$(frr_dir)" "$@" ;;
  router-config) router_config "$@" ;;
  exec) n="${1:?exec NS CMD...}"; shift; exec ip netns exec "$(ns "$n")" "$@" ;;
  -h|--help|"") sed -n '2,64p' "$0"; [ -n "$cmd" ] ;;
  *) echo "lab.sh: unknown command $cmd (up|down|status|app-stop|app-start|gw-stop|gw-kill|gw-start|gwlbctl|birdc|vtysh|router-config|exec)" >&2; exit 2 ;;
esac
