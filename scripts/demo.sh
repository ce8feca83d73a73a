#!/usr/bin/env bash
# The main job on an embedded default: a generated sample capture replayed
# through the real dataplane (gwlb-replay) with three reflecting appliances.
# Prints the per-appliance flow distribution and where the output captures are.
#   scripts/demo.sh [--flows N] [--workers N] [--out DIR]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

flows=300 workers=1 out="$GWLB_ROOT/out/demo"
while [ $# -gt 0 ]; do
  case "$1" in
    --flows) flows="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --replay) shift ;;  # the replay demo is the only one for now
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
/usr/bin/python3 "$GWLB_ROOT/tools/gen_sample_pcap.py" "$out/traffic.pcap" --flows "$flows"
echo "config: $GWLB_ROOT/examples/replay.yaml (3 appliances, aws Geneve format)"
"$GWLB_BUILD/tools/gwlb-replay" --config "$GWLB_ROOT/examples/replay.yaml" \
  --in "$out/traffic.pcap" --out-dir "$out" --reflect --workers "$workers"
echo
echo "input:               $out/traffic.pcap"
echo "sent to appliances:  $out/to-appliances.pcap   (tshark -r ... -V shows the Geneve options)"
echo "returned to routers: $out/returned.pcap"
echo "summary:             $out/summary.json"
