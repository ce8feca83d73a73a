"""e2e_fleet_ipv6: the fleet lab on an IPv6-only underlay (LAB_UNDERLAY=ipv6
scripts/lab.sh up --gateways 2; docs/lab.md, "The fleet lab over IPv6"), run
by e2e.py. Every link between the router, the gateways and the appliances
carries IPv6 only: each gateway's BIRD has its BGP session (with BFD) to the
router's BIRD between IPv6 addresses, announces its IPv4 default route with
its IPv6 address as next hop (extended next hop), and the router's kernel
spreads the client's IPv4 traffic over those IPv6 next hops (one ECMP route);
gwlbd sends Geneve over IPv6 to the appliances, and the gateways sync their
flows over IPv6 (fleet.sync_listen [fd77:9::bK]:7946).

  1. the router's table 100 is one route with both gateways' IPv6 next hops,
     installed by BIRD, whose sessions run between IPv6 addresses with BFD up;
     with IPv6 inside too (LAB_IPV6=1) the gateways' ::/0 is one route over
     the same next hops, and UDP flows over IPv6 cross intact;
  2. 24 TCP streams (echoed, checked byte by byte) spread over both gateways,
     and each gateway holds every stream, the peer's learnt by IPv6 sync
     records (fleet_sync: flows received from the peer's IPv6 address);
  3. gateway 2 is killed (SIGKILL): the router's BFD takes its next hop out
     (measured), and its streams go on through gateway 1 on the appliance
     they had;
  4. gateway 2 starts again: its warm start over IPv6 from gateway 1 brings
     every stream, and its next hop comes back at the router;
then every stream completed intact, and each stream crossed exactly one
appliance, both directions, start to end (the appliances' own counters).
"""
import json
import os
import signal
import subprocess
import time

from e2e import CLIENT, SERVER, SERVER6, flow_on, wait_for
from e2e_fleet import ctl, gw_busy, gw_entries, gw_pid, streams_intact, sync_received, time_until

APPS6 = {"app1": "fd77:9::11", "app2": "fd77:9::12"}
GW6 = {1: "fd77:0:1::2", 2: "fd77:0:2::2"}     # the gateways' BGP addresses and next hops
SYNC6 = {1: "[fd77:9::b1]:7946", 2: "[fd77:9::b2]:7946"}
STREAMS, RATE = 24, 20000
SECONDS = 30 if os.environ.get("GWLB_SANITIZE") else 20


def nexthops6(lab):
    """IPv6 next hops of the router's IPv4 table 100 (BIRD's ECMP route)."""
    out = lab.run("router", "ip", "-4", "route", "show", "table", "100").stdout
    return {w.split()[0] for w in out.replace("\n", " ").split("via inet6 ")[1:]}


def app_stats(lab, app):
    r = lab.run("gw1", "curl", "-s", "--max-time", "3", f"http://[{APPS6[app]}]:8080/stats")
    return json.loads(r.stdout)


def birdc(lab, *cmd):
    return lab.run("router", "birdc", "-s", os.path.join(lab.dir, "router", "bird.ctl"), *cmd).stdout


def test_fleet_ipv6(lab, args):
    # 1. The router's ECMP route over the gateways' IPv6 next hops.
    assert nexthops6(lab) == set(GW6.values()), f"router table 100: {nexthops6(lab)}"
    route = lab.run("router", "ip", "-4", "route", "show", "table", "100").stdout
    assert "proto bird" in route.split("\n")[0], f"table 100 not installed by BIRD: {route}"
    assert "10.77." not in route, f"an IPv4 next hop in table 100: {route}"
    print("router table 100:", " ".join(route.split()))
    # docs/lab.md quotes this route: the same, word for word.
    doc = open(os.path.join(lab.src, "docs/lab.md"), encoding="utf-8").read()
    quoted = doc.split("<!-- fleet-ipv6-route -->", 1)[1].split("```")[1]
    assert quoted.split() == route.split(), f"docs/lab.md quotes {quoted.split()}, the router has {route.split()}"
    for k, addr in GW6.items():
        info = birdc(lab, "show", "protocols", "all", f"gw{k}")
        assert "Established" in info and f"Neighbor address: {addr}" in info, f"gw{k}'s session: {info}"
    bfd = birdc(lab, "show", "bfd", "sessions")
    for addr in GW6.values():
        assert any(addr in l and " Up " in f" {l} " for l in bfd.splitlines()), f"BFD to {addr}: {bfd}"
    print("BGP sessions established and BFD up between the router and", ", ".join(GW6.values()))
    # The router has no IPv4 address toward the gateways: the underlay is IPv6 only.
    for k in GW6:
        a4 = lab.run("router", "ip", "-4", "addr", "show", "dev", f"r-gw{k}").stdout
        assert "inet " not in a4, f"r-gw{k} has IPv4: {a4}"
    # Each gwlbd is an IPv6-only node: no node.underlay_ip in its config, none in its status.
    for k in GW6:
        cfg = open(os.path.join(lab.dir, f"gw{k}", "gwlbd.yaml"), encoding="utf-8").read()
        assert "underlay_ip:" not in cfg, f"gw{k}'s gwlbd.yaml sets node.underlay_ip"
        underlay = ctl(lab, k, "status").get("underlay")
        assert underlay is not None and underlay.get("ipv4") is None and underlay.get("ipv6"), \
            f"gw{k}: gwlbctl status: underlay {underlay!r}, expected an IPv6 address and no IPv4 one"
    print("each gateway is an IPv6-only node: no node.underlay_ip, status underlay",
          ", ".join(f"gw{k} {ctl(lab, k, 'status')['underlay']['ipv6']}" for k in GW6))

    # IPv6 inside (LAB_IPV6=1): the gateways' ::/0 is one route over the same
    # IPv6 next hops, and UDP over IPv6 crosses the fleet intact.
    route6 = lab.run("router", "ip", "-6", "route", "show", "table", "100").stdout
    hops6 = {w.split()[0] for w in route6.replace("\n", " ").split("nexthop via ")[1:]}
    assert hops6 == set(GW6.values()) and "proto bird" in route6, f"router IPv6 table 100: {route6}"
    lab.serve("udp-echo-server", SERVER6, 5353)
    for i in range(8):
        r = lab.run("client", *lab.peer("udp-echo-client", SERVER6, "5353", "20", str(41000 + i)))
        u = json.loads(r.stdout)
        assert u["received"] == u["sent"] == 20 and u["intact"], f"UDP over IPv6, flow {i}: {u}"
    print("router IPv6 table 100:", " ".join(route6.split()), "; 8 UDP flows over IPv6 echoed intact")

    # 2. Streams over both gateways; each holds all of them via IPv6 sync.
    lab.serve("tcp-echo-server", SERVER, 7000)
    t_start = time.monotonic()
    streams = lab.spawn("client", *lab.peer("tcp-streams", SERVER, "7000", str(STREAMS), str(SECONDS),
                                            str(RATE)), stdout=subprocess.PIPE)
    sports = json.loads(streams.stdout.readline())["sports"]
    per = wait_for("streams over both gateways",
                   lambda: (lambda b1, b2: (b1, b2) if b1 and b2 and len(b1 | b2) == STREAMS else None)(
                       gw_busy(lab, 1), gw_busy(lab, 2)), 20, 0.2)
    print(f"streams through gw1: {len(per[0])}, through gw2: {len(per[1])} (a stream's two directions may "
          "cross both)")
    held = wait_for("every stream in both gateways' flow tables",
                    lambda: all(set(sports) <= set(gw_entries(lab, k)) for k in GW6) or None, 15, 0.2)
    assert held
    for k, peer in ((1, 2), (2, 1)):
        got = sync_received(lab, k)
        assert got.get(SYNC6[peer], 0) > 0, f"gw{k} received no records from {SYNC6[peer]}: {got}"
    where_gw = {p: gw_entries(lab, 1)[p][0] for p in sports}
    assert all(gw_entries(lab, 2)[p][0] == where_gw[p] for p in sports), "the gateways disagree on an appliance"
    print("each gateway holds all", STREAMS, "streams on the same appliance; records received over IPv6:",
          {k: sync_received(lab, k) for k in GW6})

    # 3. SIGKILL of gateway 2: BFD over IPv6 takes its next hop out.
    os.kill(gw_pid(lab, 2), signal.SIGKILL)
    t_gone = time_until(lambda: GW6[2] not in nexthops6(lab), 10)
    assert t_gone is not None, f"gw2's next hop still at the router 10 s after SIGKILL: {nexthops6(lab)}"
    print(f"gw2 SIGKILL: next hop {GW6[2]} gone from the router's kernel after {t_gone * 1000:.0f} ms")
    assert nexthops6(lab) == {GW6[1]}, nexthops6(lab)
    os.unlink(os.path.join(lab.dir, "gwlbd2.pid"))

    # 4. Gateway 2 starts again: a warm start over IPv6 from gw1 (TCP to
    # [fd77:9::b1]:7946), then its route.
    t0 = time.monotonic()
    lab.sh("gw-start", "2")
    back = time_until(lambda: GW6[2] in nexthops6(lab), 30, 0.02)
    assert back is not None, f"gw2 not back at the router: {nexthops6(lab)}"
    warm = ctl(lab, 2, "fleet")["warm_start"]
    assert warm["state"] == "done" and warm["peer"] == SYNC6[1] and warm["flows_received"] >= STREAMS, \
        f"gw2's warm start: {warm}"
    print(f"gw2 restarted: warm start from {warm['peer']}: {warm['flows_received']} flows in "
          f"{warm['elapsed_s']:.3f} s; next hop {GW6[2]} back at the router {time.monotonic() - t0:.2f} s "
          "after the start")
    assert time.monotonic() - t_start < SECONDS - 3, "the events took longer than the streams"

    streams_intact(streams, STREAMS)
    assert set(gw_busy(lab, 1)) == set(sports), "gw1 did not carry every stream after gw2's end"
    # The restarted gw2 holds every stream, on the appliance gw1 has it on.
    assert all(gw_entries(lab, 2).get(p, (None,))[0] == where_gw[p] for p in sports), "gw2 lacks a stream"
    stats = {a: app_stats(lab, a) for a in APPS6}
    for p in sports:
        on = [(a, f) for a in APPS6 for f in [flow_on(stats[a], 6, f"{CLIENT}:{p}", f"{SERVER}:7000")] if f]
        assert len(on) == 1, f"stream {p}: on {[a for a, _ in on]} (expected exactly one appliance)"
        a, f = on[0]
        assert f["a_to_b"] > 0 and f["b_to_a"] > 0 and f["dropped"] == 0, f"stream {p} on {a}: {f}"
        assert APPS6[a] == where_gw[p], f"stream {p} on {a}, the gateways said {where_gw[p]}"
    print("streams per appliance:", {a: sum(1 for p in sports if where_gw[p] == APPS6[a]) for a in APPS6})
