"""The soak's `partners` invariant (tools/soak_check.py; docs/testing.md "Soak"):
appliances that hand flows back (appliance bypass) and a mirror group's
passive tool, under the same faults as everything else.

  bypass  run.json "appliance_bypass" names the appliances started with
          --bypass-after-bytes and the listener that allows it: they asked
          (their /stats bypass_asked, per round of appliance_flows.jsonl), no
          other appliance did, the gateways granted requests and sent packets
          straight back (bypass_granted, appliance_bypassed), and refused none
          for a listener that does not allow it or a malformed option. That
          every bypassed stream still verified every byte is the `streams`
          invariant's.
  mirror  run.json "mirror" names the class, the group and its tool: the
          gateways sent copies (mirrored), lost none for want of an mbuf or for
          size (the class truncates), and the tool wrote copies of that one
          class only, never more than the gateways sent (each gwlbd process's
          count at its last sample, with a second's worth for a process that
          ended before the run's end; run.json tool_stats, read at the end).
"""
from soak_data import deltas, instances, not_read


def _sum(data, col):
    return sum(n for rows in data.samples.values() for _, n in deltas(rows, col))


def _sent(data, col):
    """(what every gwlbd process counted, by its last sample: its counters
    start at 0; the most one of them can have counted after its last sample,
    a second's worth at its highest rate, for each that ended early)."""
    total = slack = 0.0
    end = max((r["t"] for rows in data.samples.values() for r in rows), default=0)
    for rows in data.samples.values():
        for pid, inst in instances(rows).items():
            vals = [r[col] for r in inst if r.get(col) is not None]
            if not vals:
                continue
            total += max(vals)
            if inst[-1]["t"] < end - 2:  # stopped or killed before the run's end
                slack += max((n for _, n in deltas(inst, col)), default=0)
    return total, slack


def _bypass(data, r, cfg):
    apps = cfg.get("apps", {})
    asked = {}
    for rd in data.rounds:
        for app, st in rd.get("apps", {}).items():
            asked[app] = asked.get(app, 0) + (st.get("bypass_asked") or 0)
    granted, bypassed = _sum(data, "bypass_granted"), _sum(data, "appliance_bypassed")
    refused = {c: _sum(data, c) for c in ("bypass_refused_not_allowed", "bypass_refused_bad_option",
                                          "bypass_refused_not_flow_appliance")}
    r.note(f"bypass: {', '.join(f'{a} after {n} bytes' for a, n in sorted(apps.items()))} "
           f"(listener {cfg.get('listener')}, max_seconds {cfg.get('max_seconds')}); asked "
           + ", ".join(f"{a} {n}" for a, n in sorted(asked.items()) if n) + f"; gateways granted {granted:.0f}, "
           f"bypassed {bypassed:.0f} packets; refused {', '.join(f'{k[15:]} {v:.0f}' for k, v in refused.items())}")
    for app, n in sorted(asked.items()):
        if n and app not in apps:
            r.fail(f"{app} asked for {n} bypasses without --bypass-after-bytes")
    if data.finished and not any(asked.get(a) for a in apps):
        r.fail("no appliance asked for a bypass: the invariant proved nothing")
    elif data.finished and (not granted or not bypassed):
        r.fail(f"the appliances asked but the gateways granted {granted:.0f} and bypassed {bypassed:.0f} packets")
    for c in ("bypass_refused_not_allowed", "bypass_refused_bad_option"):
        if refused[c]:
            r.fail(f"{c} +{refused[c]:.0f}: every request came from an appliance of a listener that "
                   f"allows it, with a well-formed option")


def _mirror(data, r, cfg):
    mirrored = _sum(data, "mirrored")
    lost = {c: _sum(data, c) for c in ("mirror_drop_no_tool", "mirror_drop_no_mbuf", "mirror_drop_too_big")}
    tool = data.run.get("tool_stats") or {}
    r.note(f"mirror: class {cfg.get('class')} to group {cfg.get('group')} ({cfg.get('tool')}, 1 in "
           f"{cfg.get('sample')}): gateways sent {mirrored:.0f} copies, not sent "
           + ", ".join(f"{k[12:]} {v:.0f}" for k, v in lost.items()))
    if data.finished and not mirrored:
        r.fail("the gateways sent no copy: the invariant proved nothing")
    for c in ("mirror_drop_no_mbuf", "mirror_drop_too_big"):
        if lost[c]:
            r.fail(f"{c} +{lost[c]:.0f}: copies lost where none should be (the pool, the class's truncate)")
    if not data.finished:
        return
    if "error" in tool or "classes" not in tool:
        r.fail(f"the tool's /stats was not read at the end: {tool.get('error', 'no mirror_sink in it')}")
        return
    classes = tool["classes"]
    copies = sum(c.get("forward", 0) + c.get("reverse", 0) for c in classes.values())
    r.note(f"{cfg.get('tool')} wrote {copies} copies (class ids {', '.join(sorted(classes)) or 'none'}), "
           f"write errors {tool.get('write_errors', 0)}, not mirror copies {tool.get('not_mirror', 0)}")
    if not copies:
        r.fail(f"{cfg.get('tool')} wrote no copy")
    # The bound: what each gwlbd process counted (its sample deltas miss what a
    # restarted one sent before its first sample).
    sent, slack = _sent(data, "mirrored")
    if copies > sent + slack:
        r.fail(f"{cfg.get('tool')} wrote {copies} copies, more than the gateways sent ({sent:.0f}, "
               f"+{slack:.0f} for processes that ended before their last sample)")
    if len(classes) > 1:
        r.fail(f"copies of {len(classes)} classes reached the tool: only {cfg.get('class')} is mirrored")
    if tool.get("write_errors") or tool.get("not_mirror"):
        r.fail("the tool got packets that were not copies, or could not write them")


def judge(data, r):
    """Fills r (soak_check.Result) with the partners invariant's verdict and evidence."""
    bypass, mirror = data.run.get("appliance_bypass") or {}, data.run.get("mirror") or {}
    if not bypass and not mirror:
        r.judged = False
        r.note("not judged: the run had no appliance bypass and no mirror group")
        return r
    if not_read(data, r, "mirror"):
        return r
    if bypass:
        _bypass(data, r, bypass)
    if mirror:
        _mirror(data, r, mirror)
    return r
