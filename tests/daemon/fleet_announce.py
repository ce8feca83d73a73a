#!/usr/bin/python3
"""gwlbd announces and withdraws its routes through a real BIRD 2
(issue 16 item 3; docs/fleet.md, "Announcing the routes").

BIRD runs here with a `disabled` static protocol (no kernel or BGP protocol:
it touches nothing on the host) and its control socket in WORK; gwlbd has
`fleet.bird` pointing at it. BIRD's own view (`birdc show protocols`) is what
is asserted, next to gwlbd's `fleet` API method and its metrics:
  1. not ready (no appliance has a MAC: no gateway_mac, ARP unanswered):
     withdrawn, BIRD's protocol stays down;
  2. reload with gateway_mac: announced, BIRD's protocol up;
  3. fleet.leave / fleet.join: down / up;
  4. BIRD restarted (its protocol comes back disabled): gwlbd reconnects and
     enables it again (measured);
  5. the only appliance fails its health checks, when_all_unhealthy drop:
     withdrawn; healthy again: announced;
  6. SIGTERM: BIRD's protocol is down while gwlbd still runs, gwlbd exits
     after fleet.grace_period (measured).

usage: fleet_announce.py GWLBD WORKDIR SRCROOT
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checklib import Listener, api_call  # noqa: E402

gwlbd_bin, work, src = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
BIRD_SOCK = os.path.join(work, "bird.ctl")
GW_SOCK = os.path.join(work, "gwlbd.sock")
APP = "127.0.0.21"
GRACE = 2
procs = []


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


HC_PORT, METRICS_PORT = free_port(), free_port()


def start_bird():
    conf = os.path.join(work, "bird.conf")
    with open(conf, "w") as f:
        f.write("router id 10.99.0.1;\n"
                "protocol static gwlb_routes { disabled; ipv4; route 198.51.100.0/24 blackhole; };\n")
    pid = os.path.join(work, "bird.pid")
    subprocess.run(["bird", "-c", conf, "-s", BIRD_SOCK, "-P", pid], check=True)
    wait(lambda: os.path.exists(BIRD_SOCK) and bird_state() is not None, 10, "BIRD's socket")
    return int(open(pid).read())


def bird_state():
    """The protocol's state as BIRD shows it (None when BIRD does not answer)."""
    r = subprocess.run(["birdc", "-s", BIRD_SOCK, "show", "protocols", "gwlb_routes"],
                       capture_output=True, text=True)
    m = re.search(r"^gwlb_routes\s+\S+\s+\S+\s+(\S+)", r.stdout, re.M)
    return m.group(1) if m else None


def wait(cond, limit, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if cond():
            return time.monotonic() - t0
        time.sleep(0.02)
    raise AssertionError(f"not within {limit} s: {what}")


def fleet():
    r = api_call(GW_SOCK, "fleet")
    assert r["ok"], r
    return r["result"]["announce"]


def metrics():
    body = urllib.request.urlopen(f"http://127.0.0.1:{METRICS_PORT}/metrics", timeout=5).read().decode()
    return {k: float(v) for k, v in re.findall(r"^(gwlb_fleet_\w+) (\S+)$", body, re.M)}


def write_config(gateway_mac):
    gm = ", gateway_mac: 02:00:00:00:00:fe" if gateway_mac else ""
    with open(os.path.join(work, "gwlbd.yaml"), "w") as f:
        f.write(f"""node: {{ underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01{gm} }}
server_groups:
  - name: firewalls
    when_all_unhealthy: drop
    health_check: {{ protocol: tcp, port: {HC_PORT}, interval: 100ms, timeout: 200ms, interface: lo,
                    healthy_threshold: 2, unhealthy_threshold: 2 }}
    servers: [ {{ address: {APP} }} ]
dataplane: {{ workers: 1, mbufs: 4096, flow_table_size: 4096 }}
control: {{ socket: {GW_SOCK} }}
metrics: {{ listen: "127.0.0.1:{METRICS_PORT}" }}
fleet:
  node_name: gw-test
  secret: 00112233445566778899aabbccddeeff
  bird: {{ socket: {BIRD_SOCK}, protocols: [gwlb_routes] }}
  grace_period: {GRACE}s
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap={work}/flows.pcap"]
""")


def cleanup():
    for p in procs:
        if isinstance(p, int):
            try:
                os.kill(p, signal.SIGTERM)
            except ProcessLookupError:
                pass
        elif p.poll() is None:
            p.kill()
            p.wait()


try:
    subprocess.run(["/usr/bin/python3", os.path.join(src, "tools/gen_flows_pcap.py"),
                    os.path.join(work, "flows.pcap"), "--flows", "10"], check=True,
                   stdout=subprocess.DEVNULL)
    bird_pid = start_bird()
    procs.append(bird_pid)
    assert bird_state() == "down", bird_state()
    hc = Listener(APP, HC_PORT)
    hc.start()
    write_config(gateway_mac=False)
    log = open(os.path.join(work, "gwlbd.log"), "w")
    gw = subprocess.Popen([gwlbd_bin, "--config", os.path.join(work, "gwlbd.yaml")], stdout=log,
                          stderr=subprocess.STDOUT)
    procs.append(gw)
    wait(lambda: os.path.exists(GW_SOCK), 30, "gwlbd's control socket")

    # 1. Not ready: the appliance has no MAC (no gateway_mac, nobody answers ARP).
    wait(lambda: fleet()["bird"]["connected"], 10, "gwlbd connected to BIRD")
    a = fleet()
    assert a["state"] == "withdrawn", a
    assert a["reason"] == "not ready: group firewalls has no appliance in service (MAC known, weight > 0)", a
    time.sleep(1.5)  # a few of gwlbd's rounds: still nothing enabled
    assert bird_state() == "down", bird_state()
    assert fleet()["bird"]["protocols"] == [{"name": "gwlb_routes", "state": "down"}], fleet()
    assert metrics() == {"gwlb_fleet_announced": 0, "gwlb_fleet_announce_changes_total": 0,
                         "gwlb_fleet_bird_connected": 1}, metrics()
    print("1. not ready:", a["reason"])

    # 2. Ready: announced, and BIRD agrees.
    write_config(gateway_mac=True)
    assert api_call(GW_SOCK, "reload")["ok"]
    dt = wait(lambda: fleet()["state"] == "announced", 10, "announced after the reload")
    assert bird_state() == "up", bird_state()
    a = fleet()
    assert a["reason"].startswith("ready"), a
    assert a["bird"]["protocols"] == [{"name": "gwlb_routes", "state": "up"}], a
    m = metrics()
    assert m["gwlb_fleet_announced"] == 1 and m["gwlb_fleet_announce_changes_total"] == 1, m
    print(f"2. announced {dt:.2f} s after the reload; BIRD: up")

    # 3. Operator leave and join.
    r = api_call(GW_SOCK, "fleet.leave")
    assert r["ok"] and r["result"]["changed"], r
    dt = wait(lambda: bird_state() == "down", 5, "BIRD's protocol down after fleet.leave")
    a = fleet()
    assert a["state"] == "withdrawn" and a["reason"].startswith("left by operator"), a
    assert api_call(GW_SOCK, "fleet.leave")["result"]["changed"] is False
    print(f"3. fleet.leave: BIRD down after {dt * 1000:.0f} ms;", a["reason"])
    assert api_call(GW_SOCK, "fleet.join")["ok"]
    dt = wait(lambda: bird_state() == "up" and fleet()["state"] == "announced", 5, "up after join")
    print(f"   fleet.join: announced again after {dt * 1000:.0f} ms")

    # 4. BIRD restarts: its protocol comes back disabled; gwlbd enables it again.
    os.kill(bird_pid, signal.SIGTERM)
    wait(lambda: not os.path.exists(f"/proc/{bird_pid}"), 10, "BIRD stopped")
    wait(lambda: not fleet()["bird"]["connected"], 5, "gwlbd sees BIRD gone")
    a = fleet()
    assert a["state"] == "announcing" and "waiting for BIRD" in a["reason"], a
    assert metrics()["gwlb_fleet_bird_connected"] == 0
    procs.remove(bird_pid)
    t0 = time.monotonic()
    bird_pid = start_bird()
    procs.append(bird_pid)
    wait(lambda: bird_state() == "up", 10, "gwlbd re-enabled the protocol after BIRD's restart")
    dt = time.monotonic() - t0
    wait(lambda: fleet()["state"] == "announced", 5, "announced again")
    assert metrics()["gwlb_fleet_bird_connected"] == 1
    print(f"4. BIRD restarted: protocol up again {dt:.2f} s after BIRD started (rounds every 1 s)")

    # 5. The only appliance fails its checks: when_all_unhealthy drop withdraws.
    hc.close()
    dt = wait(lambda: fleet()["state"] == "withdrawn", 10, "withdrawn when the group drops")
    wait(lambda: bird_state() == "down", 5, "BIRD down when unhealthy")
    a = fleet()
    assert a["reason"] == "unhealthy: destination default: unhealthy, when_all_unhealthy drop", a
    print(f"5. appliance unhealthy: withdrawn {dt:.2f} s after its checks began failing:", a["reason"])
    hc.start()
    wait(lambda: fleet()["state"] == "announced" and bird_state() == "up", 10, "announced again")
    changes = metrics()["gwlb_fleet_announce_changes_total"]
    assert changes >= 6, changes

    # 6. SIGTERM: withdraw first, keep running for the grace period, then exit.
    t0 = time.monotonic()
    gw.send_signal(signal.SIGTERM)
    dt_down = wait(lambda: bird_state() == "down", 5, "BIRD down after SIGTERM")
    assert gw.poll() is None, "gwlbd exited before its grace period"
    a = fleet()
    assert a["state"] == "withdrawn" and a["reason"].startswith("stopping"), a
    gw.wait(timeout=GRACE + 30)
    dt_exit = time.monotonic() - t0
    assert gw.returncode == 0, gw.returncode
    assert GRACE - 0.2 <= dt_exit <= GRACE + 10, dt_exit
    assert bird_state() == "down"
    print(f"6. SIGTERM: BIRD's protocol down after {dt_down * 1000:.0f} ms, gwlbd exited after "
          f"{dt_exit:.2f} s (grace period {GRACE} s)")
    print("PASS")
except Exception:
    log_path = os.path.join(work, "gwlbd.log")
    if os.path.exists(log_path):
        print(open(log_path).read()[-3000:])
    raise
finally:
    cleanup()
