#!/usr/bin/python3
"""Appliance-requested bypass through gwlb-replay (docs/replay.md, docs/product-rules.md
"Appliance-requested bypass"): one TCP flow of 60 packets of 1,000 bytes, both
directions alternating, the second half 20 s after the first.

Run 1, --reflect --reflect-bypass-after 10000: the reflecting appliance asks
for the bypass once the flow brought it 10,000 inner bytes (the 10th packet);
every later packet goes straight back. Run 2, --appliance-in: the first half
as sent to the appliance, reflected 10 s later with gwlb's bypass option added
to one packet; the second half (20 s) is then bypassed. Every packet of the
flow comes back exactly once, unchanged at L3, in both runs.

usage: bypass.py GWLB_REPLAY CONFIG WORKDIR
"""
import collections
import json
import os
import shutil
import struct
import subprocess
import sys

from scapy.all import IP, TCP, Ether, PcapReader, PcapWriter, Raw, raw

replay, config, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
GW, RT = "02:00:00:00:00:01", "02:00:00:00:00:aa"
C, S = "198.51.100.7", "203.0.113.9"
N = 60


def capture(path):
    w = PcapWriter(path, linktype=1, sync=True)
    for i in range(N):
        up = i % 2 == 0
        p = (Ether(src=RT, dst=GW) / IP(src=C if up else S, dst=S if up else C) /
             TCP(sport=40000 if up else 443, dport=443 if up else 40000, flags="PA", seq=i) /
             Raw(bytes([i]) * 1000))
        p.time = 100.0 + i * 0.001 + (20.0 if i >= N // 2 else 0.0)
        w.write(p)
    w.close()


def run(out, *extra):
    r = subprocess.run([replay, "--config", config, "--in", sample, "--out-dir", out, *extra],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    return json.load(open(os.path.join(out, "summary.json")))


def l3s(path):
    out = collections.Counter()
    for p in PcapReader(path):
        b = bytes(raw(p))
        out[b[14:14 + int.from_bytes(b[16:18], "big")]] += 1
    return out


sample = os.path.join(work, "flow.pcap")
capture(sample)
want = l3s(sample)

one = run(os.path.join(work, "reflect"), "--reflect", "--reflect-bypass-after", "10000", "--burst", "1")
ab = one["appliance_bypass"]
# The 10th packet brings the appliance 10,400 inner bytes: its reflection asks,
# and so does every later one that still reaches it (packets already fed to the
# worker before the grant); the rest, at least the second half, is bypassed.
sent = one["to_appliances_packets"]
assert 10 <= sent <= N // 2, one
assert one["reflected_bypass_requests"] == sent - 9, one
assert ab["granted"] >= 1 and ab["bypassed_packets"] == N - sent, ab
assert one["drops"] == {}, one["drops"]
got = l3s(os.path.join(work, "reflect", "returned.pcap"))
assert got == want, f"returned L3 differs: {sum((want - got).values())} missing, {sum((got - want).values())} extra"
print(f"reflect: {one['to_appliances_packets']} packets to the appliance, {ab['bypassed_packets']} bypassed, "
      f"all {N} back once, unchanged at L3")

# Run 2: the appliance side from a capture, one packet carrying the option.
fwd = run(os.path.join(work, "forward"))
assert fwd["to_appliances_packets"] == N, fwd
refl = PcapWriter(os.path.join(work, "reflected.pcap"), linktype=1, sync=True)
for i, p in enumerate(PcapReader(os.path.join(work, "forward", "to-appliances.pcap"))):
    if i >= N // 2:
        break
    b = bytearray(raw(p))
    b[0:6], b[6:12] = b[6:12], b[0:6]
    b[26:30], b[30:34] = b[30:34], b[26:30]
    if i == 5:  # gwlb's bypass option (class 0xFF01, type 1, 4 bytes: 0, the flow's life)
        at = 14 + 20 + 8 + 8 + 32
        b[at:at] = struct.pack("!HBBI", 0xFF01, 1, 1, 0)
        b[42] += 2
        struct.pack_into("!H", b, 16, struct.unpack_from("!H", b, 16)[0] + 8)
        struct.pack_into("!H", b, 38, struct.unpack_from("!H", b, 38)[0] + 8)
        struct.pack_into("!H", b, 40, 0)
        struct.pack_into("!H", b, 24, 0)
        s = sum(struct.unpack("!10H", bytes(b[14:34])))
        s = (s & 0xFFFF) + (s >> 16)
        s = (s & 0xFFFF) + (s >> 16)
        struct.pack_into("!H", b, 24, ~s & 0xFFFF)
    q = Ether(bytes(b))
    q.time = p.time + 10
    refl.write(q)
refl.close()
two = run(os.path.join(work, "both"), "--appliance-in", os.path.join(work, "reflected.pcap"))
ab = two["appliance_bypass"]
assert two["to_appliances_packets"] == N // 2, two
assert ab["granted"] == 1 and ab["bypassed_packets"] == N // 2, ab
assert two["drops"] == {}, two["drops"]
got = l3s(os.path.join(work, "both", "returned.pcap"))
assert got == want, f"returned L3 differs: {sum((want - got).values())} missing, {sum((got - want).values())} extra"
print(f"appliance-in: the option in one reflected packet bypassed the {N // 2} packets after it")
