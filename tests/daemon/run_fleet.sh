#!/usr/bin/env bash
# gwlbd announcing and withdrawing its routes through a real BIRD 2 (fleet.bird).
#   run_fleet.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
exec /usr/bin/python3 "$src/tests/daemon/fleet_announce.py" "$gwlbd" "$work" "$src"
