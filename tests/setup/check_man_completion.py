"""The man pages and gwlbctl's bash completion the build generated agree
with the binaries' --help as they are now (issue 18 item 10):

- each man page names every option its binary's --help names, and no
  option the help no longer has; every binary answers --version and its
  --help names it;
- gwlbctl.8 has a subsection for every command of `gwlbctl --help` (none
  for a command that is gone) with every option of `gwlbctl CMD --help`;
- the completion script, run in bash, offers exactly the top-level command
  words, each group's subcommands, and for each command (and alias) exactly
  the options of `gwlbctl CMD --help` (its own and the global ones).

  check_man_completion.py PACKAGING_BUILD_DIR GWLBD GWLBCTL GWLB_REPLAY GWLB_APPLIANCE GWLB_PROBE
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tools"))
from gen_man import command_names, help_text, parse  # noqa: E402

pkg = sys.argv[1]
bins = dict(zip(["gwlbd", "gwlbctl", "gwlb-replay", "gwlb-appliance", "gwlb-probe"], sys.argv[2:7]))
sections = {"gwlbd": 8, "gwlbctl": 8, "gwlb-replay": 1, "gwlb-appliance": 1, "gwlb-probe": 1}
OPT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
failures = []


def man_text(name):
    with open(os.path.join(pkg, f"{name}.{sections[name]}")) as f:
        text = "".join(l for l in f if not l.startswith('.\\"'))  # not the comments
    text = text.replace("\\-", "-").replace("\\e", "\\")
    return re.sub(r"\\f[BIRP]", "", text)


def options_in(text):
    return set(OPT.findall(text))


for name, b in bins.items():
    page = man_text(name)
    helps = help_text(b)
    if name == "gwlbctl":
        for cmd in command_names(helps):
            helps += help_text(b, *cmd.split())
    want, have = options_in(helps), options_in(page)
    for o in sorted(want - have):
        failures.append(f"{name}.{sections[name]}: lacks {o} (in --help)")
    for o in sorted(have - want):
        failures.append(f"{name}.{sections[name]}: names {o}, which --help does not (stale)")
    print(f"{name}.{sections[name]}: {len(want)} option(s), as in --help")
    # Every binary answers --version, and its --help (so its man page) says so.
    v = subprocess.run([b, "--version"], capture_output=True, text=True, timeout=60)
    if v.returncode != 0 or not v.stdout.startswith(f"{name} "):
        failures.append(f"{name} --version: exit {v.returncode}, printed {v.stdout!r}")
    if "--version" not in options_in(help_text(b)):
        failures.append(f"{name} --help: does not name --version, which it answers")

# gwlbctl: one subsection per command.
ctl = bins["gwlbctl"]
commands = [c for c in command_names(help_text(ctl)) if c != "help"]
page = man_text("gwlbctl")
subsections = re.findall(r"^\.SS (.+)$", page, re.M)
if sorted(subsections) != sorted(commands):
    failures.append(f"gwlbctl.8: subsections {sorted(subsections)} != commands {sorted(commands)}")
print(f"gwlbctl.8: {len(subsections)} command subsections")

# The completion, run as bash runs it.
comp = os.path.join(pkg, "gwlbctl")


def complete(words):
    """COMPREPLY for the command line `words` (the last one being completed)."""
    line = " ".join("''" if w == "" else w for w in words)
    script = (f"source {comp}; COMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); "
              "_gwlbctl; printf '%s\\n' \"${COMPREPLY[@]}\"")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        failures.append(f"completion of {words}: bash exit {r.returncode}: {r.stderr}")
    return set(x for x in r.stdout.split("\n") if x)


top = help_text(ctl)
all_names = {}
for cmd in command_names(top):
    all_names[cmd] = cmd
    usage, _ = parse(help_text(ctl, *cmd.split()))
    for u in usage[1:]:
        words = []
        for w in u.split()[1:]:
            if not re.match(r"^[a-z][a-z-]*$", w):
                break
            words.append(w)
        if words:
            all_names[" ".join(words)] = cmd
first = {n.split()[0] for n in all_names}
got = complete(["gwlbctl", ""])
if got != first:
    failures.append(f"completion of 'gwlbctl ': {sorted(got)}, want {sorted(first)}")
groups = {}
for n in all_names:
    w = n.split()
    if len(w) == 2:
        groups.setdefault(w[0], set()).add(w[1])
for g, subs in groups.items():
    got = complete(["gwlbctl", g, ""])
    if got != subs:
        failures.append(f"completion of 'gwlbctl {g} ': {sorted(got)}, want {sorted(subs)}")
def listed_options(text):
    """The options a help text lists in its options sections (not prose)."""
    out = set()
    for title, kind, payload in parse(text)[1]:
        if kind == "items" and title and "options" in title:
            out |= {tag.split()[0] for tag, _ in payload if tag.startswith("-")}
    return out


for n, cmd in sorted(all_names.items()):
    want = listed_options(help_text(ctl, *cmd.split()))
    got = complete(["gwlbctl", *n.split(), "--"])
    if got != want:
        failures.append(f"completion of 'gwlbctl {n} --': missing {sorted(want - got)}, "
                        f"stale {sorted(got - want)}")
print(f"completion: {len(first)} top-level words, {len(groups)} group(s), "
      f"{len(all_names)} command names with their options")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("man pages and completion agree with --help")
