"""The fleet lab as the soak drives it (tools/soak_run.py): gwlbd's control API,
the gateways, their BIRD, their management links (tc, link state), the
appliances' HTTP endpoint and the router's ECMP route. Addresses and names are
scripts/lab_fleet.sh's; starting and stopping gwlbd goes through scripts/lab.sh.
"""
import json
import os
import re
import signal
import socket
import subprocess
import time

CLIENT, SERVER = "10.77.1.2", "10.77.2.2"
# The lab's two listeners and bypass class (scripts/lab.sh up --listeners 2):
# tenant A is the client's CLIENT, tenant B its CLIENT_B, TCP port 873 bypassed.
CLIENT_B = "10.77.1.130"
BYPASS_PORT = 873
APPS = {"app1": ("10.77.9.11", "02:77:00:00:09:11"), "app2": ("10.77.9.12", "02:77:00:00:09:12"),
        "app3": ("10.77.9.13", "02:77:00:00:09:13"), "app4": ("10.77.9.14", "02:77:00:00:09:14")}
GROUP_OF = {"app1": "fw-a", "app2": "fw-a", "app3": "fw-b", "app4": "fw-b"}
# Each class and the appliances its flows may reach (none: bypassed).
CLASS_APPS = {"tenant-a": ["app1", "app2"], "tenant-b": ["app3", "app4"], "backups": []}
SYNC_PORT = 7946
# scripts/soak.sh's partners (LAB_TOOL, LAB_BYPASS and --bypass-after-bytes):
# tenant-a's packets copied to a passive tool alone in mirror group `tools`
# (never faulted: not in APPS), tenant-b's appliances handing flows back.
MIRROR = {"tool": "app5", "group": "tools", "class": "tenant-a", "sample": 4}


def appliance_bypass():
    """The appliances started with --bypass-after-bytes and what they ask,
    from the environment scripts/soak.sh sets for scripts/lab.sh ({} when none)."""
    out = {}
    for app in APPS:
        args = (os.environ.get(f"LAB_{app.upper()}_ARGS") or "").split()
        if "--bypass-after-bytes" in args:
            out[app] = int(args[args.index("--bypass-after-bytes") + 1])
    if not out or os.environ.get("LAB_BYPASS") is None:
        return {}
    return {"apps": out, "listener": "tenant-b", "max_seconds": int(os.environ["LAB_BYPASS"])}


def stateful_apps(kind):
    """The stateful appliances (nftables conntrack firewalls) of LAB_APPLIANCE
    `kind`, as scripts/lab.sh makes them: mixed makes the odd ones, one per group."""
    return {"stateful": list(APPS), "mixed": ["app1", "app3"]}.get(kind, [])


def class_of(client, proto, dport):
    """The traffic class of a client flow, as the lab's traffic_classes decide."""
    if proto == 6 and dport == BYPASS_PORT:
        return "backups"
    return "tenant-b" if client == CLIENT_B else "tenant-a"


def gw_ip(k):
    return f"10.77.9.{k}"


def gw_mgmt_ip(k):
    return f"10.77.9.{20 + k}"


def rt_ip(k):
    return f"10.77.0.{k}"


def gw_rt_mac(k):
    return f"02:77:00:00:0{k}:02"


def rt_gw_mac(k):
    return f"02:77:00:00:0{k}:01"


def gw_ul_mac(k):
    return f"02:77:00:00:09:0{k}"


class ApiError(Exception):
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code


class Api:
    """One connection to a gwlbd control socket (JSON lines); reconnects on demand."""

    def __init__(self, path, timeout=5.0):
        self.path, self.timeout = path, timeout
        self.sock = self.f = None
        self.n = 0

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = self.f = None

    def call(self, method, params=None):
        """The result; raises ApiError (gwlbd's error) or OSError (no answer)."""
        for attempt in (0, 1):
            try:
                if self.sock is None:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.settimeout(self.timeout)
                    s.connect(self.path)
                    self.sock, self.f = s, s.makefile("rb")
                self.n += 1
                req = {"id": self.n, "method": method}
                if params:
                    req["params"] = params
                self.sock.sendall(json.dumps(req).encode() + b"\n")
                line = self.f.readline()
                if not line:
                    raise OSError("connection closed")
                r = json.loads(line)
                break
            except (OSError, ValueError):
                self.close()
                if attempt:
                    raise
        if not r.get("ok"):
            e = r.get("error") or {}
            if e.get("code") == "busy":
                self.close()
            raise ApiError(e.get("code", "?"), e.get("message", ""))
        return r["result"]


def api_once(path, method, params=None, timeout=5.0):
    a = Api(path, timeout)
    try:
        return a.call(method, params)
    finally:
        a.close()


class Lab:
    def __init__(self, src, build, prefix, lab_dir, gateways=3):
        self.src, self.build, self.prefix, self.dir = src, build, prefix, lab_dir
        self.gateways = gateways
        self.env = dict(os.environ, GWLB_BUILD=build, LAB_PREFIX=prefix, LAB_DIR=lab_dir)

    def ns(self, n):
        return f"{self.prefix}-{n}"

    def sock(self, k):
        return os.path.join(self.dir, f"gw{k}", "gwlbd.sock")

    def config(self, k):
        return os.path.join(self.dir, f"gw{k}", "gwlbd.yaml")

    def run(self, n, *cmd, timeout=30, check=False):
        r = subprocess.run(["ip", "netns", "exec", self.ns(n), *cmd], text=True, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if check and r.returncode:
            raise RuntimeError(f"{n}: {' '.join(cmd)}: exit {r.returncode}: {r.stdout.strip()}")
        return r

    def lab_sh(self, *args, timeout=120):
        r = subprocess.run([os.path.join(self.src, "scripts/lab.sh"), *args], env=self.env, text=True,
                           timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode:
            raise RuntimeError(f"lab.sh {' '.join(args)}: exit {r.returncode}: {r.stdout.strip()[-400:]}")
        return r.stdout

    def pid(self, name):
        """The pid of a lab process (its pid file), if it runs."""
        try:
            pid = int(open(os.path.join(self.dir, f"{name}.pid")).read())
        except (OSError, ValueError):
            return None
        return pid if os.path.exists(f"/proc/{pid}") else None

    # -- the router
    def nexthops(self):
        """Gateway numbers in the router's ECMP route (table 100)."""
        r = self.run("router", "ip", "-4", "route", "show", "table", "100", timeout=10)
        return sorted(int(m) for m in re.findall(r"via 10\.77\.9\.(\d+)", r.stdout))

    def wait_nexthop(self, k, present=True, timeout=60.0):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if (k in self.nexthops()) == present:
                return time.time() - t0
            time.sleep(0.1)
        return None

    def route_of(self, flows):
        """{(proto, sport): (gateway client->server, gateway server->client)} as
        the router's ECMP hash places each client flow (proto, sport, dport[,
        client address]) now (ip route get)."""
        lines = []
        for proto, sport, dport, *src in flows:
            c = src[0] if src else CLIENT
            lines.append(f"route get {SERVER} from {c} iif r-cli ipproto {proto} sport {sport} dport {dport}")
            lines.append(f"route get {c} from {SERVER} iif r-srv ipproto {proto} sport {dport} dport {sport}")
        if not lines:
            return {}
        r = subprocess.run(["ip", "netns", "exec", self.ns("router"), "ip", "-batch", "-"], input="\n".join(lines) + "\n",
                           text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10)
        hops = [int(m) if m else 0 for m in re.findall(r"^\S+ from \S+ (?:via 10\.77\.9\.(\d+))?", r.stdout, re.M)]
        out = {}
        for i, (proto, sport, *_) in enumerate(flows):
            fwd = hops[2 * i] if 2 * i < len(hops) else 0
            rev = hops[2 * i + 1] if 2 * i + 1 < len(hops) else 0
            out[(proto, sport)] = (fwd, rev)
        return out

    # -- gateways
    def gw_stop(self, k):
        self.lab_sh("gw-stop", str(k))

    def gw_kill(self, k):
        self.lab_sh("gw-kill", str(k))

    def gw_start(self, k):
        self.lab_sh("gw-start", str(k))

    def bird_stop(self, k):
        pid = self.pid(f"bird-gw{k}")
        if pid:
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if not os.path.exists(f"/proc/{pid}"):
                    break
                time.sleep(0.05)

    def bird_start(self, k):
        """As scripts/lab_fleet.sh's bird_start: BIRD in gateway k's namespace."""
        d = self.dir
        conf, ctl = os.path.join(d, f"gw{k}", "bird.conf"), os.path.join(d, f"gw{k}", "bird.ctl")
        try:
            os.unlink(ctl)
        except FileNotFoundError:
            pass
        log = open(os.path.join(d, f"bird-gw{k}.log"), "a")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(f"gw{k}"), "setsid", "bird", "-f", "-c", conf, "-s", ctl,
                              "-P", os.path.join(d, f"bird-gw{k}.bird-pid")],
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        open(os.path.join(d, f"bird-gw{k}.pid"), "w").write(f"{p.pid}\n")
        for _ in range(100):
            if os.path.exists(ctl):
                return
            time.sleep(0.05)
        raise RuntimeError(f"BIRD of gw{k} did not start")

    # -- a gateway's management link (the fleet sync; the lab's probes take
    # the data path). tc netem is not in every kernel (this machine's has
    # neither sch_netem nor tc actions), HTB is: congestion makes the delay
    # (a queue drained at a low rate) and the loss (its tail drops).
    def shape_sync(self, k, rate_kbit, queue):
        """Gateway k's sync traffic (port 7946 both ways, UDP and TCP) through
        an HTB class of rate_kbit with a queue of `queue` packets."""
        n = f"gw{k}"
        self.shape_clear(k)
        tc = ["tc"]
        self.run(n, *tc, "qdisc", "add", "dev", "mgmt", "root", "handle", "1:", "htb", "default", "1", "r2q", "100",
                 check=True)
        self.run(n, *tc, "class", "add", "dev", "mgmt", "parent", "1:", "classid", "1:1", "htb", "rate", "1gbit",
                 check=True)
        self.run(n, *tc, "class", "add", "dev", "mgmt", "parent", "1:", "classid", "1:3", "htb", "rate",
                 f"{rate_kbit}kbit", "ceil", f"{rate_kbit}kbit", check=True)
        self.run(n, *tc, "qdisc", "add", "dev", "mgmt", "parent", "1:3", "handle", "30:", "pfifo", "limit", str(queue),
                 check=True)
        for where in ("sport", "dport"):
            self.run(n, *tc, "filter", "add", "dev", "mgmt", "parent", "1:", "protocol", "ip", "u32",
                     "match", "ip", where, str(SYNC_PORT), "0xffff", "flowid", "1:3", check=True)

    def shape_stats(self, k):
        """(packets sent, dropped) by the sync class's queue."""
        r = self.run(f"gw{k}", "tc", "-s", "qdisc", "show", "dev", "mgmt")
        m = re.search(r"qdisc pfifo 30:.*?Sent \d+ bytes (\d+) pkt \(dropped (\d+)", r.stdout, re.S)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)

    def shape_clear(self, k):
        self.run(f"gw{k}", "tc", "qdisc", "del", "dev", "mgmt", "root")

    def mgmt_link(self, k, up):
        self.run(f"gw{k}", "ip", "link", "set", "mgmt", "up" if up else "down", check=True)

    # -- appliances (their HTTP endpoint, from their own namespace)
    def app_http(self, app, path, post=False):
        cmd = ["curl", "-s", "--max-time", "5"] + (["-XPOST"] if post else []) + [f"http://127.0.0.1:8080{path}"]
        r = self.run(app, *cmd, timeout=15)
        if r.returncode:
            raise RuntimeError(f"{app} {path}: curl exit {r.returncode}")
        return r.stdout

    def tool(self, n, *args, timeout=120):
        """tools/soak_hostile.py ARGS in namespace n (None: here); its JSON line."""
        cmd = ["/usr/bin/python3", os.path.join(self.src, "tools/soak_hostile.py"), *args]
        if n:
            cmd = ["ip", "netns", "exec", self.ns(n), *cmd]
        r = subprocess.run(cmd, text=True, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            return json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise RuntimeError(f"soak_hostile {args[0]}: exit {r.returncode}: {r.stdout.strip()[-300:]}")


def proc_sample(pid):
    """{rss_kb, rss_anon_kb, rss_shmem_kb, fds, threads, cpu_ctl_s, cpu_s} of a pid (None if gone).
    RssShmem is the EAL's memory (--no-huge: a memfd), RssAnon the heap and stacks."""
    try:
        status = open(f"/proc/{pid}/status").read()

        def kb(key):
            return int(re.search(key + r":\s+(\d+)", status).group(1))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        tick = os.sysconf("SC_CLK_TCK")

        def cpu(path):
            f = open(path).read().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / tick
        # The control thread is gwlbd's main thread (workers are rte-worker-N).
        return {"rss_kb": kb("VmRSS"), "rss_anon_kb": kb("RssAnon"), "rss_shmem_kb": kb("RssShmem"), "fds": fds,
                "threads": kb("Threads"), "cpu_ctl_s": cpu(f"/proc/{pid}/task/{pid}/stat"),
                "cpu_s": cpu(f"/proc/{pid}/stat")}
    except (OSError, AttributeError, ValueError, IndexError):
        return None
