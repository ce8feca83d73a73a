#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), then configures and builds.
# Sourced by demo.sh, test.sh and bench.sh; safe to run again: fast when all is present.
# A caller may set GWLB_BUILD (the build directory), GWLB_SETUP_OPTS (an array
# of meson options, e.g. (-Dsanitize=true) from test.sh --sanitize) and
# GWLB_BUILD_TARGETS (an array of ninja targets, e.g. (control/gwlbd) from
# demo.sh; default: everything) before sourcing. The build shows its progress:
# on a terminal one line kept up to date, otherwise a line every 10 % (CI logs).
set -euo pipefail

GWLB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GWLB_BUILD="${GWLB_BUILD:-$GWLB_ROOT/build}"

# Never add libboost1.81-dev: it removes Boost 1.74's development packages.
GWLB_PACKAGES=(
  meson ninja-build pkg-config g++
  libdpdk-dev dpdk dpdk-dev   # dpdk-dev: dpdk-telemetry.py (tests) and dpdk-testpmd (bench baseline)
  libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev libpcap-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libssl-dev
  openssl       # the TLS probe tests make their certificates with it
  python3-scapy python3-yaml tshark   # python3-yaml: tests/replay/check_roundtrip.py
  python3-matplotlib      # tools/plot_replay.py (gwlb-replay's timeline) and its test timeline-plot
  iproute2 ethtool curl   # the namespace lab, the e2e suite and the demo
  nftables                # the lab's stateful appliance (LAB_APPLIANCE=stateful): a conntrack firewall
  conntrack               # e2e_vxlan reads the kernel VXLAN appliance's connection table
  bird2                   # the fleet lab: BGP + BFD between the router and the gateways
  frr                     # the fleet lab's router with LAB_ROUTER=frr (e2e_fleet_frr): zebra, bfdd and bgpd
                          # run in the lab's router namespace only; the package's own service is
                          # disabled when we install it (gwlb_service_off)
  nginx-light             # a web server gwlb did not write, as an appliance's health endpoint: the keep_alive
                          # HTTP(S) checks against it (tests/daemon/run_nginx_probes.sh); only ever started by
                          # that test, on loopback; the package's own service is disabled when we install it
  prometheus              # promtool (check metrics, check rules) and the Prometheus e2e test (tests/daemon/run_monitoring.sh)
  systemd man-db          # systemd-analyze verify of the unit, man pages rendered (tests/setup/check_install.py, check_package.sh)
  dpkg-dev                # scripts/package.sh: dpkg-shlibdeps, dpkg-architecture
  git                     # tests that scan the tree list the tracked files (tests/setup/tree_files.py, tree_scan.py)
  valgrind                # callgrind: the instruction budget test (bench/instruction_budget.py) and bench.sh's instruction counts
)
# Every program the tests, benchmarks and scripts run must come from one of
# these (or from what apt installs with them): the unit test setup_packages
# (tests/setup/external_programs.py) fails otherwise.

gwlb_install_deps() {
  local missing=()
  for p in "${GWLB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
    if [[ " ${missing[*]} " == *" frr "* ]]; then gwlb_service_off "$sudo" frr "the fleet lab"; fi
    if [[ " ${missing[*]} " == *" nginx-light "* ]]; then gwlb_service_off "$sudo" nginx "the probe tests"; fi
  fi
}

# Installing frr or nginx enables its systemd service (and starts it where
# services may start): a system-wide zebra and staticd, or a web server on
# port 80, in the host's namespace, which the tests do not use (the lab's FRR
# runs in a namespace, the tests' nginx on loopback with its own config).
# Turned off when setup installed the package; one that was there before is
# left alone.
gwlb_service_off() {
  local sudo="$1" unit="$2" why="$3"
  command -v systemctl >/dev/null || return 0
  $sudo systemctl disable "$unit.service" >/dev/null 2>&1 || true
  if [ -d /run/systemd/system ]; then $sudo systemctl stop "$unit.service" >/dev/null 2>&1 || true; fi
  echo "setup: installed $unit for $why; its system-wide service is disabled"
}

# True when the build directory already has every -Dname=value / --name=value
# given (meson configure would regenerate the build files even so).
gwlb_opts_set() {
  meson introspect "$GWLB_BUILD" --buildoptions 2>/dev/null | /usr/bin/python3 -c '
import json, sys
have = {o["name"]: o["value"] for o in json.load(sys.stdin)}
for a in sys.argv[1:]:
    name, _, want = a.lstrip("-").removeprefix("D").partition("=")
    v = have.get(name)
    if (str(v).lower() if isinstance(v, bool) else str(v)) != want:
        sys.exit(1)
' "$@"
}

# Core-seconds one build step takes here with nothing cached (a fresh clone on
# 2 cores: 312 steps in about 15 min, tests included): only for the estimate
# printed before a build; the time left shown during it follows the real rate.
GWLB_STEP_CORE_SECONDS=6

gwlb_duration() {  # seconds -> "4 min 10 s"
  if [ "$1" -ge 60 ]; then echo "$(( $1 / 60 )) min $(( $1 % 60 )) s"; else echo "$1 s"; fi
}

# ninja's output (NINJA_STATUS "[n/m] ") on stdin -> progress on stdout, every
# line to the log $1. Terminal: one line rewritten in place; else a line each 10 %.
gwlb_progress() {
  local log="$1" start=$SECONDS last=-10 n m pct el left tty=0 line
  [ -t 1 ] && tty=1
  while IFS= read -r line; do
    printf '%s\n' "$line" >> "$log"
    [[ "$line" =~ ^\[([0-9]+)/([0-9]+)\]\  ]] || continue
    n=${BASH_REMATCH[1]} m=${BASH_REMATCH[2]}
    pct=$(( n * 100 / m )) el=$(( SECONDS - start )) left=""
    if [ "$n" -ge $(( m / 20 + 1 )) ] && [ "$n" -lt "$m" ]; then
      left=", about $(gwlb_duration $(( el * (m - n) / n ))) left"
    fi
    if [ "$tty" = 1 ]; then
      printf '\rsetup: building %3d%% [%d/%d] %s%s\033[K' "$pct" "$n" "$m" "$(gwlb_duration "$el")" "$left"
    elif [ "$pct" -ge $(( last + 10 )) ] || [ "$n" -eq "$m" ]; then
      echo "setup: building $pct% ($n/$m steps, $(gwlb_duration "$el")$left)"
      last=$pct
    fi
  done
  [ "$tty" = 1 ] && echo
  return 0
}

# gwlb_ninja [TARGET...]: builds them (none: everything) with progress; on
# failure prints ninja's errors (the whole output is in meson-logs/setup-build.log).
gwlb_ninja() {
  local log="$GWLB_BUILD/meson-logs/setup-build.log" steps cores est rc
  steps=$(ninja -C "$GWLB_BUILD" -n "$@" 2>/dev/null | grep -c '^\[') || true
  [ "${steps:-0}" -gt 0 ] || return 0
  cores=$(nproc 2>/dev/null || echo 1)
  est=$(( steps * GWLB_STEP_CORE_SECONDS / cores ))
  echo "setup: building ${*:-everything} in $GWLB_BUILD: $steps steps, up to about" \
       "$(gwlb_duration "$est") on $cores cores (much less with ccache's cache filled)"
  mkdir -p "$(dirname "$log")" && : > "$log"
  # (In an `if`: a failing build must reach the error report under set -e.)
  if NINJA_STATUS="[%f/%t] " ninja -C "$GWLB_BUILD" "$@" 2>&1 | gwlb_progress "$log"; then
    rc=0
  else
    rc=${PIPESTATUS[0]}
    [ "$rc" -ne 0 ] || rc=1
  fi
  if [ "$rc" -ne 0 ]; then
    sed -n '/^FAILED: /,$p' "$log" | head -n 80 >&2
    echo "setup: build failed, the whole output is in $log" >&2
  fi
  return "$rc"
}

gwlb_build() {
  local opts=("$@")
  if [ ! -f "$GWLB_BUILD/build.ninja" ]; then
    meson setup "$GWLB_BUILD" "$GWLB_ROOT" "${opts[@]}" >/dev/null
  elif [ ${#opts[@]} -gt 0 ] && ! gwlb_opts_set "${opts[@]}"; then
    meson configure "$GWLB_BUILD" "${opts[@]}" >/dev/null
  fi
  gwlb_ninja ${GWLB_BUILD_TARGETS[@]+"${GWLB_BUILD_TARGETS[@]}"}
}

# GWLB_SETUP_NO_INSTALL=1: build only (tests/setup/build_progress.sh).
[ -n "${GWLB_SETUP_NO_INSTALL:-}" ] || gwlb_install_deps
gwlb_build ${GWLB_SETUP_OPTS[@]+"${GWLB_SETUP_OPTS[@]}"}
