#!/usr/bin/python3
"""scripts/bench.sh section `workers`: the table of
bench/multi_worker_bench's runs (one JSON line each, given as arguments after
the bench.json path, the machine text and the core count)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import emit  # noqa: E402


def main():
    json_path, machine, ncores = sys.argv[1:4]
    runs = [json.loads(a) for a in sys.argv[4:]]
    rows = []
    summary = {}
    for r in runs:
        cases = {c["name"]: c for c in r["cases"]}
        n = r["flows"]
        tag = f"{n:,} flows" + ("" if r["burst"] == 32 else f", bursts of {r['burst']}")
        s = {}

        def w(case, i):
            return next(x for x in cases[case]["workers"] if x["worker"] == i)

        def who(x):
            return (f"w{x['worker']} cpu {x['cpu']}: {x['cycles_per_packet']:.1f} cyc/pkt "
                    f"(median burst {x['cycles_per_packet_median_burst']:.1f}, reps "
                    f"{x['cpp_spread'][0]:.0f}-{x['cpp_spread'][1]:.0f}), {x['mpps']:.2f} Mpps, loop "
                    f"{x['loop_mpps']:.2f} Mpps, ran {100 * x['cpu_share']:.0f} % of the time")
        one = w("1w-cpu1", 1)
        s["one_worker_cpp"] = one["cycles_per_packet"]
        s["one_worker_mpps"] = one["mpps"]
        rows.append((f"1 worker alone, cpu 1 ({tag})", f"{one['cycles_per_packet']:.1f} cyc",
                     who(one) + f"; on cpu 0: {w('1w-cpu0', 0)['cycles_per_packet']:.1f} cyc/pkt"))
        sym = cases["2w-sym"]
        asym = cases["2w-asym"]
        for name, c in (("2 workers, symmetric RSS", sym), ("2 workers, returns on the other worker", asym)):
            rows.append((f"{name} ({tag})", f"{c['aggregate_mpps']:.2f} Mpps",
                         "aggregate (sum of TSC / cycles per packet); " +
                         "; ".join(who(x) for x in c["workers"]) +
                         f"; loop rates add up to {c['aggregate_loop_mpps']:.2f} Mpps here"))
        scale = sym["aggregate_mpps"] / one["mpps"]
        s["scaling_2w"] = scale
        rows.append((f"2 workers / 1 worker ({tag})", f"{scale:.2f}x",
                     "aggregate processBurst rate, symmetric RSS, vs the worker alone on cpu 1; 2.00 = linear"))
        cs = sum(x["cycles_per_packet"] for x in sym["workers"]) / 2
        ca = sum(x["cycles_per_packet"] for x in asym["workers"]) / 2
        s["asym_over_sym"] = ca / cs
        rows.append((f"asymmetric / symmetric, cyc/pkt ({tag})", f"{ca / cs:.3f}",
                     f"{ca:.1f} vs {cs:.1f} (mean of both workers); same packets per worker, "
                     f"each flow's entry line written by both cores; 1.000 = no cross-core cost"))
        s0 = w("2w-sym", 0)
        for c in r["cases"]:
            if "control" not in c:
                continue
            k = c["control"]
            x = next(x for x in c["workers"] if x["worker"] == 0)
            ratio = x["cycles_per_packet"] / s0["cycles_per_packet"]
            s[f"ctl{k['rate']}_w0_cpp_ratio"] = ratio
            s[f"ctl{k['rate']}_cpu_pct"] = k["cpu_pct"]
            rows.append((f"control {k['rate']}/s on cpu 0: worker 0 ({tag})", f"{ratio:.3f}",
                         f"worker 0 cyc/pkt vs 2w-sym ({x['cycles_per_packet']:.1f} vs "
                         f"{s0['cycles_per_packet']:.1f}); control thread took {k['cpu_pct']:.2f} % "
                         f"of cpu 0 ({k['publications_per_s']:.0f} publications/s, build "
                         f"{k['build_us']:.1f} us median); worker 0 preempted "
                         f"{x['preempted_per_s']:.0f}/s (2w-sym: {s0['preempted_per_s']:.0f}/s)"))
        if r["burst"] == 32:
            rows.append((f"returns on another queue by outer RSS ({tag})",
                         f"{100 * r['returns_crossed_by_outer_rss']:.1f} %",
                         "share of flows whose Geneve return (appliance -> gateway, hashed on the "
                         "outer header) lands on another of 2 queues than its forward"))
        la = r["load_avg_1m"]
        rows.append((f"load average ({tag})", f"{min(la):.1f}-{max(la):.1f}",
                     f"1-minute load average, {ncores} cores shared with everything else"))
        summary[tag] = s
    r0 = runs[0]
    cond = (f"bench/multi_worker_bench: one dp::FlowTable and snapshot shared by W = 1 or 2 "
            f"workers (main lcore on cpu 0 = worker 0, lcore 1 on cpu 1 = worker 1, EAL --no-huge), "
            f"each with its own WorkerState, mbuf pool and shuffled packet list: per established "
            f"flow one forward packet (64 B UDP/IPv4 -> aws Geneve to 3 appliances) and its return "
            f"({r0['return_frame_bytes']} B Geneve back, unwrapped to the router); flows split by "
            f"the symmetric Toeplitz key (6d5a) over 2 queues; bursts of {r0['burst']}, frames "
            f"copied from templates untimed, processBurst timed (TSC {r0['tsc_hz'] / 1e9:.2f} GHz); "
            f"cyc/pkt = mean over bursts under 8x the median burst (a burst during which the "
            f"thread was switched out is left out), Mpps = TSC / that; loop = packets / wall time "
            f"(untimed copies and preemption included); cases rotate, {r0['reps']} reps of "
            f"{r0['seconds']} s, medians; control = a std::thread pinned to cpu 0 publishing "
            f"snapshots as gwlbd does (buildSnapshot with the Maglev cache, swap, RCU, free). "
            f"Both workers, the control thread and every other process on this machine share its "
            f"{ncores} cores: absolute rates are low and vary; compare ratios within one run")
    emit("workers", {"runs": runs, "summary": summary}, rows, cond, json_path, machine,
         width=52, value_width=12)


if __name__ == "__main__":
    main()
