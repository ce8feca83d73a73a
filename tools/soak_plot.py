"""The soak's plots (tools/soak_check.py calls plot_all): RSS, open fds and
threads, flow table, drops and traffic over the run, one SVG each, with every
event drawn as a band of its lane's colour (gateway stops and kills as lines),
so a flat line looks flat and a step sits next to its cause (runs over 20
minutes: a strip of ticks per lane along the bottom instead).
"""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LANE_COLOURS = {"appliance": "#1f77b4", "gateway": "#d62728", "config": "#2ca02c", "network": "#9467bd",
                "hostile": "#ff7f0e"}
GW_COLOURS = {1: "#333333", 2: "#1f77b4", 3: "#2ca02c"}


def _events(ax, data):
    seen = set()
    if data.run.get("total_s", 0) > 1200:
        # An hour has over a thousand events: each lane a strip of ticks along
        # the bottom (a tick per event, its length the event's), not bands.
        lanes = list(LANE_COLOURS)
        for e in data.events:
            if e.get("outcome", "").startswith("skipped") or e["lane"] not in LANE_COLOURS:
                continue
            i = lanes.index(e["lane"])
            label = e["lane"] if e["lane"] not in seen else None
            seen.add(e["lane"])
            ax.plot([e["start"], max(e["end"], e["start"] + 2)], [0.02 + 0.025 * i] * 2, lw=3,
                    color=LANE_COLOURS[e["lane"]], transform=ax.get_xaxis_transform(), label=label,
                    solid_capstyle="butt")
        traffic = data.run.get("traffic_s")
        if traffic:
            ax.axvline(traffic, color="black", lw=1, ls="--")
        return
    for e in data.events:
        if e.get("outcome", "").startswith("skipped"):
            continue
        c = LANE_COLOURS.get(e["lane"], "#999999")
        label = e["lane"] if e["lane"] not in seen else None
        seen.add(e["lane"])
        if e["kind"] in ("gw_kill", "gw_term", "gw_restart"):
            ax.axvline(e["start"], color=c, lw=0.8, alpha=0.7, label=label)
        elif e["end"] - e["start"] < 0.5:
            ax.axvline(e["start"], color=c, lw=0.5, alpha=0.4, ls=":", label=label)
        else:
            ax.axvspan(e["start"], e["end"], color=c, alpha=0.07, label=label)
    traffic = data.run.get("traffic_s")
    if traffic:
        ax.axvline(traffic, color="black", lw=1, ls="--")
        ax.text(traffic, 1.0, " traffic stops", transform=ax.get_xaxis_transform(), fontsize=7, va="top")


def _series(data, col, scale=1.0):
    out = {}
    for gw, rows in data.samples.items():
        out[gw] = ([r["t"] for r in rows if r.get("up") == 1 and r.get(col) is not None],
                   [r[col] * scale for r in rows if r.get("up") == 1 and r.get(col) is not None])
    return out


def _fig(title, ylabel):
    fig, ax = plt.subplots(figsize=(11, 3.6))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("seconds from traffic start")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    return fig, ax


def _save(fig, ax, data, path):
    _events(ax, data)
    ax.legend(fontsize=7, loc="upper left", ncol=4)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_all(data, out):
    if not data.samples:
        return
    fig, ax = _fig("gwlbd resident memory (a restarted gateway starts a new line)", "RSS (MiB)")
    for gw, (t, v) in _series(data, "rss_kb", 1 / 1024).items():
        ax.plot(t, v, ".", ms=1.5, color=GW_COLOURS.get(gw), label=f"gw{gw}")
    _save(fig, ax, data, os.path.join(out, "rss.svg"))

    fig, ax = _fig("gwlbd open file descriptors (solid) and threads (dashed)", "count")
    for gw, (t, v) in _series(data, "fds").items():
        ax.plot(t, v, "-", lw=0.8, color=GW_COLOURS.get(gw), label=f"gw{gw} fds")
    for gw, (t, v) in _series(data, "threads").items():
        ax.plot(t, v, "--", lw=0.8, color=GW_COLOURS.get(gw))
    _save(fig, ax, data, os.path.join(out, "fds.svg"))

    fig, ax = _fig("flow table entries per gateway", "entries")
    for gw, (t, v) in _series(data, "flows").items():
        ax.plot(t, v, "-", lw=0.8, color=GW_COLOURS.get(gw), label=f"gw{gw}")
    _save(fig, ax, data, os.path.join(out, "flows.svg"))

    fig, ax = _fig("drops per second, all gateways (background: the shared segment's ARP and flooding)",
                   "drops/s")
    import soak_check
    per = {"background": {}, "hostile frames": {}, "other": {}}
    for gw, rows in data.samples.items():
        cols = [c for c in rows[0] if c.startswith("drop_")]
        for c in cols:
            cls = "background" if c in soak_check.BACKGROUND else (
                "hostile frames" if c in soak_check.HOSTILE_FRAMES else "other")
            for t, n in soak_check.deltas(rows, c):
                per[cls][round(t)] = per[cls].get(round(t), 0) + n
    for cls, series in per.items():
        if series:
            ts = sorted(series)
            ax.plot(ts, [series[t] for t in ts], ".", ms=2.5, label=cls)
    ax.set_yscale("symlog")
    _save(fig, ax, data, os.path.join(out, "drops.svg"))

    ticks = [x for x in data.traffic if x.get("ev") == "tick"]
    if ticks:
        fig, ax = _fig("traffic: stream echo (kB/s), short connections done/s, failures/s", "per second")
        t = [x["t"] for x in ticks]
        ax.plot(t, [x["stream_rx"] / 1000 for x in ticks], "-", lw=0.8, label="streams kB/s echoed")
        ax.plot(t, [x["short_ok"] for x in ticks], "-", lw=0.8, label="short connections ok/s")
        fails = [(x["t"], x.get("short_fail", 0) + x.get("udp_lost", 0) + x.get("ping_lost", 0)) for x in ticks]
        fails = [(a, b) for a, b in fails if b]
        ax.plot([a for a, _ in fails], [b for _, b in fails], "x", ms=5, color="red",
                label=f"failed or lost/s ({sum(b for _, b in fails)} in all)")
        hops = data.samples.get(1, [])
        if hops:
            ax2 = ax.twinx()
            ax2.step([r["t"] for r in hops], [len(str(r.get("nexthops") or "").replace(".0", "")) for r in hops],
                     where="post", color="grey", lw=0.8)
            ax2.set_ylabel("gateways in the router's route", fontsize=8)
            ax2.set_ylim(0, 3.5)
        _save(fig, ax, data, os.path.join(out, "traffic.svg"))
