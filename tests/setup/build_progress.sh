#!/usr/bin/env bash
# The build step of scripts/setup.sh (demo.sh, test.sh) says how long it will
# take and shows its progress (issue 24 item 13): on a fresh machine it printed
# nothing for the ~15 minutes of the build.
#   build_progress.sh SRCROOT BUILDROOT WORKDIR
# A small ninja project stands in for the build: setup.sh is sourced on it as
# demo.sh and test.sh source it (without installing packages), and its output
# is checked: the estimate line, percentage lines every 10 % or so when the
# output is not a terminal (CI logs), one line rewritten in place on a
# terminal, ninja's error on a failed step. Then demo.sh's own target list
# against the real build: each is a target, and it holds every program that
# demo.sh and lab.sh run from the build directory.
set -uo pipefail
src="$1" build="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
fail=0
ok()   { echo "ok   $*"; }
bad()  { echo "FAIL $*"; fail=1; }

# project DIR N [FAILING_STEP]: N steps, one of them failing
project() {
  mkdir -p "$1"
  {
    echo "rule step"
    echo "  command = sleep 0.01 && touch \$out"
    echo "rule broken"
    echo "  command = echo 'step.c:1: error: expected ; before }' >&2; false"
    for i in $(seq 1 "$2"); do
      if [ "$i" = "${3:-0}" ]; then echo "build o$i: broken"; else echo "build o$i: step"; fi
    done
  } > "$1/build.ninja"
}
setup() {  # setup DIR [TARGET...]: sources setup.sh on DIR as the scripts do
  local dir="$1"; shift
  GWLB_BUILD="$dir" GWLB_SETUP_NO_INSTALL=1 bash -c '
    GWLB_BUILD_TARGETS=("$@")
    [ $# -gt 0 ] || unset GWLB_BUILD_TARGETS
    source "'"$src"'/scripts/setup.sh"' setup "$@"
}

# 1. Not a terminal: an estimate, then a line per ~10 %, ending at 100 %.
project "$work/p1" 60
setup "$work/p1" > "$work/p1.out" 2> "$work/p1.err"; rc=$?
first=$(head -n1 "$work/p1.out")
n_pct=$(grep -c '^setup: building [0-9]*% ([0-9]*/60 steps, ' "$work/p1.out")
estimate_re='^setup: building everything in .*: 60 steps, up to about [0-9]+ (s|min)'
if [ "$rc" -eq 0 ] && [[ "$first" =~ $estimate_re ]] \
   && [ "$n_pct" -ge 5 ] && [ "$n_pct" -le 12 ] && tail -n1 "$work/p1.out" | grep -q '^setup: building 100% (60/60 steps'; then
  ok "non-terminal: estimate and $n_pct percentage lines: $(tr '\n' '|' < "$work/p1.out" | cut -c1-200)"
else
  bad "non-terminal output (exit $rc, $n_pct percentage lines):"; cat "$work/p1.out" "$work/p1.err"
fi
! grep -q $'\r' "$work/p1.out" || bad "carriage returns in a non-terminal log"

# 2. Named targets only: the others are not built.
project "$work/p2" 30
setup "$work/p2" o1 o2 > "$work/p2.out" 2>&1; rc=$?
if [ "$rc" -eq 0 ] && [ -f "$work/p2/o1" ] && [ ! -f "$work/p2/o3" ] && grep -q "building o1 o2 in .*: 2 steps" "$work/p2.out"; then
  ok "targets: only o1 o2 built"
else
  bad "targets (exit $rc):"; cat "$work/p2.out"
fi

# 3. Nothing to do: silent.
setup "$work/p2" o1 o2 > "$work/p3.out" 2>&1; rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$work/p3.out" ] && ok "up to date: silent" || { bad "up to date (exit $rc):"; cat "$work/p3.out"; }

# 4. A failing step: non-zero, ninja's error shown.
project "$work/p4" 20 5
setup "$work/p4" > "$work/p4.out" 2> "$work/p4.err"; rc=$?
if [ "$rc" -ne 0 ] && grep -q "^FAILED: o5" "$work/p4.err" && grep -q "error: expected ;" "$work/p4.err" \
   && grep -q "setup: build failed" "$work/p4.err"; then
  ok "a failed step: exit $rc with ninja's error"
else
  bad "a failed step (exit $rc):"; cat "$work/p4.out" "$work/p4.err"
fi

# 5. On a terminal (script(1) gives it one): one line rewritten in place.
project "$work/p5" 40
script -qefc "GWLB_BUILD='$work/p5' GWLB_SETUP_NO_INSTALL=1 bash -c 'source \"$src/scripts/setup.sh\"'" /dev/null \
  > "$work/p5.out" 2>&1; rc=$?
n_cr=$(tr -cd '\r' < "$work/p5.out" | wc -c)
if [ "$rc" -eq 0 ] && grep -q 'setup: building 100% \[40/40\]' "$work/p5.out" && [ "$n_cr" -ge 40 ]; then
  ok "terminal: a line rewritten in place ($n_cr carriage returns)"
else
  bad "terminal (exit $rc, $n_cr carriage returns):"; cat -A "$work/p5.out" | head -20
fi

# 6. demo.sh builds what it runs, and only that.
targets=$(sed -n 's/^GWLB_BUILD_TARGETS=(\(.*\))$/\1/p' "$src/scripts/demo.sh")
[ -n "$targets" ] || bad "scripts/demo.sh sets no GWLB_BUILD_TARGETS (it builds everything, tests included)"
known=$(ninja -C "$build" -t targets all 2>/dev/null | sed -n 's/^\([^:]*\): .*/\1/p')
for t in $targets; do
  grep -qx -- "$t" <<< "$known" && ok "demo target $t is a target of the build" || bad "demo target $t is not a target of $build"
done
for prog in $(grep -ho '\$GWLB_BUILD/[A-Za-z0-9_/-]*' "$src/scripts/demo.sh" "$src/scripts/lab.sh" | sort -u); do
  p=${prog#\$GWLB_BUILD/}
  [ -n "$p" ] || continue
  [[ " $targets " == *" $p "* ]] && ok "demo.sh builds $p (run by demo.sh or lab.sh)" || bad "demo.sh does not build $p, which demo.sh or lab.sh runs"
done

[ "$fail" -eq 0 ] && echo "build_progress: all checks passed" || { echo "build_progress: FAILED"; exit 1; }
