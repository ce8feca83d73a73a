#!/usr/bin/python3
"""Mixes a known number of malformed frames of many kinds into router captures.

usage: gen_bad_frames.py EXPECTED.json IN.pcap OUT.pcap [IN.pcap OUT.pcap ...]

Kind number k (1, 2, 3, ...) gets k frames, each built in its own way, so that
every drop reason has a count no other reason shares. The frames are spread
over the outputs (round robin) and inserted at fixed pseudo-random positions
among the good packets of each input. EXPECTED.json maps every drop counter
name (as `gwlbctl stats --json` shows it) to the number of frames that must
hit it, and gives the total: {"drops": {name: n}, "frames": N}.

The node under test: underlay_ip 192.0.2.1, appliances 192.0.2.10-12, one
aws-format group with VNI 0 (tests/cli/e2e.sh).
"""
import json
import random
import struct
import sys

from scapy.all import ICMP, IP, TCP, UDP, Ether, Raw

GW_MAC = "02:00:00:00:00:01"
ROUTER = "02:00:00:00:0a:01"
UNDERLAY = "192.0.2.1"
APPLIANCES = ["192.0.2.10", "192.0.2.11", "192.0.2.12"]


def eth(et):
    return struct.pack("!6s6sH", bytes.fromhex(GW_MAC.replace(":", "")),
                       bytes.fromhex(ROUTER.replace(":", "")), et)


def ipv4_hdr(total, proto=17, ihl=5, src="198.51.100.200", dst="203.0.113.200", ver=4):
    h = struct.pack("!BBHHHBBH4s4s", (ver << 4) | ihl, 0, total, 1, 0, 64, proto, 0,
                    bytes(map(int, src.split("."))), bytes(map(int, dst.split("."))))
    return h


def ipv6_hdr(plen, nh=17):
    src = bytes.fromhex("20010db8000100000000000000000bad")
    dst = bytes.fromhex("20010db8000200000000000000000bad")
    return struct.pack("!IHBB", 6 << 28, plen, nh, 64) + src + dst


def geneve(version=0, oam=False, options=b"", protocol=0x0800, vni=0):
    assert len(options) % 4 == 0
    return struct.pack("!BBHI", (version << 6) | (len(options) // 4), 0x80 if oam else 0,
                       protocol, vni << 8) + options


def aws_options(cookie=None):
    o = struct.pack("!HBBQ", 0x0108, 1, 2, 7) + struct.pack("!HBBQ", 0x0108, 2, 2, 9)
    if cookie is not None:
        o += struct.pack("!HBBI", 0x0108, 3, 1, cookie)
    return o


def underlay(src, dst, payload, sport=40000, dport=6081, proto="udp"):
    l4 = UDP(sport=sport, dport=dport) if proto == "udp" else TCP(sport=sport, dport=dport)
    return bytes(Ether(src=ROUTER, dst=GW_MAC) / IP(src=src, dst=dst) / l4 / Raw(payload))


def inner_udp(i):
    return bytes(IP(src="10.255.0.%d" % (1 + i), dst="10.255.1.%d" % (1 + i)) /
                 UDP(sport=1000 + i, dport=2000) / Raw(b"r" * 20))


# (drop counter, builder(i) -> frame bytes). Kind number k makes k frames, i = 0..k-1.
def kinds():
    good_udp = bytes(UDP(sport=1, dport=2) / Raw(b"x" * 12))
    return [
        # 1: shorter than the Ethernet header
        ("drop_truncated_l2", lambda i: eth(0x0800)[:10]),
        # 2: neither IPv4, IPv6 nor ARP (LLDP, IPX)
        ("drop_unsupported_ethertype", lambda i: eth([0x88CC, 0x8137][i]) + b"\0" * 46),
        # 3: two tags (802.1Q in 802.1Q, 802.1Q in 802.1ad, 802.1ad in 802.1Q)
        ("drop_nested_vlan", lambda i: eth([0x8100, 0x88A8, 0x8100][i])
            + struct.pack("!HHH", 100, [0x8100, 0x8100, 0x88A8][i], 200)
            + struct.pack("!H", 0x0800) + ipv4_hdr(20 + len(good_udp)) + good_udp),
        # 4: frame ends inside the IP header (v4, v4, v6, v4 after a VLAN tag)
        ("drop_truncated_l3", lambda i: [
            eth(0x0800) + ipv4_hdr(40)[:10],
            eth(0x0800) + ipv4_hdr(40)[:19],
            eth(0x86DD) + ipv6_hdr(8)[:39],
            eth(0x8100) + struct.pack("!HH", 100, 0x0800) + ipv4_hdr(40)[:5]][i]),
        # 5: IHL 4, 3, 2, 0 words, and IHL 15 (60 bytes) in a 40-byte packet
        ("drop_bad_ihl", lambda i: eth(0x0800)
            + ipv4_hdr(20 + len(good_udp), ihl=[4, 3, 2, 0, 15][i]) + good_udp),
        # 6: IPv4 total length past the frame (3), IPv6 payload length past the
        #    frame (2), IPv4 total length below the header length (1)
        ("drop_bad_ip_length", lambda i: [
            eth(0x0800) + ipv4_hdr(21 + len(good_udp)) + good_udp,
            eth(0x0800) + ipv4_hdr(1500) + good_udp,
            eth(0x0800) + ipv4_hdr(65535) + good_udp,
            eth(0x86DD) + ipv6_hdr(len(good_udp) + 1) + good_udp,
            eth(0x86DD) + ipv6_hdr(400) + good_udp,
            eth(0x0800) + ipv4_hdr(12) + good_udp][i]),
        # 7: transport header cut short: TCP of 10 bytes, TCP data offset 4,
        #    TCP data offset 15 in 20 bytes, UDP of 6, IPv6 TCP of 12, IPv6 UDP
        #    of 4, ICMP of 4
        ("drop_truncated_l4", lambda i: [
            eth(0x0800) + ipv4_hdr(30, proto=6) + bytes(TCP())[:10],
            eth(0x0800) + ipv4_hdr(40, proto=6) + bytes(TCP(dataofs=4)),
            eth(0x0800) + ipv4_hdr(40, proto=6) + bytes(TCP(dataofs=15))[:20],
            eth(0x0800) + ipv4_hdr(26, proto=17) + good_udp[:6],
            eth(0x86DD) + ipv6_hdr(12, nh=6) + bytes(TCP())[:12],
            eth(0x86DD) + ipv6_hdr(4, nh=17) + good_udp[:4],
            eth(0x0800) + ipv4_hdr(24, proto=1) + bytes(ICMP(type=8))[:4]][i]),
        # 8: the IP version disagrees with the ethertype
        ("drop_bad_ip_version", lambda i: (
            eth(0x0800) + ipv6_hdr(len(good_udp)) + good_udp if i % 2 == 0 else
            eth(0x86DD) + ipv4_hdr(20 + len(good_udp)) + good_udp + b"\0" * 20)),
        # 9: our own Geneve (from the underlay address) seen again on the router side
        ("drop_loop_geneve", lambda i: underlay(UNDERLAY, APPLIANCES[i % 3],
                                                geneve(options=aws_options(5)) + inner_udp(i),
                                                sport=50000 + i)),
        # 10: Geneve to us from addresses that are not appliances
        ("drop_geneve_unknown_appliance", lambda i: underlay(
            ["192.0.2.99", "192.0.2.13", "198.51.100.7", "192.0.2.2", "10.0.0.1"][i % 5], UNDERLAY,
            geneve(options=aws_options(5)) + inner_udp(i), sport=51000 + i)),
        # 11: Geneve version 1, 2, 3 from a configured appliance
        ("drop_geneve_bad_version", lambda i: underlay(
            APPLIANCES[i % 3], UNDERLAY, geneve(version=1 + i % 3, options=aws_options(5)) + inner_udp(i),
            sport=52000 + i)),
        # 12: to our address but not Geneve: other UDP ports, TCP (also to 6081)
        ("drop_not_for_us", lambda i: underlay(
            APPLIANCES[i % 3], UNDERLAY, b"hello", sport=53000 + i,
            dport=[53, 4789, 22, 6081][i % 4], proto="tcp" if i % 4 >= 2 else "udp")),
        # 13: Geneve control (O bit) from an appliance
        ("drop_geneve_control", lambda i: underlay(
            APPLIANCES[i % 3], UNDERLAY, geneve(oam=True, options=aws_options(5)) + inner_udp(i),
            sport=54000 + i)),
        # 14: aws-format Geneve from an appliance without the cookie option
        ("drop_geneve_missing_cookie", lambda i: underlay(
            APPLIANCES[i % 3], UNDERLAY, geneve(options=aws_options(None) if i % 2 else b"") + inner_udp(i),
            sport=55000 + i)),
        # 15: well-formed return traffic for a flow that gwlbd never saw
        ("drop_return_no_flow", lambda i: underlay(
            APPLIANCES[i % 3], UNDERLAY, geneve(options=aws_options(0x1000 + i)) + inner_udp(i),
            sport=56000 + i)),
    ]


def read_pcap(path):
    """Frames of a classic little- or big-endian pcap: [(ts_sec, ts_usec, bytes)]."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    end = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off, out = 24, []
    while off + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
        out.append((sec, usec, data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def write_pcap(path, frames):
    """Writes the frames byte for byte (Ethernet link type)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for sec, usec, b in frames:
            f.write(struct.pack("<IIII", sec, usec, len(b), len(b)) + b)


def main():
    if len(sys.argv) < 4 or len(sys.argv) % 2 != 0:
        sys.exit(__doc__)
    expected_path, pairs = sys.argv[1], sys.argv[2:]
    bad, drops = [], {}
    for k, (name, build) in enumerate(kinds(), start=1):
        drops[name] = k
        for i in range(k):
            bad.append(build(i))
    rnd = random.Random(11)
    n_out = len(pairs) // 2
    for j in range(n_out):
        pkts = read_pcap(pairs[2 * j])
        for b in bad[j::n_out]:
            pos = rnd.randint(0, len(pkts))
            sec, usec, _ = pkts[min(pos, len(pkts) - 1)] if pkts else (0, 0, b"")
            pkts.insert(pos, (sec, usec, b))
        write_pcap(pairs[2 * j + 1], pkts)
    with open(expected_path, "w") as f:
        json.dump({"drops": drops, "frames": len(bad)}, f, indent=1)
    print("mixed %d malformed frames of %d kinds into %d captures" % (len(bad), len(drops), n_out))


if __name__ == "__main__":
    main()
