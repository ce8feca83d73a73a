#!/usr/bin/python3
"""gwlbd's control API and metrics endpoint against hostile and broken clients.

Starts nothing: expects gwlbd running with its control socket at SOCK and
Prometheus metrics at HOST:PORT, and telemetry under FILE_PREFIX. Checks that
garbage gets clear errors, limits hold, and the daemon keeps answering.

usage: api_hostile.py SOCK HOST:PORT FILE_PREFIX EXPECTED_RX
"""
import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sock_path, metrics, prefix, expected_rx = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def connect():
    for _ in range(100):  # a full accept backlog answers EAGAIN: retry briefly
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(15)
        try:
            s.connect(sock_path)
            return s
        except BlockingIOError:
            s.close()
            time.sleep(0.05)
    raise AssertionError("control socket never accepted")


def lines(s, n=1):
    buf = b""
    while buf.count(b"\n") < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return [json.loads(x) for x in buf.split(b"\n") if x.strip()]


def call(raw):
    s = connect()
    s.sendall(raw if isinstance(raw, bytes) else raw.encode())
    r = lines(s)
    s.close()
    return r[0] if r else None


def err(r, code):
    assert r is not None and r["ok"] is False and r["error"]["code"] == code, r
    return r["error"]["message"]


# Well-formed calls and every bad-request class.
st = call('{"id": "a", "method": "status"}\n')
assert st["ok"] and st["id"] == "a" and st["result"]["version"], st
print("status ok:", st["result"]["flows"], "flows")
print("garbage:", err(call(b"\x00\xff\xfe garbage\n"), "bad_request"))
print("not an object:", err(call("[1,2,3]\n"), "bad_request"))
print("no method:", err(call('{"params": {}}\n'), "bad_request"))
print("method type:", err(call('{"method": 5}\n'), "bad_request"))
print("unknown method:", err(call('{"method": "rm -rf"}\n'), "bad_request"))
print("unknown param:", err(call('{"method": "flows", "params": {"limt": 5}}\n'), "bad_request"))
print("wrong type:", err(call('{"method": "flows", "params": {"limit": "many"}}\n'), "bad_request"))
print("negative:", err(call('{"method": "flows", "params": {"limit": -1}}\n'), "bad_request"))
print("range:", err(call('{"method": "flows", "params": {"limit": 10000000}}\n'), "bad_request"))
print("bad cidr:", err(call('{"method": "flows", "params": {"src": "10.0.0.0/33"}}\n'), "bad_request"))
print("bad cursor:", err(call('{"method": "flows", "params": {"cursor": "x"}}\n'), "bad_request"))
print("params type:", err(call('{"method": "status", "params": []}\n'), "bad_request"))
print("deep:", err(call("[" * 5000 + "]" * 5000 + "\n"), "bad_request"))
print("unknown server:", err(call('{"method": "server.remove", "params": {"address": "192.0.2.250"}}\n'), "not_found"))
bad = call('{"method": "server.add", "params": {"group": "firewalls", "address": "192.0.2.1"}}\n')
print("invalid change:", err(bad, "invalid_config"), bad["error"].get("details"))

# A line over 64 KiB: error, then the connection closes.
s = connect()
s.sendall(b'{"method": "status", "pad": "' + b"x" * 70000 + b'"}\n')
print("huge line:", err(lines(s)[0], "too_large"))
s.close()

# Random bytes, many times: the daemon answers or closes, never hangs.
rnd = random.Random(1)
for i in range(200):
    s = connect()
    try:
        s.sendall(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000))) + b"\n")
        s.settimeout(5)
        s.recv(65536)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    s.close()
print("200 random-byte requests survived")

# Pipelining: three requests in one write, three replies in order.
s = connect()
s.sendall(b'{"id":1,"method":"status"}\n{"id":2,"method":"groups"}\n{"id":3,"method":"nope"}\n')
r = lines(s, 3)
assert [x.get("id") for x in r] == [1, 2, 3] and r[2]["ok"] is False, r
s.close()
print("pipelined requests answered in order")

# Connection limit: 32 idle clients, the 33rd is told busy; the idle ones are
# dropped after the 10 s idle timeout and service resumes.
idle = [connect() for _ in range(32)]
time.sleep(0.3)
s = connect()
print("33rd connection:", err(lines(s)[0], "busy"))
s.close()
t0 = time.time()
for c in idle:
    c.settimeout(20)
    assert c.recv(1) == b"", "idle connection not closed"
print(f"idle connections closed after {time.time() - t0:.1f} s")
for c in idle:
    c.close()
assert call('{"method":"status"}\n')["ok"]

# A client that never reads: the daemon must keep serving others.
hog = connect()
hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
for _ in range(2000):
    try:
        hog.send(b'{"method":"stats"}\n')
    except BlockingIOError:
        break
    except (BrokenPipeError, ConnectionResetError):
        break
st = call('{"method":"stats"}\n')
assert st["ok"] and st["result"]["totals"]["rx_packets"] == expected_rx, st["result"]["totals"]
hog.close()
print("a client that does not read does not block others; stats rx_packets =", expected_rx)

# Prometheus.
body = urllib.request.urlopen(f"http://{metrics}/metrics", timeout=5).read().decode()
rx = sum(int(l.split()[-1]) for l in body.splitlines() if l.startswith("gwlb_rx_packets_total{"))
assert rx == expected_rx, rx
assert "# TYPE gwlb_dropped_packets_total counter" in body
assert 'gwlb_server_state{group="firewalls",address="192.0.2.10",state="active"} 1' in body
try:
    urllib.request.urlopen(f"http://{metrics}/other", timeout=5)
    raise AssertionError("non-metrics path served")
except urllib.error.HTTPError as e:
    assert e.code == 404
print(f"metrics: gwlb_rx_packets_total = {rx}; /other -> 404")

# DPDK telemetry, with DPDK's own client.
out = subprocess.run(["dpdk-telemetry.py", "-f", prefix], input="/gwlb/stats\n/gwlb/servers\n",
                     capture_output=True, text=True, timeout=20).stdout
docs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
stats = next(d["/gwlb/stats"] for d in docs if "/gwlb/stats" in d)
servers = next(d["/gwlb/servers"] for d in docs if "/gwlb/servers" in d)
assert stats["rx_packets"] == expected_rx, stats
assert sorted(servers["active"]) == ["192.0.2.10", "192.0.2.11", "192.0.2.12"], servers
print("telemetry: /gwlb/stats rx_packets =", stats["rx_packets"], "; /gwlb/servers", servers)
