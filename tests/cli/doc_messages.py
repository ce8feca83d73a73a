#!/usr/bin/python3
"""What the docs quote is what the programs print, and the messages an
operator meets say what is wrong (issue 24 item 14).

  doc_messages.py SRCROOT GWLBD GWLBCTL WORKDIR

Checks, each against a fresh run:
  1. docs/deploy.md's --check-config line for examples/gwlbd.yaml with -m 256
     is the line gwlbd prints, and each row of its table of worked examples
     (EAL memory, 2 MiB pages, the flow table's IPv4 and whole size) is what
     --check-config computes for the config the row describes;
  2. `gwlbd --version` prints what docs/deploy.md says it prints;
  3. a net_pcap device whose rx_pcap file is missing: gwlbd's start-up error
     names the device and the file (it said "no DPDK ports: give devices
     with --vdev", though a vdev was given);
  4. a server group no listener serves: gwlbd --check-config and gwlbctl
     config check accept the file with a warning naming the group;
  5. the README's gwlbctl line names every command `gwlbctl --help` lists;
  6. docs, examples and the README run the repository's Python tools
     directly (their #! line picks /usr/bin/python3, which has scapy), never
     as `python3 tools/...` (another python3 on PATH may lack scapy);
  7. `gwlbd --check-config` (or --config) with no file says the option needs
     one, not "unknown argument";
  8. docs/deploy.md's warnings, as gwlbd --check-config and gwlbctl config
     check print them: lcores in `eal` beyond dataplane.workers + 1, and a
     flow table smaller than dataplane.new_flows_per_s × the longest idle
     timeout ÷ 0.9; none for deploy.md's example or a table that fits;
  9. every complete gwlbctl command line in the docs is one gwlbctl takes;
 10. docs/fleet.md's refusal of a fleet peer of the other family is the one
     gwlbd --check-config and gwlbctl config check print;
 11. docs/deploy.md's refusals of an IPv6-only node (an IPv4 appliance, neither
     underlay address) are the ones both print, and such a node is accepted.
"""
import os
import re
import shutil
import subprocess
import sys

src, gwlbd, gwlbctl, work = (os.path.abspath(a) for a in sys.argv[1:5])
sys.path.insert(0, os.path.join(src, "tests/setup"))
import tree_files  # noqa: E402

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def check(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        if detail:
            print("  " + detail.replace("\n", "\n  "))
        failures.append(what)


def run(args, cwd=work, timeout=60):
    r = subprocess.run(args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def read(rel):
    return open(os.path.join(src, rel), encoding="utf-8").read()


deploy = read("docs/deploy.md")

# 1. The memory figures quoted for examples/gwlbd.yaml.
example = read("examples/gwlbd.yaml")
small = example.replace('"-m", "1024"', '"-m", "256"')
check(small != example, 'examples/gwlbd.yaml has "-m", "1024" (the case the doc quotes)')
with open(os.path.join(work, "gwlbd.yaml"), "w") as f:
    f.write(small)
rc, out, err = run([gwlbd, "--check-config", "gwlbd.yaml"])
line = err.strip().splitlines()[-1] if err.strip() else ""
check(rc == 2 and line.startswith("gwlbd.yaml: EAL memory:"),
      "--check-config with -m 256 fails on the EAL memory", f"exit {rc}: {err}")
check(("    " + line + "\n") in deploy, "docs/deploy.md quotes that line as gwlbd prints it",
      f"gwlbd prints:\n{line}\ndeploy.md has:\n" +
      "\n".join(l for l in deploy.splitlines() if "EAL memory: the config needs" in l))
# The other worked examples: the configs their rows describe, two PCI ports.
ROWS = {  # row start -> flow_table_size, workers, mbufs, underlay MTU
    "| `examples/gwlbd.yaml` as shipped": None,
    "| 1 M flows, 4 workers, 65,535 mbufs, MTU 1500 ": (1048576, 4, 65535, 1500),
    "| 10 M flows, 8 workers, 262,143 mbufs, MTU 1500 ": (10485760, 8, 262143, 1500),
    "| 10 M flows, 8 workers, 262,143 mbufs, MTU 9000 ": (10485760, 8, 262143, 9000),
}


def same(doc_number, value):
    """A figure as the doc writes it ("2,367", "160.5") against the computed MiB."""
    text = doc_number.replace(",", "")
    return text == (f"{value:.1f}" if "." in text else str(round(value)))


for start, spec in ROWS.items():
    row = next((l for l in deploy.splitlines() if l.startswith(start)), "")
    if spec is None:
        path = os.path.join(src, "examples/gwlbd.yaml")
    else:
        flows, workers, mbufs, mtu = spec
        path = os.path.join(work, f"row{flows}-{mtu}.yaml")
        with open(path, "w") as f:
            f.write(f"""node: {{ underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, underlay_mtu: {mtu} }}
server_groups: [ {{ name: g, servers: [ {{ address: 10.0.0.1 }} ] }} ]
dataplane: {{ workers: {workers}, mbufs: {mbufs}, flow_table_size: {flows} }}
eal: ["-l", "0-{workers}", "--no-huge", "-m", "100000", "-a", "0000:3b:00.0", "-a", "0000:3b:00.1"]
""")
    rc, out, err = run([gwlbd, "--check-config", path])
    need = re.search(r"EAL memory needed: ([\d.]+) MiB", out)
    ft = re.search(r"flow table +([\d.]+) MiB .*: ([\d.]+) MiB for IPv4 flows", out)
    cells = [c.strip() for c in row.split("|")[1:-1]]
    if rc != 0 or not need or not ft or len(cells) != 3:
        check(False, f"deploy.md row '{start.strip('| ')}': computed", f"exit {rc}: {out}{err}\nrow: {row}")
        continue
    eal, total, v4 = float(need.group(1)), float(ft.group(1)), float(ft.group(2))
    m_eal = re.match(r"([\d,.]+) MiB", cells[1])
    m_proc = re.match(r"(?:as above|([\d,.]+) MiB IPv4 \(([\d,.]+) MiB)", cells[2])
    pages = re.search(r"or (\d+) × 2 MiB", cells[1])
    ok = (m_eal and same(m_eal.group(1), eal) and m_proc
          and (m_proc.group(1) is None or (same(m_proc.group(1), v4) and same(m_proc.group(2), total)))
          and (not pages or int(pages.group(1)) == -(-int(eal * 10) // 20)))
    check(ok, f"deploy.md row '{start.strip('| ')}': EAL {eal} MiB, flow table {v4} MiB IPv4, "
              f"{total} MiB in all, as --check-config computes", f"row: {row}")

# 2. --version as the doc says.
rc, out, err = run([gwlbd, "--version"])
shown = re.sub(r"\(git [^)]*\)", "(git DESCRIBE)", out.strip())
check(rc == 0 and f"`{shown}`" in deploy, f"docs/deploy.md shows `gwlbd --version`'s form ({shown})",
      "\n".join(l for l in deploy.splitlines() if "--version" in l))

# 3. A net_pcap port whose input file does not exist.
missing = os.path.join(work, "missing.pcap")
cfg = os.path.join(work, "nopcap.yaml")
with open(cfg, "w") as f:
    f.write(f"""node: {{ underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }}
server_groups:
  - name: firewalls
    servers: [ {{ address: 192.0.2.10 }} ]
dataplane: {{ workers: 1, mbufs: 4096, flow_table_size: 4096 }}
control: {{ socket: {work}/gwlbd.sock }}
eal: ["--no-huge", "--no-pci", "--no-shconf", "-m", "128", "--no-telemetry", "--lcores=0@(0-1),1@(0-1)",
      "--vdev", "net_pcap0,rx_pcap={missing},tx_pcap={work}/out.pcap"]
""")
rc, out, err = run([gwlbd, "--config", cfg])
log = out + err
want = f"net_pcap0 (rx_pcap file {missing}: No such file or directory)"
check(rc == 1 and want in log and "no DPDK ports" not in log,
      "a missing rx_pcap file: start-up fails naming the device and the file", f"exit {rc}:\n{log}")

# 4. A server group in no listener: valid, with a warning.
with open(os.path.join(work, "unserved.yaml"), "w") as f:
    f.write("""node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }
server_groups:
  - { name: east, servers: [ { address: 192.0.2.10 } ] }
  - { name: spare, servers: [ { address: 192.0.2.20 } ] }
listeners:
  - { name: inspect, server_groups: [east] }
eal: ["--no-huge", "--no-pci", "--lcores=0@(0-1),1@(0-1)", "-m", "128"]
""")
warning = "warning: server_groups[1]: server group 'spare' is in no listener"
for prog, args in (("gwlbd --check-config", [gwlbd, "--check-config", "unserved.yaml"]),
                   ("gwlbctl config check", [gwlbctl, "config", "check", "unserved.yaml"])):
    rc, out, err = run(args)
    check(rc == 0 and warning in err, f"{prog}: a group in no listener is valid, with a warning",
          f"exit {rc}:\n{out}{err}")

# 5. The README's gwlbctl line.
rc, out, err = run([gwlbctl, "--help"])
commands = set()
for l in out.splitlines():
    m = re.match(r"^  ([a-z][a-z-]*(?: [a-z]+)?)\s", l)
    if m and m.group(1) != "help":
        commands.add(m.group(1))
readme_line = next((l for l in read("README.md").splitlines() if "build/cli/gwlbctl" in l), "")
missing_cmds = sorted(c for c in commands  # "`server add/remove/...`", "`fleet` (`show`/...)"
                      if f"`{c.split()[0]}" not in readme_line
                      or any(w not in readme_line for w in c.split()[1:]))
check(len(commands) >= 10 and not missing_cmds,
      f"README's gwlbctl line names all {len(commands)} commands of gwlbctl --help",
      f"missing: {missing_cmds}\n{readme_line}")

# 6. Python tools run directly.
PY_CALL = re.compile(r"(?:/usr/bin/)?python3\s+((?:tools|tests)/[\w/.-]+\.py)")
RUN_LINE = re.compile(r"^\s*(?:#\s*)?(?:\$\s+)?((?:tools|tests)/[\w/.-]+\.py)\b")
for rel in tree_files.source_files(src):
    if not (rel.endswith(".md") or rel.startswith("examples/")):
        continue
    for no, l in enumerate(read(rel).splitlines(), 1):
        for script in PY_CALL.findall(l):
            check(False, f"{rel}:{no}: run {script} directly, not through python3 "
                         "(its #! line picks /usr/bin/python3)")
        m = RUN_LINE.match(l)
        if m:
            path = os.path.join(src, m.group(1))
            ok = (os.path.isfile(path) and os.access(path, os.X_OK)
                  and open(path).readline().startswith("#!/usr/bin/python3"))
            check(ok, f"{rel}:{no}: {m.group(1)} is run directly: executable, #!/usr/bin/python3")

# 7. gwlbd's options that take a file, given none: say so (it said "unknown
#    argument '--check-config'").
for opt in ("--check-config", "--config"):
    rc, out, err = run([gwlbd, opt])
    check(rc == 2 and f"gwlbd: {opt} needs a file" in err and "unknown argument" not in err,
          f"gwlbd {opt} with no file: 'needs a file', exit 2", f"exit {rc}:\n{err}")

# 8. deploy.md's warnings as gwlbd and gwlbctl print them: lcores `eal` sets
#    aside that no worker uses, and a flow table below the config's planned
#    rate; deploy.md's own example (4 workers on -l 2-6) gets neither.
WARN_CASES = {  # name -> (config lines, the warning's key path or None)
    "idle_lcores": ('eal: ["-l", "2-6", "--no-huge", "-m", "1024", "-a", "0000:3b:00.0", "-a", "0000:3b:00.1"]',
                    "dataplane.workers"),
    "deploy_example": ('dataplane: { workers: 4 }\n'
                       'eal: ["-l", "2-6", "--no-huge", "-m", "1024", "-a", "0000:3b:00.0", "-a", "0000:3b:00.1"]',
                       None),
    "small_table": ('dataplane: { new_flows_per_s: 10000 }\n'
                    'eal: ["-l", "0-1", "--no-huge", "-m", "1024", "-a", "0000:3b:00.0", "-a", "0000:3b:00.1"]',
                    "dataplane.flow_table_size"),
    "table_fits": ('dataplane: { new_flows_per_s: 2696 }\n'
                   'eal: ["-l", "0-1", "--no-huge", "-m", "1024", "-a", "0000:3b:00.0", "-a", "0000:3b:00.1"]',
                   None),
}
for name, (extra, path) in WARN_CASES.items():
    cfg = os.path.join(work, f"{name}.yaml")
    with open(cfg, "w") as f:
        f.write("node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01 }\n"
                "server_groups: [ { name: g, servers: [ { address: 192.0.2.10 } ] } ]\n" + extra + "\n")
    lines = {}
    for prog, args in (("gwlbd --check-config", [gwlbd, "--check-config", cfg]),
                       ("gwlbctl config check", [gwlbctl, "config", "check", cfg])):
        rc, out, err = run(args)
        got = [l[l.index("warning: "):] for l in err.splitlines()
               if "warning: dataplane.workers:" in l or "warning: dataplane.flow_table_size:" in l]
        lines[prog] = got
        want_n = 1 if path else 0
        check(rc == 0 and len(got) == want_n and (not path or got[0].startswith(f"warning: {path}: ")),
              f"{prog}, {name}: {'a warning on ' + path if path else 'no lcore or flow-table warning'}",
              f"exit {rc}:\n{out}{err}")
    if path and lines["gwlbd --check-config"]:
        line = lines["gwlbd --check-config"][0]
        check(lines["gwlbctl config check"] == [line] and ("    " + line + "\n") in deploy,
              f"docs/deploy.md quotes the {path} warning as both print it",
              f"printed:\n{line}\ndeploy.md has:\n" +
              "\n".join(l for l in deploy.splitlines() if f"warning: {path}" in l))

# 9. Every complete gwlbctl command line the docs show parses: gwlbctl takes
#    it (it said `server drain ... --timeout 2m`; the option takes seconds).
#    Run against a socket that does not exist, so nothing is changed: a
#    usage error ("Try 'gwlbctl ... --help'") fails, a refused connection is
#    what a good line gets. A session line whose output in the doc is such a
#    usage error must get it.
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]*\b|\[|\.\.\.|…|<|>|\|")
shown = {}  # (file, command line) -> the doc shows it refused
for rel in tree_files.source_files(src):
    if not (rel.endswith(".md") and (rel.startswith("docs/") or rel == "README.md")):
        continue
    text = read(rel)
    for span in re.findall(r"`(gwlbctl [^`\n]+)`", text):
        if "--" in span:  # a bare command name in prose is not a command line
            shown.setdefault((rel, span.strip()), False)
    lines = text.splitlines()
    for i, l in enumerate(lines):
        m = re.match(r"^\$ (gwlbctl .+)$", l.strip())
        if m:
            output = []
            for nxt in lines[i + 1:]:
                if nxt.startswith("$ ") or nxt.startswith("```"):
                    break
                output.append(nxt)
            shown[(rel, m.group(1).strip())] = any("Try 'gwlbctl" in o for o in output)
parsed = 0
for (rel, line), refused in sorted(shown.items()):
    words = line.split()[1:]
    if PLACEHOLDER.search(line) or not words or "probe" in words:
        continue
    rc, out, err = run([gwlbctl, "--socket", os.path.join(work, "absent.sock")] + words, timeout=30)
    parsed += 1
    if refused:
        check(rc == 2 and "Try 'gwlbctl" in err, f"{rel}: `{line}` is refused as the doc shows",
              f"exit {rc}:\n{err}")
    else:
        check("Try 'gwlbctl" not in err, f"{rel}: `{line}` is a command gwlbctl takes", f"exit {rc}:\n{err}")
check(parsed >= 10, f"{parsed} gwlbctl command lines of the docs run through gwlbctl's parser")

# 10. docs/fleet.md "Over IPv6": the refusal it quotes for a peer of the
#     other family is what gwlbd --check-config and gwlbctl config check print.
fleet_doc = " ".join(read("docs/fleet.md").split())
m = re.search(r"- a peer of the other family: `([^`]*)`", fleet_doc)
check(m is not None, "docs/fleet.md quotes the refusal of a peer of the other family")
with open(os.path.join(work, "sync6.yaml"), "w") as f:
    f.write("""node: { underlay_ip: 10.0.0.1, underlay_mac: 02:00:00:00:00:01 }
server_groups: [ { name: east, servers: [ { address: 10.0.0.10 } ] } ]
fleet: { node_name: gw-1, secret: 00112233445566778899aabbccddeeff,
         sync_listen: "10.0.0.1:7946", peers: ["[2001:db8:f::2]:7946"] }
eal: ["--no-huge", "--no-pci", "--lcores=0@(0-1),1@(0-1)", "-m", "128"]
""")
for prog, args in (("gwlbd --check-config", [gwlbd, "--check-config", "sync6.yaml"]),
                   ("gwlbctl config check", [gwlbctl, "config", "check", "sync6.yaml"])):
    rc, out, err = run(args)
    printed = " ".join((out + err).split())
    check(rc != 0 and m is not None and m.group(1) in printed,
          f"{prog}: a peer of the other family is refused as docs/fleet.md quotes", f"exit {rc}:\n{out}{err}")

# 11. docs/deploy.md "Choosing a format and family" (IPv6 only): a node without node.underlay_ip takes IPv6
#     appliances; the two refusals it quotes (an IPv4 appliance there, a node
#     with neither address) are what gwlbd --check-config and gwlbctl config
#     check print.
quoted = [next((l for l in deploy.splitlines() if l.startswith(start)), "")
          for start in ("server_groups[0].servers[1].address: '10.0.0.11' is IPv4: ", "node.underlay_ip: is required: ")]
check(all(quoted), "docs/deploy.md quotes the refusals of an IPv6-only node", str(quoted))
V6_NODE = "node: { underlay_ipv6: 2001:db8:f::1, underlay_mac: 02:00:00:00:00:01 }\n"
V6_TAIL = 'eal: ["--no-huge", "--no-pci", "--lcores=0@(0-1),1@(0-1)", "-m", "128"]\n'
cases = {
    "v6only.yaml": (V6_NODE + "server_groups: [ { name: g, health_check: { enabled: false }, "
                    "servers: [ { address: 2001:db8:f::10 } ] } ]\n", None),
    "v6only-v4app.yaml": (V6_NODE + "server_groups: [ { name: g, health_check: { enabled: false }, "
                          "servers: [ { address: 2001:db8:f::10 }, { address: 10.0.0.11 } ] } ]\n", quoted[0]),
    "no-underlay.yaml": ("node: { underlay_mac: 02:00:00:00:00:01 }\nserver_groups: [ { name: g, "
                         "health_check: { enabled: false }, servers: [ { address: 2001:db8:f::10 } ] } ]\n",
                         quoted[-1]),
}
for name, (text, want) in cases.items():
    with open(os.path.join(work, name), "w") as f:
        f.write(text + V6_TAIL)
    for prog, args in (("gwlbd --check-config", [gwlbd, "--check-config", name]),
                       ("gwlbctl config check", [gwlbctl, "config", "check", name])):
        rc, out, err = run(args)
        if want is None:
            check(rc == 0, f"{prog} {name}: an IPv6-only node without node.underlay_ip is accepted",
                  f"exit {rc}:\n{out}{err}")
        else:
            check(rc != 0 and want != "" and want in (out + err),
                  f"{prog} {name}: refused with the line docs/deploy.md quotes",
                  f"exit {rc}:\n{out}{err}\nwanted: {want}")

print(f"doc_messages: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
