#!/usr/bin/python3
"""Writes a sample capture of router traffic for gwlb-replay.

Both directions of every flow are present (client->server and the answers),
from two routers with their own MACs, one of them on VLAN 100, so that a
replay shows symmetric hashing and return-to-sender. Includes IPv4 and IPv6
TCP/UDP/ICMP, fragments and ICMP errors.

--dscp marks every fifth TCP flow (IPv4 and IPv6) with DSCP 46 (EF) and ECN
CE, so that a replay to IPv6 appliances shows the outer traffic class
carrying the inner DSCP and no ECN (docs/wire-format.md); the rest of the
capture is the same as without it.

usage: gen_sample_pcap.py OUT.pcap [--flows N] [--seed S] [--dscp]
"""
import argparse
import random

from scapy.all import (ICMP, IP, TCP, UDP, Dot1Q, Ether, ICMPv6EchoReply,
                       ICMPv6EchoRequest, ICMPv6PacketTooBig, IPv6, Raw, fragment,
                       wrpcap)
from scapy.layers.inet6 import IPv6ExtHdrFragment

# gwlbd and gwlb-replay take in only frames to the port's own MAC: configs that
# replay this capture use it as node.underlay_mac (examples/replay.yaml,
# tests/replay/*.yaml, the daemon tests).
GW_MAC = "02:00:00:00:00:01"
ROUTER_A = "02:00:00:00:0a:01"  # untagged
ROUTER_B = "02:00:00:00:0b:01"  # VLAN 100


def l2(router, vlan):
    e = Ether(src=router, dst=GW_MAC)
    return e / Dot1Q(vlan=vlan) if vlan else e


EF_CE = 0xB9  # DSCP 46 (EF) << 2 | ECN CE


def build(flows, seed, dscp=False):
    rnd = random.Random(seed)
    pkts = []
    t = 1_700_000_000.0
    for i in range(flows):
        router, vlan = (ROUTER_A, 0) if i % 2 == 0 else (ROUTER_B, 100)
        kind = i % 10
        tos = EF_CE if dscp and i % 5 == 0 else 0
        if kind in (0, 1, 2, 3, 4, 5):  # IPv4 TCP: handshake, data both ways, FIN
            c = "198.51.100.%d" % (1 + i % 200)
            s = "203.0.113.%d" % (1 + (i * 7) % 200)
            sp, dp = 20000 + i, rnd.choice([80, 443, 8080, 22])
            seq = [(c, s, sp, dp, "S", b""), (s, c, dp, sp, "SA", b""),
                   (c, s, sp, dp, "A", b""), (c, s, sp, dp, "PA", b"GET / HTTP/1.1\r\n\r\n"),
                   (s, c, dp, sp, "PA", bytes(rnd.getrandbits(8) for _ in range(rnd.randint(100, 1200)))),
                   (c, s, sp, dp, "FA", b""), (s, c, dp, sp, "FA", b""), (c, s, sp, dp, "A", b"")]
            for src, dst, a, b, fl, data in seq:
                p = l2(router, vlan) / IP(src=src, dst=dst, ttl=63, tos=tos) / TCP(sport=a, dport=b, flags=fl) / Raw(data)
                pkts.append(p)
        elif kind in (6, 7):  # IPv4 UDP request/response
            c = "198.51.100.%d" % (1 + i % 200)
            s = "203.0.113.%d" % (1 + (i * 3) % 200)
            sp = 30000 + i
            for _ in range(3):
                pkts.append(l2(router, vlan) / IP(src=c, dst=s) / UDP(sport=sp, dport=53) / Raw(b"q" * 40))
                pkts.append(l2(router, vlan) / IP(src=s, dst=c) / UDP(sport=53, dport=sp) / Raw(b"a" * 120))
        elif kind == 8:  # IPv6 TCP and ICMPv6 echo
            c, s = "2001:db8:1::%x" % (i + 1), "2001:db8:2::%x" % (i + 1)
            pkts.append(l2(router, vlan) / IPv6(src=c, dst=s, tc=tos) / TCP(sport=40000 + i, dport=443, flags="S"))
            pkts.append(l2(router, vlan) / IPv6(src=s, dst=c, tc=tos) / TCP(sport=443, dport=40000 + i, flags="SA"))
            pkts.append(l2(router, vlan) / IPv6(src=c, dst=s) / ICMPv6EchoRequest(id=i, seq=1))
            pkts.append(l2(router, vlan) / IPv6(src=s, dst=c) / ICMPv6EchoReply(id=i, seq=1))
        else:  # ICMP echo, fragmented UDP (v4 and v6), ICMP errors quoting a flow
            c = "198.51.100.%d" % (1 + i % 200)
            s = "203.0.113.%d" % (1 + (i * 5) % 200)
            pkts.append(l2(router, vlan) / IP(src=c, dst=s) / ICMP(type=8, id=i, seq=1))
            pkts.append(l2(router, vlan) / IP(src=s, dst=c) / ICMP(type=0, id=i, seq=1))
            big = IP(src=c, dst=s, id=1000 + i) / UDP(sport=5000 + i, dport=4789) / Raw(b"x" * 2000)
            for fr in fragment(big, fragsize=800):
                pkts.append(l2(router, vlan) / fr)
            orig = IP(src=c, dst=s) / UDP(sport=5000 + i, dport=4789) / Raw(b"y" * 16)
            pkts.append(l2(router, vlan) / IP(src="203.0.113.254", dst=c) / ICMP(type=3, code=3) / orig)
            c6, s6 = "2001:db8:1::1:%x" % (i + 1), "2001:db8:2::1:%x" % (i + 1)
            big6 = IPv6(src=c6, dst=s6) / IPv6ExtHdrFragment(id=77 + i) / UDP(sport=6000 + i, dport=9999) / Raw(b"z" * 1800)
            from scapy.layers.inet6 import fragment6
            for fr in fragment6(big6, 1000):
                pkts.append(l2(router, vlan) / fr)
            o6 = IPv6(src=s6, dst=c6) / UDP(sport=9999, dport=6000 + i) / Raw(b"w" * 64)
            pkts.append(l2(router, vlan) / IPv6(src="2001:db8:2::ffff", dst=s6) / ICMPv6PacketTooBig(mtu=1280) / o6)
    for p in pkts:
        t += rnd.uniform(0.0001, 0.002)
        p.time = t
    return pkts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--flows", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dscp", action="store_true", help="mark every fifth TCP flow EF with ECN CE")
    a = ap.parse_args()
    pkts = build(a.flows, a.seed, a.dscp)
    wrpcap(a.out, pkts)
    print("wrote %d packets of %d flows to %s" % (len(pkts), a.flows, a.out))


if __name__ == "__main__":
    main()
