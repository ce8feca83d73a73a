#!/usr/bin/python3
"""gwlb-replay --events: the six rows of docs/product-rules.md section 2, checked per flow.

usage: events.py GWLB_REPLAY WORKDIR [--only NAME ...]
       events.py GWLB_REPLAY WORKDIR --bad-files

Writes one capture of long-lived TCP flows (a packet every 100 ms, directions
alternating; the TCP sequence number is the packet's number within its flow, so
every frame that reaches an appliance is traced back to the input packet and its
capture time), then replays it with --reflect and an events file per scenario:

  failed-rebalance        health: unhealthy at 4 s, healthy at 8 s (rebalance)
  failed-no-rebalance     the same with failover_mode no_rebalance
  removed-draining-rebalance      remove at 4 s, draining 3 s (rebalance)
  removed-draining-no-rebalance   the same, no_rebalance
  removed-rebalance       remove at 4 s, no draining (rebalance); added back at 9 s
  removed-no-rebalance    remove at 4 s, no draining, no_rebalance
  drain-weight            weight 0 on another appliance at 2 s, operator drain
                          (timeout 2 s) at 4 s, undrain at 9 s (rebalance)

and checks from to-appliances.pcap (decoded here with struct, independently of the
tool): where each flow's packets went before and after the event (and before and
after the drain timeout), that flows on other appliances never change appliance,
that moved flows never move back, where new flows go, that nothing is lost
(every input packet reaches exactly one appliance and comes back through the
reflect loop: returned.pcap holds every packet and no drop counter moved), and
that summary.json's events[], lifecycle and phases agree with the capture.

--bad-files: malformed events files (and reloads of a missing or invalid config)
must exit 2 before any packet, naming the event and the key.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import time

SEC = 1_000_000_000
MS = 1_000_000
STEP = 100_000_000          # a packet of every flow every 100 ms
SPACING = 1_500_000         # flow f's packets are f * 1.5 ms after the slot
BASE = 1_700_000_000 * SEC  # absolute time of the first packet (flow 0, slot 0)
APPS = ["192.0.2.10", "192.0.2.11", "192.0.2.12", "192.0.2.13"]
S = APPS[0]                 # the appliance every scenario takes away
W = APPS[1]                 # drain-weight: the appliance set to weight 0

# Cohorts of flows: (name, first flow id, flows, start, interval, end). A from the
# start, B from 5 s, C from 9 s, all until 12 s; D, one flow with a packet a second
# from 12 s to 75 s, keeps the capture clock going so that idle flows expire
# (tcp_idle_timeout 60 s) in the drain-emptied scenario.
COHORTS = [("A", 0, 48, 0, STEP, 12 * SEC), ("B", 48, 16, 5 * SEC, STEP, 12 * SEC),
           ("C", 64, 16, 9 * SEC, STEP, 12 * SEC), ("D", 80, 1, 12 * SEC, SEC, 75 * SEC)]


def flows():
    """(flow id, cohort, [capture time of each packet]) for every flow."""
    out = []
    for name, first, n, start, step, end in COHORTS:
        for f in range(first, first + n):
            out.append((f, name, [t + f * SPACING for t in range(start, end, step)]))
    return out


# --- capture ------------------------------------------------------------------------------

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def client_ip(f):
    return bytes([198, 51, 100, 1 + f])


SERVER_IP = bytes([203, 0, 113, 7])
ROUTER_MAC = bytes.fromhex("020000000001")
GW_MAC = bytes.fromhex("0200000000aa")


def frame(f, k, client=None, reps=20):
    """Packet k of flow f: even k client -> server, odd k server -> client.
    TCP port 20000 + f <-> 443; the payload repeats (f, k) `reps` times."""
    c, s, cp, sp = client or client_ip(f), SERVER_IP, 20000 + f, 443
    if k % 2:
        c, s, cp, sp = s, c, sp, cp
    flags = 0x02 if k == 0 else 0x10
    payload = bytes([f & 0xFF, k & 0xFF]) * reps
    tcp = struct.pack("!HHIIBBHHH", cp, sp, k, 0, 5 << 4, flags, 65535, 0, 0) + payload
    tcp = tcp[:16] + struct.pack("!H", csum(c + s + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), (f << 8 | k) & 0xFFFF, 0x4000, 64, 6, 0, c, s)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return GW_MAC + ROUTER_MAC + b"\x08\x00" + ip + tcp


def write_capture(path):
    """Returns {(flow, k): capture time relative to the first packet (ns)}."""
    return write_pcap(path, [(t, f, k) for f, _, ts in flows() for k, t in enumerate(ts)], frame)


def write_pcap(path, pkts, make_frame):
    """Writes make_frame(f, k) at BASE + t for each (t, f, k) (t in ns from the
    first packet, which must be at 0); returns {(f, k): t}."""
    pkts = sorted(pkts)
    assert pkts[0][0] == 0
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # ns timestamps
        for t, f, k in pkts:
            b = make_frame(f, k)
            ts = BASE + t
            out.write(struct.pack("<IIII", ts // SEC, ts % SEC, len(b), len(b)))
            out.write(b)
    return {(f, k): t for t, f, k in pkts}


# --- reading the outputs ------------------------------------------------------------------

def read_pcap(path):
    data = open(path, "rb").read()
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, off = [], 24
    while off < len(data):
        _, _, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def read_pcap_times(path):
    """The timestamp (ns) of every frame of a nanosecond pcap, in file order."""
    data = open(path, "rb").read()
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    out, off = [], 24
    while off < len(data):
        sec, frac, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        out.append(sec * SEC + frac)
        off += 16 + incl
    return out


def inner_of_geneve(b):
    """(outer dst, inner IPv4 packet) of a frame sent to an appliance."""
    assert b[12:14] == b"\x08\x00" and b[23] == 17, "not IPv4/UDP"
    assert struct.unpack("!H", b[36:38])[0] == 6081, "not Geneve"
    opt_len = (b[42] & 0x3F) * 4
    proto = struct.unpack("!H", b[44:46])[0]
    inner = 42 + 8 + opt_len
    if proto == 0x6558:  # ethernet format: the router's frame
        assert b[inner + 12:inner + 14] == b"\x08\x00"
        inner += 14
    else:
        assert proto == 0x0800, "protocol %#x" % proto
    return ".".join(map(str, b[30:34])), b[inner:]


def packet_id(ip):
    """(flow, k) of an inner IPv4/TCP packet of the capture."""
    ihl = (ip[0] & 0xF) * 4
    sport, dport, seq = struct.unpack("!HHI", ip[ihl:ihl + 8])
    cport = sport if dport == 443 else dport
    return cport - 20000, seq


def id_of_frame(b):
    """(flow, k) of an input / returned frame (plain Ethernet, IPv4)."""
    return packet_id(b[14:])


# --- one scenario -------------------------------------------------------------------------

CONFIG = """node:
  underlay_ip: 192.0.2.1
  underlay_mac: 02:00:00:00:00:aa
  gateway_mac: 02:00:00:00:00:fe
server_groups:
  - name: fw
    stickiness: 5-tuple
    geneve: {geneve}
    failover_mode: {mode}
    connection_draining: {{ enabled: {draining}, timeout: {drain_timeout} }}
    tcp_idle_timeout: {idle}
    servers:
{servers}
dataplane:
  flow_table_size: 65536
"""
GENEVE = {"aws": "{ format: aws, vni: 0x123456, endpoint_id: 0x8877665544332211, attachment_id: 7 }",
          "ethernet": "{ format: ethernet, vni: 4660 }"}


class Failures:
    def __init__(self, name):
        self.name, self.errors = name, []

    def check(self, ok, what):
        if not ok:
            self.errors.append(what)
        return ok


class Check:
    """A check that records what failed: chk(ok, what) returns ok."""
    def __init__(self):
        self.errors = []

    def __call__(self, ok, what):
        if not ok:
            self.errors.append(what)
        return ok


def config_text(fmt, mode, draining, drain_timeout="3s", idle="350s"):
    servers = "\n".join("      - { address: %s }" % a for a in APPS)
    return CONFIG.format(geneve=GENEVE[fmt], mode=mode, draining="true" if draining else "false",
                         drain_timeout=drain_timeout, idle=idle, servers=servers)


class Run:
    """One replay: its inputs, outputs and, per flow, where each packet went."""

    def __init__(self, exe, workdir, name, sc, times):
        self.name = name
        self.dir = os.path.join(workdir, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        cfg = os.path.join(self.dir, "config.yaml")
        open(cfg, "w").write(config_text(sc["format"], sc["mode"], sc["draining"],
                                         sc.get("drain_timeout", "3s"), sc.get("idle", "350s")))
        ev = os.path.join(self.dir, "events.yaml")
        open(ev, "w").write("".join("- { %s }\n" % e for e, _ in sc["events"]))
        self.times = times
        cmd = [exe, "--config", cfg, "--in", os.path.join(workdir, "flows.pcap"), "--out-dir",
               os.path.join(self.dir, "out"), "--reflect", "--workers", str(sc["workers"]),
               "--events", ev]
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.seconds = time.monotonic() - t0
        open(os.path.join(self.dir, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout)
        if p.returncode != 0:
            raise SystemExit("%s: gwlb-replay exited %d:\n%s" % (name, p.returncode, p.stdout))
        out = os.path.join(self.dir, "out")
        self.summary = json.load(open(os.path.join(out, "summary.json")))
        # where[(flow, k)] = appliance address; count duplicates.
        self.where, self.dups = {}, 0
        for b in read_pcap(os.path.join(out, "to-appliances.pcap")):
            dst, ip = inner_of_geneve(b)
            pid = packet_id(ip)
            if pid in self.where:
                self.dups += 1
            self.where[pid] = dst
        self.returned = [id_of_frame(b) for b in read_pcap(os.path.join(out, "returned.pcap"))]

    def path(self, f):
        """[(time, appliance)] of flow f's packets in capture order."""
        out, k = [], 0
        while (f, k) in self.times:
            out.append((self.times[(f, k)], self.where.get((f, k))))
            k += 1
        return out

    def at(self, f, t):
        """Appliance of flow f's last packet before t (None: the flow had none yet)."""
        last = None
        for ts, a in self.path(f):
            if ts >= t:
                break
            last = a
        return last


def common_checks(r, run, n_in):
    """No loss, every packet back, no drop, one appliance per packet."""
    s = run.summary
    r.check(run.dups == 0, "%d input packets reached an appliance twice" % run.dups)
    missing = [pid for pid in run.times if pid not in run.where]
    r.check(not missing, "%d input packets never reached an appliance (e.g. %s)" % (len(missing), missing[:3]))
    r.check(s["input_packets"] == n_in and s["to_appliances_packets"] == n_in,
            "input %d, summary input %d, to appliances %d" % (n_in, s["input_packets"], s["to_appliances_packets"]))
    r.check(s["returned_packets"] == n_in and len(run.returned) == n_in,
            "returned %d (pcap %d), expected every input packet (%d)" % (s["returned_packets"], len(run.returned), n_in))
    r.check(sorted(run.returned) == sorted(run.times),
            "returned.pcap does not hold exactly the input packets")
    for name in ("returned.pcap", "to-appliances.pcap"):  # each in time order
        ts = read_pcap_times(os.path.join(run.dir, "out", name))
        bad = next((i for i in range(1, len(ts)) if ts[i] < ts[i - 1]), None)
        r.check(bad is None, "%s is not in time order (frame %s)" % (name, bad))
    # The replay lets the reflect loop settle before each change, so no packet is
    # in flight to an appliance a flow leaves: not even return_after_move drops.
    r.check(s["drops"] == {}, "drops: %s (expected none)" % s["drops"])
    r.check(s["counters"].get("rx_packets") == 2 * n_in, "rx_packets %s, expected %d" % (s["counters"].get("rx_packets"), 2 * n_in))


def summary_checks(r, run, event_times, gone_at_end):
    """events[] agrees with the capture: windows between events, moves, packets.
    gone_at_end: flows that expired (idle) before the end of the replay."""
    evs = run.summary["events"]
    r.check(len(evs) == len(event_times), "summary has %d events, expected %d" % (len(evs), len(event_times)))
    ends = event_times[1:] + [None]
    starts = [0] + event_times[:-1]
    for i, (e, t) in enumerate(zip(evs, event_times)):
        r.check(e["applied"], "events[%d] not applied" % i)
        r.check(abs(e["at_s"] - t / SEC) < 1e-9, "events[%d].at_s %s, expected %s" % (i, e["at_s"], t / SEC))
        end = ends[i]
        moved, stayed, ended, on_server, existing = {}, 0, 0, 0, 0
        for f, _, _ in flows():
            a = run.at(f, t)
            if a is None:
                continue
            existing += 1
            if a == e["server"]:
                on_server += 1
            if end is None and f in gone_at_end:
                ended += 1
                continue
            b = run.at(f, end if end is not None else 1 << 62)
            if a == b:
                stayed += 1
            else:
                key = "%s->%s" % (a, b)
                moved[key] = moved.get(key, 0) + 1
        r.check(e["flows_moved"] == moved, "events[%d].flows_moved %s, capture shows %s" % (i, e["flows_moved"], moved))
        r.check(e["flows_ended"] == ended, "events[%d].flows_ended %s, capture shows %d" % (i, e["flows_ended"], ended))
        r.check(e["flows_stayed"] == stayed, "events[%d].flows_stayed %s, capture shows %d" % (i, e["flows_stayed"], stayed))
        r.check(e["flows_on_server_at_event"] == on_server,
                "events[%d].flows_on_server_at_event %s, capture shows %d" % (i, e["flows_on_server_at_event"], on_server))
        r.check(e["flows_at_event"] == existing, "events[%d].flows_at_event %s, capture shows %d" % (i, e["flows_at_event"], existing))

        def window(lo, hi):
            c = {}
            for pid, ts in run.times.items():
                if ts >= lo and (hi is None or ts < hi):
                    c[run.where[pid]] = c.get(run.where[pid], 0) + 1
            return c
        before, after = window(starts[i], t), window(t, end)
        r.check(e["packets_before"] == before, "events[%d].packets_before %s, capture shows %s" % (i, e["packets_before"], before))
        r.check(e["packets_after"] == after, "events[%d].packets_after %s, capture shows %s" % (i, e["packets_after"], after))


def phase_of(run, addr):
    for s in run.summary["servers"]:
        if s["address"] == addr:
            return s["phase"]
    return None


# Every scenario takes S away at 4-4.5 s (the second event in drain-weight).
# `flows` is what becomes of the flows on S then: ("move", t) = on S for every
# packet before t, on one other appliance from t on and never back; ("stay",) =
# on S for every packet. `mover`: who moves them: "workers" on each flow's next
# packet (counted in flows_rebalanced and `counter`), or "sweep": gwlbd's
# once-a-second control sweep of flows on leaving appliances (lifecycle
# flows_swept), which gets there first when the move becomes due on a whole
# capture second (the replay's housekeeping runs on the first packet of each
# capture second; flow 0 sends exactly then). `back`: S takes new flows again by 9 s (cohort C may use it).
# `lifecycle`: expected summary lifecycle counters (n = flows on S at 4 s);
# `changes`: expected lifecycle_changes [(at_s, from, to, why)]; `phase`: S's
# final phase. Event times are given once, in the events file's own notation
# and in ns for the checks.
SCENARIOS = {
    "failed-rebalance": dict(
        format="aws", mode="rebalance", draining=False, workers=2,
        events=[("at: 4s, server: %s, health: unhealthy" % S, 4 * SEC),
                ("at: 8000ms, server: %s, health: healthy" % S, 8 * SEC)],
        flows=("move", 4 * SEC), back=True, counter="flows_rebalanced_unhealthy", mover="workers",
        lifecycle=lambda n: {"removals": 0, "drains_started": 0}, changes=[], phase="active"),
    "failed-no-rebalance": dict(
        format="ethernet", mode="no_rebalance", draining=False, workers=1,
        events=[("at: 4s, server: %s, health: unhealthy" % S, 4 * SEC),
                ("at: 8, server: %s, health: healthy" % S, 8 * SEC)],
        flows=("stay",), back=True,
        lifecycle=lambda n: {"removals": 0, "drains_started": 0}, changes=[], phase="active"),
    "removed-draining-rebalance": dict(
        format="aws", mode="rebalance", draining=True, workers=2,
        events=[("at: 4s, server: %s, remove: true" % S, 4 * SEC)],
        flows=("move", 7 * SEC), back=False, counter="flows_rebalanced_drain_timeout", mover="sweep",
        lifecycle=lambda n: {"removals": 1, "drains_started": 1, "drains_timed_out": 1,
                             "drains_emptied": 0, "flows_drain_timed_out": n, "forgotten": 1,
                             "flows_swept": n},
        changes=[(7.0, "draining", "drained", "drain timeout"),
                 (7.0, "drained", "gone", "no flow left: forgotten")], phase="gone"),
    "removed-draining-no-rebalance": dict(
        format="ethernet", mode="no_rebalance", draining=True, workers=1,
        events=[("at: 4.0s, server: %s, remove: true" % S, 4 * SEC)],
        flows=("stay",), back=False,
        lifecycle=lambda n: {"removals": 1, "drains_started": 1, "drains_timed_out": 1,
                             "flows_drain_timed_out": n, "forgotten": 0},
        changes=[(7.0, "draining", "drained", "drain timeout")], phase="drained"),
    "removed-rebalance": dict(
        format="aws", mode="rebalance", draining=False, workers=1,
        events=[("at: 4050ms, server: %s, remove: true" % S, 4050 * MS),
                ("at: 9, server: %s, add: fw, weight: 100" % S, 9 * SEC)],
        flows=("move", 4050 * MS), back=True, counter="flows_rebalanced_removed", mover="workers",
        lifecycle=lambda n: {"removals": 1, "drains_started": 0, "forgotten": 1, "flows_swept": 0},
        changes=[(5.0, "drained", "gone", "no flow left: forgotten")], phase="active"),
    "removed-no-rebalance": dict(
        format="ethernet", mode="no_rebalance", draining=False, workers=2,
        events=[("at: 4s, server: %s, remove: true" % S, 4 * SEC)],
        flows=("stay",), back=False,
        lifecycle=lambda n: {"removals": 1, "drains_started": 0, "forgotten": 0},
        changes=[], phase="drained"),
    # Operator drain (timeout 2 s) and undrain; weight 0 on W keeps W's flows.
    "drain-weight": dict(
        format="aws", mode="rebalance", draining=True, workers=2,
        events=[("at: 2s, server: %s, weight: 0" % W, 2 * SEC),
                ("at: 4.5s, server: %s, drain: true, timeout: 2s" % S, 4500 * MS),
                ("at: 9s, server: %s, undrain: true" % S, 9 * SEC)],
        flows=("move", 6500 * MS), back=True, counter="flows_rebalanced_drain_timeout",
        mover="workers",
        lifecycle=lambda n: {"removals": 0, "drains_started": 1, "drains_timed_out": 1,
                             "flows_drain_timed_out": n, "flows_swept": 0},
        changes=[(6.5, "draining", "drained", "drain timeout")], phase="active"),
    # Draining with a long timeout ends when the last flow on S ends (idle 60 s
    # after 12 s): the idle flows are counted as drained and S is forgotten.
    "drain-emptied": dict(
        format="ethernet", mode="rebalance", draining=True, workers=1,
        drain_timeout="300s", idle="60s",
        events=[("at: 4s, server: %s, remove: true" % S, 4 * SEC)],
        flows=("stay",), back=False,
        lifecycle=lambda n: {"removals": 1, "drains_started": 1, "drains_timed_out": 0,
                             "drains_emptied": 1, "flows_drained": n, "forgotten": 1},
        changes=[(None, "draining", "gone", "no flow left: drain over, forgotten")], phase="gone"),
}


def scenario(exe, workdir, name, times):
    sc = SCENARIOS[name]
    r = Failures(name)
    run = Run(exe, workdir, name, sc, times)
    s = run.summary
    t_event = 4 * SEC
    n_in = len(times)
    event_times = [t for _, t in sc["events"]]
    cohort = {f: c for f, c, _ in flows()}
    expiring = sc.get("idle") == "60s"
    gone_at_end = {f for f in cohort if cohort[f] != "D"} if expiring else set()
    common_checks(r, run, n_in)
    summary_checks(r, run, event_times, gone_at_end)
    r.check(s["flows_in_table"] == len(cohort) - len(gone_at_end),
            "flows_in_table %d, expected %d" % (s["flows_in_table"], len(cohort) - len(gone_at_end)))

    on_s = [f for f in cohort if cohort[f] == "A" and run.at(f, t_event) == S]
    r.check(len(on_s) >= 5, "only %d flows on %s at the event: too few to test" % (len(on_s), S))
    behaviour = sc["flows"]
    moved_to = {}
    for f in cohort:
        p = run.path(f)
        apps = [a for _, a in p]
        if f in on_s:
            if behaviour[0] == "stay":
                r.check(set(apps) == {S}, "flow %d (on %s at the event) went to %s; it must stay" % (f, S, sorted(set(apps))))
            else:
                t_move = behaviour[1]
                before = {a for ts, a in p if ts < t_move}
                after = [a for ts, a in p if ts >= t_move]
                r.check(before == {S}, "flow %d: before %.3f s it went to %s, expected only %s" % (f, t_move / SEC, sorted(before), S))
                r.check(len(set(after)) == 1 and after[0] != S,
                        "flow %d: from %.3f s it went to %s, expected one appliance other than %s (and never back)"
                        % (f, t_move / SEC, sorted(set(after)), S))
                moved_to[f] = after[0]
            continue
        # Every other flow keeps its first appliance.
        r.check(len(set(apps)) == 1, "flow %d (%s, not on %s at 4 s) changed appliance: %s"
                % (f, cohort[f], S, sorted(set(apps))))
        if cohort[f] == "B":  # from 5 s: S takes no new flows (unhealthy, removed or drained)
            r.check(S not in apps, "new flow %d (from 5 s) went to %s" % (f, S))
        if cohort[f] in "BC" and name == "drain-weight":  # nor does W at weight 0
            r.check(W not in apps, "new flow %d went to %s at weight 0" % (f, W))
    c_on_s = sum(1 for f in cohort if cohort[f] == "C" and run.at(f, 1 << 62) == S)
    if sc["back"]:
        r.check(c_on_s > 0, "no new flow from 9 s went to %s, which is back in service" % S)
    else:
        r.check(c_on_s == 0, "%d new flows from 9 s went to %s, which left" % (c_on_s, S))
    if name == "drain-weight":
        r.check(any(cohort[f] == "A" and run.at(f, 2 * SEC) == W for f in cohort),
                "no flow on %s before its weight went to 0" % W)

    c = s["counters"]
    n_moved = len(moved_to)
    by_workers = n_moved if sc.get("mover") == "workers" else 0
    swept = n_moved if sc.get("mover") == "sweep" else 0
    r.check(c["flows_rebalanced"] == by_workers, "flows_rebalanced %d, expected %d (%d flows moved, by %s)"
            % (c["flows_rebalanced"], by_workers, n_moved, sc.get("mover")))
    r.check(s["lifecycle"]["flows_swept"] == swept, "lifecycle.flows_swept %d, expected %d (%d flows moved, by %s)"
            % (s["lifecycle"]["flows_swept"], swept, n_moved, sc.get("mover")))
    if "counter" in sc:
        r.check(c[sc["counter"]] == by_workers, "%s %d, expected %d" % (sc["counter"], c[sc["counter"]], by_workers))
    # The event that takes S away reports S's flows and where they went; a later
    # event never shows a flow moving back to S.
    ev = next(e for e in s["events"] if e["server"] == S)
    r.check(ev["flows_on_server_at_event"] == len(on_s),
            "summary flows_on_server_at_event %d, %d flows on %s" % (ev["flows_on_server_at_event"], len(on_s), S))
    want = {}
    for f, a in moved_to.items():
        want["%s->%s" % (S, a)] = want.get("%s->%s" % (S, a), 0) + 1
    later = [e for e in s["events"] if e["index"] > ev["index"]]
    r.check(ev["flows_moved"] == want, "summary events[%d].flows_moved %s, capture shows %s"
            % (ev["index"], ev["flows_moved"], want))
    for e in later:
        r.check(not e["flows_moved"], "events[%d]: flows moved after it: %s" % (e["index"], e["flows_moved"]))

    # Lifecycle, its changes and the phases.
    lc = s["lifecycle"]
    for k, v in sc["lifecycle"](len(on_s)).items():
        r.check(lc.get(k) == v, "lifecycle.%s %s, expected %s (all: %s)" % (k, lc.get(k), v, lc))
    got = [(ch["at_s"], ch["from"], ch["to"], ch["why"]) for ch in s["lifecycle_changes"]]
    want_ch = sc["changes"]
    ok = len(got) == len(want_ch) and all(
        (w[0] is None or abs(g[0] - w[0]) < 1e-9) and g[1:] == w[1:] for g, w in zip(got, want_ch))
    r.check(ok, "lifecycle_changes %s, expected %s" % (got, want_ch))
    if name == "drain-emptied" and got:
        # The flows on S end 60 s after their last packet (~12 s); the drain ends
        # at the first housekeeping after that, long before its 300 s timeout.
        r.check(72.0 <= got[0][0] <= 74.0, "drain ended at %s s, expected at 72-74 s" % got[0][0])
    r.check(phase_of(run, S) == sc["phase"], "final phase of %s: %s, expected %s" % (S, phase_of(run, S), sc["phase"]))
    for a in APPS[1:]:
        r.check(phase_of(run, a) == "active", "final phase of %s: %s" % (a, phase_of(run, a)))
    app = next((a for a in s["appliances"] if a["address"] == S), None)
    if sc["phase"] == "drained":  # removed, flows still on it: listed with its phase
        r.check(app is not None and app["phase"] == "drained" and not app["in_config"] and
                app["flows"] == len(on_s), "appliances entry of the removed %s: %s" % (S, app))
    elif sc["phase"] == "gone":
        r.check(app is None, "appliances lists %s, which is gone: %s" % (S, app))

    status = "ok" if not r.errors else "FAIL"
    print("%-30s %s  (%d flows on %s at 4 s, %d moved; replay %.1f s)" % (name, status, len(on_s), S, n_moved, run.seconds))
    for e in r.errors[:20]:
        print("    " + e)
    if len(r.errors) > 20:
        print("    ... and %d more" % (len(r.errors) - 20))
    return not r.errors


# --- bad events files -----------------------------------------------------------------------

BAD = [
    # (events file text, words stderr must contain)
    ("- { at: 1s, server: 192.0.2.10, helth: unhealthy }\n", ["events[0]", "unknown key 'helth'"]),
    ("- { at: 1s, server: 192.0.2.10, health: unhealthy }\n- { at: 2s, server: 192.0.2.99, remove: true }\n",
     ["events[1].server", "192.0.2.99", "not a configured appliance"]),
    ("- { at: 1s, server: 192.0.2.10, remove: true, drain: true }\n", ["events[0]", "two actions", "remove", "drain"]),
    ("- { at: 3s, server: 192.0.2.10, health: unhealthy }\n- { at: 2s, server: 192.0.2.10, health: healthy }\n",
     ["events[1].at", "before events[0].at", "time order"]),
    ("- { at: 2x, server: 192.0.2.10, remove: true }\n", ["events[0].at", "'2x'"]),
    ("- { at: -1s, server: 192.0.2.10, remove: true }\n", ["events[0].at", "'-1s'"]),
    ("- { at: 1.5.2s, server: 192.0.2.10, remove: true }\n", ["events[0].at"]),
    ("- { at: 1s, server: 192.0.2.11, add: fw }\n", ["events[0].add", "192.0.2.11", "already"]),
    ("- { at: 1s, server: 192.0.2.50, add: nosuch }\n", ["events[0].add", "no server group 'nosuch'"]),
    ("- { at: 1s, server: 192.0.2.10, health: sick }\n", ["events[0].health", "'sick'"]),
    ("- { at: 1s, server: 192.0.2.10, weight: 20000 }\n", ["events[0].weight", "'20000'"]),
    ("- { at: 1s, server: 192.0.2.10, remove: true, timeout: 3s }\n", ["events[0].timeout", "only allowed with drain"]),
    ("- { at: 1s, server: 192.0.2.10, drain: true, timeout: 1500ms }\n", ["events[0].timeout", "'1500ms'"]),
    ("- { at: 1s, server: 192.0.2.10, drain: true }\n- { at: 2s, server: 192.0.2.10, drain: true }\n",
     ["events[1].drain", "already draining"]),
    ("- { at: 1s, server: 192.0.2.10, undrain: true }\n", ["events[0].undrain", "not draining"]),
    ("- { at: 1s, server: 192.0.2.10, remove: false }\n", ["events[0].remove", "must be true"]),
    ("- { at: 1s, server: 192.0.2.10 }\n", ["events[0]", "no action"]),
    ("- { server: 192.0.2.10, remove: true }\n", ["events[0]", "missing key 'at'"]),
    ("- { at: 1s, remove: true }\n", ["events[0]", "missing key 'server'"]),
    ("- { at: 1s, server: not-an-ip, remove: true }\n", ["events[0].server", "'not-an-ip'"]),
    ("- { at: 1s, server: 192.0.2.10, remove: true }\n- { at: 1s, server: 192.0.2.10, health: healthy }\n",
     ["events[1].server", "not a configured appliance"]),
    ("- { at: 1s, server: 192.0.2.10, remove: true }\n- { at: 1s, server: 192.0.2.11, remove: true }\n"
     "- { at: 1s, server: 192.0.2.12, remove: true }\n- { at: 1s, server: 192.0.2.13, remove: true }\n",
     ["events[3].remove", "invalid"]),
    ("- { at: 1s, server: 192.0.2.10, remove: [true] }\n", ["events[0].remove", "single value"]),
    ("- at: 1s\n  server: 192.0.2.10\n  server: 192.0.2.11\n  remove: true\n", ["events[0]"]),
    ("at: 1s\nserver: 192.0.2.10\n", ["must be a YAML list"]),
    ("- { at: 1s, server: 192.0.2.10, remove: true\n", ["YAML syntax error", "line"]),
    ("- 42\n", ["events[0]", "must be a mapping"]),
    # reload: a whole config file (relative to the events file), no server.
    ("- { at: 1s, server: 192.0.2.10, reload: config.yaml }\n", ["events[0].server", "a reload takes no server"]),
    ("- { at: 1s, reload: nosuch.yaml }\n", ["events[0].reload", "nosuch.yaml", "not a valid config"]),
    ("- { at: 1s, reload: invalid.yaml }\n", ["events[0].reload", "invalid.yaml", "not a valid config", "server_groups"]),
    ("- { at: 1s, reload: '' }\n", ["events[0].reload", "needs a config file path"]),
    # force: what gwlbctl --force takes (drain, remove, weight, reload), true or false.
    ("- { at: 1s, server: 192.0.2.10, health: unhealthy, force: true }\n",
     ["events[0].force", "only allowed with drain, remove, weight or reload"]),
    ("- { at: 1s, server: 192.0.2.10, drain: true, force: yes }\n", ["events[0].force", "'yes'"]),
]


def bad_files(exe, workdir, times_path):
    d = os.path.join(workdir, "bad-events")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = os.path.join(d, "config.yaml")
    open(cfg, "w").write(config_text("aws", "rebalance", True))
    open(os.path.join(d, "invalid.yaml"), "w").write("server_groups: 5\n")
    ok = True
    cases = BAD + [(None, ["cannot read"])]
    for i, (text, words) in enumerate(cases):
        ev = os.path.join(d, "bad%02d.yaml" % i)
        if text is not None:
            open(ev, "w").write(text)
        out = os.path.join(d, "out%02d" % i)
        p = subprocess.run([exe, "--config", cfg, "--in", times_path, "--out-dir", out, "--reflect",
                            "--events", ev], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        problems = []
        if p.returncode != 2:
            problems.append("exit %d, expected 2" % p.returncode)
        if "terminate" in p.stderr or "Aborted" in p.stderr or p.returncode < 0:
            problems.append("crashed")
        problems += ["stderr lacks %r" % w for w in words if w not in p.stderr]
        if os.path.exists(os.path.join(out, "summary.json")):
            problems.append("wrote outputs")
        first = (p.stderr.strip().splitlines() or [""])[-1]
        print("bad events file %2d: %s  %s" % (i, "ok  " if not problems else "FAIL", first))
        if problems:
            ok = False
            print("    %s\n    file: %r\n    stderr: %s" % ("; ".join(problems), text, p.stderr.strip()))
    return ok


def main():
    exe, workdir = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    os.makedirs(workdir, exist_ok=True)
    pcap = os.path.join(workdir, "flows.pcap")
    times = write_capture(pcap)
    t0 = time.monotonic()
    if rest and rest[0] == "--bad-files":
        ok = bad_files(exe, workdir, pcap)
    else:
        names = rest[rest.index("--only") + 1:] if "--only" in rest else list(SCENARIOS)
        print("capture: %d flows, %d packets over %.1f s" % (len(flows()), len(times), max(times.values()) / SEC))
        ok = run_scenarios(lambda name: scenario(exe, workdir, name, times), names)
    return finish(ok, t0)


def run_scenarios(run_one, names):
    """Runs every named scenario (all of them, even after a failure); True when all pass."""
    ok = True
    for name in names:
        ok = run_one(name) and ok
    return ok


def finish(ok, t0):
    print("%s in %.1f s" % ("PASS" if ok else "FAIL", time.monotonic() - t0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
