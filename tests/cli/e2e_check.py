#!/usr/bin/python3
"""Checks gwlbctl against a running gwlbd that has forwarded a known capture.

usage: e2e_check.py --gwlbctl PATH --socket SOCK --input-packets N
                    --expected-drops JSON --tx-pcap OUT.pcap [--tx-pcap ...] --workdir DIR

Waits until gwlbd has received and handled all N packets, then checks each
command's JSON against the others (listing vs count vs filters vs paging vs
explain vs stats), against what the input held (the drop reasons of the
malformed frames gen_bad_frames.py mixed in, EXPECTED.json) and against what
gwlbd transmitted (the Geneve packets in the tx pcaps: appliance and cookie of
every flow), then changes the appliances and checks where new and existing
flows go, and the exit statuses of the error paths. Writes the human-readable
output of a sample session to DIR/session.txt (pasted into docs/cli.md).
"""
import argparse
import concurrent.futures
import ipaddress
import json
import os
import random
import re
import struct
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--gwlbctl", required=True)
ap.add_argument("--socket", required=True)
ap.add_argument("--input-packets", type=int, required=True)
ap.add_argument("--expected-drops", required=True)
ap.add_argument("--tx-pcap", action="append", required=True)
ap.add_argument("--workdir", required=True)
args = ap.parse_args()
APPLIANCES = {"192.0.2.10", "192.0.2.11", "192.0.2.12"}
UNDERLAY = "192.0.2.1"
with open(args.expected_drops) as f:
    EXPECTED = json.load(f)
EXPECTED_DROPS = EXPECTED["drops"]          # {drop counter name: frames}
N_BAD = EXPECTED["frames"]
N_GOOD = args.input_packets - N_BAD         # every good packet is encapsulated
assert sum(EXPECTED_DROPS.values()) == N_BAD and N_GOOD > 0, EXPECTED
session = []
failures = []


def run(*argv, rc=0, record=False):
    cmd = [args.gwlbctl, "--socket", args.socket, *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if rc is not None and p.returncode != rc:
        raise AssertionError(f"gwlbctl {' '.join(argv)}: exit {p.returncode}, want {rc}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    if record:
        session.append(f"$ gwlbctl {' '.join(argv)}\n{p.stdout}{p.stderr}")
    return p


def js(*argv, rc=0):
    out = run("--json", *argv, rc=rc).stdout
    try:
        return json.loads(out)
    except json.JSONDecodeError as e:
        raise AssertionError(f"gwlbctl --json {' '.join(argv)}: not JSON ({e}): {out[:300]}")


def pmap(fn, items):
    """fn over items, several gwlbctl processes at a time (results in order)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
        return list(ex.map(fn, items))


def explain(t):
    """`gwlbctl explain --json` for t = (src, dst, proto, sport, dport)."""
    src, dst, proto, sport, dport = t
    return js("explain", src, dst, proto, str(sport), str(dport))


def check(name, fn):
    try:
        fn()
        print(f"ok: {name}")
    except Exception as e:  # report every failing check, not only the first
        failures.append(name)
        print(f"FAIL: {name}: {e}")


def key(f):
    return (f["src"], f["dst"], f["sport"], f["dport"], f["proto"], f["kind"])


def settled(st):
    """Every packet received has been accounted for (sent, punted or dropped)."""
    t = st["totals"]
    out = t["encapsulated"] + t["returned"] + t["icmp_sent"] + t.get("tcp_resets_sent", 0) + t["punted"]
    return t["rx_packets"] == out + sum(d["count"] for d in st["drops"])


# gwlbd reads the pcap in a burst or two; wait until every packet is counted
# and handled (the counters are read while the workers run).
deadline = time.time() + 60
while True:
    st = js("stats")
    if (st["totals"]["rx_packets"] >= args.input_packets and settled(st)) or time.time() > deadline:
        break
    time.sleep(0.2)

ALL = js("flows", "--all")["flows"]


def t_stats():
    st = js("stats")
    t = st["totals"]
    assert t["rx_packets"] == args.input_packets, (t, args.input_packets)
    assert sum(w["counters"]["rx_packets"] for w in st["workers"]) == args.input_packets
    assert all(d["help"] for d in st["drops"]) and len(st["drops"]) >= 20, st["drops"]
    assert settled(st), st["totals"]
    for w in st["workers"]:
        c = w["counters"]
        assert c["rx_packets"] == c["encapsulated"] + c["returned"] + c["icmp_sent"] + c.get("tcp_resets_sent", 0) + c["punted"] + \
            sum(v for k, v in c.items() if k.startswith("drop_")), w
    # Exactly the malformed frames that were sent, each under its own reason;
    # every other reason zero; every good packet encapsulated.
    got = {d["name"]: d["count"] for d in st["drops"]}
    assert set(EXPECTED_DROPS) <= set(got), f"unknown drop reasons {set(EXPECTED_DROPS) - set(got)}"
    want = {n: EXPECTED_DROPS.get(n, 0) for n in got}
    wrong = {n: (got[n], want[n]) for n in got if got[n] != want[n]}
    assert not wrong, f"drop counts (got, want): {wrong}"
    assert all(t[n] == c for n, c in got.items()), "totals and drops disagree"
    assert t["encapsulated"] == N_GOOD and t["returned"] == 0 and t["icmp_sent"] == 0, t
    # The human table: every reason that counted on its own line with its count
    # and meaning; the zero ones (and zero counters) only with --all.
    zero = [n for n, v in t.items() if v == 0]
    for argv, shown in ((["stats"], lambda d: d["count"] != 0), (["stats", "--all"], lambda d: True)):
        out = run(*argv).stdout
        lines = {l.split()[0]: l for l in out.splitlines() if l.startswith("drop_")}
        for d in st["drops"]:
            line = lines.get(d["name"])
            if not shown(d):
                assert line is None, f"`gwlbctl {' '.join(argv)}` shows zero {line}"
                continue
            assert line is not None, f"{d['name']} missing from `gwlbctl {' '.join(argv)}`"
            assert line.split()[1] == str(d["count"]) and line.rstrip().endswith(d["help"]), (line, d)
        assert sum(1 for l in lines.values() if l.split()[1] != "0") == len(EXPECTED_DROPS), lines
        words = set(out.split())
        for n in zero:
            assert (n in words) == (argv == ["stats", "--all"]), f"`gwlbctl {' '.join(argv)}` and zero {n}"
    assert zero and "not shown, at zero:" in run("stats").stdout
    run("stats", "--watch", "0.3", "--count", "2", record=True)


def t_status():
    s = js("status")
    assert s["version"] and len(s["workers"]) == 2 and s["ports"], s
    assert s["flows"] > 0, s
    assert all(w["loops"] > 0 and w["max_loop_gap_ns"] > 0 and w["recent_max_loop_gap_ns"] >= 0
               for w in s["workers"]), s["workers"]
    assert s["underlay"] == {"ipv4": "192.0.2.1", "ipv6": None}, s["underlay"]
    out = run("status", record=True).stdout
    assert re.search(r"^underlay  IPv4 192\.0\.2\.1$", out, re.M), out
    assert re.search(r"^WORKER\s+LCORE\s+RX QUEUES \(port/queue\)\s+LOOPS\s+MAX GAP \(recent\)$", out, re.M), out
    # LOOPS (a count) and MAX GAP with the recent one in parentheses: "12ms (45us)".
    assert re.search(r"^\s+0\s+\d+\s+\S.*\s\d+(\.\d)?[kMGT]?\s+\d[0-9.a-z]*(ns|us|ms|s) \(\d[0-9.a-z]*s\)$",
                     out, re.M), out
    js("groups")
    out = run("groups", record=True).stdout
    assert "firewalls" in out, out


def t_servers():
    sv = js("servers")["servers"]
    assert {s["address"] for s in sv} == APPLIANCES, sv
    assert all(s["packets"] > 0 for s in sv), sv
    assert sum(s["packets"] for s in sv) == N_GOOD, (sv, N_GOOD)
    out = run("servers", record=True).stdout
    assert all(a in out for a in APPLIANCES) and "ago" in out, out
    assert len(js("servers", "--group", "firewalls")["servers"]) == 3
    run("servers", "--group", "nope", rc=1)
    # No health_check section: checks are off, every appliance counts as healthy.
    assert all(s["health"]["state"] == "disabled" for s in sv), [s["health"] for s in sv]
    assert re.search(r"^192\.0\.2\.10\s+firewalls\s+100\s+active\s+\S+ ago\s+disabled\s+-\s+-\s+-\s",
                     out, re.M), out
    run("servers", "--wide", record=True)


def t_regions():
    """No listeners in the config: the implicit one over the only group, no composites."""
    d = js("health-destinations")["destinations"]
    assert [x["name"] for x in d] == ["default"] and d[0]["implicit"] is True, d
    assert d[0]["healthy"] is True and d[0]["active_group"] == "firewalls", d
    assert [x["name"] for x in js("regions", "default")["destinations"]] == ["default"]
    out = run("regions", record=True).stdout
    assert out.startswith("destination    default (implicit: no listeners configured): HEALTHY\n"), out
    assert re.search(r"^new flows\s+-> firewalls$", out, re.M), out
    # JUDGED BY: gwlbd's judged_by and the group's own healthy/servers (checks off: all healthy).
    assert re.search(r"^firewalls\s+yes\s+\S+ ago\s+\S.*: 3/3 healthy$", out, re.M), out
    assert "composite health checks: none" in out, out
    # The same report by its other name ("Ns ago" may tick between the two calls).
    ago = re.compile(r"\S+ ago")
    assert ago.sub("_ ago", run("health-destinations", "default").stdout) == ago.sub("_ ago", out)
    r = run("health-destinations", "nope", rc=1, record=True)
    assert "nope" in r.stderr and "(not_found)" in r.stderr, r.stderr
    assert js("regions", "nope", rc=1)["code"] == "not_found"


def t_health():
    h = js("health", "192.0.2.10")
    assert h["address"] == "192.0.2.10" and h["group"] == "firewalls", h
    assert h["state"] == "disabled" and isinstance(h["history"], list), h
    assert h["check"]["configured"] is False and h["check"]["protocol"] == "tcp", h
    out = run("health", "192.0.2.10", record=True).stdout
    assert "state      disabled" in out and "none configured" in out, out
    r = run("health", "192.0.2.99", rc=1)
    assert "no appliance 192.0.2.99 (not_found)" in r.stderr, r.stderr
    assert js("health", "192.0.2.99", rc=1)["code"] == "not_found"


def t_count():
    c = js("flows", "--count")
    # Fragment entries may have expired since ALL was taken (30 s after their
    # datagram; a slow sanitized run gets there): flows may not.
    n_flows = len([f for f in ALL if f["kind"] == "flow"])
    assert c["count"] > 0 and n_flows <= c["count"] <= len(ALL), (c, n_flows, len(ALL))
    assert len({key(f) for f in ALL}) == len(ALL), "a flow listed twice"
    run("flows", "--count", record=True)


def t_filters():
    cases = [
        (["--proto", "udp"], lambda f: f["proto"] == "udp"),
        (["--proto", "6"], lambda f: f["proto"] == "tcp"),
        (["--src", "198.51.100.0/25"],
         lambda f: ":" not in f["src"] and ipaddress.ip_address(f["src"]) in ipaddress.ip_network("198.51.100.0/25")),
        (["--dst", "2001:db8::/32"],
         lambda f: ":" in f["dst"] and ipaddress.ip_address(f["dst"]) in ipaddress.ip_network("2001:db8::/32")),
        (["--server", "192.0.2.11"], lambda f: f["appliance"] == "192.0.2.11"),
        (["--port", "443"], lambda f: f["kind"] == "flow" and 443 in (f["sport"], f["dport"])),
        (["--proto", "tcp", "--server", "192.0.2.10"],
         lambda f: f["proto"] == "tcp" and f["appliance"] == "192.0.2.10"),
    ]
    for argv, pred in cases:
        got = {key(f) for f in js("flows", "--all", *argv)["flows"]}
        want = {key(f) for f in ALL if pred(f)}
        assert 0 < len(want) < len(ALL), f"{argv}: filter selects {len(want)} of {len(ALL)}: not a useful case"
        # Every matching flow, no entry that does not match; fragment entries
        # only while they last (see t_count).
        must = {key(f) for f in ALL if pred(f) and f["kind"] == "flow"}
        assert must <= got <= want, f"{argv}: {len(got)} listed, {len(want)} expected; extra {list(got - want)[:3]}, missing {list(must - got)[:3]}"
        n = js("flows", "--count", *argv)["count"]
        assert len(must) <= n <= len(want), (argv, n, len(must), len(want))
    assert 0 < len([f for f in ALL if f["proto"] == "udp"]) < len(ALL)
    run("flows", "--server", "192.0.2.11", "--proto", "udp", record=True)


def t_paging():
    seen, cursor, pages = [], None, 0
    while True:
        r = js("flows", "--limit", "7", *(["--cursor", cursor] if cursor else []))
        assert len(r["flows"]) <= 7, len(r["flows"])
        seen += [key(f) for f in r["flows"]]
        pages += 1
        cursor = r["next_cursor"]
        if cursor is None:
            break
        assert pages < 1000, "paging does not end"
    assert len(seen) == len(set(seen)), "a flow was visited twice"
    # Flows do not expire here (idle timeouts 6000 s) but fragment entries do,
    # 30 s after their datagram: on a slow machine some may be gone by now.
    # Every flow must be visited; fragment entries only if still there.
    want_flows = {key(f) for f in ALL if f["kind"] == "flow"}
    assert want_flows <= set(seen), f"paging missed flows: {list(want_flows - set(seen))[:3]}"
    assert set(seen) <= {key(f) for f in ALL}, f"paging invented entries: {list(set(seen) - {key(f) for f in ALL})[:3]}"
    assert pages >= len(ALL) // 7, pages
    out = run("flows", "--limit", "7", "--proto", "tcp", record=True).stdout
    assert "more: gwlbctl flows --proto tcp --limit 7 --cursor " in out, out
    assert {key(f) for f in js("flows", "--all", "--limit", "7")["flows"]} == set(seen)


def t_explain():
    done = 0
    for f in ALL:
        if f["kind"] != "flow" or f["proto"] not in ("tcp", "udp"):
            continue
        e = js("explain", f["src"], f["dst"], f["proto"], str(f["sport"]), str(f["dport"]))
        assert e["existing"] is True and e["appliance"] == f["appliance"], (f, e)
        assert e["cookie"] == f["cookie"], (f, e)
        # Symmetric: the reverse direction is the same flow.
        r = js("explain", f["dst"], f["src"], f["proto"], str(f["dport"]), str(f["sport"]))
        assert r["appliance"] == f["appliance"] and r["hash"] == e["hash"], (f, r)
        if done == 0:
            run("explain", f["src"], f["dst"], f["proto"], str(f["sport"]), str(f["dport"]), record=True)
        done += 1
        if done == 5:
            break
    assert done > 0, "no TCP/UDP flow to explain"
    e = js("explain", "198.51.100.250", "203.0.113.250", "udp", "1", "2")
    assert e["existing"] is False and e["appliance"] in APPLIANCES, e


def read_pcap(path):
    """Frames of a classic pcap; a record still being written is left out."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    end = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off, out = 24, []
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        if off + 16 + incl > len(data):
            break
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def inner_tuple(b, ethertype):
    """(src, dst, proto, sport, dport) of an inner TCP/UDP packet that carries
    its ports (unfragmented or first fragment); None for anything else."""
    if ethertype == 0x0800:
        ihl = (b[0] & 0x0F) * 4
        proto, frag = b[9], struct.unpack("!H", b[6:8])[0]
        src, dst = ipaddress.ip_address(b[12:16]), ipaddress.ip_address(b[16:20])
        if frag & 0x1FFF:
            return None
        l4 = ihl
    elif ethertype == 0x86DD:
        proto, l4 = b[6], 40
        src, dst = ipaddress.ip_address(b[8:24]), ipaddress.ip_address(b[24:40])
        if proto == 44:  # fragment header: a first fragment still carries the ports
            if struct.unpack("!H", b[42:44])[0] >> 3:
                return None
            proto, l4 = b[40], 48
    else:
        raise AssertionError(f"inner ethertype {ethertype:#x}")
    if proto not in (6, 17, 132):
        return None
    sport, dport = struct.unpack("!HH", b[l4:l4 + 4])
    return (str(src), str(dst), {6: "tcp", 17: "udp", 132: "sctp"}[proto], sport, dport)


def decode_geneve(frame):
    """Outer addresses, Geneve options and inner tuple of one transmitted frame
    (None when it is not Geneve, e.g. ARP)."""
    if struct.unpack("!H", frame[12:14])[0] != 0x0800:
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[9] != 17 or struct.unpack("!H", ip[ihl + 2:ihl + 4])[0] != 6081:
        return None
    g = ip[ihl + 8:]
    assert g[0] >> 6 == 0 and not g[1] & 0x80, f"Geneve version/O bit: {g[:2].hex()}"
    opt_len = (g[0] & 0x3F) * 4
    assert opt_len == 32, f"aws options are 32 bytes, got {opt_len}"
    opts, o = {}, 8
    while o < 8 + opt_len:
        cls, typ, ln = struct.unpack("!HBB", g[o:o + 4])
        opts[(cls, typ & 0x7F)] = g[o + 4:o + 4 + (ln & 0x1F) * 4]
        o += 4 + (ln & 0x1F) * 4
    cookie = opts.get((0x0108, 3))
    assert cookie is not None and len(cookie) == 4, f"no cookie option: {opts}"
    return {"src": str(ipaddress.ip_address(ip[12:16])), "dst": str(ipaddress.ip_address(ip[16:20])),
            "endpoint_id": int.from_bytes(opts.get((0x0108, 1), b""), "big"),
            "attachment_id": int.from_bytes(opts.get((0x0108, 2), b""), "big"),
            "cookie": struct.unpack("!I", cookie)[0],
            "tuple": inner_tuple(g[8 + opt_len:], struct.unpack("!H", g[2:4])[0])}


def canon(t):
    """Both directions of a 5-tuple give the same key."""
    a, b = (t[0], t[3]), (t[1], t[4])
    return (t[2],) + (a + b if (ipaddress.ip_address(a[0]), a[1]) <= (ipaddress.ip_address(b[0]), b[1]) else b + a)


def t_tx_explain():
    """`explain` names the appliance and cookie that gwlbd really used."""
    want = js("stats")["totals"]["encapsulated"]
    deadline = time.time() + 60
    while True:  # net_pcap flushes the tx files after every burst
        pk = [d for path in args.tx_pcap for d in map(decode_geneve, read_pcap(path)) if d]
        if len(pk) >= want or time.time() > deadline:
            break
        time.sleep(0.2)
    assert len(pk) == want == N_GOOD, f"{len(pk)} Geneve packets in {args.tx_pcap}, encapsulated {want}"
    flows = {}  # canonical key -> {"route": {(appliance, cookie)}, "dirs": {tuple}}
    for d in pk:
        assert d["src"] == UNDERLAY and d["dst"] in APPLIANCES, d
        assert d["endpoint_id"] == 7 and d["attachment_id"] == 9, d
        if d["tuple"] is None:
            continue
        f = flows.setdefault(canon(d["tuple"]), {"route": set(), "dirs": set()})
        f["route"].add((d["dst"], d["cookie"]))
        f["dirs"].add(d["tuple"])
    split = {k: f["route"] for k, f in flows.items() if len(f["route"]) != 1}
    assert not split, f"flows sent to several appliances or cookies: {list(split.items())[:3]}"
    # A sample spread over every kind of flow: v4/v6, tcp/udp, both directions
    # seen or only one (fragmented datagrams); each explained both ways.
    keys = sorted(flows, key=lambda k: (k[0], ":" in k[1], len(flows[k]["dirs"]), k))
    sample = keys[::max(1, len(keys) // 60)]
    kinds = {(k[0], ":" in k[1]) for k in sample}
    assert len(sample) >= 50 and kinds >= {(p, v6) for p in ("tcp", "udp") for v6 in (False, True)}, \
        (len(sample), len(keys), kinds)
    queries = []
    for k in sample:
        t = sorted(flows[k]["dirs"])[0]
        queries += [(k, t), (k, (t[1], t[0], t[2], t[4], t[3]))]
    for (k, t), e in zip(queries, pmap(explain, [t for _, t in queries])):
        (app, cookie), = flows[k]["route"]
        assert e["existing"] is True, (t, e)
        assert e["appliance"] == app, f"{t}: explain says {e['appliance']}, gwlbd sent it to {app}"
        assert int(e["cookie"], 16) == cookie, f"{t}: explain cookie {e['cookie']}, Geneve cookie {cookie:#010x}"
    print(f"   {len(pk)} Geneve packets, {len(flows)} flows with ports, {len(sample)} explained both ways")
    TX_FLOWS.update(flows)


TX_FLOWS = {}  # canonical 5-tuple -> {"route", "dirs"}, from the transmitted Geneve packets


def t_sctp():
    """--proto sctp lists the capture's SCTP flows with their ports; explain
    (sctp, ports) finds each, both ways, on the appliance and cookie gwlbd
    really sent it with; an IPv6 key shows [address]:port."""
    want = json.load(open(f"{args.workdir}/sctp-flows.json"))
    listed = js("flows", "--proto", "sctp", "--all")["flows"]
    got = {(f["src"], f["dst"], f["sport"], f["dport"]) for f in listed}
    assert got == {(w["src"], w["dst"], w["sport"], w["dport"]) for w in want}, (got, want)
    assert all(f["proto"] == "sctp" and f["kind"] == "flow" for f in listed), listed
    assert js("flows", "--proto", "132", "--count")["count"] == len(want)
    for f in listed:
        t = (f["src"], f["dst"], "sctp", f["sport"], f["dport"])
        assert canon(t) in TX_FLOWS, f"{t}: no Geneve packet of it transmitted"
        (app, cookie), = TX_FLOWS[canon(t)]["route"]
        for q in (t, (t[1], t[0], "sctp", t[4], t[3])):
            e = explain(q)
            assert e["existing"] is True and e["appliance"] == app == f["appliance"], (q, e, app)
            assert int(e["cookie"], 16) == cookie, (q, e["cookie"], cookie)
        if ":" in t[0]:
            out = run("explain", *map(str, t), record=True).stdout
            assert re.search(r"key +\[2001:db8:5c::1\]:5060 <-> \[2001:db8:5c::2\]:5061 proto 132", out), out
    # Ports with a protocol the dataplane keys without them: refused (client and gwlbd).
    p = run("explain", "198.51.100.1", "203.0.113.1", "47", "1", "2", rc=2)
    assert "PROTO 47 has no ports" in p.stderr, p.stderr
    print(f"   {len(listed)} SCTP flows listed and explained both ways")


def fresh_tuples(n, seed):
    """n TCP/UDP tuples, IPv4 and IPv6, from ranges the capture never uses."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        proto = rnd.choice(["tcp", "udp"])
        sp, dp = rnd.randint(1024, 65535), rnd.choice([53, 80, 443, 8080, rnd.randint(1, 65535)])
        if i % 5 == 4:
            src = f"2001:db8:aa::{rnd.randint(1, 0xffff):x}:{rnd.randint(1, 0xffff):x}"
            dst = f"2001:db8:bb::{rnd.randint(1, 0xffff):x}"
        else:
            src = f"10.{rnd.randint(1, 99)}.{rnd.randint(0, 255)}.{rnd.randint(1, 254)}"
            dst = f"172.16.{rnd.randint(0, 255)}.{rnd.randint(1, 254)}"
        out.append((src, dst, proto, sp, dp))
    return out


FRESH = fresh_tuples(300, 42)


def new_flow_targets():
    """Where each of the 300 fresh tuples would go now ({appliance: count})."""
    counts = {}
    for t, e in zip(FRESH, pmap(explain, FRESH)):
        assert e["existing"] is False, f"{t} is in the flow table: {e}"
        assert e["appliance"] == e["maglev"]["appliance"], e
        counts[e["appliance"]] = counts.get(e["appliance"], 0) + 1
    return counts


def servers_by_address():
    return {s["address"]: s for s in js("servers")["servers"]}


def configured_servers():
    """Addresses in the config (removed appliances stay listed while flows use them)."""
    return {a for a, s in servers_by_address().items() if s["state"] != "removed"}


def t_server_changes():
    """server remove/add/set: new flows follow at once, existing flows stay."""
    before = new_flow_targets()
    assert set(before) == APPLIANCES and all(c >= 30 for c in before.values()), before
    on12 = [f for f in ALL if f["appliance"] == "192.0.2.12" and f["kind"] == "flow" and f["proto"] in ("tcp", "udp")]
    assert len(on12) >= 10, len(on12)
    tuples12 = [(f["src"], f["dst"], f["proto"], f["sport"], f["dport"]) for f in on12]

    def still_on_12(when):
        # A check of its own, so that the rest of the sequence still runs.
        def explained():
            bad = [(t, e.get("appliance"), e.get("existing"))
                   for t, e, f in zip(tuples12, pmap(explain, tuples12), on12)
                   if not (e["existing"] is True and e["appliance"] == "192.0.2.12" and e["cookie"] == f["cookie"])]
            assert not bad, f"{len(bad)} of {len(on12)} flows of 192.0.2.12 no longer say existing " \
                            f"on 192.0.2.12, e.g. (tuple, appliance, existing) {bad[:3]}"

        def listed():
            got = js("flows", "--all", "--server", "192.0.2.12", "--proto", "tcp")["flows"] + \
                js("flows", "--all", "--server", "192.0.2.12", "--proto", "udp")["flows"]
            got = [f for f in got if f["kind"] == "flow"]
            assert {key(f) for f in got} == {key(f) for f in on12}, "flows --server 192.0.2.12 changed"
            bad = [f for f in got if f["appliance"] != "192.0.2.12"]
            assert not bad, f"flows --server 192.0.2.12 lists {len(bad)} of {len(got)} with appliance " \
                            f"{sorted({f['appliance'] for f in bad})}"

        check(f"{when}: explain keeps existing flows on 192.0.2.12", explained)
        check(f"{when}: flows --server 192.0.2.12 lists them with their appliance", listed)

    # Remove: no new flow goes to it; its flows keep it.
    run("server", "remove", "192.0.2.12", record=True)
    # no_rebalance, no draining (docs/product-rules.md section 2): listed as removed while
    # its flows stay on it.
    sv = servers_by_address().get("192.0.2.12")
    assert sv and sv["state"] == "removed" and sv["drain"]["existing_flows"] == "stay (no_rebalance)" \
        and sv["active_flows"] >= len(on12), sv
    assert re.search(r"^192\.0\.2\.12\s+firewalls\s+0\s+removed\s", run("servers").stdout, re.M)
    after = new_flow_targets()
    assert "192.0.2.12" not in after and sum(after.values()) == 300, after
    still_on_12("after server remove 192.0.2.12")

    # Add: about a third of the new flows (three appliances now) go to it.
    run("server", "add", "firewalls", "192.0.2.13", record=True)
    sv = servers_by_address()["192.0.2.13"]
    assert sv["state"] == "active" and sv["weight"] == 100 and sv["group"] == "firewalls", sv
    assert "192.0.2.13" in run("servers", record=True).stdout
    after = new_flow_targets()
    share = after.get("192.0.2.13", 0) / 300
    assert 0.10 <= share <= 0.40 and "192.0.2.12" not in after, after
    print(f"   new flows after add: {after}")
    still_on_12("after server add 192.0.2.13")

    # Weight 0: idle, keeps its flows, gets no new one.
    run("server", "set", "192.0.2.13", "--weight", "0", record=True)
    sv = servers_by_address()["192.0.2.13"]
    assert sv["state"] == "idle" and sv["weight"] == 0, sv
    out = run("servers", record=True).stdout
    assert re.search(r"^192\.0\.2\.13\s+firewalls\s+0\s+idle\s", out, re.M), out
    after = new_flow_targets()
    assert set(after) == {"192.0.2.10", "192.0.2.11"}, after


def invalid_config_layout(stderr, paths):
    """`gwlbctl: MESSAGE (invalid_config)` on one line, then one `  PATH: ...`
    line per problem, each problem once (docs/cli.md, Exit status)."""
    lines = stderr.splitlines()
    assert lines and lines[0].startswith("gwlbctl: ") and lines[0].endswith(" (invalid_config)"), lines
    assert [l.split(": ")[0].strip() for l in lines[1:]] == paths and \
        all(l.startswith("  ") for l in lines[1:]), lines
    assert sum(l.count(paths[0] + ":") for l in lines) == 1, f"problem printed twice: {lines}"


def t_changes():
    """The rest of the change commands and every error path; reload restores."""
    run("server", "remove", "192.0.2.13", record=True)
    assert configured_servers() == {"192.0.2.10", "192.0.2.11"}, configured_servers()
    r = run("server", "remove", "192.0.2.99", rc=1, record=True)
    assert "192.0.2.99" in r.stderr and "not_found" in r.stderr, r.stderr
    run("server", "set", "192.0.2.99", "--weight", "1", rc=1)
    r = run("server", "add", "nope", "192.0.2.14", rc=1, record=True)
    assert "nope" in r.stderr and "not_found" in r.stderr, r.stderr
    run("flows", "--group", "nope", rc=1)
    add = run("server", "add", "firewalls", "192.0.2.10", rc=2)  # duplicate address
    assert "invalid_config" in add.stderr, add.stderr
    # The underlay address: refused with the config key path of the new entry.
    r = run("server", "add", "firewalls", UNDERLAY, rc=2, record=True)
    assert "invalid_config" in r.stderr and \
        re.search(r"server_groups\[0\]\.servers\[2\]\.address: .*node\.underlay_ip", r.stderr), r.stderr
    check("invalid_config printed as docs/cli.md says", lambda: invalid_config_layout(
        r.stderr, ["server_groups[0].servers[2].address"]))
    err = js("server", "add", "firewalls", UNDERLAY, rc=2)
    assert err["code"] == "invalid_config" and \
        [d["path"] for d in err["details"]] == ["server_groups[0].servers[2].address"], err
    assert configured_servers() == {"192.0.2.10", "192.0.2.11"}, "a refused change changed something"
    run("flows", "--src", "198.51.100.0/40", rc=2, record=True)
    run("flows", "--proto", "gre", rc=2)
    # config dump: the running config (the runtime removal in it) as YAML that
    # loads, each runtime change listed on stderr; a reload reverts them and
    # says which.
    gone = APPLIANCES - configured_servers()
    assert gone, "the test expects a runtime removal here"
    d = run("config", "dump", record=True)
    for a in APPLIANCES:
        assert (f"address: {a}\n" in d.stdout) == (a not in gone), (a, d.stdout)
    for a in gone:
        assert re.search(rf"^  {re.escape(a)} \(group firewalls\): removed at runtime, still in the file$",
                         d.stderr, re.M), d.stderr
    dumped = os.path.join(os.path.dirname(args.socket), "dumped.yaml")
    with open(dumped, "w") as f:
        f.write(d.stdout)
    assert "valid" in run("config", "check", dumped).stdout
    assert js("status")["runtime_changes"] == len(gone)
    g = js("reload")
    assert "snapshot_generation" in g and g["restart_needed"] == [], g
    assert sorted(c["address"] for c in g["reverted"]) == sorted(gone) and \
        all(c["change"] == "removed" and c["after_reload"] == 100 for c in g["reverted"]), g
    assert js("status")["runtime_changes"] == 0
    assert "runtime change" not in run("config", "dump").stderr
    run("reload", record=True)
    assert configured_servers() == APPLIANCES, js("servers")["servers"]
    assert set(new_flow_targets()) == APPLIANCES


def wait_for(what, cond, timeout=60.0, step=0.2):
    """Polls cond() until it returns a true value; fails naming `what` after
    `timeout` seconds (generous: CI is 2 shared cores, also under ASan)."""
    deadline = time.time() + timeout
    while True:
        v = cond()
        if v:
            return v
        assert time.time() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(step)


def t_drain():
    """server drain: no new flows at once, flows stay and explain says so, the
    time left counts down, undrain ends it early; a short drain ends by itself
    and no_rebalance keeps the flows; error paths. No check races the drain's
    clock: the checks made while it lasts use a drain of an hour, and the end
    of a 1 s drain is waited for (polled), however slow the machine."""
    on11 = [f for f in ALL if f["appliance"] == "192.0.2.11" and f["kind"] == "flow"
            and f["proto"] in ("tcp", "udp")][:20]
    assert on11, "no flow on 192.0.2.11"
    tuples = [(f["src"], f["dst"], f["proto"], f["sport"], f["dport"]) for f in on11]
    out = run("server", "drain", "192.0.2.11", "--timeout", "3600", record=True).stdout
    assert out.startswith("draining 192.0.2.11 for 1h0m") and "existing flows stay (no_rebalance)" in out, out
    r = run("server", "drain", "192.0.2.11", rc=2, record=True)
    assert "already draining" in r.stderr and "(conflict)" in r.stderr, r.stderr
    sv = servers_by_address()["192.0.2.11"]
    assert sv["state"] == "draining" and 0 < sv["drain"]["time_left_s"] <= 3600, sv
    left0 = sv["drain"]["time_left_s"]
    assert re.search(r"^192\.0\.2\.11\s+firewalls\s+100\s+draining \(\d", run("servers").stdout, re.M)
    answers = pmap(explain, tuples)
    still = servers_by_address()["192.0.2.11"]["state"] == "draining"
    for t, e in zip(tuples, answers):
        assert e["existing"] and e["appliance"] == "192.0.2.11", e
        # Only answers given while the drain ran can say so (a loaded machine
        # can outlast it; then the check after the drain below covers them).
        assert "draining" in e["reason"] or not still, e
    if not still:
        print("    note: the drain ended before the explain answers came back; "
              "'draining' in the reason not checked")
    assert "192.0.2.11" not in new_flow_targets()
    run("server", "drain", "192.0.2.99", rc=1)
    run("server", "drain", "192.0.2.11", "--timeout", "0", rc=2)
    run("server", "undrain", "192.0.2.10", rc=2)
    wait_for("the drain's time left counting down",
             lambda: servers_by_address()["192.0.2.11"]["drain"]["time_left_s"] < left0)
    # undrain ends a drain in progress.
    assert "takes new flows again" in run("server", "undrain", "192.0.2.11").stdout
    assert servers_by_address()["192.0.2.11"]["state"] == "active"
    assert "192.0.2.11" in new_flow_targets()
    # A drain that ends by itself: 1 s, then `drained` (polled).
    out = run("server", "drain", "192.0.2.11", "--timeout", "1", record=True).stdout
    assert out.startswith("draining 192.0.2.11 for 1s"), out
    wait_for("192.0.2.11 drained after its 1 s drain",
             lambda: servers_by_address()["192.0.2.11"]["state"] == "drained")
    # no_rebalance (the default): the flows stay on it after the drain.
    for t, e in zip(tuples, pmap(explain, tuples)):
        assert e["existing"] and e["appliance"] == "192.0.2.11", e
    assert "192.0.2.11" not in new_flow_targets()
    assert "takes new flows again" in run("server", "undrain", "192.0.2.11", record=True).stdout
    assert servers_by_address()["192.0.2.11"]["state"] == "active"
    assert "192.0.2.11" in new_flow_targets()


def t_guard():
    """Issue 14 item 13: a change that leaves the group with no appliance in
    service is refused (exit 2, nothing changes) with what would happen;
    --force does it and prints the same as a warning."""
    for a in APPLIANCES:  # whatever an earlier check left drained
        run("server", "undrain", a, rc=None)
    assert "draining" in run("server", "drain", "192.0.2.10", "--timeout", "600").stdout
    run("server", "set", "192.0.2.11", "--weight", "0")
    for argv in (("server", "drain", "192.0.2.12"), ("server", "remove", "192.0.2.12")):
        r = run(*argv, rc=2, record=True)
        for part in ("refused: server group 'firewalls' would have no appliance in service (left: none)",
                     "new flows are dropped: no appliance left", "flows on 192.0.2.12 stay there",
                     "Nothing changed", "--force", "(would_leave_no_service)"):
            assert part in r.stderr, (part, r.stderr)
        assert r.stderr.count("\n") == 1, r.stderr
    err = js("server", "drain", "192.0.2.12", rc=2)
    assert err["code"] == "would_leave_no_service" and err["details"][0]["taken_out"] == ["192.0.2.12"], err
    assert servers_by_address()["192.0.2.12"]["state"] == "active"
    only12 = new_flow_targets()
    assert set(only12) == {"192.0.2.12"}, only12
    out = run("server", "drain", "192.0.2.12", "--force", "--timeout", "600", record=True).stdout
    assert out.startswith("draining 192.0.2.12") and \
        "warning: forced: server group 'firewalls' has no appliance in service (left: none)" in out, out
    dropped = new_flow_targets()
    assert dropped == {None: len(FRESH)}, ("drained and weight 0 everywhere: dropped", dropped)
    for a in ("192.0.2.10", "192.0.2.12"):
        run("server", "undrain", a)
    run("server", "set", "192.0.2.11", "--weight", "100")
    back = new_flow_targets()
    assert set(back) == set(APPLIANCES), back


for name, fn in [("stats", t_stats), ("status and groups", t_status), ("servers", t_servers),
                 ("health", t_health), ("health-destinations (regions)", t_regions),
                 ("flows --count", t_count), ("filters", t_filters), ("paging", t_paging),
                 ("explain", t_explain), ("explain vs transmitted Geneve", t_tx_explain),
                 ("--proto sctp, IPv6 [address]:port", t_sctp),
                 ("server remove/add/set: new and existing flows", t_server_changes),
                 ("error paths, reload", t_changes), ("drain", t_drain),
                 ("guard rails: no appliance in service", t_guard)]:
    check(name, fn)

with open(f"{args.workdir}/session.txt", "w") as f:
    f.write("\n".join(session))
if failures:
    print(f"{len(failures)} check(s) failed: {', '.join(failures)}")
    sys.exit(1)
print(f"all checks passed ({len(ALL)} flows, {args.input_packets} packets)")
