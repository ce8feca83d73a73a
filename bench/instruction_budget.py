#!/usr/bin/python3
"""The pipeline's instruction budget (docs/performance.md
"Instruction budget").

Runs bench/pipeline_bench under valgrind's callgrind, counting only inside
dp::processBurst (--toggle-collect='*processBurst*'), for each case of the
budget file (bench/instruction_budget.json), and holds each case's
instructions per packet to its budget. Instruction counts are deterministic:
the same tree and compiler give the same count on any machine, so a test can
hold them (cycles it cannot).

  instruction_budget.py --build DIR [--budgets FILE] [--case NAME]... check
      Measures every case; fails (exit 1) when one exceeds its budget, printing
      per function (inclusive and self instructions per packet) what grew
      against the breakdown stored when its budget was recorded. Also fails
      when the file raises a budget without a why (validate).
  instruction_budget.py --budgets FILE validate
      Only the file's rules: every budget above the one last lowered says why.
  instruction_budget.py --build DIR [--case NAME]... update [--why TEXT]
      Measures and records: budget = figure + margin, with today's date and
      the source tree's commit when it goes down; going up needs --why.
  instruction_budget.py --build DIR [--case NAME]... report
      Prints the figures as one JSON line (scripts/bench.sh's table).
  instruction_budget.py --build DIR selftest
      Shows the checker fails: a raise without a why and a stale docs table
      with no valgrind on PATH (a failure, not a skip), a deliberate
      regression (pipeline_bench --pad-instructions), a budget lowered below
      today's figure, a raise without a why, a collection that counts nothing
      and a case the bench refuses must each be refused; a raise with a why
      accepted.

Budgets are per build type (the figure of an -O2 build with assertions is not
an -O3 one's): the test suite's build (debugoptimized by default) and
scripts/bench.sh's (release) each have theirs. The file's rules and
docs/performance.md's table are checked first, and fail the check whether or
not valgrind is there. A case whose pipeline_bench options the bench refuses
fails (its budget would hold nothing), and so does a figure below
FLOOR_INSTRUCTIONS per packet (a collection that counted nothing, e.g. a
renamed function the toggle no longer matches). Exit 77 (a skip) when
valgrind is missing or the build is sanitized, and nothing static failed.
"""
import argparse
import datetime
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_BUDGETS = os.path.join(SRC, "bench", "instruction_budget.json")
SKIP = 77
# No pipeline case runs in fewer instructions per packet: parsing the
# Ethernet and IP headers alone takes more. A figure below it means the
# collection missed the pipeline, never that the pipeline got that fast.
FLOOR_INSTRUCTIONS = 100


def build_type(build):
    """(buildtype, sanitized) from meson's introspection of BUILD."""
    opts = json.load(open(os.path.join(build, "meson-info", "intro-buildoptions.json")))
    by = {o["name"]: o["value"] for o in opts}
    return by.get("buildtype", "?"), bool(by.get("sanitize")) or by.get("b_sanitize", "none") != "none"


def bench_supports(bench, flags):
    """True when pipeline_bench accepts `flags` (it refuses an unknown option
    before it reaches --help, which exits 0)."""
    if not flags:
        return True
    r = subprocess.run([bench] + flags + ["--help"], capture_output=True, text=True, timeout=60)
    return r.returncode == 0


def source_commit():
    try:
        c = subprocess.run(["git", "-C", SRC, "rev-parse", "--short=10", "HEAD"],
                           capture_output=True, text=True, check=True).stdout.strip()
        # The budget file itself is what an update changes: not a change to the tree measured.
        dirty = subprocess.run(["git", "-C", SRC, "status", "--porcelain", "--untracked-files=no",
                                "--", ".", ":!bench/instruction_budget.json"],
                               capture_output=True, text=True).stdout.strip()
        return c + ("+uncommitted" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


FN_LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(?:\*\s+)?(.+?)\s*$")


def short_name(fn):
    """'DIR/file.cc:ns::f(args) [obj]' -> 'ns::f (file.cc)': stable across
    signature edits and build directories; a function inlined from several
    files keeps one entry per file (callgrind counts each part on its own)."""
    fn = re.sub(r"\s+\[[^\]]*\]$", "", fn)
    where, _, name = fn.partition(":") if not fn.startswith("0x") else ("", "", fn)
    depth, out = 0, []
    for ch in name:  # drop the argument list, keep template arguments
        if ch == "(" and depth == 0 and out and not "".join(out).endswith(("operator", "::")):
            break
        depth += ch == "<"
        depth -= ch == ">"
        out.append(ch)
    short = "".join(out).strip().replace("(anonymous namespace)::", "") or name
    base = os.path.basename(where)
    return f"{short} ({base})" if base and base != "???" else short


def annotate(path, inclusive):
    """{function: instructions} from callgrind_annotate."""
    r = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                        "--threshold=100", "--auto=no", path], capture_output=True, text=True)
    out, started = {}, False
    for line in r.stdout.splitlines():
        if not started:
            # The table follows the header line "Ir  file:function".
            started = line.strip().endswith("file:function")
            continue
        if line.startswith("---"):
            continue
        if not line.strip():
            if out:
                break  # the end of the function table
            continue
        m = FN_LINE.match(line)
        if not m or not m.group(1).replace(",", "").isdigit():
            continue
        n = int(m.group(1).replace(",", ""))
        name = short_name(m.group(2))
        out[name] = out.get(name, 0) + n
    return out


def measure(build, case, extra=()):
    """Runs one case under callgrind: {'per_packet', 'packets', 'breakdown'}."""
    bench = os.path.join(build, "bench", "pipeline_bench")
    with tempfile.TemporaryDirectory(prefix="gwlb-ib.") as d:
        collect = case.get("collect", "*processBurst*")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/cg.%p",
               f"--toggle-collect={collect}", bench] + case["args"] + \
              ["--rep-packets", str(case["rep_packets"]), "--instructions"] + list(extra)
        # The flow table's bulk lookup has an AVX2 copy chosen by the CPU:
        # the budget counts the SSE2 one, the same on every x86-64 host.
        env = dict(os.environ, GWLB_FLOW_TABLE_SIMD="sse2")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
        meta = json.loads(r.stdout.strip().splitlines()[-1])
        total, files = 0, []
        for f in glob.glob(os.path.join(d, "cg.*")):
            for line in open(f, errors="replace"):
                if line.startswith("summary:"):
                    n = int(line.split()[1])
                    total += n
                    if n:
                        files.append(f)
        incl, self_ = {}, {}
        for f in files:
            for dst, inc in ((incl, True), (self_, False)):
                for k, v in annotate(f, inc).items():
                    dst[k] = dst.get(k, 0) + v
    pk = meta["packets"]
    breakdown = {}
    for name in set(incl) | set(self_):
        # Inclusive counts of a function entered by the collection toggle
        # can come out above the total (callgrind counts the call twice):
        # capped at it.
        i, s = min(incl.get(name, 0), total) / pk, self_.get(name, 0) / pk
        # The frames around processBurst (main, the bench's loop, libc's
        # start) hold everything; callgrind_annotate shows them with odd self
        # counts (the toggle): left out. The dataplane's own functions stay,
        # however much they hold (runBurst holds nearly all of processBurst).
        if i >= 0.99 * total / pk and "processBurst" not in name and "gwlb::dp::" not in name:
            continue
        if i >= 0.5 or s >= 0.5:
            breakdown[name] = [round(i, 1), round(s, 1)]
    return {"per_packet": total / pk, "packets": pk, "breakdown": breakdown}


def growth_table(stored, now, limit=20):
    """Lines: the functions whose instructions per packet changed most (self
    first, then inclusive), stored -> now."""
    names = set(stored) | set(now)
    rows = []
    for n in names:
        si, ss = stored.get(n, [0, 0])
        ni, ns = now.get(n, [0, 0])
        rows.append((ns - ss, ni - si, n, si, ss, ni, ns))
    rows.sort(key=lambda r: (-abs(r[0]), -abs(r[1]), r[2]))
    out = [f"    {'self: was -> now (delta)':>30}  {'inclusive: was -> now (delta)':>32}  function"]
    for ds, di, n, si, ss, ni, ns in rows[:limit]:
        if abs(ds) < 0.5 and abs(di) < 0.5:
            continue
        out.append(f"    {ss:8.1f} -> {ns:8.1f} ({ds:+7.1f})  {si:9.1f} -> {ni:9.1f} ({di:+7.1f})  {n}")
    if len(out) == 1:
        out.append("    (no function changed by half an instruction per packet or more)")
    return out


def validate(doc):
    """Errors in the file's rules: each budget above the last lowered one needs a why."""
    errs = []
    for c in doc["cases"]:
        for bt, b in c.get("builds", {}).items():
            low = b.get("lowered", {})
            if not isinstance(b.get("budget"), int) or b["budget"] <= 0:
                errs.append(f"{c['name']} [{bt}]: budget must be a positive integer")
                continue
            if not low.get("date") or not low.get("commit") or not isinstance(low.get("budget"), int):
                errs.append(f"{c['name']} [{bt}]: 'lowered' needs date, commit and budget")
                continue
            if b["budget"] > low["budget"] and not str(b.get("why", "")).strip():
                errs.append(f"{c['name']} [{bt}]: budget raised from {low['budget']} to "
                            f"{b['budget']} without a why: say in 'why' what the instructions "
                            f"buy (docs/performance.md \"Instruction budget\")")
    return errs


def selected(doc, names):
    cases = doc["cases"]
    if names:
        unknown = set(names) - {c["name"] for c in cases}
        if unknown:
            sys.exit(f"instruction_budget: no case {sorted(unknown)} in the budget file")
        cases = [c for c in cases if c["name"] in names]
    return cases


def preflight(build, static_failed=False):
    """The build type, or exit: 77 (a skip) when nothing can be measured here,
    1 instead when the static checks already failed (a skip would hide them)."""
    why = None
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        why = "valgrind is not installed (Debian package valgrind; scripts/setup.sh installs it)"
    bt, san = build_type(build)
    if not why and san:
        why = ("a sanitized build: valgrind cannot run ASan binaries (ASan reserves the "
               "shadow memory valgrind needs); the plain build runs this test")
    if why and static_failed:
        print(f"FAIL: the checks above failed; no case measured: {why}")
        sys.exit(1)
    if why:
        print(f"SKIP: {why}")
        sys.exit(SKIP)
    return bt


DOC = os.path.join(SRC, "docs", "performance.md")
DOC_HEADER = "| case | debugoptimized (test suite): measured | budget |"


def doc_table_errors(doc, path=DOC):
    """docs/performance.md's budget table ("Instruction budget") against the
    file: row k is case k, its debugoptimized figure and budget as recorded."""
    lines = open(path).read().splitlines()
    if DOC_HEADER not in lines:
        return [f"{path}: no table starting '{DOC_HEADER}'"]
    at = lines.index(DOC_HEADER) + 2
    rows = []
    while at < len(lines) and lines[at].startswith("|"):
        rows.append(lines[at])
        at += 1
    errs = []
    cases = [c for c in doc["cases"] if "debugoptimized" in c.get("builds", {})]
    if len(rows) != len(cases):
        errs.append(f"{path}: the budget table has {len(rows)} rows, the file {len(cases)} cases")
    for c, row in zip(cases, rows):
        b = c["builds"]["debugoptimized"]
        want = f"| {b['measured']:,.1f} | {b['budget']:,} |"
        if not row.endswith(want):
            errs.append(f"{path}: budget table row for '{c['name']}' should end '{want}': {row}")
    return errs


def check(args, doc, extra=()):
    # The static checks first: they need neither valgrind nor a plain build,
    # and a skip must not hide them.
    errs = validate(doc)
    if args.doc or (os.path.abspath(args.budgets) == DEFAULT_BUDGETS and not extra):
        errs += doc_table_errors(doc, args.doc or DOC)
    for e in errs:
        print(f"FAIL: {e}")
    bt = preflight(args.build, static_failed=bool(errs))
    bench = os.path.join(args.build, "bench", "pipeline_bench")
    failed = bool(errs)
    for c in selected(doc, args.case):
        if not bench_supports(bench, c.get("needs", [])):
            print(f"FAIL: {c['name']}: pipeline_bench refuses {' '.join(c['needs'])}: the case "
                  f"cannot be measured (give pipeline_bench the option, or take the case out of "
                  f"the budget file)")
            failed = True
            continue
        b = c.get("builds", {}).get(bt)
        m = measure(args.build, c, extra)
        if m["per_packet"] < FLOOR_INSTRUCTIONS:
            print(f"FAIL: {c['name']}: {m['per_packet']:.1f} instructions/packet, below the floor "
                  f"of {FLOOR_INSTRUCTIONS}: the collection (--toggle-collect="
                  f"{c.get('collect', '*processBurst*')}) counted no pipeline; a function "
                  f"renamed?")
            failed = True
            continue
        if not b:
            print(f"FAIL: {c['name']}: {m['per_packet']:.1f} instructions/packet but no budget for "
                  f"a {bt} build: record one with bench/instruction_budget.py --build "
                  f"{args.build} --case '{c['name']}' update")
            failed = True
            continue
        ok = m["per_packet"] <= b["budget"]
        print(f"{'ok' if ok else 'FAIL'}: {c['name']}: {m['per_packet']:.1f} instructions/packet, "
              f"budget {b['budget']} ({bt} build; lowered {b['lowered']['date']} at "
              f"{b['lowered']['commit']}; {m['packets']} packets)")
        if not ok:
            failed = True
            print(f"  over by {m['per_packet'] - b['budget']:.1f}; per function, instructions per "
                  f"packet, against the breakdown stored with the budget ({b.get('measured', '?')}):")
            print("\n".join(growth_table(b.get("breakdown", {}), m["breakdown"])))
            print("  Win them back, or raise the budget with a why: bench/instruction_budget.py "
                  "--build DIR --case NAME update --why '...' (docs/performance.md)")
    return 1 if failed else 0


def update(args, doc):
    bt = preflight(args.build)
    bench = os.path.join(args.build, "bench", "pipeline_bench")
    today, commit = datetime.date.today().isoformat(), source_commit()
    margin = doc.get("margin_percent", 1) / 100
    for c in selected(doc, args.case):
        if not bench_supports(bench, c.get("needs", [])):
            print(f"skipped: {c['name']}: pipeline_bench has no {' '.join(c['needs'])}")
            continue
        m = measure(args.build, c)
        if m["per_packet"] < FLOOR_INSTRUCTIONS:
            print(f"refused: {c['name']} [{bt}]: {m['per_packet']:.1f}/packet is below the floor of "
                  f"{FLOOR_INSTRUCTIONS}: the collection counted no pipeline")
            return 1
        new = math.ceil(m["per_packet"] * (1 + margin))
        b = c.setdefault("builds", {}).get(bt)
        rec = {"measured": round(m["per_packet"], 1), "packets": m["packets"],
               "breakdown": dict(sorted(m["breakdown"].items(), key=lambda kv: -kv[1][0]))}
        if b is None or new < b["budget"]:
            c["builds"][bt] = {"budget": new, "lowered": {"date": today, "commit": commit, "budget": new},
                               **rec}
            print(f"{c['name']} [{bt}]: {m['per_packet']:.1f}/packet: budget {new}"
                  + (f" (lowered from {b['budget']})" if b else " (first)"))
        elif new > b["budget"]:
            if not args.why:
                print(f"refused: {c['name']} [{bt}]: {m['per_packet']:.1f}/packet needs budget {new} "
                      f"> {b['budget']}: a raise needs --why 'what the instructions buy'")
                return 1
            b.update({"budget": new, "why": args.why, "raised": {"date": today, "commit": commit}}, **rec)
            print(f"{c['name']} [{bt}]: budget raised to {new}: {args.why}")
        else:
            b.update(rec)
            print(f"{c['name']} [{bt}]: {m['per_packet']:.1f}/packet: budget {new} unchanged")
    write_doc(args.budgets, doc)
    return 0


def write_doc(path, doc):
    """Indented JSON with every list of plain values on one line (one line
    per function of a breakdown)."""
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    def one_line(m):  # JSON strings hold no raw newline: only layout goes
        flat = "[" + re.sub(r"\n\s*", " ", m.group(1)) + "]"
        return flat if len(flat) <= 160 else m.group(0)
    text = re.sub(r"\[\s*([^\[\]{}]*?)\s*\]", one_line, text)
    with open(path, "w") as f:
        f.write(text + "\n")


def report(args, doc):
    preflight(args.build)
    bench = os.path.join(args.build, "bench", "pipeline_bench")
    out = []
    for c in selected(doc, args.case):
        if not bench_supports(bench, c.get("needs", [])):
            out.append({"case": c["name"], "skipped": f"pipeline_bench has no {' '.join(c['needs'])}"})
            continue
        m = measure(args.build, c)
        bt = build_type(args.build)[0]
        b = c.get("builds", {}).get(bt, {})
        out.append({"case": c["name"], "per_packet": m["per_packet"], "packets": m["packets"],
                    "budget": b.get("budget"), "build": bt})
    print(json.dumps(out))
    return 0


def selftest(args, doc):
    """The checker must fail where it should; each step prints what it saw."""
    bad, steps = 0, 0
    me = [sys.executable, os.path.abspath(__file__), "--build", args.build]

    def run(budgets_doc, cmd, *extra, env=None):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(budgets_doc, f)
        try:
            return subprocess.run(me + ["--budgets", f.name] + list(extra) + [cmd],
                                  capture_output=True, text=True, timeout=900, env=env)
        finally:
            os.unlink(f.name)

    def expect(what, ok, r):
        nonlocal bad, steps
        steps += 1
        print(f"--- {steps}. {what} (exit {r.returncode}):\n{r.stdout}")
        if not ok:
            print(f"FAIL: {what}: not as expected")
            bad += 1

    def established(d, bt):
        return next(c for c in d["cases"] if c["name"] == "established")["builds"][bt]

    # The static checks, with no valgrind on PATH: a skip must not hide them.
    with tempfile.TemporaryDirectory(prefix="gwlb-ib-nopath.") as empty:
        novg = dict(os.environ, PATH=empty)
        up = json.loads(json.dumps(doc))
        b = established(up, "debugoptimized")
        b["budget"] = b["lowered"]["budget"] + 50
        b.pop("why", None)
        r = run(up, "check", "--case", "established", env=novg)
        expect("no valgrind, a budget raised without a why: check fails, not skips",
               r.returncode == 1 and "without a why" in r.stdout, r)
        stale = os.path.join(empty, "performance.md")
        text = open(DOC).read()
        e = established(doc, "debugoptimized")
        row = f"| {e['measured']:,.1f} | {e['budget']:,} |"
        with open(stale, "w") as f:
            f.write(text.replace(row, f"| {e['measured'] + 1:,.1f} | {e['budget']:,} |", 1))
        r = run(doc, "check", "--case", "established", f"--doc={stale}", env=novg)
        expect("no valgrind, a stale docs table: check fails, not skips",
               row in text and r.returncode == 1 and "budget table row for 'established'" in r.stdout, r)
        r = run(doc, "check", "--case", "established", f"--doc={DOC}", env=novg)
        expect("no valgrind, the file and the table as they are: a skip (exit 77)",
               r.returncode == SKIP and "SKIP: valgrind is not installed" in r.stdout, r)

    bt = preflight(args.build)
    if bt not in next(c for c in doc["cases"] if c["name"] == "established").get("builds", {}):
        print(f"FAIL: no established budget for a {bt} build")
        return 1
    # A deliberate regression: ~60 more instructions per packet in a
    # function processBurst's toggle counts. It must fail and name it.
    r = run(doc, "check", "--case", "established", "--bench-arg=--pad-instructions",
            "--bench-arg=60")
    expect("established with pipeline_bench --pad-instructions 60 fails, naming processBurstPad",
           r.returncode == 1 and "FAIL: established" in r.stdout and "processBurstPad" in r.stdout, r)
    # A budget below today's figure (lowered without the work).
    low = json.loads(json.dumps(doc))
    b = established(low, bt)
    b["budget"] = int(b["measured"]) - 5
    b["lowered"]["budget"] = b["budget"]
    r = run(low, "check", "--case", "established")
    expect("established budget lowered to measured - 5 fails",
           r.returncode == 1 and "FAIL: established" in r.stdout, r)
    # A raise without a why is refused; with one it is accepted.
    up = json.loads(json.dumps(doc))
    b = established(up, bt)
    b["budget"] = b["lowered"]["budget"] + 50
    b.pop("why", None)
    r = run(up, "validate")
    expect("a budget raised by 50 without a why is refused",
           r.returncode == 1 and "without a why" in r.stdout, r)
    b["why"] = "self-test: a raise that says why"
    r = run(up, "validate")
    expect("the same raise with a why is accepted", r.returncode == 0, r)
    # A collection that counts nothing (the toggle's function renamed): 0
    # instructions per packet is under any budget, and must fail.
    zero = json.loads(json.dumps(doc))
    next(c for c in zero["cases"] if c["name"] == "established")["collect"] = "*noSuchFunction*"
    r = run(zero, "check", "--case", "established")
    expect("established counting no function (0 instructions/packet) fails below the floor",
           r.returncode == 1 and "below the floor" in r.stdout, r)
    # A case whose options the bench refuses fails instead of passing unmeasured.
    refused = json.loads(json.dumps(doc))
    c = next(c for c in refused["cases"] if c["name"] == "established")
    c["needs"] = ["--no-such-option"]
    c["args"] = c["args"] + ["--no-such-option"]
    r = run(refused, "check", "--case", "established")
    expect("a case needing an option pipeline_bench refuses fails",
           r.returncode == 1 and "FAIL: established: pipeline_bench refuses --no-such-option" in r.stdout, r)
    print(f"{steps - bad} of {steps} self-test steps as expected")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", help="meson build directory (holds bench/pipeline_bench)")
    ap.add_argument("--budgets", default=DEFAULT_BUDGETS)
    ap.add_argument("--case", action="append", default=[], help="only this case (repeatable)")
    ap.add_argument("--why", default="", help="update: why a budget goes up")
    ap.add_argument("--doc", default="",
                    help="check: the performance.md whose budget table is checked (default: the "
                         "tree's, when --budgets is the tree's file)")
    ap.add_argument("--bench-arg", action="append", default=[],
                    help="check: an extra pipeline_bench argument (the self-test's regression)")
    ap.add_argument("command", choices=["check", "validate", "update", "report", "selftest"])
    args = ap.parse_args()
    doc = json.load(open(args.budgets))
    if args.command == "validate":
        errs = validate(doc)
        for e in errs:
            print(f"FAIL: {e}")
        if not errs:
            print(f"ok: {args.budgets}: every raised budget says why")
        return 1 if errs else 0
    if not args.build:
        ap.error(f"{args.command} needs --build")
    try:
        return {"check": lambda: check(args, doc, args.bench_arg), "update": lambda: update(args, doc),
                "report": lambda: report(args, doc), "selftest": lambda: selftest(args, doc)}[args.command]()
    except RuntimeError as e:
        print(f"FAIL: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
