"""The soak's invariants on the long-lived streams and flows (tools/soak_check.py
runs them; docs/testing.md "Soak", "Invariants"): `streams` (every connection
intact or ended by an RST), `resets` (each RST on an appliance out of service,
and its slot back within RECONNECT_MAX_S) and `appliance` (a flow keeps its
appliance), with what they share: the appliances that saw a flow, whether an
appliance was out of service, a gateway that came back without the fleet's
table.
"""
from soak_data import carriers, deltas, path_gateways


def _check():
    """tools/soak_check.py, for its primitives (Result, window, explaining, the
    event kinds): it imports this module before defining them."""
    import soak_check
    return soak_check


# Reset to the first verified byte of the stream's next connection. The
# client reconnects at once and its SYN goes to an appliance in service (a SYN
# is never reset); 5 s allows a lost SYN and its retransmissions at 1 s and 3 s
# (Linux's initial RTO) on a path a fault is cutting for a moment, and the
# machine's load. The target is 1 s: the report gives each figure.
RECONNECT_MAX_S = 5.0
# A gateway's view of an appliance whose TCP flows it may reset: failed,
# held down, drained or removed; None: not in its servers list at all.
OUT_OF_SERVICE = {"unhealthy", "dampened", "drained", "removed", None}
RESET_CAUSE = {"app_fail": "on_unhealthy", "drain": "on_deregistration", "remove": "on_deregistration"}


def is_reset(s):
    """A stream connection ended by an RST (older runs: by its error text)."""
    return bool(s.get("reset")) or (not s.get("ok") and "reset by peer" in (s.get("error") or ""))


def resets_on(data, kind):
    """send_tcp_reset covers kind's moves in this run (run.json tcp_reset)."""
    return bool((data.run.get("tcp_reset") or {}).get(RESET_CAUSE.get(kind, "-")))


def drain_over(data, e):
    """When a drain or removal's drain runs out: its timeout (a drain's
    params), the group's connection_draining for a removal (run.json drain_s,
    the lab's 10 s), less 1.5 s as every window has. A flow goes on while
    its appliance drains (send_tcp_reset.on_deregistration: reset once the
    drain is over)."""
    if e["kind"] == "drain":
        return e["start"] + (e.get("params") or {}).get("timeout", 0) - 1.5
    if e["kind"] == "remove":
        return e["start"] + data.run.get("drain_s", 10) - 1.5
    return e["start"] - 1.5


def out_of_service(data, app, t):
    """Why app was out of service around t: a scheduled failure, or a drain
    or removal whose drain had run out, whose window holds t, else a
    gateway's sample naming it so (within 2 s before to 1 s after); None
    when it stayed in service."""
    C = _check()
    ev = [e for e in C.explaining(data, t, C.MOVES, app=app) if e.get("target") == app and t >= drain_over(data, e)]
    if ev:
        return f"{ev[0]['kind']} of {app} at {ev[0]['start']:.1f}-{ev[0]['end']:.1f} s"
    for gw, rows in sorted(data.samples.items()):
        for row in rows:
            if row.get("up") == 1 and t - 2 <= row["t"] <= t + 1 and f"{app}_state" in row:
                st = row.get(f"{app}_state")
                st = None if st is None else str(st).split("/")[0]
                if st in OUT_OF_SERVICE:
                    return f"gw{gw} saw {app} {st or 'gone'} at {row['t']:.0f} s (no scheduled fault)"
    return None


def came_back_cold(data, key, lo, t1):
    """A gateway that came back without the fleet's table (its warm start not
    done) and carried flow key (or was on its path) between lo and t1, or a
    refresh interval before: the event, or None."""
    C = _check()
    heal = data.schedule.get("idle_timeout_s", 60) / 3 + 15

    def cold(e):
        return e["kind"] in ("gw_term", "gw_kill", "gw_restart") and \
            (e.get("warm_start") or {}).get("state") not in (None, "done")
    came = [e for e in data.events if cold(e) and C.window(e)[0] - 5 <= t1 and lo <= e["end"] + heal]
    via = path_gateways(data, key, lo - 6, t1)
    did = carriers(data, key, lo - 6, t1)
    on_path = None if via is None and did is None else (via or set()) | (did or set())
    if on_path is not None:
        came = [e for e in came if int(e["target"][2:]) in on_path]
    return came[0] if came else None


def apps_seen(data, key, t0, t1, both_ways=False):
    """The appliances whose per-flow counters saw flow key in the rounds
    overlapping [t0, t1] (both_ways: packets each way, i.e. the connection
    ran through it, not only a SYN that went on elsewhere)."""
    out = set()
    for rd in data.rounds:
        if rd["t1"] < t0 or rd["t0"] > t1:
            continue
        for app, st in rd["apps"].items():
            c = (st.get("flows") or {}).get(key)
            if c and (c[0] and c[1] if both_ways else c[0] + c[1]):
                out.add(app)
    return out


def surely_out(data, app, t):
    """A scheduled failure, drain or removal of app that had certainly taken
    it out of every gateway's choice for new flows at t: from its start (2 s
    later for a failure: the health window) to its end."""
    C = _check()
    return next((e for e in data.events if e["kind"] in C.MOVES and e["target"] == app and
                 not e.get("outcome", "").startswith("skipped") and
                 e["start"] + (2.0 if e["kind"] == "app_fail" else 0.5) <= t <= e["end"]), None)



def check_streams(data):
    C = _check()
    r = C.Result("streams", "every stream intact unless it crossed a gateway at its SIGKILL")
    streams = [x for x in data.traffic if x.get("ev") == "stream"]
    kills = [e for e in data.events if e["kind"] == "gw_kill" and "affected" in e]
    ok = [s for s in streams if s["ok"]]
    closed = {s["id"] for s in streams}
    still_open = [x for x in data.traffic if x.get("ev") == "open" and x["id"] not in closed]
    if still_open and not data.finished:
        r.note(f"{len(still_open)} streams still open (the run goes on)")
    for s in still_open[:10] if data.finished else []:
        r.fail(f"stream {s['id']} (port {s['sport']}) opened at {s['t']:.1f} s and never closed: the traffic "
               f"client died or was killed")
    if data.finished and data.run.get("client_exit") != 0:
        x = data.run.get("client_exit", "?")
        r.fail("the traffic client's exit status was never recorded" if x == "?" else
               "the traffic client was still running at the run's end (killed)" if x is None else
               f"the traffic client exited with status {x}")
    verified = sum(s["received"] for s in ok)
    r.note(f"{len(streams)} streams, {len(ok)} intact end to end; {verified / 1e6:.1f} MB echoed and compared "
           f"byte by byte (intact streams)")
    if not streams and not still_open:
        r.fail("no stream ran")
    excused = 0
    stateful = set(data.run.get("stateful") or [])
    resets = [s for s in streams if not s["ok"] and is_reset(s)]
    if resets:
        r.note(f"{len(resets)} connections ended by an RST (judged by `resets`)")
    for s in streams:
        if s["ok"] or is_reset(s):
            continue
        by = [e for e in kills if s["sport"] in e["affected"].get("tcp", []) and e["stopped_at"] <= s["t_close"]]
        if by:
            excused += 1
            r.note(f"stream {s['id']} (port {s['sport']}) broke at {s['t_close']:.1f} s ({s['error']}): it crossed "
                   f"gw{by[0]['target'][2:]} when that was killed at {by[0]['stopped_at']:.1f} s (allowed)")
        else:
            apps = sorted(apps_seen(data, f"6:{s['sport']}", s["t_open"], s["t_close"])) if s["sport"] else []
            on = f"; through {', '.join(a + (' (stateful)' if a in stateful else '') for a in apps)}" if apps else ""
            r.fail(f"stream {s['id']} (port {s['sport']}) broke at {s['t_close']:.1f} s without an RST: {s['error']} "
                   f"(sent {s['sent']}, echoed {s['received']}{on}); no kill of a gateway it crossed explains it")
    crossed = sum(len(e["affected"].get("tcp", [])) for e in kills)
    r.note(f"{len(kills)} SIGKILLs hit {crossed} streams in flight through the killed gateway; "
           f"{excused} of those broke")
    # What the stateful appliances' firewalls refused as not belonging to a
    # connection they saw start (drop_invalid, a running total per round):
    # evidence beside the streams, not judged (a late segment after a
    # connection closed counts there too).
    last, invalid = {}, []
    for rd in data.rounds:
        for app, st in rd["apps"].items():
            n = (st.get("nft") or {}).get("drop_invalid")
            if n is None:
                continue
            if app in last and n > last[app]:
                ev = sorted({e["kind"] + " " + e["target"] for e in data.events
                             if e["kind"] in C.MOVES | C.GATEWAY_KINDS and C.window(e)[0] <= rd["t1"]
                             and rd["t0"] <= C.window(e)[1]})
                invalid.append((app, rd["t0"], rd["t1"], n - last[app], ev))
            last[app] = n
    if last:
        r.note(f"stateful appliances' firewalls dropped {sum(x[3] for x in invalid)} segments of connections whose "
               f"start they never saw (drop_invalid) while traffic was followed: " + ("; ".join(
                   f"{a} {n} in {t0:.0f}-{t1:.0f} s" + (f" ({', '.join(ev)})" if ev else " (no fault)")
                   for a, t0, t1, n, ev in invalid[:12]) or "none"))
    stalls = sorted(s["max_stall"] for s in streams)
    if stalls:
        r.note(f"longest pause in a stream's echo: median {stalls[len(stalls) // 2]:.2f} s, worst {stalls[-1]:.2f} s")
    return r


def appliance_timeline(data):
    """{flow key: [(t0, t1, {apps that saw it})]} over the collection rounds.
    A stream's key is its client port ("6:PORT"); a port that carried more
    than one of the streams' connections (a reconnect from a port the kernel
    gave an earlier stream) gets one key per connection ("6:PORT#ID"), so a
    new connection on another appliance is no change of appliance. Until a
    TCP connection is first seen both ways on an appliance, an appliance that
    saw it one way only (a SYN that went on elsewhere: the gateways' health
    views differ for a moment) is not where it ran."""
    tl, started = {}, set()
    for rd in data.rounds:
        seen, both = {}, {}
        for app, st in rd["apps"].items():
            for key, (ab, ba, _) in (st.get("flows") or {}).items():
                if ab + ba:
                    seen.setdefault(key, set()).add(app)
                if ab and ba:
                    both.setdefault(key, set()).add(app)
        for key, apps in seen.items():
            if key.startswith("6:") and key not in started:
                if key not in both:
                    continue
                apps = both[key]
                started.add(key)
            tl.setdefault(key, []).append((rd["t0"], rd["t1"], apps))
    conns = {}
    for x in data.traffic:
        if x.get("ev") == "stream" and x.get("sport"):
            conns.setdefault(f"6:{x['sport']}", []).append(x)
    for key, cs in conns.items():
        if len(cs) < 2 or key not in tl:
            continue
        rounds = tl.pop(key)
        for c in cs:
            mine = [rd for rd in rounds if rd[1] > c["t_open"] and rd[0] < c["t_close"]]
            if mine:
                tl[f"{key}#{c['id']}"] = mine
    return tl


def check_appliance(data):
    C = _check()
    r = C.Result("appliance", "a flow keeps its appliance unless that appliance was taken out of service")
    tl = appliance_timeline(data)
    gaps = [rd for rd in data.rounds if any("error" in st for st in rd["apps"].values())]
    if gaps:
        r.note(f"{len(gaps)} collection rounds missed an appliance (counted as gaps, not moves)")
    changes = moved_ok = cold_n = in_fault = 0
    heal = data.schedule.get("idle_timeout_s", 60) / 3 + 15  # as `agree` allows

    for key, rounds in sorted(tl.items()):
        tcp = key.startswith("6:")
        cur, prev = None, None
        for t0, t1, apps in rounds:
            # A round that saw the flow on two appliances holds a move at an
            # unknown instant in it: a change found in the next round may
            # have happened there, and its causes (the path then) count.
            lo = prev[0] if prev and len(prev[2]) > 1 and prev[1] >= t0 - 1 else t0
            prev = (t0, t1, apps)
            if cur is None:
                cur = next(iter(apps)) if len(apps) == 1 else None
                continue
            if apps == {cur}:
                continue
            new = next(iter(apps - {cur}), None)
            if new is None:
                continue
            changes += 1
            mid = (lo + t1) / 2
            out = [e for e in data.events if e["kind"] in C.MOVES and e["target"] == cur
                   and C.window(e)[0] - 5 <= t1 and lo <= C.window(e)[1]]
            # Where send_tcp_reset covers the cause, a TCP flow is reset at its
            # next segment and never moved: a stateful appliance drops a
            # connection that reaches it mid-stream.
            reset_instead = [e for e in out if tcp and resets_on(data, e["kind"])]
            out = [e for e in out if e not in reset_instead]
            # A gateway that came back without the fleet's table (its warm
            # start timed out: its sync cut, or its peers unreachable) knows
            # nothing of the flows it receives. For a TCP segment that is not a
            # SYN the flow is mid-connection: the gateway must learn its
            # appliance from a peer or reset it, never pick another (to a
            # stateful appliance a pick is a broken connection). A UDP flow has
            # no such mark, and a stateful appliance accepts a new UDP flow
            # (scripts/lab_stateful.nft): such a gateway picks from its own
            # Maglev table, and a refresh record settles its copy back within
            # `heal` of its return. A sync cut alone explains nothing: every
            # gateway must keep the flow's appliance through it.
            came_cold = came_back_cold(data, key.split("#")[0], lo, t1)
            faults = sorted((e for e in data.events if e["kind"] in ("mgmt_down", "sync_congest")
                             and C.window(e)[0] - 5 <= t1 and lo <= e["end"] + heal), key=lambda e: -e["start"])
            where = (f"in the round {t0:.1f}-{t1:.1f} s" if lo == t0 else f"between {lo:.1f} and {t1:.1f} s")
            if out:
                moved_ok += 1
            elif reset_instead:
                e = reset_instead[0]
                r.fail(f"flow {key} moved {cur} -> {new} {where}: {e['kind']} of {cur} at {e['start']:.1f} s, with "
                       f"send_tcp_reset.{RESET_CAUSE[e['kind']]} on: a TCP flow there is reset, never moved")
            elif came_cold and not tcp:
                cold_n += 1
                r.note(f"flow {key} moved {cur} -> {new} around {mid:.0f} s: {came_cold['target']} carried it after "
                       f"coming back without the fleet's table ({came_cold['kind']} at {came_cold['start']:.1f} s, "
                       f"warm start {came_cold['warm_start']['state']}; allowed for UDP)")
            elif came_cold:
                r.fail(f"flow {key} moved {cur} -> {new} {where} with {cur} in service: {came_cold['target']} carried "
                       f"it after coming back without the fleet's table ({came_cold['kind']} at "
                       f"{came_cold['start']:.1f} s) and picked another appliance for a mid-connection TCP flow "
                       f"(it must learn the flow's appliance from a peer, or reset it)")
            else:
                in_fault += bool(faults)
                on_path = (path_gateways(data, key.split("#")[0], lo - 6, t1) or set()) | \
                    (carriers(data, key.split("#")[0], lo - 6, t1) or set())
                r.fail(f"flow {key} moved {cur} -> {new} {where} with {cur} in service" +
                       (f" ({faults[0]['kind']} on {faults[0]['target']} {faults[0]['start']:.1f}-"
                        f"{faults[0]['end']:.1f} s; carried by " +
                        (", ".join(f"gw{g}" for g in sorted(on_path)) if on_path else "?") + ")" if faults else ""))
            cur = new if len(apps) == 1 else (apps - {cur}).pop()
    r.note(f"{len(tl)} long-lived flows (stream connections and UDP) followed over {len(data.rounds)} rounds of the "
           f"appliances' per-flow counters; {changes} appliance changes, {moved_ok} while their appliance was failed, "
           f"drained or removed (and send_tcp_reset did not cover it), {cold_n} of UDP flows on a gateway that came "
           f"back without the fleet's table (or their heal within {heal:.0f} s), {in_fault} during a sync fault (or "
           f"within {heal:.0f} s after) with neither")
    if not tl:
        r.fail("no flow seen on any appliance")
    return r


def check_resets(data):
    C = _check()
    r = C.Result("resets", "every stream reset was on an appliance out of service, and reconnected")
    streams = [x for x in data.traffic if x.get("ev") == "stream"]
    reconnects = [x for x in data.traffic if x.get("ev") == "reconnect"]
    traffic_end = data.run.get("traffic_s", float("inf"))
    stateful = set(data.run.get("stateful") or [])
    rst = data.run.get("tcp_reset")
    r.note(f"appliances: {data.run.get('appliances', 'plain')}"
           + (f" ({', '.join(sorted(stateful))} stateful)" if stateful else "")
           + "; send_tcp_reset " + (", ".join(k for k, v in sorted(rst.items()) if v) or "off" if rst else "not recorded"))
    by_cause, first_byte, fault_to_byte = {}, [], {}
    for s in sorted((s for s in streams if not s["ok"] and is_reset(s)), key=lambda s: s["t_close"]):
        t, key = s["t_close"], f"6:{s['sport']}"
        apps = apps_seen(data, key, max(s["t_open"], t - 6), t + 1)
        if not apps:
            # Handed back (bypassed): its appliance no longer sees it, but it
            # is still the flow's, and leaving service ends the bypass.
            apps = apps_seen(data, key, s["t_open"], t + 1)
        why = [(a, out_of_service(data, a, t)) for a in sorted(apps)]
        why = [(a, w) for a, w in why if w]
        cold = came_back_cold(data, key, t - 6, t + 1)
        on = ", ".join(a + (" (stateful)" if a in stateful else "") for a in sorted(apps)) or "no appliance seen"
        if why:
            cause = why[0][1]
            by_cause[cause.split(" at ")[0]] = by_cause.get(cause.split(" at ")[0], 0) + 1
        elif cold:
            cause = f"{cold['target']} carried it without the fleet's table ({cold['kind']} at {cold['start']:.1f} s)"
            by_cause["a gateway without the flow's record"] = by_cause.get("a gateway without the flow's record", 0) + 1
        else:
            r.fail(f"stream {s['id']} (port {s['sport']}, slot {s.get('slot', '?')}) reset at {t:.1f} s on {on} "
                   f"with its appliance in service ({s['error']})")
            continue
        nxt = next((x for x in reconnects if x.get("slot") == s.get("slot") and x["t"] >= t - 0.01), None)
        if nxt is None:
            if t < traffic_end - RECONNECT_MAX_S:
                r.fail(f"stream {s['id']} (port {s['sport']}) reset at {t:.1f} s ({cause}) and its slot "
                       f"{s.get('slot', '?')} never reconnected")
            else:
                r.note(f"stream {s['id']} reset at {t:.1f} s, too near the traffic's end to reconnect")
            continue
        took = nxt["t"] - t
        first_byte.append(took)
        # The appliance the new connection ran through (packets both ways
        # around its first byte); a SYN that reached another one first (a
        # gateway whose health view had not yet changed: the views differ
        # for up to a probe window) is named, and shows in the time taken.
        new_apps = apps_seen(data, f"6:{nxt['sport']}", nxt["t"], nxt["t"] + 1, both_ways=True)
        touched = apps_seen(data, f"6:{nxt['sport']}", nxt["t"] - took, nxt["t"]) - new_apps
        back = [a for a in new_apps if surely_out(data, a, nxt["t"])]
        line = (f"stream {s['id']} (port {s['sport']}) on {on} reset at {t:.1f} s ({cause}); port {nxt['sport']} "
                f"echoed its first byte {took:.2f} s later" +
                (f" through {', '.join(sorted(new_apps))}" if new_apps else "") +
                (f" (its SYN reached {', '.join(sorted(touched))} first)" if touched else ""))
        if took > RECONNECT_MAX_S:
            r.fail(line + f": over {RECONNECT_MAX_S:.0f} s")
        elif back:
            r.fail(line + f": through {back[0]}, which was out of service")
        else:
            r.note(line)
        # The figure: fault to the first byte through another appliance (a
        # reconnect that a gateway still sent to the failing one is reset in
        # turn, and its own reconnect counts).
        ev = [e for e in C.explaining(data, t, C.MOVES) if e.get("target") in apps]
        if ev and new_apps and not new_apps & apps:
            fault_to_byte.setdefault(ev[0]["kind"], []).append((t - ev[0]["start"], nxt["t"] - ev[0]["start"]))
    n = sum(by_cause.values())
    r.note(f"{n} stream connections reset" + (": " + ", ".join(f"{v} by {k}" for k, v in sorted(by_cause.items()))
                                               if by_cause else ""))
    if first_byte:
        first_byte.sort()
        r.note(f"reset to the first verified byte of the reconnect: median {first_byte[len(first_byte) // 2]:.2f} s, "
               f"worst {first_byte[-1]:.2f} s (bound {RECONNECT_MAX_S:.0f} s)")
    for kind, xs in sorted(fault_to_byte.items()):
        a = sorted(x for x, _ in xs)
        b = sorted(y for _, y in xs)
        r.note(f"{kind}: from the fault's start to the reset {a[0]:.2f}-{a[-1]:.2f} s, to the first byte through "
               f"another appliance {b[0]:.2f}-{b[-1]:.2f} s ({len(xs)} streams)")
    # The gateways' side (short connections too): their RST counters move
    # only with an appliance out of service, or (idle: a segment with no
    # entry) on a gateway that came back without the fleet's table.
    apps = sorted({c[:-6] for rows in data.samples.values() for row in rows[:1] for c in row if c.endswith("_state")
                   and c.startswith("app")})
    heal = data.schedule.get("idle_timeout_s", 60) / 3 + 15
    for col, kinds in (("tcp_resets_unhealthy", {"app_fail"}), ("tcp_resets_deregistered", {"drain", "remove"}),
                       ("tcp_resets_idle", set())):
        total = 0
        for gw, rows in sorted(data.samples.items()):
            for t, k in deltas(rows, col):
                total += k
                if kinds and (C.explaining(data, t, kinds) or any(out_of_service(data, a, t) for a in apps)):
                    continue
                if not kinds and any(e["kind"] in ("gw_term", "gw_kill", "gw_restart") and e["target"] == f"gw{gw}"
                                     and (e.get("warm_start") or {}).get("state") not in (None, "done")
                                     and e["start"] - C.BEFORE <= t <= e["end"] + heal for e in data.events):
                    continue
                r.fail(f"{col} +{k:.0f} on gw{gw} at {t:.0f} s with " +
                       (f"no {'/'.join(sorted(kinds))} and every appliance in service" if kinds else
                        "no restart of it without the fleet's table"))
        if total:
            r.note(f"{col}: {total:.0f} RSTs sent by the gateways")
    return r
