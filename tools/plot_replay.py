#!/usr/bin/python3
"""Draws a gwlb-replay run: traffic per appliance over capture time, every event
and health change as a labelled vertical line, and the flows each event moved.

usage: tools/plot_replay.py OUT_DIR/summary.json --out FILE.svg [--out FILE.png]
                            [--title TEXT] [--bytes]

Reads summary.json's "timeseries" (docs/replay.md) and writes each --out file
(the format follows the extension: .svg, .png, .pdf). Needs Debian's
python3-matplotlib (/usr/bin/python3; scripts/setup.sh installs it).

In the SVG, each appliance's line is a group with id "traffic-ADDRESS", the
routers' input "input", each marked time "mark-N" (marks at the same
capture time share one line and one label).
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text in the SVG (searchable, small)
matplotlib.rcParams["svg.hashsalt"] = "gwlb-replay"  # the same ids on every run
import matplotlib.pyplot as plt  # noqa: E402

# Colours of the marks by kind (and by action for health).
MARK_COLOURS = {"unhealthy": "#d62728", "healthy": "#2ca02c", "event": "#1f4e9c",
                "lifecycle": "#7f7f7f", "region": "#ff7f0e"}


def mark_colour(m):
    if m["kind"] == "health":
        return MARK_COLOURS[m["action"]]
    return MARK_COLOURS.get(m["kind"], "#000000")


def short_label(m):
    """A mark's label, short enough to stand on a line."""
    label = m["label"]
    if m["kind"] == "region":
        # "listener web: new flows fw-east -> fw-west (every region ...)" -> without the why.
        label = label.split(" (")[0]
    if m.get("flows_moved"):
        label += " (%d flows moved)" % m["flows_moved"]
    return label


def group_marks(marks):
    """[(at_s, [marks])] with marks at the same capture time together."""
    groups = []
    for m in marks:
        if groups and abs(groups[-1][0] - m["at_s"]) < 1e-9:
            groups[-1][1].append(m)
        else:
            groups.append((m["at_s"], [m]))
    return groups


def plot(summary, outs, title, use_bytes):
    ts = summary.get("timeseries")
    if ts is None:
        raise SystemExit("plot_replay: no timeseries in the summary (a gwlb-replay too old to write one?)")
    dt = ts["interval_s"]
    t = [x + dt / 2 for x in ts["t_s"]]  # plot each interval at its middle
    key, unit = ("bytes", "bytes/s") if use_bytes else ("packets", "packets/s")
    events = [e for e in summary.get("events", []) if e.get("applied")]

    group = {a["address"]: a["group"] for a in summary.get("appliances", [])}
    fig, (ax, axm) = plt.subplots(2, 1, figsize=(12, 6.5), sharex=True,
                                  gridspec_kw={"height_ratios": [4, 1.3], "hspace": 0.08})
    for addr in sorted(ts["appliances"], key=lambda a: tuple(int(x) for x in a.split("."))):
        y = [v / dt for v in ts["appliances"][addr][key]]
        (line,) = ax.plot(t, y, linewidth=1.6, label=addr + (" (%s)" % group[addr] if addr in group else ""))
        line.set_gid("traffic-" + addr)
    y = [v / dt for v in ts["input"][key]]
    (line,) = ax.plot(t, y, linewidth=1.0, linestyle=":", color="#555555", label="input (routers)")
    line.set_gid("input")
    ax.set_ylabel("to each appliance, " + unit)
    top = max([1] + y + [v / dt for s in ts["appliances"].values() for v in s[key]])
    ax.set_ylim(bottom=0, top=top * 1.5)  # room for the mark labels
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="sent to",
              title_fontsize=8, frameon=False)
    end = ts["t_s"][-1] + dt
    ax.set_xlim(0, end)

    # Marks: one vertical line per capture time, its labels at the top; a label
    # close to an earlier one goes one row lower, and labels in the right third
    # extend to the left of their line.
    placed = []  # (x as a fraction of the axis, row)
    for i, (at, group) in enumerate(group_marks(ts["marks"])):
        colour = mark_colour(group[0])
        for a in (ax, axm):
            ln = a.axvline(at, color=colour, linewidth=1.2, linestyle="--", alpha=0.85)
            if a is ax:
                ln.set_gid("mark-%d" % i)
        text = "\n".join(short_label(m) for m in group[:4])
        if len(group) > 4:
            text += "\n(+%d more)" % (len(group) - 4)
        x = at / end
        right = x > 0.62
        lines = min(len(group), 4) + (len(group) > 4)
        busy = {r for px, r in placed if abs(px - x) < 0.36}
        row = next(r for r in range(len(placed) * 5 + 1) if not busy & set(range(r, r + lines)))
        placed += [(x, r) for r in range(row, row + lines)]
        ax.annotate("%g s: %s" % (round(at, 3), text), xy=(at, 1), xycoords=("data", "axes fraction"),
                    xytext=(-3 if right else 3, -4 - 11 * row), textcoords="offset points", va="top",
                    ha="right" if right else "left", fontsize=7.5, color=colour,
                    bbox=dict(boxstyle="round,pad=0.2", fc="white", ec=colour, alpha=0.9, lw=0.6))

    # Flows moved per event.
    if events:
        xs = [e["at_s"] for e in events]
        moved = [sum(e.get("flows_moved", {}).values()) for e in events]
        bars = axm.bar(xs, moved, width=max(end / 120, dt * 0.6), color="#1f4e9c")
        for x, v in zip(xs, moved):
            axm.annotate(str(v), xy=(x, v), xytext=(4, 2), textcoords="offset points", ha="left",
                         fontsize=8)
        for i, b in enumerate(bars):
            b.set_gid("moved-%d" % i)
        axm.set_ylim(0, max(moved + [1]) * 1.35)
    else:
        axm.text(0.5, 0.5, "no events", transform=axm.transAxes, ha="center", va="center",
                 color="#777777")
    axm.set_ylabel("flows moved\nper event")
    axm.set_xlabel("capture time, s (interval %g s)" % dt)
    axm.grid(True, alpha=0.3)

    fig.suptitle(title or "gwlb-replay: traffic per appliance", fontsize=11)
    fig.subplots_adjust(left=0.08, right=0.85, top=0.93, bottom=0.09)
    for out in outs:
        # No date in an SVG or PDF: the same run draws the same file.
        meta = {"Date": None} if out.endswith((".svg", ".pdf")) else None
        fig.savefig(out, dpi=110, metadata=meta)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summary", help="summary.json of a gwlb-replay run")
    ap.add_argument("--out", action="append", required=True, help="output file (.svg, .png, .pdf)")
    ap.add_argument("--title")
    ap.add_argument("--bytes", action="store_true", help="plot bytes/s rather than packets/s")
    a = ap.parse_args()
    try:
        summary = json.load(open(a.summary))
    except (OSError, ValueError) as e:
        raise SystemExit("plot_replay: %s: %s" % (a.summary, e))
    plot(summary, a.out, a.title, a.bytes)
    for out in a.out:
        print("plot_replay: wrote " + out)


if __name__ == "__main__":
    sys.exit(main())
