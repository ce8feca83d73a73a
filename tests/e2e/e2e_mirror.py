"""e2e_mirror: a mirror group on the lab (`lab.sh up --listeners 2` with
LAB_MIRROR=1, docs/lab.md "A mirror group"): app3 and app4 are passive tools
(gwlb-appliance --mirror-sink) receiving copies of tenant A's packets; tenant
B's flows are not mirrored.

Two byte-checked TCP streams, one per tenant, while dumpcap records on the
router's link to gwlbd what the router sends it. Checked: both streams
intact; every packet of tenant A's stream that reached gwlbd is in exactly one
tool's capture, byte for byte at L3 (both directions on one tool), and
nothing else of that flow is; no copy of tenant B's stream anywhere; the
tools' /stats count the copies under tenant-a's class id, both directions;
gwlbd counts them (`mirrored`) and drops none.
"""
import json
import os
import signal
import subprocess
import time

from scapy.all import IP, TCP, Ether, PcapReader  # noqa: E402

import e2e_classes as ec  # tests/e2e/e2e_classes.py

ROUTER_GW_MAC = "02:77:00:00:00:01"
TOOLS = {"app3": "10.77.9.13", "app4": "10.77.9.14"}


def flow_key(p):
    t = p[TCP]
    return frozenset(((p[IP].src, t.sport), (p[IP].dst, t.dport)))


def test_mirror(lab, args):
    lab.serve("tcp-echo-server", ec.SERVER, 7000)
    cap = os.path.join(lab.dir, "router-to-gw.pcap")
    dump = lab.spawn("router", "dumpcap", "-q", "-i", "r-gw", "-P", "-f", "tcp port 7000",
                     "-w", cap, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ec.wait_for("dumpcap's capture file", lambda: os.path.exists(cap) and os.path.getsize(cap) >= 24)
    time.sleep(0.5)
    c0 = ec.counters(lab)
    pa, ca = ec.stream(lab, ec.TENANT_A, 7000, 5, 200000)
    pb, cb = ec.stream(lab, ec.TENANT_B, 7000, 5, 200000)
    ec.finish(pa, "tenant A")
    ec.finish(pb, "tenant B")
    time.sleep(1.0)  # the last copies reach the tools
    dump.send_signal(signal.SIGTERM)
    dump.wait(10)
    c1 = ec.counters(lab)

    def fkey(c):
        ip, port = c.split(":")
        return frozenset(((ip, int(port)), (ec.SERVER, 7000)))
    fa, fb = fkey(ca), fkey(cb)
    to_gw = {fa: [], fb: []}
    for p in PcapReader(cap):
        if p.haslayer(TCP) and p[Ether].src == ROUTER_GW_MAC and flow_key(p) in to_gw:
            to_gw[flow_key(p)].append(bytes(p[IP]))
    assert len(to_gw[fa]) > 100 and len(to_gw[fb]) > 100, \
        f"the router capture holds {len(to_gw[fa])} / {len(to_gw[fb])} packets of the streams"
    sinks = {}
    for a in TOOLS:
        path = os.path.join(lab.dir, f"{a}-sink.pcap")
        sinks[a] = [bytes(p)[14:] for p in PcapReader(path)] if os.path.exists(path) else []
    def key_of(b):
        p = IP(b)
        return flow_key(p) if p.haslayer(TCP) else None
    got = {a: [b for b in s if key_of(b) == fa] for a, s in sinks.items()}
    other = {a: sum(1 for b in s if key_of(b) == fb) for a, s in sinks.items()}
    assert not any(other.values()), f"copies of tenant B's (unmirrored) stream: {other}"
    tools = [a for a in TOOLS if got[a]]
    assert len(tools) == 1, f"tenant A's stream reached tools {tools}: both directions must reach one"
    want, have = sorted(to_gw[fa]), sorted(got[tools[0]])
    missing = len(set(want) - set(have))
    assert want == have, (f"{tools[0]}'s capture holds {len(have)} packets of tenant A's stream, "
                          f"the router sent gwlbd {len(want)}; {missing} of those are not in it")
    r = lab.run(lab.mgmt, "curl", "-s", "--max-time", "3", f"http://{TOOLS[tools[0]]}:8080/stats")
    st = json.loads(r.stdout)
    cls = st["mirror_sink"]["classes"]
    counted = sum(v["forward"] + v["reverse"] for v in cls.values())
    assert len(cls) == 1 and counted >= len(have), f"{tools[0]} /stats mirror_sink: {st['mirror_sink']}"
    assert all(v["forward"] and v["reverse"] for v in cls.values()), f"one direction only: {cls}"
    mirrored = c1.get("mirrored", 0) - c0.get("mirrored", 0)
    dropped = sum(c1.get(k, 0) - c0.get(k, 0) for k in ("mirror_drop_no_tool", "mirror_drop_no_mbuf",
                                                         "mirror_drop_too_big"))
    assert mirrored >= len(want) and dropped == 0, f"gwlbd: mirrored {mirrored}, copy drops {dropped}"
    print(f"tenant A: {len(want)} packets to gwlbd, the same {len(have)} in {tools[0]}'s capture "
          f"(both streams intact); tenant B: no copy")
