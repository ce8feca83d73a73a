#!/usr/bin/python3
"""Mirror groups through gwlb-replay (docs/replay.md "Mirror copies").

usage: mirror.py GWLB_REPLAY WORKDIR

Writes a capture of TCP and UDP flows (both directions, a packet every 50 ms)
and replays it with --reflect and four classes:

  web     TCP port 80, inspect, mirror to group `tools` (aws format, 3 tools)
  dns     UDP port 53, bypass, mirror to `tools-eth` (ethernet format), truncate 64
  telnet  TCP port 23, drop, mirror to `tools`, sample 1 in 3
  rest    everything else, inspect, no mirror

and an events file that fails one tool at 2 s.

Checks, decoding to-mirrors.pcap with struct (own checksum): every copy is
Geneve to UDP 6081 from the underlay address to a tool of its class's group,
UDP checksum 0, a valid IPv4 checksum; its options are AWS's three (aws
format, first) then gwlb's mirror option (class 0xFF01, type 2, length 1)
with the class id and the direction (0 from the flow's first sender for
inspected flows; for bypassed/dropped ones, 0 from the lower address);
the inner packet is the original's IP packet (aws) or frame (ethernet),
byte for byte, cut at 64 bytes for dns. Each web and dns packet is copied
exactly once, a third of telnet's; rest's never. Both directions of a flow
reach the same tool while it is healthy; from 2 s the failed tool gets no
copy. The originals are unchanged: every web and rest packet comes back in
returned.pcap byte-identical at L3; dns comes back bypassed; telnet never.
summary.json counts the copies (to_mirrors_packets, counters.mirrored).

A second replay of the same capture with weights and draining instead of the
failure: `weight: 0` for one tool at 1 s and an operator drain of another at
2.5 s. Copies keep no flow state, so from each event on that tool gets no
copy (its flows' copies go to the tools left, every web packet still copied
exactly once); before them the copies reach all three.

A third replay, of copies that cannot be sent: a bypass class mirrored to a
group of one tool (`when_all_unhealthy: drop`), `node.underlay_mtu: 600`,
UDP packets of 200 and 560 bytes alternately. A copy of a 560-byte packet
would be longer than the MTU once wrapped: counted `mirror_drop_too_big`,
not sent; once the tool fails (2 s) every copy is `mirror_drop_no_tool`.
Every original comes back unchanged either way.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

from scapy.all import IP, TCP, UDP, Ether, PcapReader, wrpcap  # noqa: E402

BASE = 1_700_000_000
STEP = 0.05
ROUTER_MAC, GW_MAC = "02:00:00:00:00:01", "02:00:00:00:00:aa"
FW = ["192.0.2.10", "192.0.2.11"]
TOOLS = ["192.0.2.50", "192.0.2.51", "192.0.2.52"]
TOOLS_ETH = ["192.0.2.60", "192.0.2.61"]
DOWN = TOOLS[1]
DOWN_AT = 2.0
CLASS_ID = {"web": 0, "dns": 1, "telnet": 2}
CONFIG = """node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:aa
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: fw
    geneve: { format: aws, vni: 0x123456, endpoint_id: 7, attachment_id: 9 }
    servers:
%s
  - name: tools
    geneve: { format: aws, vni: 0x654321 }
    servers:
%s
  - name: tools-eth
    geneve: { format: ethernet, vni: 77 }
    servers:
%s
traffic_classes:
  - { name: web, match: { protocols: [tcp], l4_ports: [80] }, action: inspect,
      mirror: { group: tools } }
  - { name: dns, match: { protocols: [udp], l4_ports: [53] }, action: bypass,
      mirror: { group: tools-eth, truncate: 64 } }
  - { name: telnet, match: { protocols: [tcp], l4_ports: [23] }, action: drop,
      mirror: { group: tools, sample: 3 } }
  - { name: rest, action: inspect }
"""


def servers(addrs):
    return "\n".join("      - { address: %s }" % a for a in addrs)


def flows():
    """(class, client, server, sport, dport, proto) per flow."""
    out = []
    for i in range(16):
        out.append(("web", "198.51.100.%d" % (10 + i), "203.0.113.80", 40000 + i, 80, "tcp"))
    for i in range(8):
        # Clients above the server's address: a copy's direction for a flow
        # without an entry follows the address order, not the first sender.
        out.append(("dns", "203.0.113.%d" % (100 + i), "198.51.100.53", 50000 + i, 53, "udp"))
    for i in range(4):
        out.append(("telnet", "198.51.100.%d" % (60 + i), "203.0.113.23", 45000 + i, 23, "tcp"))
    for i in range(4):
        out.append(("rest", "198.51.100.%d" % (70 + i), "203.0.113.44", 46000 + i, 443, "tcp"))
    return out


def packet(f, k):
    cls, c, s, sp, dp, proto = f
    fwd = k % 2 == 0
    src, dst, a, b = (c, s, sp, dp) if fwd else (s, c, dp, sp)
    payload = bytes([k & 0xFF]) * (200 + 37 * (k % 5))
    l4 = TCP(sport=a, dport=b, seq=k, flags="S" if k == 0 else "A") if proto == "tcp" else UDP(sport=a, dport=b)
    return Ether(src=ROUTER_MAC, dst=GW_MAC) / IP(src=src, dst=dst, ttl=64, id=k + 1) / l4 / payload


def write_capture(path):
    pkts, origin = [], {}
    for fi, f in enumerate(flows()):
        for k in range(80):  # 4 s
            p = packet(f, k)
            p.time = BASE + k * STEP + fi * 0.0005
            pkts.append(p)
            origin[bytes(p[IP])] = (fi, k)
    pkts.sort(key=lambda p: p.time)
    wrpcap(path, pkts, nano=True)
    return origin


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def decode_copy(raw):
    """(tool, class id, reverse, inner bytes, aws) of one copy; fails on a malformed one."""
    if struct.unpack("!H", raw[12:14])[0] != 0x0800:
        fail("copy is not IPv4")
    ip = raw[14:34]
    if csum(ip) != 0xFFFF:
        fail("copy's IPv4 checksum is wrong")
    if struct.unpack("!H", ip[2:4])[0] != len(raw) - 14:
        fail("copy's IPv4 total length %d != %d" % (struct.unpack("!H", ip[2:4])[0], len(raw) - 14))
    src, dst = ".".join(map(str, ip[12:16])), ".".join(map(str, ip[16:20]))
    if src != "192.0.2.1" or ip[9] != 17:
        fail("copy from %s proto %d" % (src, ip[9]))
    udp = raw[34:42]
    dport, ulen, uck = struct.unpack("!HHH", udp[2:8])
    if dport != 6081 or ulen != len(raw) - 34 or uck != 0:
        fail("copy's UDP: port %d len %d checksum %d" % (dport, ulen, uck))
    g = raw[42:]
    optlen = (g[0] & 0x3F) * 4
    proto = struct.unpack("!H", g[2:4])[0]
    opts = g[8:8 + optlen]
    aws = proto != 0x6558
    at = 0
    found = None
    classes = []
    while at < len(opts):
        oc, ot, ol = struct.unpack("!HBB", opts[at:at + 4])
        data = opts[at + 4:at + 4 + (ol & 0x1F) * 4]
        classes.append((oc, ot))
        if oc == 0xFF01 and ot == 2:
            if len(data) != 4:
                fail("mirror option of %d bytes" % len(data))
            found = (data[0] & 1, struct.unpack("!H", data[2:4])[0])
        at += 4 + (ol & 0x1F) * 4
    if aws and classes[:3] != [(0x0108, 1), (0x0108, 2), (0x0108, 3)]:
        fail("aws copy's options do not start with AWS's three: %s" % classes)
    if not found:
        fail("copy without the mirror option: %s" % classes)
    return dst, found[1], found[0], bytes(g[8 + optlen:]), aws


ZERO, ZERO_AT = TOOLS[0], 1.0      # the second run: weight 0
DRAINED, DRAIN_AT = TOOLS[2], 2.5  # and an operator drain


def run(exe, workdir, events=None, name="out"):
    if name == "out":
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
    cap = os.path.join(workdir, "flows.pcap")
    origin = write_capture(cap)
    cfg = os.path.join(workdir, "config.yaml")
    open(cfg, "w").write(CONFIG % (servers(FW), servers(TOOLS), servers(TOOLS_ETH)))
    ev = os.path.join(workdir, "events-%s.yaml" % name)
    open(ev, "w").write(events or "- { at: %gs, server: %s, health: unhealthy }\n" % (DOWN_AT, DOWN))
    out = os.path.join(workdir, name)
    cmd = [exe, "--config", cfg, "--in", cap, "--out-dir", out, "--reflect", "--events", ev]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(os.path.join(workdir, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout)
    if p.returncode != 0:
        fail("gwlb-replay exited %d:\n%s" % (p.returncode, p.stdout))
    return out, origin


def main():
    exe, workdir = sys.argv[1], sys.argv[2]
    out, origin = run(exe, workdir)
    fl = flows()
    by_l3 = {}
    for l3, (fi, k) in origin.items():
        by_l3[l3] = (fi, k)
    frames = {}  # (fi, k) -> original frame bytes
    for fi, f in enumerate(fl):
        for k in range(80):
            frames[(fi, k)] = bytes(packet(f, k))

    copies = {}  # (fi, k) -> count
    tool_of = {}  # (fi, before the failure) -> tools seen
    n = 0
    for pkt in PcapReader(os.path.join(out, "to-mirrors.pcap")):
        n += 1
        raw = bytes(pkt)
        t = float(pkt.time) - BASE
        tool, cid, rev, inner, aws = decode_copy(raw)
        if aws:
            key = by_l3.get(inner)
            if key is None:
                fail("an aws copy's inner packet is no original IP packet (%d bytes to %s)" % (len(inner), tool))
        else:
            # Ethernet format: the original frame, cut at 64 bytes.
            key = None
            for (fi, k), fr in frames.items():
                if fl[fi][0] == "dns" and fr[:64] == inner:
                    key = (fi, k)
                    break
            if key is None:
                fail("an ethernet copy is not the first 64 bytes of a dns frame")
            if len(inner) != 64:
                fail("dns copy of %d bytes, truncate is 64" % len(inner))
        fi, k = key
        cls = fl[fi][0]
        if cls == "rest":
            fail("a copy of class rest, which has no mirror")
        want_tools = TOOLS_ETH if cls == "dns" else TOOLS
        if tool not in want_tools:
            fail("%s copy went to %s, not one of %s" % (cls, tool, want_tools))
        if aws != (cls != "dns"):
            fail("%s copy in the wrong format" % cls)
        if cid != CLASS_ID[cls]:
            fail("%s copy carries class id %d, want %d" % (cls, cid, CLASS_ID[cls]))
        if cls == "web":
            want_rev = k % 2  # the client sent the first packet
        else:
            src = fl[fi][1] if k % 2 == 0 else fl[fi][2]
            dst = fl[fi][2] if k % 2 == 0 else fl[fi][1]
            want_rev = 1 if tuple(map(int, src.split("."))) > tuple(map(int, dst.split("."))) else 0
        if rev != want_rev:
            fail("%s flow %d packet %d: direction bit %d, want %d" % (cls, fi, k, rev, want_rev))
        if t >= DOWN_AT + 0.01 and tool == DOWN:
            fail("a copy at %.2f s to %s, which failed at %g s" % (t, DOWN, DOWN_AT))
        if t < DOWN_AT - 0.01:
            tool_of.setdefault(fi, set()).add(tool)
        copies[key] = copies.get(key, 0) + 1

    for fi, f in enumerate(fl):
        cls = f[0]
        got = sum(copies.get((fi, k), 0) for k in range(80))
        if cls in ("web", "dns"):
            missing = [k for k in range(80) if copies.get((fi, k), 0) != 1]
            if missing:
                fail("%s flow %d: packets %s not copied exactly once" % (cls, fi, missing[:10]))
        if cls in ("web", "dns") and len(tool_of.get(fi, ())) != 1:
            fail("%s flow %d reached tools %s before the failure: both directions must reach one" %
                 (cls, fi, sorted(tool_of.get(fi, ()))))
    telnet = sum(c for (fi, k), c in copies.items() if fl[fi][0] == "telnet")
    n_telnet = 80 * sum(1 for f in fl if f[0] == "telnet")
    if telnet != n_telnet // 3:
        fail("telnet: %d copies of %d packets, sample 1 in 3 wants %d" % (telnet, n_telnet, n_telnet // 3))
    downs = {t for fi in tool_of for t in tool_of[fi]}
    if DOWN not in downs:
        fail("no flow reached %s before it failed: the test shows nothing" % DOWN)

    # The originals: inspected ones come back unchanged at L3, dns bypassed, telnet dropped.
    back = {}
    for pkt in PcapReader(os.path.join(out, "returned.pcap")):
        l3 = bytes(pkt[IP])
        if l3 not in origin:
            fail("a returned packet is no original (%d bytes)" % len(l3))
        back[origin[l3]] = back.get(origin[l3], 0) + 1
    for fi, f in enumerate(fl):
        for k in range(80):
            c = back.get((fi, k), 0)
            if f[0] == "telnet" and c:
                fail("a telnet packet came back: its class drops it")
            if f[0] != "telnet" and c != 1:
                fail("%s flow %d packet %d came back %d times" % (f[0], fi, k, c))
    s = json.load(open(os.path.join(out, "summary.json")))
    if s["to_mirrors_packets"] != n or s["counters"].get("mirrored") != n:
        fail("summary: to_mirrors_packets %s, counters.mirrored %s, copies %d" %
             (s["to_mirrors_packets"], s["counters"].get("mirrored"), n))
    print("ok: %d copies (web %d, dns %d, telnet %d), every original back unchanged" %
          (n, sum(c for (fi, k), c in copies.items() if fl[fi][0] == "web"),
           sum(c for (fi, k), c in copies.items() if fl[fi][0] == "dns"), telnet))
    shaped(exe, workdir, by_l3)
    unsendable(exe, workdir)


UNSENDABLE = """node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:aa
  gateway_mac: 02:00:00:00:00:fe
  underlay_mtu: 600
server_groups:
  - name: fw
    geneve: { format: aws, vni: 0x123456, endpoint_id: 7, attachment_id: 9 }
    servers:
      - { address: %s }
  - name: tools
    geneve: { format: aws, vni: 0x654321 }
    when_all_unhealthy: drop
    servers:
      - { address: %s }
traffic_classes:
  - { name: all, action: bypass, mirror: { group: tools } }
""" % (FW[0], TOOLS[0])


def unsendable(exe, workdir):
    """Copies too long for the underlay, and copies with no tool in service,
    are counted by reason and not sent; the originals never suffer."""
    d = os.path.join(workdir, "unsendable")
    os.makedirs(d, exist_ok=True)
    pkts = []
    for k in range(40):
        size = 200 if k % 2 == 0 else 560
        p = Ether(src=ROUTER_MAC, dst=GW_MAC) / IP(src="198.51.100.9", dst="203.0.113.9", id=k + 1) / \
            UDP(sport=5000 + k % 4, dport=9000) / (bytes([k]) * (size - 28))
        p.time = BASE + k * 0.1
        pkts.append(p)
    wrpcap(os.path.join(d, "in.pcap"), pkts, nano=True)
    open(os.path.join(d, "config.yaml"), "w").write(UNSENDABLE)
    open(os.path.join(d, "events.yaml"), "w").write("- { at: 2s, server: %s, health: unhealthy }\n" % TOOLS[0])
    out = os.path.join(d, "out")
    cmd = [exe, "--config", os.path.join(d, "config.yaml"), "--in", os.path.join(d, "in.pcap"), "--out-dir", out,
           "--events", os.path.join(d, "events.yaml")]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        fail("gwlb-replay exited %d:\n%s" % (p.returncode, p.stdout))
    l3 = {bytes(x[IP]): k for k, x in enumerate(pkts)}
    copied = []
    for pkt in PcapReader(os.path.join(out, "to-mirrors.pcap")):
        tool, cid, rev, inner, aws = decode_copy(bytes(pkt))
        if len(pkt) - 14 > 600:
            fail("a copy of %d IP bytes, underlay_mtu 600" % (len(pkt) - 14))
        if tool != TOOLS[0] or inner not in l3:
            fail("a copy to %s of no original packet" % tool)
        copied.append(l3[inner])
    want = [k for k in range(20) if k % 2 == 0]  # the 200-byte packets before the failure
    if copied != want:
        fail("copies of packets %s, want %s (200-byte ones before the tool failed)" % (copied, want))
    c = json.load(open(os.path.join(out, "summary.json")))["counters"]
    got = {k: c.get(k) for k in ("mirrored", "mirror_drop_too_big", "mirror_drop_no_tool", "mirror_drop_no_mbuf")}
    if got != {"mirrored": 10, "mirror_drop_too_big": 10, "mirror_drop_no_tool": 20, "mirror_drop_no_mbuf": 0}:
        fail("copies not sent counted as %s, want 10 too big (before 2 s) and 20 without a tool (after)" % got)
    back = [bytes(x[IP]) for x in PcapReader(os.path.join(out, "returned.pcap"))]
    if sorted(l3[b] for b in back if b in l3) != list(range(40)):
        fail("%d of 40 originals came back unchanged: a copy that was not sent held one back" % len(back))
    print("ok: copies not sent: %s; every original back unchanged" % got)


def shaped(exe, workdir, by_l3):
    """Weights and draining apply to a mirror group: from its event on, a
    tool at weight 0 and a drained one get no copy; no copy is lost."""
    events = ("- { at: %gs, server: %s, weight: 0 }\n"
              "- { at: %gs, server: %s, drain: true, timeout: 30s }\n" % (ZERO_AT, ZERO, DRAIN_AT, DRAINED))
    out, _ = run(exe, workdir, events, "shaped")
    fl = flows()
    web = {}
    seen = {"before": set(), "between": set(), "after": set()}
    for pkt in PcapReader(os.path.join(out, "to-mirrors.pcap")):
        t = float(pkt.time) - BASE
        tool, cid, rev, inner, aws = decode_copy(bytes(pkt))
        if not aws:
            continue  # dns: group tools-eth, no event
        fi, k = by_l3[inner]
        when = "before" if t < ZERO_AT - 0.01 else "between" if t < DRAIN_AT - 0.01 else "after"
        if t >= ZERO_AT + 0.01 and tool == ZERO:
            fail("a copy at %.2f s to %s, at weight 0 since %g s" % (t, ZERO, ZERO_AT))
        if t >= DRAIN_AT + 0.01 and tool == DRAINED:
            fail("a copy at %.2f s to %s, drained since %g s" % (t, DRAINED, DRAIN_AT))
        seen[when].add(tool)
        if fl[fi][0] == "web":
            web[(fi, k)] = web.get((fi, k), 0) + 1
    if seen["before"] != set(TOOLS):
        fail("before the events the copies reached %s, not all of %s: the test shows nothing" %
             (sorted(seen["before"]), TOOLS))
    if seen["after"] != {TOOLS[1]}:
        fail("after the drain the copies reached %s, want only %s" % (sorted(seen["after"]), TOOLS[1]))
    lost = [(fi, k) for fi, f in enumerate(fl) if f[0] == "web" for k in range(80) if web.get((fi, k), 0) != 1]
    if lost:
        fail("web packets not copied exactly once with weights and draining: %s" % lost[:10])
    print("ok: weight 0 at %g s and a drain at %g s: no copy to either after, every web packet copied once "
          "(tools before %s, between %s, after %s)" % (ZERO_AT, DRAIN_AT, sorted(seen["before"]),
                                                      sorted(seen["between"]), sorted(seen["after"])))


if __name__ == "__main__":
    main()
