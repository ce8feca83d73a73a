#!/usr/bin/env bash
# Reloads off the control thread (tests/daemon/reload_e2e.py): the reply
# waits for the reload, the control loop answers meanwhile, a second reload
# waits its turn, SIGHUP, a refused file.  run_reload.sh GWLBD WORKDIR SRCROOT
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
rm -rf "$work" && mkdir -p "$work"
exec /usr/bin/python3 "$src/tests/daemon/reload_e2e.py" "$gwlbd" "$work"
