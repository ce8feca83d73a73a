"""The soak's report (tools/soak_check.py writes it): DIR/report.md, each
invariant with PASS or FAIL and its evidence, the plots, the schedule as it
ran; and the figures docs/testing.md quotes (DIR/summary.json).
"""
import os

from soak_check import instances, is_reset


def figures(data, results):
    f = {"seed": data.run.get("seed"), "minutes": data.run.get("minutes"), "nproc": data.run.get("nproc"),
         "load_start": data.run.get("load_start"), "load_end": data.run.get("load_end"),
         "invariants_held": sum(1 for x in results if x.ok and x.judged),
         "invariants_failed": [x.name for x in results if not x.ok],
         "invariants_not_judged": [x.name for x in results if not x.judged]}
    ev = {}
    for e in data.events:
        if not e.get("outcome", "").startswith("skipped"):
            ev[e["kind"]] = ev.get(e["kind"], 0) + 1
    f["events"] = ev
    f["events_total"] = sum(ev.values())
    done = next((x for x in data.traffic if x.get("ev") == "done"), {})
    streams = [x for x in data.traffic if x.get("ev") == "stream"]
    f["streams"] = len(streams)
    f["streams_intact"] = sum(1 for s in streams if s["ok"])
    f["bytes_verified"] = done.get("stream_bytes_verified")
    # Connections an RST ended (send_tcp_reset) and how long each slot took
    # to echo its first byte again (the `resets` invariant judges them).
    f["streams_reset"] = sum(1 for s in streams if is_reset(s))
    took = sorted(x["first_byte_s"] for x in data.traffic if x.get("ev") == "reconnect" and "first_byte_s" in x)
    f["reconnects"] = len(took)
    f["reconnect_first_byte_s"] = {"median": took[len(took) // 2], "worst": took[-1]} if took else None
    for k in ("short_ok", "short_fail", "udp_sent", "udp_lost", "ping_sent", "ping_lost"):
        f[k] = done.get(k)
    f["gateways"] = {}
    total = data.run.get("total_s", 0)
    for gw, rows in sorted(data.samples.items()):
        up = [x for x in rows if x.get("up") == 1]
        if not up:
            continue

        def at(t):
            return min(up, key=lambda x: abs(x["t"] - t))
        pick = [at(0), at(total / 2), up[-1]]
        f["gateways"][f"gw{gw}"] = {
            "rss_mib": [round(x["rss_kb"] / 1024, 1) for x in pick],
            "fds": [int(x["fds"]) for x in pick], "threads": [int(x["threads"]) for x in pick],
            "processes": len(instances(rows)),
            "api_ms_max": round(max(x.get("api_ms") or 0 for x in up), 1),
            "loop_gap_ms_max": round(max(x.get("loop_gap_ms") or 0 for x in up), 1),
            "flows_peak": int(max(x.get("flows") or 0 for x in up)),
            "cpu_ctl_s": round(sum(max(x["cpu_ctl_s"] for x in inst) - min(x["cpu_ctl_s"] for x in inst)
                                   for inst in instances(rows).values()), 1)}
    return f


def report(data, results, path):
    L = []
    ok = all(x.ok for x in results)
    L.append(f"# Soak report: seed {data.run.get('seed')}, {data.run.get('minutes')} min — "
             f"{'PASS' if ok else 'FAIL'}\n")
    L.append(f"Traffic {data.run.get('traffic_s')} s, then quiet to {data.run.get('total_s')} s; "
             f"{data.run.get('streams')} streams at {data.run.get('stream_rate')} B/s, "
             f"{data.run.get('conn_rate')} connections/s, {data.run.get('udp_flows')} UDP flows, ICMP "
             f"{data.run.get('ping_rate')}/s. Machine: {data.run.get('nproc')} CPUs, load "
             f"{' '.join(data.run.get('load_start', []))} at the start, {' '.join(data.run.get('load_end', []))} "
             f"at the end. Commit {data.run.get('commit', '?')}.\n")
    L.append("| invariant | result | |\n|---|---|---|")
    for x in results:
        st = "PASS" if x.ok and x.judged else ("FAIL" if not x.ok else "not judged")
        L.append(f"| [{x.name}](#{x.name}) | {st} | {x.title} |")
    L.append("")
    for x in results:
        st = "PASS" if x.ok and x.judged else ("FAIL" if not x.ok else "not judged")
        L.append(f"## {x.name}\n\n**{st}**: {x.title}.\n")
        for line in x.failures:
            L.append(f"- FAIL: {line}")
        for line in x.evidence:
            L.append(f"- {line}")
        L.append("")
    L.append("## Plots\n")
    for name in ("rss", "fds", "flows", "drops", "traffic"):
        if os.path.exists(os.path.join(os.path.dirname(path), f"{name}.svg")):
            L.append(f"![{name}]({name}.svg)\n")
    L.append("## Schedule as run\n")
    L.append("Times in seconds from traffic start (planned, started, ended).\n")
    L.append("| id | planned | start | end | kind | target | params | outcome |\n|---|---|---|---|---|---|---|---|")
    for e in sorted(data.events, key=lambda e: e["start"]):
        p = " ".join(f"{k}={v}" for k, v in e.get("params", {}).items() if k != "seed")
        extra = ""
        if "affected" in e:
            extra = f" (crossing it: {len(e['affected'].get('tcp', []))} streams)"
        L.append(f"| {e['id']} | {e['planned']:.1f} | {e['start']:.1f} | {e['end']:.1f} | {e['kind']} | "
                 f"{e['target']} | {p} | {e.get('outcome')}{extra} |")
    open(path, "w").write("\n".join(L) + "\n")
