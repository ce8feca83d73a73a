#!/usr/bin/python3
"""Warm start with peers that do not answer, and a peers entry that is the
node itself (issue 24 items 1 and 2; run by run_fleet_warm.sh). Everything
on 127.0.0.1.

1. `gwlbd --check-config` on a config whose sync_listen is a wildcard
   (0.0.0.0:P) and whose peers list 127.0.0.1:P (one list for every node):
   valid, with a warning naming fleet.peers[0] as this node.
2. A starts with 200 flows. B starts with peers, in this order: a blackhole
   (its accept queue is full: SYNs dropped), a silent peer (the kernel
   accepts, nobody answers), a port forward to B's own sync port (the entry
   is B itself), and A; warm_start_timeout 60 s, per peer 0.5 s to connect
   and 1 s of silence. B must leave each after its own deadline, recognise
   the forward as itself (API `this_node`, the log names the entry), and get
   A's whole table long before the 60 s: state done, from A, 200 flows.
"""
import argparse
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet_sync_e2e import Node, fail, wait_for  # noqa: E402

SECRET = "00112233445566778899aabbccddeeff"


def free_udp_tcp():
    """A loopback port free for TCP and UDP (gwlbd's sync binds both)."""
    while True:
        t = socket.socket()
        t.bind(("127.0.0.1", 0))
        p = t.getsockname()[1]
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            u.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            u.close()
            t.close()
        return p


class Blackhole:
    """A listener whose accept queue (backlog 0) is full: the kernel drops
    every later SYN, so a connect to it hangs."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0)
        self.port = self.sock.getsockname()[1]
        self.fillers = []
        for _ in range(2):
            c = socket.socket()
            c.setblocking(False)
            c.connect_ex(("127.0.0.1", self.port))
            self.fillers.append(c)
        time.sleep(0.05)


class Silent:
    """A listener nobody accepts on: connects succeed, nothing is answered."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]


class Forward:
    """A port forward (TCP and UDP) from its own port to `target` on 127.0.0.1."""

    def __init__(self, target):
        self.target = target
        self.port = free_udp_tcp()
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", self.port))
        self.tcp.listen(8)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        threading.Thread(target=self.tcp_loop, daemon=True).start()
        threading.Thread(target=self.udp_loop, daemon=True).start()

    def tcp_loop(self):
        while True:
            try:
                a, _ = self.tcp.accept()
            except OSError:
                return
            b = socket.create_connection(("127.0.0.1", self.target))
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self.pump, args=(x, y), daemon=True).start()

    @staticmethod
    def pump(x, y):
        try:
            while True:
                d = x.recv(65536)
                if not d:
                    break
                y.sendall(d)
        except OSError:
            pass
        for s in (x, y):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def udp_loop(self):
        while True:
            try:
                d, _ = self.udp.recvfrom(65536)
                self.udp.sendto(d, ("127.0.0.1", self.target))
            except OSError:
                return


def config(a, name, rx, listen, peers, extra=""):
    return f"""node: {{ underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }}
dataplane: {{ workers: 1, mbufs: 4096, flow_table_size: 4096 }}
control: {{ socket: {a.work}/{name}.sock }}
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--file-prefix", "{a.prefix}{name}{a.tag}", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap={rx},tx_pcap={a.work}/{name}-out.pcap"]
server_groups:
  - name: fw
    other_idle_timeout: 6000
    servers: [ {{ address: 10.0.0.1 }}, {{ address: 10.0.0.2 }}, {{ address: 10.0.0.3 }}, {{ address: 10.0.0.4 }} ]
fleet: {{ node_name: gw-{name}, secret: {SECRET}, sync_listen: "{listen}",
         peers: [{", ".join(f'"{p}"' for p in peers)}]{extra} }}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gwlbd", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--flows", type=int, required=True)
    a = ap.parse_args()
    port_a, port_b, port_c = free_udp_tcp(), free_udp_tcp(), free_udp_tcp()

    # 1. --check-config names the entry that is this node (no socket is bound).
    with open(f"{a.work}/c.yaml", "w") as f:
        f.write(config(a, "c", f"{a.work}/empty.pcap", f"0.0.0.0:{port_c}",
                       [f"127.0.0.1:{port_c}", f"127.0.0.1:{port_a}"]))
    r = subprocess.run([a.gwlbd, "--check-config", f"{a.work}/c.yaml"], capture_output=True, text=True)
    want = (f"warning: fleet.peers[0]: '127.0.0.1:{port_c}' is this node (fleet.sync_listen "
            f"0.0.0.0:{port_c} takes this loopback address too); gwlbd skips it")
    if r.returncode != 0 or want not in r.stderr:
        fail(f"--check-config: exit {r.returncode}, stderr {r.stderr!r}; wanted {want!r}")
    if "fleet.peers[1]" in r.stderr:
        fail(f"--check-config named another node's entry: {r.stderr!r}")
    print(f"--check-config: {want}")

    # 2. B's warm start past a blackhole, a silent peer and itself, to A.
    hole, silent, fwd = Blackhole(), Silent(), Forward(port_b)
    peers_b = [f"127.0.0.1:{p}" for p in (hole.port, silent.port, fwd.port, port_a)]
    with open(f"{a.work}/a.yaml", "w") as f:
        f.write(config(a, "a", f"{a.work}/flows.pcap", f"127.0.0.1:{port_a}", [f"127.0.0.1:{port_b}"]))
    with open(f"{a.work}/b.yaml", "w") as f:
        f.write(config(a, "b", f"{a.work}/empty.pcap", f"127.0.0.1:{port_b}", peers_b,
                       ",\n         warm_start_timeout: 60s, warm_start_connect_timeout: 500ms,"
                       " warm_start_idle_timeout: 1s"))
    A, B = Node(a.gwlbd, a.work, "a"), Node(a.gwlbd, a.work, "b")
    try:
        A.start()
        wait_for(f"A's {a.flows} flows", lambda: A.count() == a.flows)
        B.start()
        s = wait_for("B's warm start", lambda: B.sync()["warm_start"]["done"] and B.sync(), 90)
        w = s["warm_start"]
        if w["state"] != "done" or w["peer"] != f"127.0.0.1:{port_a}" or w["flows_received"] != a.flows:
            fail(f"B's warm start: {w}")
        errors = [p.get("warm_start_error") for p in s["peers"]]
        checks = [(0, "no connection within fleet.warm_start_connect_timeout (0.5 s)"),
                  (1, "no answer within fleet.warm_start_idle_timeout (1 s)")]
        for i, text in checks:
            if not errors[i] or text not in errors[i]:
                fail(f"peers[{i}] ({peers_b[i]}): warm_start_error {errors[i]!r}, wanted {text!r}")
        me = s["peers"][2]
        # Found out by its warm-start request or by its keepalives, whichever came first.
        if me.get("this_node") is not True or "this node's own" not in (me.get("this_node_why") or ""):
            fail(f"the forward to B itself: {me}")
        if any(p.get("this_node") for i, p in enumerate(s["peers"]) if i != 2):
            fail(f"another entry taken for B itself: {s['peers']}")
        if B.count() != a.flows:
            fail(f"B holds {B.count()} flows after its warm start, A {a.flows}")
        log = open(f"{a.work}/b.log").read()
        line = f"fleet.peers[2] 127.0.0.1:{fwd.port} is this node"
        if line not in log:
            fail(f"B's log does not say {line!r}")
        print(f"B: warm start done from A ({w['flows_received']} flows) in {w['elapsed_s']:.2f} s "
              f"(timeout 60 s), past: {errors[0]}; {errors[1]}; {peers_b[2]} is this node")
        A.stop()
        B.stop()
        print("both gwlbd stopped cleanly")
    finally:
        for n in (A, B):
            if n.proc and n.proc.poll() is None:
                n.proc.kill()
                n.proc.wait()


if __name__ == "__main__":
    main()
