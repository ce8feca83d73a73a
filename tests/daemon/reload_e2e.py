"""Reloads run apart from gwlbd's control thread (docs/control-api.md
"reload", docs/architecture.md "Reloads"):

- the API's `reload` answers once the reload is applied, with the new
  snapshot generation;
- while a reload is reading its file (the config path is a FIFO nobody
  writes yet: the read waits for as long as the test wants, no timing bar),
  the control loop keeps answering: `status` and `classes` answer (the
  reload's own connection has no reply yet), `server.set` is refused `busy`;
- a second reload asked meanwhile waits for the first and then reads the
  file again (its reply comes after the second write); one asked with
  `timeout_s` 1 gets error `timeout` and changes nothing by itself; a SIGHUP
  meanwhile shares the waiting run;
- a file that fails validation leaves the running config serving, with
  every error in the reply;
- SIGHUP reloads (the log line, the weight in force).

  reload_e2e.py GWLBD WORKDIR
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

gwlbd, work = sys.argv[1:3]
cfg = os.path.join(work, "gwlbd.yaml")
sock = os.path.join(work, "gwlbd.sock")
log_path = os.path.join(work, "gwlbd.log")
prefix = os.environ.get("GWLB_E2E_PREFIX", "") + f"gwlbrl{os.getpid()}"


def config(weight):
    return f"""node: {{ underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }}
server_groups:
  - name: fw
    servers: [ {{ address: 192.0.2.10 }}, {{ address: 192.0.2.11, weight: {weight} }} ]
dataplane: {{ workers: 1, mbufs: 4096, flow_table_size: 8192 }}
control: {{ socket: {sock} }}
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--file-prefix", "{prefix}", "-m", "128",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning", "--vdev", "net_null0,no-rx=1"]
"""


def send(method, params=None):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(sock)
    s.sendall(json.dumps({"method": method, "params": params or {}}).encode() + b"\n")
    return s


def reply(s):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    assert buf, "the connection closed without a reply"
    return json.loads(buf)


def call(method, params=None):
    return reply(send(method, params))


def ok(r):
    assert r.get("ok") is True, r
    return r["result"]


def waiting(s):
    """True while `s` has no reply to read yet."""
    return not select.select([s], [], [], 0)[0]


def weight_of(addr):
    for sv in ok(call("servers"))["servers"]:
        if sv["address"] == addr:
            return sv["weight"]
    raise AssertionError(f"no appliance {addr}")


def log_text():
    return open(log_path).read()


def fifo_write(text):
    # Blocks until gwlbd's reload opens the FIFO to read it.
    with open(cfg, "w") as f:
        f.write(text)


def until(pred, what, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise SystemExit(f"FAIL: {what}\n" + log_text()[-3000:])


open(cfg, "w").write(config(1))
log = open(log_path, "w")
p = subprocess.Popen([gwlbd, "--config", cfg], stdout=log, stderr=subprocess.STDOUT)
try:
    until(lambda: os.path.exists(sock), "gwlbd did not create its control socket", 60)
    until(lambda: call("status").get("ok") is True, "gwlbd does not answer", 30)

    # 1. The reply comes when the reload is applied.
    gen0 = ok(call("status"))["snapshot_generation"]
    open(cfg, "w").write(config(2))
    r = ok(call("reload"))
    assert r["snapshot_generation"] > gen0 and r["restart_needed"] == [] and r["reverted"] == [], r
    assert weight_of("192.0.2.11") == 2
    print(f"reload answered once applied: generation {gen0} -> {r['snapshot_generation']}, weight 2 in force")

    # 2. A reload reading a FIFO: nothing comes until the test writes.
    os.unlink(cfg)
    os.mkfifo(cfg)
    first = send("reload")
    # `classes` says compiling once the reload is under way (its thread
    # then waits in open()); the control loop answers meanwhile.
    until(lambda: ok(call("classes"))["compiling"] is True, "the reload did not start")
    st = ok(call("status"))
    assert waiting(first), "the reload answered before its file was written"
    busy = call("server.set", {"address": "192.0.2.11", "weight": 7})
    assert busy["ok"] is False and busy["error"]["code"] == "busy", busy
    assert "reload" in busy["error"]["message"], busy
    print(f"while the reload reads its file: status answered (generation {st['snapshot_generation']}), "
          f"classes says compiling, server.set busy: {busy['error']['message']}")
    # Two more reloads and a SIGHUP while the first runs: they wait for it.
    short = send("reload", {"timeout_s": 1})
    second = send("reload")
    p.send_signal(signal.SIGHUP)
    t = time.monotonic()
    r = reply(short)
    assert r["ok"] is False and r["error"]["code"] == "timeout", r
    assert "did not finish within 1 s" in r["error"]["message"], r
    assert waiting(first) and waiting(second)
    print(f"a reload with timeout_s 1 answered after {time.monotonic() - t:.1f} s: {r['error']['message'][:80]}...")
    fifo_write(config(3))
    r1 = ok(reply(first))
    assert weight_of("192.0.2.11") == 3, "the first reload's file is not in force"
    assert waiting(second), "the second reload answered before its own read of the file"
    print(f"first reload applied (weight 3, generation {r1['snapshot_generation']}); the second waits for its read")
    fifo_write(config(4))
    r2 = ok(reply(second))
    assert r2["snapshot_generation"] > r1["snapshot_generation"], (r1, r2)
    assert weight_of("192.0.2.11") == 4
    assert ok(call("classes"))["compiling"] is False
    # The waiting run was one read: the SIGHUP and both requests shared it.
    assert log_text().count("control API: reloaded") == 3, log_text()
    print(f"second reload read the file again: weight 4, generation {r2['snapshot_generation']}")

    # 3. A file that fails validation: the running config serves on.
    os.unlink(cfg)
    open(cfg, "w").write(config(99999))
    gen = ok(call("status"))["snapshot_generation"]
    r = call("reload")
    assert r["ok"] is False and r["error"]["code"] == "invalid_config", r
    assert any(d["path"] == "server_groups[0].servers[1].weight" for d in r["error"]["details"]), r
    assert weight_of("192.0.2.11") == 4 and ok(call("status"))["snapshot_generation"] == gen
    assert "rejected; keeping the running config" in log_text()
    print(f"invalid file refused ({r['error']['details'][0]['message']}); weight 4 and generation {gen} stay")

    # 4. SIGHUP: the same path, told in the log.
    open(cfg, "w").write(config(5))
    p.send_signal(signal.SIGHUP)
    until(lambda: weight_of("192.0.2.11") == 5, "SIGHUP did not apply weight 5")
    until(lambda: "SIGHUP: reloaded " + cfg + ": 192.0.2.11 re-weighted in fw (4 -> 5)" in log_text(),
          "the SIGHUP reload's log line is missing")
    print("SIGHUP reloaded: weight 5 in force, the log line says SIGHUP")
finally:
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=60)
assert rc == 0, f"gwlbd exit {rc}\n" + log_text()[-3000:]
print("reload: ok")
