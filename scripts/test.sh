#!/usr/bin/env bash
# Runs the whole test suite (meson test: unit, dp, replay) and ends with the
# line CI reads: "N passed, N failed".
#   scripts/test.sh [meson test args...]   e.g. scripts/test.sh --suite unit
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" || exit 1

meson test -C "$GWLB_BUILD" --print-errorlogs --num-processes 2 "$@"
rc=$?
log="$GWLB_BUILD/meson-logs/testlog.json"
if [ -f "$log" ]; then
  /usr/bin/python3 - "$log" <<'PY'
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    if r in ("OK", "EXPECTEDFAIL"): passed += 1
    elif r == "SKIP": skipped += 1
    else: failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
else
  echo "0 passed, 1 failed"
  rc=1
fi
exit $rc
