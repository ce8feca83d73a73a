#!/usr/bin/env bash
# Probes to an address that never answers a SYN, inside a private network
# namespace: nothing leaves it. The black hole is a veth pair whose far end has
# no address and no forwarding (a frame for another MAC is dropped there), or,
# where veth is unavailable, an nftables rule dropping the SYNs on input.
# Exit 77 (skip) when a namespace cannot be made (no privilege).
#   blackhole.sh GWLB_PROBE TEST_PROBES
set -u
probe=$1
tests=$2
ns=gwlbprobe$$
v4=10.203.0.2
v6=fd00:cb::2
port=9

# Namespaces left by an earlier run that was killed (its pid is gone).
for old in $(ip netns list 2>/dev/null | awk '/^gwlbprobe[0-9]+/ {print $1}'); do
  kill -0 "${old#gwlbprobe}" 2>/dev/null || ip netns del "$old" 2>/dev/null
done

if ! err=$(ip netns add "$ns" 2>&1); then
  echo "SKIP: cannot create a network namespace (ip netns add: $err)"
  exit 77
fi
trap 'ip netns del "$ns" 2>/dev/null' EXIT
trap 'exit 1' INT TERM  # runs the EXIT trap
in_ns() { ip netns exec "$ns" "$@"; }

in_ns ip link set lo up || exit 1
have_v6=0
if in_ns ip link add bh0 type veth peer name bh1 2>/dev/null; then
  in_ns ip link set bh0 up && in_ns ip link set bh1 up &&
    in_ns ip addr add 10.203.0.1/32 dev bh0 &&
    in_ns ip route add 10.203.0.0/24 dev bh0 src 10.203.0.1 &&
    in_ns ip neigh add $v4 lladdr 02:00:00:cb:00:02 dev bh0 nud permanent || exit 1
  if in_ns ip -6 addr add fd00:cb::1/128 dev bh0 nodad 2>/dev/null &&
     in_ns ip -6 route add fd00:cb::/64 dev bh0 src fd00:cb::1 2>/dev/null &&
     in_ns ip -6 neigh add $v6 lladdr 02:00:00:cb:00:02 dev bh0 nud permanent 2>/dev/null; then
    have_v6=1
  fi
  echo "black hole: veth bh0 -> bh1 (no address, no forwarding)"
elif command -v nft >/dev/null &&
     in_ns ip addr add $v4/32 dev lo &&
     in_ns nft add table inet gwlbprobe &&
     in_ns nft add chain inet gwlbprobe in '{ type filter hook input priority 0; }' &&
     in_ns nft add rule inet gwlbprobe in ip daddr $v4 tcp dport $port drop; then
  echo "black hole: nftables drop of tcp to $v4:$port on input"
else
  echo "SKIP: neither veth nor nftables can make a black hole in the namespace"
  exit 77
fi

fail=0
check() {  # name, expected exit, expected reason, max seconds, command...
  local name=$1 want_rc=$2 want_reason=$3 max=$4
  shift 4
  local t0 t1 out rc
  t0=$(date +%s%N)
  out=$("$@")
  rc=$?
  t1=$(date +%s%N)
  local ms=$(( (t1 - t0) / 1000000 ))
  echo "$name: rc=$rc ${ms}ms $out"
  if [ "$rc" != "$want_rc" ] || [[ "$out" != *"\"reason\":\"$want_reason\""* ]] || [ "$ms" -gt $((max * 1000)) ]; then
    echo "FAIL: $name (want rc=$want_rc reason=$want_reason within ${max}s)"
    fail=1
  fi
}

check tcp 1 connect_timeout 3 in_ns "$probe" --protocol tcp --address $v4 --port $port --timeout 1000
check http 1 connect_timeout 3 in_ns "$probe" --protocol http --address $v4 --port $port --timeout 1000
check refused 1 connect_refused 2 in_ns "$probe" --protocol tcp --address 127.0.0.1 --port $port --timeout 1000
if [ $have_v6 = 1 ]; then
  check tcp6 1 connect_timeout 3 in_ns "$probe" --protocol tcp --address $v6 --port $port --timeout 1000
fi

env6=
[ $have_v6 = 1 ] && env6=$v6
if ! in_ns env GWLB_PROBE_BLACKHOLE=$v4 GWLB_PROBE_BLACKHOLE6=$env6 "$tests" --gtest_filter='Blackhole.*'; then
  echo "FAIL: Blackhole tests"
  fail=1
fi
exit $fail
