#!/usr/bin/python3
"""Traffic classes through gwlb-replay (issue 27, docs/replay.md "Traffic classes").

usage: classes.py GWLB_REPLAY WORKDIR classes|reload|warnings [--doc docs/replay.md]

Writes its own capture (struct, no scapy): long-lived TCP flows of several
"tenants", a packet every 100 ms with the directions alternating (the TCP
sequence number is the packet's number within its flow, the client port names
the flow), and replays it with --reflect through three listeners of two
appliances each:

  tenant-a  VLAN 100 one way, VLAN 101 the other (a router that sends the two
            directions on two VLANs; the class lists both)  -> listener la
  tenant-b  clients in 10.2.0.0/16, untagged                 -> listener lb
  tenant-c  VLAN 300 and clients in 10.3.0.0/16              -> listener lc
  backups   10.9.0.0/16, TCP port 873: bypass (listed first)
  blocked   10.6.0.0/16: drop
  (10.7.0.0/16 matches no class: dropped as unclassified)

classes: every packet of a tenant reaches exactly one appliance, of its own
listener's group, both directions of a flow the same one; no packet of
another class reaches any appliance; every bypassed frame comes back once,
byte for byte the frame it came in as with the two MAC addresses swapped
(VLAN tag and L3 unchanged); the per-class summary (summary.json
"traffic_classes" and the table on stdout) counts exactly the capture's
packets and bytes per class, the bypassed, the unclassified and the class drops;
with --doc, the block docs/replay.md quotes is exactly that table.

reload: an events file reloads, at 5 s, a config in which tenant-a goes to
listener lc and tenant-b is bypassed. Flows established before the reload
keep their appliance and cookie to the end (tenant-b's are still inspected,
never bypassed); flows that start after it follow the new classes (new
tenant-a flows on lc's appliances, new tenant-b flows bypassed, frame intact).
The summary counts each class by name over both configs, under the action
that handled each packet: tenant-b's old flows as inspect (lb), its new ones
as bypass.

Both scenarios: returned.pcap and to-appliances.pcap are in time order.

warnings: a class that an earlier one shadows; gwlb-replay's stderr carries
the warning gwlbd and `gwlbd --check-config` give for it.
"""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import events as ev  # noqa: E402

SEC, STEP = ev.SEC, ev.STEP
SERVER = bytes([203, 0, 113, 7])
GROUPS = {"ga": ["192.0.2.10", "192.0.2.11"], "gb": ["192.0.2.20", "192.0.2.21"],
          "gc": ["192.0.2.30", "192.0.2.31"]}
LISTENER_GROUP = {"la": "ga", "lb": "gb", "lc": "gc"}

# tenant: (client /16, VLAN client->server, VLAN server->client, server port)
TENANTS = {"a": (1, 100, 101, 443), "b": (2, 0, 0, 443), "c": (3, 300, 300, 443),
           "backup": (9, 0, 0, 873), "blocked": (6, 0, 0, 443), "none": (7, 0, 0, 443)}

CLASSES_1 = """traffic_classes:
  - name: backups
    match: { prefixes: [10.9.0.0/16], protocols: [tcp], l4_ports: [873] }
    action: bypass
  - name: tenant-a
    match: { vlans: [100, 101] }
    listener: la
  - name: tenant-b
    match: { prefixes: [10.2.0.0/16] }
    listener: lb
  - name: tenant-c
    match: { vlans: [300], prefixes: [10.3.0.0/16] }
    listener: lc
  - name: blocked
    match: { prefixes: [10.6.0.0/16] }
    action: drop
"""
# After the reload: tenant-a to lc, tenant-b bypassed.
CLASSES_2 = """traffic_classes:
  - name: backups
    match: { prefixes: [10.9.0.0/16], protocols: [tcp], l4_ports: [873] }
    action: bypass
  - name: tenant-b
    match: { prefixes: [10.2.0.0/16] }
    action: bypass
  - name: tenant-a
    match: { vlans: [100, 101] }
    listener: lc
  - name: tenant-c
    match: { vlans: [300], prefixes: [10.3.0.0/16] }
    listener: lc
  - name: blocked
    match: { prefixes: [10.6.0.0/16] }
    action: drop
"""


def config(classes):
    groups = "".join(
        "  - name: %s\n    stickiness: 5-tuple\n    geneve: %s\n    servers:\n%s" %
        (g, ev.GENEVE["aws"], "".join("      - { address: %s }\n" % a for a in apps))
        for g, apps in GROUPS.items())
    listeners = "".join("  - { name: %s, server_groups: [%s] }\n" % (l, g)
                        for l, g in LISTENER_GROUP.items())
    return ("node:\n  underlay_ip: 192.0.2.1\n  underlay_mac: 02:00:00:00:00:aa\n"
            "  gateway_mac: 02:00:00:00:00:fe\nserver_groups:\n" + groups +
            "listeners:\n" + listeners + classes + "dataplane:\n  flow_table_size: 65536\n")


class Capture:
    """Flows: id -> (tenant, [capture times]); frames by (flow, k)."""

    def __init__(self):
        self.flows = {}

    def add(self, tenant, n, start, end):
        for _ in range(n):
            f = len(self.flows)
            self.flows[f] = (tenant, [start + f * 1_000_000 + t for t in range(0, end - start, STEP)])

    def frame(self, f, k):
        """Packet k of flow f: even k client -> server (client port 20000 + f),
        odd k the reply; tagged with the tenant's VLAN of that direction."""
        tenant = self.flows[f][0]
        net, vfwd, vrev, sport = TENANTS[tenant]
        c, s, cp, sp = bytes([10, net, f >> 8, f & 0xFF]), SERVER, 20000 + f, sport
        vlan = vfwd
        if k % 2:
            c, s, cp, sp, vlan = s, c, sp, cp, vrev
        payload = bytes([f & 0xFF, k & 0xFF]) * 20
        tcp = struct.pack("!HHIIBBHHH", cp, sp, k, 0, 5 << 4, 0x02 if k == 0 else 0x10, 65535, 0, 0)
        tcp += payload
        tcp = tcp[:16] + struct.pack("!H", ev.csum(c + s + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), (f << 8 | k) & 0xFFFF, 0x4000, 64, 6, 0, c, s)
        ip = ip[:10] + struct.pack("!H", ev.csum(ip)) + ip[12:]
        tag = struct.pack("!HH", 0x8100, vlan) if vlan else b""
        return ev.GW_MAC + ev.ROUTER_MAC + tag + b"\x08\x00" + ip + tcp

    def write(self, path):
        pkts = [(t, f, k) for f, (_, ts) in self.flows.items() for k, t in enumerate(ts)]
        t0 = min(p[0] for p in pkts)
        self.times = ev.write_pcap(path, [(t - t0, f, k) for t, f, k in pkts], self.frame)
        self.frames = {pid: self.frame(*pid) for pid in self.times}

    def of(self, tenant, since=None, before=None):
        return [f for f, (t, ts) in self.flows.items() if t == tenant and
                (since is None or ts[0] >= since) and (before is None or ts[0] < before)]


def packet_id(ip):
    """(flow, k) of an inner IPv4/TCP packet: the client port is 20000 + flow."""
    ihl = (ip[0] & 0xF) * 4
    sport, dport, seq = struct.unpack("!HHI", ip[ihl:ihl + 8])
    return (sport if sport >= 20000 else dport) - 20000, seq


def ip_payload(b):
    """The IPv4 packet of a (possibly VLAN-tagged) router frame."""
    return b[18:] if b[12:14] == b"\x81\x00" else b[14:]


def cookie_of(b):
    """The flow cookie of an aws-format Geneve frame (option 0x0108/3 at offset 24)."""
    opt = 42 + 8 + 24
    assert b[opt:opt + 3] == b"\x01\x08\x03", "no cookie option where expected"
    return int.from_bytes(b[opt + 4:opt + 8], "big")


def run(exe, d, cap, cfg_text, events=None, files=None):
    """Replays cap with config cfg_text (and events, and other files written
    into d first) in a fresh d; (stdout, summary, seen, returned)."""
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, text in (files or {}).items():
        open(os.path.join(d, name), "w").write(text)
    cap.write(os.path.join(d, "in.pcap"))
    open(os.path.join(d, "config.yaml"), "w").write(cfg_text)
    cmd = [exe, "--config", os.path.join(d, "config.yaml"), "--in", os.path.join(d, "in.pcap"),
           "--out-dir", os.path.join(d, "out"), "--reflect", "--workers", "2", "--quiet"]
    if events:
        open(os.path.join(d, "events.yaml"), "w").write(events)
        cmd += ["--events", os.path.join(d, "events.yaml")]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    open(os.path.join(d, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    if p.returncode != 0:
        raise SystemExit("gwlb-replay exited %d:\n%s%s" % (p.returncode, p.stdout, p.stderr))
    out = os.path.join(d, "out")
    seen = {}  # (flow, k) -> [(appliance, cookie)]
    for b in ev.read_pcap(os.path.join(out, "to-appliances.pcap")):
        dst, ip = ev.inner_of_geneve(b)
        seen.setdefault(packet_id(ip), []).append((dst, cookie_of(b)))
    returned = {}
    for b in ev.read_pcap(os.path.join(out, "returned.pcap")):
        returned.setdefault(packet_id(ip_payload(b)), []).append(b)
    return p.stdout, json.load(open(os.path.join(out, "summary.json"))), seen, returned


def check_inspected(chk, cap, seen, returned, flows, groups, label):
    """Every packet of `flows` at one appliance of `groups`, once, one
    appliance and one cookie per flow (both directions), and back."""
    apps = {a for g in groups for a in GROUPS[g]}
    for f in flows:
        states = set()
        for k in range(len(cap.flows[f][1])):
            got = seen.get((f, k), [])
            if not chk(len(got) == 1, "%s: flow %d packet %d reached %d appliances' traffic %s" %
                       (label, f, k, len(got), got)):
                continue
            states.add(got[0])
            chk(got[0][0] in apps, "%s: flow %d packet %d went to %s, not one of %s" %
                (label, f, k, got[0][0], sorted(apps)))
            chk(len(returned.get((f, k), [])) == 1, "%s: flow %d packet %d did not come back once" % (label, f, k))
        chk(len(states) == 1, "%s: flow %d had %d (appliance, cookie) states: %s" % (label, f, len(states), states))


def check_bypassed(chk, cap, seen, returned, flows, label):
    """Never at an appliance; back once, the input frame with its MACs swapped."""
    for f in flows:
        for k in range(len(cap.flows[f][1])):
            chk((f, k) not in seen, "%s: flow %d packet %d reached an appliance" % (label, f, k))
            back = returned.get((f, k), [])
            if not chk(len(back) == 1, "%s: flow %d packet %d came back %d times" % (label, f, k, len(back))):
                continue
            b, want = back[0], cap.frames[(f, k)]
            chk(b == want[6:12] + want[0:6] + want[12:],
                "%s: flow %d packet %d came back changed:\n  in  %s\n  out %s" % (label, f, k, want.hex(), b.hex()))


def check_gone(chk, cap, seen, returned, flows, label):
    for f in flows:
        for k in range(len(cap.flows[f][1])):
            chk((f, k) not in seen and (f, k) not in returned,
                "%s: flow %d packet %d was not dropped" % (label, f, k))


def class_counts(cap, tenants):
    p = sum(len(cap.flows[f][1]) for t in tenants for f in cap.of(t))
    b = sum(len(cap.frames[(f, k)]) for t in tenants for f in cap.of(t) for k in range(len(cap.flows[f][1])))
    return p, b


def packets_of(cap, flows):
    """(packets, bytes) of the given flows."""
    return (sum(len(cap.flows[f][1]) for f in flows),
            sum(len(cap.frames[(f, k)]) for f in flows for k in range(len(cap.flows[f][1]))))


def check_time_order(chk, out):
    """Both output pcaps in time order (bypassed frames among the others)."""
    for name in ("returned.pcap", "to-appliances.pcap"):
        ts = ev.read_pcap_times(os.path.join(out, name))
        bad = next((i for i in range(1, len(ts)) if ts[i] < ts[i - 1]), None)
        chk(bad is None, "%s is not in time order: frame %s at %s ns after one at %s ns" %
            (name, bad, ts[bad] if bad else None, ts[bad - 1] if bad else None))


def check_summary(chk, stdout, s, want, bypassed, unclassified, by_class):
    """want: [(class, action, listener or None, packets, bytes)], in order."""
    tc = s.get("traffic_classes")
    if not chk(tc is not None, "summary.json has no traffic_classes"):
        return
    got = [(c["name"], c["action"], c["listener"], c["packets"], c["bytes"]) for c in tc["classes"]]
    chk(got == want, "summary.json classes:\n  got  %s\n  want %s" % (got, want))
    chk((tc["bypassed_packets"], tc["dropped_unclassified"], tc["dropped_by_class"]) ==
        (bypassed, unclassified, by_class),
        "bypassed/unclassified/by class: got %s, want %s" %
        ((tc["bypassed_packets"], tc["dropped_unclassified"], tc["dropped_by_class"]), (bypassed, unclassified, by_class)))
    # The same on stdout: a row per class, then the totals.
    for n, action, listener, pk, by in want:
        row = "%-20s %-8s %-16s %10d %12d" % (n, action, listener or "-", pk, by)
        chk(row in stdout.splitlines(), "stdout has no row %r:\n%s" % (row, stdout))
    line = "bypassed %d, dropped unclassified %d, dropped by class %d" % (bypassed, unclassified, by_class)
    chk(line in stdout.splitlines(), "stdout has no line %r" % line)


DOC_MARK = "<!-- checked by tests/replay/classes.py (replay test classes-classes) -->"


def check_doc(chk, stdout, doc):
    """The class table docs/replay.md quotes (the fenced block after DOC_MARK)
    is this run's, line for line."""
    text = open(doc).read()
    if not chk(DOC_MARK in text, "%s has no %s" % (doc, DOC_MARK)):
        return
    block = text.split(DOC_MARK, 1)[1].split("```", 2)[1].strip("\n").splitlines()
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("class ")), None)
    got = lines[start:start + len(block)] if start is not None else []
    chk(got == block, "%s quotes:\n  %s\nthe replay printed:\n  %s" % (doc, "\n  ".join(block), "\n  ".join(got)))


def scenario_classes(exe, workdir, doc=None):
    cap = Capture()
    for t, n in (("a", 12), ("b", 12), ("c", 12), ("backup", 6), ("blocked", 4), ("none", 4)):
        cap.add(t, n, 0, 2 * SEC)
    stdout, s, seen, returned = run(exe, os.path.join(workdir, "classes"), cap, config(CLASSES_1))
    chk = ev.Check()
    for t, g in (("a", "ga"), ("b", "gb"), ("c", "gc")):
        check_inspected(chk, cap, seen, returned, cap.of(t), [g], "tenant-" + t)
        used = {seen[(f, 0)][0][0] for f in cap.of(t) if (f, 0) in seen}
        chk(used == set(GROUPS[g]), "tenant-%s's flows used %s, not both of %s" % (t, used, GROUPS[g]))
    check_bypassed(chk, cap, seen, returned, cap.of("backup"), "backups")
    check_gone(chk, cap, seen, returned, cap.of("blocked") + cap.of("none"), "blocked/unclassified")
    n_bypass, _ = class_counts(cap, ["backup"])
    n_blocked, _ = class_counts(cap, ["blocked"])
    n_none, _ = class_counts(cap, ["none"])
    want = [("backups", "bypass", None) + class_counts(cap, ["backup"]),
            ("tenant-a", "inspect", "la") + class_counts(cap, ["a"]),
            ("tenant-b", "inspect", "lb") + class_counts(cap, ["b"]),
            ("tenant-c", "inspect", "lc") + class_counts(cap, ["c"]),
            ("blocked", "drop", None) + class_counts(cap, ["blocked"])]
    check_summary(chk, stdout, s, want, n_bypass, n_none, n_blocked)
    check_time_order(chk, os.path.join(workdir, "classes", "out"))
    if doc:
        check_doc(chk, stdout, doc)
    return chk.errors


def scenario_reload(exe, workdir, doc=None):
    cap = Capture()
    cap.add("a", 16, 0, 10 * SEC)          # established before the reload at 5 s
    cap.add("b", 16, 0, 10 * SEC)
    cap.add("a", 8, 6 * SEC, 10 * SEC)     # new after it
    cap.add("b", 8, 6 * SEC, 10 * SEC)
    d = os.path.join(workdir, "reload")
    # The reloaded file sits beside the events file: a relative path counts from there.
    stdout, s, seen, returned = run(exe, d, cap, config(CLASSES_1), "- { at: 5s, reload: classes-2.yaml }\n",
                                    {"classes-2.yaml": config(CLASSES_2)})
    chk = ev.Check()
    old_a, old_b = cap.of("a", before=5 * SEC), cap.of("b", before=5 * SEC)
    new_a, new_b = cap.of("a", since=5 * SEC), cap.of("b", since=5 * SEC)
    check_inspected(chk, cap, seen, returned, old_a, ["ga"], "tenant-a before the reload")
    check_inspected(chk, cap, seen, returned, old_b, ["gb"], "tenant-b before the reload")
    check_inspected(chk, cap, seen, returned, new_a, ["gc"], "tenant-a after the reload")
    check_bypassed(chk, cap, seen, returned, new_b, "tenant-b after the reload")
    e = s["events"][0]
    chk(e["action"] == "reload" and e["applied"] and e["server"] is None and
        e["file"] == os.path.join(d, "classes-2.yaml"), "events[0]: %s" % json.dumps(e)[:400])
    chk(e.get("flows_moved") == {} and e.get("flows_at_event") == len(old_a) + len(old_b),
        "events[0] moved %s, flows at it %s" % (e.get("flows_moved"), e.get("flows_at_event")))
    n_new_b = sum(len(cap.flows[f][1]) for f in new_b)
    # Each packet counts under the action that handled it: tenant-b's flows
    # from before the reload stay inspected (on lb) to their end, only its new
    # flows are bypassed; tenant-a inspected on la (old flows) and lc (new).
    want = [("backups", "bypass", None, 0, 0),
            ("tenant-a", "inspect", "la, lc") + class_counts(cap, ["a"]),
            ("tenant-b", "inspect", "lb") + packets_of(cap, old_b),
            ("tenant-c", "inspect", "lc", 0, 0),
            ("blocked", "drop", None, 0, 0),
            ("tenant-b", "bypass", None) + packets_of(cap, new_b)]
    check_summary(chk, stdout, s, want, n_new_b, 0, 0)
    check_time_order(chk, os.path.join(d, "out"))
    line = "event 0 at 5 s: reload %s: flows at it %d, moved 0, stayed %d" % (
        os.path.join(d, "classes-2.yaml"), len(old_a) + len(old_b), len(old_a) + len(old_b))
    chk(line in stdout.splitlines(), "stdout has no line %r:\n%s" % (line, stdout))
    return chk.errors


def scenario_warnings(exe, workdir, doc=None):
    """A config gwlbd would warn about: gwlb-replay says the same on stderr
    (a replay once ran a shadowed class silently)."""
    cap = Capture()
    cap.add("b", 2, 0, SEC)
    shadowed = CLASSES_1 + "  - name: tenant-b-web\n    match: { prefixes: [10.2.5.0/24] }\n    listener: la\n"
    d = os.path.join(workdir, "warnings")
    run(exe, d, cap, config(shadowed))
    log = open(os.path.join(d, "replay.log")).read().splitlines()
    chk = ev.Check()
    want = ("gwlb-replay: warning: traffic_classes[5]: class 'tenant-b-web' matches no "
            "packet: traffic_classes[2] ('tenant-b') comes first")
    got = [l for l in log if l.startswith(want)]
    chk(got, "no line starting %r in:\n%s" % (want, "\n".join(log[:20])))
    if doc and got:
        chk(got[0] + "\n" in open(doc).read(), "%s does not quote the line:\n%s" % (doc, got[0]))
    return chk.errors


def main():
    args = sys.argv[1:]
    doc = None
    if "--doc" in args:
        i = args.index("--doc")
        doc = args[i + 1]
        del args[i:i + 2]
    scenarios = {"classes": scenario_classes, "reload": scenario_reload, "warnings": scenario_warnings}
    if len(args) != 3 or args[2] not in scenarios:
        raise SystemExit(__doc__)
    exe, workdir, which = args
    os.makedirs(workdir, exist_ok=True)
    errors = scenarios[which](exe, workdir, doc)
    if errors:
        print("FAIL: %d problem(s):" % len(errors))
        for e in errors[:40]:
            print("  " + e)
        sys.exit(1)
    print("ok: %s" % which)


if __name__ == "__main__":
    main()
