#!/usr/bin/env bash
# Every file in examples/ passes --check-config and starts as shipped, then
# stops cleanly on SIGTERM (tests/daemon/examples_e2e.py says what its copies change).
#   run_examples.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
exec /usr/bin/python3 "$3/tests/daemon/examples_e2e.py" "$1" "$2" "$3"
