# Sourced by the daemon tests: start gwlbd in the background and stop it.
# start_gwlbd GWLBD CONFIG LOG SOCK: starts it, arranges a stop on exit (plus
# $gwlbd_extra_cleanup, if set), and waits up to 30 s for its control socket.
# stop_gwlbd: SIGTERM and wait; returns gwlbd's exit status.
gwlbd_pid=""
gwlbd_cleanup() {
  if [ -n "$gwlbd_pid" ]; then kill -TERM "$gwlbd_pid" 2>/dev/null || true; wait "$gwlbd_pid" 2>/dev/null || true; fi
  if [ -n "${gwlbd_extra_cleanup:-}" ]; then eval "$gwlbd_extra_cleanup"; fi
}

start_gwlbd() {
  local bin="$1" config="$2" log="$3" sock="$4"
  "$bin" --config "$config" > "$log" 2>&1 &
  gwlbd_pid=$!
  trap gwlbd_cleanup EXIT
  for _ in $(seq 1 120); do [ -S "$sock" ] && return 0; sleep 0.25; done
  cat "$log"; echo "FAIL: gwlbd did not create its control socket $sock"; exit 1
}

stop_gwlbd() {
  local rc=0
  kill -TERM "$gwlbd_pid"; wait "$gwlbd_pid" || rc=$?
  gwlbd_pid=""
  return $rc
}
