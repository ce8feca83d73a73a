"""gwlbd speaks systemd's notification protocol (issue 18 item 3), checked
with a datagram socket standing in for systemd:

- READY=1 comes once, after the ports are up and the first snapshot is
  published: at that moment the control API answers with a snapshot
  generation >= 1 and every worker looping, and the STATUS= sent with it
  names the snapshot;
- WATCHDOG=1 comes every WATCHDOG_USEC/2 while the workers make progress
  (here 400 ms: at least 5 in 3 s, no gap above 1.5 s);
- SIGHUP sends RELOADING=1 then READY=1 again; SIGTERM sends STOPPING=1 and
  gwlbd exits 0.
(That a stalled worker stops the watchdog is unit-tested: sd_notify
WorkerProgress, since a worker cannot be stalled from outside on purpose.)

  sd_notify_e2e.py GWLBD CONFIG NOTIFY_SOCKET LOG CONTROL_SOCKET
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import api_call  # noqa: E402

gwlbd, config, notify_path, log_path, ctl = sys.argv[1:6]
msgs = []  # (monotonic time, datagram)
lock = threading.Lock()

if os.path.exists(notify_path):
    os.unlink(notify_path)
rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
rx.bind(notify_path)
rx.settimeout(0.2)
stop = False


def listen():
    while not stop:
        try:
            d = rx.recv(4096).decode()
        except socket.timeout:
            continue
        with lock:
            msgs.append((time.monotonic(), d))


def wait_for(pred, what, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with lock:
            for i, (t, d) in enumerate(msgs):
                if pred(d):
                    return i, t, d
        time.sleep(0.05)
    with lock:
        got = [d for _, d in msgs]
    raise SystemExit(f"FAIL: no {what} in {timeout} s; got {got}\n" + open(log_path).read()[-3000:])


threading.Thread(target=listen, daemon=True).start()
env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="400000")
env.pop("WATCHDOG_PID", None)
log = open(log_path, "w")
p = subprocess.Popen([gwlbd, "--config", config], stdout=log, stderr=subprocess.STDOUT, env=env)
try:
    i, t_ready, d = wait_for(lambda d: "READY=1" in d, "READY=1")
    st = api_call(ctl, "status")
    assert st["ok"], st
    s = st["result"]
    assert s["snapshot_generation"] >= 1, s
    assert s["workers"] and all(w["loops"] > 0 for w in s["workers"]), s["workers"]
    assert s["ports"], s
    assert "STATUS=running" in d and "snapshot " in d, d
    with lock:
        before = [m for _, m in msgs[:i]]
    assert not any("READY=1" in m for m in before), before
    print(f"READY=1 after the first snapshot: API says snapshot {s['snapshot_generation']}, "
          f"{len(s['workers'])} worker(s) looping; {d.strip()!r}")

    time.sleep(3)
    with lock:
        dogs = [t for t, m in msgs if "WATCHDOG=1" in m and t >= t_ready]
    gaps = [b - a for a, b in zip(dogs, dogs[1:])]
    assert len(dogs) >= 5, f"{len(dogs)} WATCHDOG=1 in 3 s"
    assert max(gaps) < 1.5, gaps
    print(f"WATCHDOG=1 x{len(dogs)} in 3 s, gaps {min(gaps):.2f}-{max(gaps):.2f} s (WATCHDOG_USEC 400000)")

    n_before = len(msgs)
    p.send_signal(signal.SIGHUP)
    j, _, _ = wait_for(lambda d: "RELOADING=1" in d, "RELOADING=1")
    with lock:
        later = [m for _, m in msgs[j + 1:]]
    end = time.monotonic() + 30
    while not any("READY=1" in m for m in later) and time.monotonic() < end:
        time.sleep(0.05)
        with lock:
            later = [m for _, m in msgs[j + 1:]]
    assert any("READY=1" in m for m in later), later
    assert j >= n_before - 1
    print("SIGHUP: RELOADING=1, then READY=1")

    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=60)
    wait_for(lambda d: "STOPPING=1" in d, "STOPPING=1", timeout=5)
    assert rc == 0, rc
    print("SIGTERM: STOPPING=1, exit 0")
finally:
    stop = True
    if p.poll() is None:
        p.kill()
        p.wait()
    log.close()
