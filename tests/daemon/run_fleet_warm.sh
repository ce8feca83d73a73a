#!/usr/bin/env bash
# Warm start against peers that do not answer, and a peers entry that is the
# node itself (issue 24 items 1 and 2), with real gwlbd on loopback. Checks
# in tests/daemon/fleet_warm_e2e.py, which writes the configs (it makes the
# fake peers first and needs their ports).
#   run_fleet_warm.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
py=/usr/bin/python3
rm -rf "$work" && mkdir -p "$work"
$py "$src/tools/gen_flows_pcap.py" "$work/flows.pcap" --flows 200 >/dev/null
$py "$src/tools/gen_flows_pcap.py" "$work/empty.pcap" --flows 0 >/dev/null
cleanup() { rm -rf /var/run/dpdk/gwlbwarma$$ /var/run/dpdk/gwlbwarmb$$; }
trap cleanup EXIT
$py "$src/tests/daemon/fleet_warm_e2e.py" --gwlbd "$gwlbd" --work "$work" --prefix "gwlbwarm" \
    --tag "$$" --flows 200 || {
  echo "--- a.log"; tail -30 "$work/a.log" || true; echo "--- b.log"; tail -60 "$work/b.log" || true
  echo "FAIL: fleet warm start"; exit 1; }
