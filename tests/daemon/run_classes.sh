#!/usr/bin/env bash
# Traffic classes as gwlbd shows them (issue 27 items 2 and 5): gwlbd over a
# capture with five kinds of traffic (two inspected classes on two listeners,
# a bypassed one, a dropped one, unclassified), then /metrics, DPDK
# telemetry, promtool, `gwlbctl classes` and `gwlbctl explain`, and a reload
# that swaps two classes and renames one. Checks in tests/daemon/classes_e2e.py.
#   run_classes.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
gwlbctl="$(dirname "$gwlbd")/../cli/gwlbctl"
metrics_port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
prefix="gwlbcls$$"
$py "$src/tests/daemon/classes_e2e.py" gen --work "$work" --metrics "127.0.0.1:$metrics_port" --prefix "$prefix"
gwlbd_extra_cleanup="rm -rf /var/run/dpdk/$prefix"
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$gwlbd" "$work/gwlbd.yaml" "$work/gwlbd.log" "$work/gwlbd.sock"
$py "$src/tests/daemon/classes_e2e.py" check --work "$work" --metrics "127.0.0.1:$metrics_port" \
    --prefix "$prefix" --gwlbctl "$gwlbctl" --src "$src" \
  || { tail -30 "$work/gwlbd.log"; exit 1; }
stop_gwlbd
