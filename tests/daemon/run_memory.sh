#!/usr/bin/env bash
# gwlbd --check-config against the EAL memory gwlbd really gets (issue 18 item 2):
#  1. mbufs that exceed -m: the check fails with one line naming "-m" and the
#     size to give, and dataplane.mbufs; gwlbd itself fails to start with the
#     same advice; with exactly the -m the check asked for, both pass and
#     gwlbd runs (the estimate is not short).
#  2. --no-huge without -m: DPDK's default of 64 MiB, on both sides of it.
#  3. The flow table's line says how much hugepage memory it takes: as EAL
#     memory when the EAL has hugepages, as a note under --no-huge.
#   run_memory.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
pid=""
trap '[ -n "$pid" ] && kill -KILL $pid 2>/dev/null; true' EXIT

# config NAME MBUFS MTU EAL-MEMORY-ARGS...
config() {
  local name="$1" mbufs="$2" mtu="$3"; shift 3
  local mem=""
  for a in "$@"; do mem+="\"$a\", "; done
  cat > "$work/$name.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe, underlay_mtu: $mtu }
server_groups:
  - name: fw
    geneve: { format: aws, endpoint_id: 7, attachment_id: 9 }
    servers: [ { address: 192.0.2.10 } ]
dataplane: { workers: 1, mbufs: $mbufs, flow_table_size: 65536 }
control: { socket: $work/$name.sock }
eal: [${mem}"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--lcores=0@(0-1),1@(0-1)",
      "--log-level=*:warning", "--vdev", "net_null0,no-rx=1"]
YAML
}

# starts NAME: 0 when gwlbd reaches "gwlbd running" (then stopped with SIGTERM,
# exit 0 required), 1 when it exits first (its log in $work/NAME.log).
starts() {
  local name="$1"
  "$gwlbd" --config "$work/$name.yaml" > "$work/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    if grep -q "gwlbd running" "$work/$name.log"; then
      kill -TERM "$pid"; local rc=0; wait "$pid" || rc=$?; pid=""
      [ "$rc" -eq 0 ] || { echo "FAIL: $name: exit $rc after SIGTERM"; cat "$work/$name.log"; exit 1; }
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { wait "$pid" || true; pid=""; return 1; }
    sleep 0.2
  done
  echo "FAIL: $name: neither running nor exited in 60 s"; cat "$work/$name.log"; exit 1
}

check_fails() {  # NAME PATTERN...: --check-config exits 2 with each pattern on stderr
  local name="$1"; shift
  local rc=0
  "$gwlbd" --check-config "$work/$name.yaml" > "$work/$name.check.out" 2> "$work/$name.check.err" || rc=$?
  [ "$rc" -eq 2 ] || { echo "FAIL: $name: --check-config exit $rc, want 2"; cat "$work/$name.check."*; exit 1; }
  [ "$(wc -l < "$work/$name.check.err")" -eq 1 ] || { echo "FAIL: $name: want one error line"; cat "$work/$name.check.err"; exit 1; }
  for p in "$@"; do
    grep -qF -- "$p" "$work/$name.check.err" || { echo "FAIL: $name: no '$p' in"; cat "$work/$name.check.err"; exit 1; }
  done
  echo "$name: --check-config refuses: $(cat "$work/$name.check.err")"
}

# 1. 65535 jumbo mbufs (underlay MTU 9000) in -m 256.
config small 65535 9000 -m 256
check_fails small '"-m", "' 'dataplane.mbufs' '-m 256'
grep -q "mbuf pool" "$work/small.check.out" || { echo "FAIL: no memory report"; cat "$work/small.check.out"; exit 1; }
if starts small; then echo "FAIL: gwlbd started in -m 256"; exit 1; fi
grep -q "dataplane.mbufs" "$work/small.log" && grep -q -- "-m" "$work/small.log" \
  || { echo "FAIL: the start-up error does not say what to change"; cat "$work/small.log"; exit 1; }
echo "gwlbd start refused: $(grep -m1 'startup failed' "$work/small.log" | cut -c1-300)"
need=$(sed -n 's/.*"-m", "\([0-9]*\)".*/\1/p' "$work/small.check.err")
config enough 65535 9000 -m "$need"
"$gwlbd" --check-config "$work/enough.yaml" > "$work/enough.check.out" \
  || { echo "FAIL: -m $need (what the check asked for) refused"; exit 1; }
starts enough || { echo "FAIL: gwlbd did not start with -m $need"; cat "$work/enough.log"; exit 1; }
echo "with -m $need (as the check asked): check passes, gwlbd runs"

# 2. --no-huge without -m: DPDK's 64 MiB. 7000 mbufs of 9408 B need ~68 MiB; 5000 ~50 MiB.
config over 7000 9000
check_fails over "DPDK's default of 64 MiB" 'dataplane.mbufs'
if starts over; then echo "FAIL: gwlbd started in DPDK's default memory with ~68 MiB needed"; exit 1; fi
config under 5000 9000
"$gwlbd" --check-config "$work/under.yaml" > /dev/null || { echo "FAIL: ~50 MiB refused in 64 MiB"; exit 1; }
starts under || { echo "FAIL: ~50 MiB did not start in DPDK's default"; cat "$work/under.log"; exit 1; }
echo "--no-huge without -m: 64 MiB (7000 jumbo mbufs refused by both, 5000 accepted by both)"

# 3. The flow table's hugepage memory (issue 28 item 4): with the EAL on
#    hugepages (no --no-huge) its tags and IPv4 slots are EAL memory; under
#    --no-huge the report still says how much hugepage memory they would take.
#    65536 flows: 72128 slots (+10 %, buckets of 16) x 64 B + 4 B tags rounded
#    to 4 KiB pages = 4907008 B = 4.7 MiB; IPv6 slots 72128 x 128 B = 8.8 MiB.
sed 's/"--no-huge", //' "$work/under.yaml" > "$work/huge.yaml"
"$gwlbd" --check-config "$work/huge.yaml" > "$work/huge.check.out" 2>/dev/null || true
ft=$(grep -E '^  flow table  ' "$work/huge.check.out" || true)
for p in "4.7 MiB" " EAL " "72128 slots: tags and IPv4 slots in hugepages"; do
  [[ "$ft" == *"$p"* ]] || { echo "FAIL: hugepages: no '$p' in the flow table line"; cat "$work/huge.check.out"; exit 1; }
done
grep -qE '^  flow table, IPv6 slots +8\.8 MiB +process ' "$work/huge.check.out" \
  || { echo "FAIL: hugepages: no IPv6 slots line"; cat "$work/huge.check.out"; exit 1; }
echo "hugepages: $ft"
grep -qxF "  $ft" "$src/docs/deploy.md" || { echo "FAIL: docs/deploy.md does not quote the line: $ft"; exit 1; }
ft=$("$gwlbd" --check-config "$work/under.yaml" | grep -E '^  flow table  ' || true)
[[ "$ft" == *"4.7 MiB of hugepages when the EAL has them"* && "$ft" == *" process "* ]] \
  || { echo "FAIL: --no-huge: the flow table line does not say its hugepage size: $ft"; exit 1; }
echo "--no-huge: $ft"
grep -qxF "  $ft" "$src/docs/deploy.md" || { echo "FAIL: docs/deploy.md does not quote the line: $ft"; exit 1; }
