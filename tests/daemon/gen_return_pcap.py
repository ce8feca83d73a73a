#!/usr/bin/python3
"""Writes a capture of N UDP flows, one packet each from the router, then the
Geneve (format ethernet, VNI 0) return of each packet from every appliance:
only the flow's own appliance's return is returned toward the router, the
others are dropped (return_wrong_appliance). So after it, gwlbd's per-appliance
returned packets sum to N.

Destination ports 5000 + 1000 x SEED + i: captures of different seeds share no flow.

usage: gen_return_pcap.py OUT.pcap --flows N --appliances A,B,C [--seed S]
"""
import argparse
import random

from scapy.all import Ether, IP, UDP, Raw, wrpcap

OURS, ROUTER, UNDERLAY = "02:00:00:00:00:01", "02:00:00:00:0a:01", "192.0.2.1"


def geneve_ethernet(inner: bytes) -> bytes:
    # Version 0, no options, protocol 0x6558 (Ethernet), VNI 0.
    return bytes([0, 0, 0x65, 0x58, 0, 0, 0, 0]) + inner


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--flows", type=int, required=True)
    ap.add_argument("--appliances", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    apps = a.appliances.split(",")
    fwd = [Ether(src=ROUTER, dst=OURS) / IP(src=f"198.51.100.{1 + i % 250}", dst="203.0.113.7")
           / UDP(sport=rnd.randrange(1024, 65535), dport=5000 + 1000 * a.seed + i) / Raw(bytes(32))
           for i in range(a.flows)]
    # A flow's route is set when its creating burst ends: its returns must come
    # in a later burst. More frames than the largest burst (256) lie between:
    # multicast frames, each dropped as l2_multicast.
    gap = [Ether(src=ROUTER, dst="01:00:5e:00:00:05") / IP(src="198.51.100.1", dst="224.0.0.5")
           / UDP(sport=1, dport=2)] * 300
    ret = [Ether(src="02:00:00:00:00:fe", dst=OURS) / IP(src=app, dst=UNDERLAY)
           / UDP(sport=rnd.randrange(1024, 65535), dport=6081) / Raw(geneve_ethernet(bytes(f)))
           for f in fwd for app in apps]
    wrpcap(a.out, fwd + gap + ret)


if __name__ == "__main__":
    main()
