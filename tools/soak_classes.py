"""The soak's traffic-class invariant (tools/soak_check.py "classes"; docs/testing.md
"Soak"): with the lab's two listeners and a bypass class, no long-lived flow is
ever seen on an appliance of another class's listener, and no bypassed flow on
any appliance. run.json "classes" gives each class's appliances (none: bypassed)
and "bypass_port" the bypassed streams' server port; each round of
appliance_flows.jsonl names the class of every flow the appliances saw.
"""


def judge(data, r):
    """Fills r (soak_check.Result) with the classes invariant's verdict and evidence."""
    allowed = {c: set(apps) for c, apps in (data.run.get("classes") or {}).items()}
    if not allowed:
        r.judged = False
        r.note("not judged: the run had no traffic classes (a lab of one listener)")
        return r
    carried = {}  # class -> {appliance: {flow keys}}
    for rd in data.rounds:
        classes = rd.get("classes", {})
        for app, st in rd["apps"].items():
            for key, (ab, ba, _) in (st.get("flows") or {}).items():
                if not ab + ba:
                    continue
                cls = classes.get(key)
                if cls not in allowed:
                    r.fail(f"flow {key} on {app} in the round {rd['t0']:.1f}-{rd['t1']:.1f} s has no known class "
                           f"({cls!r})")
                    continue
                carried.setdefault(cls, {}).setdefault(app, set()).add(key)
                if app not in allowed[cls]:
                    what = "a bypassed flow reached" if not allowed[cls] else "reached"
                    r.fail(f"flow {key} of class {cls} {what} {app} in the round {rd['t0']:.1f}-{rd['t1']:.1f} s "
                           f"({cls}'s appliances: {', '.join(sorted(allowed[cls])) or 'none'})")
    for cls, apps in sorted(allowed.items()):
        on = carried.get(cls, {})
        if apps:
            r.note(f"{cls}: {len(set().union(*on.values())) if on else 0} long-lived flows, on "
                   + (", ".join(f"{a} {len(k)}" for a, k in sorted(on.items())) or "no appliance"))
            if not on and data.rounds:
                r.fail(f"no flow of class {cls} was seen on any appliance: the invariant proved nothing for it")
            continue
        # A bypassed class: its streams ran (the streams invariant checks them intact).
        port = data.run.get("bypass_port")
        bypassed = [s for s in data.traffic if s.get("ev") == "stream" and port and s.get("dport") == port]
        r.note(f"{cls} (bypassed, server port {port}): {len(bypassed)} streams, "
               f"{sum(1 for s in bypassed if s['ok'])} intact; "
               + (f"seen on {', '.join(sorted(on))}" if on else "seen on no appliance"))
        if not bypassed and data.finished:
            r.fail(f"no stream of the bypassed class {cls} ran: the invariant proved nothing for it")
    return r
