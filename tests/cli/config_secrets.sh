#!/usr/bin/env bash
# `gwlbctl config check`, `gwlbd --check-config` and gwlbd's reload judge a
# file the same way (issue 24 item 12):
#  1. the bad secret-file variants (mode 0644, a symbolic link, too short,
#     missing, fleet.secret and a node.flow_hash_secret file holding different keys)
#     (a missing file's message says how to make one, docs/fleet.md's line)
#     and dataplane.workers beyond the lcores of `eal`: both checkers refuse
#     each one (exit 2) with the same `key.path: message` line; likewise a bad
#     traffic class value, and a shadowed class is the same warning (issue 27),
#     as are a class on a port that does not exist, a first class that drops
#     everything and a group without health_check; and a config the EAL memory
#     (-m) cannot hold;
#  2. a running gwlbd keyed from fleet.secret_file: a new key written to the
#     same file is reported under restart_needed; the file made 0644, or
#     removed, fails the reload (invalid_config) and the running config stays.
#   config_secrets.sh GWLBD GWLBCTL SRCROOT WORKDIR
set -euo pipefail
gwlbd="$1" gwlbctl="$2" src="$3" work="$4"
rm -rf "$work" && mkdir -p "$work"
# gwlbctl runs the gwlbd beside it or on PATH for the EAL memory check (in
# the build tree they are apart).
export PATH="$(cd "$(dirname "$gwlbd")" && pwd):$PATH"
source "$src/tests/daemon/gwlbd_lib.sh"
key_a=00112233445566778899aabbccddeeff
key_b=ffeeddccbbaa99887766554433221100
fail=0

# config NAME NODE_EXTRA FLEET WORKERS LCORES: writes $work/NAME.yaml
config() {
  cat > "$work/$1.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe $2 }
server_groups:
  - name: firewalls
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 } ]
dataplane: { workers: $4, mbufs: 4096, flow_table_size: 4096 }
control: { socket: $work/gwlbd.sock }
$3
eal: ["--no-huge", "--no-pci", "--no-shconf", "-m", "128", "--no-telemetry", "--lcores=$5",
      "--log-level=*:warning", "--vdev", "net_null0,no-rx=1"]
YAML
}

# agree NAME WANT: both checkers exit 2 and print the same error line, which matches WANT.
agree() {
  local name="$1" want="$2" rc_d=0 rc_c=0
  "$gwlbd" --check-config "$work/$name.yaml" > "$work/$name.gwlbd" 2>&1 || rc_d=$?
  "$gwlbctl" config check "$work/$name.yaml" > "$work/$name.gwlbctl" 2>&1 || rc_c=$?
  local line_d line_c
  line_d=$(grep -E -m1 -- "$want" "$work/$name.gwlbd" || true)
  line_c=$(grep -E -m1 -- "$want" "$work/$name.gwlbctl" || true)
  if [ "$rc_d" -ne 2 ] || [ "$rc_c" -ne 2 ] || [ -z "$line_d" ] || [ "$line_d" != "$line_c" ]; then
    echo "FAIL $name: gwlbd --check-config exit $rc_d, gwlbctl config check exit $rc_c (want 2 and 2, one line matching '$want'):"
    sed 's/^/  gwlbd:   /' "$work/$name.gwlbd"; sed 's/^/  gwlbctl: /' "$work/$name.gwlbctl"
    fail=1
  elif grep -q -e "$key_a" -e "$key_b" "$work/$name.gwlbd" "$work/$name.gwlbctl"; then
    echo "FAIL $name: a key was printed"; fail=1
  else
    echo "ok   $name: both refuse it: $line_d"
  fi
}

printf '%s\n' "$key_a" > "$work/good.key"; chmod 600 "$work/good.key"
printf '%s\n' "$key_a" > "$work/open.key"; chmod 644 "$work/open.key"
ln -s "$work/good.key" "$work/link.key"
printf '%s\n' "${key_a:0:16}" > "$work/short.key"; chmod 600 "$work/short.key"

config valid ", flow_hash_secret: $work/good.key" "" 1 "0@(0-1),1@(0-1)"
rc=0; "$gwlbd" --check-config "$work/valid.yaml" > "$work/valid.gwlbd" 2>&1 || rc=$?
rc2=0; "$gwlbctl" config check "$work/valid.yaml" > "$work/valid.gwlbctl" 2>&1 || rc2=$?
if [ "$rc" -ne 0 ] || [ "$rc2" -ne 0 ]; then
  echo "FAIL valid: exits $rc and $rc2, want 0"; cat "$work/valid.gwlbd" "$work/valid.gwlbctl"; fail=1
else
  echo "ok   valid: both accept it"
fi

config open ", flow_hash_secret: $work/open.key" "" 1 "0@(0-1),1@(0-1)"
agree open "^node.flow_hash_secret: .*has mode 0644.*chmod 600"
config link ", flow_hash_secret: $work/link.key" "" 1 "0@(0-1),1@(0-1)"
agree link "^node.flow_hash_secret: .*must not be a symbolic link"
config short ", flow_hash_secret: $work/short.key" "" 1 "0@(0-1),1@(0-1)"
agree short "^node.flow_hash_secret: .*must hold 32 hexadecimal digits"
config missing ", flow_hash_secret: $work/missing.key" "" 1 "0@(0-1),1@(0-1)"
agree missing "^node.flow_hash_secret: cannot open .*No such file"
config fleet_missing "" "fleet: { node_name: gw-1, secret_file: $work/missing.key }" 1 "0@(0-1),1@(0-1)"
agree fleet_missing "^fleet.secret_file: cannot open .*No such file"
# The missing file's message says how to make one: docs/fleet.md gives the
# same line, and run as printed under the usual umask 022 it creates a file
# of mode 600 from the start (never readable by others in between) that both
# checkers accept.
recipe=$(sed -n 's/^fleet.secret_file: cannot open .*No such file or directory; make one [^:]*: \((umask 077; .*)\)$/\1/p' "$work/fleet_missing.gwlbd")
doc_recipe=${recipe//"$work/missing.key"//etc/gwlb/fleet.key}
if [ -z "$recipe" ] || ! grep -qxF -- "$doc_recipe" "$src/docs/fleet.md"; then
  echo "FAIL fleet_missing: no recipe in the message, or docs/fleet.md lacks it: '$doc_recipe'"
  cat "$work/fleet_missing.gwlbd"; fail=1
else
  (umask 022; bash -c "$recipe")
  rc=0; "$gwlbd" --check-config "$work/fleet_missing.yaml" > "$work/fleet_made.gwlbd" 2>&1 || rc=$?
  mode=$(stat -c %a "$work/missing.key" 2>/dev/null || echo none)
  if [ "$mode" != 600 ] || [ "$rc" -ne 0 ] || grep -q xxd "$src/docs/fleet.md"; then
    echo "FAIL fleet_missing: the recipe made mode $mode, --check-config exit $rc (want 600 and 0; no xxd in fleet.md)"
    cat "$work/fleet_made.gwlbd"; fail=1
  else
    echo "ok   fleet_missing: the message's recipe makes a key of mode 600 that gwlbd accepts; fleet.md has it"
  fi
  rm -f "$work/missing.key"
fi
# (Both inline the config itself compares them; with a file only the key loader can.)
printf '%s\n' "$key_b" > "$work/other.key"; chmod 600 "$work/other.key"
config differ ", flow_hash_secret: $work/other.key" "fleet: { node_name: gw-1, secret: $key_a }" 1 "0@(0-1),1@(0-1)"
agree differ "^node.flow_hash_secret: holds another key than fleet.secret"
# Both keys inline: the config's own check; docs/config.md quotes its line.
config differ_inline ", flow_hash_secret: $key_b" "fleet: { node_name: gw-1, secret: $key_a }" 1 "0@(0-1),1@(0-1)"
agree differ_inline "^fleet.secret: holds another key than node.flow_hash_secret"
line=$(grep -m1 "^fleet.secret: holds another key" "$work/differ_inline.gwlbd" || true)
if [ -z "$line" ] || ! grep -qxF -- "$line" "$src/docs/config.md"; then
  echo "FAIL differ_inline: docs/config.md does not quote the line as gwlbd prints it: $line"; fail=1
else
  echo "ok   differ_inline: docs/config.md quotes it"
fi
config lcores "" "" 2 "0@(0-1),1@(0-1)"
agree lcores "^dataplane.workers: 2 worker\(s\) need 3 lcores.*give 2"
config lcores_l "" "" 3 "0-2"
sed -i 's/"--lcores=0-2"/"-l", "0-2"/' "$work/lcores_l.yaml"
agree lcores_l "^dataplane.workers: 3 worker\(s\) need 4 lcores.*give 3"
# The EAL memory: more mbufs than -m 128 holds. gwlbd refuses it, and so
# does gwlbctl (it runs gwlbd's check); without a gwlbd to run, gwlbctl says
# the memory was not checked.
config memory "" "" 1 "0@(0-1),1@(0-1)"
sed -i 's/mbufs: 4096/mbufs: 65535/' "$work/memory.yaml"
agree memory "EAL memory: the config needs .* but the EAL gets 128.0 MiB"
rc=0; env PATH=/usr/bin:/bin "$gwlbctl" config check "$work/memory.yaml" > "$work/memory.alone" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] || ! grep -qF "warning: eal: the EAL memory is not checked (no gwlbd beside gwlbctl or on PATH): gwlbd --check-config checks it" "$work/memory.alone"; then
  echo "FAIL memory without gwlbd: exit $rc (want 0), and a warning that the memory was not checked:"
  cat "$work/memory.alone"; fail=1
else
  echo "ok   memory without gwlbd: $(grep -m1 'not checked' "$work/memory.alone")"
fi
# Traffic classes (issue 27): an error with its key path, and a shadowed
# class as the same warning line from both checkers (the file stays valid).
config classes_bad "" "traffic_classes: [ { name: t, match: { l4_ports: [2000-1000] } } ]" 1 "0@(0-1),1@(0-1)"
agree classes_bad "^traffic_classes\[0\]\.match\.l4_ports\[0\]: '2000-1000' is an empty range"
# warned NAME WANT: both checkers accept the file (exit 0) and print the
# same warning line, which matches WANT.
warned() {
  local name="$1" want="$2" rc=0 rc2=0 w1 w2
  "$gwlbd" --check-config "$work/$name.yaml" > "$work/$name.gwlbd" 2>&1 || rc=$?
  "$gwlbctl" config check "$work/$name.yaml" > "$work/$name.gwlbctl" 2>&1 || rc2=$?
  w1=$(grep -E -m1 -- "$want" "$work/$name.gwlbd" | sed 's/^.*warning: //' || true)
  w2=$(grep -E -m1 -- "$want" "$work/$name.gwlbctl" | sed 's/^.*warning: //' || true)
  if [ "$rc" -ne 0 ] || [ "$rc2" -ne 0 ] || [ -z "$w1" ] || [ "$w1" != "$w2" ]; then
    echo "FAIL $name: exits $rc and $rc2 (want 0), one warning line matching '$want' from both:"
    cat "$work/$name.gwlbd" "$work/$name.gwlbctl"; fail=1
  else
    echo "ok   $name: both warn: $w1"
  fi
}
config classes_shadowed "" "traffic_classes: [ { name: all }, { name: web, match: { l4_ports: [80] } } ]" 1 "0@(0-1),1@(0-1)"
warned classes_shadowed "warning: traffic_classes\[1\]: class 'web' matches no packet: traffic_classes\[0\] \('all'\) comes first"
config classes_idle_listener "" "listeners: [ { name: ids, server_groups: [firewalls] } ]
traffic_classes: [ { name: rest, action: bypass } ]" 1 "0@(0-1),1@(0-1)"
warned classes_idle_listener "warning: listeners\[0\]: listener 'ids' is named by no inspect class in traffic_classes"
# Classes that can never match and a group never checked (issue 34): a
# class on a port the config does not give (it gives 0, the underlay port),
# a first class that drops everything, a group without health_check.
config classes_ghost_port "" "traffic_classes: [ { name: tenant-a, match: { ingress_ports: [3] } }, { name: rest } ]" 1 "0@(0-1),1@(0-1)"
warned classes_ghost_port "warning: traffic_classes\[0\]\.match\.ingress_ports\[0\]: port 3 does not exist: the config gives port 0 \(node"
config classes_drop_all "" "traffic_classes: [ { name: quarantine, action: drop }, { name: rest } ]" 1 "0@(0-1),1@(0-1)"
warned classes_drop_all "warning: traffic_classes\[0\]: class 'quarantine' comes first and matches every packet: the gateway drops all traffic"
warned classes_drop_all "warning: server_groups\[0\]: server group 'firewalls' has no health_check, so its appliances count as healthy forever"
# The shadow check's bound: 200 classes of 1,024 ports, alike but for one
# port each (its worst case), written tight to stay under the 1 MiB a config
# file may hold (~0.9 MiB). Both checkers accept the file and say where the
# check stopped, in the words docs/config.md quotes.
config classes_bound "" "traffic_classes:
$(awk 'BEGIN { for (i = 0; i < 200; i++) { printf "  - {name: c%d,action: drop,match: {l4_ports: [", i
                                          for (p = 0; p < 1023; p++) printf "%d,", p * 2
                                          printf "%d]}}\n", 65535 - 2 * i } }')" 1 "0@(0-1),1@(0-1)"
warned classes_bound "warning: traffic_classes\[[0-9]+\]: not computed: whether an earlier class shadows"
bound=$(grep -E -m1 "not computed" "$work/classes_bound.gwlbctl" | sed 's/^.*warning: //')
if [ -n "$bound" ] && tr -s ' \n' '  ' < "$src/docs/config.md" | grep -qF -- "\`$bound\`"; then
  echo "ok   classes_bound: docs/config.md quotes it"
else
  echo "FAIL classes_bound: docs/config.md does not quote the line the checkers print: $bound"; fail=1
fi
# An inspect class whose listener has no server group: a file cannot say
# so without an empty listener, which both checkers refuse.
config classes_no_group "" "listeners: [ { name: ids, server_groups: [] } ]
traffic_classes: [ { name: all, listener: ids } ]" 1 "0@(0-1),1@(0-1)"
agree classes_no_group "^listeners\[0\]\.server_groups: needs 1\.\.16 server group names"

# --- Reload: the key, not the path; the file checked as at start.
printf '%s\n' "$key_a" > "$work/fleet.key"; chmod 600 "$work/fleet.key"
config run "" "fleet: { node_name: gw-1, secret_file: $work/fleet.key }" 1 "0@(0-1),1@(0-1)"
start_gwlbd "$gwlbd" "$work/run.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
ctl() { "$gwlbctl" --socket "$work/gwlbd.sock" "$@"; }
# reload_case NAME WANT_EXIT JQ-ish python check on the --json reply
reload_case() {
  local name="$1" want_rc="$2" check="$3" rc=0
  ctl --json reload > "$work/$name.json" 2> "$work/$name.err" || rc=$?
  if [ "$rc" -ne "$want_rc" ] || ! /usr/bin/python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if ($check) else 1)" "$work/$name.json"; then
    echo "FAIL reload $name: exit $rc (want $want_rc), reply:"; cat "$work/$name.json" "$work/$name.err"; fail=1
  else
    echo "ok   reload $name: exit $rc: $(tr -d '\n' < "$work/$name.json" | cut -c1-160)"
  fi
}
reload_case same 0 "r.get('restart_needed') == []"
printf '%s\n' "$key_b" > "$work/fleet.key.new"; chmod 600 "$work/fleet.key.new"
mv "$work/fleet.key.new" "$work/fleet.key"   # a new key at the same path
reload_case new_key 0 "'fleet' in r.get('restart_needed', [])"
chmod 644 "$work/fleet.key"
reload_case mode_0644 2 "r['code'] == 'invalid_config' and any(d['path'] == 'fleet.secret_file' and 'chmod 600' in d['message'] for d in r['details'])"
rm "$work/fleet.key"
reload_case missing 2 "r['code'] == 'invalid_config' and any(d['path'] == 'fleet.secret_file' and 'cannot open' in d['message'] for d in r['details'])"
printf '%s\n' "$key_a" > "$work/fleet.key"; chmod 600 "$work/fleet.key"
reload_case restored 0 "r.get('restart_needed') == []"
grep -q "reload of $work/run.yaml rejected; keeping the running config: 1 error: fleet.secret_file: " "$work/gwlbd.log" ||
  { echo "FAIL: no rejection line in the log"; cat "$work/gwlbd.log"; fail=1; }
stop_gwlbd || { echo "FAIL: gwlbd exit status $?"; cat "$work/gwlbd.log"; fail=1; }

[ "$fail" -eq 0 ] && echo "config_secrets: all checks passed" || { echo "config_secrets: FAILED"; exit 1; }
