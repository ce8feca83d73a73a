#!/usr/bin/python3
"""End-to-end tests on the namespace lab (scripts/lab.sh, docs/lab.md).

  e2e.py TEST --build DIR --src DIR --work DIR
TEST: tcp | udp | drop | failover | ethernet | no_rebalance | drain | restart
Each test builds its own lab (namespaces PREFIX-*, PREFIX = e2e-TEST), runs, and
always tears it down. Exit 77 (skip) only when network namespaces cannot be made.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

CLIENT, SERVER = "10.77.1.2", "10.77.2.2"
APPS = {"app1": "10.77.9.11", "app2": "10.77.9.12"}


class Lab:
    def __init__(self, args, name, env=None):
        self.src, self.build = args.src, args.build
        self.prefix = "e2e-" + name
        self.dir = os.path.join(args.work, name)
        self.env = dict(os.environ, GWLB_BUILD=self.build, LAB_PREFIX=self.prefix, LAB_DIR=self.dir)
        self.env.update(env or {})
        self.procs = []
        self.lab = os.path.join(self.src, "scripts/lab.sh")

    def sh(self, *cmd, check=True, capture=True, timeout=120):
        r = subprocess.run([self.lab, *cmd], env=self.env, text=True, timeout=timeout,
                           stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None)
        if check and r.returncode != 0:
            raise RuntimeError(f"lab.sh {' '.join(cmd)}: exit {r.returncode}\n{r.stdout}")
        return r

    def up(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        r = self.sh("up", check=False)
        print(r.stdout, end="")
        if r.returncode == 3:
            print("SKIP: network namespaces cannot be created here (needs root or CAP_SYS_ADMIN)")
            sys.exit(77)
        if r.returncode != 0:
            self.dump_logs()
            raise RuntimeError("lab.sh up failed")

    def down(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.sh("down", check=False)
        for big in ("www/blob.bin", "dl.bin"):  # 16 MiB each; logs and config stay
            try:
                os.unlink(os.path.join(self.dir, big))
            except FileNotFoundError:
                pass

    def dump_logs(self):
        for f in ("gwlbd.log", "app1.log", "app2.log"):
            p = os.path.join(self.dir, f)
            if os.path.exists(p):
                print(f"--- {f} (tail)")
                print("".join(open(p, errors="replace").readlines()[-25:]), end="")

    def ns(self, n):
        return f"{self.prefix}-{n}"

    def run(self, n, *cmd, timeout=60):
        r = subprocess.run(["ip", "netns", "exec", self.ns(n), *cmd], text=True, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        return r

    def spawn(self, n, *cmd, **kw):
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(n), *cmd], text=True, **kw)
        self.procs.append(p)
        return p

    def peer(self, *a):
        return ["/usr/bin/python3", os.path.join(self.src, "tests/e2e/netpeer.py"), *a]

    def gwlbctl(self, *a):
        r = subprocess.run([os.path.join(self.build, "cli/gwlbctl"), "--socket", os.path.join(self.dir, "gwlbd.sock"), *a],
                           text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        return r.stdout

    def servers(self):
        out = self.gwlbctl("--json", "servers")
        d = json.loads(out)
        return {s["address"]: s for s in d["servers"]}

    def app_stats(self, app):
        r = self.run("gw", "curl", "-s", "--max-time", "3", f"http://{APPS[app]}:8080/stats")
        return json.loads(r.stdout)

    def app_reset(self, app):
        self.run("gw", "curl", "-s", "-XPOST", "--max-time", "3", f"http://{APPS[app]}:8080/stats/reset")


def flow_on(stats, proto, a, b):
    """The appliance's flow entry for a <-> b (either order), or None."""
    for f in stats["flows"]:
        if f["proto"] == proto and {f["a"], f["b"]} == {a, b}:
            return f
    return None


def check_same_appliance(lab, proto, flows):
    """Each (client_ep, server_ep) crossed exactly one appliance, in both directions."""
    stats = {a: lab.app_stats(a) for a in APPS}
    where = {}
    for c, s in flows:
        seen = [(a, flow_on(st, proto, c, s)) for a, st in stats.items()]
        seen = [(a, f) for a, f in seen if f]
        assert len(seen) == 1, f"flow {c} <-> {s}: seen on {[a for a, _ in seen]} (expected exactly one appliance)"
        a, f = seen[0]
        assert f["a_to_b"] > 0 and f["b_to_a"] > 0, f"flow {c} <-> {s} on {a}: one direction only: {f}"
        where[(c, s)] = a
    return where


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_tcp(lab, args):
    """Real TCP: a 16 MiB HTTP download (curl <- Python http.server), a 4 MiB
    upload echoed back, 8 small requests; every byte intact; both directions of
    every connection crossed one and the same appliance."""
    dl = os.path.join(lab.dir, "dl.bin")
    r = lab.run("client", "curl", "-s", "-o", dl, "-w", "%{local_port} %{size_download} %{time_total}",
                "--max-time", "60", f"http://{SERVER}/blob.bin")
    assert r.returncode == 0, f"curl failed: {r.returncode} {r.stderr}"
    port, size, secs = r.stdout.split()
    assert sha(dl) == sha(os.path.join(lab.dir, "www/blob.bin")), "download corrupted"
    print(f"download: {int(size)} bytes in {secs} s, intact (client port {port})")
    flows = [(f"{CLIENT}:{port}", f"{SERVER}:80")]
    lab.spawn("server", *lab.peer("tcp-echo-server", SERVER, "7000"))
    time.sleep(0.5)
    r = lab.run("client", *lab.peer("tcp-echo-client", SERVER, "7000", str(4 << 20)))
    res = json.loads(r.stdout)
    assert res["ok"], f"echo upload not intact: {res}"
    print(f"upload+echo: {res['sent']} bytes each way in {res['seconds']} s, intact")
    flows.append((f"{CLIENT}:{res['sport']}", f"{SERVER}:7000"))
    for _ in range(8):
        r = lab.run("client", "curl", "-s", "-w", " %{local_port}", "--max-time", "10", f"http://{SERVER}/index.html")
        body, port = r.stdout.rsplit(" ", 1)
        assert body == "hello through the gateway\n", f"bad body {body!r}"
        flows.append((f"{CLIENT}:{port}", f"{SERVER}:80"))
    where = check_same_appliance(lab, 6, flows)
    print(f"{len(flows)} TCP connections, each through one appliance both ways: "
          + ", ".join(f"{a}={sum(1 for v in where.values() if v == a)}" for a in APPS))
    # gwlbd agrees with the appliances on where each flow went.
    out = json.loads(lab.gwlbctl("--json", "flows", "--all"))
    gw = {}
    for f in out["flows"]:
        gw[frozenset((f.get("src"), f.get("dst")))] = f.get("appliance") or f.get("server")
    for (c, s), a in where.items():
        g = gw.get(frozenset((c, s)))
        if g is not None:
            assert g == APPS[a], f"gwlbd says {c}<->{s} is on {g}, appliance counters say {a}"


def test_udp(lab, args):
    """UDP both ways: 16 client sockets x 50 datagrams to an echo server; all
    return intact; both directions of each flow through the same appliance."""
    lab.spawn("server", *lab.peer("udp-echo-server", SERVER, "5353"))
    time.sleep(0.5)
    flows = []
    for i in range(16):
        r = lab.run("client", *lab.peer("udp-echo-client", SERVER, "5353", "50", str(40000 + i)))
        res = json.loads(r.stdout)
        assert res["received"] == res["sent"] == res["intact"], f"UDP echo lost or changed datagrams: {res}"
        flows.append((f"{CLIENT}:{res['sport']}", f"{SERVER}:5353"))
    where = check_same_appliance(lab, 17, flows)
    r = lab.run("client", *lab.peer("ping", SERVER, "3"))
    assert json.loads(r.stdout)["received"] == 3, f"ICMP echo through the gateway failed: {r.stdout}{r.stderr}"
    print("ICMP echo through the gateway: 3/3")
    print(f"{len(flows)} UDP flows x 50 datagrams echoed intact, each through one appliance both ways: "
          + ", ".join(f"{a}={sum(1 for v in where.values() if v == a)}" for a in APPS))


def test_drop(lab, args):
    """The appliances run --drop-dport 7001 --drop-proto icmp: TCP and UDP to
    port 7001 never arrive (and are counted on the rule), TCP 7000 / UDP 5353 /
    HTTP 80 pass untouched, ping is dropped."""
    lab.spawn("server", *lab.peer("tcp-echo-server", SERVER, "7000"))
    lab.spawn("server", *lab.peer("tcp-echo-server", SERVER, "7001"))
    lab.spawn("server", *lab.peer("udp-echo-server", SERVER, "5353"))
    lab.spawn("server", *lab.peer("udp-echo-server", SERVER, "7001"))
    time.sleep(0.5)
    r = lab.run("client", *lab.peer("tcp-echo-client", SERVER, "7000", "100000"))
    assert json.loads(r.stdout)["ok"], r.stdout + r.stderr
    r = lab.run("client", "curl", "-s", "--max-time", "5", f"http://{SERVER}/index.html")
    assert r.stdout == "hello through the gateway\n", r.stdout
    r = lab.run("client", *lab.peer("udp-echo-client", SERVER, "5353", "20"))
    assert json.loads(r.stdout)["intact"] == 20, r.stdout
    # Blocked: TCP connect to 7001 times out (SYNs dropped, no RST), UDP 7001 gets nothing.
    r = lab.run("client", "/usr/bin/python3", "-c",
                f"import socket;s=socket.socket();s.settimeout(2)\n"
                f"try:\n s.connect(('{SERVER}',7001));print('connected')\n"
                f"except socket.timeout: print('timeout')\nexcept OSError as e: print('error', e)")
    assert r.stdout.strip() == "timeout", f"TCP 7001 should time out: {r.stdout}{r.stderr}"
    r = lab.run("client", *lab.peer("udp-echo-client", SERVER, "7001", "10"))
    assert json.loads(r.stdout)["received"] == 0, r.stdout
    r = lab.run("client", *lab.peer("ping", SERVER, "3"))
    assert json.loads(r.stdout)["received"] == 0, f"ping should be dropped by --drop-proto icmp: {r.stdout}{r.stderr}"
    # Counters: rule hits only on the flows named; the others pass with no drop.
    drops = {"dport 7001": 0, "proto 1": 0}
    for a in APPS:
        st = lab.app_stats(a)
        for rule in st["rules"]:
            drops[rule["rule"]] += rule["drops"]
        for f in st["flows"]:
            ports = {f["a"].rsplit(":", 1)[1], f["b"].rsplit(":", 1)[1]}
            named = f["proto"] == 1 or (f["proto"] in (6, 17) and "7001" in ports)
            if named:
                assert f["dropped"] == f["a_to_b"] + f["b_to_a"], f"named flow not fully dropped: {f}"
            else:
                assert f["dropped"] == 0, f"unnamed flow had drops: {f}"
    # SYN + retransmits (>= 2 in 2 s), 10 UDP datagrams, 2 pings.
    assert drops["dport 7001"] >= 12 and drops["proto 1"] >= 3, f"rule counters: {drops}"
    print(f"rule drops: {drops}; TCP 7000, HTTP 80 and UDP 5353 passed with zero drops")


def wait_health(lab, addr, want, timeout):
    t_end = time.time() + timeout
    while time.time() < t_end:
        s = lab.servers()[addr]
        if s["health"]["state"] == want:
            return s
        time.sleep(0.05)
    raise AssertionError(f"{addr} not {want} within {timeout} s: {lab.servers()[addr]}")


def test_failover(lab, args):
    """A long-lived TCP stream (2 MB/s, checked byte by byte) while the
    appliance carrying it is killed: it is marked unhealthy within the failure
    window, the stream moves (rebalance) and finishes intact; the appliance is
    restarted and is healthy again within the success window. Then the other
    appliance is black-holed (its replies routed to a blackhole): probes time
    out instead of being refused, and the window is measured again."""
    hc = {"interval": 0.5, "timeout": 0.3, "healthy": 2, "unhealthy": 2}
    fail_window = hc["timeout"] * hc["unhealthy"] + hc["interval"] * (hc["unhealthy"] - 1)
    ok_window = hc["interval"] * (hc["healthy"] - 1)  # + response times (~ms here)
    lab.spawn("server", *lab.peer("tcp-echo-server", SERVER, "7000"))
    time.sleep(0.5)
    stream = lab.spawn("client", *lab.peer("tcp-stream", SERVER, "7000", "8", "2000000"),
                       stdout=subprocess.PIPE)
    ev = json.loads(stream.stdout.readline())
    sport = ev["sport"]
    time.sleep(1.0)
    c, s = f"{CLIENT}:{sport}", f"{SERVER}:7000"
    on = [a for a in APPS if flow_on(lab.app_stats(a), 6, c, s)]
    assert len(on) == 1, f"stream seen on {on}"
    victim = on[0]
    other = [a for a in APPS if a != victim][0]
    before = lab.app_stats(other)
    t_kill = time.time()
    lab.sh("app-stop", victim[-1])
    srv = wait_health(lab, APPS[victim], "unhealthy", 10)
    measured = srv["health"]["since"] - t_kill
    print(f"killed {victim} (carrying the stream); unhealthy after {measured:.3f} s "
          f"(formula: timeout x {hc['unhealthy']} + interval x {hc['unhealthy'] - 1} = {fail_window:.1f} s; "
          f"a refused probe fails at once, so expect interval x {hc['unhealthy'] - 1} .. interval x {hc['unhealthy']})")
    assert measured <= fail_window + 0.35, f"failure window exceeded: {measured:.3f} s > {fail_window} s"
    line = stream.stdout.readline()
    stream.wait(40)
    res = json.loads(line)
    after = flow_on(lab.app_stats(other), 6, c, s)
    assert res["ok"], f"stream broken or corrupted: {res}"
    assert after and after["a_to_b"] > 0 and after["b_to_a"] > 0, f"stream did not move to {other}: {after}"
    print(f"stream: {res['sent']} bytes echoed intact; longest stall {res['max_stall']} s; "
          f"moved to {other} ({after['a_to_b']}/{after['b_to_a']} packets there after the kill; "
          f"before: {flow_on(before, 6, c, s)})")
    t_start = time.time()
    lab.sh("app-start", victim[-1])
    srv = wait_health(lab, APPS[victim], "healthy", 10)
    measured_ok = srv["health"]["since"] - t_start
    print(f"restarted {victim}: healthy after {measured_ok:.3f} s (success window interval x "
          f"{hc['healthy'] - 1} + response times = {ok_window:.1f} s + ms; plus up to one interval "
          f"before the next probe and the appliance's start-up)")
    assert measured_ok <= ok_window + hc["interval"] + 1.0, f"success window exceeded: {measured_ok:.3f} s"
    # A new connection works while both are healthy again.
    r = lab.run("client", "curl", "-s", "--max-time", "5", f"http://{SERVER}/index.html")
    assert r.stdout == "hello through the gateway\n"
    # Black hole: the other appliance's replies (health and Geneve) vanish.
    t_bh = time.time()
    for dst in ("10.77.9.1/32", "10.77.9.2/32"):  # gwlbd's underlay address, the prober
        lab.run(other, "ip", "route", "add", "blackhole", dst)
    srv = wait_health(lab, APPS[other], "unhealthy", 10)
    measured_bh = srv["health"]["since"] - t_bh
    last = srv["health"].get("last_result")
    print(f"black-holed {other}: unhealthy after {measured_bh:.3f} s, last result {last!r} "
          f"(formula {fail_window:.1f} s, plus up to one interval before the first probe)")
    assert "timeout" in str(last), f"a black hole should time out, not {last}"
    assert measured_bh <= fail_window + hc["interval"] + 0.35, f"black-hole window exceeded: {measured_bh:.3f} s"
    r = lab.run("client", "curl", "-s", "--max-time", "5", f"http://{SERVER}/index.html")
    assert r.stdout == "hello through the gateway\n", "new connection failed with one appliance black-holed"
    print("new connection through the remaining appliance: ok")


def test_ethernet(lab, args):
    """The same real TCP checks with geneve.format ethernet (protocol 0x6558,
    the router's frame inside): the appliances see only the ethernet format."""
    test_tcp(lab, args)
    for a in APPS:
        f = lab.app_stats(a)["formats"]
        assert set(f) <= {"ethernet"}, f"{a} saw formats {f}"
    print("appliances saw only the ethernet format:",
          {a: lab.app_stats(a)["formats"] for a in APPS})


def test_no_rebalance(lab, args):
    """failover_mode no_rebalance: the appliance carrying a TCP stream is
    killed; the stream stalls (its flow stays on the dead appliance) while new
    connections succeed through the other one; the appliance is restarted and
    the stream resumes and completes intact."""
    lab.spawn("server", *lab.peer("tcp-echo-server", SERVER, "7000"))
    time.sleep(0.5)
    stream = lab.spawn("client", *lab.peer("tcp-stream", SERVER, "7000", "6", "1000000"),
                       stdout=subprocess.PIPE)
    sport = json.loads(stream.stdout.readline())["sport"]
    time.sleep(1.0)
    c, s = f"{CLIENT}:{sport}", f"{SERVER}:7000"
    victim = [a for a in APPS if flow_on(lab.app_stats(a), 6, c, s)][0]
    t_kill = time.time()
    lab.sh("app-stop", victim[-1])
    srv = wait_health(lab, APPS[victim], "unhealthy", 10)
    print(f"killed {victim}: unhealthy after {srv['health']['since'] - t_kill:.3f} s")
    for _ in range(5):
        r = lab.run("client", "curl", "-s", "--max-time", "5", f"http://{SERVER}/index.html")
        assert r.stdout == "hello through the gateway\n", "new connection failed"
    out = json.loads(lab.gwlbctl("--json", "flows", "--proto", "tcp", "--port", "7000"))
    app = [f["appliance"] for f in out["flows"]]
    assert app == [APPS[victim]], f"stream flow should stay on {APPS[victim]}: {app}"
    print(f"5 new connections succeeded; the stream's flow stays on {APPS[victim]} (no_rebalance)")
    time.sleep(2.0)
    lab.sh("app-start", victim[-1])
    print(f"restarted {victim} {time.time() - t_kill:.1f} s after the kill")
    res = json.loads(stream.stdout.readline())
    stream.wait(40)
    assert res["ok"], f"stream did not complete intact: {res}"
    assert res["max_stall"] >= 2.0, f"the stream should have stalled while {victim} was down: {res}"
    print(f"stream stalled {res['max_stall']} s, then resumed on {victim}; {res['sent']} bytes intact")


def test_drain(lab, args):
    """connection_draining on (3 s), rebalance: the appliance carrying a TCP
    stream is removed (gwlbctl server remove). The stream stays on it during
    the drain, then moves to the other appliance and completes intact; new
    connections never reach the removed appliance."""
    lab.spawn("server", *lab.peer("tcp-echo-server", SERVER, "7000"))
    time.sleep(0.5)
    stream = lab.spawn("client", *lab.peer("tcp-stream", SERVER, "7000", "9", "1000000"),
                       stdout=subprocess.PIPE)
    sport = json.loads(stream.stdout.readline())["sport"]
    time.sleep(1.0)
    c, s = f"{CLIENT}:{sport}", f"{SERVER}:7000"
    victim = [a for a in APPS if flow_on(lab.app_stats(a), 6, c, s)][0]
    other = [a for a in APPS if a != victim][0]
    t_rm = time.time()
    out = lab.gwlbctl("server", "remove", APPS[victim])
    print(f"$ gwlbctl server remove {APPS[victim]}: {out.strip()}")
    v0 = flow_on(lab.app_stats(victim), 6, c, s)
    new_ports = []
    for _ in range(6):
        r = lab.run("client", "curl", "-s", "-w", " %{local_port}", "--max-time", "5", f"http://{SERVER}/index.html")
        body, port = r.stdout.rsplit(" ", 1)
        assert body == "hello through the gateway\n", "new connection failed"
        new_ports.append(port)
    time.sleep(max(0.0, t_rm + 2.0 - time.time()))
    v1 = flow_on(lab.app_stats(victim), 6, c, s)
    assert v1["a_to_b"] > v0["a_to_b"] and v1["b_to_a"] > v0["b_to_a"], \
        f"the stream should stay on {victim} while draining: {v0} -> {v1}"
    print(f"during the drain ({time.time() - t_rm:.1f} s after remove) the stream still crosses {victim}: "
          f"{v0['a_to_b']} -> {v1['a_to_b']} packets")
    t_end = time.time() + 6
    moved = None
    while time.time() < t_end:
        moved = flow_on(lab.app_stats(other), 6, c, s)
        if moved and moved["b_to_a"] > 0:
            break
        time.sleep(0.1)
    t_moved = time.time() - t_rm
    assert moved and moved["a_to_b"] > 0 and moved["b_to_a"] > 0, f"the stream did not move to {other}"
    print(f"the stream moved to {other} {t_moved:.1f} s after remove (drain timeout 3 s)")
    vst = lab.app_stats(victim)
    for port in new_ports:
        assert not flow_on(vst, 6, f"{CLIENT}:{port}", f"{SERVER}:80"), f"new connection :{port} reached {victim}"
    print(f"none of the {len(new_ports)} new connections reached {victim}")
    res = json.loads(stream.stdout.readline())
    stream.wait(40)
    assert res["ok"], f"stream broken: {res}"
    print(f"stream: {res['sent']} bytes intact, longest pause {res['max_stall']} s")
    assert 2.5 <= t_moved <= 5.5, f"moved after {t_moved:.1f} s, drain timeout is 3 s"


def test_restart(lab, args):
    """Gateway restart: gwlbd is stopped (SIGTERM) under a running TCP stream
    and started again with the same config. New connections must work within
    a few seconds of the start; what happens to the existing stream is
    reported (the new gwlbd has an empty flow table: the stream's next packet
    makes a new entry, Maglev picks an appliance, and as these appliances keep
    no per-connection state the stream resumes after its retransmission
    backoff)."""
    lab.spawn("server", *lab.peer("tcp-echo-server", SERVER, "7000"))
    time.sleep(0.5)
    stream = lab.spawn("client", *lab.peer("tcp-stream", SERVER, "7000", "6", "1000000"),
                       stdout=subprocess.PIPE)
    json.loads(stream.stdout.readline())
    time.sleep(1.0)
    t_stop = time.time()
    lab.sh("gw-stop")
    t_down = time.time() - t_stop
    r = lab.run("client", "curl", "-s", "--max-time", "1", f"http://{SERVER}/index.html")
    assert r.stdout == "", "traffic crossed while gwlbd was stopped?"
    t_start = time.time()
    lab.sh("gw-start")
    t_sock = time.time() - t_start
    ok_after = None
    while time.time() - t_start < 15:
        r = lab.run("client", "curl", "-s", "--max-time", "1", f"http://{SERVER}/index.html")
        if r.stdout == "hello through the gateway\n":
            ok_after = time.time() - t_start
            break
    assert ok_after is not None, "no new connection within 15 s of the restart"
    print(f"gwlbd stopped in {t_down:.2f} s; restarted: control socket after {t_sock:.2f} s, "
          f"first new connection through it {ok_after:.2f} s after the start")
    assert ok_after <= 5.0, f"new connections took {ok_after:.2f} s after the restart"
    res = json.loads(stream.stdout.readline())
    stream.wait(40)
    print(f"existing stream across the restart: intact={res['ok']}, {res['received']}/{res['sent']} bytes, "
          f"longest pause {res['max_stall']} s")
    assert res["ok"], f"the stream did not survive the restart: {res}"


TESTS = {"tcp": (test_tcp, {}), "udp": (test_udp, {}),
         "drop": (test_drop, {"LAB_APP_ARGS": "--drop-dport 7001 --drop-proto icmp"}),
         "failover": (test_failover, {"LAB_FAILOVER": "rebalance"}),
         "ethernet": (test_ethernet, {"LAB_FORMAT": "ethernet"}),
         "no_rebalance": (test_no_rebalance, {"LAB_FAILOVER": "no_rebalance"}),
         "drain": (test_drain, {"LAB_FAILOVER": "rebalance", "LAB_DRAIN": "3s"}),
         "restart": (test_restart, {})}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("test", choices=sorted(TESTS))
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.build, args.src, args.work = map(os.path.abspath, (args.build, args.src, args.work))
    if os.geteuid() != 0:
        print("SKIP: the lab needs root (network namespaces)")
        return 77
    fn, env = TESTS[args.test]
    lab = Lab(args, args.test, env)
    t0 = time.time()
    try:
        lab.up()
        fn(lab, args)
    except (AssertionError, RuntimeError, json.JSONDecodeError, subprocess.TimeoutExpired) as e:
        print(f"FAIL: {e}")
        lab.dump_logs()
        return 1
    finally:
        lab.down()
        left = subprocess.run(["ip", "netns", "list"], text=True, stdout=subprocess.PIPE).stdout
        if lab.prefix + "-" in left:
            print(f"FAIL: namespaces left behind: {left}")
            return 1
    print(f"PASS {args.test} in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
