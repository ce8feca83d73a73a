#!/usr/bin/python3
"""Traffic classes as gwlbd shows them, end to end (run by run_classes.sh).

  classes_e2e.py gen   --work DIR --metrics HOST:PORT --prefix P   capture and config
  classes_e2e.py check --work DIR --metrics HOST:PORT --prefix P --gwlbctl BIN

The capture holds five kinds of traffic, each a known number of frames of
known sizes: `backups` (TCP port 873, bypassed), `blocked` (to
203.0.113.0/24, dropped), `web` (VLAN 100 on port 0, listener tenant-a),
`other` (VLAN 200, listener tenant-b) and untagged UDP no class matches.
Checks, on gwlbd's real output:
  - gwlb_class_packets_total / gwlb_class_bytes_total per class, with its
    action and listener, and the unclassified drops; promtool check metrics
  - DPDK telemetry /gwlb/classes and /gwlb/class,NAME
  - `gwlbctl classes` (--json and the table)
  - `gwlbctl explain`: the class matched and why, the earlier classes that
    did not, --port and --vlan, bypass and unclassified
  - a reload that swaps web and other and renames blocked to denied: web and
    other keep their counts under their names, denied starts from zero and
    blocked is gone; its reply warns of a class on a port gwlbd does not
    have and of groups without health_check.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["gen", "check"])
for a in ["work", "metrics", "prefix"]:
    ap.add_argument("--" + a, required=True)
ap.add_argument("--gwlbctl")
ap.add_argument("--src", help="source root: docs/cli.md's classes example is checked against this run")
args = ap.parse_args()
work = args.work
DEADLINE = 60

GW_MAC, PEER_MAC = "02:00:00:00:00:01", "02:00:00:00:00:fe"
# name -> (frames, payload bytes); every frame of a kind has the same size.
KINDS = {"backups": (7, 100), "blocked": (5, 60), "web": (11, 300), "other": (13, 40), "none": (3, 20)}


def classes_yaml(order):
    c = {
        "backups": "{ name: backups, match: { protocols: [tcp], l4_ports: [873] }, action: bypass }",
        "blocked": "{ name: blocked, match: { prefixes: [203.0.113.0/24] }, action: drop }",
        "denied": "{ name: denied, match: { prefixes: [203.0.113.0/24] }, action: drop }",
        "web": "{ name: web, match: { ingress_ports: [0], vlans: [100] }, listener: tenant-a }",
        "other": "{ name: other, match: { vlans: [200] }, listener: tenant-b }",
        "ghost": "{ name: ghost, match: { ingress_ports: [5] }, action: drop }",
    }
    return "traffic_classes:\n" + "".join(f"  - {c[n]}\n" for n in order)


def config(order):
    return f"""node: {{ underlay_ip: 192.0.2.1, underlay_mac: {GW_MAC}, gateway_mac: {PEER_MAC} }}
metrics: {{ listen: "{args.metrics}" }}
server_groups:
  - {{ name: fw-a, servers: [ {{ address: 192.0.2.10 }} ] }}
  - {{ name: fw-b, servers: [ {{ address: 192.0.2.20 }} ] }}
listeners:
  - {{ name: tenant-a, server_groups: [fw-a] }}
  - {{ name: tenant-b, server_groups: [fw-b] }}
{classes_yaml(order)}dataplane: {{ workers: 1, mbufs: 8192, flow_table_size: 4096 }}
control: {{ socket: {work}/gwlbd.sock }}
eal: ["--no-huge", "--no-pci", "--file-prefix", "{args.prefix}", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap={work}/in.pcap,tx_pcap={work}/out.pcap"]
"""


def gen():
    from scapy.all import Dot1Q, Ether, IP, Raw, TCP, UDP, wrpcap
    frames, sizes = [], {}
    for kind, (n, pay) in KINDS.items():
        for i in range(n):
            e = Ether(src=PEER_MAC, dst=GW_MAC)
            if kind == "backups":
                p = e / IP(src="198.51.100.7", dst="10.9.0.7") / TCP(sport=40000 + i, dport=873)
            elif kind == "blocked":
                p = e / IP(src="198.51.100.8", dst="203.0.113.9") / UDP(sport=5000 + i, dport=53)
            elif kind == "web":
                p = e / Dot1Q(vlan=100) / IP(src="198.51.100.1", dst="198.51.100.200") / TCP(sport=40000, dport=443)
            elif kind == "other":
                p = e / Dot1Q(vlan=200) / IP(src="198.51.100.2", dst="198.51.100.201") / UDP(sport=7000, dport=8000 + i)
            else:
                p = e / IP(src="198.51.100.3", dst="198.51.100.202") / UDP(sport=9000, dport=9000 + i)
            p = p / Raw(b"x" * pay)
            frames.append(p)
            sizes.setdefault(kind, len(bytes(p)))
    wrpcap(f"{work}/in.pcap", frames)
    json.dump({k: {"packets": KINDS[k][0], "bytes": KINDS[k][0] * sizes[k]} for k in KINDS},
              open(f"{work}/expected.json", "w"))
    open(f"{work}/gwlbd.yaml", "w").write(config(["backups", "blocked", "web", "other"]))


def scrape():
    return checklib.scrape(args.metrics)


samples = checklib.samples


def class_series(s, name):
    """{class: (value, action, listener)} of one family."""
    out = {}
    for (n, l), v in s.items():
        if n == name:
            d = dict(l)
            assert d["class"] not in out, d
            out[d["class"]] = (v, d["action"], d["listener"])
    return out


def ctl(*a, rc=0):
    r = subprocess.run([args.gwlbctl, "--socket", f"{work}/gwlbd.sock", *a], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == rc, (a, r.returncode, r.stdout, r.stderr)
    return r.stdout


def poll(what, check):
    t0, last = time.monotonic(), None
    while time.monotonic() - t0 < DEADLINE:
        try:
            r = check()
            if r:
                return r
        except (AssertionError, OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {DEADLINE} s (last: {last!r})")


def check():
    want = json.load(open(f"{work}/expected.json"))
    total = sum(k["packets"] for k in want.values())
    poll(f"{total} frames read", lambda: json.loads(ctl("--json", "stats"))["totals"]["rx_packets"] == total)

    # 1. /metrics: every class's packets and bytes, with its action and listener.
    s = samples(scrape())
    pk = class_series(s, "gwlb_class_packets_total")
    by = class_series(s, "gwlb_class_bytes_total")
    labels = {"backups": ("bypass", ""), "blocked": ("drop", ""), "web": ("inspect", "tenant-a"),
              "other": ("inspect", "tenant-b")}
    for c, (action, listener) in labels.items():
        assert pk[c] == (want[c]["packets"], action, listener), (c, pk[c], want[c])
        assert by[c] == (want[c]["bytes"], action, listener), (c, by[c], want[c])
    assert set(pk) == set(labels), pk
    unclassified = sum(v for (n, l), v in s.items()
                       if n == "gwlb_dropped_packets_total" and ("reason", "unclassified") in l)
    assert unclassified == want["none"]["packets"], unclassified
    print(f"metrics: packets {{{', '.join(f'{c}: {pk[c][0]:.0f}' for c in pk)}}}, "
          f"bytes {{{', '.join(f'{c}: {by[c][0]:.0f}' for c in by)}}}, unclassified {unclassified:.0f}")
    r = subprocess.run(["promtool", "check", "metrics"], input=scrape(), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    print("promtool check metrics: ok")

    # 2. DPDK telemetry (refreshed every second).
    def telemetry():
        out = subprocess.run(["dpdk-telemetry.py", "-f", args.prefix],
                             input="/gwlb/classes\n/gwlb/class,web\n/gwlb/class,backups\n",
                             capture_output=True, text=True, timeout=30).stdout
        docs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        names = next(d["/gwlb/classes"] for d in docs if "/gwlb/classes" in d)
        one = {d["/gwlb/class"]["name"]: d["/gwlb/class"] for d in docs if "/gwlb/class" in d}
        return (names, one) if one.get("web", {}).get("packets") == want["web"]["packets"] else None
    names, one = poll("telemetry /gwlb/classes and /gwlb/class", telemetry)
    assert names == ["backups", "blocked", "web", "other"], names
    assert one["web"] == {"name": "web", "index": 2, "action": "inspect", "listener": "tenant-a",
                          "packets": want["web"]["packets"], "bytes": want["web"]["bytes"]}, one
    assert one["backups"]["action"] == "bypass" and one["backups"]["bytes"] == want["backups"]["bytes"], one
    print(f"telemetry: /gwlb/classes {names}; /gwlb/class,web {one['web']}")

    # 3. gwlbctl classes.
    j = json.loads(ctl("--json", "classes"))
    assert j["configured"] is True and j["unclassified"]["packets"] == want["none"]["packets"], j
    got = [(c["index"], c["name"], c["action"], c["listener"], c["packets"], c["bytes"]) for c in j["classes"]]
    assert got == [(0, "backups", "bypass", None, 7, want["backups"]["bytes"]),
                   (1, "blocked", "drop", None, 5, want["blocked"]["bytes"]),
                   (2, "web", "inspect", "tenant-a", 11, want["web"]["bytes"]),
                   (3, "other", "inspect", "tenant-b", 13, want["other"]["bytes"])], got
    assert j["classes"][2]["match"] == {"ingress_ports": ["0"], "vlans": ["100"]}, j["classes"][2]
    assert j["classes"][0]["match_summary"] == "protocols tcp; l4_ports 873", j["classes"][0]
    table = ctl("classes")
    rows = [l.split() for l in table.splitlines()]
    assert rows[0] == ["#", "NAME", "MATCH", "ACTION", "LISTENER", "PACKETS", "BYTES"], table
    assert rows[3][:2] == ["2", "web"] and rows[3][-4:-2] == ["tenant-a", "11"], table
    assert rows[5][:2] == ["-", "(none)"] and rows[5][-2] == "3", table
    print("gwlbctl classes:\n" + table)

    # 4. gwlbctl explain: the class and why.
    e = json.loads(ctl("--json", "explain", "198.51.100.1", "198.51.100.200", "tcp", "40000", "443",
                       "--port", "0", "--vlan", "100"))
    c = e["class"]
    assert (c["name"], c["index"], c["action"], c["listener"]) == ("web", 2, "inspect", "tenant-a"), c
    assert c["matched"] == ["ingress_ports: port 0 is in 0", "vlans: vlan 100 is in 100"], c
    assert [(x["name"], x["why"]) for x in c["skipped"]] == [
        ("backups", "l4_ports: neither port 40000 nor 443 is in 873"),
        ("blocked", "prefixes: neither 198.51.100.1 nor 198.51.100.200 is in 203.0.113.0/24")], c
    assert e["listener"] == "tenant-a" and e["group"] == "fw-a" and e["existing"] is True, e
    assert e["appliance"] == "192.0.2.10", e
    text = ctl("explain", "198.51.100.1", "198.51.100.200", "tcp", "40000", "443", "--port", "0", "--vlan", "100")
    assert re.search(r"^class +web \(traffic_classes\[2\]\): inspect, listener tenant-a$", text, re.M), text
    assert re.search(r"^not matched +backups \(traffic_classes\[0\]\): l4_ports: neither", text, re.M), text
    print("gwlbctl explain (web):\n" + text)
    # Without --port the class that needs it cannot match: said so.
    e = json.loads(ctl("--json", "explain", "198.51.100.2", "198.51.100.201", "udp", "7000", "8000",
                       "--vlan", "200"))
    c = e["class"]
    assert c["name"] == "other" and "note" in c and e["group"] == "fw-b", e
    assert c["skipped"][2]["why"].startswith("ingress_ports: ingress port not given"), c
    # Untagged, no class: unclassified; port 873: bypassed, no appliance.
    e = json.loads(ctl("--json", "explain", "198.51.100.3", "198.51.100.202", "udp", "9000", "9000"))
    assert e["class"]["name"] is None and e["existing"] is False and e["appliance"] is None, e
    assert e["reason"] == "no flow entry: no class matches: dropped as unclassified (drop_unclassified)", e
    text = ctl("explain", "198.51.100.3", "198.51.100.202", "udp", "9000", "9000")
    assert re.search(r"^class +none matches: dropped as unclassified", text, re.M), text
    e = json.loads(ctl("--json", "explain", "198.51.100.7", "10.9.0.7", "tcp", "40001", "873"))
    assert e["class"]["action"] == "bypass" and e["class"]["matched"] == [
        "protocols: tcp is in tcp", "l4_ports: dport 873 is in 873"] and e["maglev"] is None, e
    ctl("explain", "1.2.3.4", "1.2.3.5", "tcp", "1", "2", "--vlan", "4096", rc=2)
    print("gwlbctl explain: unclassified, bypass, --port/--vlan: ok")

    # docs/cli.md quotes `gwlbctl classes` and the class lines of explain from this run.
    if args.src:
        doc = open(os.path.join(args.src, "docs/cli.md"), encoding="utf-8").read()
        i = doc.index("<!-- classes-table: checked by tests/daemon/classes_e2e.py -->")
        block = doc[i:].split("```\n", 2)[1]
        for part in block.split("$ gwlbctl ")[1:]:
            cmd, *shown = part.rstrip("\n").split("\n")
            real = ctl(*cmd.split()).rstrip("\n").split("\n")
            if shown and shown[-1] == "...":
                shown = shown[:-1]
                real = real[:len(shown)]
            assert shown == real, f"docs/cli.md shows for `gwlbctl {cmd}`:\n" + "\n".join(shown) + \
                "\nbut it prints:\n" + "\n".join(real)
        print("docs/cli.md: the classes example matches this run")

    # 5. A reload that swaps web and other and renames blocked: counts follow names.
    # The reply carries the config's warnings, judged against gwlbd's own
    # ports (one: net_pcap0): a class on port 5 can never match.
    open(f"{work}/gwlbd.yaml", "w").write(config(["backups", "denied", "other", "web", "ghost"]))
    out = ctl("reload")
    ghost = ("warning: traffic_classes[4].match.ingress_ports[0]: port 5 does not exist: gwlbd has 1 DPDK port "
             "(0), so class 'ghost' matches nothing there and that traffic goes to the next class that matches; "
             "correct the id\n")
    assert ghost in out, out
    assert "warning: server_groups[0]: server group 'fw-a' has no health_check" in out, out
    # New classes compile apart from the control thread: the change is
    # published once they are, and `classes` says compiling until then.
    deadline = time.time() + 10
    j = json.loads(ctl("--json", "classes"))
    while j.get("compiling") and time.time() < deadline:
        time.sleep(0.05)
        j = json.loads(ctl("--json", "classes"))
    assert j.get("compiling") is False, j
    print(f"reload: {out.strip()}")
    got = [(c["name"], c["packets"], c["bytes"]) for c in j["classes"]]
    assert got == [("backups", 7, want["backups"]["bytes"]), ("denied", 0, 0),
                   ("other", 13, want["other"]["bytes"]), ("web", 11, want["web"]["bytes"]), ("ghost", 0, 0)], got
    pk = class_series(samples(scrape()), "gwlb_class_packets_total")
    assert {c: v[0] for c, v in pk.items()} == {"backups": 7, "denied": 0, "other": 13, "web": 11, "ghost": 0}, pk
    print(f"after the reload: {got}")
    print("classes: ok")


if args.mode == "gen":
    gen()
else:
    check()
