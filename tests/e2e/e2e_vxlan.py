"""The kernel VXLAN appliance (LAB_APPLIANCE=vxlan, docs/lab.md "The kernel
VXLAN appliance"): a peer no gwlb code is part of. Each appliance is two Linux
VXLAN devices with Azure's default tunnels (external 10801/801, internal
10800/800) bridged together, with scripts/lab_stateful.nft's conntrack
firewall on the bridge (br_netfilter); gwlbd's group has encapsulation: vxlan.

Checked: verified TCP streams over IPv4 and IPv6 inside, each carried by one
appliance (gwlbd's flow table and that appliance's conntrack agree, the other
never saw it), the firewalls admitted them from their SYN and dropped nothing;
gwlbd accepted every return, each on the tunnel other than the one it was sent
on (a bridge), and dropped no VXLAN packet; tshark decodes every outer packet
on the tunnel ports as VXLAN with the VNI of its port, in both directions on
both tunnels. Then failover (failover_mode rebalance): a verified TCP stream
is running when the appliance carrying it is stopped (HTTP check and bridge
down); gwlbd marks it unhealthy and new connections go through the other one;
the stream's flow moves there too, where conntrack never saw its SYN and drops
it as invalid: its client gets no byte after the move and no error (a hang,
as with gwlb-appliance's stateful appliances: e2e_stateful.assert_hung). The
stopped appliance started again is healthy.

test_vxlan_ipv6 (LAB_UNDERLAY=ipv6): the same streams, checks and failover
with the kernel's VXLAN devices tunnelling over IPv6 (appliances fd77:9::11
and ::12, gwlbd's node.underlay_ipv6 fd77:9::1); tshark decodes every outer
packet on the tunnel ports as IPv6 between gwlbd and the appliance, UDP
checksum good, VXLAN with its port's VNI; no IPv4 packet on the tunnel ports.
Both appliances are healthy by HTTP checks over IPv6 on gwlbd's data path
(gwlbctl health: probe path data, source fd77:9::1), and every GET /health
tshark sees on an appliance's link comes from fd77:9::1.
"""
import json
import subprocess
import time

from e2e import APPS, CLIENT, SERVER, tshark_start, tshark_stop, verified_streams, wait_for
from e2e_ipv6_underlay import check_probes
from e2e_stateful import assert_hung

FW = "inet gwlb_appliance"  # scripts/lab_stateful.nft's table, on the bridge
TUNNELS = {10801: 801, 10800: 800}  # port -> VNI (Azure's defaults)
APPS6 = {"app1": "fd77:9::11", "app2": "fd77:9::12"}  # LAB_UNDERLAY=ipv6
GW4, GW6 = "10.77.9.1", "fd77:9::1"  # gwlbd's node.underlay_ip and node.underlay_ipv6
WATCH_PORT = 7010  # the stream watched across the failover (verified_streams echoes on 7000 and 7006)


def fw_counters(lab, app):
    r = lab.run(app, "nft", "-j", "list", "counters", "table", *FW.split())
    assert r.returncode == 0, f"{app}: nft list counters: {r.stderr}"
    return {o["counter"]["name"]: o["counter"]["packets"]
            for o in json.loads(r.stdout)["nftables"] if "counter" in o}


def conntrack_has(lab, app, family, sport, dport):
    """True when the appliance's conntrack holds the TCP connection from sport to dport."""
    r = lab.run(app, "conntrack", "-L", "-f", family, "-p", "tcp", "--orig-port-src", str(sport),
                "--orig-port-dst", str(dport))
    return any(line.startswith("tcp") for line in r.stdout.splitlines())


def gw_flows(lab):
    out = json.loads(lab.gwlbctl("--json", "flows", "--all"))
    return {frozenset(((f["src"], f["sport"]), (f["dst"], f["dport"]))): f["appliance"]
            for f in out["flows"] if f.get("kind") == "flow"}


def ep(addr, port):
    return (addr, int(port))


def check_carriers(lab, conns, apps=APPS):
    """Each (family, client addr, sport, server addr, dport) is on one appliance in
    gwlbd's flow table, in that appliance's conntrack, and in no other's."""
    flows = gw_flows(lab)
    where = {}
    for fam, caddr, sport, saddr, dport in conns:
        a = flows.get(frozenset((ep(caddr, sport), ep(saddr, dport))))
        assert a in apps.values(), f"gwlbd has no appliance for {caddr}:{sport} -> {saddr}:{dport}: {a}"
        for name, addr in apps.items():
            have = conntrack_has(lab, name, fam, sport, dport)
            assert have == (addr == a), (f"{name}'s conntrack {'has' if have else 'lacks'} {caddr}:{sport} -> "
                                         f"{saddr}:{dport}; gwlbd put it on {a}")
        where[(caddr, sport)] = a
    return where


def tshark_check(lab, pcap, app, ipv6=False):
    """Every packet on the tunnel ports decodes as VXLAN with its port's VNI, its
    outer header in the underlay's family between gwlbd and this appliance
    (ipv6: IPv6 with a good UDP checksum). Returns {(direction, port): packets}."""
    fam = "ipv6" if ipv6 else "ip"
    gw, me = (GW6, APPS6[app]) if ipv6 else (GW4, APPS[app])
    r = subprocess.run(["tshark", "-r", pcap, "-d", "udp.port==10800,vxlan", "-d", "udp.port==10801,vxlan",
                        "-o", "udp.check_checksum:TRUE", "-Y", "udp.port == 10800 || udp.port == 10801",
                        # The outer headers: each field's first occurrence (inner IPv4 has ip.src too).
                        "-T", "fields", "-E", "separator=/t", "-E", "occurrence=f", "-e", fam + ".src",
                        "-e", "udp.srcport", "-e", "udp.dstport", "-e", "vxlan.vni", "-e", "vxlan.flags",
                        "-e", fam + ".dst", "-e", "frame.protocols", "-e", "udp.checksum.status"],
                       text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    assert r.returncode == 0, f"tshark -r {pcap}: {r.stderr}"
    seen = {}
    for line in r.stdout.splitlines():
        src, sport, dport, vni, flags, dst, protos, ck = (line.split("\t") + [""] * 8)[:8]
        port = int(dport) if int(dport) in TUNNELS else int(sport)
        assert protos.startswith(f"eth:ethertype:{fam}:udp:vxlan:eth:"), \
            f"{app}: a packet on port {port} is not VXLAN over {fam}: {line}"
        assert {src, dst} == {gw, me}, f"{app}: outer {src} -> {dst}, want between {gw} and {me}: {line}"
        assert not ipv6 or ck == "1", f"{app}: outer UDP checksum status {ck!r} (1: good) over IPv6: {line}"
        assert vni, f"{app}: a packet on port {port} tshark does not decode as VXLAN: {line}"
        assert int(vni) == TUNNELS[port], f"{app}: VNI {vni} on port {port} (want {TUNNELS[port]}): {line}"
        to_app = src == gw
        # Toward the appliance the port is the destination; back from it the kernel
        # sends to the tunnel's port as well (its own dstport).
        assert int(dport) in TUNNELS, f"{app}: destination port {dport} is no tunnel's: {line}"
        key = ("gw->app" if to_app else "app->gw", int(dport))
        seen[key] = seen.get(key, 0) + 1
    return seen


def test_vxlan(lab, args):
    streams(lab, APPS, ipv6=False)
    failover(lab, APPS)


def test_vxlan_ipv6(lab, args):
    """LAB_UNDERLAY=ipv6: the kernel's VXLAN over IPv6, its HTTP checks over
    IPv6 through gwlbd's data path, and the failover of test_vxlan."""
    servers = lab.servers()
    assert set(APPS6.values()) <= set(servers), f"gwlbd's appliances are not the IPv6 ones: {sorted(servers)}"
    wait_for("both IPv6 VXLAN appliances healthy",
             lambda: all((lab.servers()[ip].get("health") or {}).get("state") == "healthy" for ip in APPS6.values()),
             timeout=20)
    for ip in APPS6.values():
        check = json.loads(lab.gwlbctl("--json", "health", ip))["check"]
        assert check["probe_path"] == "data" and check["source"] == GW6, \
            f"gwlbctl health {ip}: probes on the {check['probe_path']} path from {check['source']}"
    print(f"both appliances healthy by HTTP checks over IPv6 (data path, from {GW6})")
    streams(lab, APPS6, ipv6=True)
    totals = json.loads(lab.gwlbctl("--json", "stats"))["totals"]
    for k in ("drop_geneve_unknown_appliance", "drop_loop_geneve", "drop_return_wrong_appliance"):
        assert totals.get(k, 0) == 0, f"gwlbd counted {k} = {totals[k]}"
    failover(lab, APPS6)


def streams(lab, apps, ipv6):
    """Verified TCP streams over IPv4 and IPv6 inside, each on one appliance,
    through the kernel's VXLAN devices; tshark on each appliance's eth0."""
    groups = lab.gwlbctl("groups")
    assert "vxlan" in groups and "801/800" in groups, f"gwlbctl groups does not show the VXLAN tunnels:\n{groups}"
    print(groups, end="")
    # Over IPv6 the HTTP checks too (tcp port 8080): they must come from node.underlay_ipv6.
    caps = {a: tshark_start(lab, a, "udp port 10800 or udp port 10801" + (" or tcp port 8080" if ipv6 else ""))
            for a in apps}
    conns = verified_streams(lab)
    where = check_carriers(lab, conns, apps)
    print("each connection on one appliance (gwlbd's flows = that appliance's conntrack, none on the other): "
          + ", ".join(f"{a}={sum(1 for v in where.values() if v == ip)}" for a, ip in apps.items()))
    fw = {a: fw_counters(lab, a) for a in apps}
    for a, c in fw.items():
        assert c["drop_invalid"] == 0 and c["drop_new_other"] == 0, f"{a}'s firewall dropped packets: {c}"
        if a in [n for n, ip in apps.items() if ip in where.values()]:
            assert c["new_tcp_syn"] > 0 and c["established"] > 0, f"{a}'s firewall saw no connection: {c}"
    print("firewalls (nftables conntrack on the bridge):", fw)
    totals = json.loads(lab.gwlbctl("--json", "stats"))["totals"]
    vx_drops = {k: v for k, v in totals.items() if k.startswith("drop_vxlan") and v}
    assert not vx_drops, f"gwlbd dropped VXLAN returns: {vx_drops}"
    assert totals.get("returned", 0) > 1000, f"returned: {totals.get('returned')}"
    assert totals.get("returned_vxlan_same_tunnel", 0) == 0, \
        f"a bridge returns on the other tunnel; gwlbd counted {totals['returned_vxlan_same_tunnel']} on the same"
    print(f"gwlbd: {totals['encapsulated']} packets sent, {totals['returned']} returned, each on the other tunnel")
    tshark_stop(caps)
    for a, (p, pcap) in caps.items():
        seen = tshark_check(lab, pcap, a, ipv6)
        if apps[a] in where.values():
            for key in (("gw->app", 10801), ("gw->app", 10800), ("app->gw", 10801), ("app->gw", 10800)):
                assert seen.get(key, 0) > 0, f"{a}: no packet {key[0]} on port {key[1]}: {seen}"
        print(f"tshark on {a}: every packet VXLAN over {'IPv6' if ipv6 else 'IPv4'} with its port's VNI: {seen}")
        if ipv6:
            print(f"tshark on {a}: {check_probes(pcap, a)} health checks, each from {GW6} (the data path)")
    return where


def flow_entry(lab, key):
    """gwlbd's flow entry (gwlbctl --json flows) of the connection key (frozenset of two endpoints)."""
    for f in json.loads(lab.gwlbctl("--json", "flows", "--all"))["flows"]:
        if f.get("kind") == "flow" and frozenset(((f["src"], f["sport"]), (f["dst"], f["dport"]))) == key:
            return f
    return None


def failover(lab, apps):
    """A verified TCP stream (netpeer.py tcp-watch, IPv4 inside) is running when
    the appliance carrying it stops (lab.sh app-stop: HTTP check and bridge
    down). gwlbd marks it unhealthy; six new connections go through the other
    one (its conntrack admits each from its SYN); the stream's flow moves there
    too (failover_mode rebalance) and that conntrack, which never saw its SYN,
    drops it as invalid: the client gets no byte after the move and no error
    (e2e_stateful.assert_hung, as with gwlb-appliance's stateful appliances).
    Then the stopped appliance starts again and is healthy."""
    lab.serve("tcp-echo-server", SERVER, WATCH_PORT)
    watch = lab.spawn("client", *lab.peer("tcp-watch", SERVER, str(WATCH_PORT), "6", "200000", "6"),
                      stdout=subprocess.PIPE)
    ev = json.loads(watch.stdout.readline())
    sport, key = ev["sport"], frozenset((ep(CLIENT, ev["sport"]), ep(SERVER, WATCH_PORT)))
    victim_ip = wait_for("the watched stream in gwlbd's flow table", lambda: gw_flows(lab).get(key), timeout=10)
    victim = [a for a, ip in apps.items() if ip == victim_ip][0]
    other = [a for a in apps if a != victim][0]
    wait_for(f"the watched stream in {victim}'s conntrack",
             lambda: conntrack_has(lab, victim, "ipv4", sport, WATCH_PORT), timeout=10)
    fw0 = fw_counters(lab, other)
    time.sleep(max(0.0, ev["t"] + 1.0 - time.time()))
    t_fault = time.time()
    lab.sh("app-stop", victim[-1])
    wait_for(f"{victim} unhealthy", lambda: lab.servers()[apps[victim]]["health"]["state"] == "unhealthy", timeout=15)
    unhealthy_after = lab.servers()[apps[victim]]["health"]["since"] - t_fault
    print(f"stopped {victim} (carrying the watched stream): unhealthy after {unhealthy_after:.2f} s")
    before = fw_counters(lab, other)["new_tcp_syn"]
    for _ in range(6):
        r = lab.run("client", "curl", "-s", "-w", " %{local_port}", "--max-time", "10", f"http://{SERVER}/index.html")
        body, port = r.stdout.rsplit(" ", 1)
        assert body == "hello through the gateway\n", f"new connection failed after failover: {r.stdout!r} {r.stderr}"
        assert conntrack_has(lab, other, "ipv4", int(port), 80), f"connection {port} is not on {other}"
    after = fw_counters(lab, other)["new_tcp_syn"]
    assert after >= before + 6, f"{other} admitted {after - before} new connections, want 6"
    print(f"6 new connections through {other} while {victim} is down")
    line = watch.stdout.readline()
    watch.wait(30)
    stream = json.loads(line)
    flow = flow_entry(lab, key)
    moved_from = (flow.get("moved") or {}).get("from") if flow else None
    assert moved_from == apps[victim], f"the watched stream's flow did not move from {victim}: {flow}"
    fw1 = fw_counters(lab, other)
    obs = {"victim": victim, "other": other, "t_fault": t_fault, "unhealthy_after": unhealthy_after,
           "flow_after": {"appliance": flow["appliance"], "moved_from": moved_from}, "stream": stream,
           "other_fw": {k: fw1[k] - fw0.get(k, 0) for k in fw1},
           "silent_after_fault": round(stream["last_rx"] - t_fault, 3),
           "silent_for": round(stream["end"] - stream["last_rx"], 3)}
    print(f"the watched stream moved {victim} -> {other}; {other}'s firewall over the failover: {obs['other_fw']}; "
          f"client: {stream['received']}/{stream['sent']} bytes echoed, error={stream['error']}, last byte "
          f"{obs['silent_after_fault']:+.2f} s after the stop")
    assert_hung(lab, obs, min_silence=3.0, apps=apps)
    lab.sh("app-start", victim[-1])
    wait_for(f"{victim} healthy", lambda: lab.servers()[apps[victim]]["health"]["state"] == "healthy", timeout=15)
    print(f"{victim} back: healthy")
