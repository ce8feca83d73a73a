#!/usr/bin/env bash
# exe_wrapper of the 'asan' test setup (top-level meson.build, -Dsanitize=true):
# runs one test, COMMAND [ARGS...], and fails it if any process it started
# (the test binary itself, or a gwlbd, gwlbctl, gwlb-replay, gwlb-probe or
# gwlb-appliance that a test script started, in the foreground or detached in a
# namespace) wrote an AddressSanitizer, LeakSanitizer or UBSan error report.
#
# Every sanitized process writes its reports to <dir>/asan.<pid> (log_path)
# instead of stderr, so a report is seen even where a test does not check a
# child's exit status or reads only part of its log (tests/e2e's lab, a gwlbd
# that reports a leak at exit after the test got its answers). The reports are
# printed to stderr here (meson's test log) and the test ends with exit 99,
# which meson counts as ERROR even for should_fail tests.
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/gwlb-san.XXXXXX") || exit 99
chmod 1777 "$dir"   # a test may run a sanitized client as another user
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$dir/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$dir/asan"

"$@"
rc=$?

shopt -s nullglob
reports=("$dir"/asan.*)
errors=0
for f in "${reports[@]}"; do
  echo "===== sanitizer output ($(basename "$f"): pid ${f##*.}) =====" >&2
  cat "$f" >&2
  # Warnings alone (e.g. about the process's memory layout) do not fail a test.
  if grep -qE 'ERROR: (Address|Leak|UndefinedBehavior)Sanitizer|runtime error:' "$f"; then
    errors=$((errors + 1))
  fi
done
rm -rf "$dir"
if [ "$errors" -gt 0 ]; then
  echo "FAIL: sanitizer error report(s) from $errors process(es) (test's own exit status: $rc)" >&2
  exit 99
fi
exit "$rc"
