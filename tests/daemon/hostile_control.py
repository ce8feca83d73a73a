#!/usr/bin/python3
"""Clients for run_hostile_api.sh: gwlbd's control socket against hostile
clients, requests that name files, and reloads of bad config files.

usage: hostile_control.py connect SOCK        prints ok or the errno name (EACCES)
       hostile_control.py wait-rx SOCK N      waits until stats rx_packets == N
       hostile_control.py clients SOCK WORK   hostile clients and file paths in requests
       hostile_control.py reload SOCK CONFIG LOG PID
                                              bad config files change nothing
"""
import errno
import json
import os
import signal
import socket
import sys
import threading
import time

IDLE_S = 10  # the daemon's idle timeout (kApiIdleTimeout); waits allow 3x


def connect(path, timeout=15):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def read_reply(s):
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    return json.loads(buf) if buf.strip() else None


def call(path, method, params=None, raw=None):
    s = connect(path)
    req = raw if raw is not None else json.dumps({"method": method, "params": params or {}}).encode() + b"\n"
    s.sendall(req)
    r = read_reply(s)
    s.close()
    return r


def ok(r):
    assert r is not None and r.get("ok") is True, r
    return r["result"]


def err(r, code):
    assert r is not None and r.get("ok") is False and r["error"]["code"] == code, r
    return r["error"]


def wait_closed_by_server(s, what):
    """Waits (without reading) until the daemon closes `s`: send() then fails."""
    s.setblocking(False)
    deadline = time.time() + 3 * IDLE_S
    while time.time() < deadline:
        try:
            s.send(b" ")
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: the daemon never closed the connection")


def wait_eof(s, what):
    """Reads until EOF (the daemon closed the connection); returns the bytes."""
    s.settimeout(3 * IDLE_S)
    buf = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return buf
            buf += chunk
    except ConnectionResetError:
        return buf
    except socket.timeout:
        raise AssertionError(f"{what}: the daemon never closed the connection")


# ---------------------------------------------------------------------------

def cmd_connect(path):
    try:
        s = connect(path)
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
        return
    s.sendall(b'{"method":"status"}\n')
    r = read_reply(s)
    print("ok" if r and r.get("ok") else f"bad reply {r}")


def cmd_wait_rx(path, n):
    for _ in range(120):
        if ok(call(path, "stats"))["totals"]["rx_packets"] == n:
            return
        time.sleep(0.25)
    raise AssertionError(f"rx_packets never reached {n}")


def cmd_clients(path, work):
    servers = sorted(x["address"] for x in ok(call(path, "servers"))["servers"])

    # No request names a file: a path in any method's params is refused, the
    # file is never read, and no method exists to read, dump or write files.
    evil = os.path.join(work, "evil.yaml")
    with open(evil, "w") as f:
        f.write(open(os.path.join(work, "gwlbd.yaml")).read().replace("192.0.2.12", "192.0.2.99"))
    for method, params in [("reload", {"path": evil}), ("reload", {"config": evil}),
                           ("reload", {"file": "/etc/shadow"}),
                           ("server.add", {"group": "firewalls", "address": "192.0.2.50", "path": evil}),
                           ("stats", {"output": "/tmp/x"}), ("flows", {"file": "/tmp/flows"})]:
        e = err(call(path, method, params), "bad_request")
        assert "unknown parameter" in e["message"], e
    for method in ["dump", "save", "load", "config.write", "config.read", "pcap", "exec"]:
        e = err(call(path, method, {"path": evil}), "bad_request")
        assert "unknown method" in e["message"], e
    assert sorted(x["address"] for x in ok(call(path, "servers"))["servers"]) == servers
    print("requests naming files: refused (unknown parameter / unknown method); servers unchanged")

    # A line without a newline that never ends: too_large after 64 KiB, closed.
    s = connect(path)
    try:
        s.sendall(b'{"method":"status","x":"' + b"y" * 70000)
    except (BrokenPipeError, ConnectionResetError):
        pass
    data = wait_eof(s, "endless line")
    r = json.loads(data.split(b"\n")[0])
    assert err(r, "too_large"), r
    s.close()
    print("endless line:", r["error"]["message"])

    # The last request without its newline, then end of input: answered.
    s = connect(path)
    s.sendall(b'{"id": 5, "method": "status"}')
    s.shutdown(socket.SHUT_WR)
    r = read_reply(s)
    assert r and r["ok"] and r["id"] == 5, r
    s.close()
    print("request without newline before end of input: answered")

    # 32 idle connections at once: the 33rd is told busy; others resume once
    # the idle ones go.
    idle = [connect(path) for _ in range(32)]
    time.sleep(0.3)
    s = connect(path)
    print("33rd connection:", err(read_reply(s), "busy")["message"])
    s.close()
    for c in idle:
        c.close()
    # Until the daemon has seen the idle ones close, a new client is still
    # told busy and closed, which may reach us as a broken pipe: retry.
    r = None
    for _ in range(50):
        try:
            r = call(path, "status")
        except (BrokenPipeError, ConnectionResetError):
            r = None
        if r and r["ok"]:
            break
        time.sleep(0.1)
    assert r and r["ok"], r

    # Three clients the daemon must drop, all at once (each within 3x the idle
    # timeout): one that never reads its replies, one that sends half a line
    # and stops, one that sends blank lines to look alive.
    hog = connect(path)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    hog.setblocking(False)
    sent, limit = 0, 1 << 20  # the daemon stops reading after its buffers: ~100 KiB
    req = b'{"method":"stats"}\n' * 64
    stalled = None
    while sent < limit:
        try:
            sent += hog.send(req)
        except BlockingIOError:
            # The daemon has stopped reading: wait a moment to be sure it is not
            # just slow, then try again.
            time.sleep(0.5)
            try:
                sent += hog.send(req)
            except BlockingIOError:
                stalled = sent
                break
    assert stalled is not None, f"sent {sent} bytes of requests without reading a reply: no back-pressure"
    print(f"client that never reads: the daemon stopped reading it after {stalled} bytes of requests")
    half = connect(path)
    half.sendall(b'{"method": "sta')
    blank = connect(path)
    stop = threading.Event()

    def keep_blank():
        while not stop.is_set():
            try:
                blank.send(b"\n")
            except OSError:
                return
            stop.wait(1)
    threading.Thread(target=keep_blank, daemon=True).start()
    # Meanwhile others are served.
    st = ok(call(path, "stats"))
    assert st["totals"]["rx_packets"] > 0, st
    results = {}

    def watch(name, fn, sock):
        try:
            fn(sock, name)
            results[name] = "closed"
        except AssertionError as e:
            results[name] = str(e)
    ts = [threading.Thread(target=watch, args=("hog", wait_closed_by_server, hog)),
          threading.Thread(target=watch, args=("half line", wait_eof, half)),
          threading.Thread(target=watch, args=("blank lines", wait_eof, blank))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    stop.set()
    for c in (hog, half, blank):
        c.close()
    assert all(v == "closed" for v in results.values()), results
    print("dropped by the daemon: a client that never reads, half a line, blank-line keepalives")
    ok(call(path, "status"))


def cmd_reload(path, config, log, pid):
    good = open(config).read()

    def state():
        st = ok(call(path, "status"))
        stats = ok(call(path, "stats"))
        servers = sorted((x["address"], x["weight"], x["state"]) for x in ok(call(path, "servers"))["servers"])
        return {"generation": st["snapshot_generation"], "loaded_at": st["config_loaded_at"],
                "flows": stats["flows"], "totals": stats["totals"], "servers": servers}

    before = state()
    assert before["flows"] > 0, before

    def log_len():
        return os.path.getsize(log)

    def wait_log(start, needle):
        for _ in range(100):
            with open(log, errors="replace") as f:
                f.seek(start)
                text = f.read()
            if needle in text:
                return text
            time.sleep(0.1)
        raise AssertionError(f"log never said {needle!r}")

    bomb = ("anchors:\n  - &srv { address: 192.0.2.10 }\n  - &s [" + ", ".join(["*srv"] * 4096) +
            "]\n  - &g { name: g, servers: *s }\n")
    cases = [
        ("YAML syntax", lambda: good.replace("servers: [", "servers: [[", 1), ""),
        ("IPv6 appliance", lambda: good.replace("192.0.2.11", "2001:db8::11"),
         "server_groups[0].servers[1].address"),
        ("MAC as address", lambda: good.replace("192.0.2.11", "02:00:00:00:00:11"),
         "server_groups[0].servers[1].address"),
        ("duplicate server", lambda: good.replace("192.0.2.11", "192.0.2.10"),
         "server_groups[0].servers[1].address"),
        ("unknown key", lambda: good.replace("tcp_idle_timeout", "tcp_idle_timout"),
         "server_groups[0].tcp_idle_timout"),
        ("out of range", lambda: good.replace("other_idle_timeout: 6000", "other_idle_timeout: 99999999999"),
         "server_groups[0].other_idle_timeout"),
        ("not UTF-8", lambda: good.replace("name: firewalls", 'name: "fire\xff"'), "server_groups[0].name"),
        ("alias bomb", lambda: bomb + good.replace("server_groups:", "server_groups: [" +
                                                   ", ".join(["*g"] * 1000) + "]\nx:", 1), "server_groups"),
        ("missing file", None, ""),
        ("a directory", "dir", ""),
    ]
    via_api = True
    for name, make, key in cases:
        if make is None:
            os.unlink(config)
        elif make == "dir":
            os.mkdir(config)
        else:
            with open(config, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(make().replace("\xff", "\udcff"))
        start = log_len()
        if via_api:
            e = err(call(path, "reload"), "invalid_config")
            paths = [d["path"] for d in e["details"]]
            assert key in paths, (name, e)
            detail = next(d["message"] for d in e["details"] if d["path"] == key)
            how = "API"
        else:
            os.kill(pid, signal.SIGHUP)
            detail = None
            how = "SIGHUP"
        text = wait_log(start, "rejected; keeping the running config")
        if key:
            assert key + ":" in text, (name, text)
        # One error line for the whole refusal, every error in it (issue 18 item 8).
        errs = [l for l in text.splitlines() if "[error]" in l]
        assert len(errs) == 1 and (not key or key + ":" in errs[0]), (name, errs)
        after = state()
        assert after == before, (name, before, after)
        lines = [l.strip() for l in text.splitlines() if l.strip()]
        msg = detail or next((l for l in lines if key and l.startswith(key + ":")), lines[-1])
        print(f"bad reload ({how}, {name}): nothing changed; {key or 'file'}: {msg[:110]}")
        if make == "dir":
            os.rmdir(config)
        via_api = not via_api
    # The same cases once more the other way round (SIGHUP for those the API did).
    for name, make, key in cases[:2]:
        with open(config, "w") as f:
            f.write(make())
        start = log_len()
        os.kill(pid, signal.SIGHUP)
        text = wait_log(start, "rejected; keeping the running config")
        assert not key or key + ":" in text, (name, text)
        assert state() == before
    # A good file still reloads: the checks above could see a change.
    start_good = log_len()
    with open(config, "w") as f:
        f.write(good.replace("{ address: 192.0.2.12 }", "{ address: 192.0.2.12, weight: 50 }"))
    r = ok(call(path, "reload"))
    # The log says what the reload changed.
    wait_log(start_good, "192.0.2.12 re-weighted in firewalls (100 -> 50)")
    after = state()
    assert after["generation"] > before["generation"] and ("192.0.2.12", 50, "active") in after["servers"], after
    assert after["totals"]["rx_packets"] == before["totals"]["rx_packets"] and after["flows"] == before["flows"]
    print(f"good reload: generation {before['generation']} -> {r['snapshot_generation']}, weight 50 applied, "
          f"flows {after['flows']} and counters kept")
    with open(config, "w") as f:
        f.write(good)


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "connect":
        cmd_connect(args[0])
    elif cmd == "wait-rx":
        cmd_wait_rx(args[0], int(args[1]))
    elif cmd == "clients":
        cmd_clients(args[0], args[1])
    elif cmd == "reload":
        cmd_reload(args[0], args[1], args[2], int(args[3]))
    else:
        sys.exit(__doc__)
