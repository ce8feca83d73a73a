#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), then configures and builds.
# Sourced by demo.sh, test.sh and bench.sh; safe to run again: fast when all is present.
# A caller may set GWLB_BUILD (the build directory) and GWLB_SETUP_OPTS (an array
# of meson options, e.g. (-Dsanitize=true) from test.sh --sanitize) before sourcing.
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
  bird2                   # the fleet lab: BGP + BFD between the router and the gateways
  frr                     # the fleet lab's router with LAB_ROUTER=frr (e2e_fleet_frr): zebra, bfdd and bgpd
                          # run in the lab's router namespace only; the package's own service is
                          # disabled when we install it (gwlb_frr_service_off)
  prometheus              # promtool (check metrics, check rules) and the Prometheus e2e test (tests/daemon/run_monitoring.sh)
  systemd man-db          # systemd-analyze verify of the unit, man pages rendered (tests/setup/check_install.py, check_package.sh)
  dpkg-dev                # scripts/package.sh: dpkg-shlibdeps, dpkg-architecture
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
    if [[ " ${missing[*]} " == *" frr "* ]]; then gwlb_frr_service_off "$sudo"; fi
  fi
}

# Installing frr enables its systemd service (and starts it where services may
# start): a system-wide zebra and staticd in the host's namespace, which the
# lab does not use (its FRR runs in a namespace, with its own directories).
# Turned off when setup installed frr; an FRR that was there before is left alone.
gwlb_frr_service_off() {
  local sudo="$1"
  command -v systemctl >/dev/null || return 0
  $sudo systemctl disable frr.service >/dev/null 2>&1 || true
  if [ -d /run/systemd/system ]; then $sudo systemctl stop frr.service >/dev/null 2>&1 || true; fi
  echo "setup: installed frr for the fleet lab; its system-wide service is disabled"
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

gwlb_build() {
  local opts=("$@")
  if [ ! -f "$GWLB_BUILD/build.ninja" ]; then
    meson setup "$GWLB_BUILD" "$GWLB_ROOT" "${opts[@]}" >/dev/null
  elif [ ${#opts[@]} -gt 0 ] && ! gwlb_opts_set "${opts[@]}"; then
    meson configure "$GWLB_BUILD" "${opts[@]}" >/dev/null
  fi
  ninja -C "$GWLB_BUILD" >/dev/null || ninja -C "$GWLB_BUILD"
}

gwlb_install_deps
gwlb_build ${GWLB_SETUP_OPTS[@]+"${GWLB_SETUP_OPTS[@]}"}
