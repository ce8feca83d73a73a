#!/usr/bin/python3
"""gwlb-replay --appliance-in: the appliance side fed from a capture.

Run 1 forwards the sample (no --reflect) and keeps what went to the appliances.
That capture, reflected as an appliance would (outer MACs and IPs swapped,
Geneve header untouched) and shifted 10 s later (inside the 30 s fragment window), is fed back with the same
sample in run 2 (one worker: cookies repeat run to run). Every input packet must
come back unchanged at L3. Run 3 flips one byte of one reflected packet's flow
cookie: exactly that packet must be dropped as drop_return_cookie_mismatch.

usage: appliance_in.py GWLB_REPLAY CONFIG SAMPLE.pcap WORKDIR
"""
import collections
import json
import os
import shutil
import subprocess
import sys

from scapy.all import PcapReader, PcapWriter, raw

replay, config, sample, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def run(out, *extra):
    subprocess.run([replay, "--config", config, "--in", sample, "--out-dir", out, *extra],
                   check=True, stdout=subprocess.DEVNULL)
    return json.load(open(os.path.join(out, "summary.json")))


def l3(frame):
    et = int.from_bytes(frame[12:14], "big")
    off = 18 if et in (0x8100, 0x88A8) else 14
    et = int.from_bytes(frame[off - 2:off], "big")
    ln = int.from_bytes(frame[off + 2:off + 4], "big") if et == 0x0800 else \
        40 + int.from_bytes(frame[off + 4:off + 6], "big")
    return bytes(frame[off:off + ln])


def reflect(src, dst, corrupt_index=None):
    w = PcapWriter(dst, linktype=1, sync=True)
    for i, p in enumerate(PcapReader(src)):
        b = bytearray(raw(p))
        b[0:6], b[6:12] = b[6:12], b[0:6]
        b[26:30], b[30:34] = b[30:34], b[26:30]
        if i == corrupt_index:
            b[14 + 20 + 8 + 8 + 24 + 4] ^= 0x01  # first byte of the cookie option's data
        q = p.__class__(bytes(b))
        q.time = p.time + 10
        w.write(q)
    w.close()


first = run(os.path.join(work, "forward"))
n_in = first["input_packets"]
assert first["returned_packets"] == 0 and first["to_appliances_packets"] == n_in, first
to_app = os.path.join(work, "forward", "to-appliances.pcap")

reflect(to_app, os.path.join(work, "reflected.pcap"))
second = run(os.path.join(work, "both"), "--appliance-in", os.path.join(work, "reflected.pcap"))
assert second["drops"] == {}, second["drops"]
want = collections.Counter(l3(bytes(raw(p))) for p in PcapReader(sample))
got = collections.Counter(l3(bytes(raw(p))) for p in PcapReader(os.path.join(work, "both", "returned.pcap")))
assert got == want, f"returned L3 differs: {sum((want - got).values())} missing, {sum((got - want).values())} extra"
print(f"appliance-in: {n_in} packets forwarded, {sum(got.values())} returned unchanged at L3")

reflect(to_app, os.path.join(work, "bad.pcap"), corrupt_index=5)
third = run(os.path.join(work, "bad"), "--appliance-in", os.path.join(work, "bad.pcap"))
assert third["drops"] == {"return_cookie_mismatch": 1}, third["drops"]
assert third["returned_packets"] == n_in - 1, third["returned_packets"]
print("appliance-in: a flipped cookie bit is dropped as return_cookie_mismatch, nothing else")
