#!/usr/bin/env bash
# Runs the whole test suite (meson test: every suite) and ends with the line CI
# reads: "N passed, N failed".
#   scripts/test.sh [meson test args...]              e.g. scripts/test.sh --suite unit
#   scripts/test.sh --sanitize [meson test args...]   the same under ASan+UBSan
# --sanitize configures and builds build-asan/ (or $GWLB_SAN_BUILD) with
# -Dsanitize=true and runs the suite there, minus the tests in SAN_TRIM below
# (a test named on the command line runs anyway). See docs/testing.md.
set -uo pipefail

sanitize=0
args=()
for a in "$@"; do
  if [ "$a" = "--sanitize" ]; then sanitize=1; else args+=("$a"); fi
done

# Tests left out of the sanitized run, each with the reason printed. They are
# timing-bound (rates or windows measured against the wall clock, which ASan's
# 2-3x slowdown on CI's two shared cores breaks) and run in the plain suite; the
# code they drive is exercised under ASan by other tests (docs/testing.md).
declare -A SAN_TRIM=(
  [gwlbd_churn]="drives ~100 appliance changes/s and 20k packets/s against wall-clock windows"
)
# The namespace lab (suite e2e): health windows in wall time and, above all,
# CI's time budget (the sanitized build is the longest part of CI). The gwlbd
# paths it drives (pipeline, API, health, reloads) run under ASan in the dp,
# daemon, replay and fuzz suites.
for t in tcp udp drop failover ethernet no_rebalance drain restart fragments mtu; do
  SAN_TRIM[e2e_$t]="namespace lab: wall-clock health windows, and CI time (the plain suite runs it)"
done
# e2e_fleet runs sanitized; e2e_fleet_frr drives the same gwlbd paths with
# another router in front, so it runs only in the plain suite.
SAN_TRIM[e2e_fleet_frr]="e2e_fleet with FRR as the router: the same gwlbd paths as e2e_fleet, which runs here; CI time"
SAN_TRIM[e2e_fleet_upgrade]="docs/upgrade.md's rolling upgrade: fleet leave, SIGTERM, warm start and rejoin, the gwlbd paths e2e_fleet drives sanitized; CI time"
# Later lab tests whose new gwlbd code runs under ASan in the dp and unit
# suites (VXLAN and IPv6-probe returns, mirror copies, the fleet view, the
# shaper): wall-clock windows (hold-downs, ramps, a gateway restart) and CI time.
for t in stateful_ethernet forwarding_ipv6 dampening slow_start settling vxlan vxlan_ipv6 fleet_cold mirror fleet_ipv6; do
  SAN_TRIM[e2e_$t]="namespace lab: wall-clock windows, and CI time; its gwlbd code runs sanitized in the dp and unit suites"
done
SAN_TRIM[e2e_router_fragments]="runs no gwlb code (a Linux router's ECMP hash on the kernel); CI time"
# The soak (suite soak, scripts/soak.sh): 3 minutes of faults on the fleet lab,
# judged against wall-clock windows (BFD at 0.5 s, health at ~1 s) that ASan's
# slowdown on two shared cores would break; and ~3.5 min of CI time twice.
# What it drives in gwlbd runs under ASan in e2e_fleet and the daemon suite.
SAN_TRIM[soak]="the fleet lab for 3 minutes under faults: wall-clock windows and CI time (the plain suite runs it)"
# The package suite builds, lints and installs the Debian package: it checks
# the packaging (file layout, lintian, maintainer scripts), not our code, and
# the sanitized binaries are never what gets packaged. ~2.5 min of CI time.
SAN_TRIM[package_deb]="builds and lints the Debian package: packaging, not code ASan checks; CI time"
SAN_TRIM[install_layout]="checks meson install's file layout: packaging, not code ASan checks"
# The instruction budget (suite perf) runs pipeline_bench under valgrind, which
# cannot run ASan binaries (both want the same shadow memory); the sanitized
# build has no bench/ to run either. Instruction counts of an ASan build would
# not be the product's anyway.
SAN_TRIM[instruction_budget]="valgrind (callgrind) cannot run ASan binaries; the plain suite holds the budget"
SAN_TRIM[instruction_budget_selftest]="valgrind (callgrind) cannot run ASan binaries; the plain suite runs it"

if [ "$sanitize" -eq 1 ]; then
  GWLB_BUILD="${GWLB_SAN_BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-asan}"
  # -O1 without debug info: what ASan recommends, and it compiles much faster
  # than the default -O2 -g (the sanitized build dominates CI's time).
  GWLB_SETUP_OPTS=(-Dsanitize=true -Doptimization=1 -Ddebug=false)
fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" || { echo "0 passed, 1 failed"; exit 1; }
set +e   # setup.sh turned -e on: a failing test must still reach the summary line

select=()
if [ "$sanitize" -eq 1 ]; then
  # The tests the arguments select (meson test --list applies --suite and names),
  # minus the trimmed ones, passed back by name.
  mapfile -t listed < <(meson test -C "$GWLB_BUILD" --no-rebuild --list ${args[@]+"${args[@]}"} 2>/dev/null \
                        | sed -n 's|^.* / ||p')
  kept=()
  named=" ${args[*]+${args[*]}} "
  for t in "${listed[@]}"; do
    if [ -n "${SAN_TRIM[$t]+x}" ] && [[ "$named" != *" $t "* ]]; then
      echo "sanitize: not run under ASan: $t: ${SAN_TRIM[$t]} (the plain suite runs it)"
    else
      kept+=("$t")
    fi
  done
  if [ ${#listed[@]} -gt 0 ] && [ ${#kept[@]} -eq 0 ]; then
    echo "0 passed, 0 failed"; exit 0
  fi
  select=(${kept[@]+"${kept[@]}"})
  echo "sanitize: ${#kept[@]} tests in $GWLB_BUILD (ASan+UBSan; DPDK's libraries uninstrumented)"
fi

meson test -C "$GWLB_BUILD" --print-errorlogs --num-processes 2 \
  ${args[@]+"${args[@]}"} ${select[@]+"${select[@]}"}
rc=$?
log="$GWLB_BUILD/meson-logs/testlog.json"
if [ -f "$log" ]; then
  /usr/bin/python3 - "$log" <<'PY'
import json, sys
passed = failed = 0
skipped = []
for line in open(sys.argv[1]):
    t = json.loads(line)
    r = t.get("result")
    if r in ("OK", "EXPECTEDFAIL"): passed += 1
    elif r == "SKIP": skipped.append(t.get("name", "?"))
    else: failed += 1
# Skips are named on their own line; CI reads the last line, which has exactly
# the form "N passed, N failed".
if skipped:
    print(f"skipped ({len(skipped)}, each prints its reason above): {', '.join(skipped)}")
print(f"{passed} passed, {failed} failed")
PY
else
  echo "0 passed, 1 failed"
  rc=1
fi
exit $rc
