"""A reload that changes node.underlay_ip (docs/config.md: the key applies on
reload). gwlbd put the old address on its appliance port's exception tap for
the data-path probes; after the reload the tap holds the new address and no
longer the old one (the kernel would otherwise go on answering for, and
sourcing from, an address the node gave up), `gwlbctl status` shows the new
one, gwlbd's log says what it removed, both appliances are healthy again by
probes from the new address, and a new connection goes through the gateway
(Geneve from the new address, the appliances' answers to it).
"""
import json
import time

from e2e import APPS, SERVER, wait_health

GW_TAP = "gwlb1"  # the exception tap of node.underlay_port 1
OLD, NEW = "10.77.9.1", "10.77.9.5"


def tap_ipv4(lab):
    r = lab.run("gw", "ip", "-4", "-o", "addr", "show", "dev", GW_TAP)
    assert r.returncode == 0, f"ip addr show dev {GW_TAP}: {r.stderr}"
    return sorted(line.split()[3] for line in r.stdout.splitlines())


def test_underlay_change(lab, args):
    for a in APPS.values():
        wait_health(lab, a, "healthy", 15)
    before = tap_ipv4(lab)
    assert before == [OLD + "/32"], f"{GW_TAP} before the reload: {before}"
    cfg = open(f"{lab.dir}/gwlbd.yaml").read()
    assert cfg.count(f"underlay_ip: {OLD}") == 1, "the lab's config names node.underlay_ip once"
    open(f"{lab.dir}/gwlbd.yaml", "w").write(cfg.replace(f"underlay_ip: {OLD}", f"underlay_ip: {NEW}"))
    t0 = time.time()
    out = lab.gwlbctl("reload")
    assert "error" not in out.lower(), out
    after = tap_ipv4(lab)
    print(f"{GW_TAP}: {before} before the reload, {after} after")
    assert after == [NEW + "/32"], f"{GW_TAP} after the reload: {after} (expected {NEW}/32 alone)"
    status = json.loads(lab.gwlbctl("--json", "status"))
    assert status["underlay"]["ipv4"] == NEW, f"gwlbctl status: {status.get('underlay')}"
    log = open(f"{lab.dir}/gwlbd.log", errors="replace").read()
    # The message docs/deploy.md quotes, whole.
    said = [ln for ln in log.splitlines()
            if ln.endswith(f"health probes: removed {OLD}/32 from {GW_TAP} "
                           "(no longer this node's underlay address for probes)")]
    assert said, "gwlbd's log does not say the old address was removed"
    print("gwlbd.log: " + said[0].split("] ")[-1])
    # Probes now leave from NEW: the appliances answer it (gwlbd answers ARP
    # for it), so both stay healthy over the change: a state left after t0
    # would show as a later `since`.
    time.sleep(2.0)  # four probe intervals, all from NEW
    for a in APPS.values():
        s = lab.servers()[a]["health"]
        assert s["state"] == "healthy" and s["since"] <= t0, f"{a} did not stay healthy over the change: {s}"
    r = lab.run("client", "curl", "-s", "--max-time", "5", f"http://{SERVER}/index.html")
    assert r.stdout == "hello through the gateway\n", f"new connection failed: {r.stdout!r} {r.stderr}"
    print(f"both appliances healthy by probes from {NEW}; a new connection went through the gateway")
