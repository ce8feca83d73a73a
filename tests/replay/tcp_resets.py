#!/usr/bin/python3
"""gwlb-replay --events with send_tcp_reset: the RSTs are in returned.pcap.

usage: tcp_resets.py GWLB_REPLAY WORKDIR

Writes a capture of 24 established TCP connections (IPv4 and IPv6, a segment
every 100 ms, directions alternating, real sequence and acknowledgment
numbers) and replays it with --reflect and an events file that fails one
appliance at 1 s, under failover_mode no_rebalance and rebalance, with
send_tcp_reset.on_unhealthy on; and once with it off.

Checks, decoding returned.pcap with scapy (checksums recomputed by scapy) and
with tshark: every connection on the failed appliance gets its RSTs from 1 s,
the first to each endpoint answering that endpoint's first segment after
the event, and one for each later segment (the capture's endpoints do not
stop): from the segment's destination to its source, ports swapped,
SEQ = the segment's ACK, flags RST only, valid IP and TCP checksums, to the
MAC it came from; no connection on another appliance gets one, and their
segments all come back; summary.json counts them (tcp_resets_sent,
tcp_resets_unhealthy). With resets off: no RST at all.
"""
import json
import os
import shutil
import subprocess
import sys

from scapy.all import IP, TCP, Ether, IPv6, PcapReader, wrpcap  # noqa: E402

SEC = 1_000_000_000
STEP = 100_000_000
BASE = 1_700_000_000
APPS = ["192.0.2.10", "192.0.2.11", "192.0.2.12"]
DOWN = APPS[0]
ROUTER_MAC, GW_MAC = "02:00:00:00:00:01", "02:00:00:00:00:aa"
FLOWS = 24
CONFIG = """node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:aa
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: fw
    geneve: {{ format: aws, vni: 0x123456 }}
    failover_mode: {mode}
    send_tcp_reset: {{ on_unhealthy: {reset} }}
    servers:
{servers}
"""


def endpoints(f):
    if f % 2:
        return "2001:db8:1::%x" % (0x100 + f), "2001:db8:2::7", True
    return "198.51.100.%d" % (10 + f), "203.0.113.7", False


def segment(f, k):
    """Segment k of connection f: even k client -> server, odd server -> client;
    both sides send 100 bytes a segment, SYN/SYN-ACK first."""
    c, s, v6 = endpoints(f)
    cport, sport = 30000 + f, 443
    cisn, sisn = 1000 * (f + 1), 500000 * (f + 1)
    n_client, n_server = (k + 1) // 2, k // 2  # segments each side sent before this one
    if k % 2 == 0:
        src, dst, sp, dp = c, s, cport, sport
        seq = cisn + (1 + 100 * (n_client - 1) if n_client else 0)
        ack = sisn + 1 + 100 * max(n_server - 1, 0) if k else 0
        flags = "S" if k == 0 else "A"
    else:
        src, dst, sp, dp = s, c, sport, cport
        seq = sisn + (1 + 100 * (n_server - 1) if n_server else 0)
        ack = cisn + 1 + 100 * max(n_client - 1, 0)
        flags = "SA" if k == 1 else "A"
    payload = b"" if k < 2 else bytes([f, k & 0xFF]) * 50
    ip = IPv6(src=src, dst=dst) if v6 else IP(src=src, dst=dst)
    return Ether(src=ROUTER_MAC, dst=GW_MAC) / ip / TCP(sport=sp, dport=dp, seq=seq, ack=ack, flags=flags) / payload


def write_capture(path):
    pkts = []
    for f in range(FLOWS):
        for k in range(30):  # 3 s of segments
            p = segment(f, k)
            p.time = BASE + (k * STEP + f * 1_000_000) / SEC
            pkts.append(p)
    pkts.sort(key=lambda p: p.time)
    wrpcap(path, pkts, nano=True)
    return {(f, k): segment(f, k) for f in range(FLOWS) for k in range(30)}


def run(exe, workdir, name, mode, reset):
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "config.yaml")
    servers = "\n".join("      - { address: %s }" % a for a in APPS)
    open(cfg, "w").write(CONFIG.format(mode=mode, reset="true" if reset else "false", servers=servers))
    ev = os.path.join(d, "events.yaml")
    open(ev, "w").write("- { at: 1s, server: %s, health: unhealthy }\n" % DOWN)
    out = os.path.join(d, "out")
    cmd = [exe, "--config", cfg, "--in", os.path.join(workdir, "conns.pcap"), "--out-dir", out,
           "--reflect", "--events", ev]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(os.path.join(d, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout)
    if p.returncode != 0:
        raise SystemExit("%s: gwlb-replay exited %d:\n%s" % (name, p.returncode, p.stdout))
    return out


def appliance_of_flows(out):
    """{flow: appliance} from to-appliances.pcap (before the event: the SYN's)."""
    where = {}
    for pkt in PcapReader(os.path.join(out, "to-appliances.pcap")):
        inner = bytes(pkt[IP].payload.payload)[8 + 32:]  # UDP 8 + Geneve 8 + options 24
        appliance = pkt[IP].dst
        ver = inner[0] >> 4
        q = IP(inner) if ver == 4 else IPv6(inner)
        t = q[TCP]
        cport = t.sport if t.dport == 443 else t.dport
        where.setdefault(cport - 30000, appliance)
    return where


def tshark_resets(path):
    """(src, dst, srcport, dstport, seq, flags, checksum status) of every RST, by tshark."""
    p = subprocess.run(["tshark", "-r", path, "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
                        "-o", "tcp.relative_sequence_numbers:FALSE",
                        "-Y", "tcp.flags.reset == 1", "-T", "fields", "-e", "ip.src", "-e", "ipv6.src",
                        "-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.seq", "-e", "tcp.flags",
                        "-e", "tcp.checksum.status", "-e", "ip.checksum.status"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("tshark failed: " + p.stderr)
    return [line.split("\t") for line in p.stdout.splitlines() if line]


def check(out, segs, reset, errors, name):
    def chk(ok, what):
        if not ok:
            errors.append("%s: %s" % (name, what))
        return ok

    where = appliance_of_flows(out)
    on_down = sorted(f for f, a in where.items() if a == DOWN)
    chk(len(where) == FLOWS, "every connection reached an appliance (%d)" % len(where))
    chk(0 < len(on_down) < FLOWS, "some connections on %s, not all (%s)" % (DOWN, on_down))
    rsts = {}
    others = 0
    for pkt in PcapReader(os.path.join(out, "returned.pcap")):
        t = pkt[TCP]
        if not t.flags.R:
            cport = t.sport if t.dport == 443 else t.dport
            others += 1
            continue
        cport = t.dport if t.sport == 443 else t.sport
        rsts.setdefault(cport - 30000, []).append(pkt)
    summary = json.load(open(os.path.join(out, "summary.json")))
    c = summary["counters"]
    if not reset:
        chk(not rsts, "resets off: no RST (%d flows got one)" % len(rsts))
        chk(c.get("tcp_resets_sent", 0) == 0, "resets off: tcp_resets_sent 0")
        return
    chk(sorted(rsts) == on_down, "RSTs for exactly the connections on %s: %s vs %s" % (DOWN, sorted(rsts), on_down))
    # The capture's endpoints do not stop at an RST: each of their segments from
    # 1 s on (k >= 10: segment k is sent at k * 100 ms + f ms) gets one, in order.
    for f in on_down:
        got = rsts.get(f, [])
        if not chk(len(got) == 20, "flow %d: an RST for each of its 20 segments from 1 s (got %d)" % (f, len(got))):
            continue
        for k, r in zip(range(10, 30), got):
            ipl = r[IPv6] if IPv6 in r else r[IP]
            answered = segment(f, k)
            ai = answered[IPv6] if IPv6 in answered else answered[IP]
            at = answered[TCP]
            what = "flow %d segment %d's RST (to the %s)" % (f, k, "client" if k % 2 == 0 else "server")
            chk(ipl.src == ai.dst and ipl.dst == ai.src, what + ": addresses swapped")
            chk(r[TCP].sport == at.dport and r[TCP].dport == at.sport, what + ": ports swapped")
            chk(r[TCP].seq == at.ack, what + ": SEQ %d = the segment's ACK %d" % (r[TCP].seq, at.ack))
            chk(str(r[TCP].flags) == "R", what + ": flags R only (%s)" % r[TCP].flags)
            chk(r[Ether].dst == ROUTER_MAC and r[Ether].src == GW_MAC, what + ": back to the router's MAC")
            # Checksums as scapy computes them.
            fresh = r.copy()
            del fresh[TCP].chksum
            if IP in fresh:
                del fresh[IP].chksum
            fresh = Ether(bytes(fresh))
            chk(fresh[TCP].chksum == r[TCP].chksum, what + ": TCP checksum")
            if IP in r:
                chk(fresh[IP].chksum == r[IP].chksum, what + ": IPv4 checksum")
    chk(c.get("tcp_resets_sent") == 20 * len(on_down), "tcp_resets_sent %s == %d" % (c.get("tcp_resets_sent"), 20 * len(on_down)))
    chk(c.get("tcp_resets_unhealthy") == c.get("tcp_resets_sent"), "all for on_unhealthy")
    # Every segment of a connection on another appliance came back.
    live = sum(30 for f in where if f not in on_down)
    chk(others >= live, "segments of the other connections all returned (%d >= %d)" % (others, live))
    # tshark agrees: as many RSTs, all checksums good.
    ts = tshark_resets(os.path.join(out, "returned.pcap"))
    chk(len(ts) == 20 * len(on_down), "tshark sees %d RSTs" % len(ts))
    for row in ts:
        # Wireshark's checksum status: 0 bad, 1 good, 2 unverified.
        chk(row[6] == "1", "tshark: TCP checksum good (%s)" % row)
        if row[0]:
            chk(row[7] == "1", "tshark: IPv4 checksum good (%s)" % row)


def main():
    exe, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    segs = write_capture(os.path.join(workdir, "conns.pcap"))
    errors = []
    for name, mode, reset in [("no-rebalance", "no_rebalance", True), ("rebalance", "rebalance", True),
                              ("off", "rebalance", False)]:
        out = run(exe, workdir, name, mode, reset)
        check(out, segs, reset, errors, name)
    if errors:
        print("\n".join(errors))
        sys.exit(1)
    print("tcp-resets: every segment of a connection on the failed appliance from 1 s got its RST, as RFC 9293 has it")


if __name__ == "__main__":
    main()
