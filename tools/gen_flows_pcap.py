#!/usr/bin/python3
"""Writes a capture of N distinct IPv4 UDP (or TCP SYN) flows, one packet each,
quickly (no scapy): for filling large flow tables in tests and benchmarks.

usage: gen_flows_pcap.py OUT.pcap --flows N [--size BYTES] [--tcp] [--seed S]
Addresses: clients 198.18.0.0/15 (benchmark range, RFC 2544), servers
203.0.113.0/24; ports vary so every packet is a new 5-tuple.
"""
import argparse
import random
import struct


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--flows", type=int, required=True)
    ap.add_argument("--size", type=int, default=64, help="frame size without FCS (>= 60)")
    ap.add_argument("--tcp", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    # To 02:00:00:00:00:01, the MAC the configs that replay it give their port.
    eth = bytes.fromhex("020000000001" "020000000a01") + b"\x08\x00"
    proto = 6 if a.tcp else 17
    l4len = 20 if a.tcp else 8
    payload = bytes(max(0, a.size - 14 - 20 - l4len))
    with open(a.out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(a.flows):
            src = ((198 << 24) | (18 << 16)) + (i % 131072)
            dst = (203 << 24) | (0 << 16) | (113 << 8) | (1 + (i // 131072) % 254)
            sport = 1024 + rnd.randrange(60000)
            dport = 80 if a.tcp else 53
            tot = 20 + l4len + len(payload)
            ip = struct.pack("!BBHHHBBHII", 0x45, 0, tot, i & 0xFFFF, 0x4000, 64, proto, 0, src, dst)
            ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
            if a.tcp:
                l4 = struct.pack("!HHIIBBHHH", sport, dport, i, 0, 5 << 4, 0x02, 65535, 0, 0)
            else:
                l4 = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
            pseudo = struct.pack("!IIBBH", src, dst, 0, proto, l4len + len(payload))
            c = csum(pseudo + l4 + payload)
            l4 = l4[:16] + struct.pack("!H", c) + l4[18:] if a.tcp else l4[:6] + struct.pack("!H", c or 0xFFFF)
            frame = eth + ip + l4 + payload
            f.write(struct.pack("<IIII", 1700000000 + i // 1000000, i % 1000000, len(frame), len(frame)))
            f.write(frame)
    print(f"wrote {a.flows} flows to {a.out}")


if __name__ == "__main__":
    main()
