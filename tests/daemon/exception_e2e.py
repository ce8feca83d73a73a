#!/usr/bin/python3
"""gwlbd's kernel exception path end to end (docs/exception-path.md).

run_exception.sh starts gwlbd in namespace GW with two ports:
  port 0: net_pcap on the veth end gwlbx-p0 (frames injected at its peer
          gwlbx-r0, where a sniffer records what leaves the port, with the
          kernel's timestamps);
  port 1: net_pcap replaying FLOOD (ICMP echo requests to our address, read as
          fast as the worker can) and writing to TX1;
and node.exception_path on (taps gwlbx-t0, gwlbx-t1). This script, given the
namespaces, checks:
  - both taps exist with their port's MAC and the underlay MTU;
  - tap gwlbx-t0 moved into namespace K works: with 192.0.2.1/24 on it there,
    the kernel answers an ICMP echo request and a TCP SYN injected on the
    wire, and the answers leave through port 0 - after the kernel's ARP
    request for the sender left too and the injected ARP reply reached it;
  - Geneve to our address and the ARP request for it are not seen on the tap
    (gwlbd handles them), the ARP reply is;
  - the flood on port 1 is all accounted for (to the kernel, or
    drop_exception_queue_full) and the workers never stalled;
  - latency wire->kernel and kernel->wire, on the kernel's clock (printed;
    each under 1 s, what BFD needs).

usage: exception_e2e.py SOCK WORK GW_NS K_NS FLOOD_COUNT
"""
import signal
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from checklib import api_call  # noqa: E402

from scapy.all import ARP, ICMP, IP, TCP, UDP, AsyncSniffer, Ether, Raw, rdpcap, sendp  # noqa: E402
from scapy.contrib.geneve import GENEVE  # noqa: E402

SOCK, WORK, GW, K, FLOOD = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
US_IP, US_MAC, PORT1_MAC = "192.0.2.1", "02:00:00:00:00:01", "02:00:00:00:00:02"
PEER_IP, PEER_MAC = "192.0.2.99", "02:00:00:00:00:99"
TAP_PCAP = WORK + "/tap.pcap"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def sh(*args, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def inject(frames):
    """Sends frames on gwlbx-r0 (namespace GW): they arrive at port 0."""
    # scapy sends from the namespace this script runs in (run_exception.sh runs it in GW).
    sendp(frames, iface="gwlbx-r0", verbose=False)


WIRE = []  # frames seen on gwlbx-r0: what we injected and what port 0 sent


def read_wire():
    return [p for p in list(WIRE) if p[Ether].src == US_MAC]


def read(path):
    try:
        return rdpcap(path)
    except Exception:  # written while we read (a partial record): try again later
        return []


def wait_for(what, pred, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = pred()
        if r:
            return r
        time.sleep(0.05)
    fail("timed out after %.0f s waiting for %s" % (timeout, what))


def stats():
    r = api_call(SOCK, "stats")
    if not r["ok"]:
        fail("stats: %r" % r)
    return r["result"]


def link(ns, name):
    out = sh("ip", "-o", "link", "show", name, ns=ns)
    mac = out.split("link/ether ")[1].split()[0]
    mtu = int(out.split(" mtu ")[1].split()[0])
    return mac, mtu


# 1. The taps exist, with their port's MAC and MTU.
for name, mac in (("gwlbx-t0", US_MAC), ("gwlbx-t1", PORT1_MAC)):
    got_mac, mtu = link(GW, name)
    if got_mac != mac or mtu != 1600:
        fail("%s: MAC %s MTU %d, want %s and 1600 (node.underlay_mtu)" % (name, got_mac, mtu, mac))
print("taps gwlbx-t0 (%s) and gwlbx-t1 (%s) exist, MTU 1600" % (US_MAC, PORT1_MAC))

# 2. The flood on port 1 (read from its pcap at start): every frame counted.
def flood_done():
    t = stats()["totals"]
    done = t["punted_exception"] + t["drop_exception_queue_full"]
    return t if done >= FLOOD else None


t = wait_for("the flood to be accounted for", flood_done, 60)
print("flood of %d echo requests on port 1: %d to the kernel, %d drop_exception_queue_full"
      % (FLOOD, t["punted_exception"], t["drop_exception_queue_full"]))
drops = sum(v for k, v in t.items() if k.startswith("drop_"))
if t["rx_packets"] != (t["encapsulated"] + t["returned"] + t["icmp_sent"] + t.get("tcp_resets_sent", 0)
                       + t["punted"] + drops):
    fail("counter invariant broken: %r" % t)
st = api_call(SOCK, "status")["result"]
gap = max(w["max_loop_gap_ns"] for w in st["workers"])
print("workers' longest loop gap since start: %.1f ms" % (gap / 1e6))


def port1_drained():
    p1 = next(p for p in stats()["ports"] if p["id"] == 1)["exception_path"]
    return p1 if p1["to_kernel"] + p1["dropped_tap"] == t["punted_exception"] else None


port1 = wait_for("the control thread to write every queued frame to tap gwlbx-t1", port1_drained)
print("tap gwlbx-t1: %r" % port1)

# 3. Move gwlbx-t0 into namespace K and give the kernel there our address.
sh("ip", "link", "set", "gwlbx-t0", "netns", K, ns=GW)
sh("ip", "link", "set", "gwlbx-t0", "up", ns=K)
sh("ip", "addr", "add", US_IP + "/24", "dev", "gwlbx-t0", ns=K)
cap = subprocess.Popen(["ip", "netns", "exec", K, "dumpcap", "-P", "-i", "gwlbx-t0", "-w", TAP_PCAP],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    # dumpcap says "Capturing on 'gwlbx-t0'" once its capture is open.
    for line in cap.stderr:
        if "Capturing on" in line:
            break
    else:
        fail("dumpcap on the tap did not start")

    sniffer = AsyncSniffer(iface="gwlbx-r0", prn=WIRE.append, store=False)
    sniffer.start()
    time.sleep(0.5)  # AsyncSniffer opens its socket in its thread: a margin, not a sync
    l2 = Ether(src=PEER_MAC, dst=US_MAC)
    geneve = l2 / IP(src="192.0.2.77", dst=US_IP) / UDP(sport=5555, dport=6081) / \
        GENEVE(vni=7, proto=0x0800) / IP(src="10.1.1.1", dst="10.2.2.2") / Raw(b"x" * 20)
    arp_req = Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") / \
        ARP(op=1, hwsrc=PEER_MAC, psrc=PEER_IP, pdst=US_IP)
    echo = l2 / IP(src=PEER_IP, dst=US_IP) / ICMP(type=8, id=0x4242, seq=1) / Raw(b"ping" * 8)
    syn = l2 / IP(src=PEER_IP, dst=US_IP) / TCP(sport=40000, dport=22, flags="S", seq=1000)
    inject([geneve, arp_req, echo, syn])

    # gwlbd answers the ARP request; the kernel asks for the sender's MAC.
    def kernel_arp():
        return [p for p in read_wire() if ARP in p and p[ARP].op == 1 and p[ARP].pdst == PEER_IP
                and p[ARP].psrc == US_IP and p[Ether].src == US_MAC]
    wait_for("the kernel's ARP request for %s out of port 0" % PEER_IP, kernel_arp)
    print("the kernel's ARP request for %s left through port 0" % PEER_IP)
    # gwlbd's answer comes from the control thread's 10 ms tick, the kernel's request through
    # the 1 ms exception-path poll: either may leave first.
    wait_for("gwlbd's answer to the ARP request for %s" % US_IP,
             lambda: [p for p in read_wire() if ARP in p and p[ARP].op == 2 and p[ARP].pdst == PEER_IP])
    inject([Ether(src=PEER_MAC, dst=US_MAC) /
            ARP(op=2, hwsrc=PEER_MAC, psrc=PEER_IP, hwdst=US_MAC, pdst=US_IP)])

    def answers():
        pk = read_wire()
        rep = [p for p in pk if ICMP in p and p[ICMP].type == 0 and p[ICMP].id == 0x4242]
        tcp = [p for p in pk if TCP in p and p[TCP].sport == 22 and p[TCP].dport == 40000]
        return (rep, tcp) if rep and tcp else None
    rep, tcp = wait_for("the kernel's echo reply and TCP answer out of port 0", answers)
    r = rep[0]
    if r[IP].src != US_IP or r[IP].dst != PEER_IP or r[Ether].dst != PEER_MAC or \
            r[Ether].src != US_MAC or bytes(r[ICMP].payload) != b"ping" * 8:
        fail("echo reply: %s" % r.summary())
    print("echo reply out of port 0: %s" % r.summary())
    print("TCP answer out of port 0: %s (flags %s)" % (tcp[0].summary(), tcp[0][TCP].flags))

    # Latency, all on the kernel's clock: 20 echo requests, 50 ms apart;
    # wire->kernel = request on the tap - request on gwlbx-r0 (includes
    # libpcap's capture on port 0); kernel->wire = reply on gwlbx-r0 - reply
    # on the tap.
    for seq in range(100, 120):
        inject([l2 / IP(src=PEER_IP, dst=US_IP) / ICMP(type=8, id=0x4343, seq=seq)])
        time.sleep(0.05)

    def all_replies():
        got = {p[ICMP].seq: float(p.time) for p in read_wire()
               if ICMP in p and p[ICMP].type == 0 and p[ICMP].id == 0x4343}
        return got if len(got) == 20 else None
    replied = wait_for("20 echo replies", all_replies)
    sent = {p[ICMP].seq: float(p.time) for p in list(WIRE)
            if p[Ether].src == PEER_MAC and ICMP in p and p[ICMP].type == 8 and p[ICMP].id == 0x4343}
    sniffer.stop()
finally:
    time.sleep(0.5)
    cap.send_signal(signal.SIGINT)
    cap.wait()

tap = rdpcap(TAP_PCAP)
seen = {p[ICMP].seq: float(p.time) for p in tap
        if ICMP in p and p[ICMP].type == 8 and p[ICMP].id == 0x4343}
answered = {p[ICMP].seq: float(p.time) for p in tap
            if ICMP in p and p[ICMP].type == 0 and p[ICMP].id == 0x4343}
if len(seen) != 20 or len(answered) != 20 or len(sent) != 20:
    fail("echo requests: %d sent, %d on the tap, %d replies on the tap"
         % (len(sent), len(seen), len(answered)))
w2k = sorted((seen[s] - sent[s]) * 1e3 for s in sent)
k2w = sorted((replied[s] - answered[s]) * 1e3 for s in sent)
rtt = sorted((replied[s] - sent[s]) * 1e3 for s in sent)
print("latency wire->kernel (injected -> on the tap): median %.2f ms, max %.2f ms"
      % (statistics.median(w2k), w2k[-1]))
print("latency kernel->wire (reply on the tap -> out of port 0): median %.2f ms, max %.2f ms"
      % (statistics.median(k2w), k2w[-1]))
print("ping round trip through gwlbd and the kernel: median %.2f ms, max %.2f ms"
      % (statistics.median(rtt), rtt[-1]))
if w2k[-1] > 1000 or k2w[-1] > 1000:
    fail("a frame took over 1 s through the exception path (BFD would miss it)")

# 4. What the tap saw: the echo, the SYN, the ARP reply; never Geneve or the ARP request.
if not [p for p in tap if ICMP in p and p[ICMP].id == 0x4242 and p[ICMP].type == 8]:
    fail("the first echo request never reached the tap")
if not [p for p in tap if TCP in p and p[TCP].dport == 22 and p[IP].src == PEER_IP]:
    fail("the TCP SYN never reached the tap")
if not [p for p in tap if ARP in p and p[ARP].op == 2 and p[ARP].psrc == PEER_IP]:
    fail("the ARP reply to us never reached the tap")
bad = [p for p in tap if (UDP in p and p[UDP].dport == 6081) or
       (ARP in p and p[ARP].op == 1 and p[ARP].psrc == PEER_IP)]
if bad:
    fail("the tap saw what gwlbd handles: %s" % [p.summary() for p in bad])
print("the tap saw the echo, the SYN and the ARP reply; not the Geneve packet nor the ARP request")
port0 = next(p for p in stats()["ports"] if p["id"] == 0)["exception_path"]
print("tap gwlbx-t0: %r" % port0)
if port0["from_kernel"] < 22 or port0["to_kernel"] < 23:
    fail("tap gwlbx-t0 counters too low: %r" % port0)
print("PASS")
