#!/usr/bin/python3
"""Instructions per health probe of gwlbd's checker thread (benchmark, never
pass/fail; docs/performance.md "Health probes through gwlbd's checker").

Runs bench/probe_fleet under valgrind's callgrind, which counts the checker
thread's instructions (user space: gwlbd's code, Asio, libc, OpenSSL; never
the kernel's) in the steady state of each protocol's run (probe_fleet toggles
the collection on after two intervals and dumps it per protocol), and divides
by the probes completed meanwhile. Unlike CPU time on a shared machine, the
count is the same on every run of the same tree (to a few per cent: how many
events each wake-up of the loop handles varies), so before and after compare
even on a loaded machine. Under valgrind everything runs some 50 times
slower: a fleet of 100 appliances for TCP and HTTP, 10 for HTTPS (whose
handshakes under valgrind take tens of milliseconds), and a timeout of 5 s
keep every probe passing. HTTPS probes resume their sessions (the run says
how many handshakes did).

  probe_instructions.py --build DIR [--targets 100] [--https-targets 10]
                        [--duration 8] [--protocols tcp,http,https,https+keep_alive] [--bench PATH]
(a protocol with +keep_alive runs with health_check.keep_alive)
Prints a table, then one JSON line (last line of stdout).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def dumps(prefix):
    """{protocol: instructions} from the checker thread's (thread 1) dumps."""
    out = {}
    for f in glob.glob(prefix + ".*-01"):
        desc, total = None, None
        with open(f, errors="replace") as fh:
            for line in fh:
                m = re.match(r"desc: Trigger: Client Request: probe_fleet (\w+)", line)
                if m:
                    desc = m.group(1)
                elif line.startswith("totals:"):
                    total = int(line.split()[1])
        if desc and total is not None:
            out[desc] = total
    return out


def measure(bench, protocol, targets, duration):
    """probe_fleet's JSON run and the checker's steady-state instructions.
    PROTOCOL "http+keep_alive" or "https+keep_alive": with --keep-alive."""
    keep = protocol.endswith("+keep_alive")
    protocol = protocol.removesuffix("+keep_alive")
    with tempfile.TemporaryDirectory(prefix="probe-instr-") as tmp:
        prefix = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--collect-atstart=no",
               f"--callgrind-out-file={prefix}", bench, "--targets", str(targets), "--duration",
               str(duration), "--timeout-ms", "5000", "--protocols", protocol] + (["--keep-alive"] if keep else [])
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stderr[-3000:])
            sys.exit(f"probe_instructions: probe_fleet under callgrind failed ({p.returncode})")
        run = json.loads(p.stdout.strip().splitlines()[-1])["runs"][0]
        return run, dumps(prefix).get(protocol)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--bench", help="probe_fleet binary (default: BUILD/bench/probe_fleet)")
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--https-targets", type=int, default=10)
    ap.add_argument("--duration", type=float, default=8)
    ap.add_argument("--protocols", default="tcp,http,https")
    a = ap.parse_args()
    bench = a.bench or os.path.join(a.build, "bench", "probe_fleet")
    if not shutil.which("valgrind"):
        sys.exit("probe_instructions: valgrind not found")
    rows = []
    for proto in a.protocols.split(","):
        r, ir = measure(bench, proto, a.https_targets if proto.startswith("https") else a.targets, a.duration)
        n = r["steady_completed"]
        if ir is None or n == 0:
            sys.exit(f"probe_instructions: {r['protocol']}: no dump or no probe completed")
        rows.append({"protocol": proto, "targets": r["targets"], "probes": n,
                     "instructions": ir, "per_probe": round(ir / n),
                     "tls_handshakes": r.get("tls_handshakes", 0), "tls_resumed": r.get("tls_resumed", 0)})
    print(f"probe_instructions: callgrind, checker thread, steady state (after 2 intervals), "
          f"{a.duration:g} s per protocol, interval 1000 ms, timeout 5000 ms")
    print(f"{'proto':16} {'targets':>7} {'probes':>7} {'instructions':>14} {'per probe':>10} {'TLS resumed':>12}")
    for r in rows:
        tls = f"{r['tls_resumed']}/{r['tls_handshakes']}" if r["protocol"].startswith("https") else ""
        print(f"{r['protocol']:16} {r['targets']:7} {r['probes']:7} {r['instructions']:14} {r['per_probe']:10} "
              f"{tls:>12}")
    print(json.dumps({"duration_s": a.duration, "runs": rows}))


if __name__ == "__main__":
    main()
