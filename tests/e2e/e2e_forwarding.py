"""e2e forwarding: health_check.forwarding against a black hole (docs/product-rules.md
"Forwarding checks"). app2 runs gwlb-appliance --blackhole: its HTTP health
answers 200 and it forwards nothing.

1. forwarding off (the lab's config): app2 stays healthy however long one
   waits (two failure windows here), while new flows Maglev gives it vanish;
2. forwarding on (config reload): app2 turns unhealthy with last result
   forwarding_timeout within the documented window, shown by `gwlbctl
   servers`; app1, a normal gwlb-appliance, stays healthy throughout with
   forwarding on, its probes come back and are consumed (punted_probe), and a
   new connection goes through it;
3. app2 restarted without --blackhole: healthy again with forwarding on.
"""
import json
import re
import time

from e2e import APPS, SERVER, wait_health


def stays(lab, addr, want, seconds):
    """Samples addr's health state for `seconds`; every sample must be `want`."""
    t_end = time.time() + seconds
    n = 0
    while time.time() < t_end:
        s = lab.servers()[addr]["health"]
        assert s["state"] == want, f"{addr} left {want} after {n} samples: {s}"
        n += 1
        time.sleep(0.1)
    return n


def totals(lab):
    return json.loads(lab.gwlbctl("--json", "stats"))["totals"]


def test_forwarding(lab, args):
    # A 1 s timeout (LAB_HC_TIMEOUT, e2e.py): on a loaded machine an HTTP
    # answer over 300 ms would fail the check with its own reason first.
    hc = {"interval": 0.5, "timeout": 1.0, "unhealthy": 2}
    fail_window = hc["timeout"] * hc["unhealthy"] + hc["interval"] * (hc["unhealthy"] - 1)
    app1, app2 = APPS["app1"], APPS["app2"]
    wait_health(lab, app1, "healthy", 10)
    wait_health(lab, app2, "healthy", 10)
    # 1. Today's behaviour: HTTP 200 is all the check sees.
    before = lab.app_stats("app2")["dropped"]
    for _ in range(8):  # new flows: those Maglev gives app2 vanish there
        lab.run("client", "curl", "-s", "--max-time", "1", f"http://{SERVER}/index.html")
    n = stays(lab, app2, "healthy", 2 * fail_window)
    dropped = lab.app_stats("app2")["dropped"] - before
    print(f"forwarding off: black-holing app2 healthy in all {n} samples over {2 * fail_window:.1f} s "
          f"(2 failure windows) while it dropped {dropped} packets")
    assert dropped > 0, "no packet reached the black hole: the test shows nothing"

    # 2. Forwarding checks on, by a reload.
    cfg = open(f"{lab.dir}/gwlbd.yaml").read()
    on, k = re.subn(r"unhealthy_threshold: (\d+)", r"unhealthy_threshold: \1, forwarding: true", cfg)
    assert k >= 1, "no health_check in the lab's config"
    open(f"{lab.dir}/gwlbd.yaml", "w").write(on)
    t_on = time.time()
    out = lab.gwlbctl("reload")
    assert "error" not in out.lower(), out
    srv = wait_health(lab, app2, "unhealthy", 10)
    took = srv["health"]["since"] - t_on
    last = srv["health"]["last_result"]
    print(f"forwarding on: app2 unhealthy {took:.3f} s after the reload, last result {last!r} "
          f"(failure window {fail_window:.1f} s, plus up to one interval before the first probe)")
    assert last == "forwarding_timeout", f"reason {last!r}"
    assert took <= fail_window + hc["interval"] + 0.5, f"window exceeded: {took:.3f} s"
    text = lab.gwlbctl("servers", "--wide")
    assert "forwarding_timeout" in text, f"gwlbctl servers does not say why:\n{text}"
    line = [ln for ln in text.splitlines() if app2 in ln]
    print(f"gwlbctl servers: {line[0].strip() if line else text}")

    t0 = totals(lab)
    n = stays(lab, app1, "healthy", 2 * fail_window)
    t1 = totals(lab)
    probes = t1["punted_probe"] - t0["punted_probe"]
    print(f"app1 (forwards): healthy in all {n} samples with forwarding on; {probes} probes came back "
          f"and were consumed in {2 * fail_window:.1f} s")
    assert probes >= 2, f"app1's probes did not come back: {probes}"
    r = lab.run("client", "curl", "-s", "--max-time", "5", f"http://{SERVER}/index.html")
    assert r.stdout == "hello through the gateway\n", f"new connection failed: {r.stdout!r} {r.stderr}"

    # 3. app2 forwards again.
    lab.sh("app-stop", "2")
    lab.env.pop("LAB_APP2_ARGS", None)
    lab.sh("app-start", "2")
    t_fix = time.time()
    srv = wait_health(lab, app2, "healthy", 10)
    print(f"app2 restarted without --blackhole: healthy after {srv['health']['since'] - t_fix:.3f} s")


def test_forwarding_ipv6(lab, args):
    """Forwarding checks with IPv6 reserved addresses (forwarding_probe
    2001:2::1 -> 2001:2::2, turned on by a reload once both appliances are
    up, as the lab waits for them): the probe is an ICMPv6 echo.
    app2 (--blackhole) turns unhealthy with forwarding_timeout; app1 stays
    healthy on probes that come back. Each appliance's own counts say which
    swallows them: app1 returned all but the one in flight, none timed out;
    app2 returned none; `gwlbctl health` shows them (the lab's gwlbd serves
    no /metrics)."""
    app1, app2 = APPS["app1"], APPS["app2"]
    cfg = open(f"{lab.dir}/gwlbd.yaml").read()
    on, k = re.subn(r"unhealthy_threshold: (\d+)", r'unhealthy_threshold: \1, forwarding: true, '
                    r'forwarding_probe: { src: "2001:2::1", dst: "2001:2::2" }', cfg)
    assert k >= 1, "no health_check in the lab's config"
    open(f"{lab.dir}/gwlbd.yaml", "w").write(on)
    out = lab.gwlbctl("reload")
    assert "error" not in out.lower(), out
    srv = wait_health(lab, app2, "unhealthy", 15)
    assert srv["health"]["last_result"] == "forwarding_timeout", srv["health"]
    wait_health(lab, app1, "healthy", 10)
    n = stays(lab, app1, "healthy", 2.0)
    servers = lab.servers()
    f1, f2 = servers[app1]["health"]["forwarding"], servers[app2]["health"]["forwarding"]
    print(f"IPv6 probes: app1 healthy in all {n} samples, counts {f1}; app2 unhealthy "
          f"(forwarding_timeout), counts {f2}")
    assert f1["returned"] >= 3 and f1["timed_out"] == 0 and f1["sent"] - f1["returned"] <= 1, f1
    assert f2["sent"] >= 2 and f2["returned"] == 0 and f2["timed_out"] >= 2, f2
    text = lab.gwlbctl("health", app2)
    line = [ln for ln in text.splitlines() if "forwarding probes" in ln]
    print("gwlbctl health " + app2 + ": " + (line[0].strip() if line else text))
    assert line and " 0 returned" in line[0], text
    r = lab.run("client", "curl", "-s", "--max-time", "5", f"http://{SERVER}/index.html")
    assert r.stdout == "hello through the gateway\n", f"new connection failed: {r.stdout!r} {r.stderr}"
