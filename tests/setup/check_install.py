"""What `meson install` lays down agrees with itself (issue 18 items 3-4):

- the systemd unit's ExecStartPre/ExecStart run the gwlbd that install puts
  (meson introspect --installed) with the config file install puts;
- `systemd-analyze verify` accepts the unit with nothing to say (warnings
  fail too). The binaries it names must exist, so it verifies a copy of the
  installed unit whose install prefix points into the staging root (the only
  change), with MANPATH on the staged man pages (man:gwlbd(8) resolves);
- every installed binary's --version runs from the staging root and prints
  "NAME VERSION".

  check_install.py BUILDDIR WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

build, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
stage = os.path.join(work, "stage")
subprocess.run(["meson", "install", "-C", build, "--destdir", stage, "--no-rebuild", "--quiet"],
               check=True, stdout=subprocess.DEVNULL)
installed = json.loads(subprocess.run(["meson", "introspect", build, "--installed"], check=True,
                                      capture_output=True, text=True).stdout)
by_name = {os.path.basename(dst): dst for dst in installed.values()}
project_version = json.loads(subprocess.run(["meson", "introspect", build, "--projectinfo"], check=True,
                                            capture_output=True, text=True).stdout)["version"]

unit_dst = by_name["gwlbd.service"]
gwlbd_dst = by_name["gwlbd"]
unit = open(stage + unit_dst).read()
exec_start = re.search(r"^ExecStart=(\S+) --config (\S+)$", unit, re.M)
exec_pre = re.search(r"^ExecStartPre=(\S+) --check-config (\S+)$", unit, re.M)
assert exec_start and exec_pre, unit
for m in (exec_start, exec_pre):
    assert m.group(1) == gwlbd_dst, f"unit runs {m.group(1)}, install puts gwlbd in {gwlbd_dst}"
    assert m.group(2).endswith("/gwlb/gwlbd.yaml") and os.path.isfile(stage + m.group(2)), \
        f"unit reads {m.group(2)}: meson install put no config there"
for key in ("Type=notify", "WatchdogSec=", "After=network-online.target", "dev-hugepages.mount",
            "Wants=network-online.target", "ExecReload=/bin/kill -HUP $MAINPID"):
    assert key in unit, f"unit lacks {key}"
print(f"unit: ExecStart {gwlbd_dst} --config {exec_start.group(2)} (as meson install puts them)")

prefix = os.path.dirname(os.path.dirname(gwlbd_dst))  # /usr/local from /usr/local/bin/gwlbd
probe = os.path.join(work, "gwlbd.service")
with open(probe, "w") as f:
    f.write(re.sub(r"(?<=[= ])" + re.escape(prefix) + "/", stage + prefix + "/", unit))
man_dir = os.path.dirname(os.path.dirname(stage + by_name["gwlbd.8"]))
r = subprocess.run(["systemd-analyze", "verify", probe], capture_output=True, text=True,
                   env=dict(os.environ, MANPATH=man_dir), timeout=120)
said = (r.stdout + r.stderr).strip()
assert r.returncode == 0 and not said, f"systemd-analyze verify: exit {r.returncode}\n{said}"
print("systemd-analyze verify: clean (no warnings)")

bins = [d for s, d in installed.items() if os.path.dirname(d).endswith("/bin")]
assert len(bins) >= 5, bins
for b in sorted(bins):
    name = os.path.basename(b)
    out = subprocess.run([stage + b, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith(f"{name} {project_version}"), \
        f"{b} --version: exit {out.returncode}: {out.stdout}{out.stderr}"
    print(f"{b} --version: {out.stdout.strip()}")
