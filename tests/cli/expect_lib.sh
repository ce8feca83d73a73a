# Sourced by the cli test scripts; they set $ctl (gwlbctl), $work and fails=0.
# expect RC ARGS...: runs gwlbctl, keeps stdout/stderr in $work/out, $work/err,
# counts a failure when the exit status is not RC.
expect() {
  local want="$1"; shift
  set +e
  "$ctl" "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  set -e
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL: gwlbctl $* -> exit $rc, want $want"; sed 's/^/  stderr: /' "$work/err"; sed 's/^/  stdout: /' "$work/out"
    fails=$((fails + 1))
  else
    echo "ok: gwlbctl $* -> $rc: $(head -c 200 "$work/out" | tr '\n' ' ')"
  fi
}
# says FILE TEXT: FILE ($work/out or $work/err) contains TEXT (fixed string).
says_re() {  # says_re FILE ERE: like says, for output with times that tick (e.g. "1m1[2-9]s ago")
  if ! grep -qE -- "$2" "$1"; then
    echo "FAIL: $(basename "$1") lacks a match for: $2"; sed 's/^/  | /' "$1"; fails=$((fails + 1))
  fi
}

says() {
  if ! grep -qF -- "$2" "$1"; then
    echo "FAIL: $(basename "$1") lacks: $2"; sed 's/^/  | /' "$1"; fails=$((fails + 1))
  fi
}
