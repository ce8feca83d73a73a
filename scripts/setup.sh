#!/usr/bin/env bash
# Installs what is missing (Debian 12 packages), then configures and builds.
# Sourced by demo.sh, test.sh and bench.sh; safe to run again: fast when all is present.
set -euo pipefail

GWLB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GWLB_BUILD="${GWLB_BUILD:-$GWLB_ROOT/build}"

# Never add libboost1.81-dev: it removes Boost 1.74's development packages.
GWLB_PACKAGES=(
  meson ninja-build pkg-config g++
  libdpdk-dev dpdk
  libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev libpcap-dev libyaml-cpp-dev nlohmann-json3-dev
  libgtest-dev libssl-dev
  python3-scapy tshark
  iproute2 ethtool curl   # the namespace lab, the e2e suite and the demo
)

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
  fi
}

gwlb_build() {
  local opts=("$@")
  if [ ! -f "$GWLB_BUILD/build.ninja" ]; then
    meson setup "$GWLB_BUILD" "$GWLB_ROOT" "${opts[@]}" >/dev/null
  elif [ ${#opts[@]} -gt 0 ]; then
    meson configure "$GWLB_BUILD" "${opts[@]}" >/dev/null
  fi
  ninja -C "$GWLB_BUILD" >/dev/null || ninja -C "$GWLB_BUILD"
}

gwlb_install_deps
gwlb_build
