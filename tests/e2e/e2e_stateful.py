"""Stateful appliances in the lab (LAB_APPLIANCE=stateful: gwlb-appliance --tun
forwarding through its namespace's kernel and the nftables conntrack firewall
of scripts/lab_stateful.nft; docs/lab.md "The stateful appliance").

A failover scenario, reusable by every test that asks what a client sees when
its flow's appliance fails: a verified TCP stream (netpeer.py tcp-watch: it
never blocks, and reports its last echoed byte, the error that ended it and
the kernel's TCP_INFO at the end), a fault on the appliance carrying it, and
an Observation of what followed: when gwlbd declared the appliance unhealthy,
where it put the flow, what the firewalls counted, what the client got.
Faults (FAULTS):
  killed    the appliance process is gone (lab.sh app-stop)
  http_503  its HTTP check answers 503 (POST /health/fail); it still forwards
  blackhole its HTTP check answers 200 and its kernel forwards nothing
            (net.ipv4.ip_forward=0 in its namespace)
The gwlbd side of a scenario is the lab's config, chosen by the test's
environment (LAB_FAILOVER, LAB_HC_*, ...: tests/e2e/e2e.py TESTS).
"""
import json
import os
import subprocess
import time

from e2e import APPS, CLIENT, SERVER, SERVER6, carrier, check_same_appliance, flow_on, sha, wait_for

FAULTS = ("killed", "http_503", "blackhole")
FW = "inet gwlb_appliance"  # scripts/lab_stateful.nft's table
PORT = 7000


COUNTERS = ("established", "new_tcp_syn", "new_udp", "new_icmp_echo", "drop_invalid", "drop_new_other")


def fw_counters(lab, app):
    """The appliance's nftables counters (scripts/lab_stateful.nft), name ->
    packets; all 0 for a plain appliance (LAB_APPLIANCE=mixed), which has none."""
    if not lab.app_stats(app).get("tun"):
        return dict.fromkeys(COUNTERS, 0)
    r = lab.run(app, "nft", "-j", "list", "counters", "table", *FW.split())
    assert r.returncode == 0, f"{app}: nft list counters: {r.stderr}"
    return {o["counter"]["name"]: o["counter"]["packets"]
            for o in json.loads(r.stdout)["nftables"] if "counter" in o}


def fw_drops(counters):
    return counters["drop_invalid"] + counters["drop_new_other"]


def inject(lab, app, fault):
    """Puts `fault` on appliance `app` (FAULTS)."""
    if fault == "killed":
        lab.sh("app-stop", app[-1])
    elif fault == "http_503":
        r = lab.run(lab.mgmt, "curl", "-s", "-XPOST", "--max-time", "3", f"http://{APPS[app]}:8080/health/fail")
        assert "503" in r.stdout, f"{app}: /health/fail: {r.stdout}{r.stderr}"
    elif fault == "blackhole":
        r = lab.run(app, "sysctl", "-qw", "net.ipv4.ip_forward=0")
        assert r.returncode == 0, r.stderr
    else:
        raise ValueError(f"fault {fault}: not one of {FAULTS}")


def health_change(lab, addr, t0, timeout):
    """Seconds from t0 to gwlbd's 'unhealthy' for addr, or None if not within timeout."""
    t_end = time.time() + timeout
    while time.time() < t_end:
        h = lab.servers()[addr]["health"]
        if h["state"] == "unhealthy":
            return h["since"] - t0
        time.sleep(0.05)
    return None


def flow_appliance(lab, sport):
    out = json.loads(lab.gwlbctl("--json", "flows", "--proto", "tcp", "--port", str(PORT)))
    for f in out["flows"]:
        if (f["src"], f["sport"]) == (CLIENT, sport) or (f["dst"], f["dport"]) == (CLIENT, sport):
            return f
    return None


def failover(lab, fault, seconds=16.0, rate=500000, limit=20.0, fault_after=2.0, reconnect=False):
    """Runs the scenario once; returns the Observation (a dict):
      victim, other          the appliance that carried the stream, the other one
      t_fault                when the fault was put on (epoch s)
      unhealthy_after        seconds from the fault to gwlbd's 'unhealthy' (None: not seen)
      flow_after             gwlbd's flow entry of the stream when the client stopped watching
                             (appliance, moved_from)
      other_fw               the other appliance's firewall counters, deltas over the scenario
      stream                 tcp-watch's final report (complete, intact, last_rx, error, tcp_info)
      silent_after_fault     seconds from the fault to the stream's last echoed byte
                             (negative: nothing came after the fault)
      silent_for             seconds the client had no byte when the observation ended
      reconnect              with reconnect=True, the client's new connection after an
                             error (tcp-watch's reconnect: sport, connected_at, first_byte_at)
    The stream writes `rate` bytes/s for `seconds`; the client gives up
    watching `limit` seconds after it connected."""
    lab.serve("tcp-echo-server", SERVER, PORT)
    proc = lab.spawn("client", *lab.peer("tcp-watch", SERVER, str(PORT), str(seconds), str(rate), str(limit),
                                         *(["reconnect"] if reconnect else [])), stdout=subprocess.PIPE)
    ev = json.loads(proc.stdout.readline())
    sport = ev["sport"]
    victim = carrier(lab, f"{CLIENT}:{sport}", f"{SERVER}:{PORT}")
    other = [a for a in APPS if a != victim][0]
    fw0 = fw_counters(lab, other)
    time.sleep(max(0.0, ev["t"] + fault_after - time.time()))
    t_fault = time.time()
    inject(lab, victim, fault)
    unhealthy_after = health_change(lab, APPS[victim], t_fault, timeout=max(1.0, limit - (t_fault - ev["t"])))
    flow_after = flow_appliance(lab, sport)
    line = proc.stdout.readline()
    # gwlbd moves a flow at its next packet: a stream in retransmission
    # backoff (its appliance killed or black-holing) moves seconds later.
    flow_after = flow_appliance(lab, sport) or flow_after
    proc.wait(30)
    stream = json.loads(line)
    fw1 = fw_counters(lab, other)
    obs = {"fault": fault, "victim": victim, "other": other, "t_fault": t_fault,
           "unhealthy_after": unhealthy_after,
           "flow_after": {"appliance": flow_after["appliance"],
                          "moved_from": (flow_after["moved"] or {}).get("from")} if flow_after else None,
           "other_fw": {k: fw1[k] - fw0.get(k, 0) for k in fw1}, "stream": stream,
           "silent_after_fault": round(stream["last_rx"] - t_fault, 3),
           "silent_for": round(stream["end"] - stream["last_rx"], 3), "reconnect": stream.get("reconnect")}
    print(f"scenario {fault}: {victim} carried the stream; unhealthy after "
          f"{'%.3f s' % unhealthy_after if unhealthy_after is not None else 'never (within the watch)'}; "
          f"gwlbd's flow after: {obs['flow_after']}; {other}'s firewall: {obs['other_fw']}")
    print(f"  client: {stream['received']}/{stream['sent']} bytes echoed, complete={stream['complete']}, "
          f"intact={stream['intact']}, error={stream['error']}, last byte {obs['silent_after_fault']:+.3f} s "
          f"after the fault, then nothing for {obs['silent_for']:.1f} s; TCP_INFO {stream['tcp_info']}")
    return obs


def tcp_give_up_seconds(lab, rto_min=0.2, rto_max=120.0):
    """When the client's kernel gives up on a connection whose segments are
    never acknowledged: tcp_retries2 retransmissions with the RTO doubling
    from rto_min up to rto_max (Linux: TCP_RTO_MIN 200 ms, TCP_RTO_MAX 120 s)."""
    r = lab.run("client", "sysctl", "-n", "net.ipv4.tcp_retries2")
    retries = int(r.stdout.strip())
    total, rto = 0.0, rto_min
    for _ in range(retries + 1):
        total += rto
        rto = min(rto * 2, rto_max)
    return retries, total


def assert_hung(lab, obs, min_silence, apps=APPS):
    """Today's outcome of a moved flow on a stateful appliance: the new
    appliance's conntrack has never seen the connection's SYN, so its
    firewall drops every segment; the client gets no byte from the move on,
    no error either, and its stream never completes. `apps`: the lab's
    appliances, name -> address (IPv6 ones with LAB_UNDERLAY=ipv6)."""
    s = obs["stream"]
    assert obs["unhealthy_after"] is not None, f"{obs['victim']} was never declared unhealthy: {obs}"
    fa = obs["flow_after"]
    assert fa and fa["appliance"] == apps[obs["other"]], f"the flow did not move to {obs['other']}: {fa}"
    assert fw_drops(obs["other_fw"]) > 0, f"{obs['other']}'s firewall dropped nothing of the moved flow: {obs}"
    assert obs["other_fw"]["drop_invalid"] > 0, f"the drops were not conntrack's 'invalid': {obs['other_fw']}"
    assert not s["complete"] and s["received"] < s["sent"], f"the stream completed: {s}"
    assert s["error"] is None, f"the client got an error (a reset?), not a hang: {s}"
    assert s["intact"], f"what did arrive was corrupted: {s}"
    # Nothing after the move: the last byte came before gwlbd moved the flow.
    assert s["last_rx"] <= obs["t_fault"] + obs["unhealthy_after"] + 0.5, \
        f"bytes arrived {obs['silent_after_fault']} s after the fault, after the move: {obs}"
    assert obs["silent_for"] >= min_silence, f"silent only {obs['silent_for']} s: {obs}"
    info = s["tcp_info"] or {}
    retries, give_up = tcp_give_up_seconds(lab)
    print(f"the client hangs: no byte for {obs['silent_for']:.1f} s (as long as it watched), no error; its "
          f"kernel retransmitted {info.get('retransmits')} times, RTO now {info.get('rto_ms')} ms; it would give "
          f"up after tcp_retries2={retries} retransmissions, about {give_up:.0f} s from the first")


def assert_black_holed(lab, obs, min_silence):
    """Today's outcome of an appliance that answers its HTTP check and forwards
    nothing: it stays healthy, the flow stays on it, and the client hangs."""
    s = obs["stream"]
    assert obs["unhealthy_after"] is None, f"{obs['victim']} was declared unhealthy: {obs}"
    fa = obs["flow_after"]
    assert fa and fa["appliance"] == APPS[obs["victim"]] and not fa["moved_from"], f"the flow moved: {fa}"
    assert not s["complete"] and s["error"] is None and s["intact"], f"the stream did not hang: {s}"
    assert s["last_rx"] <= obs["t_fault"] + 0.5, f"bytes arrived {obs['silent_after_fault']} s after the fault"
    assert obs["silent_for"] >= min_silence, f"silent only {obs['silent_for']} s: {obs}"
    print(f"{obs['victim']} answers 200 and forwards nothing: still healthy, the flow still on it, the "
          f"client without a byte for {obs['silent_for']:.1f} s")


def test_stateful_tcp(lab, args):
    """No fault: through two stateful appliances, a 16 MiB download and 8
    concurrent byte-checked TCP streams complete intact, each connection on
    one appliance both ways; UDP echo (IPv4 and IPv6: the lab runs with
    LAB_IPV6=1) and ping pass the firewall (new UDP and ICMP echo are
    allowed); the firewalls drop nothing. Bad input to the tun
    path is counted by name: a packet the appliance's kernel sends out of the
    tun for no flow it learned (from_tun_unknown_flow), and one that is no
    parseable IP packet (from_tun_malformed)."""
    fw0 = {a: fw_counters(lab, a) for a in APPS}
    dl = lab.dir + "/dl.bin"
    r = lab.run("client", "curl", "-s", "-o", dl, "-w", "%{local_port} %{speed_download}",
                "--max-time", "60", f"http://{SERVER}/blob.bin")
    assert r.returncode == 0, f"curl: {r.returncode} {r.stderr}"
    port, speed = r.stdout.split()
    assert sha(dl) == sha(lab.dir + "/www/blob.bin"), "download corrupted"
    print(f"16 MiB download intact at {float(speed) / 1e6:.1f} MB/s")
    flows = [(f"{CLIENT}:{port}", f"{SERVER}:80")]
    lab.serve("tcp-echo-server", SERVER, PORT)
    p = lab.spawn("client", *lab.peer("tcp-streams", SERVER, str(PORT), "8", "6", "100000"), stdout=subprocess.PIPE)
    json.loads(p.stdout.readline())
    done = json.loads(p.stdout.readline())
    p.wait(30)
    bad = [s for s in done["streams"] if not s["ok"]]
    assert not bad, f"streams broken through the stateful appliances: {bad}"
    flows += [(f"{CLIENT}:{s['sport']}", f"{SERVER}:{PORT}") for s in done["streams"]]
    where = check_same_appliance(lab, 6, flows)
    print(f"8 streams of 600 kB echoed intact; {len(flows)} connections each on one appliance both ways: "
          + ", ".join(f"{a}={sum(1 for v in where.values() if v == a)}" for a in APPS))
    lab.serve("udp-echo-server", SERVER, 5353)
    r = lab.run("client", *lab.peer("udp-echo-client", SERVER, "5353", "20"))
    assert json.loads(r.stdout)["intact"] == 20, r.stdout
    lab.serve("udp-echo-server", SERVER6, 5353)
    r = lab.run("client", *lab.peer("udp-echo-client", SERVER6, "5353", "20"))
    assert json.loads(r.stdout)["intact"] == 20, f"IPv6 through the stateful appliances: {r.stdout}"
    r = lab.run("client", *lab.peer("ping", SERVER, "3"))
    assert json.loads(r.stdout)["received"] == 3, f"ping through the firewall: {r.stdout}{r.stderr}"
    fw1 = {a: fw_counters(lab, a) for a in APPS}
    d = {a: {k: fw1[a][k] - fw0[a][k] for k in fw1[a]} for a in APPS}
    for a in APPS:
        assert fw_drops(d[a]) == 0, f"{a}'s firewall dropped packets with no fault: {d[a]}"
    used = set(where.values())
    for a in used:
        assert d[a]["new_tcp_syn"] > 0 and d[a]["established"] > 0, f"{a} carried flows, counted {d[a]}"
    assert sum(d[a]["new_udp"] for a in APPS) >= 2 and sum(d[a]["new_icmp_echo"] for a in APPS) >= 1, d
    print(f"20 UDP datagrams over IPv4, 20 over IPv6 and 3 pings through; firewall counters over the test: {d}")
    # Bad input from the kernel's side of the tun, in app1's namespace: an
    # ICMP echo to an address no flow has (the default route is the tun), and
    # a raw IPv4 packet of protocol TCP with 2 bytes of header (unparseable).
    t0 = lab.app_stats("app1")["tun"]
    lab.run("app1", *lab.peer("ping", "10.77.3.3", "2"))
    lab.run("app1", "/usr/bin/python3", "-c",
            "import socket;s=socket.socket(socket.AF_INET,socket.SOCK_RAW,socket.IPPROTO_RAW)\n"
            "h=bytes([0x45,0,0,22,0,1,0,0,64,6,0,0,10,77,9,11,10,77,3,3])\n"
            "s.sendto(h+b'\\x12\\x34',('10.77.3.3',0))")
    t1 = wait_for("the tun path counted the bad input", lambda: (
        lambda t: t if t["from_tun_unknown_flow"] - t0["from_tun_unknown_flow"] >= 2
        and t["from_tun_malformed"] - t0["from_tun_malformed"] >= 1 else None)(lab.app_stats("app1")["tun"]),
        timeout=10)
    print(f"app1's tun path: from_tun_unknown_flow +{t1['from_tun_unknown_flow'] - t0['from_tun_unknown_flow']}, "
          f"from_tun_malformed +{t1['from_tun_malformed'] - t0['from_tun_malformed']}; "
          f"returned {t1['returned']}, still serving")
    r = lab.run("client", "curl", "-s", "--max-time", "5", f"http://{SERVER}/index.html")
    assert r.stdout.startswith("hello through the gateway"), r.stdout


def test_stateful_ethernet(lab, args):
    """geneve.format ethernet (0x6558, the router's frame inside) through the
    stateful appliances: the tun path takes each frame's Ethernet header off,
    the kernel and its firewall forward the IP packet, the header goes back
    on. The checks of stateful_tcp all pass, and the appliances saw only the
    ethernet format and wrote every frame to their tun (ethernet_frames)."""
    test_stateful_tcp(lab, args)
    for a in APPS:
        st = lab.app_stats(a)
        assert set(st["formats"]) <= {"ethernet"}, f"{a} saw formats {st['formats']}"
    tun = {a: lab.app_stats(a)["tun"] for a in APPS}
    assert sum(t["ethernet_frames"] for t in tun.values()) > 0, tun
    for a, t in tun.items():
        assert t["ethernet_frames"] == t["to_tun"], f"{a}: not every frame went through the tun as ethernet: {t}"
    print("ethernet format through the tun: " + ", ".join(
        f"{a} ethernet_frames={t['ethernet_frames']} returned={t['returned']}" for a, t in tun.items()))


def test_stateful_failover(lab, args, fault="http_503"):
    """failover_mode rebalance, stateful appliances: the appliance carrying a
    verified TCP stream fails (`fault`); gwlbd declares it unhealthy and moves
    the flow to the other appliance, whose firewall drops every segment of it
    (conntrack never saw its SYN: ct state invalid). Asserts today's
    behaviour as the client sees it: no byte after the move, no error, the
    stream never completes; records how long it hangs."""
    obs = failover(lab, fault)
    assert_hung(lab, obs, min_silence=10.0)


def test_stateful_killed(lab, args):
    test_stateful_failover(lab, args, fault="killed")


def test_stateful_blackhole_no_reset(lab, args):
    """The black hole with forwarding checks on and resets off: gwlbd sees
    it (forwarding_timeout) and moves the flow, and the other appliance's
    firewall drops it: the client hangs as in test_stateful_failover."""
    obs = failover(lab, "blackhole")
    assert_hung(lab, obs, min_silence=10.0)


def test_stateful_blackhole(lab, args):
    """The appliance carrying a verified TCP stream stops forwarding (its
    kernel's ip_forward off) while its HTTP check still answers 200: today
    gwlbd never sees it; the flow stays there and the client hangs."""
    obs = failover(lab, "blackhole")
    assert_black_holed(lab, obs, min_silence=10.0)


def seconds_of(text):
    """A lab duration setting ("500ms", "1s", "2") in seconds."""
    return float(text[:-2]) / 1000 if text.endswith("ms") else float(text.rstrip("s"))


def failure_window(lab):
    """The lab's health check settings (scripts/lab.sh's LAB_HC_* and their
    defaults) and the failure window docs/product-rules.md defines:
    timeout x unhealthy_threshold + interval x (unhealthy_threshold - 1)."""
    hc = {"interval": seconds_of(lab.env.get("LAB_HC_INTERVAL", "500ms")),
          "timeout": seconds_of(lab.env.get("LAB_HC_TIMEOUT", "300ms")),
          "unhealthy": int(lab.env.get("LAB_HC_UNHEALTHY", "2"))}
    return hc, hc["timeout"] * hc["unhealthy"] + hc["interval"] * (hc["unhealthy"] - 1)


def assert_forwarding_probes_pass(lab, seconds=2.0):
    """Forwarding checks through the stateful ruleset: both appliances
    healthy with health_check.forwarding on, and probes coming back and
    consumed (punted_probe) while they stay so."""
    for a in APPS:
        wait_for(f"{a} healthy", lambda: lab.servers()[APPS[a]]["health"]["state"] == "healthy", timeout=15)
    p0 = json.loads(lab.gwlbctl("--json", "stats"))["totals"]["punted_probe"]
    fw0 = {a: fw_counters(lab, a)["new_icmp_echo"] for a in APPS}
    t_end = time.time() + seconds
    while time.time() < t_end:
        states = {a: lab.servers()[APPS[a]]["health"]["state"] for a in APPS}
        assert set(states.values()) == {"healthy"}, f"with forwarding checks on: {states}"
        time.sleep(0.1)
    probes = json.loads(lab.gwlbctl("--json", "stats"))["totals"]["punted_probe"] - p0
    echo = {a: fw_counters(lab, a)["new_icmp_echo"] - fw0[a] for a in APPS}
    assert probes >= 2 * int(seconds), f"forwarding probes did not come back: punted_probe +{probes}"
    assert all(n > 0 for n in echo.values()), f"the probes did not cross the firewalls: {echo}"
    print(f"forwarding checks on: both stateful appliances healthy for {seconds:.0f} s, punted_probe +{probes}, "
          f"the firewalls' new_icmp_echo {echo}")


def test_stateful_reset(lab, args, fault):
    """send_tcp_reset on, failover_mode rebalance, forwarding checks on
    (LAB_TCP_RESET=1, LAB_HC_FORWARDING=true), two stateful appliances:
    the appliance carrying a verified TCP stream gets `fault`. The client
    (tcp-watch with reconnect, as an application that reconnects on
    ECONNRESET) must get an RST, reconnect through the other appliance, and
    have its first byte echoed there within 1 s of the RST; the moved
    connection never reaches the other appliance's firewall (nothing to
    drop). gwlbd must declare the appliance within the failure window plus
    one interval of phase (docs/product-rules.md), and answers each end at
    its next segment: a client whose appliance still forwards (http_503) is
    sending, and gets its RST within 1 s of the declaration, so its first
    byte comes within 1 s + the window (+ the phase). A client whose segments
    vanish (killed, blackhole) is in retransmission backoff: its next segment
    comes when its RTO, doubling since the fault, runs out, no later than
    about the time since the fault again (+ the first RTO, 200 ms); that is
    what its RST waits for, and the first byte can miss 1 s + the window.
    Prints the figures docs/lab.md quotes, and whether that target was met."""
    hc, window = failure_window(lab)
    assert_forwarding_probes_pass(lab)
    obs = failover(lab, fault, seconds=10.0, limit=12.0, fault_after=1.0, reconnect=True)
    s, re = obs["stream"], obs["reconnect"]
    declared = obs["unhealthy_after"]
    assert declared is not None, f"{obs['victim']} was never declared unhealthy: {obs}"
    assert s["error"] == "ECONNRESET", f"the client got no RST: {s}"
    assert re and "error" not in re, f"the client could not reconnect: {re}"
    on = flow_on(lab.app_stats(obs["other"]), 6, f"{CLIENT}:{re['sport']}", f"{SERVER}:{PORT}")
    assert on and on["a_to_b"] > 0 and on["b_to_a"] > 0, f"the new connection is not on {obs['other']}: {on}"
    assert fw_drops(obs["other_fw"]) == 0, f"{obs['other']}'s firewall dropped packets: {obs['other_fw']}"
    reason = lab.servers()[APPS[obs["victim"]]]["health"].get("last_result")
    if fault == "blackhole":  # its HTTP check still answers 200: only the forwarding half can see it
        assert reason == "forwarding_timeout", f"{obs['victim']} unhealthy for {reason!r}"
    rst_after = s["error_at"] - obs["t_fault"]
    first = re["first_byte_at"] - obs["t_fault"]
    target = 1.0 + window
    totals = json.loads(lab.gwlbctl("--json", "stats"))["totals"]
    print(f"FIGURE {fault}, resets on: unhealthy {declared:.2f} s ({reason}), RST {rst_after:.2f} s, first "
          f"byte through {obs['other']} {first:.2f} s after the fault: target 1 s + failure window "
          f"{window:.1f} s = {target:.1f} s {'met' if first <= target else 'MISSED'} (timeout {hc['timeout']} s x "
          f"{hc['unhealthy']} + interval {hc['interval']} s x {hc['unhealthy'] - 1}); the client's RTO at the RST "
          f"{(s['tcp_info'] or {}).get('rto_ms')} ms; tcp_resets_unhealthy {totals['tcp_resets_unhealthy']}; "
          f"load {os.getloadavg()[0]:.1f}")
    assert totals["tcp_resets_unhealthy"] >= 1, totals
    slack = 0.35  # polling and a loaded machine
    assert declared <= window + hc["interval"] + slack, f"declared {declared:.2f} s after the fault"
    if fault == "http_503":
        assert rst_after - declared <= 1.0, f"the RST came {rst_after - declared:.2f} s after the declaration"
    else:
        assert rst_after <= 2 * declared + 0.2 + slack, \
            f"the RST came {rst_after:.2f} s after the fault, past the client's next retransmission"
    assert first - rst_after <= 1.0, f"first byte {first - rst_after:.2f} s after the RST"


def test_stateful_reset_killed(lab, args):
    test_stateful_reset(lab, args, "killed")


def test_stateful_reset_http_503(lab, args):
    test_stateful_reset(lab, args, "http_503")


def test_stateful_reset_blackhole(lab, args):
    test_stateful_reset(lab, args, "blackhole")
