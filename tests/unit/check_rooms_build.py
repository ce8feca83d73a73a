#!/usr/bin/env python3
"""The build rejects a wrong-way dependency (docs/architecture.md "Rooms and
who may use whom", "What keeps the table true"), shown on this build's own
commands:

1. Compile: gwlb_engine_rules (the engine's pure library, no DPDK) compiles
   a file including <rte_mbuf.h>: it FAILS (no DPDK header on its include
   path), while gwlb_engine's command (engine.cc, which may use DPDK)
   compiles the same file, and gwlb_engine_rules' command compiles a file
   that includes only a config header. So the failure is the library's
   dependencies, not the test file.
2. Link: a call into the dataplane (dp::FlowTable's constructor), linked the
   way a unit test of the engine rules is linked (gwlb_engine_rules with
   only its dependencies: config, common), FAILS with an undefined reference
   to it, while a call into the config (a room engine may use) links.

The commands come from BUILD_DIR/compile_commands.json (meson writes it) and
BUILD_DIR/build.ninja (the link line of a test that links gwlb_engine_rules
and not the dataplane).

Usage: check_rooms_build.py SOURCE_ROOT BUILD_DIR
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

RULES_LIB = "libgwlb_engine_rules.a"
DPDK_LIB = "libgwlb_engine.a"


def compile_entry(build, lib):
    """The compile command of a source of `lib` (its object lives in lib.p/)."""
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    for e in entries:
        if f"/{lib}.p/" in "/" + e["output"]:
            args = e.get("arguments") or shlex.split(e["command"])
            return e, args
    raise SystemExit(f"{build}/compile_commands.json: no source of {lib}")


def command_for(entry, args, source, obj=None):
    """entry's command with `source` in place of its file; -fsyntax-only, or -o obj."""
    out, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if i == 0 and os.path.basename(a) == "ccache":
            continue
        if a in ("-MD", "-MMD", "-c"):
            continue
        if a in ("-MQ", "-MF", "-MT", "-o"):
            skip = True
            continue
        if a == entry["file"]:
            continue
        out.append(a)
    out.append("-fdiagnostics-color=never")
    return out + (["-c", source, "-o", obj] if obj else ["-fsyntax-only", source])


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def link_args(build):
    """The LINK_ARGS of a target linking gwlb_engine_rules without the dataplane."""
    with open(os.path.join(build, "build.ninja"), encoding="utf-8") as f:
        text = f.read()
    found = []
    for m in re.finditer(r"^build ([^:\n]+): cpp_LINKER [^\n]*\n((?: [^\n]*\n)*)", text, re.M):
        la = re.search(r"^ LINK_ARGS = (.*)$", m.group(2), re.M)
        if not la:
            continue
        args = shlex.split(la.group(1))
        names = [os.path.basename(a) for a in args]
        if RULES_LIB in names and "libgwlb_dataplane.a" not in names and DPDK_LIB not in names:
            ours = sum(1 for a in args if a.endswith(".a") and not a.startswith("/"))
            found.append((ours, m.group(1), args))
    if not found:
        raise SystemExit(f"{build}/build.ninja: no target links {RULES_LIB} without the dataplane")
    _, target, args = min(found)  # the fewest of our libraries: a unit test of the rules
    return target, args


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(argv[2])
    failures = []
    rules, rules_args = compile_entry(build, RULES_LIB)
    engine, engine_args = compile_entry(build, DPDK_LIB)
    print(f"gwlb_engine_rules' command: the one that compiles {rules['file']}")
    print(f"gwlb_engine's command: the one that compiles {engine['file']}")
    with tempfile.TemporaryDirectory(prefix="rooms_build_") as tmp:
        def src(name, text):
            p = os.path.join(tmp, name)
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
            return p

        dpdk = src("uses_dpdk.cc", "#include <rte_mbuf.h>\n"
                                   "unsigned headroom() { return RTE_PKTMBUF_HEADROOM; }\n")
        config = src("uses_config.cc", '#include "control/config/config.h"\n'
                                       "int groups(const gwlb::ctl::Config& c) "
                                       "{ return int(c.server_groups.size()); }\n")

        rc, out = run(command_for(rules, rules_args, dpdk), rules["directory"])
        if rc == 0:
            failures.append("gwlb_engine_rules compiled a file including <rte_mbuf.h>: "
                            "DPDK is on the pure library's include path")
        elif "rte_mbuf.h" not in out:
            failures.append(f"gwlb_engine_rules failed on <rte_mbuf.h> for another reason:\n{out}")
        else:
            first = next(l for l in out.splitlines() if "rte_mbuf.h" in l)
            print(f"rejected as expected (compile, gwlb_engine_rules + <rte_mbuf.h>): {first}")
        rc, out = run(command_for(engine, engine_args, dpdk), engine["directory"])
        if rc != 0:
            failures.append(f"gwlb_engine's command did not compile the DPDK file:\n{out}")
        else:
            print("accepted: gwlb_engine's command compiles the same file (its room may use DPDK)")
        rc, out = run(command_for(rules, rules_args, config), rules["directory"])
        if rc != 0:
            failures.append(f"gwlb_engine_rules' command did not compile a config include:\n{out}")
        else:
            print("accepted: gwlb_engine_rules' command compiles a file including a config header")

        # Link: the engine rules' unit-test link line, with main() calling into one room or another.
        target, largs = link_args(build)
        print(f"link line: {target}'s (links {RULES_LIB}, not the dataplane)")
        cases = {
            "dataplane": ('#include "dataplane/flow_table.h"\n'
                          'int main() { gwlb::dp::FlowTable t("x", 64, nullptr, 0); return 0; }\n'),
            "config": ('#include "control/config/config.h"\n'
                       'int main() { gwlb::ctl::Config c; std::vector<gwlb::ctl::ConfigError> e;\n'
                       '  return gwlb::ctl::validateConfig(c, e) ? 0 : 1; }\n'),
        }
        for room, text in cases.items():
            obj = os.path.join(tmp, f"calls_{room}.o")
            rc, out = run(command_for(rules, rules_args, src(f"calls_{room}.cc", text), obj),
                          rules["directory"])
            if rc != 0:
                failures.append(f"the file calling into {room} did not compile:\n{out}")
                continue
            exe = os.path.join(tmp, f"calls_{room}")
            rc, out = run([rules_args[1] if os.path.basename(rules_args[0]) == "ccache"
                           else rules_args[0], "-o", exe, obj] + largs, build)
            if room == "dataplane":
                if rc == 0:
                    failures.append("a call into the dataplane linked with only the engine rules' "
                                    "dependencies")
                elif "undefined reference" not in out or "FlowTable" not in out:
                    failures.append(f"the dataplane call failed to link for another reason:\n{out}")
                else:
                    first = next(l for l in out.splitlines() if "undefined reference" in l)
                    print(f"rejected as expected (link, a dataplane call): {first.strip()}")
            elif rc != 0:
                failures.append(f"a call into the config did not link with the engine rules' "
                                f"dependencies:\n{out}")
            else:
                print("accepted: a call into the config links with the engine rules' dependencies")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
