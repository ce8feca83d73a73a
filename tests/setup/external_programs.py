#!/usr/bin/python3
"""Every external program the tests, benchmarks and scripts call comes from a
package scripts/setup.sh installs (issue 14, item 0).

  external_programs.py SRCROOT [--list]

Scans tests/, bench/, scripts/ and tools/ for the programs they run:
  - meson.build: find_program('NAME')
  - shell scripts: the command word of every simple command (after `sudo`,
    `exec`, `env`, `setsid`, `timeout N`, `ip netns exec NS`, lab.sh's `nx NS`)
  - Python: the first element of a command list given to subprocess / os.exec*
    (exact), and any other string of a command list or runner call that names
    a program on PATH (e.g. lab.run("client", "curl", ...))
  - C++ tests: the command of std::system / popen strings
  - Python imports that come from a Debian package (e.g. scapy)
and maps each to the Debian package that owns it (dpkg -S). A package is
accepted when setup.sh's GWLB_PACKAGES holds it, or apt installs it with one
of those (Depends / Pre-Depends, recursively), or it is Essential or of
Priority required (on every Debian system). Anything else fails, naming the
file, line, program and package, so a missing setup step fails every run
here, not on a user's fresh machine. A program that is called but not
installed at all fails too. OPTIONAL names the few programs a script probes
for and does without (each with the reason); NOT_PROGRAMS the words the
heuristic pass takes for programs but are not.
"""
import ast
import os
import re
import shutil
import subprocess
import sys
import importlib.util

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tree_files  # noqa: E402  the repository's files, not out/ or build dirs

SCANNED = ["tests", "bench", "scripts", "tools"]
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Probed with `command -v` and done without, with a message. Not installed by setup.
OPTIONAL = {
    "clang++": "scripts/fuzz.sh: libFuzzer builds need clang; the script installs or explains it",
    "lintian": "tests/setup/check_package.sh: the package's lintian check is optional (issue 18 item 4); skipped, with a message, without it",
}
# Words in command position or command lists that are not programs run here.
NOT_PROGRAMS = {
    "ping": "netpeer.py's subcommand (a raw-socket ping written in Python), not /usr/bin/ping",
}

BUILTINS = set("""
. : [ [[ ]] alias bg bind break builtin caller cd command compgen complete compopt continue
declare dirs disown echo enable eval exec exit export false fc fg getopts hash help history
jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly return set
shift shopt source suspend test times trap true type typeset ulimit umask unalias unset wait
if then else elif fi do done while until for case esac in function select time coproc { } !
""".split())
RUNNERS = {"run", "Popen", "check_output", "check_call", "call", "spawn", "system", "popen",
           "getoutput", "getstatusoutput", "execvp", "execv", "execlp", "execl", "sh"}
EXACT_RUNNERS = {"run", "Popen", "check_output", "check_call", "call", "execvp", "execlp"}


def which(name):
    if name.startswith("/"):
        return name if os.access(name, os.X_OK) else None
    return shutil.which(name, path=PATH)


# --- shell ------------------------------------------------------------------

HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")


def strip_heredocs(text):
    """Heredoc bodies blanked (line numbers kept)."""
    out, end = [], None
    for line in text.split("\n"):
        if end is not None:
            out.append("")
            if line.strip() == end:
                end = None
            continue
        m = HEREDOC.search(line)
        if m and "<<<" not in line:
            end = m.group(2)
        out.append(line)
    return "\n".join(out)


class ShellScanner:
    """A small bash reader: yields (line, word) for every command word."""

    def __init__(self, text):
        self.s = strip_heredocs(text)
        self.i = 0
        self.line = 1
        self.found = []

    def peek(self, k=0):
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def adv(self, n=1):
        for _ in range(n):
            if self.peek() == "\n":
                self.line += 1
            self.i += 1

    def skip_balanced(self, open_c, close_c):
        depth = 1
        while self.i < len(self.s) and depth:
            c = self.peek()
            if c == "\\":
                self.adv(2)
                continue
            if c == "'":
                self.adv()
                while self.i < len(self.s) and self.peek() != "'":
                    self.adv()
            elif c == open_c:
                depth += 1
            elif c == close_c:
                depth -= 1
            self.adv()

    def word(self):
        """Reads one word; returns (text, line, has_expansion)."""
        start_line, buf, dyn = self.line, [], False
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\n;&|()<>" or (c == "`"):
                break
            if c == "\\":
                if self.peek(1) == "\n":
                    self.adv(2)
                    break
                buf.append(self.peek(1))
                self.adv(2)
            elif c == "'":
                self.adv()
                while self.i < len(self.s) and self.peek() != "'":
                    buf.append(self.peek())
                    self.adv()
                self.adv()
            elif c == '"':
                self.adv()
                while self.i < len(self.s) and self.peek() != '"':
                    if self.peek() == "\\":
                        buf.append(self.peek(1))
                        self.adv(2)
                    elif self.peek() == "$" and self.peek(1) == "(":
                        dyn = True
                        self.dollar_paren()
                    elif self.peek() == "`":
                        dyn = True
                        self.adv()
                        self.commands(end="`")
                    else:
                        if self.peek() == "$":
                            dyn = True
                        buf.append(self.peek())
                        self.adv()
                self.adv()
            elif c == "$":
                dyn = True
                if self.peek(1) == "(":
                    self.dollar_paren()
                elif self.peek(1) == "{":
                    self.adv(2)
                    self.skip_balanced("{", "}")
                else:
                    buf.append(c)
                    self.adv()
            else:
                buf.append(c)
                self.adv()
        return "".join(buf), start_line, dyn

    def dollar_paren(self):
        self.adv(2)  # $(
        if self.peek() == "(":  # $(( arithmetic ))
            self.adv()
            self.skip_balanced("(", ")")
            self.adv()
            return
        self.commands(end=")")

    def commands(self, end=None):
        """Reads commands until `end` (a closing character) or the end of text."""
        expect = True   # the next word is a command word
        pending = []    # words still to skip before the command (wrapper arguments)
        skip_line = False  # `for`/`select` header: no command words until ; or newline
        cases = []      # open `case` statements: "head" (until `in`), "pattern" or "body"
        parens = 0
        while self.i < len(self.s):
            c = self.peek()
            if end and c == end and (end != ")" or parens == 0) and not (cases and cases[-1] == "pattern"):
                self.adv()
                return
            if c in " \t":
                self.adv()
                continue
            if c == "#" and (self.i == 0 or self.s[self.i - 1] in " \t\n;"):
                while self.i < len(self.s) and self.peek() != "\n":
                    self.adv()
                continue
            if c == "\\" and self.peek(1) == "\n":
                self.adv(2)
                continue
            if cases and cases[-1] == "pattern":
                if c == ")":
                    cases[-1] = "body"
                    expect, pending = True, []
                    self.adv()
                    continue
                if c in "(|\n;":
                    self.adv()
                    continue
                w = self.word()[0]
                if w == "esac":
                    cases.pop()
                    expect = False
                elif not w:
                    self.adv()
                continue
            if c in "\n;&|":
                if c == ";" and self.peek(1) == ";" and cases and cases[-1] == "body":
                    cases[-1] = "pattern"
                    self.adv(2)
                    if self.peek() in "&":
                        self.adv()
                    continue
                self.adv()
                expect, pending, skip_line = True, [], False
                continue
            if c == "(":
                parens += 1
                self.adv()
                expect, pending = True, []
                continue
            if c == ")":
                parens -= 1
                self.adv()
                expect, pending = True, []
                continue
            if c == "`":
                self.adv()
                self.commands(end="`")
                continue
            if c in "<>":
                if self.peek(1) == "(":  # <(...) >(...)
                    self.adv(2)
                    self.commands(end=")")
                    continue
                while self.peek() in "<>&":
                    self.adv()
                while self.peek() in " \t":
                    self.adv()
                self.word()  # the redirection's target
                continue
            w, line, dyn = self.word()
            if not w and not dyn:
                self.adv()
                continue
            if cases and cases[-1] == "head":
                if w == "in":
                    cases[-1] = "pattern"
                continue
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=$", w) and self.peek() == "(":
                self.adv()
                self.skip_balanced("(", ")")  # an array assignment: words, not commands
                continue
            if not expect or skip_line:
                continue
            if pending:
                pending.pop()
                continue
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", w):
                continue  # assignment before a command
            if w in ("for", "select", "function"):
                skip_line = True
                continue
            if w == "case":
                cases.append("head")
                continue
            if w == "esac" and cases:
                cases.pop()
                expect = False
                continue
            if w in ("if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time",
                     "fi", "done", "esac"):
                continue
            if w in ("sudo", "exec", "setsid", "nohup", "env", "builtin"):
                self.found.append((line, w, dyn))
                continue
            if w == "timeout":
                self.found.append((line, w, dyn))
                pending = ["N"]
                continue
            if w == "nx":  # lab.sh: nx NS CMD...
                pending = ["NS"]
                continue
            self.found.append((line, w, dyn))
            expect = False
            if w == "ip":  # ip netns exec NS CMD...
                save = (self.i, self.line)
                ws = []
                for _ in range(3):
                    while self.peek() in " \t":
                        self.adv()
                    ws.append(self.word()[0])
                if ws[:2] == ["netns", "exec"]:
                    expect = True  # the next word is the command
                else:
                    self.i, self.line = save


FUNC_DEF = re.compile(r"^\s*(?:function\s+)?([\w-]+)\s*\(\)\s*\{?", re.M)


def shell_programs(text, funcs=frozenset()):
    """(line, word, exact) for the command words of a script; `funcs` names the
    shell functions of every scanned script (a sourced library defines some)."""
    funcs = set(funcs) | set(FUNC_DEF.findall(text))
    sc = ShellScanner(text)
    sc.commands()
    for line, w, dyn in sc.found:
        if dyn or not w or w.startswith("-") or w in BUILTINS or w in funcs:
            continue
        if not re.match(r"^[A-Za-z0-9_./+-]+$", w) or ("/" in w and not w.startswith("/")):
            continue  # a path inside the checkout
        yield line, w, True


# --- Python -----------------------------------------------------------------

def call_name(node):
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def strs(node):
    return [e.value for e in getattr(node, "elts", []) if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def python_programs(text):
    """(line, word, exact): exact for the first element of a command list given
    to subprocess / os.exec*; otherwise candidates, kept only when on PATH."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield node.lineno, first.value, False
        if not isinstance(node, ast.Call):
            continue
        name = call_name(node)
        if name not in RUNNERS:
            continue
        shell = any(k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value
                    for k in node.keywords)
        for i, a in enumerate(node.args):
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                if name in ("system", "popen", "getoutput", "getstatusoutput") or shell:
                    for line, w, _ in shell_programs(a.value):
                        yield node.lineno + line - 1, w, True
                else:
                    yield node.lineno, [x.value for x in node.args[i:] if isinstance(x, ast.Constant)
                                        and isinstance(x.value, str)], False
                    break
            elif isinstance(a, (ast.List, ast.Tuple)):
                words = strs(a)
                exact = i == 0 and name in EXACT_RUNNERS and a.elts and \
                    isinstance(a.elts[0], ast.Constant) and isinstance(a.elts[0].value, str)
                if exact:
                    yield node.lineno, words[0], True
                yield node.lineno, words, False
            elif isinstance(a, ast.Starred) and isinstance(a.value, (ast.List, ast.Tuple)):
                yield node.lineno, strs(a.value), False


def python_imports(text):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module.split(".")[0]


# --- meson, C++ ---------------------------------------------------------------

def meson_programs(text):
    for m in re.finditer(r"find_program\(\s*'([^']+)'", text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1), True


def cxx_programs(text):
    for m in re.finditer(r"(?:\bcmd\s*=|system\(|popen\()\s*\"([A-Za-z0-9_.+-]+)[ \"]", text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1), True


# --- packages -----------------------------------------------------------------

def setup_packages(src):
    text = open(os.path.join(src, "scripts/setup.sh")).read()
    m = re.search(r"^GWLB_PACKAGES=\((.*?)^\)", text, re.M | re.S)
    assert m, "scripts/setup.sh: no GWLB_PACKAGES=( ... ) array"
    body = "\n".join(l.split("#", 1)[0] for l in m.group(1).splitlines())
    return set(body.split())


def installed_db():
    fmt = "${Package}\t${Essential}\t${Priority}\t${Depends}\t${Pre-Depends}\t${Provides}\t${db:Status-Abbrev}\n"
    out = subprocess.run(["dpkg-query", "-W", "-f", fmt], text=True, capture_output=True, check=True).stdout
    db, provides = {}, {}
    for line in out.splitlines():
        pkg, ess, prio, dep, pre, prov, st = line.split("\t")
        if not st.startswith("ii"):
            continue
        db[pkg] = (ess == "yes", prio, dep + ("," + pre if pre else ""))
        for p in prov.split(","):
            p = p.strip().split(" ")[0].split(":")[0]
            if p:
                provides.setdefault(p, set()).add(pkg)
    return db, provides


def closure(roots, db, provides):
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        for q in ([p] if p in db else []) + sorted(provides.get(p, ())):
            if q in seen:
                continue
            seen.add(q)
            for clause in db[q][2].split(","):
                for alt in clause.split("|"):
                    name = alt.strip().split(" ")[0].split(":")[0]
                    if name:
                        todo.append(name)
    return seen


class Owners:
    """Path -> owning packages, from dpkg's file lists (read once: `dpkg -S` per
    path re-reads them every call)."""

    def __init__(self):
        self.paths = {}
        self.wanted = set()

    def want(self, path):
        for c in self.candidates(path):
            self.wanted.add(c)

    @staticmethod
    def candidates(path):
        cands = [path, os.path.realpath(path)]
        for c in list(cands):
            cands.append(c[4:] if c.startswith("/usr/") else "/usr" + c)
        return cands

    def load(self):
        info = "/var/lib/dpkg/info"
        for name in os.listdir(info):
            if not name.endswith(".list"):
                continue
            pkg = name[:-5].split(":")[0]
            with open(os.path.join(info, name), errors="replace") as f:
                for line in f:
                    line = line.rstrip("\n")
                    if line in self.wanted:
                        self.paths.setdefault(line, []).append(pkg)

    def owner(self, path):
        for c in self.candidates(path):
            if c in self.paths:
                return self.paths[c]
        return None


def main():
    src = os.path.abspath(sys.argv[1])
    listing = "--list" in sys.argv
    wanted = setup_packages(src)
    db, provides = installed_db()
    base = {p for p, (ess, prio, _) in db.items() if ess or prio == "required"}
    files = tree_files.source_files(src, SCANNED)
    texts = {}
    for rel in sorted(files):
        if "/corpus/" in rel or "/regressions/" in rel:
            continue
        try:
            texts[rel] = open(os.path.join(src, rel), encoding="utf-8").read()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
    def is_shell(rel, text):
        return rel.endswith(".sh") or re.match(r"#!.*\b(ba)?sh\b", text.split("\n", 1)[0])
    funcs = set()
    for rel, text in texts.items():
        if is_shell(rel, text):
            funcs |= set(FUNC_DEF.findall(text))
    uses = {}       # program -> [(file:line, exact)]
    modules = {}    # module -> [file:line]
    n_files = 0
    for rel, text in texts.items():
        first = text.split("\n", 1)[0]
        found = []
        if rel.endswith("meson.build"):
            found = list(meson_programs(text))
        elif is_shell(rel, text):
            found = list(shell_programs(text, funcs))
        elif rel.endswith(".py") or "python" in first:
            try:
                found = list(python_programs(text))
                for line, mod in python_imports(text):
                    modules.setdefault(mod, []).append(f"{rel}:{line}")
            except SyntaxError as e:
                print(f"FAIL: {rel}: cannot parse: {e}")
                return 1
        elif rel.endswith((".cc", ".h")):
            found = list(cxx_programs(text))
        else:
            continue
        n_files += 1
        for line, w, exact in found:
            if isinstance(w, list):  # candidates: the first that is a program
                w = next((x for x in w if x in NOT_PROGRAMS or x in OPTIONAL or
                          (re.match(r"^[A-Za-z0-9_.+-]+$", x) and which(x))), None)
                if w is None:
                    continue
            elif not exact and not (re.match(r"^[A-Za-z0-9_.+/-]+$", w) and which(w)):
                continue
            if (f"{rel}:{line}", exact) not in uses.get(w, []):
                uses.setdefault(w, []).append((f"{rel}:{line}", exact))

    spec_origin = {}
    for mod in modules:
        if mod in sys.builtin_module_names:
            continue
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        spec_origin[mod] = (spec.origin or "") if spec else None
    owners = Owners()
    for prog in uses:
        if which(prog):
            owners.want(which(prog))
    for o in spec_origin.values():
        if o:
            owners.want(o)
    owners.load()

    def judge(wanted):
        allowed = closure(wanted | base, db, provides)
        problems, checked = [], {}
        for prog, where in sorted(uses.items()):
            exact = any(e for _, e in where)
            locs = list(dict.fromkeys(w for w, _ in where))
            at = ", ".join(locs[:3]) + (f" (+{len(locs) - 3})" if len(locs) > 3 else "")
            if prog in NOT_PROGRAMS or prog in OPTIONAL:
                continue
            path = which(prog)
            if not path:
                if exact:
                    problems.append(f"`{prog}` (called at {at}) is not installed here, and no package in "
                                    f"scripts/setup.sh's GWLB_PACKAGES provides it: add its package there")
                continue
            pkgs = owners.owner(path)
            if pkgs is None:
                if exact:
                    problems.append(f"`{prog}` (called at {at}) is {path}, which no Debian package owns: "
                                    f"setup.sh cannot guarantee it; install it from a package")
                continue
            ok = [p for p in pkgs if p in allowed]
            checked[prog] = (path, pkgs, ok)
            if not ok:
                problems.append(f"`{prog}` (called at {at}) is {path} from package {', '.join(pkgs)}, which "
                                f"scripts/setup.sh does not install: add {pkgs[0]} to GWLB_PACKAGES")
        for mod, where in sorted(modules.items()):
            if mod not in spec_origin:
                continue
            origin = spec_origin[mod]
            at = ", ".join(where[:3])
            if origin is None:
                if not any(os.path.exists(os.path.join(src, os.path.dirname(w.split(":")[0]), mod + ".py"))
                           for w in where):
                    problems.append(f"Python module `{mod}` (imported at {at}) is not installed: add its "
                                    f"Debian package (python3-...) to GWLB_PACKAGES")
                continue
            if not origin.startswith("/usr/") or origin.startswith(src):
                continue
            pkgs = owners.owner(origin)
            if pkgs and not any(p in allowed for p in pkgs):
                problems.append(f"Python module `{mod}` (imported at {at}) comes from package "
                                f"{', '.join(pkgs)}, which scripts/setup.sh does not install: add it to GWLB_PACKAGES")
            elif pkgs:
                checked["python:" + mod] = (origin, pkgs, pkgs)
        return problems, checked, allowed

    problems, checked, allowed = judge(wanted)
    # The check can fail: without dpdk-dev (issue 14's fresh machine) it must
    # name the two programs that package brings, without python3-scapy the module.
    for pkg, names in (("dpdk-dev", ["`dpdk-telemetry.py`", "`dpdk-testpmd`"]),
                       ("python3-scapy", ["Python module `scapy`"])):
        got = "\n".join(judge(wanted - {pkg})[0])
        for n in names:
            if n not in got:
                problems.append(f"self-test: with {pkg} left out of GWLB_PACKAGES the check did not "
                                f"report {n}:\n{got}")
    # A call named like a runner whose list starts with a number or bytes
    # once crashed the scan (IndexError) instead of reading on.
    for odd in ('run([1, 2])', 'run([b"ls"])', 'run([])', 'x.run("ns", [b"ls", "-l"])'):
        try:
            list(python_programs(odd))
        except Exception as e:  # noqa: BLE001  any crash is the failure reported
            problems.append(f"self-test: scanning `{odd}` raised {e!r}")
    if listing:
        for prog, (path, pkgs, ok) in sorted(checked.items()):
            print(f"{prog:28} {path:48} {', '.join(pkgs)}")
    for p in sorted(p for p in wanted if p not in db):
        problems.append(f"setup.sh lists package {p}, which is not installed here: run scripts/setup.sh")
    print(f"scanned {n_files} files under {', '.join(SCANNED)}: {len(uses)} command words, "
          f"{len(checked)} programs and modules mapped to packages; "
          f"{len(wanted)} packages in GWLB_PACKAGES, {len(allowed)} installed with them or essential")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
