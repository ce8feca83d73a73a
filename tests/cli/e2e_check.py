#!/usr/bin/python3
"""Checks gwlbctl against a running gwlbd that has forwarded a known capture.

usage: e2e_check.py --gwlbctl PATH --socket SOCK --input-packets N --workdir DIR

Waits until gwlbd has received all N packets, then checks each command's
JSON against the others (listing vs count vs filters vs paging vs explain vs
stats) and the exit statuses of the error paths. Writes the human-readable
output of a sample session to DIR/session.txt (pasted into docs/cli.md).
"""
import argparse
import ipaddress
import json
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--gwlbctl", required=True)
ap.add_argument("--socket", required=True)
ap.add_argument("--input-packets", type=int, required=True)
ap.add_argument("--workdir", required=True)
args = ap.parse_args()
APPLIANCES = {"192.0.2.10", "192.0.2.11", "192.0.2.12"}
session = []
failures = []


def run(*argv, rc=0, record=False):
    cmd = [args.gwlbctl, "--socket", args.socket, *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != rc:
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


def check(name, fn):
    try:
        fn()
        print(f"ok: {name}")
    except Exception as e:  # report every failing check, not only the first
        failures.append(name)
        print(f"FAIL: {name}: {e}")


def key(f):
    return (f["src"], f["dst"], f["sport"], f["dport"], f["proto"], f["kind"])


# gwlbd reads the pcap in a burst or two; wait until every packet is counted.
deadline = time.time() + 30
while True:
    st = js("stats")
    if st["totals"]["rx_packets"] >= args.input_packets or time.time() > deadline:
        break
    time.sleep(0.2)

ALL = js("flows", "--all")["flows"]


def t_stats():
    st = js("stats")
    assert st["totals"]["rx_packets"] == args.input_packets, (st["totals"], args.input_packets)
    assert sum(w["counters"]["rx_packets"] for w in st["workers"]) == args.input_packets
    assert all(d["help"] for d in st["drops"]) and len(st["drops"]) >= 20, st["drops"]
    out = run("stats").stdout
    for d in st["drops"]:
        assert d["name"] in out and d["help"] in out, d
    run("stats", "--watch", "0.3", "--count", "2", record=True)


def t_status():
    s = js("status")
    assert s["version"] and len(s["workers"]) == 2 and s["ports"], s
    assert s["flows"] > 0, s
    run("status", record=True)
    js("groups")
    out = run("groups", record=True).stdout
    assert "firewalls" in out, out


def t_servers():
    sv = js("servers")["servers"]
    assert {s["address"] for s in sv} == APPLIANCES, sv
    assert all(s["packets"] > 0 for s in sv), sv
    assert sum(s["packets"] for s in sv) == args.input_packets, (sv, args.input_packets)
    out = run("servers", record=True).stdout
    assert all(a in out for a in APPLIANCES) and "ago" in out, out
    assert len(js("servers", "--group", "firewalls")["servers"]) == 3
    run("servers", "--group", "nope", rc=1)


def t_count():
    c = js("flows", "--count")
    assert c["count"] > 0 and c["count"] == len(ALL), (c, len(ALL))
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
        assert got == want, f"{argv}: {len(got)} listed, {len(want)} expected; extra {list(got - want)[:3]}, missing {list(want - got)[:3]}"
        assert js("flows", "--count", *argv)["count"] == len(want), argv
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
    assert set(seen) == {key(f) for f in ALL}, "paging missed flows"
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


def t_changes():
    r = run("server", "add", "firewalls", "192.0.2.13", "--weight", "50", record=True)
    sv = {s["address"]: s for s in js("servers")["servers"]}
    assert "192.0.2.13" in sv and sv["192.0.2.13"]["weight"] == 50, sv
    run("server", "set", "192.0.2.13", "--weight", "0", record=True)
    sv = {s["address"]: s for s in js("servers")["servers"]}
    assert sv["192.0.2.13"]["weight"] == 0, sv
    run("servers", record=True)
    run("server", "remove", "192.0.2.13", record=True)
    assert "192.0.2.13" not in {s["address"] for s in js("servers")["servers"]}
    run("server", "remove", "192.0.2.99", rc=1, record=True)
    run("server", "set", "192.0.2.99", "--weight", "1", rc=1)
    run("server", "add", "nope", "192.0.2.14", rc=1)
    run("flows", "--group", "nope", rc=1)
    # Removing the last appliance of a group would make the config invalid.
    add = run("server", "add", "firewalls", "192.0.2.10", rc=2)  # duplicate address
    assert "invalid_config" in add.stderr, add.stderr
    run("flows", "--src", "198.51.100.0/40", rc=2, record=True)
    run("flows", "--proto", "gre", rc=2)
    g = js("reload")
    assert "snapshot_generation" in g and g["restart_needed"] == [], g
    run("reload", record=True)
    sv = js("servers")["servers"]
    assert {s["address"] for s in sv} == APPLIANCES, sv


for name, fn in [("stats", t_stats), ("status and groups", t_status), ("servers", t_servers),
                 ("flows --count", t_count), ("filters", t_filters), ("paging", t_paging),
                 ("explain", t_explain), ("server add/set/remove, reload", t_changes)]:
    check(name, fn)

with open(f"{args.workdir}/session.txt", "w") as f:
    f.write("\n".join(session))
if failures:
    print(f"{len(failures)} check(s) failed: {', '.join(failures)}")
    sys.exit(1)
print(f"all checks passed ({len(ALL)} flows, {args.input_packets} packets)")
