#!/usr/bin/python3
"""Full flow-table dumps while traffic flows (and, with --bench, how much they slow it).

Expects gwlbd running on an endless capture (net_pcap infinite_rx) of FLOWS
distinct flows, its control socket at SOCK. Waits until every flow is in the
table, then pages through the whole table (limit 10000) while sampling the
workers' counters between pages.
Test mode asserts: packets kept flowing during every dump, every packet was
forwarded (no drop counter moved), the dump listed every flow exactly once.
--bench prints worker packet rates without and during dumps (medians of
0.25 s windows; conditions included), as JSON on the last line.

usage: dump_under_load.py SOCK FLOWS [--bench] [--rounds N]
"""
import json
import socket
import statistics
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from checklib import flow_count  # noqa: E402

sock_path, flows = sys.argv[1], int(sys.argv[2])
bench = "--bench" in sys.argv
rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3


class Api:
    def __init__(self):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(sock_path)
        self.f = self.s.makefile("rb")

    def call(self, method, **params):
        self.s.sendall(json.dumps({"method": method, "params": params}).encode() + b"\n")
        r = json.loads(self.f.readline())
        assert r["ok"], r
        return r["result"]


api = Api()


def totals():
    t = api.call("stats")["totals"]
    return t, time.monotonic()


deadline = time.monotonic() + 120
while flow_count(api.call) < flows:
    assert time.monotonic() < deadline, "flows never reached the table"
    time.sleep(0.2)


def drops(t):
    return sum(v for k, v in t.items() if k.startswith("drop_"))


def window_rates(duration):
    """Packet rates of 0.25 s windows, with no dump running."""
    rates = []
    t0, s0 = totals()
    end = time.monotonic() + duration
    while time.monotonic() < end:
        time.sleep(0.25)
        t1, s1 = totals()
        rates.append((t1["rx_packets"] - t0["rx_packets"]) / (s1 - s0))
        t0, s0 = t1, s1
    return rates


base_t, _ = totals()
baseline, during, dump_secs = [], [], []
for r in range(rounds):
    baseline += window_rates(1.0)
    # One full dump, page by page, sampling the counters between pages.
    seen = set()
    cursor = None
    t0, s0 = totals()
    start_rx = t0["rx_packets"]
    last_t, last_s = t0, s0
    began = time.monotonic()
    while True:
        params = {"limit": 10000}
        if cursor:
            params["cursor"] = cursor
        page = api.call("flows", **params)
        for f in page["flows"]:
            k = (f["src"], f["dst"], f["sport"], f["dport"], f["proto"])
            assert k not in seen, f"listed twice: {k}"
            seen.add(k)
        t1, s1 = totals()
        if s1 - last_s >= 0.05:
            during.append((t1["rx_packets"] - last_t["rx_packets"]) / (s1 - last_s))
            last_t, last_s = t1, s1
        cursor = page["next_cursor"]
        if not cursor:
            break
    dump_secs.append(time.monotonic() - began)
    end_t, _ = totals()
    assert len(seen) >= flows, f"dump listed {len(seen)} of {flows} flows"
    assert end_t["rx_packets"] > start_rx, "no packet flowed during the dump"
    assert drops(end_t) == drops(base_t) == 0, {k: v for k, v in end_t.items() if k.startswith("drop_") and v}
    # Counters are read one after another while the worker runs, so the two may
    # differ by what it handled in between; a lost packet would show in a drop.
    assert abs(end_t["rx_packets"] - end_t["encapsulated"]) <= 4096, "a packet was not forwarded"
    print(f"dump {r + 1}: {len(seen)} flows in {dump_secs[-1]:.2f} s; "
          f"{end_t['rx_packets'] - start_rx} packets forwarded meanwhile, 0 dropped")

if bench:
    b, d = statistics.median(baseline), statistics.median(during) if during else float("nan")
    res = {"flows": flows, "rounds": rounds, "dump_s_median": statistics.median(dump_secs),
           "pps_idle_median": b, "pps_during_dump_median": d, "ratio": d / b if b else None,
           "pps_idle_spread": [min(baseline), max(baseline)],
           "pps_during_spread": [min(during), max(during)] if during else None}
    print(json.dumps(res))
