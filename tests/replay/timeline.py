#!/usr/bin/python3
"""gwlb-replay's time: output timestamps, the summary.json time series, the
progress line, the loss warnings of --strict, and tools/plot_replay.py.

usage: timeline.py GWLB_REPLAY WORKDIR CHECK [--plot-script tools/plot_replay.py]

CHECK is one of
  timestamps  every frame in to-appliances.pcap and returned.pcap carries the
              capture timestamp (to the nanosecond) of the input packet it
              came from (2 workers, --reflect, 2,000 packets with 2,000
              distinct timestamps over 10 s)
  series      summary.json "timeseries": per appliance, packets and bytes per
              interval equal what to-appliances.pcap holds in each interval
              (so they sum to the totals), input and returned sum to the
              totals, every event is marked at its capture time with the flows
              it moved, and --interval auto gives 50-100 points
  progress    no progress line when stderr is not a terminal; a progress line
              when it is (a pty); none with --quiet
  strict      packets dropped because the flow table is full, or because an
              appliance has no MAC, are warned about on stderr; --strict makes
              the exit status 1; a clean run with --strict exits 0
  plot        tools/plot_replay.py draws a replay with events as a well-formed
              SVG with one line per appliance
"""
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import events as ev  # noqa: E402  (the capture and decoding helpers)

SEC, MS = ev.SEC, ev.MS
FLOWS, PER_FLOW = 20, 100   # 2,000 packets over 10 s


def times():
    """(t, f, k): packet k of flow f at k * 100 ms + f * 1.234567 ms + 7 k ns,
    so that no two packets share a timestamp and the nanoseconds matter."""
    return [(k * 100 * MS + f * 1_234_567 + 7 * k, f, k) for f in range(FLOWS) for k in range(PER_FLOW)]


def read_pcap_ts(path):
    """[(timestamp ns, frame bytes)] of a pcap (microsecond or nanosecond)."""
    data = open(path, "rb").read()
    magic = data[:4]
    e = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    out, off = [], 24
    while off < len(data):
        sec, frac, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        out.append((sec * SEC + (frac if nano else frac * 1000), data[off + 16:off + 16 + incl]))
        off += 16 + incl
    return out


def run(exe, d, cfg_text, pcap, extra=(), check=True, stderr=subprocess.PIPE):
    os.makedirs(d, exist_ok=True)
    cfg = os.path.join(d, "config.yaml")
    open(cfg, "w").write(cfg_text)
    cmd = [exe, "--config", cfg, "--in", pcap, "--out-dir", os.path.join(d, "out")] + list(extra)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True)
    open(os.path.join(d, "replay.log"), "w").write(" ".join(cmd) + "\n" + p.stdout + (p.stderr or ""))
    if check and p.returncode != 0:
        raise SystemExit("gwlb-replay exited %d:\n%s%s" % (p.returncode, p.stdout, p.stderr))
    return p


def flows_capture(work):
    path = os.path.join(work, "flows.pcap")
    return path, ev.write_pcap(path, times(), ev.frame)


def check_timestamps(exe, work):
    pcap, t_of = flows_capture(work)
    run(exe, os.path.join(work, "ts"), ev.config_text("aws", "rebalance", False), pcap,
        ["--reflect", "--workers", "2"])
    out = os.path.join(work, "ts", "out")
    want = {pid: ev.BASE + t for pid, t in t_of.items()}
    bad, seen = [], 0
    for name, ident in (("to-appliances.pcap", lambda b: ev.packet_id(ev.inner_of_geneve(b)[1])),
                        ("returned.pcap", ev.id_of_frame)):
        frames = read_pcap_ts(os.path.join(out, name))
        assert len(frames) == len(want), "%s: %d frames, %d input packets" % (name, len(frames), len(want))
        for ts, b in frames:
            pid = ident(b)
            seen += 1
            if ts != want[pid]:
                bad.append("%s: packet %s at %d, its input packet at %d" % (name, pid, ts, want[pid]))
        distinct = len({ts for ts, _ in frames})
        assert distinct == len(want), "%s: %d distinct timestamps, input has %d" % (name, distinct, len(want))
    assert not bad, "%d frames with another timestamp than their input packet's:\n  %s" % (
        len(bad), "\n  ".join(bad[:10]))
    print("ok: %d output frames carry their input packet's timestamp to the ns" % seen)


EVENTS = [("at: 4s, server: 192.0.2.10, health: unhealthy", 4.0),
          ("at: 6500ms, server: 192.0.2.11, remove: true", 6.5)]


def events_run(exe, work, name, extra):
    pcap, _ = flows_capture(work)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    evf = os.path.join(d, "events.yaml")
    open(evf, "w").write("".join("- { %s }\n" % e for e, _ in EVENTS))
    run(exe, d, ev.config_text("aws", "rebalance", False), pcap,
        ["--reflect", "--workers", "2", "--events", evf] + list(extra))
    return os.path.join(d, "out")


def check_series(exe, work):
    out = events_run(exe, work, "series", ["--interval", "500ms"])
    s = json.load(open(os.path.join(out, "summary.json")))
    assert "timeseries" in s, "summary.json has no timeseries: %s" % sorted(s)
    ts = s["timeseries"]
    span = max(t for t, _, _ in times())
    n = span // (500 * MS) + 1
    assert ts["interval_s"] == 0.5 and ts["points"] == n and len(ts["t_s"]) == n, \
        "interval %s, points %s (want 0.5 and %d)" % (ts["interval_s"], ts["points"], n)
    assert all(abs(t - 0.5 * i) < 1e-9 for i, t in enumerate(ts["t_s"])), ts["t_s"][:5]

    # Per appliance, interval by interval, what to-appliances.pcap holds.
    first = ev.BASE
    want = {}
    for t, b in read_pcap_ts(os.path.join(out, "to-appliances.pcap")):
        dst = ".".join(map(str, b[30:34]))
        pk, by = want.setdefault(dst, ([0] * n, [0] * n))
        i = (t - first) // (500 * MS)
        pk[i] += 1
        by[i] += len(b)
    got = {a: (v["packets"], v["bytes"]) for a, v in ts["appliances"].items() if sum(v["packets"])}
    assert got.keys() == want.keys(), "appliances %s, in the pcap %s" % (sorted(got), sorted(want))
    for a in want:
        assert got[a] == want[a], "%s: series %s, pcap %s" % (a, got[a], want[a])
    # Every appliance ever known has a series; the series sum to the totals.
    assert set(ts["appliances"]) >= {x["address"] for x in s["servers"]}, (ts["appliances"].keys(), s["servers"])
    for a in s["appliances"]:
        v = ts["appliances"][a["address"]]
        assert (sum(v["packets"]), sum(v["bytes"])) == (a["packets"], a["bytes"]), (a, sum(v["packets"]))
    assert sum(ts["input"]["packets"]) == s["input_packets"] == FLOWS * PER_FLOW, s["input_packets"]
    assert sum(ts["returned"]["packets"]) == s["returned_packets"], s["returned_packets"]
    assert sum(ts["input"]["bytes"]) == sum(len(ev.frame(f, k)) for _, f, k in times())
    # What the events did shows in the series: nothing to .10 from 4 s, nothing
    # to .11 from 6.5 s (rebalance: their flows moved at once).
    for addr, at in (("192.0.2.10", 4.0), ("192.0.2.11", 6.5)):
        p = ts["appliances"][addr]["packets"]
        before = sum(x for t, x in zip(ts["t_s"], p) if t + 0.5 <= at)
        after = sum(x for t, x in zip(ts["t_s"], p) if t >= at)
        assert before > 0 and after == 0, "%s: %d packets before %s s, %d after" % (addr, before, at, after)

    # Marks: every event at its time, with the flows it moved.
    marks = ts["marks"]
    assert [m["at_s"] for m in marks] == sorted(m["at_s"] for m in marks), "marks out of order"
    for i, (text, at) in enumerate(EVENTS):
        m = [x for x in marks if x.get("event") == i]
        assert len(m) == 1, "event %d: marks %s" % (i, m)
        m = m[0]
        e = s["events"][i]
        moved = sum(e["flows_moved"].values())
        assert m["at_s"] == at and m["server"] == e["server"] and m["action"] == e["action"], (m, e)
        assert m["kind"] == ("health" if e["action"] in ("healthy", "unhealthy") else "event"), m
        assert m["flows_moved"] == moved and moved > 0, (m, e["flows_moved"])
    assert any(x["kind"] == "lifecycle" for x in marks), "the removal's lifecycle change is not marked"

    # --interval auto: about 100 points, a round interval.
    out = events_run(exe, work, "series-auto", [])
    ts = json.load(open(os.path.join(out, "summary.json")))["timeseries"]
    assert 50 <= ts["points"] <= 101, ts["points"]
    assert re.fullmatch(r"[125](0*)", ("%.3f" % (ts["interval_s"] * 1000)).rstrip("0").rstrip(".")), ts["interval_s"]
    # A bad --interval is refused before anything runs.
    p = run(exe, os.path.join(work, "series-bad"), ev.config_text("aws", "rebalance", False),
            flows_capture(work)[0], ["--interval", "0.1ms"], check=False)
    assert p.returncode == 2 and "--interval" in p.stderr, (p.returncode, p.stderr)
    print("ok: time series of %d points match the pcap per interval and the totals; %d marks"
          % (n, len(marks)))


PROGRESS = re.compile(r"gwlb-replay: +\d+ % \(\d+ of \d+ frames, capture time")


def run_on_pty(cmd):
    """Runs cmd with stderr on a pseudo-terminal; returns (exit status, stderr text)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        r, _, _ = select.select([master], [], [], 120)
        if not r:
            p.kill()
            raise SystemExit("no output on the pty for 120 s")
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    return p.wait(timeout=120), b"".join(chunks).decode(errors="replace")


def check_progress(exe, work):
    pcap, _ = flows_capture(work)
    d = os.path.join(work, "progress")
    p = run(exe, d, ev.config_text("aws", "rebalance", False), pcap, ["--reflect"])
    assert not PROGRESS.search(p.stderr) and "\r" not in p.stderr, "progress without a terminal: %r" % p.stderr
    base = [exe, "--config", os.path.join(d, "config.yaml"), "--in", pcap, "--reflect", "--out-dir"]
    rc, text = run_on_pty(base + [os.path.join(d, "out-tty")])
    assert rc == 0, (rc, text)
    lines = PROGRESS.findall(text)
    assert lines, "no progress line on a terminal: %r" % text
    assert "100 % (2000 of 2000 frames" in text, "no final line: %r" % text
    rc, text = run_on_pty(base + [os.path.join(d, "out-quiet"), "--quiet"])
    assert rc == 0 and not PROGRESS.search(text), "progress with --quiet: %r" % text
    print("ok: progress line on a terminal only (%d shown), none with --quiet" % len(lines))


def udp_frame(i):
    """One UDP packet of flow i (distinct source address and port per flow)."""
    src = bytes([10, 1 + (i >> 16) & 0xFF, (i >> 8) & 0xFF, i & 0xFF])
    payload = b"x" * 32
    udp = struct.pack("!HHHH", 10000 + i % 50000, 53, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0, 64, 17, 0, src, ev.SERVER_IP)
    ip = ip[:10] + struct.pack("!H", ev.csum(ip)) + ip[12:]
    return ev.GW_MAC + ev.ROUTER_MAC + b"\x08\x00" + ip + udp


def check_strict(exe, work):
    flows_pcap, _ = flows_capture(work)
    cfg = ev.config_text("aws", "rebalance", False)
    # 1. No MAC for the appliances: no gateway_mac, no mac, and the replay does no ARP.
    no_mac = cfg.replace("  gateway_mac: 02:00:00:00:00:fe\n", "")
    assert no_mac != cfg
    d = os.path.join(work, "strict-no-mac")
    p = run(exe, d, no_mac, flows_pcap, check=False)
    s = json.load(open(os.path.join(d, "out", "summary.json")))
    assert s["drops"].get("neighbour_unresolved", 0) > 0, s["drops"]
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert re.search(r"WARNING: \d+ packet\(s\) dropped because an appliance has no MAC.*"
                     r"no mac for 192\.0\.2\.10, 192\.0\.2\.11", p.stderr), p.stderr
    p = run(exe, d, no_mac, flows_pcap, ["--strict"], check=False)
    assert p.returncode == 1 and "WARNING" in p.stderr, (p.returncode, p.stderr)

    # 2. A full flow table: 3,000 new UDP flows in 0.3 s, flow_table_size 1024.
    full = cfg.replace("flow_table_size: 65536", "flow_table_size: 1024")
    assert full != cfg
    pcap = os.path.join(work, "many-flows.pcap")
    ev.write_pcap(pcap, [(i * 100_000, i, 0) for i in range(3000)], lambda i, _: udp_frame(i))
    d = os.path.join(work, "strict-full")
    p = run(exe, d, full, pcap, check=False)
    s = json.load(open(os.path.join(d, "out", "summary.json")))
    assert s["drops"].get("flow_table_full", 0) > 0, s["drops"]
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert re.search(r"WARNING: %d packet\(s\) dropped because the flow table was full.*"
                     r"flow_table_size is 1024" % s["drops"]["flow_table_full"], p.stderr), p.stderr
    p = run(exe, d, full, pcap, ["--strict"], check=False)
    assert p.returncode == 1, (p.returncode, p.stderr)

    # 3. Nothing lost: --strict exits 0, no warning.
    p = run(exe, os.path.join(work, "strict-clean"), cfg, flows_pcap, ["--strict", "--reflect"], check=False)
    assert p.returncode == 0 and "WARNING" not in p.stderr, (p.returncode, p.stderr)
    print("ok: flow_table_full and neighbour_unresolved warned about; --strict exits 1 on them, 0 when clean")


SVG = "{http://www.w3.org/2000/svg}"


def check_plot(exe, work, script):
    out = events_run(exe, work, "plot", [])
    svg = os.path.join(work, "plot", "timeline.svg")
    png = os.path.join(work, "plot", "timeline.png")
    for f in (svg, png):
        if os.path.exists(f):
            os.remove(f)
    p = subprocess.run(["/usr/bin/python3", script, os.path.join(out, "summary.json"), "--out", svg,
                        "--out", png], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 0, p.stdout
    assert os.path.getsize(png) > 1000, "no PNG"
    root = ET.parse(svg).getroot()  # raises on a malformed SVG
    assert root.tag == SVG + "svg", root.tag
    s = json.load(open(os.path.join(out, "summary.json")))
    apps = sorted(s["timeseries"]["appliances"])
    # One traffic line per appliance: a group with id "traffic-ADDRESS" holding a path.
    ids = {g.get("id") for g in root.iter(SVG + "g") if (g.get("id") or "").startswith("traffic-")}
    assert ids == {"traffic-" + a for a in apps}, "traffic lines %s, appliances %s" % (sorted(ids), apps)
    for g in root.iter(SVG + "g"):
        if g.get("id", "").startswith("traffic-"):
            paths = list(g.iter(SVG + "path"))
            assert len(paths) == 1, "%s: %d paths" % (g.get("id"), len(paths))
    # Every marked capture time is a labelled vertical line (marks at one time share it).
    marks = [g.get("id") for g in root.iter(SVG + "g") if (g.get("id") or "").startswith("mark-")]
    times_marked = {m["at_s"] for m in s["timeseries"]["marks"]}
    assert len(marks) == len(times_marked), (len(marks), sorted(times_marked))
    text = "".join(t.text or "" for t in root.iter(SVG + "text"))
    for e in s["events"]:
        assert e["server"] in text, "event at %s s not labelled" % e["at_s"]
    print("ok: plot has %d traffic lines (one per appliance) and %d marks" % (len(ids), len(marks)))


def main():
    exe, work, what = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if what == "timestamps":
        check_timestamps(exe, work)
    elif what == "series":
        check_series(exe, work)
    elif what == "progress":
        check_progress(exe, work)
    elif what == "strict":
        check_strict(exe, work)
    elif what == "plot":
        check_plot(exe, work, sys.argv[sys.argv.index("--plot-script") + 1])
    else:
        raise SystemExit("unknown check " + what)


if __name__ == "__main__":
    main()
