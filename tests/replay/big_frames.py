#!/usr/bin/python3
"""gwlb-replay carries every frame a capture holds (issue 14, item 18).

Before, frames were cut at 10,240 bytes and the packet was then blamed: a valid
14,196-byte IPv4 packet with DF was counted drop_bad_ip_length instead of being
answered with ICMP "fragmentation needed". The capture written here (snaplen
262144, as tcpdump writes) holds, from the router, with underlay_mtu 9216:
  1. IPv4/UDP, 9,000 bytes: fits once wrapped -> encapsulated, inner packet intact
  2. IPv4/UDP with DF, 14,196 bytes      -> icmp_sent (ICMP 3/4, next-hop MTU 9148)
  3. IPv6/UDP, 14,196 bytes              -> icmp_sent (ICMPv6 packet too big)
  4. a 70,000-byte frame: larger than one mbuf can hold -> not replayed, counted
     in summary.json frames_too_large, with a warning on stderr
  5. a frame the capture cut (caplen 200 of 1,500): replayed as captured,
     counted frames_cut_by_capture, with a warning
and nothing is counted drop_bad_ip_length except frame 5.

usage: big_frames.py GWLB_REPLAY WORKDIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys

from scapy.all import ICMP, IP, UDP, Ether, ICMPv6PacketTooBig, IPv6, Raw, rdpcap, raw

replay, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
GW_MAC, ROUTER = "02:00:00:00:00:01", "02:00:00:00:0a:01"
MTU = 9216
config = os.path.join(work, "gwlb.yaml")
with open(config, "w") as f:
    f.write(f"""node: {{ underlay_ip: 192.0.2.1, underlay_mac: {GW_MAC}, gateway_mac: 02:00:00:00:00:fe,
        underlay_mtu: {MTU} }}
server_groups:
  - name: firewalls
    geneve: {{ format: aws }}
    servers: [ {{ address: 192.0.2.10 }}, {{ address: 192.0.2.11 }} ]
""")


def udp4(total, df):
    payload = bytes(i % 251 for i in range(total - 28))
    return raw(Ether(src=ROUTER, dst=GW_MAC) / IP(src="198.51.100.7", dst="203.0.113.9",
                                                  flags="DF" if df else 0) /
               UDP(sport=40000, dport=4789) / Raw(payload))


fits = udp4(9000, df=True)
too_big4 = udp4(14196, df=True)
too_big6 = raw(Ether(src=ROUTER, dst=GW_MAC) / IPv6(src="2001:db8::7", dst="2001:db8:1::9") /
               UDP(sport=40001, dport=4789) / Raw(bytes(14196 - 48)))
huge = raw(Ether(src=ROUTER, dst=GW_MAC, type=0x88b5)) + bytes(70000 - 14)
cut_full = udp4(1500, df=True)
assert len(too_big4) == 14210 and len(too_big6) == 14210

pcap = os.path.join(work, "big.pcap")
with open(pcap, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
    for i, (frame, wire_len) in enumerate([(fits, len(fits)), (too_big4, len(too_big4)),
                                           (too_big6, len(too_big6)), (huge, len(huge)),
                                           (cut_full[:200], len(cut_full))]):
        f.write(struct.pack("<IIII", 1_700_000_000 + i, 0, len(frame), wire_len) + frame)

out = os.path.join(work, "out")
r = subprocess.run([replay, "--config", config, "--in", pcap, "--out-dir", out],
                   capture_output=True, text=True, timeout=120)
print(r.stdout, r.stderr, sep="")
assert r.returncode == 0, f"gwlb-replay exit {r.returncode}"
s = json.load(open(os.path.join(out, "summary.json")))
c, d = s["counters"], s["drops"]
print(f"summary: largest_frame {s.get('largest_frame')}, frames_too_large {s.get('frames_too_large')}, "
      f"frames_cut_by_capture {s.get('frames_cut_by_capture')}, counters rx {c['rx_packets']} "
      f"encapsulated {c['encapsulated']} icmp_sent {c['icmp_sent']}, drops {d}")
assert c["icmp_sent"] == 2, f"the two 14,196-byte packets must get ICMP 'too big': {c}, drops {d}"
assert c["encapsulated"] == 1, f"the 9,000-byte packet fits the 9,216 underlay MTU: {c}"
assert d == {"bad_ip_length": 1}, f"only the frame the capture cut is a bad IP length: {d}"
assert c["rx_packets"] == 4, f"the 70,000-byte frame is not replayed: {c}"
assert s["frames_too_large"] == 1 and s["frames_cut_by_capture"] == 1, s
assert s["largest_frame"] == 14210, s
assert "1 frame(s) larger than one mbuf holds" in r.stderr and "largest 70000" in r.stderr, r.stderr
assert "1 frame(s) were cut by the capture" in r.stderr, r.stderr

# The encapsulated jumbo carries the inner packet whole; the ICMP answers go
# back to the router quoting the packets and naming the inner MTU.
to_app = [raw(p) for p in rdpcap(os.path.join(out, "to-appliances.pcap"))]
assert len(to_app) == 1 and len(to_app[0]) == 14 + 68 + 9000 and to_app[0].endswith(fits[14:]), \
    [len(x) for x in to_app]
back = rdpcap(os.path.join(out, "returned.pcap"))
icmp4 = [p for p in back if ICMP in p]
icmp6 = [p for p in back if ICMPv6PacketTooBig in p]
assert len(icmp4) == 1 and icmp4[0][ICMP].type == 3 and icmp4[0][ICMP].code == 4, back
assert icmp4[0][ICMP].nexthopmtu == MTU - 68, icmp4[0][ICMP].nexthopmtu
assert icmp4[0][IP].dst == "198.51.100.7" and icmp4[0].dst == ROUTER, icmp4[0].summary()
assert len(icmp6) == 1 and icmp6[0][ICMPv6PacketTooBig].mtu == MTU - 68 - 0, icmp6[0][ICMPv6PacketTooBig].mtu
print("ok: 14,196-byte packets answered with ICMP too big (v4 and v6), 9,000-byte jumbo encapsulated "
      "intact, 70,000-byte frame counted and warned, capture-cut frame counted and warned")
