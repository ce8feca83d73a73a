#!/usr/bin/env bash
# `gwlbctl probe` against local listeners only (127.0.0.1, and ::1 when the
# host has IPv6): an HTTP server (200 for /, 404 for /missing), a listener that
# accepts and never answers, and a port nobody listens on. Checks exit
# statuses (0 ok, 1 failed, 2 usage), the one-line result and --json; then
# `gwlbctl probe ADDRESS` with the check a fake gwlbd reports for 127.0.0.1.
#   probe.sh GWLBCTL SRCROOT WORKDIR
set -euo pipefail
ctl="$1" src="$2" work="$3"
rm -rf "$work" && mkdir -p "$work/www"
sockdir=$(mktemp -d /tmp/gwlbctl-probe.XXXXXX)   # short: sun_path holds 107 bytes
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$sockdir"
}
trap cleanup EXIT
fails=0

source "$src/tests/cli/expect_lib.sh"
# json PYTHON-EXPR: evaluates EXPR with j = the JSON in $work/out.
json() {
  if ! /usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert eval(sys.argv[2]), j' \
      "$work/out" "$1"; then
    echo "FAIL: --json output: $1"; fails=$((fails + 1))
  fi
}

# Local listeners; ports go to $work/ports as "HTTP SILENT CLOSED".
/usr/bin/python3 -c '
import http.server, os, socket, sys
os.chdir(sys.argv[2])
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
class S(http.server.ThreadingHTTPServer):
    def handle_error(self, *a): pass   # TCP probes close with RST
srv = S(("127.0.0.1", 0), H)
silent = socket.socket(); silent.bind(("127.0.0.1", 0)); silent.listen(16)   # never accepts
closed = socket.socket(); closed.bind(("127.0.0.1", 0)); cport = closed.getsockname()[1]; closed.close()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d %d %d\n" % (srv.server_address[1], silent.getsockname()[1], cport))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
srv.serve_forever()
' "$work/ports" "$work/www" &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$work/ports" ] && break; sleep 0.05; done
read -r http silent closed < "$work/ports"
echo "listeners on 127.0.0.1: http $http, silent $silent, closed $closed"
lo=(--address 127.0.0.1)

# --- succeeds: exit 0 ----------------------------------------------------------
expect 0 probe --protocol tcp "${lo[@]}" --port "$http"
says "$work/out" "ok: connected in "
expect 0 probe --protocol http "${lo[@]}" --port "$http"
says "$work/out" "ok: HTTP 200 in "
expect 0 probe --protocol=http --address=127.0.0.1 --port="$http" --path /missing --codes 404 --timeout 2s
says "$work/out" "ok: HTTP 404 in "
expect 0 --json probe --protocol http "${lo[@]}" --port "$http" --domain probe.test
json 'j["ok"] is True and j["reason"] == "ok" and j["status"] == 200 and j["port"] == '"$http"' and j["address"] == "127.0.0.1" and j["protocol"] == "http"'
[ "$(wc -l < "$work/out")" -eq 1 ] || { echo "FAIL: --json is not one line"; fails=$((fails + 1)); }

# --- fails: exit 1 -------------------------------------------------------------
expect 1 probe --protocol tcp "${lo[@]}" --port "$closed"
says "$work/out" "failed: connect_refused after "
says "$work/out" " ms: connection refused"
expect 1 probe --protocol http "${lo[@]}" --port "$http" --path /missing
says "$work/out" "failed: bad_status after "
says "$work/out" "HTTP 404"
expect 1 probe --protocol http "${lo[@]}" --port "$silent" --timeout 300ms
says "$work/out" "failed: response_timeout after "
expect 1 --json probe --protocol http "${lo[@]}" --port "$silent" --timeout 300
json 'j["ok"] is False and j["reason"] == "response_timeout" and 250000 <= j["elapsed_us"] <= 3000000'
expect 1 probe --protocol https "${lo[@]}" --port "$http" --timeout 2s
says "$work/out" "failed: tls_handshake_failed after "
if /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null; then
  expect 1 probe --protocol tcp --address ::1 --port "$closed"
  says "$work/out" "failed: connect_re"
else
  echo "note: no IPv6 loopback, ::1 skipped"
fi

# --- usage: exit 2, nothing probed ---------------------------------------------
expect 2 probe
says "$work/err" "missing --protocol and --address"
says "$work/err" "Try 'gwlbctl probe --help'."
expect 2 probe --protocol udp "${lo[@]}"
says "$work/err" "--protocol must be tcp, http or https"
expect 2 probe --protocol tcp --address localhost
says "$work/err" "not an IPv4 or IPv6 address"
expect 2 probe --protocol tcp "${lo[@]}" --port 0
says "$work/err" "--port must be 1..65535"
expect 2 probe --protocol tcp "${lo[@]}" --timeout 2x
says "$work/err" "--timeout: '2x' is not a probe timeout"
expect 2 probe --protocol http "${lo[@]}" --path nope
says "$work/err" "--path must start with '/'"
expect 2 probe --protocol http "${lo[@]}" --codes 999
says "$work/err" "--codes"
expect 2 probe --protocol https "${lo[@]}" --verify
says "$work/err" "--verify needs --ca-file"
expect 2 probe --protocol tcp "${lo[@]}" --source ::1
says "$work/err" "same family"
expect 2 probe --protocol tcp "${lo[@]}" --verbose
says "$work/err" "unknown option '--verbose' for 'probe'"

# --- probe ADDRESS: the check gwlbd reports (a fake one, for 127.0.0.1) ------------
expect 2 --socket "$sockdir/none.sock" probe 127.0.0.1
says "$work/err" "cannot connect to $sockdir/none.sock"
sock="$sockdir/fake.sock"
/usr/bin/python3 "$src/tests/cli/fake_gwlbd.py" "$sock" "$work/requests.log" "$http" &
pids+=($!)
for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.05; done
expect 0 --socket "$sock" probe 127.0.0.1
says "$work/out" "probe tcp 127.0.0.1:$http, timeout 500 ms (check of group local)"
says "$work/out" "ok: connected in "
expect 0 --socket "$sock" --json probe 127.0.0.1
json 'j["ok"] is True and j["port"] == '"$http"
expect 1 --socket "$sock" probe 127.0.0.1 --port "$closed"
says "$work/out" "failed: connect_refused"
expect 1 --socket "$sock" probe 192.0.2.99
says "$work/err" "gwlbctl: no appliance 192.0.2.99 (not_found)"
expect 2 --socket "$sock" probe 127.0.0.1 --address 127.0.0.1
says "$work/err" "ADDRESS or --address, not both"
/usr/bin/python3 - "$work/requests.log" <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["method"] for r in reqs] == ["health"] * 4, reqs
assert reqs[0]["params"] == {"address": "127.0.0.1"}, reqs[0]
PY

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "all gwlbctl probe checks passed"
