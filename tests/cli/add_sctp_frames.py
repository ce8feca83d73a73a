#!/usr/bin/python3
"""Appends SCTP flows (both directions) to a router capture, for gwlbctl's
--proto sctp and explain checks against a real gwlbd (tests/cli/e2e.sh).

usage: add_sctp_frames.py CAPTURE.pcap FLOWS.json

Three associations, two over IPv4 and one over IPv6: an INIT from the client
and an INIT ACK from the server each, to the gateway's MAC. FLOWS.json lists
them as {src, dst, sport, dport} (client side first).
"""
import json
import sys

from scapy.all import IP, SCTP, Ether, IPv6, SCTPChunkInit, SCTPChunkInitAck, rdpcap, wrpcap

GW_MAC = "02:00:00:00:00:01"
ROUTER = "02:00:00:00:0a:01"
FLOWS = [("198.51.100.77", "203.0.113.77", 36412, 38412),
         ("198.51.100.78", "203.0.113.77", 2905, 2905),
         ("2001:db8:5c::1", "2001:db8:5c::2", 5060, 5061)]


def frame(src, dst, sport, dport, chunk):
    ip = IPv6(src=src, dst=dst) if ":" in src else IP(src=src, dst=dst)
    return Ether(dst=GW_MAC, src=ROUTER) / ip / SCTP(sport=sport, dport=dport, tag=0x1234) / chunk


def main():
    path, out = sys.argv[1], sys.argv[2]
    pkts = rdpcap(path)
    t = float(pkts[-1].time) if pkts else 0.0
    new = []
    for i, (c, s, cp, sp) in enumerate(FLOWS):
        for j, p in enumerate([frame(c, s, cp, sp, SCTPChunkInit(init_tag=7 + i)),
                               frame(s, c, sp, cp, SCTPChunkInitAck(init_tag=9 + i))]):
            p.time = t + 0.001 * (2 * i + j + 1)
            new.append(p)
    wrpcap(path, new, append=True)
    json.dump([{"src": c, "dst": s, "sport": cp, "dport": sp} for c, s, cp, sp in FLOWS], open(out, "w"))
    print("appended %d SCTP frames (%d flows) to %s" % (len(new), len(FLOWS), path))


if __name__ == "__main__":
    main()
