#!/usr/bin/python3
"""The nsi format (Google Cloud Network Security Integration's Geneve options),
checked by Wireshark's own dissector (docs/wire-format.md "nsi format").

usage: nsi.py GWLB_REPLAY GWLB_APPLIANCE WORKDIR

tags.py's capture (three tenants' TCP flows, 20 packets each, both
directions) on one group of `format: nsi` (vni 0x123456, endpoint_id 7):
tenant-a's class tagged 4242, tenant-b's 0x10, the third untagged. Replayed
with --reflect (the reflection echoes every option, as appliances do).

Checks on to-appliances.pcap, decoded by tshark (geneve.option.gcp.*):
every packet carries exactly Google's three options (class 0x0132) and no
other; the network ID is the group's VNI; the direction is ingress (0) from
the client, the flow's first sender, and egress (1) from the server; the
endpoint ID is the group's endpoint_id in its high half and a flow cookie,
the same on every packet of a flow in both directions, in its low half; the
profile ID is the class's tag (0 untagged). The same bytes by the layout
docs/wire-format.md states (struct), and the outer checksums verify. Every
packet comes back (returned.pcap): the return path takes its flow cookie
from the endpoint ID. Then gwlb-appliance, sent the Geneve payloads, counts
them under format nsi and per profile ID and direction.
"""
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tags as T  # noqa: E402  (tests/replay/tags.py: the capture and its helpers)

from scapy.all import PcapReader  # noqa: E402

VNI, EID = 0x123456, 7
CONFIG = """node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:aa
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: fw
    geneve: {{ format: nsi, vni: {vni}, endpoint_id: {eid} }}
    servers:
      - {{ address: {app} }}
tags:
  - {{ name: tenant-a, value: 4242 }}
traffic_classes:
  - {{ name: tenant-a, match: {{ prefixes: [10.1.0.0/16] }}, action: inspect, tag: tenant-a }}
  - {{ name: tenant-b, match: {{ prefixes: [10.2.0.0/16] }}, action: inspect, tag: 0x10 }}
  - {{ name: other, action: inspect }}
"""


def fail(msg):
    raise SystemExit("FAIL: " + msg)


def tshark_fields(pcap):
    fields = ["geneve.option.class", "geneve.option.type", "geneve.option.gcp.vnid",
              "geneve.option.gcp.direction", "geneve.option.gcp.endpoint", "geneve.option.gcp.profile"]
    cmd = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=/t"]
    for f in fields:
        cmd += ["-e", f]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("tshark: %s" % p.stderr)
    return [dict(zip(fields, line.split("\t"))) for line in p.stdout.splitlines()]


def main():
    exe, app_exe, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    origin = T.write_capture(os.path.join(workdir, "flows.pcap"))
    fl = T.flows()
    cfg = os.path.join(workdir, "config.yaml")
    open(cfg, "w").write(CONFIG.format(vni=VNI, eid=EID, app=T.APP))
    out = os.path.join(workdir, "out")
    cmd = [exe, "--config", cfg, "--in", os.path.join(workdir, "flows.pcap"), "--out-dir", out, "--reflect"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(os.path.join(workdir, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout)
    if p.returncode != 0:
        fail("gwlb-replay exited %d:\n%s" % (p.returncode, p.stdout))
    pcap = os.path.join(out, "to-appliances.pcap")

    want_tag = {"a": 4242, "b": 0x10, "c": 0}
    decoded = tshark_fields(pcap)
    cookies, per_profile, n = {}, {}, 0
    for pkt, d in zip(PcapReader(pcap), decoded):
        raw = bytes(pkt)
        T.check_outer(raw)
        g, opts, inner = T.geneve_of(raw)
        fi, k = T.key_of(inner, "aws", origin)
        tenant, egress = fl[fi][0], k % 2
        where = "flow %d packet %d" % (fi, k)
        # Wireshark's reading.
        if d["geneve.option.class"] != "0x0132,0x0132,0x0132":
            fail("%s: option classes %s, want Google's three" % (where, d["geneve.option.class"]))
        if sorted(d["geneve.option.type"].split(",")) != ["0x01", "0x02", "0x03"]:
            fail("%s: option types %s" % (where, d["geneve.option.type"]))
        if int(d["geneve.option.gcp.vnid"]) != VNI:
            fail("%s: tshark's network ID %s, want %d" % (where, d["geneve.option.gcp.vnid"], VNI))
        if int(d["geneve.option.gcp.direction"]) != egress:
            fail("%s: tshark's direction %s, want %d" % (where, d["geneve.option.gcp.direction"], egress))
        eid = bytes.fromhex(d["geneve.option.gcp.endpoint"])
        if len(eid) != 8 or struct.unpack("!I", eid[:4])[0] != EID:
            fail("%s: tshark's endpoint ID %s, want %08x and the cookie" % (where, eid.hex(), EID))
        if int(d["geneve.option.gcp.profile"]) != want_tag[tenant]:
            fail("%s: tshark's profile ID %s, want %d" % (where, d["geneve.option.gcp.profile"], want_tag[tenant]))
        cookie = struct.unpack("!I", eid[4:])[0]
        if cookies.setdefault(fi, cookie) != cookie:
            fail("%s: cookie %08x, the flow's first packet had %08x" % (where, cookie, cookies[fi]))
        # The bytes, by the documented layout (network ID, profile ID, endpoint ID).
        want = (struct.pack("!HBBI", 0x0132, 1, 1, VNI << 4 | egress) +
                struct.pack("!HBBQ", 0x0132, 3, 2, want_tag[tenant]) +
                struct.pack("!HBBII", 0x0132, 2, 2, EID, cookie))
        if g[0] != 8 or bytes(g[8:40]) != want or struct.unpack("!I", g[4:8])[0] >> 8 != VNI:
            fail("%s: Geneve header %s, want options %s" % (where, bytes(g[:40]).hex(), want.hex()))
        per_profile.setdefault(want_tag[tenant], [0, 0])[egress] += 1
        n += 1
    total = len(fl) * 20
    if n != total or len(decoded) != total:
        fail("%d packets to the appliance (%d decoded), want %d" % (n, len(decoded), total))
    if len(set(cookies.values())) != len(fl):
        fail("%d distinct cookies for %d flows" % (len(set(cookies.values())), len(fl)))
    back = sum(1 for _ in PcapReader(os.path.join(out, "returned.pcap")))
    if back != total:
        fail("%d of %d packets came back: the return path refused nsi returns" % (back, total))

    _, st = T.appliance_stats(app_exe, workdir, "nsi-appliance", [], pcap)
    got = {int(t): [c["ingress"], c["egress"]] for t, c in st["nsi_profiles"].items()}
    if got != per_profile or st["formats"].get("nsi") != total:
        fail("gwlb-appliance: profiles %s (want %s), formats %s" % (got, per_profile, st["formats"]))
    print("ok: %d packets in the nsi format, by tshark and by the layout; profiles %s; all returned"
          % (total, per_profile))


if __name__ == "__main__":
    main()
