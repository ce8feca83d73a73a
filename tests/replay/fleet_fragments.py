#!/usr/bin/python3
"""IP fragments across a fleet: gwlb-replay --node K/N --ecmp-policy P (issue 24
item 8, docs/fleet.md "Fragments across nodes").

usage: fleet_fragments.py GWLB_REPLAY CONFIG PCAP WORKDIR

A gateway ties a datagram's later fragments (no ports) to its flow through the
fragment entry its first fragment leaves, and that entry lives on the node that
saw the first fragment only (it is not synced). So a fleet loses no fragment
exactly when the router sends every fragment of a datagram to one node. Replays
PCAP (tools/gen_sample_pcap.py: IPv4 datagrams in 3 fragments, IPv6 ones in 2,
beside TCP/UDP/ICMP flows) with CONFIG (examples/replay.yaml) as a single
gateway and as every node K of fleets of 2 (and 3 for the default), under each
router model:

  - no --ecmp-policy (the default, l4-linux: Linux's fib_multipath_hash_policy
    1, which hashes every fragment, the first included, on addresses and
    protocol without ports), l4-linux and l3 (policy 0): no node drops a
    fragment (drop_fragment_unknown_flow 0 on every node), every fragment of
    the capture reached an appliance exactly once, on one node, and all the
    fragments of a datagram on the same node;
  - l4-first-with-ports (a router that reads the ports of a first fragment,
    which the later ones lack): fragments are lost; the drops the nodes count
    are exactly the later fragments that reached no appliance, every first
    fragment got through, and a later fragment got through only on its first
    fragment's node. This is the router setting docs/fleet.md says not to use.

Fragments are told apart by (addresses, IP ID, offset), decoded here with
struct from the input capture and from the inner packets of each node's
to-appliances.pcap (aws format: the inner packet is L3).
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import time

# (--ecmp-policy or None for the default, fleet sizes): the models that keep a
# datagram's fragments together, and the one that does not.
SAFE = [(None, [2, 3]), ("l4-linux", [2]), ("l3", [2])]
SPLITTING = ("l4-first-with-ports", [2])


def read_pcap(path):
    data = open(path, "rb").read()
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, off = [], 24
    while off < len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def fragment_of(ip):
    """((src, dst, id), offset) of an IP fragment, or None for a whole datagram."""
    v = ip[0] >> 4
    if v == 4:
        frag = struct.unpack("!H", ip[6:8])[0]
        if not (frag & 0x2000 or frag & 0x1FFF):
            return None
        return (ip[12:16], ip[16:20], ip[9], struct.unpack("!H", ip[4:6])[0]), (frag & 0x1FFF) * 8
    if v == 6:
        nh, off = ip[6], 40
        while nh in (0, 43, 60, 44):
            if nh == 44:
                fo = struct.unpack("!H", ip[off + 2:off + 4])[0]
                return (ip[8:24], ip[24:40], 44, struct.unpack("!I", ip[off + 4:off + 8])[0]), (fo >> 3) * 8
            nh, off = ip[off], off + (ip[off + 1] + 1) * 8
    return None


def input_fragments(pcap):
    """{fragment: datagram} of the router frames (Ethernet, optional 802.1Q)."""
    out = {}
    for b in read_pcap(pcap):
        et, off = struct.unpack("!H", b[12:14])[0], 14
        if et == 0x8100:
            et, off = struct.unpack("!H", b[16:18])[0], 18
        if et not in (0x0800, 0x86DD):
            continue
        f = fragment_of(b[off:])
        if f:
            out[(f[0], f[1])] = f[0]
    return out


def sent_fragments(pcap):
    """Fragments among the inner packets of an aws-format to-appliances.pcap."""
    out = []
    for b in read_pcap(pcap):
        assert b[12:14] == b"\x08\x00" and b[23] == 17, "not IPv4/UDP"
        assert struct.unpack("!H", b[36:38])[0] == 6081, "not Geneve"
        f = fragment_of(b[42 + 8 + (b[42] & 0x3F) * 4:])
        if f:
            out.append((f[0], f[1]))
    return out


def replay(exe, cfg, pcap, out, node=None, policy=None):
    shutil.rmtree(out, ignore_errors=True)
    cmd = [exe, "--config", cfg, "--in", pcap, "--out-dir", out, "--reflect", "--quiet"]
    if node:
        cmd += ["--node", "%d/%d" % node]
    if policy:
        cmd += ["--ecmp-policy", policy]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout)
    if p.returncode != 0:
        raise SystemExit("%s: gwlb-replay exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stdout))
    summary = json.load(open(os.path.join(out, "summary.json")))
    drops = summary["drops"].get("fragment_unknown_flow", 0)
    return drops, sent_fragments(os.path.join(out, "to-appliances.pcap")), summary


def fleet(exe, cfg, pcap, workdir, frags, n, policy):
    """Replays every node of a fleet of n; returns (errors, per-node drops, lost later fragments)."""
    name = policy or "default"
    errors, drops, where = [], [], {}
    for k in range(1, n + 1):
        d, sent, summary = replay(exe, cfg, pcap, os.path.join(workdir, name, "node%d-of-%d" % (k, n)),
                                  (k, n), policy)
        want = policy or "l4-linux"
        if summary.get("ecmp_policy") != want:
            errors.append("node %d/%d: summary.json ecmp_policy %r, expected %r"
                          % (k, n, summary.get("ecmp_policy"), want))
        drops.append(d)
        for fr in sent:
            if fr in where:
                errors.append("fragment %r reached an appliance on nodes %d and %d" % (fr, where[fr], k))
            where[fr] = k
    missing = [fr for fr in frags if fr not in where]
    firsts_missing = [fr for fr in missing if fr[1] == 0]
    if firsts_missing:
        errors.append("%d first fragments reached no appliance" % len(firsts_missing))
    if sum(drops) != len(missing):
        errors.append("the nodes counted %d drop_fragment_unknown_flow, %d fragments reached no appliance"
                      % (sum(drops), len(missing)))
    first_node = {frags[fr]: where[fr] for fr in frags if fr[1] == 0 and fr in where}
    for fr, k in where.items():
        if fr in frags and first_node.get(frags[fr]) != k:
            errors.append("a fragment of a datagram reached an appliance on node %d, its first fragment "
                          "on node %s" % (k, first_node.get(frags[fr])))
            break
    return errors, drops, len(missing)


def main():
    exe, cfg, pcap, workdir = sys.argv[1:5]
    os.makedirs(workdir, exist_ok=True)
    t0 = time.monotonic()
    frags = input_fragments(pcap)
    later = sum(1 for fr in frags if fr[1] != 0)
    print("capture: %d fragments of %d datagrams (%d later fragments)"
          % (len(frags), len(set(frags.values())), later))
    ok = True
    d, sent, _ = replay(exe, cfg, pcap, os.path.join(workdir, "single"))
    if d or sorted(sent) != sorted(frags):
        print("single gateway: FAILED: drop_fragment_unknown_flow %d, %d of %d fragments to appliances"
              % (d, len(sent), len(frags)))
        ok = False
    for policy, sizes in SAFE:
        for n in sizes:
            errors, drops, lost = fleet(exe, cfg, pcap, workdir, frags, n, policy)
            if any(drops):
                errors.insert(0, "fragments dropped (drop_fragment_unknown_flow) per node: %s" % drops)
            print("%s, %d nodes: fragment drops per node %s: %s"
                  % (policy or "no --ecmp-policy", n, drops, "ok" if not errors else "FAILED"))
            for e in errors:
                print("  " + e)
            ok = ok and not errors
    for n in SPLITTING[1]:
        errors, drops, lost = fleet(exe, cfg, pcap, workdir, frags, n, SPLITTING[0])
        if not lost:
            errors.insert(0, "no fragment was lost: the model no longer splits a datagram's fragments")
        print("l4-first-with-ports, %d nodes: fragment drops per node %s (%d of %d later fragments lost): %s"
              % (n, drops, lost, later, "as expected" if not errors else "FAILED"))
        for e in errors:
            print("  " + e)
        ok = ok and not errors
    # Bad values: a clear error and exit 2 before anything runs.
    for args, want in ((["--node", "1/2", "--ecmp-policy", "l4"], "--ecmp-policy l4: expected l3, l4-linux"),
                       (["--ecmp-policy", "l3"], "--ecmp-policy needs --node K/N")):
        p = subprocess.run([exe, "--config", cfg, "--in", pcap, "--out-dir", os.path.join(workdir, "bad"),
                            *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        good = p.returncode == 2 and want in p.stdout
        print("%s: exit %d%s" % (" ".join(args), p.returncode, "" if good else ": FAILED:\n" + p.stdout))
        ok = ok and good
    print("%s in %.1f s" % ("ok" if ok else "FAILED", time.monotonic() - t0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
