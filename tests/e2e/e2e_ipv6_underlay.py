"""An IPv6-only underlay (LAB_UNDERLAY=ipv6, docs/lab.md "An IPv6 underlay"):
the appliance network is fd77:9::/64 and nothing else; gwlbd sends Geneve over
IPv6 from node.underlay_ipv6 (fd77:9::1), the config gives no appliance MAC
(gwlbd finds them by neighbor discovery), and the HTTP health checks reach the
appliances over IPv6 through gwlbd's own appliance port (the data path: its
exception tap). gwlbd is an IPv6-only node: its config has no node.underlay_ip.
LAB_IPV6=1: IPv4 and IPv6 inside.

Checked: gwlbd has no IPv4 underlay address (the lab's config has no
node.underlay_ip; `gwlbctl status` says so, in JSON and text; its exception
tap has no IPv4 address) and sends no IPv4 and no ARP on the appliance link
(tshark); `gwlbctl server add` takes an IPv6 appliance and refuses an IPv4
one; gwlbd learned each appliance's real MAC by ND; both appliances are
healthy by their IPv6 probes; verified TCP streams (a 16 MiB download, echoed
uploads over IPv4 and IPv6 inside) are intact, each connection through one
appliance both ways; tshark on each appliance's link decodes every packet to or
from UDP 6081 as Ethernet / IPv6 / UDP 6081 / Geneve with gwlbd's and that
appliance's addresses, and gwlbd's packets carry a non-zero flow label, one per
inner flow (per UDP source port); the probes came from node.underlay_ipv6 (the
data path), not from the gateway kernel's own address on the appliance bridge.
Then an appliance stopped is found unhealthy by its IPv6 probes and new
connections go through the other one; started again, it is healthy.
"""
import json
import os
import subprocess
import time

from e2e import SERVER, check_same_appliance, tshark_start, tshark_stop, verified_streams, wait_for

UNDERLAY6 = "fd77:9::1"
MGMT6 = "fd77:9::2"  # the gateway kernel on br-app: what a probe must NOT come from
APPS6 = {"app1": "fd77:9::11", "app2": "fd77:9::12"}
APP_MACS = {"app1": "02:77:00:00:09:11", "app2": "02:77:00:00:09:12"}
GW_MAC = "02:77:00:00:09:01"  # gwlbd's appliance port (node.underlay_mac)
GW_TAP = "gwlb1"  # its exception tap (node.exception_path, underlay_port 1)


def app_stats(lab, app):
    r = lab.run("gw", "curl", "-s", "--max-time", "3", f"http://[{APPS6[app]}]:8080/stats")
    return json.loads(r.stdout)


def tshark_fields(pcap, *fields, display=None):
    cmd = ["tshark", "-r", pcap, "-d", "tcp.port==8080,http", "-T", "fields", "-E", "separator=/t",
           "-E", "occurrence=f"]
    if display:
        cmd += ["-Y", display]
    for f in fields:
        cmd += ["-e", f]
    r = subprocess.run(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, f"tshark -r {pcap}: {r.stderr}"
    return [(line.split("\t") + [""] * len(fields))[:len(fields)] for line in r.stdout.splitlines()]


def check_geneve(pcap, app):
    """Every packet to or from UDP 6081 on the appliance's link: outer IPv6
    between gwlbd and this appliance, Geneve; gwlbd's with a flow label, one
    per inner flow. Returns (packets to the appliance, back, flow labels)."""
    rows = tshark_fields(pcap, "frame.protocols", "ipv6.src", "ipv6.dst", "ipv6.flow", "udp.srcport",
                         "udp.dstport", "geneve.version", display="udp.port == 6081")
    to_app = back = 0
    label_of = {}
    for protos, src, dst, flow, sport, dport, gver in rows:
        line = f"{protos} {src} -> {dst} flow {flow} {sport} -> {dport}"
        assert protos.startswith("eth:ethertype:ipv6:udp:geneve"), f"{app}: not Ethernet/IPv6/UDP/Geneve: {line}"
        assert gver == "0", f"{app}: Geneve version {gver!r}: {line}"
        if src == UNDERLAY6:
            assert dst == APPS6[app] and dport == "6081", f"{app}: gwlbd's packet misaddressed: {line}"
            label = int(flow, 16)
            assert label != 0, f"{app}: gwlbd's packet without a flow label: {line}"
            assert label_of.setdefault(sport, label) == label, \
                f"{app}: UDP source port {sport} (one inner flow) with flow labels {label_of[sport]:#x} and {label:#x}"
            to_app += 1
        else:
            assert src == APPS6[app] and dst == UNDERLAY6 and dport == "6081", f"{app}: a return misaddressed: {line}"
            back += 1
    return to_app, back, label_of


def check_probes(pcap, app):
    """The appliance's health checks (HTTP GET /health on 8080) came from
    node.underlay_ipv6 (the test's own /stats requests come from br-app)."""
    rows = tshark_fields(pcap, "ipv6.src", "ipv6.dst", display='http.request.uri == "/health"')
    assert rows, f"{app}: no health check reached it over IPv6"
    for src, dst in rows:
        assert src == UNDERLAY6 and dst == APPS6[app], \
            f"{app}: a probe from {src} to {dst}, not from node.underlay_ipv6 {UNDERLAY6} (the data path)"
    return len(rows)


def check_no_ipv4_underlay(lab):
    """gwlbd runs as an IPv6-only node: no node.underlay_ip in its config,
    none in its status, no IPv4 address on its appliance port's tap."""
    cfg = open(os.path.join(lab.dir, "gwlbd.yaml")).read()
    assert "underlay_ip:" not in cfg, "the lab's gwlbd.yaml still sets node.underlay_ip"
    status = json.loads(lab.gwlbctl("--json", "status"))
    assert status.get("underlay") == {"ipv4": None, "ipv6": UNDERLAY6}, \
        f"gwlbctl status: underlay {status.get('underlay')!r}, expected no IPv4 address and {UNDERLAY6}"
    text = lab.gwlbctl("status")
    assert f"underlay  IPv6 {UNDERLAY6} (no IPv4 address)" in text, f"gwlbctl status:\n{text}"
    r = lab.run("gw", "ip", "-4", "-o", "addr", "show", "dev", GW_TAP)
    assert r.returncode == 0 and r.stdout.strip() == "", f"{GW_TAP} has IPv4 addresses: {r.stdout}{r.stderr}"
    print(f"gwlbd has no IPv4 underlay address: status says IPv6 {UNDERLAY6} only, {GW_TAP} has no IPv4 address")


def check_no_ipv4_from_gwlbd(pcap, app, carried_ipv4):
    """Nothing gwlbd sent on the appliance's link was IPv4 or ARP (outside:
    the IPv4 inside its Geneve is the client's). `carried_ipv4`: the
    appliance carried an IPv4 connection, so the capture must show IPv4
    inside (the hash may give one appliance only IPv6 connections)."""
    rows = tshark_fields(pcap, "frame.protocols", "ip.src", "ip.dst",
                         display=f"eth.src == {GW_MAC} and (ip or arp)")
    outer = [r for r in rows if r[0].startswith(("eth:ethertype:ip:", "eth:ethertype:arp"))]
    assert not outer, f"{app}: gwlbd sent IPv4 or ARP on the appliance link: {outer[:5]}"
    assert rows or not carried_ipv4, f"{app}: carried IPv4 connections, but no IPv4 inside gwlbd's Geneve: is the capture empty?"


def test_ipv6_underlay(lab, args):
    check_no_ipv4_underlay(lab)
    log = open(os.path.join(lab.dir, "gwlbd.log"), errors="replace").read()
    for a, addr in APPS6.items():
        want = f"ND: appliance {addr} is at {APP_MACS[a]}"
        assert want in log, f"gwlbd did not learn {a}'s MAC by neighbor discovery ('{want}' not in its log)"
    print("gwlbd learned both appliances' MACs by neighbor discovery")
    wait_for("both IPv6 appliances healthy",
             lambda: all((lab.servers().get(ip, {}).get("health") or {}).get("state") == "healthy"
                         for ip in APPS6.values()), timeout=20)
    for ip in APPS6.values():
        check = json.loads(lab.gwlbctl("--json", "health", ip))["check"]
        assert check["probe_path"] == "data" and check["source"] == UNDERLAY6, \
            f"gwlbctl health {ip}: probes on the {check['probe_path']} path from {check['source']}"
    print(f"both appliances healthy by their IPv6 health checks (data path, from {UNDERLAY6})")
    caps = {a: tshark_start(lab, a, "udp port 6081 or tcp port 8080 or arp or ip") for a in APPS6}
    ep = {"ipv4": "{}:{}", "ipv6": "[{}]:{}"}
    flows = [(ep[fam].format(c, cp), ep[fam].format(s, sp)) for fam, c, cp, s, sp in verified_streams(lab)]
    where = check_same_appliance(lab, 6, flows, {a: app_stats(lab, a) for a in APPS6})
    print(f"{len(where)} TCP connections, each through one appliance both ways: "
          + ", ".join(f"{a}={sum(1 for v in where.values() if v == a)}" for a in APPS6))
    totals = json.loads(lab.gwlbctl("--json", "stats"))["totals"]
    assert totals.get("returned", 0) > 1000, f"returned: {totals.get('returned')}"
    bad = {k: v for k, v in totals.items() if k.startswith("drop_return") and v}
    assert not bad, f"gwlbd dropped returns over IPv6: {bad}"
    print(f"gwlbd: {totals['encapsulated']} packets sent, {totals['returned']} returned, no return dropped; "
          f"drop_neighbour_unresolved {totals.get('drop_neighbour_unresolved', 0)}")
    tshark_stop(caps)
    for a, (p, pcap) in caps.items():
        to_app, back, labels = check_geneve(pcap, a)
        if a in where.values():
            assert to_app > 0 and back > 0, f"{a}: carried connections but tshark saw {to_app} out, {back} back"
        probes = check_probes(pcap, a)
        check_no_ipv4_from_gwlbd(pcap, a, any(v == a and not f[0].startswith("[") for f, v in where.items()))
        print(f"tshark on {a}: {to_app} packets from gwlbd and {back} back, all Ethernet/IPv6/UDP 6081/Geneve "
              f"between {UNDERLAY6} and {APPS6[a]}; {len(labels)} inner flows, each with one non-zero flow label; "
              f"{probes} health checks from {UNDERLAY6}; no IPv4 or ARP from gwlbd")

    # The IPv6 probes see an appliance go: new connections avoid it.
    victim, other = "app1", "app2"
    t0 = time.time()
    lab.sh("app-stop", victim[-1])
    wait_for(f"{victim} unhealthy", lambda: lab.servers()[APPS6[victim]]["health"]["state"] == "unhealthy", timeout=15)
    print(f"stopped {victim}: unhealthy after {time.time() - t0:.2f} s")
    app_stats_before = app_stats(lab, other)
    n_before = len(app_stats_before.get("flows", []))
    for _ in range(6):
        r = lab.run("client", "curl", "-s", "--max-time", "10", f"http://{SERVER}/index.html")
        assert r.stdout == "hello through the gateway\n", f"new connection failed after failover: {r.stdout!r} {r.stderr}"
    assert len(app_stats(lab, other).get("flows", [])) >= n_before + 6, f"{other} did not take the new connections"
    print(f"6 new connections through {other} while {victim} is down")
    lab.sh("app-start", victim[-1])
    wait_for(f"{victim} healthy", lambda: lab.servers()[APPS6[victim]]["health"]["state"] == "healthy", timeout=15)
    print(f"{victim} back: healthy")

    # The probes' host routes by the tap (table 6081) follow the config: an
    # appliance removed takes its route with it; the other keeps its own.
    def routes6():
        r = lab.run("gw", "ip", "-6", "route", "show", "table", "6081")
        return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
    have = routes6()
    assert set(APPS6.values()) <= have, f"table 6081 holds {sorted(have)}, not both appliances"
    out = lab.gwlbctl("server", "remove", APPS6[victim])
    wait_for(f"{victim}'s route gone from table 6081", lambda: APPS6[victim] not in routes6(), timeout=10)
    assert APPS6[other] in routes6(), f"{other}'s route went too: {sorted(routes6())}"
    print(f"gwlbctl server remove {APPS6[victim]}: its /128 left table 6081, {other}'s stayed")

    # gwlbctl server add takes an IPv6 appliance back on this IPv6-only node
    # (it took IPv4 only); an IPv4 one is refused: the node has no IPv4 address.
    group = lab.servers()[APPS6[other]]["group"]
    out = lab.gwlbctl("server", "add", group, "10.77.9.99")
    assert "'10.77.9.99' is IPv4: set node.underlay_ip" in out, f"gwlbctl server add 10.77.9.99: {out}"
    out = lab.gwlbctl("server", "add", group, APPS6[victim])
    assert "snapshot generation" in out, f"gwlbctl server add {APPS6[victim]}: {out}"
    wait_for(f"{victim} added back and healthy",
             lambda: (lab.servers().get(APPS6[victim], {}).get("health") or {}).get("state") == "healthy", timeout=20)
    wait_for(f"{victim}'s route back in table 6081", lambda: APPS6[victim] in routes6(), timeout=10)
    print(f"gwlbctl server add {group} {APPS6[victim]}: healthy again over IPv6; an IPv4 appliance refused "
          f"(no node.underlay_ip)")
