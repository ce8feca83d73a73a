#!/usr/bin/env bash
# gwlbd's own flow hash key (docs/config.md "The flow hash key"): with no
# node.flow_hash_secret and no fleet secret, gwlbd generates a key at its
# first start and keeps it in its state directory ($STATE_DIRECTORY, here a
# work directory), mode 0600; the next start reads it, so every flow hashes
# to the appliance it had: `explain` gives the same hash and appliance for 32
# flows before and after a restart. --check-config names the key it uses; a
# corrupt or group-readable key file is refused with what to do.
#   run_flow_key.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
source "$src/tests/daemon/gwlbd_lib.sh"
fail() { echo "FAIL: $*"; exit 1; }
export STATE_DIRECTORY="$work/state"
key="$STATE_DIRECTORY/flow_hash.key"
cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: fw
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 }, { address: 192.0.2.12 },
               { address: 192.0.2.13 }, { address: 192.0.2.14 } ]
dataplane: { workers: 1, mbufs: 4096, flow_table_size: 4096 }
control: { socket: $work/gwlbd.sock }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "128",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning", "--vdev", "net_null0,no-rx=1"]
YAML

# The appliance and keyed hash of 32 flows, one line each.
choices() {
  /usr/bin/python3 - "$work/gwlbd.sock" "$src/tests/daemon" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from checklib import api_call
for i in range(32):
    r = api_call(sys.argv[1], "explain", src="198.51.100.7", dst="203.0.113.9", proto="tcp",
                 sport=40000 + i, dport=443)
    assert r["ok"], r
    print(r["result"]["hash"], r["result"]["maglev"]["appliance"])
PY
}

# Before the first start: --check-config says where the key will be, creates nothing.
out="$("$gwlbd" --check-config "$work/gwlbd.yaml")"
grep -qx "flow hash key: $key (gwlbd's own: not there yet, generated and kept at the first start)" <<<"$out" \
  || fail "--check-config does not name the key to come: $out"
[ ! -e "$key" ] || fail "--check-config created $key"
echo "--check-config before the first start: $(grep '^flow hash key' <<<"$out")"

start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd-1.log" "$work/gwlbd.sock"
first="$(choices)"
stop_gwlbd || fail "gwlbd exit status $?"
grep -q "keyed with $key (gwlbd's own, generated now and kept)" "$work/gwlbd-1.log" \
  || fail "the first start does not say it generated the key: $(grep -i keyed "$work/gwlbd-1.log")"
[ "$(stat -c %a "$key")" = 600 ] || fail "$key has mode $(stat -c %a "$key"), want 600"
[ "$(stat -c %a "$STATE_DIRECTORY")" = 700 ] || fail "$STATE_DIRECTORY has mode $(stat -c %a "$STATE_DIRECTORY"), want 700"
grep -qE '^[0-9a-f]{32}$' "$key" || fail "$key does not hold 32 hex digits"
echo "first start: generated $key (mode $(stat -c %a "$key"), directory $(stat -c %a "$STATE_DIRECTORY"))"
digits="$(cat "$key")"

start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd-2.log" "$work/gwlbd.sock"
second="$(choices)"
stop_gwlbd || fail "gwlbd exit status $?"
grep -q "keyed with $key (gwlbd's own, kept across restarts)" "$work/gwlbd-2.log" \
  || fail "the second start does not say it read the kept key: $(grep -i keyed "$work/gwlbd-2.log")"
[ "$(cat "$key")" = "$digits" ] || fail "the second start changed $key"
[ "$first" = "$second" ] || { diff <(echo "$first") <(echo "$second") | head; fail "a restart moved flows"; }
echo "second start: the same hash and appliance for all 32 flows ($(cut -d' ' -f2 <<<"$first" | sort | uniq -c | tr -s ' \n' ' '))"
out="$("$gwlbd" --check-config "$work/gwlbd.yaml")"
grep -qx "flow hash key: $key (gwlbd's own, kept across restarts)" <<<"$out" || fail "--check-config: $out"
# docs/config.md quotes that line for the default directory.
doc="$(grep -m1 '^flow hash key: ' "$src/docs/config.md")"
[ "${doc//\/var\/lib\/gwlb/$STATE_DIRECTORY}" = "$(grep '^flow hash key: ' <<<"$out")" ] \
  || fail "docs/config.md quotes '$doc'; --check-config prints '$(grep '^flow hash key: ' <<<"$out")'"

# Checked by a user who may not read the state directory (gwlbctl config
# check as yourself): not an error, and said so.
if getent passwd nobody >/dev/null && command -v setpriv >/dev/null; then
  out="$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$gwlbd" --check-config "$work/gwlbd.yaml")" \
    || fail "--check-config as nobody refused the file"
  grep -qx "flow hash key: $key (gwlbd's own: not readable by this user, so not checked here)" <<<"$out" \
    || fail "--check-config as nobody: $(grep '^flow hash key' <<<"$out")"
  echo "--check-config as nobody: $(grep '^flow hash key' <<<"$out")"
fi

# A damaged key file: refused by --check-config and at start, with what to do.
refused() {  # WHAT WORDS...
  local what="$1" rc=0; shift
  "$gwlbd" --check-config "$work/gwlbd.yaml" > "$work/check.log" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || { cat "$work/check.log"; fail "$what: --check-config exit $rc, want 2"; }
  for w in "$@"; do grep -qF -- "$w" "$work/check.log" || { cat "$work/check.log"; fail "$what: no '$w'"; }; done
  rc=0
  "$gwlbd" --config "$work/gwlbd.yaml" > "$work/start.log" 2>&1 || rc=$?
  [ "$rc" -eq 2 ] || { cat "$work/start.log"; fail "$what: start exit $rc, want 2"; }
  ! grep -q "$digits" "$work/check.log" "$work/start.log" || fail "$what: the key was printed"
  echo "$what: refused: $(grep -m1 'flow hash key' "$work/check.log")"
}
chmod 644 "$key"
refused "a key file others can read" "$key" "chmod 600"
chmod 600 "$key"
echo "0123456789abcdef" > "$key"
refused "a truncated key file" "$key" "32 hexadecimal digits" "remove it to have gwlbd generate a new one"
echo "$digits" > "$key"
"$gwlbd" --check-config "$work/gwlbd.yaml" >/dev/null || fail "the restored key file is refused"
echo "flow hash key: all checks passed"
