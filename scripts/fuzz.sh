#!/usr/bin/env bash
# Runs the fuzz targets of tests/fuzz/ under libFuzzer (docs/fuzzing.md).
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]     default: all targets, 60 s each
#   TARGET: any tests/fuzz/fuzz_TARGET.cc (frame geneve icmp config api http ... capture)
#
# Builds them with clang++ -fsanitize=fuzzer,address,undefined in build-fuzz/
# (meson -Dfuzz=true; override with GWLB_FUZZ_BUILD), then runs each for
# SECONDS (niced) on one core. The seed corpus in tests/fuzz/corpus/<target>/
# is read, never written: the grown corpus lives in out/fuzz/corpus/<target>/
# (kept between runs, so later runs start where earlier ones stopped). Every
# crash, leak, timeout or out-of-memory input libFuzzer finds is written to
# tests/fuzz/regressions/<target>/ (crash-*, timeout-*, leak-*, oom-*): add a
# line to that directory's README.md saying what it was and what fixed it; the
# meson test fuzz_<target> replays it from then on. Extra libFuzzer flags:
# GWLB_FUZZ_FLAGS="-max_len=65600 ...". Ends with executions per target.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GWLB_FUZZ_BUILD:-$ROOT/build-fuzz}"
# Every target in tests/fuzz/ (fuzz_NAME.cc).
mapfile -t ALL < <(cd "$ROOT/tests/fuzz" && ls fuzz_*.cc | sed 's/^fuzz_//; s/\.cc$//')

target="${1:-all}"
secs="${2:-60}"
case "$target" in
  all) targets=("${ALL[@]}") ;;
  -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
  *) if [[ " ${ALL[*]} " == *" $target "* ]]; then targets=("$target")
     else echo "fuzz.sh: unknown target '$target' (all ${ALL[*]})" >&2; exit 2; fi ;;
esac
if ! [[ "$secs" =~ ^[0-9]+$ ]] || [ "$secs" -lt 1 ]; then
  echo "fuzz.sh: SECONDS must be a positive integer, not '$secs'" >&2
  exit 2
fi

# clang and its libFuzzer runtime (Debian 12: clang, libclang-rt-14-dev).
if ! command -v clang++ >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "fuzz.sh: installing clang"
  $sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends clang >/dev/null
fi

mkdir -p "$ROOT/out"
if [ ! -f "$BUILD/build.ninja" ]; then
  CXX=clang++ CC=clang meson setup "$BUILD" "$ROOT" -Dfuzz=true >"$ROOT/out/fuzz-setup.log" 2>&1 \
    || { cat "$ROOT/out/fuzz-setup.log" >&2; echo "fuzz.sh: meson setup failed" >&2; exit 1; }
fi
ninja_targets=()
for t in "${targets[@]}"; do ninja_targets+=("tests/fuzz/fuzz_$t"); done
nice -n 10 ninja -C "$BUILD" "${ninja_targets[@]}" >/dev/null || {
  echo "fuzz.sh: build failed; run: ninja -C $BUILD ${ninja_targets[*]}" >&2; exit 1; }

# Longest input per target: enough for every header we parse, small enough to
# keep executions fast (a config or an HTTP head is text; frames fit 9 KB).
max_len() {
  case "$1" in
    frame|geneve|icmp) echo 9300 ;;
    *) echo 16384 ;;
  esac
}

declare -A execs
declare -A found
for t in "${targets[@]}"; do
  work="$ROOT/out/fuzz/corpus/$t"
  regress="$ROOT/tests/fuzz/regressions/$t"
  logd="$ROOT/out/fuzz/logs"
  mkdir -p "$work" "$regress" "$logd"
  before=$(ls "$regress" | grep -c -v '^README' || true)
  log="$logd/$t.log"
  echo "fuzz.sh: $t for ${secs}s (corpus $work, seeds tests/fuzz/corpus/$t, log $log)"
  # -fork would need more cores than we have; one process, restarted on a
  # finding (at most 5 times) until the time is used up.
  : >"$log"
  start=$(date +%s)
  runs=0
  while [ "$runs" -lt 6 ]; do
    runs=$((runs + 1))
    left=$(( start + secs - $(date +%s) ))
    [ "$left" -ge 1 ] || break
    # shellcheck disable=SC2086
    nice -n 10 "$BUILD/tests/fuzz/fuzz_$t" \
      -max_total_time="$left" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$regress/" ${GWLB_FUZZ_FLAGS:-} \
      "$work" "$ROOT/tests/fuzz/corpus/$t" >>"$log" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] && break
    echo "fuzz.sh: $t: libFuzzer stopped (exit $rc) on a finding; see $log" >&2
  done
  # Sum over the restarts: each run prints stat::number_of_executed_units.
  execs[$t]=$(awk '/stat::number_of_executed_units/ {n += $2} END {print n + 0}' "$log")
  after=$(ls "$regress" | grep -c -v '^README' || true)
  found[$t]=$(( after - before ))
done

echo
printf '%-8s %14s %8s %s\n' target executions seconds "new findings (tests/fuzz/regressions/<target>/)"
rc=0
for t in "${targets[@]}"; do
  printf '%-8s %14s %8s %s\n' "$t" "${execs[$t]}" "$secs" "${found[$t]}"
  [ "${found[$t]}" -eq 0 ] || rc=1
done
exit $rc
