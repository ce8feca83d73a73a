#!/usr/bin/python3
"""Tags and mirror copies seen by gwlb-appliance (docs/replay.md "Mirror copies and tags").

usage: tags.py GWLB_REPLAY GWLB_APPLIANCE WORKDIR aws|ethernet [ipv6]

With ipv6, the appliance and the tool have IPv6 addresses (outer IPv6:
version, lengths, next header and the UDP checksum checked on every packet
and copy, which over IPv6 must not be 0).

Two tenants' TCP flows (clients in 10.1.0.0/16 and 10.2.0.0/16, one server
address, the same ports) on one listener of ONE appliance, each tenant its
class: tenant-a `tag: tenant-a` (a name in `tags`, 4242), tenant-b
`tag: 0x10`; a third class, untagged. Replayed with --reflect (the reflected
packets carry every option back, as appliances echo them).

Checks on to-appliances.pcap (struct): every packet of a tagged class carries
gwlb's tag option (class 0xFF01, type 3, 8 bytes: direction bit, tag) with
its tenant's value, after AWS's three options, which are byte for byte what
the same run without tags sends (aws format); untagged packets carry no
option of ours. The direction bit is 0 from the client (the first sender), 1
from the server. Every packet comes back (returned.pcap): the return path
accepts the extra option.

Then the Geneve payloads of to-appliances.pcap are sent to a gwlb-appliance
(UDP on 127.0.0.1): its /stats counts per tag exactly each tenant's packets
per direction; and the copies of to-mirrors.pcap (tenant-a mirrored too) to a
gwlb-appliance --mirror-sink, whose pcap holds exactly the originals' IP
packets (aws) or frames (ethernet), in order.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import urllib.request

from scapy.all import IP, TCP, Ether, PcapReader, wrpcap  # noqa: E402

BASE = 1_700_000_000
ROUTER_MAC, GW_MAC = "02:00:00:00:00:01", "02:00:00:00:00:aa"
APP = "192.0.2.10"
TOOL = "192.0.2.50"
APP6 = "2001:db8:f::10"
TOOL6 = "2001:db8:f::50"
CONFIG = """node:
  underlay_ip: 192.0.2.1
  underlay_ipv6: 2001:db8:f::1
  underlay_mac: 02:00:00:00:00:aa
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: fw
    geneve: {{ format: {fmt}, vni: 0x123456, endpoint_id: 7, attachment_id: 9 }}
    servers:
      - {{ address: {app} }}
  - name: tools
    geneve: {{ format: {fmt}, vni: 99 }}
    servers:
      - {{ address: {tool} }}
{tags}traffic_classes:
  - {{ name: tenant-a, match: {{ prefixes: [10.1.0.0/16] }}, action: inspect{ta}{mirror} }}
  - {{ name: tenant-b, match: {{ prefixes: [10.2.0.0/16] }}, action: inspect{tb} }}
  - {{ name: other, action: inspect }}
"""
TAGS = "tags:\n  - { name: tenant-a, value: 4242 }\n"
WANT = {"a": 4242, "b": 0x10, "c": None}


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def flows():
    out = []
    for t, net in (("a", 1), ("b", 2), ("c", 3)):
        for i in range(6):
            out.append((t, "10.%d.0.%d" % (net, 10 + i), "203.0.113.7", 40000 + i, 443))
    return out


def packet(f, k):
    t, c, s, cp, sp = f
    fwd = k % 2 == 0
    ip = IP(src=c, dst=s, id=k + 1) if fwd else IP(src=s, dst=c, id=k + 1)
    tcp = TCP(sport=cp, dport=sp, seq=k, flags="S" if k == 0 else "A") if fwd else \
        TCP(sport=sp, dport=cp, seq=k, flags="SA" if k == 1 else "A")
    return Ether(src=ROUTER_MAC, dst=GW_MAC) / ip / tcp / (bytes([k]) * (100 + k))


def write_capture(path):
    pkts, origin = [], {}
    for fi, f in enumerate(flows()):
        for k in range(20):
            p = packet(f, k)
            p.time = BASE + k * 0.05 + fi * 0.001
            pkts.append(p)
            origin[bytes(p[IP])] = (fi, k)
    pkts.sort(key=lambda p: p.time)
    wrpcap(path, pkts, nano=True)
    return origin


def replay(exe, workdir, name, fmt, tagged, ipv6):
    d = os.path.join(workdir, name)
    os.makedirs(d)
    cfg = os.path.join(d, "config.yaml")
    open(cfg, "w").write(CONFIG.format(
        fmt=fmt, app=APP6 if ipv6 else APP, tool=TOOL6 if ipv6 else TOOL, tags=TAGS if tagged else "",
        ta=", tag: tenant-a" if tagged else "", tb=", tag: 0x10" if tagged else "",
        mirror=", mirror: { group: tools }"))
    out = os.path.join(d, "out")
    cmd = [exe, "--config", cfg, "--in", os.path.join(workdir, "flows.pcap"), "--out-dir", out, "--reflect"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(os.path.join(d, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout)
    if p.returncode != 0:
        fail("%s: gwlb-replay exited %d:\n%s" % (name, p.returncode, p.stdout))
    return out


def outer_len(raw):
    """The outer Ethernet, IP and UDP headers' length: IPv4's or IPv6's."""
    return 62 if raw[12:14] == b"\x86\xdd" else 42


def geneve_of(raw):
    """(Geneve bytes, options [(class, type, data)], inner) of an outer frame."""
    g = raw[outer_len(raw):]
    optlen = (g[0] & 0x3F) * 4
    opts, at = [], 8
    while at < 8 + optlen:
        oc, ot, ol = struct.unpack("!HBB", g[at:at + 4])
        n = (ol & 0x1F) * 4
        opts.append((oc, ot, g[at + 4:at + 4 + n]))
        at += 4 + n
    return g, opts, g[8 + optlen:]


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def check_outer(raw, zero_udp_ok=False):
    """The outer IPv4 and UDP checksums verify (the tag option is inside both
    lengths); over IPv6 the lengths, next header and the UDP checksum, which
    must not be 0. zero_udp_ok: an IPv4 mirror copy's UDP checksum may be 0."""
    if outer_len(raw) == 62:
        ip, udp = raw[14:54], raw[54:]
        if ip[0] >> 4 != 6 or ip[6] != 17:
            fail("outer IPv6 header: version %d, next header %d" % (ip[0] >> 4, ip[6]))
        if struct.unpack("!H", ip[4:6])[0] != len(udp) or struct.unpack("!H", udp[4:6])[0] != len(udp):
            fail("outer IPv6 lengths do not cover the packet")
        if udp[6:8] == b"\0\0":
            fail("outer UDP checksum 0 over IPv6 (%d bytes)" % len(raw))
        pseudo = ip[8:40] + struct.pack("!IxxxB", len(udp), 17)
        if csum(pseudo + udp) != 0xFFFF:
            fail("outer UDP checksum over IPv6 wrong (%d bytes)" % len(raw))
        return
    ip, udp = raw[14:34], raw[34:]
    if csum(ip) != 0xFFFF:
        fail("outer IPv4 checksum wrong")
    if struct.unpack("!H", ip[2:4])[0] != len(raw) - 14 or struct.unpack("!H", udp[4:6])[0] != len(udp):
        fail("outer lengths do not cover the packet")
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, len(udp))
    if zero_udp_ok and udp[6:8] == b"\0\0":
        return
    if csum(pseudo + udp) != 0xFFFF:
        fail("outer UDP checksum wrong (%d bytes)" % len(raw))


def key_of(inner, fmt, origin):
    l3 = inner if fmt == "aws" else inner[14:]
    if l3 not in origin:
        fail("a packet to the appliance is no original")
    return origin[l3]


def get_json(port):
    for _ in range(100):
        try:
            return json.load(urllib.request.urlopen("http://127.0.0.1:%d/stats" % port, timeout=2))
        except OSError:
            time.sleep(0.1)
    fail("gwlb-appliance's /stats did not answer")


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def appliance(exe, workdir, name, extra):
    udp, http, reply = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM), free_port(socket.SOCK_DGRAM)
    log = open(os.path.join(workdir, name + ".log"), "w")
    p = subprocess.Popen([exe, "--listen", "127.0.0.1", "--port", str(udp), "--reply-port", str(reply),
                          "--http", "127.0.0.1:%d" % http, "--name", name] + extra, stdout=log, stderr=log)
    get_json(http)
    return p, udp, http


def appliance_stats(exe, workdir, name, extra, pcap):
    """A gwlb-appliance started for pcap (name, extra arguments), sent the Geneve
    payload of its every frame, then stopped. Returns (packets sent, its /stats
    once it counted them all, or after 10 s)."""
    p, udp, http = appliance(exe, workdir, name, extra)
    try:
        sent = send_all(pcap, udp)
        for _ in range(100):
            st = get_json(http)
            if st["packets"] >= sent:
                break
            time.sleep(0.1)
    finally:
        p.terminate()
        p.wait()
    return sent, st


def send_all(pcap, port):
    """The Geneve payload (UDP payload) of every frame, to 127.0.0.1:port."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    n = 0
    for pkt in PcapReader(pcap):
        raw = bytes(pkt)
        s.sendto(raw[outer_len(raw):], ("127.0.0.1", port))
        n += 1
        if n % 50 == 0:
            time.sleep(0.01)  # the appliance's socket buffer, on a loaded machine
    return n


def main():
    exe, app_exe, workdir, fmt = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    ipv6 = sys.argv[5:] == ["ipv6"]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    origin = write_capture(os.path.join(workdir, "flows.pcap"))
    fl = flows()
    plain = replay(exe, workdir, "untagged", fmt, False, ipv6)
    out = replay(exe, workdir, "tagged", fmt, True, ipv6)

    aws_opts = {}
    for pkt in PcapReader(os.path.join(plain, "to-appliances.pcap")):
        g, opts, inner = geneve_of(bytes(pkt))
        aws_opts[key_of(inner, fmt, origin)] = bytes(g[8:8 + 32]) if fmt == "aws" else b""
    per_tag = {}
    n = 0
    for pkt in PcapReader(os.path.join(out, "to-appliances.pcap")):
        n += 1
        if (outer_len(bytes(pkt)) == 62) != ipv6:
            fail("a packet to the appliance has the wrong outer family")
        check_outer(bytes(pkt))
        g, opts, inner = geneve_of(bytes(pkt))
        fi, k = key_of(inner, fmt, origin)
        tenant = fl[fi][0]
        ours = [(ot, d) for oc, ot, d in opts if oc == 0xFF01]
        if fmt == "aws":
            if [(oc, ot) for oc, ot, d in opts[:3]] != [(0x0108, 1), (0x0108, 2), (0x0108, 3)]:
                fail("AWS's options are not first: %s" % [(hex(oc), ot) for oc, ot, d in opts])
            if bytes(g[8:8 + 32]) != aws_opts[(fi, k)]:
                fail("AWS's options differ from the untagged run's (flow %d packet %d)" % (fi, k))
        if WANT[tenant] is None:
            if ours:
                fail("an untagged class's packet carries gwlb options %s" % ours)
            continue
        if len(ours) != 1 or ours[0][0] != 3 or len(ours[0][1]) != 8:
            fail("tenant %s packet without exactly one tag option: %s" % (tenant, ours))
        d = ours[0][1]
        tag, rev = struct.unpack("!I", d[4:8])[0], d[0] & 1
        if tag != WANT[tenant]:
            fail("tenant %s packet tagged %d, want %d" % (tenant, tag, WANT[tenant]))
        if rev != k % 2:
            fail("tenant %s flow %d packet %d: direction bit %d, want %d" % (tenant, fi, k, rev, k % 2))
        per_tag.setdefault(tag, [0, 0])[rev] += 1
    total = len(fl) * 20
    if n != total:
        fail("%d packets to the appliance, want %d" % (n, total))
    back = sum(1 for _ in PcapReader(os.path.join(out, "returned.pcap")))
    if back != total:
        fail("%d of %d packets came back: the return path refused packets carrying the tag option" % (back, total))

    # gwlb-appliance counts per tag.
    sent, st = appliance_stats(app_exe, workdir, "tenant-appliance", [], os.path.join(out, "to-appliances.pcap"))
    got = {int(t): [c["forward"], c["reverse"]] for t, c in st["tags"].items()}
    if got != per_tag:
        fail("gwlb-appliance /stats tags %s, want %s (packets %d of %d)" % (got, per_tag, st["packets"], sent))

    # The copies' outer headers, in the tool's family.
    for pkt in PcapReader(os.path.join(out, "to-mirrors.pcap")):
        if (outer_len(bytes(pkt)) == 62) != ipv6:
            fail("a mirror copy has the wrong outer family")
        check_outer(bytes(pkt), zero_udp_ok=True)
    # gwlb-appliance --mirror-sink: tenant-a's copies, written as pcap.
    sink = os.path.join(workdir, "sink.pcap")
    sent, _ = appliance_stats(app_exe, workdir, "tool", ["--mirror-sink", sink], os.path.join(out, "to-mirrors.pcap"))
    want = []
    for pkt in PcapReader(os.path.join(workdir, "flows.pcap")):
        fi, k = origin[bytes(pkt[IP])]
        if fl[fi][0] == "a":
            want.append(bytes(pkt) if fmt == "ethernet" else bytes(pkt[IP]))
    got = []
    for pkt in PcapReader(sink):
        raw = bytes(pkt)
        got.append(raw if fmt == "ethernet" else raw[14:])
    if sent != len(want) or got != want:
        fail("the sink wrote %d packets, %d copies were sent, %d originals of tenant-a; "
             "first difference at %s" % (len(got), sent, len(want),
                                         next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), "the end")))
    print("ok (%s%s): tags %s on one appliance; %d copies in the sink equal the originals" %
          (fmt, " over IPv6" if ipv6 else "", per_tag, len(got)))


if __name__ == "__main__":
    main()
