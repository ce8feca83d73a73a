"""Shared by the gwlbd end-to-end checks (health_e2e.py, regions_e2e.py):
TCP health-check listeners that accept and close, one-shot control API
calls over gwlbd's Unix socket, and a scrape of /metrics parsed to samples."""
import json
import re
import urllib.request
import socket
import threading


class Listener:
    """Accepts (and closes) TCP connections on ADDR:PORT while started:
    what a TCP health check of an appliance at ADDR sees as healthy."""

    def __init__(self, addr, port):
        self.addr, self.port, self.sock, self.stop = addr, port, None, False

    def start(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((self.addr, self.port))
        self.sock.listen(128)
        self.stop = False
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        s = self.sock
        while not self.stop:
            try:
                c, _ = s.accept()
                c.close()
            except OSError:
                return

    def close(self):
        self.stop = True
        self.sock.close()


def api_call(sock_path, method, **params):
    """The whole reply object ({ok, result} or {ok, error}) of one request."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall(json.dumps({"method": method, "params": params}).encode() + b"\n")
    r = json.loads(s.makefile().readline())
    s.close()
    return r


def flow_count(call, **filters):
    """The `flows` count over the whole table: gwlbd counts a bounded stretch
    per request, so the pages are added up until next_cursor is null. `call`
    (method, **params) returns a reply's result."""
    total, cursor = 0, None
    while True:
        r = call("flows", count=True, **filters, **({"cursor": cursor} if cursor else {}))
        total += r["count"]
        cursor = r.get("next_cursor")
        if not cursor:
            return total


def scrape(addr):
    """The Prometheus text gwlbd serves on ADDR (host:port) at /metrics."""
    return urllib.request.urlopen(f"http://{addr}/metrics", timeout=10).read().decode()


def samples(body):
    """{(name, frozenset(labels)): value} of every sample line."""
    out = {}
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        assert m, line
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out[(m.group(1), labels)] = float(m.group(4))
    return out
