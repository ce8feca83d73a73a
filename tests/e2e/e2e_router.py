"""e2e_router_fragments: how a Linux router's ECMP spreads IP fragments, run by
e2e.py on namespaces of its own (no gwlbd; docs/fleet.md, "Fragments across
nodes").

A fleet of gateways loses no fragment only when the router sends all the
fragments of a datagram to one gateway: the fragment entry a gateway keeps for
the later fragments (they carry no ports) is made by the first fragment and is
not synced. This checks the router setting docs/fleet.md calls safe, on the real
kernel: a router namespace forwards UDP from a source namespace to
203.0.113.9 over an ECMP route of 3 next hops (veths into a sink namespace that
captures what each next hop carries). The source writes the frames itself on a
packet socket (a socket's own hash would otherwise travel with the packet
through the veth), 64 datagrams of 100 bytes and 64 of 3,000 bytes (3
fragments each), each from its own source port, over IPv4 and IPv6:

  - fib_multipath_hash_policy 1 (the lab's, 5-tuple): the small datagrams
    spread over the next hops (the ports are hashed), while every fragment of
    every large datagram, first fragments included, takes one and the same
    next hop: no fragment is hashed with ports, so a datagram's fragments
    never part;
  - policy 0 (addresses): everything between the two hosts takes one next hop.

gwlb-replay's `--ecmp-policy l4-linux` models this policy 1 behaviour
(tests/replay/fleet_fragments.py).
"""
import ipaddress
import json
import os
import subprocess
import sys
import time

from netpeer import inet_sum

HOPS = 3
DATAGRAMS = 64
SRC4, DST4 = "10.88.0.1", "203.0.113.9"
SRC6, DST6 = "fd88::1", "fd88:9::9"
SRC_MAC, RTR_MAC = "02:88:00:00:00:01", "02:88:00:00:00:fe"

# Runs in the sink namespace: captures on each next hop's interface until
# stdin closes, then prints {interface: [(datagram id, offset, sport or -1)]}.
CAPTURE = r"""
import json, select, socket, struct, sys
devs = sys.argv[1:]
socks = {}
for d in devs:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((d, 0))
    s.setblocking(False)
    socks[s] = d
seen = {d: [] for d in devs}
print("ready", flush=True)
while True:
    r, _, _ = select.select(list(socks) + [sys.stdin], [], [], 5)
    if sys.stdin in r:
        break
    for s in r:
        while True:
            try:
                b = s.recv(65535)
            except BlockingIOError:
                break
            et = struct.unpack("!H", b[12:14])[0]
            ip = b[14:]
            if et == 0x0800 and ip[9] == 17:
                fo = struct.unpack("!H", ip[6:8])[0]
                off = (fo & 0x1FFF) * 8
                ident = struct.unpack("!H", ip[4:6])[0]
                l4 = ip[(ip[0] & 15) * 4:]
            elif et == 0x86DD and ip[6] in (17, 44):
                off, ident, l4 = 0, -1, ip[40:]
                if ip[6] == 44:
                    fo = struct.unpack("!H", ip[42:44])[0]
                    off, ident, l4 = fo & 0xFFF8, struct.unpack("!I", ip[44:48])[0], ip[48:]
            else:
                continue
            sport = struct.unpack("!H", l4[0:2])[0] if off == 0 else -1
            seen[socks[s]].append([ident, off, sport])
print(json.dumps(seen), flush=True)
"""


def mac_bytes(m):
    return bytes.fromhex(m.replace(":", ""))


def udp_datagram(src, dst, sport, dport, payload, ident):
    """The IP packets (fragments when longer than 1,500 bytes) of one UDP
    datagram, DF clear, each with its header."""
    v6 = ":" in dst
    s_b, d_b = ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed
    ulen = 8 + len(payload)
    pseudo = s_b + d_b + (ulen.to_bytes(4, "big") + b"\0\0\0\x11" if v6
                          else b"\0\x11" + ulen.to_bytes(2, "big"))
    hdr = sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + ulen.to_bytes(2, "big")
    data = hdr + ((inet_sum(pseudo + hdr + b"\0\0" + payload) or 0xffff).to_bytes(2, "big")) + payload
    if v6 and len(data) + 40 <= 1500:
        return [(6 << 28).to_bytes(4, "big") + len(data).to_bytes(2, "big") + b"\x11\x40" + s_b + d_b + data]
    if not v6 and len(data) + 20 <= 1500:
        h = bytes([0x45, 0]) + (20 + len(data)).to_bytes(2, "big") + ident.to_bytes(2, "big") + \
            b"\0\0\x40\x11\0\0" + s_b + d_b
        return [h[:10] + inet_sum(h).to_bytes(2, "big") + h[12:] + data]
    step = 1448 if v6 else 1480  # multiples of 8
    out = []
    for off in range(0, len(data), step):
        piece, more = data[off:off + step], off + step < len(data)
        if v6:
            out.append((6 << 28).to_bytes(4, "big") + (8 + len(piece)).to_bytes(2, "big") + b"\x2c\x40"
                       + s_b + d_b + b"\x11\0" + (off | more).to_bytes(2, "big")
                       + ident.to_bytes(4, "big") + piece)
        else:
            h = bytes([0x45, 0]) + (20 + len(piece)).to_bytes(2, "big") + ident.to_bytes(2, "big") + \
                ((off >> 3) | (0x2000 if more else 0)).to_bytes(2, "big") + b"\x40\x11\0\0" + s_b + d_b
            out.append(h[:10] + inet_sum(h).to_bytes(2, "big") + h[12:] + piece)
    return out


# Runs in the source namespace: writes the frames given as hex on stdin to dev.
SEND = r"""
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for line in sys.stdin:
    s.send(bytes.fromhex(line.strip()))
    time.sleep(0.0005)
"""


def test_router_fragments(args):
    prefix = os.environ.get("GWLB_E2E_PREFIX", "e2e") + "-rf"
    ns = {k: f"{prefix}-{k}" for k in ("src", "rtr", "sink")}
    py = "/usr/bin/python3"

    def run(cmd, check=True):
        r = subprocess.run(cmd, text=True, capture_output=True, timeout=30)
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr}")
        return r

    def nx(n, *cmd, check=True):
        return run(["ip", "netns", "exec", ns[n], *cmd], check)

    for n in ns.values():
        subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
    if subprocess.run(["ip", "netns", "add", ns["src"]], stderr=subprocess.DEVNULL).returncode != 0:
        print("SKIP: network namespaces cannot be created here")
        sys.exit(77)
    try:
        for k in ("rtr", "sink"):
            run(["ip", "netns", "add", ns[k]])
        run(["ip", "link", "add", "s0", "netns", ns["src"], "address", SRC_MAC, "type", "veth",
             "peer", "name", "r-src", "netns", ns["rtr"], "address", RTR_MAC])
        devs = [f"k{i}" for i in range(1, HOPS + 1)]
        for i, d in enumerate(devs, 1):
            run(["ip", "link", "add", f"r{i}", "netns", ns["rtr"], "type", "veth", "peer", "name", d,
                 "netns", ns["sink"], "address", f"02:88:00:00:01:{i:02x}"])
        nx("rtr", "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
           "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
           "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
        for n, dl in (("src", ["s0"]), ("rtr", ["r-src"] + [f"r{i}" for i in range(1, HOPS + 1)]),
                      ("sink", devs)):
            for d in dl:
                nx(n, "ip", "link", "set", d, "up")
        nx("rtr", "ip", "addr", "add", "10.88.0.254/24", "dev", "r-src")
        nx("rtr", "ip", "-6", "addr", "add", "fd88::fe/64", "dev", "r-src", "nodad")
        hops4, hops6 = [], []
        for i in range(1, HOPS + 1):
            nx("rtr", "ip", "addr", "add", f"10.88.{i}.254/24", "dev", f"r{i}")
            nx("rtr", "ip", "-6", "addr", "add", f"fd88:{i}::fe/64", "dev", f"r{i}", "nodad")
            mac = f"02:88:00:00:01:{i:02x}"
            nx("rtr", "ip", "neigh", "replace", f"10.88.{i}.1", "lladdr", mac, "dev", f"r{i}", "nud", "permanent")
            nx("rtr", "ip", "-6", "neigh", "replace", f"fd88:{i}::1", "lladdr", mac, "dev", f"r{i}",
               "nud", "permanent")
            hops4 += ["nexthop", "via", f"10.88.{i}.1", "dev", f"r{i}"]
            hops6 += ["nexthop", "via", f"fd88:{i}::1", "dev", f"r{i}"]
        nx("rtr", "ip", "neigh", "replace", SRC4, "lladdr", SRC_MAC, "dev", "r-src", "nud", "permanent")
        nx("rtr", "ip", "-6", "neigh", "replace", SRC6, "lladdr", SRC_MAC, "dev", "r-src", "nud", "permanent")
        nx("rtr", "ip", "route", "add", "203.0.113.0/24", *hops4)
        nx("rtr", "ip", "-6", "route", "add", "fd88:9::/64", *hops6)
        # Wait for IPv6 on the links (no DAD, but the routes need the links up).
        time.sleep(0.5)

        failures = []
        ident = 1
        for fam, src, dst in (("IPv4", SRC4, DST4), ("IPv6", SRC6, DST6)):
            knob = "net.ipv4.fib_multipath_hash_policy" if fam == "IPv4" else "net.ipv6.fib_multipath_hash_policy"
            for policy in (1, 0):
                nx("rtr", "sysctl", "-qw", f"{knob}={policy}")
                cap = subprocess.Popen(["ip", "netns", "exec", ns["sink"], py, "-c", CAPTURE, *devs],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                assert cap.stdout.readline().strip() == "ready", "capture did not start"
                frames, small, large = [], {}, {}
                et = b"\x08\x00" if fam == "IPv4" else b"\x86\xdd"
                for k in range(DATAGRAMS):
                    for size, book, base in ((100, small, 40000), (3000, large, 41000)):
                        pkts = udp_datagram(src, dst, base + k, 9, bytes([k]) * size, ident)
                        book[base + k] = ident
                        ident += 1
                        frames += [mac_bytes(RTR_MAC) + mac_bytes(SRC_MAC) + et + p for p in pkts]
                snd = subprocess.run(["ip", "netns", "exec", ns["src"], py, "-c", SEND, "s0"],
                                     input="".join(f.hex() + "\n" for f in frames), text=True,
                                     capture_output=True, timeout=60)
                assert snd.returncode == 0, snd.stderr
                time.sleep(0.3)
                out, _ = cap.communicate("", timeout=30)
                seen = json.loads(out.splitlines()[-1])
                hop_of = {}  # (datagram id, offset) -> next hop
                for d, pk in seen.items():
                    for ident_, off, sport in pk:
                        if ident_ == -1:  # an unfragmented IPv6 datagram: no ID on the wire
                            ident_ = small.get(sport, -1)
                        hop_of[(ident_, off)] = d
                small_hops = {hop_of.get((i, 0)) for i in small.values()}
                large_ids = set(large.values())
                per_datagram = {i: {h for (j, _), h in hop_of.items() if j == i} for i in large_ids}
                large_hops = set().union(*per_datagram.values())
                got = sum(1 for (j, off) in hop_of if j in large_ids)
                want = len(large_ids) * len(udp_datagram(src, dst, 1, 9, bytes(3000), 1))
                split = [i for i, h in per_datagram.items() if len(h) != 1]
                line = (f"{fam}, fib_multipath_hash_policy {policy}: small datagrams on "
                        f"{len(small_hops - {None})} of {HOPS} next hops; {got} of {want} fragments of "
                        f"{len(large_ids)} datagrams seen, on {len(large_hops)} next hop(s); "
                        f"{len(split)} datagrams split")
                print(line)
                if None in small_hops or got != want:
                    failures.append(line + ": packets missing at the sink (reassembled or dropped by the router?)")
                elif split:
                    failures.append(line + ": a datagram's fragments took different next hops")
                elif policy == 1 and len(small_hops) < 2:
                    failures.append(line + ": policy 1 did not spread flows by port")
                elif len(large_hops) != 1:
                    failures.append(line + ": the fragments of datagrams that differ only in their "
                                    "ports took different next hops (a first fragment hashed with ports)")
                elif policy == 0 and len(small_hops) != 1:
                    failures.append(line + ": policy 0 spread one host pair over next hops")
        assert not failures, "\n".join(failures)
    finally:
        for n in ns.values():
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
