#!/usr/bin/env bash
# gwlbctl without gwlbd: exit statuses and messages for bad usage, a missing
# or refusing socket, a daemon that never answers, server-side errors (from a
# fake control socket), and the offline `config check`.
#   errors.sh GWLBCTL SRCROOT WORKDIR
set -euo pipefail
ctl="$1" src="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
sockdir=$(mktemp -d /tmp/gwlbctl-errors.XXXXXX)   # short: sun_path holds 107 bytes
fake_pid=""
cleanup() {
  if [ -n "$fake_pid" ]; then kill "$fake_pid" 2>/dev/null || true; wait "$fake_pid" 2>/dev/null || true; fi
  rm -rf "$sockdir"
}
trap cleanup EXIT
fails=0

source "$src/tests/cli/expect_lib.sh"

# --- no daemon ---------------------------------------------------------------
expect 2 --socket "$sockdir/none.sock" status
says "$work/err" "cannot connect to $sockdir/none.sock: No such file or directory — is gwlbd running? (--socket PATH)"
GWLBCTL_SOCKET="$sockdir/env.sock" expect 2 servers
says "$work/err" "cannot connect to $sockdir/env.sock"
GWLBCTL_SOCKET="$sockdir/env.sock" expect 2 --socket "$sockdir/opt.sock" servers
says "$work/err" "$sockdir/opt.sock"
expect 2 --socket "/tmp/$(printf 'x%.0s' $(seq 1 120)).sock" status
says "$work/err" "socket path longer than 107 bytes"
# A socket file nobody listens on (gwlbd died): connection refused.
/usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$sockdir/stale.sock"
expect 2 --socket "$sockdir/stale.sock" status
says "$work/err" "Connection refused — is gwlbd running?"

# --- usage errors (no socket is touched) ----------------------------------------
expect 2
says "$work/err" "no command given"
expect 2 frobnicate
says "$work/err" "unknown command 'frobnicate'"
says "$work/err" "Try 'gwlbctl help'."
expect 2 servers --grup x
says "$work/err" "unknown option '--grup' for 'servers'"
says "$work/err" "Try 'gwlbctl servers --help'."
expect 2 status --frobnicate
expect 2 server
says "$work/err" "needs a subcommand: add, remove, set"
expect 2 server delete 192.0.2.10
expect 2 flows --src 198.51.100.0/33
says "$work/err" "--src: '198.51.100.0/33'"
expect 2 flows --dst nowhere
says "$work/err" "--dst: 'nowhere'"
expect 2 flows --proto gre
says "$work/err" "--proto: 'gre'"
expect 2 flows --port 70000
says "$work/err" "--port: '70000'"
expect 2 flows --limit 0
says "$work/err" "--limit: '0'"
expect 2 flows --server fw1
says "$work/err" "--server: 'fw1'"
expect 2 flows --count --all
expect 2 explain 198.51.100.1 203.0.113.1
says "$work/err" "missing PROTO"
expect 2 explain 198.51.100.1 203.0.113.1 tcp 99999 80
says "$work/err" "SPORT: '99999'"
expect 2 explain 198.51.100.1 2001:db8::1 udp
says "$work/err" "same address family"
expect 2 server add firewalls 192.0.2.300
says "$work/err" "ADDRESS: '192.0.2.300'"
expect 2 server add 'fire walls' 192.0.2.30
says "$work/err" "GROUP: 'fire walls'"
expect 2 server add firewalls 192.0.2.30 --weight 10001
says "$work/err" "--weight: '10001'"
expect 2 server add firewalls 192.0.2.30 --mac 02:00
says "$work/err" "--mac: '02:00'"
expect 2 server set 192.0.2.10
says "$work/err" "missing --weight N"
expect 2 stats --watch 0
expect 2 servers --watch 0
says "$work/err" "--watch: '0' is not a number of seconds in 0.1-86400"
expect 2 servers --count 2
says "$work/err" "--count needs --watch"
expect 2 flows --sort colour
says "$work/err" "--sort: 'colour' is not a field to sort on (age, idle, packets, src, dst, appliance; -FIELD or --reverse for descending)"
expect 2 flows --reverse
says "$work/err" "--reverse needs --sort"
expect 2 flows --sort age --count
says "$work/err" "--sort cannot be combined with --count"
expect 2 flows --proto sctpx
says "$work/err" "--proto: 'sctpx' is not a protocol (tcp, udp, sctp, icmp, icmpv6 or 0-255)"
expect 2 explain 198.51.100.1 203.0.113.1 47 1 2
says "$work/err" "PROTO 47 has no ports: gwlbd keys it on addresses and protocol"
expect 2 stats --count 3
says "$work/err" "--count needs --watch"
expect 2 health
says "$work/err" "missing ADDRESS (usage: gwlbctl health ADDRESS)"
expect 2 health fw1
says "$work/err" "ADDRESS: 'fw1'"
expect 2 health 192.0.2.10 192.0.2.11
says "$work/err" "unexpected argument '192.0.2.11'"
expect 2 health-destinations 'in spect'
says "$work/err" "NAME: 'in spect' is not a listener name"
says "$work/err" "Try 'gwlbctl health-destinations --help'."
expect 2 regions inspect web
says "$work/err" "unexpected argument 'web'"
says "$work/err" "Try 'gwlbctl health-destinations --help'."
expect 2 regions --group x
says "$work/err" "unknown option '--group' for 'health-destinations'"
expect 2 servers --wide=yes
says "$work/err" "option --wide takes no value"
expect 2 probe
says "$work/err" "missing --protocol and --address"
expect 2 probe --protocol gopher --address 127.0.0.1
says "$work/err" "--protocol must be tcp, http or https"
expect 2 probe --protocol tcp --address 127.0.0.1 --timeout 0.5
says "$work/err" "--timeout: '0.5' is not a probe timeout"
expect 2 probe --protocol tcp --address 127.0.0.1 --port 65536
says "$work/err" "--port must be 1..65535"
expect 2 probe fw1
says "$work/err" "ADDRESS: 'fw1'"
expect 2 status --timeout 0
expect 2 status --socket
says "$work/err" "needs a value (PATH)"

# --- help ----------------------------------------------------------------------
expect 0 help
says "$work/out" "usage: gwlbctl"
expect 0 --help
for c in status servers health health-destinations groups flows explain stats probe "server add" "server remove" "server set" reload "config check"; do
  # shellcheck disable=SC2086
  expect 0 $c --help
  says "$work/out" "usage: gwlbctl $c"
  # shellcheck disable=SC2086
  expect 0 help $c
done
expect 0 regions --help
says "$work/out" "usage: gwlbctl health-destinations [NAME]"
says "$work/out" "   or: gwlbctl regions [NAME]"
expect 0 help regions
says "$work/out" "   or: gwlbctl regions [NAME]"
expect 0 help
says "$work/out" "health-destinations [NAME]"
says "$work/out" "(alias: regions)"
expect 0 server --help
says "$work/out" "server remove ADDRESS"

# --- config check (offline) ------------------------------------------------------
expect 0 config check "$src/examples/replay.yaml"
says "$work/out" "valid (1 server group, 3 servers)"
expect 0 --json config check "$src/examples/replay.yaml"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["valid"] is True and j["errors"] == [], j' "$work/out"
sed -e 's/192.0.2.11/192.0.2.300/' -e 's/stickiness: 5-tuple/stickiness: 4-tuple/' \
  "$src/examples/replay.yaml" > "$work/broken.yaml"
expect 2 config check "$work/broken.yaml"
says "$work/err" "invalid configuration (2 errors)"
says "$work/err" "server_groups[0].servers[1].address: "
says "$work/err" "server_groups[0].stickiness: "
expect 2 config check --json "$work/broken.yaml"
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["valid"] is False, j
assert {e["path"] for e in j["errors"]} == {"server_groups[0].servers[1].address", "server_groups[0].stickiness"}, j
' "$work/out"
expect 2 config check "$work/missing.yaml"
says "$work/err" "$work/missing.yaml"
expect 2 config check
says "$work/err" "missing FILE"

# --- a fake daemon: server-side errors, timeouts, paging, watch --------------------
sock="$sockdir/fake.sock"
/usr/bin/python3 "$src/tests/cli/fake_gwlbd.py" "$sock" "$work/requests.log" &
fake_pid=$!
for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.05; done
expect 2 --socket "$sock" --timeout 0.5 status
says "$work/err" "no reply from gwlbd at $sock within 0.5 s (--timeout SECONDS)"
expect 0 --socket "$sock" servers
says "$work/out" "ADDRESS     GROUP      WEIGHT  STATE      SINCE      HEALTH     CONSEC  LAST RESULT      WINDOWS"
# The fake reports "since" 72 s before it started; a loaded machine may be a
# few seconds later by the time gwlbctl renders it.
says_re "$work/out" "unhealthy  1m(1[2-9]|2[0-9])s ago  unhealthy      3✗  connect_timeout  fail 19s / ok 4s     12"
says "$work/out" "healthy       12✓  ok"
says "$work/out" "disabled        -  -"
if grep -qE "MAC|REASON|02:00:00:00:00:fe" "$work/out"; then echo "FAIL: servers shows wide columns"; fails=$((fails + 1)); fi
expect 0 --socket "$sock" servers --wide
says "$work/out" "REASON"
says "$work/out" "connect_timeout: no answer to SYN within 5000 ms  fail 19s / ok 4s"
says "$work/out" "1.5 MiB  02:00:00:00:00:fe"
expect 0 --socket "$sock" health 192.0.2.10
says "$work/out" "appliance    192.0.2.10 (group firewalls)"
says_re "$work/out" "state        unhealthy since 1m(1[2-9]|2[0-9])s ago"
says "$work/out" "last result  ✗ connect_timeout: no answer to SYN within 5000 ms (3 failures in a row)"
says "$work/out" "windows      fail 19s / ok 4s"
says "$work/out" "check        http port 80, GET /healthz, Host fw.example, codes http_2xx,302"
says "$work/out" "             every 2s, timeout 5s; healthy after 3 successes, unhealthy after 3 failures"
says "$work/out" "history (newest last):"
says "$work/out" "  1m35s ago  → initializing: weight set, probing starts"
says "$work/out" "  12.3s ago  ✗ bad_status (4 ms): HTTP 503 (expected 200-299,302)"
says "$work/out" "   0.2s ago  → unhealthy: 3 consecutive failures (connect_timeout: no answer to SYN within 5000 ms)"
[ "$(tail -n 1 "$work/out")" = "   0.2s ago  → unhealthy: 3 consecutive failures (connect_timeout: no answer to SYN within 5000 ms)" ] ||
  { echo "FAIL: health history is not newest last"; fails=$((fails + 1)); }
expect 0 --socket "$sock" health 192.0.2.11
says "$work/out" "disabled (health checks off: treated as healthy)"
expect 0 --socket "$sock" --json health 192.0.2.10
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert list(j)[:7] == ["state", "consecutive", "last_ok", "last_result", "since", "failure_window_s", "success_window_s"], list(j)
assert j["check"]["http_codes"] == ["http_2xx", "302"] and len(j["history"]) == 9, j
assert j["history"][-1]["transition"] == {"from": "healthy", "to": "unhealthy"}, j
' "$work/out"
expect 1 --socket "$sock" health 192.0.2.99
says "$work/err" "gwlbctl: no appliance 192.0.2.99 (not_found)"
expect 1 --socket "$sock" --json health 192.0.2.99
/usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["code"] == "not_found"' "$work/out"
expect 1 --socket "$sock" servers --group nope
says "$work/err" "gwlbctl: no server group 'nope' (not_found)"
expect 1 --socket "$sock" --json servers --group nope
/usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["code"] == "not_found"' "$work/out"
expect 0 --socket "$sock" health-destinations
says "$work/out" "destination    inspect: UNHEALTHY (would be HEALTHY with dry run)"
says "$work/out" "new flows      -> fw-west (dry run would send them to fw-east)"
says "$work/out" "since          1h30m ago"
says "$work/out" "reason         every region before it is unhealthy"
says "$work/out" "GROUP    HEALTHY            SINCE     JUDGED BY"
says "$work/out" "fw-east  no (dry run: yes)  -         inspect-east, inspect-east-lenient (dry run)"
says "$work/out" "fw-west  yes                1h0m ago  any healthy appliance (no acting composite): 3/3 healthy"
says "$work/out" "inspect-east                    unhealthy  1h30m ago        1  src-east      fw-east  strict               2/5  60 % and 2  no   2 of 5 healthy"
says "$work/out" "inspect-east-lenient (dry run)  healthy    1h0m ago         0  src-east-any"
says "$work/out" "destination    web: HEALTHY"
says "$work/out" "web-a  yes      2h0m ago  any healthy appliance (no acting composite): 1/2 healthy"
says "$work/out" "composite health checks: none"
expect 0 --socket "$sock" regions web
says "$work/out" "destination    web: HEALTHY"
if grep -q "inspect" "$work/out"; then echo "FAIL: regions web shows another destination"; fails=$((fails + 1)); fi
expect 0 --socket "$sock" --json regions
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert [d["name"] for d in j["destinations"]] == ["inspect", "web"], j
assert list(j["destinations"][0])[:4] == ["name", "implicit", "healthy", "healthy_with_dry_run"], j
assert j["destinations"][0]["regions"][0]["healthy_since"] is None, j
' "$work/out"
expect 1 --socket "$sock" regions nope
says "$work/err" "gwlbctl: no destination (listener) 'nope' (not_found)"
[ ! -s "$work/out" ] || { echo "FAIL: regions nope printed to stdout"; fails=$((fails + 1)); }
# fleet: `fleet` alone is `fleet show`; peers render when the result has them.
expect 0 --socket "$sock" fleet
says "$work/out" "routes        announced for 5m12s"
says "$work/out" "why           ready: dataplane running, appliances in service, warm start done"
says "$work/out" "BIRD          /run/bird/bird.ctl, connected"
says "$work/out" "gwlb_routes6  up"
says "$work/out" "PEER           REACHABLE  LAST SYNC  FLOWS IN  FLOWS OUT  AUTH FAILURES  REPLAYED  MALFORMED  CONFIG"
says "$work/out" "10.0.0.3:7946  no             never         0          0              7         1          2  unknown"
says "$work/out" "10.0.0.2:7946  this node      never         0          0              0         0          0  unknown"
says "$work/out" "peers that are this node (skipped: nothing sent to them, not asked for a warm start):"
says "$work/out" "  10.0.0.2:7946: 10.0.0.2 is an address of this host, and fleet.sync_listen 0.0.0.0:7946 takes it"
says "$work/out" "config drift (these peers run other settings than this node):"
says "$work/out" "10.0.0.1:7946  weights, timeouts"
says "$work/out" "warm start    done: 118002 flows from 10.0.0.1:7946"
says "$work/out" "flow records  complete"
says "$work/out" "health disagreements (new flows go to different appliances by node):"
says "$work/out" "10.0.1.12  healthy  10.0.0.1:7946  unhealthy"
expect 0 --socket "$sock" --json fleet show
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["announce"]["state"] == "announced" and len(j["peers"]) == 3, j
assert j["peers"][2]["this_node"] is True, j
' "$work/out"
expect 0 --socket "$sock" fleet leave
says "$work/out" "left the fleet"
says "$work/out" "why           left by operator (gwlbctl fleet join to return)"
expect 2 --socket "$sock" fleet join
says "$work/err" "gwlbctl: this node announces no routes: the config has no fleet.bird section (not_configured)"
expect 2 --socket "$sock" fleet frob
says "$work/err" "unknown subcommand 'frob' (fleet has: show, leave, join)"
# capture stop (issue 24 item 10): by device, by queue, an unknown device, a bad one.
expect 0 --socket "$sock" capture stop net_pcap0
says "$work/out" "detached 2 queue callbacks"
expect 0 --socket "$sock" capture stop net_pcap0 --queue 0
says "$work/out" "detached 1 queue callback"
expect 0 --socket "$sock" capture stop
expect 1 --socket "$sock" capture stop net_nope
says "$work/err" "no port named 'net_nope' (not_found)"
expect 2 --socket "$sock" capture stop "net pcap"
says "$work/err" "DEVICE: 'net pcap' is not a port's device name"
expect 2 --socket "$sock" capture stop net_pcap0 --queue 65535
expect 2 --socket "$sock" capture
expect 0 capture stop --help
says "$work/out" "usage: gwlbctl capture stop [DEVICE] [--queue Q]"
expect 1 --socket "$sock" --json health-destinations nope
/usr/bin/python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["code"] == "not_found"' "$work/out"
expect 2 --socket "$sock" server add firewalls 192.0.2.10
says "$work/err" "(invalid_config)"
says "$work/err" "  server_groups[0].servers[3].address: duplicate address 192.0.2.10"
expect 2 --socket "$sock" groups
says "$work/err" "not a JSON object"
expect 0 --socket "$sock" server remove 192.0.2.12
says "$work/out" "removed 192.0.2.12; snapshot generation 2"
expect 0 --socket "$sock" reload
says "$work/out" "next restart: eal"
expect 0 --socket "$sock" flows --proto 47 --port 80 --limit 1
says "$work/out" "198.51.100.1:1001"
says "$work/out" "more: gwlbctl flows --proto 47 --port 80 --limit 1 --cursor 1"
expect 0 --socket "$sock" flows --all --json
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert len(j["flows"]) == 2 and j["next_cursor"] is None, j' "$work/out"
expect 0 --socket "$sock" flows --count
says "$work/out" "2 matching flows (5 entries scanned)"
# A page that ends on gwlbd's walk bound with no row, and a count in two
# pages: the CLI follows the cursor (one listing, one total).
expect 0 --socket "$sock" flows --proto udp --limit 1
says "$work/out" "198.51.100.2:1002"
grep -q "^more:" "$work/out" && { echo "FAIL: flows --proto udp printed a next page"; cat "$work/out"; fails=$((fails + 1)); }
expect 0 --socket "$sock" flows --proto udp --count
says "$work/out" "3 matching flows (9 entries scanned)"
expect 0 --socket "$sock" stats --watch 0.2 --count 2
[ "$(grep -c 'PER SEC' "$work/out")" -ge 2 ] || { echo "FAIL: stats --watch printed no rates"; fails=$((fails + 1)); }
says "$work/out" "rates over the last"
expect 0 --socket "$sock" --json stats --watch 0.2 --count 2
/usr/bin/python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
for l in lines:
    j = json.loads(l)
    assert j["rates"]["totals"]["rx_packets"] > 0 and "stats" in j, j
' "$work/out"
# servers --watch: per-appliance rates from two samples (the fake's 192.0.2.10
# grows by 1000 packets, 100 bytes, 900 and 90 returned per call).
expect 0 --socket "$sock" servers --watch 0.2 --count 2
says "$work/out" "ADDRESS     GROUP      STATE      HEALTH     FLOWS  SENT/S  SENT B/S  RETURNED/S  RETURNED B/S"
says "$work/out" "rates over the last"
[ "$(grep -c 'SENT/S' "$work/out")" -eq 2 ] || { echo "FAIL: servers --watch did not refresh twice"; fails=$((fails + 1)); }
expect 0 --socket "$sock" --json servers --watch 0.2 --count 2
/usr/bin/python3 -c '
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
for l in lines:
    j = json.loads(l)
    dt = j["interval_s"]
    assert dt >= 0.2, j
    r = {x["address"]: x for x in j["rates"]}
    for k, per_call in (("packets_per_s", 1000), ("bytes_per_s", 100),
                        ("returned_packets_per_s", 900), ("returned_bytes_per_s", 90)):
        assert abs(r["192.0.2.10"][k] * dt - per_call) < 1e-6 * per_call, (k, r, dt)
    assert r["192.0.2.11"]["packets_per_s"] == 0 and r["192.0.2.11"]["returned_packets_per_s"] is None, r
    assert [s["address"] for s in j["servers"]["servers"]] == ["192.0.2.10", "192.0.2.11", "192.0.2.12"], j
' "$work/out" || { echo "FAIL: servers --watch --json rates"; fails=$((fails + 1)); }
# flows --sort: every page, then sorted (flow 2 has more packets than flow 1).
expect 0 --socket "$sock" flows --proto tcp --sort -packets
[ "$(sed -n 2p "$work/out" | cut -c1-17)" = "198.51.100.2:1002" ] || { echo "FAIL: flows --sort -packets"; cat "$work/out"; fails=$((fails + 1)); }
says "$work/out" "2 flows in 2 pages, sorted by packets (descending)"
expect 0 --socket "$sock" flows --proto tcp --sort src
[ "$(sed -n 2p "$work/out" | cut -c1-17)" = "198.51.100.1:1001" ] || { echo "FAIL: flows --sort src"; cat "$work/out"; fails=$((fails + 1)); }
expect 0 --socket "$sock" --json flows --proto tcp --sort packets --reverse
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert [f["packets"] for f in j["flows"]] == [10, 5], j' "$work/out" \
  || { echo "FAIL: flows --sort packets --reverse --json"; fails=$((fails + 1)); }
# stats hides zero counters and drop reasons unless --all.
expect 0 --socket "$sock" stats
says "$work/out" "not shown, at zero: 0 counters, 1 drop reason (--all shows them)"
if grep -q "too_big" "$work/out"; then echo "FAIL: stats shows a zero counter"; fails=$((fails + 1)); fi
expect 0 --socket "$sock" stats --all
says "$work/out" "drop_too_big"
if grep -q "not shown" "$work/out"; then echo "FAIL: stats --all hides counters"; fails=$((fails + 1)); fi
# What went over the wire: typed parameters as docs/control-api.md lists them.
/usr/bin/python3 - "$work/requests.log" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
flows = [r for r in reqs if r["method"] == "flows" and r.get("params", {}).get("proto")]
assert flows and flows[0]["params"] == {"proto": "47", "port": 80, "limit": 1}, flows
assert all(isinstance(r["id"], int) for r in reqs)
pages = [r.get("params", {}).get("cursor") for r in reqs if r["method"] == "flows" and not r.get("params", {}).get("proto") and not r.get("params", {}).get("count")]
assert pages == [None, "1"], pages
health = [r["params"] for r in reqs if r["method"] == "health"]
assert health and all(set(p) == {"address"} for p in health), health
assert {"address": "192.0.2.10"} in health, health
servers = [r.get("params", {}) for r in reqs if r["method"] == "servers"]
assert {} in servers and {"group": "nope"} in servers and all("wide" not in p for p in servers), servers
dests = [r.get("params", {}) for r in reqs if r["method"] == "destinations"]
assert dests == [{}, {"name": "web"}, {}, {"name": "nope"}, {"name": "nope"}], dests
print(f"fake gwlbd saw {len(reqs)} requests, parameters as documented")
PY

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all gwlbctl error-path checks passed"
