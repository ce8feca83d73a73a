"""Shared by the gwlbd end-to-end checks (health_e2e.py, regions_e2e.py):
TCP health-check listeners that accept and close, and one-shot control API
calls over gwlbd's Unix socket."""
import json
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
