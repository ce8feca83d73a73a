"""Every file in examples/ starts as shipped (issue 18 item 2).

For each example: `gwlbd --check-config` passes, then gwlbd runs with it until
the control API reports a published snapshot and every worker looping, and
SIGTERM stops it with exit status 0.

What the test changes in its copy, and nothing else: files under /tmp/ named
in the file move to the work directory (the input captures are generated
there with tools/gen_sample_pcap.py), the control socket goes to the work
directory, HTTP listeners on 127.0.0.1 get free ports, and `-- --file-prefix`
on the command line keeps its EAL runtime files apart from other DPDK
processes. An example with the exception path on runs in a network
namespace the test creates (its taps never touch the host's network). An example without `eal:` lines fails: it could not start on a
machine without a NIC and hugepages.

  examples_e2e.py GWLBD WORKDIR SRCROOT
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import api_call  # noqa: E402

gwlbd, work, src = sys.argv[1:4]
DEADLINE_S = 60  # start-up on a loaded 2-core CI machine under ASan


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def prepare(name, text, d):
    if not re.search(r"^eal:", text, re.M):
        raise SystemExit(f"FAIL: examples/{name} has no eal: lines (it cannot start without a NIC "
                         "and hugepages)")
    text = text.replace("/tmp/", d + "/")
    text = re.sub(r"(listen:\s*)127\.0\.0\.1:\d+", lambda m: f"{m.group(1)}127.0.0.1:{free_port()}", text)
    sock = os.path.join(d, "gwlbd.sock")
    if re.search(r"^control:", text, re.M):
        text = re.sub(r"^control:.*$", f"control:\n  socket: {sock}", text, count=1, flags=re.M)
    else:
        text += f"\ncontrol: {{ socket: {sock} }}\n"
    for pcap in re.findall(r"rx_pcap=([^,\"]+)", text):
        subprocess.run([sys.executable, os.path.join(src, "tools/gen_sample_pcap.py"), pcap,
                        "--flows", "20", "--seed", str(len(pcap))], check=True,
                       stdout=subprocess.DEVNULL)
    return text, sock


def run_one(name):
    d = os.path.join(work, name.removesuffix(".yaml"))
    os.makedirs(d)
    with open(os.path.join(src, "examples", name)) as f:
        text, sock = prepare(name, f.read(), d)
    cfg = os.path.join(d, name)
    with open(cfg, "w") as f:
        f.write(text)
    chk = subprocess.run([gwlbd, "--check-config", cfg], capture_output=True, text=True)
    if chk.returncode != 0:
        raise SystemExit(f"FAIL: {name}: --check-config exit {chk.returncode}\n{chk.stdout}{chk.stderr}")
    need = re.search(r"EAL memory needed: .*", chk.stdout)
    log_path = os.path.join(d, "gwlbd.log")
    log = open(log_path, "w")
    prefix = f"gwlb-example-{os.getpid()}"
    cmd = [gwlbd, "--config", cfg, "--", f"--file-prefix={prefix}"]
    netns = None
    if re.search(r"exception_path:\s*{\s*enabled:\s*true", text):
        # Its taps (and the address gwlbd puts on the appliance port's tap
        # for the probes) go into a namespace of the test's own, never the host's.
        if os.geteuid() != 0:
            print(f"examples/{name}: check passed; SKIP start: its exception-path taps need root")
            return
        netns = f"gwlb-example-{os.getpid()}-{name.removesuffix('.yaml')}"
        subprocess.run(["ip", "netns", "add", netns], check=True)
        subprocess.run(["ip", "-n", netns, "link", "set", "lo", "up"], check=True)
        cmd = ["ip", "netns", "exec", netns] + cmd
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        status, end = None, time.monotonic() + DEADLINE_S
        while time.monotonic() < end and p.poll() is None:
            if os.path.exists(sock):
                try:
                    r = api_call(sock, "status")
                    s = r.get("result", {})
                    # Running: a snapshot published and every worker looping.
                    if (r.get("ok") and s.get("snapshot_generation", 0) >= 1 and s.get("workers")
                            and all(w["loops"] > 0 for w in s["workers"])):
                        status = s
                        break
                except (OSError, ValueError):
                    pass
            time.sleep(0.2)
        if status is None:
            raise SystemExit(f"FAIL: {name}: gwlbd did not reach running (exit {p.poll()}):\n"
                             + open(log_path).read()[-3000:])
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"FAIL: {name}: no exit {DEADLINE_S} s after SIGTERM")
        if rc != 0:
            raise SystemExit(f"FAIL: {name}: exit {rc} after SIGTERM:\n" + open(log_path).read()[-3000:])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        if netns:
            subprocess.run(["ip", "netns", "del", netns], check=False)
        # The EAL's runtime files of this run (root: /var/run/dpdk, else under XDG_RUNTIME_DIR).
        for base in ("/var/run/dpdk", os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/nonexistent"), "dpdk")):
            shutil.rmtree(os.path.join(base, prefix), ignore_errors=True)
    print(f"examples/{name}: check passed ({need.group(0) if need else '?'}), running with "
          f"{len(status['workers'])} worker(s) and {len(status['ports'])} port(s), "
          f"snapshot {status['snapshot_generation']}, SIGTERM exit 0")


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
names = sorted(n for n in os.listdir(os.path.join(src, "examples")) if n.endswith((".yaml", ".yml")))
if not names:
    raise SystemExit("FAIL: no examples found")
for n in names:
    run_one(n)
print(f"all {len(names)} examples start as shipped")
