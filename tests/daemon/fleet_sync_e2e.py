#!/usr/bin/python3
"""Flow state sync between two gwlbd (run by run_fleet_sync.sh, which wrote
WORK/a.yaml and WORK/b.yaml: A replays a capture of new UDP flows, B has no
traffic; each lists the other as its peer).

1. B starts alone: no peer answers, its warm start times out and it goes on.
2. A starts and creates the flows. B must hold every one of them with A's
   appliance and cookie. Appliance 10.0.0.1 is then drained on B only (it
   stays draining, B holding flows on it), so B's own Maglev table no longer
   picks it: B keeps A's flows on 10.0.0.1 all the same (explain on B:
   today's choice differs, the entry keeps it).
   Then 10.0.0.3 is drained on A with a 1 s timeout (rebalance): A moves its
   flows off it (the control thread's sweep, the flows are idle) and B must
   apply the same moves ("changed" records): same appliance, same cookie,
   the move recorded, on both.
3. A datagram signed with another secret is counted as auth_failures on B and
   installs nothing; a correctly signed datagram (built here, as a peer would)
   installs its flow once, and the same bytes sent again are counted as
   replayed and change nothing; one 60 s old is counted as stale.
4. B restarts: its warm start gets A's whole table (count equal, same
   appliances) before it reports warm_start done.
5. Config drift: both report the other's config as the same; B reloads a file
   with another idle timeout and A names the section `timeouts` (API and
   gwlb_fleet_config_differs) until B reloads the original.
Every wait polls with a generous deadline (CI runs on 2 shared cores, also
under ASan)."""
import argparse
import hashlib
import hmac
import json
import socket
import struct
import subprocess
import sys
import os
import time
import urllib.request

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from checklib import api_call, flow_count  # noqa: E402

M64 = (1 << 64) - 1


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def wait_for(what, cond, timeout=60.0):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        try:
            last = cond()
            if last:
                return last
        except (OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.2)
    fail(f"timed out waiting for {what} (last: {last})")


class Node:
    def __init__(self, gwlbd, work, name):
        self.gwlbd, self.work, self.name = gwlbd, work, name
        self.sock = f"{work}/{name}.sock"
        self.proc = None

    def start(self):
        import os
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        log = open(f"{self.work}/{self.name}.log", "a")
        self.proc = subprocess.Popen([self.gwlbd, "--config", f"{self.work}/{self.name}.yaml"],
                                     stdout=log, stderr=subprocess.STDOUT)
        wait_for(f"gwlbd {self.name}'s control socket",
                 lambda: os.path.exists(self.sock) or self.proc.poll() is not None)
        if self.proc.poll() is not None:
            fail(f"gwlbd {self.name} exited with {self.proc.returncode} at start")

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(timeout=60)
        if rc != 0:
            fail(f"gwlbd {self.name} exited with {rc} on SIGTERM")

    def api(self, method, **params):
        r = api_call(self.sock, method, **params)
        if not r.get("ok"):
            fail(f"{self.name}: {method} {params}: {r}")
        return r["result"]

    def flows(self):
        out, cursor = {}, None
        while True:
            p = {"limit": 1000}
            if cursor:
                p["cursor"] = cursor
            r = self.api("flows", **p)
            for f in r["flows"]:
                if f["kind"] == "flow":
                    out[(f["src"], f["sport"], f["dst"], f["dport"], f["proto"])] = f
            cursor = r["next_cursor"]
            if not cursor:
                return out

    def count(self):
        return flow_count(self.api)

    def sync(self):
        return self.api("fleet_sync")


# ---- a peer's datagram, built as common/sync_codec.h lays it out ----------

def flow_hash(key, k0, k1):
    """common/flow_key.h flowHash over the 40-byte key, keyed with (k0, k1)."""
    def final(x):
        x ^= x >> 30
        x = (x * 0xbf58476d1ce4e5b9) & M64
        x ^= x >> 27
        x = (x * 0x94d049bb133111eb) & M64
        return x ^ (x >> 31)
    h = 0x9e3779b97f4a7c15 ^ k0 ^ (40 << 32)
    for (w,) in struct.iter_unpack("<Q", key):
        h = ((h ^ w) * 0xff51afd7ed558ccd) & M64
        h ^= h >> 32
    h = final(h ^ k1)
    return (h ^ (h >> 32)) & 0xFFFFFFFF


def v4(a):
    return socket.inet_aton(a)


def datagram(secret_hex, seq, records, time_ms=None, node=0x5EED, epoch=0xABCDEF):
    key = hmac.new(bytes.fromhex(secret_hex), b"gwlb flow sync v1", hashlib.sha256).digest()
    t = int(time.time() * 1000) if time_ms is None else time_ms
    msg = struct.pack("<IBBHQQQQQ", 0x53464C47, 1, 1, len(records), node, epoch, seq, t, 0)
    msg += b"".join(records)
    return msg + hmac.new(key, msg, hashlib.sha256).digest()[:16]


def record(secret_hex, client, cport, server, sport, appliance, cookie=0x1234ABCD):
    k0, k1 = int(secret_hex[:16], 16), int(secret_hex[16:], 16)
    # Canonical: the smaller (address, port) first; UDP, IPv4, listener 0, a flow.
    a, b = sorted([(v4(client), cport), (v4(server), sport)])
    key = a[0].ljust(16, b"\0") + b[0].ljust(16, b"\0") + struct.pack("<HHBBBB", a[1], b[1], 17, 4, 0, 0)
    first_dir = 0 if a[0] == v4(client) else 1
    return key + struct.pack("<IIIIIHBBBBIIH", flow_hash(key, k0, k1),
                             struct.unpack("!I", v4(appliance))[0], cookie, 0, 0, 0, 0, first_dir,
                             1, 0, 100, 200, 0)


def send(port, data):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(data, ("127.0.0.1", port))
    s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gwlbd", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--secret", required=True)
    ap.add_argument("--sync-b", type=int, required=True)
    ap.add_argument("--metrics-a", type=int, required=True)
    ap.add_argument("--flows", type=int, required=True)
    a = ap.parse_args()
    A, B = Node(a.gwlbd, a.work, "a"), Node(a.gwlbd, a.work, "b")
    try:
        run(a, A, B)
    finally:
        for n in (A, B):
            if n.proc and n.proc.poll() is None:
                n.proc.kill()
                n.proc.wait()


def run(a, A, B):
    drained = "10.0.0.1"
    # 1. B alone: nobody to ask; warm start times out (3 s) and B goes on.
    B.start()
    w = wait_for("B's warm start to give up", lambda: B.sync()["warm_start"]["done"] and B.sync())
    if w["warm_start"]["state"] != "timed_out":
        fail(f"B's warm start with no peer up: {w['warm_start']}")
    print(f"B: warm start {w['warm_start']['state']} after {w['warm_start']['elapsed_s']:.1f} s")

    # 2. A creates the flows; B gets them all, with A's appliance and cookie.
    A.start()
    wait_for(f"A's {a.flows} flows", lambda: A.count() == a.flows)
    wait_for(f"B to hold A's {a.flows} flows", lambda: B.count() == a.flows)
    # Drained on B only once B holds flows on it: drained earlier, with no
    # flow, its drain would be over at once, and B would move the flows A
    # sends it off the drained appliance (and tell A of the moves).
    B.api("server.drain", address=drained)
    print(f"{drained} drained on B (it stays draining: B holds flows on it)")
    fa, fb = A.flows(), B.flows()
    if set(fa) != set(fb):
        fail(f"flows differ: only on A {len(set(fa) - set(fb))}, only on B {len(set(fb) - set(fa))}")
    differ = [k for k in fa if (fa[k]["appliance"], fa[k]["cookie"]) != (fb[k]["appliance"], fb[k]["cookie"])]
    if differ:
        fail(f"{len(differ)} flows with another appliance or cookie on B, e.g. {fa[differ[0]]} vs {fb[differ[0]]}")
    on_drained = [k for k in fa if fa[k]["appliance"] == drained]
    if not on_drained:
        fail(f"no flow on {drained}: the test needs some")
    for k in on_drained:
        e = B.api("explain", src=k[0], dst=k[2], proto="udp", sport=k[1], dport=k[3])
        if e["maglev"]["appliance"] == drained or e.get("appliance") != drained:
            fail(f"explain on B for {k}: {e}")
    sa = A.sync()["peers"][0]
    sb = B.sync()["peers"][0]
    if sa["flows_sent"] < a.flows or sb["flows_received"] < a.flows or sb["installed"] != a.flows:
        fail(f"counters: A {sa}, B {sb}")
    if not sa["reachable"] or not sb["reachable"]:
        fail(f"peers not reachable: A {sa}, B {sb}")
    print(f"B holds A's {a.flows} flows with the same appliance and cookie; {len(on_drained)} on "
          f"{drained}, which B's own table no longer picks")
    # Their views differ on the drained appliance: each lists it (health views every second).
    def disagree(node):
        d = node.sync()["peers"][0]["health_disagreements"]
        return d if [x["appliance"] for x in d] == [drained] else None
    da = wait_for("A to list its disagreement with B", lambda: disagree(A), 15)
    db = wait_for("B to list its disagreement with A", lambda: disagree(B), 15)
    if not (da[0]["new_flows_here"] and not da[0]["new_flows_there"] and da[0]["there"] == "draining"):
        fail(f"A's view of the disagreement: {da}")
    if not (db[0]["new_flows_there"] and not db[0]["new_flows_here"] and db[0]["here"] == "draining"):
        fail(f"B's view of the disagreement: {db}")
    print(f"health views: each node lists {drained} (new flows on A, draining on B): A {da[0]}")
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{a.metrics_a}/metrics", timeout=10).read().decode()
    if f'gwlb_fleet_health_disagreements{{peer="127.0.0.1:{a.sync_b}"}} 1' not in metrics:
        fail("A's metrics lack gwlb_fleet_health_disagreements 1 for B")
    peer_b = f"127.0.0.1:{a.sync_b}"
    line = f'gwlb_fleet_sync_flows_sent_total{{peer="{peer_b}"}}'
    if line not in metrics:
        fail(f"A's metrics lack {line}")

    # 2b. A move on A (drain timeout, rebalance) reaches B as a changed record.
    moving = "10.0.0.3"
    on_moving = [k for k in fa if fa[k]["appliance"] == moving]
    if not on_moving:
        fail(f"no flow on {moving}: the test needs some")
    A.api("server.drain", address=moving, timeout_s=1)

    def moved_everywhere():
        fa2, fb2 = A.flows(), B.flows()
        if any(fa2[k]["appliance"] == moving for k in on_moving):
            return False
        return all((fb2[k]["appliance"], fb2[k]["cookie"]) == (fa2[k]["appliance"], fa2[k]["cookie"])
                   and fb2[k]["moved"] and fb2[k]["moved"]["from"] == moving for k in on_moving)
    wait_for(f"B to apply A's moves off {moving}", moved_everywhere)
    sb = B.sync()["peers"][0]
    if sb["moved"] != len(on_moving):
        fail(f"B counted {sb['moved']} moves, A moved {len(on_moving)} flows: {sb}")
    fa = A.flows()
    print(f"A moved {len(on_moving)} flows off {moving} (drain timeout, rebalance); B applied the "
          f"same moves (same appliance and cookie, move recorded)")

    # 3. Forged, replayed and stale datagrams change nothing; a good one installs once.
    before = B.sync()["peers"][0]
    forged = datagram("ff" * 16, 1, [record(a.secret, "198.51.100.1", 5555, "203.0.113.77", 53, "10.0.0.2")])
    send(a.sync_b, forged)
    wait_for("auth_failures on B", lambda: B.sync()["peers"][0]["auth_failures"] == before["auth_failures"] + 1)
    if B.count() != a.flows:
        fail("a forged datagram changed B's table")
    good = datagram(a.secret, 1, [record(a.secret, "198.51.100.2", 5556, "203.0.113.77", 53, "10.0.0.2")])
    send(a.sync_b, good)
    wait_for("the signed record on B", lambda: B.count() == a.flows + 1)
    send(a.sync_b, good)
    wait_for("replayed on B", lambda: B.sync()["peers"][0]["replayed"] == before["replayed"] + 1)
    old = datagram(a.secret, 2, [record(a.secret, "198.51.100.3", 5557, "203.0.113.77", 53, "10.0.0.2")],
                   time_ms=int(time.time() * 1000) - 60_000)
    send(a.sync_b, old)
    wait_for("stale on B", lambda: B.sync()["peers"][0]["stale"] == before["stale"] + 1)
    # Authenticated records that must not be installed: an appliance B does
    # not have, and a flow hash B's config does not give (another config).
    stranger = record(a.secret, "198.51.100.4", 5558, "203.0.113.77", 53, "10.9.9.9")
    bad_hash = bytearray(record(a.secret, "198.51.100.5", 5559, "203.0.113.77", 53, "10.0.0.2"))
    bad_hash[40] ^= 1
    send(a.sync_b, datagram(a.secret, 3, [stranger, bytes(bad_hash)]))
    wait_for("unknown_appliance and bad_records on B",
             lambda: B.sync()["peers"][0]["unknown_appliance"] == before["unknown_appliance"] + 1
             and B.sync()["peers"][0]["bad_records"] == before["bad_records"] + 1)
    time.sleep(0.5)  # anything late would have landed by now
    if B.count() != a.flows + 1:
        fail(f"a replayed or stale datagram changed B's table: {B.count()} flows")
    got = B.flows().get(("198.51.100.2", 5556, "203.0.113.77", 53, "udp"))
    if not got or got["appliance"] != "10.0.0.2" or got["cookie"] != "0x1234abcd":
        fail(f"the signed record's flow on B: {got}")
    print("forged -> auth_failures, replayed -> replayed, 60 s old -> stale, unknown appliance -> "
          "unknown_appliance, wrong flow hash -> bad_records; none changed B's table")

    # 4. Warm start: B restarted gets A's table before it says warm start done.
    B.stop()
    B.start()
    w = wait_for("B's warm start", lambda: B.sync()["warm_start"]["done"] and B.sync())["warm_start"]
    n = B.count()
    if w["state"] != "done" or w["flows_received"] != a.flows or w["peer_total"] != a.flows or n != A.count():
        fail(f"warm start: {w}; B has {n} flows, A {A.count()}")
    fb = B.flows()
    if {k: (f["appliance"], f["cookie"]) for k, f in fb.items()} != \
       {k: (f["appliance"], f["cookie"]) for k, f in fa.items()}:
        fail("after warm start B's flows differ from A's")
    print(f"warm start: B got A's {n} flows (same appliances and cookies) in {w['elapsed_s']:.3f} s")

    # 5. Config drift (issue 24 item 7): the same config on both (drains are
    # not config), then B reloads a file with another idle timeout: A names
    # the section (API and metric) until B reloads the original again.
    def config_of(node, state):
        c = node.sync()["peers"][0]["config"]
        return c if c["state"] == state else None
    wait_for("A to find B's config the same", lambda: config_of(A, "same"), 15)
    wait_for("B to find A's config the same", lambda: config_of(B, "same"), 15)
    b_yaml = os.path.join(a.work, "b.yaml")
    original = open(b_yaml).read()
    with open(b_yaml, "w") as f:
        f.write(original.replace("other_idle_timeout: 6000", "other_idle_timeout: 5000"))
    B.api("reload")
    c = wait_for("A to find B's timeouts differ", lambda: config_of(A, "differs"), 15)
    if c["differing_sections"] != ["timeouts"]:
        fail(f"A's view of B's config: {c}")
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{a.metrics_a}/metrics", timeout=10).read().decode()
    for section, v in (("timeouts", 1), ("weights", 0)):
        line = f'gwlb_fleet_config_differs{{peer="{peer_b}",section="{section}"}} {v}'
        if line not in metrics:
            fail(f"A's metrics lack {line}")
    with open(b_yaml, "w") as f:
        f.write(original)
    B.api("reload")
    wait_for("A to find B's config the same again", lambda: config_of(A, "same"), 15)
    print("config drift: B reloaded another other_idle_timeout -> A reports section timeouts "
          "(API, gwlb_fleet_config_differs), the same again after B reloaded the original")
    A.stop()
    B.stop()
    print("both gwlbd stopped cleanly")


if __name__ == "__main__":
    main()
